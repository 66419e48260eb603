//! Values written back into a raw table: the effective configuration that
//! [`SourceSettings::to_table`](super::SourceSettings::to_table) returns.

use std::path::Path;
use std::time::Duration;

use tsfiled_core::{format_duration, Human};

/// A text key.
pub fn text(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// A path key.
pub fn path(p: &Path) -> Option<String> {
    Some(p.to_string_lossy().into_owned())
}

/// A duration key, with its unit (`"30s"`).
pub fn duration(d: Duration) -> Option<Human> {
    Some(Human::Text(format_duration(d)))
}
