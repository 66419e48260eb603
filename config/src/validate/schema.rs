//! `[[pipeline.schema]]` rules and `[pipeline.schema_defaults]`.

use tsfiled_core::{
    choices_text, encoding_supported_v4, encodings_for_v4, Compression, DataType, Encoding, Named,
    PathPattern, Validator as V,
};

use crate::error::KeyPath;
use crate::model::{SchemaDefaults, SchemaRule};
use crate::raw::{RawSchemaDefaults, RawSchemaRule};

pub(super) fn validate_schema_defaults(
    v: &mut V<'_>,
    rd: &RawSchemaDefaults,
    dp: &KeyPath,
) -> SchemaDefaults {
    let enc = |v: &mut V<'_>, val: &Option<Named<Encoding>>, key: &str, t, d| {
        let path = dp.key(key);
        match v.named(val, &path) {
            Some(e) if v.check_encoding(t, e, &path) => e,
            _ => d,
        }
    };
    use DataType as T;
    use Encoding as E;
    let boolean = enc(v, &rd.boolean, "boolean", T::BOOLEAN, E::RLE);
    let int32 = enc(v, &rd.int32, "int32", T::INT32, E::TS_2DIFF);
    let int64 = enc(v, &rd.int64, "int64", T::INT64, E::TS_2DIFF);
    let float = enc(v, &rd.float, "float", T::FLOAT, E::GORILLA);
    let double = enc(v, &rd.double, "double", T::DOUBLE, E::GORILLA);
    let text = enc(v, &rd.text, "text", T::TEXT, E::PLAIN);
    let compression = v
        .named(&rd.compression, &dp.key("compression"))
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
        integer_type,
        float_type,
    }
}

pub(super) fn validate_rule(
    v: &mut V<'_>,
    r: &RawSchemaRule,
    rp: &KeyPath,
    defaults: &SchemaDefaults,
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
    let compression = v
        .named(&r.compression, &rp.key("compression"))
        .unwrap_or(defaults.compression);
    let ep = rp.key("encoding");
    let encoding = match (&r.encoding, data_type) {
        (Some(_), t) => v
            .named(&r.encoding, &ep)
            .filter(|e| t.is_none_or(|t| v.check_encoding(t, *e, &ep))),
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

/// With `format_version = 4`: an encoding the daemon does not write in v4 is an error where it
/// is written, and a default not written becomes PLAIN.
pub(super) fn fit_defaults_v4(v: &mut V<'_>, d: &mut SchemaDefaults, dp: &KeyPath) {
    let keys = [
        ("boolean", DataType::BOOLEAN, &mut d.boolean),
        ("int32", DataType::INT32, &mut d.int32),
        ("int64", DataType::INT64, &mut d.int64),
        ("float", DataType::FLOAT, &mut d.float),
        ("double", DataType::DOUBLE, &mut d.double),
        ("text", DataType::TEXT, &mut d.text),
    ];
    for (key, t, e) in keys {
        let path = dp.key(key);
        if v.written(&path) {
            check_encoding_v4(v, t, *e, &path);
        } else if !encoding_supported_v4(t, *e) {
            *e = Encoding::PLAIN;
        }
    }
}

/// With `format_version = 4`: `e` must be an encoding the daemon writes in v4 for `t`.
pub(super) fn check_encoding_v4(v: &mut V<'_>, t: DataType, e: Encoding, path: &KeyPath) {
    if !encoding_supported_v4(t, e) {
        let ok: Vec<&str> = encodings_for_v4(t).iter().map(|e| e.name()).collect();
        v.err(
            path,
            format!(
                "{t} {e} is not written in TsFile v4 (storage.format_version = 4); {t} takes {}",
                choices_text(&ok)
            ),
        );
    }
}
