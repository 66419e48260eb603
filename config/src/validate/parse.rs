//! Stage one: TOML text → [`RawConfig`] and the span index; every `[[pipeline.source]]` table
//! goes to the source type its `type` names in the registry.

use serde::Deserialize;
use toml::de::{DeTable, DeValue, ValueDeserializer};
use toml::Spanned;
use tsfiled_connectors::registry;
use tsfiled_core::SpanIndex;

use crate::error::{Diagnostic, KeyPath};
use crate::raw::*;

/// Rewrites serde's wording into the configuration's: keys, tables, arrays.
fn rewrite_serde_message(msg: &str) -> String {
    let mut m = msg
        .replace("unknown field", "unknown key")
        .replace("missing field", "missing required key")
        .replace("expected a sequence", "expected an array")
        .replace("expected a map", "expected a table");
    while let Some(i) = m.find("struct Raw") {
        let rest = &m[i + "struct Raw".len()..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        m = format!("{}a table{}", &m[..i], &rest[end..]);
    }
    m
}

/// Edit distance of two short strings (for "did you mean").
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// `unknown field `x`, expected one of `a`, `b`` → `unknown key `x`; did you mean `a`?` when
/// one expected key is close, else the whole list.
fn suggest_key(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (key, list) = rest.split_once("`, expected ")?;
    let list = list.strip_prefix("one of ").unwrap_or(list);
    let best = list
        .split(", ")
        .flat_map(|s| s.split(" or "))
        .map(|s| s.trim().trim_matches('`'))
        .filter(|s| !s.is_empty())
        .map(|c| (edit_distance(key, c), c))
        .min()?;
    (best.0 <= (key.chars().count() / 3).max(1))
        .then(|| format!("unknown key `{key}`; did you mean `{}`?", best.1))
}

fn serde_diag(spans: &SpanIndex, e: &toml::de::Error) -> Diagnostic {
    let span = e.span().unwrap_or(0..0);
    let mut path = spans.path_at(&span);
    let msg = e.message();
    if let Some(rest) = msg.strip_prefix("missing field `") {
        if let Some(key) = rest.strip_suffix('`') {
            path = path.key(key);
        }
    }
    let text = suggest_key(msg).unwrap_or_else(|| rewrite_serde_message(msg));
    spans.at_span(path, &span, text)
}

fn take_array_of_tables<'i>(
    table: &mut DeTable<'i>,
    key: &str,
    at: &KeyPath,
    spans: &SpanIndex,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Spanned<DeValue<'i>>> {
    let Some(value) = table.remove(key) else {
        return Vec::new();
    };
    let path = at.key(key);
    let span = value.span();
    match value.into_inner() {
        DeValue::Array(items) => {
            let mut out = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                if item.get_ref().is_table() {
                    out.push(item);
                } else {
                    diags.push(spans.at_value(
                        &path.index(i),
                        format!(
                            "expected a table, found {}; write [[{}]] sections",
                            item.get_ref().type_str(),
                            dotted(at, key)
                        ),
                    ));
                }
            }
            out
        }
        other => {
            diags.push(spans.at_span(
                path,
                &span,
                format!(
                    "expected an array of tables, found {}; write [[{}]] (double brackets)",
                    other.type_str(),
                    dotted(at, key)
                ),
            ));
            Vec::new()
        }
    }
}

/// `pipeline.source` for the `[[...]]` hint (indices dropped).
fn dotted(at: &KeyPath, key: &str) -> String {
    let mut s: Vec<String> = at
        .segments()
        .iter()
        .filter_map(|seg| match seg {
            crate::error::Segment::Key(k) => Some(k.clone()),
            crate::error::Segment::Index(_) => None,
        })
        .collect();
    s.push(key.to_string());
    s.join(".")
}

