//! `[[pipeline.schema]]` rules and `[pipeline.schema_defaults]`.

use tsfiled_core::{
    choices_text, encoding_supported_v4, encodings_for_v4, Compression, DataType, Encoding,
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
    let enc = |v: &mut V<'_>, val: &Option<String>, key: &str, t: DataType, d: Encoding| {
        let Some(s) = val else { return d };
        let path = dp.key(key);
        match v.encoding(s, &path) {
            Some(e) if v.check_encoding(t, e, &path) => e,
            _ => d,
        }
    };
    let boolean = enc(v, &rd.boolean, "boolean", DataType::Boolean, Encoding::Rle);
    let int32 = enc(v, &rd.int32, "int32", DataType::Int32, Encoding::Ts2Diff);
    let int64 = enc(v, &rd.int64, "int64", DataType::Int64, Encoding::Ts2Diff);
    let float = enc(v, &rd.float, "float", DataType::Float, Encoding::Gorilla);
    let double = enc(v, &rd.double, "double", DataType::Double, Encoding::Gorilla);
    let text = enc(v, &rd.text, "text", DataType::Text, Encoding::Plain);
    let compression = v.compression(&rd.compression, &dp.key("compression"), Compression::Snappy);
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
    let data_type = v
        .required(&r.data_type, rp, "type")
        .and_then(|t| v.data_type(t, &rp.key("type")));
    let compression = v.compression(&r.compression, &rp.key("compression"), defaults.compression);
    let encoding = match (&r.encoding, data_type) {
        (Some(s), Some(t)) => {
            let path = rp.key("encoding");
            v.encoding(s, &path)
                .filter(|e| v.check_encoding(t, *e, &path))
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

/// With `format_version = 4`: an encoding the daemon does not write in v4 is an error where it
/// is written, and a default not written becomes PLAIN.
pub(super) fn fit_defaults_v4(v: &mut V<'_>, d: &mut SchemaDefaults, dp: &KeyPath) {
    let keys = [
        ("boolean", DataType::Boolean, &mut d.boolean),
        ("int32", DataType::Int32, &mut d.int32),
        ("int64", DataType::Int64, &mut d.int64),
        ("float", DataType::Float, &mut d.float),
        ("double", DataType::Double, &mut d.double),
        ("text", DataType::Text, &mut d.text),
    ];
    for (key, t, e) in keys {
        let path = dp.key(key);
        if v.written(&path) {
            check_encoding_v4(v, t, *e, &path);
        } else if !encoding_supported_v4(t, *e) {
            *e = Encoding::Plain;
        }
    }
}

/// With `format_version = 4`: `e` must be an encoding the daemon writes in v4 for `t`.
pub(super) fn check_encoding_v4(v: &mut V<'_>, t: DataType, e: Encoding, path: &KeyPath) {
    if !encoding_supported_v4(t, e) {
        let ok: Vec<&str> = encodings_for_v4(t).iter().map(|e| e.as_str()).collect();
        v.err(
            path,
            format!(
                "{t} {e} is not written in TsFile v4 (storage.format_version = 4); {t} takes {}",
                choices_text(&ok)
            ),
        );
    }
}
