//! The configuration reference: every key with its type, default and meaning, built from the
//! declarations of the raw structures (see [`crate::raw`]), so it cannot drift from them.

use crate::raw::*;

/// Facts about one key, recorded next to its field by `config_table!`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FieldDoc {
    pub(crate) key: &'static str,
    pub(crate) ty: &'static str,
    pub(crate) default: &'static str,
    pub(crate) doc: &'static str,
}

/// One documented key of the configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDoc {
    /// Key path with `[]` for array-of-tables elements and `[type=…]` for a source type,
    /// e.g. `pipeline[].source[type=mqtt].topic[].qos`.
    pub path: String,
    /// The value's type as written in TOML (`size`, `duration`, `"a" | "b"`, …).
    pub ty: &'static str,
    /// The default: a TOML value (e.g. `"64MiB"`, `1`, `true`), or a description in words
    /// (`required`, `none`, `the top-level data_dir`).
    pub default: &'static str,
    /// What the key means.
    pub doc: String,
}

const SOURCE_TYPE: FieldDoc = FieldDoc {
    key: "type",
    ty: "\"http\" | \"mqtt\" | \"csv\"",
    default: "required",
    doc: " Kind of source; the other keys of the table depend on it.\n",
};

/// Table prefixes of the reference and the keys each holds.
pub(crate) fn tables() -> Vec<(&'static str, &'static [FieldDoc])> {
    vec![
        ("", RawConfig::KEYS),
        ("http.", RawHttp::KEYS),
        ("http.user[].", RawHttpUser::KEYS),
        ("metrics.", RawMetrics::KEYS),
        ("log.", RawLog::KEYS),
        ("pipeline[].", RawPipeline::KEYS),
        ("pipeline[].storage.", RawStorage::KEYS),
        ("pipeline[].schema[].", RawSchemaRule::KEYS),
        ("pipeline[].schema_defaults.", RawSchemaDefaults::KEYS),
        ("pipeline[].source[].", std::slice::from_ref(&SOURCE_TYPE)),
        ("pipeline[].source[type=http].", RawHttpSource::KEYS),
        ("pipeline[].source[type=mqtt].", RawMqttSource::KEYS),
        ("pipeline[].source[type=mqtt].topic[].", RawTopic::KEYS),
        ("pipeline[].source[type=csv].", RawCsvSource::KEYS),
    ]
}

fn one_paragraph(doc: &str) -> String {
    doc.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every key of the configuration file, in reference order.
pub fn reference() -> Vec<KeyDoc> {
    tables()
        .into_iter()
        .flat_map(|(prefix, keys)| {
            keys.iter().map(move |k| KeyDoc {
                path: format!("{prefix}{}", k.key),
                ty: k.ty,
                default: k.default,
                doc: one_paragraph(k.doc),
            })
        })
        .collect()
}

/// The reference as a Markdown table (key, type, default, meaning).
pub fn reference_markdown() -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::from("| Key | Type | Default | Meaning |\n|---|---|---|---|\n");
    for k in reference() {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            k.path,
            esc(k.ty),
            esc(k.default),
            esc(&k.doc)
        ));
    }
    out
}
