//! Line protocol stored in IoTDB 2.x's table model (`storage.line_protocol_model = "table"`):
//! the setting, and how a parsed line travels from a source to the pipeline.
//!
//! In table mode the line-protocol parser does not build a tree-model device path: the
//! record's device is a [`TableLine`] key (the database, the measurement and the tags in line
//! order), which the daemon's pipeline maps onto the table's TAG columns.

use std::fmt;

/// `storage.line_protocol_model`: how a pipeline stores line protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LineProtocolModel {
    /// A device path per line (the source's `path_prefix` and `device_template`), fields as
    /// measurements (IoTDB's tree model).
    #[default]
    Tree,
    /// The measurement as a table of the database `path_prefix` names, tags as TAG columns,
    /// fields as FIELD columns (IoTDB 2.x's table model; TsFile v4 only).
    Table,
}

impl LineProtocolModel {
    /// The configuration names and their values.
    pub const CHOICES: &'static [(&'static str, LineProtocolModel)] = &[
        ("tree", LineProtocolModel::Tree),
        ("table", LineProtocolModel::Table),
    ];

    /// The configuration name.
    pub fn as_str(self) -> &'static str {
        match self {
            LineProtocolModel::Tree => "tree",
            LineProtocolModel::Table => "table",
        }
    }

    /// Parses a configuration name (exact, lower case).
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "tree" => Some(LineProtocolModel::Tree),
            "table" => Some(LineProtocolModel::Table),
            _ => None,
        }
    }
}

impl fmt::Display for LineProtocolModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Starts a [`TableLine`] key and separates its database from its table.
const START: char = '\u{1f}';
/// Precedes a tag key.
const KEY: char = '\u{1e}';
/// Separates a tag key from its value.
const VALUE: char = '\u{1d}';

/// Whether `s` holds a character a [`TableLine`] key reserves (U+001D to U+001F).
pub fn has_reserved_char(s: &str) -> bool {
    s.contains([START, KEY, VALUE])
}

/// One line-protocol line as a table-model source hands it to the pipeline (as a record's
/// device): its database, its measurement (the table), its tags in line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableLine<'a> {
    /// The database (from the source's `path_prefix`).
    pub database: &'a str,
    /// The line's measurement, as written.
    pub table: &'a str,
    /// The line's tags (key, value) in line order, as written.
    pub tags: Vec<(&'a str, &'a str)>,
}

impl<'a> TableLine<'a> {
    /// Writes the key of a line into `out` (cleared first); a measurement, tag key or value
    /// holding a reserved character ([`has_reserved_char`]) is an error.
    pub fn encode<K: AsRef<str>, V: AsRef<str>>(
        database: &str,
        table: &str,
        tags: &[(K, V)],
        out: &mut String,
    ) -> Result<(), String> {
        out.clear();
        if has_reserved_char(table) {
            return Err(format!(
                "measurement {table:?} holds a control character U+001D..U+001F"
            ));
        }
        out.push(START);
        out.push_str(database);
        out.push(START);
        out.push_str(table);
        for (k, v) in tags {
            let (k, v) = (k.as_ref(), v.as_ref());
            if has_reserved_char(k) || has_reserved_char(v) {
                return Err(format!(
                    "tag {k:?} holds a control character U+001D..U+001F"
                ));
            }
            out.push(KEY);
            out.push_str(k);
            out.push(VALUE);
            out.push_str(v);
        }
        Ok(())
    }

    /// Reads a key written by [`TableLine::encode`]; `None` for any other string (a
    /// tree-model device path).
    pub fn decode(key: &'a str) -> Option<TableLine<'a>> {
        let rest = key.strip_prefix(START)?;
        let (database, rest) = rest.split_once(START)?;
        let mut parts = rest.split(KEY);
        let table = parts.next()?;
        let mut tags = Vec::new();
        for p in parts {
            tags.push(p.split_once(VALUE)?);
        }
        Some(TableLine {
            database,
            table,
            tags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_refuse_reserved_characters() {
        let mut out = String::new();
        TableLine::encode("lp", "cpu", &[("host", "gw1"), ("core", "a.b c")], &mut out).unwrap();
        let l = TableLine::decode(&out).unwrap();
        assert_eq!(l.database, "lp");
        assert_eq!(l.table, "cpu");
        assert_eq!(l.tags, vec![("host", "gw1"), ("core", "a.b c")]);
        TableLine::encode::<&str, &str>("lp", "cpu", &[], &mut out).unwrap();
        assert_eq!(TableLine::decode(&out).unwrap().tags, vec![]);
        assert!(TableLine::encode("lp", "c\u{1e}", &[("a", "b")], &mut out).is_err());
        assert!(TableLine::encode("lp", "c", &[("a", "b\u{1d}")], &mut out).is_err());
        assert!(TableLine::decode("root.lp.cpu").is_none());
        assert_eq!(
            LineProtocolModel::from_name("table"),
            Some(LineProtocolModel::Table)
        );
        assert_eq!(LineProtocolModel::from_name("Table"), None);
    }
}
