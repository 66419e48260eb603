//! The configuration reference: every key with its type, default and meaning, built from the
//! declarations of the raw structures (see [`crate::raw`]), so it cannot drift from them.

use std::sync::OnceLock;

use tsfiled_connectors::registry;
use tsfiled_core::FieldDoc;

use crate::raw::*;

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

/// The `type` key of `[[pipeline.source]]`, whose values are the registry's.
fn source_type() -> &'static [FieldDoc] {
    static DOC: OnceLock<[FieldDoc; 1]> = OnceLock::new();
    static TY: OnceLock<String> = OnceLock::new();
    let ty = TY.get_or_init(|| {
        registry::sources()
            .iter()
            .map(|p| format!("\"{}\"", p.type_name()))
            .collect::<Vec<_>>()
            .join(" | ")
    });
    DOC.get_or_init(|| {
        [FieldDoc {
            key: "type",
            ty,
            default: "required",
            doc: " Kind of source; the other keys of the table depend on it.\n",
        }]
    })
}

/// Table prefixes of the reference and the keys each holds; the sources' come from
/// [`registry::sources`].
pub(crate) fn tables() -> Vec<(String, &'static [FieldDoc])> {
    let mut t: Vec<(String, &'static [FieldDoc])> = vec![
        ("".into(), RawConfig::KEYS),
        ("http.".into(), RawHttp::KEYS),
        ("http.user[].".into(), RawHttpUser::KEYS),
        ("metrics.".into(), RawMetrics::KEYS),
        ("log.".into(), RawLog::KEYS),
        ("pipeline[].".into(), RawPipeline::KEYS),
        ("pipeline[].storage.".into(), RawStorage::KEYS),
        ("pipeline[].schema[].".into(), RawSchemaRule::KEYS),
        (
            "pipeline[].schema_defaults.".into(),
            RawSchemaDefaults::KEYS,
        ),
        ("pipeline[].source[].".into(), source_type()),
    ];
    for plugin in registry::sources() {
        for (sub, keys) in plugin.tables() {
            t.push((
                format!("pipeline[].source[type={}].{sub}", plugin.type_name()),
                keys,
            ));
        }
    }
    t
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
