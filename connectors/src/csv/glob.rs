//! File-name globs: `*` (any run), `?` (one character), `[abc]`, `[a-z]`, `[!x]`. A glob
//! matches the whole file name, never a directory part.

use crate::error::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Char(char),
    Any,
    Run,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// A compiled glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    toks: Vec<Tok>,
}

impl Glob {
    /// Compiles a glob; `key` names the option for errors.
    pub fn new(text: &str, key: &'static str) -> Result<Glob, Error> {
        let err = |m: String| Error::CsvOption { key, message: m };
        if text.is_empty() || text.contains('/') {
            return Err(err(format!(
                "{text:?}: a file-name pattern must be non-empty and contain no '/'"
            )));
        }
        let chars: Vec<char> = text.chars().collect();
        let mut toks = Vec::new();
        let mut i = 0;
        while let Some(&c) = chars.get(i) {
            i += 1;
            match c {
                '*' => {
                    if toks.last() != Some(&Tok::Run) {
                        toks.push(Tok::Run);
                    }
                }
                '?' => toks.push(Tok::Any),
                '[' => {
                    let negated = matches!(chars.get(i), Some('!' | '^'));
                    if negated {
                        i += 1;
                    }
                    let mut ranges = Vec::new();
                    let mut first = true;
                    loop {
                        let Some(&c) = chars.get(i) else {
                            return Err(err(format!("{text:?}: unclosed '['")));
                        };
                        if c == ']' && !first {
                            i += 1;
                            break;
                        }
                        first = false;
                        match (chars.get(i + 1), chars.get(i + 2)) {
                            (Some('-'), Some(&hi)) if hi != ']' => {
                                ranges.push((c, hi));
                                i += 3;
                            }
                            _ => {
                                ranges.push((c, c));
                                i += 1;
                            }
                        }
                    }
                    toks.push(Tok::Class { negated, ranges });
                }
                c => toks.push(Tok::Char(c)),
            }
        }
        Ok(Glob { toks })
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        let s: Vec<char> = name.chars().collect();
        let t = &self.toks;
        let (mut ti, mut si) = (0usize, 0usize);
        let mut back: Option<(usize, usize)> = None;
        while si < s.len() {
            let ok = match t.get(ti) {
                Some(Tok::Run) => {
                    back = Some((ti, si));
                    ti += 1;
                    continue;
                }
                Some(Tok::Any) => true,
                Some(Tok::Char(c)) => *c == s[si],
                Some(Tok::Class { negated, ranges }) => {
                    ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&s[si])) != *negated
                }
                None => false,
            };
            if ok {
                ti += 1;
                si += 1;
            } else if let Some((bt, bs)) = back {
                ti = bt + 1;
                si = bs + 1;
                back = Some((bt, bs + 1));
            } else {
                return false;
            }
        }
        t.get(ti..)
            .is_some_and(|rest| rest.iter().all(|x| *x == Tok::Run))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let g = |s| Glob::new(s, "patterns").unwrap();
        assert!(g("*.csv").matches("a.csv"));
        assert!(!g("*.csv").matches("a.csv.gz"));
        assert!(g("*.csv.gz").matches("a.csv.gz"));
        assert!(g(".*").matches(".hidden.csv"));
        assert!(!g(".*").matches("x.csv"));
        assert!(g("*.tmp").matches("a.csv.tmp"));
        assert!(g("data-??.[ct]sv").matches("data-01.tsv"));
        assert!(!g("data-??.[ct]sv").matches("data-1.csv"));
        assert!(g("[!a-c]*").matches("x"));
        assert!(!g("[!a-c]*").matches("b"));
        assert!(g("a*b*c").matches("aXXbYYc"));
        assert!(!g("a*b*c").matches("aXXbYY"));
        assert!(Glob::new("a/b", "patterns").is_err());
        assert!(Glob::new("[ab", "ignore").is_err());
    }
}
