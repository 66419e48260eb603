//! `[[pipeline.schema]]` rules and `[pipeline.schema_defaults]`.

use tsfiled_core::{
    choices_text, encoding_supported, encoding_supported_v4, Compression, ConfigName, DataType,
    Encoding, EncodingName, Named, PathPattern, Validator as V,
};

use crate::error::KeyPath;
use crate::model::{SchemaDefaults, SchemaRule};
use crate::raw::{RawSchemaDefaults, RawSchemaRule};

/// `[pipeline.schema_defaults]` for a pipeline writing format v4 (`v4`) or 000002: each
/// encoding must be one that format writes for the type (by that format's names). A default
/// not written is its name in the format, PLAIN where the format does not write it (v4:
/// BOOLEAN RLE).
pub(super) fn validate_schema_defaults(
    v: &mut V<'_>,
    rd: &RawSchemaDefaults,
    dp: &KeyPath,
    v4: bool,
) -> SchemaDefaults {
    let enc = |v: &mut V<'_>, val: &Option<Named<EncodingName>>, key: &str, t, d: &str| {
        let path = dp.key(key);
        let default = || {
            EncodingName::parse_name(d)
                .and_then(|name| name.in_format(v4))
                .filter(|e| {
                    if v4 {
                        encoding_supported_v4(t, *e)
                    } else {
                        encoding_supported(t, *e)
                    }
                })
                .unwrap_or(Encoding::PLAIN)
        };
        v.named(val, &path)
            .and_then(|name| v.check_encoding(t, name, v4, &path))
            .unwrap_or_else(default)
    };
    use DataType as T;
    let boolean = enc(v, &rd.boolean, "boolean", T::BOOLEAN, "RLE");
    let int32 = enc(v, &rd.int32, "int32", T::INT32, "TS_2DIFF");
    let int64 = enc(v, &rd.int64, "int64", T::INT64, "TS_2DIFF");
    let float = enc(v, &rd.float, "float", T::FLOAT, "GORILLA");
    let double = enc(v, &rd.double, "double", T::DOUBLE, "GORILLA");
    let text = enc(v, &rd.text, "text", T::TEXT, "PLAIN");
    let cpath = dp.key("compression");
    let compression = v
        .named(&rd.compression, &cpath)
        .filter(|c| v.check_compression(*c, v4, &cpath))
        .unwrap_or(Compression::SNAPPY);
    let pick = |v: &mut V<'_>, val: &Option<Named<DataType>>, key: &str, allowed: &[_], d| {
        let path = dp.key(key);
        let Some(t) = v.named(val, &path) else {
            return d;
        };
        if allowed.contains(&t) {
            return t;
        }
        let names: Vec<&str> = allowed.iter().map(|t: &DataType| t.name()).collect();
        v.err(
            &path,
            format!("{t} cannot hold numbers; expected {}", choices_text(&names)),
        );
        d
    };
    let integer_type = pick(
        v,
        &rd.integer_type,
        "integer_type",
        &[T::INT64, T::INT32, T::DOUBLE, T::FLOAT],
        T::INT64,
    );
    let float_type = pick(
        v,
        &rd.float_type,
        "float_type",
        &[T::DOUBLE, T::FLOAT],
        T::DOUBLE,
    );
    SchemaDefaults {
        boolean,
        int32,
        int64,
        float,
        double,
        text,
        compression,
        choose_encoding: rd.choose_encoding.unwrap_or(true),
        integer_type,
        float_type,
    }
}

/// One `[[pipeline.schema]]` rule of a pipeline writing format v4 (`v4`) or 000002.
pub(super) fn validate_rule(
    v: &mut V<'_>,
    r: &RawSchemaRule,
    rp: &KeyPath,
    defaults: &SchemaDefaults,
    v4: bool,
) -> Option<SchemaRule> {
    let pattern = v.required(&r.pattern, rp, "pattern").and_then(|p| {
        PathPattern::parse(p)
            .map_err(|e| v.err(&rp.key("pattern"), e))
            .ok()
    });
    if r.data_type.is_none() {
        v.err(&rp.key("type"), "missing required key `type`");
    }
    let data_type = v.named(&r.data_type, &rp.key("type"));
    let cpath = rp.key("compression");
    let compression = v
        .named(&r.compression, &cpath)
        .inspect(|c| {
            v.check_compression(*c, v4, &cpath);
        })
        .unwrap_or(defaults.compression);
    let ep = rp.key("encoding");
    let encoding = match (&r.encoding, data_type) {
        (Some(_), t) => v
            .named(&r.encoding, &ep)
            .and_then(|name| t.and_then(|t| v.check_encoding(t, name, v4, &ep))),
        (None, Some(t)) => Some(defaults.encoding_for(t)),
        (None, None) => None,
    };
    Some(SchemaRule {
        pattern: pattern?,
        data_type: data_type?,
        encoding: encoding?,
        compression,
    })
}