fn parse_source(
    value: Spanned<DeValue<'_>>,
    path: &KeyPath,
    spans: &SpanIndex,
    diags: &mut Vec<Diagnostic>,
) -> Option<RawSource> {
    let span = value.span();
    let DeValue::Table(mut table) = value.into_inner() else {
        return None;
    };
    let Some(kind) = table.remove("type") else {
        diags.push(spans.at_value(
            &path.key("type"),
            format!("missing required key `type` ({})", registry::type_names()),
        ));
        return None;
    };
    let kind_name = match kind.get_ref().as_str() {
        Some(s) => s.to_string(),
        None => {
            diags.push(spans.at_value(
                &path.key("type"),
                format!(
                    "expected a string ({}), found {}",
                    registry::type_names(),
                    kind.get_ref().type_str()
                ),
            ));
            return None;
        }
    };
    let de = ValueDeserializer::from(Spanned::new(span, DeValue::Table(table)));
    let Some(plugin) = registry::find(&kind_name) else {
        diags.push(spans.at_value(
            &path.key("type"),
            format!(
                "unknown source type \"{kind_name}\"; expected {}",
                registry::type_names()
            ),
        ));
        return None;
    };
    match plugin.deserialize(de) {
        Ok(s) => Some(RawSource(s)),
        Err(e) => {
            diags.push(serde_diag(spans, &e));
            None
        }
    }
}

/// Stage one: parses TOML text into the raw structures and the span index.
pub(crate) fn parse_raw(text: &str) -> Result<(RawConfig, SpanIndex), Vec<Diagnostic>> {
    let (root, parse_errors) = DeTable::parse_recoverable(text);
    let spans = SpanIndex::new(text, &root);
    let mut diags: Vec<Diagnostic> = parse_errors
        .iter()
        .map(|e| {
            let span = e.span().unwrap_or(0..0);
            let mut msg = e.message().to_string();
            let key = spans.snippet(&span);
            if msg == "duplicate key" && !key.is_empty() {
                msg = format!("duplicate key `{key}`");
            }
            spans.at_span(spans.path_at(&span), &span, msg)
        })
        .collect();
    if !diags.is_empty() {
        return Err(diags);
    }
    let root_span = root.span();
    let mut table = root.into_inner();
    let pipelines =
        take_array_of_tables(&mut table, "pipeline", &KeyPath::root(), &spans, &mut diags);
    let mut raw = match RawConfig::deserialize(toml::de::Deserializer::from(Spanned::new(
        root_span, table,
    ))) {
        Ok(r) => Some(r),
        Err(e) => {
            diags.push(serde_diag(&spans, &e));
            None
        }
    };
    let mut raw_pipelines = Vec::new();
    for (i, p) in pipelines.into_iter().enumerate() {
        let ppath = KeyPath::root().key("pipeline").index(i);
        let pspan = p.span();
        let DeValue::Table(mut ptable) = p.into_inner() else {
            continue;
        };
        let sources = take_array_of_tables(&mut ptable, "source", &ppath, &spans, &mut diags);
        let de = ValueDeserializer::from(Spanned::new(pspan, DeValue::Table(ptable)));
        let mut pipeline = match RawPipeline::deserialize(de) {
            Ok(p) => Some(p),
            Err(e) => {
                diags.push(serde_diag(&spans, &e));
                None
            }
        };
        for (j, s) in sources.into_iter().enumerate() {
            let spath = ppath.key("source").index(j);
            if let Some(src) = parse_source(s, &spath, &spans, &mut diags) {
                if let Some(p) = pipeline.as_mut() {
                    p.source.push(src);
                }
            }
        }
        if let Some(p) = pipeline {
            raw_pipelines.push(p);
        }
    }
    match raw.as_mut() {
        Some(r) if diags.is_empty() => {
            r.pipeline = raw_pipelines;
            Ok((raw.unwrap_or_default(), spans))
        }
        _ => {
            sort_diags(&mut diags);
            Err(diags)
        }
    }
}

pub(super) fn sort_diags(d: &mut [Diagnostic]) {
    d.sort_by_key(|a| (a.line, a.column));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(edit_distance("seal_agee", "seal_age"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(
            suggest_key("unknown field `seal_agee`, expected one of `seal_age`, `seal_idle`")
                .as_deref(),
            Some("unknown key `seal_agee`; did you mean `seal_age`?")
        );
        assert_eq!(
            suggest_key("unknown field `qoss`, expected `qos` or `filter`").as_deref(),
            Some("unknown key `qoss`; did you mean `qos`?")
        );
        assert_eq!(
            suggest_key("unknown field `colour`, expected one of `data_dir`, `http`"),
            None
        );
        assert_eq!(suggest_key("missing field `x`"), None);
    }

    #[test]
    fn serde_wording() {
        assert_eq!(
            rewrite_serde_message("invalid type: integer `3`, expected struct RawHttp"),
            "invalid type: integer `3`, expected a table"
        );
        assert_eq!(
            rewrite_serde_message("unknown field `x`, expected `a`"),
            "unknown key `x`, expected `a`"
        );
    }
}
