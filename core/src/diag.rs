//! Compiler-style diagnostics: a [`KeyPath`] into the TOML document, a [`Diagnostic`] with its
//! line and column, and [`Diagnostics`] rendered `file:line:col: key: message`.

use std::fmt;

/// A TOML key path such as `pipeline[0].source[1].topic[0].qos`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct KeyPath(Vec<Segment>);

/// One step of a [`KeyPath`]: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    /// A key in a table.
    Key(String),
    /// An element of an array (of tables).
    Index(usize),
}

impl KeyPath {
    /// The document root (renders as the empty string).
    pub fn root() -> Self {
        KeyPath(Vec::new())
    }

    /// This path extended by a table key.
    pub fn key(&self, key: &str) -> Self {
        let mut v = self.0.clone();
        v.push(Segment::Key(key.to_string()));
        KeyPath(v)
    }

    /// This path extended by an array index.
    pub fn index(&self, index: usize) -> Self {
        let mut v = self.0.clone();
        v.push(Segment::Index(index));
        KeyPath(v)
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// The enclosing path, or `None` at the root.
    pub fn parent(&self) -> Option<Self> {
        if self.0.is_empty() {
            None
        } else {
            Some(KeyPath(self.0[..self.0.len() - 1].to_vec()))
        }
    }

    /// Whether this is the document root.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

fn is_bare_key(k: &str) -> bool {
    !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Segment::Key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    if is_bare_key(k) {
                        f.write_str(k)?;
                    } else {
                        write!(f, "{k:?}")?;
                    }
                }
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// One problem found in a configuration: where (key path, 1-based line and column) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The TOML key path the problem is about (empty for the whole document).
    pub path: KeyPath,
    /// 1-based line in the file.
    pub line: usize,
    /// 1-based column (in characters) in the line.
    pub column: usize,
    /// What is wrong and what was expected.
    pub message: String,
}

/// All problems found in one configuration, in document order, with the name of its origin
/// (file path, `<embedded default>`, or a command-line flag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostics {
    /// Where the configuration came from; the first field of each rendered line.
    pub origin: String,
    /// The problems, sorted by position.
    pub items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Whether there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl fmt::Display for Diagnostics {
    /// Renders one line per problem, like a compiler: `file:line:col: key: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{}:{}:{}: ", self.origin, d.line, d.column)?;
            if !d.path.is_root() {
                write!(f, "{}: ", d.path)?;
            }
            f.write_str(&d.message)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_display() {
        let p = KeyPath::root()
            .key("pipeline")
            .index(0)
            .key("source")
            .index(1)
            .key("qos");
        assert_eq!(p.to_string(), "pipeline[0].source[1].qos");
        assert_eq!(KeyPath::root().key("a.b").key("c").to_string(), "\"a.b\".c");
        assert_eq!(p.parent().unwrap().to_string(), "pipeline[0].source[1]");
        assert!(KeyPath::root().parent().is_none());
    }

    #[test]
    fn render() {
        let d = Diagnostics {
            origin: "x.toml".into(),
            items: vec![
                Diagnostic {
                    path: KeyPath::root().key("http").key("listen"),
                    line: 3,
                    column: 10,
                    message: "bad".into(),
                },
                Diagnostic {
                    path: KeyPath::root(),
                    line: 1,
                    column: 1,
                    message: "no pipeline".into(),
                },
            ],
        };
        assert_eq!(
            d.to_string(),
            "x.toml:3:10: http.listen: bad\nx.toml:1:1: no pipeline"
        );
    }
}
