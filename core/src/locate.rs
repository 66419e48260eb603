//! Where each key of a parsed TOML document is: key path → span, span → key path, and byte
//! offset → line and column. Built once from toml's spanned document tree, so the raw serde
//! structures need no span wrappers and validation can point at any key by its path.

use std::collections::HashMap;
use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::diag::{Diagnostic, KeyPath};

#[derive(Debug, Clone)]
struct Entry {
    path: KeyPath,
    key: Option<Range<usize>>,
    value: Range<usize>,
}

/// Positions of every key and value of one TOML document.
#[derive(Debug, Clone, Default)]
pub struct SpanIndex {
    entries: Vec<Entry>,
    by_path: HashMap<KeyPath, usize>,
    line_starts: Vec<usize>,
    text: String,
}

impl SpanIndex {
    /// Indexes a parsed document; `text` is the document's source.
    pub fn new(text: &str, root: &Spanned<DeTable<'_>>) -> Self {
        let mut index = SpanIndex {
            line_starts: std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
            text: text.to_string(),
            ..Default::default()
        };
        index.walk_table(&KeyPath::root(), root.get_ref());
        index
    }

    fn push(&mut self, path: KeyPath, key: Option<Range<usize>>, value: Range<usize>) {
        self.by_path.insert(path.clone(), self.entries.len());
        self.entries.push(Entry { path, key, value });
    }

    fn walk_table(&mut self, path: &KeyPath, table: &DeTable<'_>) {
        for (k, v) in table.iter() {
            let p = path.key(k.get_ref());
            self.push(p.clone(), Some(k.span()), v.span());
            self.walk_value(&p, v.get_ref());
        }
    }

    fn walk_value(&mut self, path: &KeyPath, value: &DeValue<'_>) {
        match value {
            DeValue::Table(t) => self.walk_table(path, t),
            DeValue::Array(a) => {
                for (i, e) in a.iter().enumerate() {
                    let p = path.index(i);
                    self.push(p.clone(), None, e.span());
                    self.walk_value(&p, e.get_ref());
                }
            }
            _ => {}
        }
    }

    /// Whether the document has this exact key.
    pub fn contains(&self, path: &KeyPath) -> bool {
        self.by_path.contains_key(path)
    }

    /// Byte offset of the value at `path`, or of its nearest ancestor that is in the document.
    fn value_offset(&self, path: &KeyPath) -> usize {
        let mut p = Some(path.clone());
        while let Some(cur) = p {
            if let Some(&i) = self.by_path.get(&cur) {
                return self.entries[i].value.start;
            }
            p = cur.parent();
        }
        0
    }

    /// Byte offset of the key at `path` (its value's offset for array elements), or of its
    /// nearest ancestor that is in the document.
    fn key_offset(&self, path: &KeyPath) -> usize {
        match self.by_path.get(path) {
            Some(&i) => self.entries[i]
                .key
                .as_ref()
                .map_or(self.entries[i].value.start, |k| k.start),
            None => self.value_offset(path),
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.line_starts.get(line).copied().unwrap_or(0);
        let col = self
            .text
            .get(start..offset.min(self.text.len()))
            .map_or(0, |s| s.chars().count());
        (line + 1, col + 1)
    }

    /// The key path of the innermost key or value whose span holds `offset`.
    pub fn path_at(&self, span: &Range<usize>) -> KeyPath {
        let mut best: Option<(usize, &Entry)> = None;
        for e in &self.entries {
            for r in e.key.iter().chain(std::iter::once(&e.value)) {
                let hit = if r.is_empty() {
                    r.start == span.start
                } else {
                    r.start <= span.start && span.start < r.end
                };
                if hit {
                    let len = r.end - r.start;
                    if best.is_none_or(|(l, _)| len <= l) {
                        best = Some((len, e));
                    }
                }
            }
        }
        best.map_or_else(KeyPath::root, |(_, e)| e.path.clone())
    }

    /// The source text of a span (empty if out of range).
    pub fn snippet(&self, span: &Range<usize>) -> &str {
        self.text.get(span.clone()).unwrap_or("")
    }

    /// A diagnostic pointing at the value of `path`.
    pub fn at_value(&self, path: &KeyPath, message: String) -> Diagnostic {
        let (line, column) = self.line_col(self.value_offset(path));
        Diagnostic {
            path: path.clone(),
            line,
            column,
            message,
        }
    }

    /// A diagnostic pointing at the key of `path`.
    pub fn at_key(&self, path: &KeyPath, message: String) -> Diagnostic {
        let (line, column) = self.line_col(self.key_offset(path));
        Diagnostic {
            path: path.clone(),
            line,
            column,
            message,
        }
    }

    /// A diagnostic at a byte span (for errors reported by the TOML parser or serde).
    pub fn at_span(&self, path: KeyPath, span: &Range<usize>, message: String) -> Diagnostic {
        let (line, column) = self.line_col(span.start);
        Diagnostic {
            path,
            line,
            column,
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions() {
        let text = "a = 1\n[[p]]\nname = 'x'\n[p.s]\nlevel = 'é'\nz = 2\n";
        let root = DeTable::parse(text).unwrap();
        let idx = SpanIndex::new(text, &root);
        let p = KeyPath::root().key("p").index(0).key("s").key("level");
        assert!(idx.contains(&p));
        assert_eq!(idx.at_value(&p, String::new()).line, 5);
        assert_eq!(idx.at_value(&p, String::new()).column, 9);
        assert_eq!(idx.at_key(&p, String::new()).column, 1);
        // a missing key points at its nearest ancestor (the [p.s] header)
        let missing = KeyPath::root().key("p").index(0).key("s").key("nope");
        assert_eq!(idx.at_value(&missing, String::new()).line, 4);
        // span → path
        let off = text.find("'é'").unwrap();
        assert_eq!(idx.path_at(&(off..off + 1)), p);
        let z = text.find("z =").unwrap();
        assert_eq!(idx.path_at(&(z..z + 1)).to_string(), "p[0].s.z");
        // column counts characters, not bytes
        let after = text.find("\nz").unwrap();
        assert_eq!(idx.line_col(after).1, 12);
    }
}
