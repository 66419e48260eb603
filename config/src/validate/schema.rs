//! `[[pipeline.schema]]` rules and `[pipeline.schema_defaults]`.

use tsfiled_core::{
    choices_text, encoding_supported_v4, Compression, DataType, Encoding, PathPattern,
    Validator as V,
};

use crate::error::KeyPath;
use crate::model::{SchemaDefaults, SchemaRule};
use crate::raw::{RawSchemaDefaults, RawSchemaRule};

/// `[pipeline.schema_defaults]` for a pipeline writing format v4 (`v4`) or 000002: each
/// encoding must be one that format writes for the type. A default not written that the
/// format does not write (v4: BOOLEAN RLE) becomes PLAIN.
pub(super) fn validate_schema_defaults(
    v: &mut V<'_>,
    rd: &RawSchemaDefaults,
    dp: &KeyPath,
    v4: bool,
) -> SchemaDefaults {
    let enc = |v: &mut V<'_>, val: &Option<String>, key: &str, t: DataType, d: Encoding| {
        let d = if v4 && !encoding_supported_v4(t, d) {
            Encoding::Plain
        } else {
            d
        };
        let Some(s) = val else { return d };
        let path = dp.key(key);
        match v.encoding(s, &path) {
            Some(e) if v.check_encoding(t, e, v4, &path) => e,
            _ => d,
        }
    };
    let boolean = enc(v, &rd.boolean, "boolean", DataType::Boolean, Encoding::Rle);
    let int32 = enc(v, &rd.int32, "int32", DataType::Int32, Encoding::Ts2Diff);
    let int64 = enc(v, &rd.int64, "int64", DataType::Int64, Encoding::Ts2Diff);
    let float = enc(v, &rd.float, "float", DataType::Float, Encoding::Gorilla);
    let double = enc(v, &rd.double, "double", DataType::Double, Encoding::Gorilla);
    let text = enc(v, &rd.text, "text", DataType::Text, Encoding::Plain);
    let cpath = dp.key("compression");
    let compression = v.compression(&rd.compression, &cpath, Compression::Snappy);
    let compression = if v.check_compression(compression, v4, &cpath) {
        compression
    } else {
        Compression::Snappy
    };
    let pick =
        |v: &mut V<'_>, val: &Option<String>, key: &str, allowed: &[DataType], d: DataType| {
            let Some(s) = val else { return d };
            let path = dp.key(key);
            match v.data_type(s, &path) {
                Some(t) if allowed.contains(&t) => t,
                Some(t) => {
                    let names: Vec<&str> = allowed.iter().map(|t| t.as_str()).collect();
                    v.err(
                        &path,
                        format!("{t} cannot hold numbers; expected {}", choices_text(&names)),
                    );
                    d
                }
                None => d,
            }
        };
    use DataType as T;
    let integer_type = pick(
        v,
        &rd.integer_type,
        "integer_type",
        &[T::Int64, T::Int32, T::Double, T::Float],
        T::Int64,
    );
    let float_type = pick(
        v,
        &rd.float_type,
        "float_type",
        &[T::Double, T::Float],
        T::Double,
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
    let data_type = v
        .required(&r.data_type, rp, "type")
        .and_then(|t| v.data_type(t, &rp.key("type")));
    let cpath = rp.key("compression");
    let compression = v.compression(&r.compression, &cpath, defaults.compression);
    v.check_compression(compression, v4, &cpath);
    let encoding = match (&r.encoding, data_type) {
        (Some(s), Some(t)) => {
            let path = rp.key("encoding");
            v.encoding(s, &path)
                .filter(|e| v.check_encoding(t, *e, v4, &path))
        }
        (Some(s), None) => v.encoding(s, &rp.key("encoding")),
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
