//! Settings several sources share: how line-protocol points map onto IoTDB paths.

use tsfiled_core::path::check_prefix;
use tsfiled_core::{KeyPath, Template, TimeUnit, Validator, PRECISIONS};

/// How line-protocol points map onto IoTDB paths (the `path_prefix`, `device_template` and
/// `precision` keys of the http source and of MQTT topics with `payload = "line"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProtocolMapping {
    /// Device path prefix, e.g. `root.lp`.
    pub path_prefix: String,
    /// Device path below the prefix; placeholders `{measurement}`, `{tags}`, `{<tag key>}`.
    pub device_template: Template,
    /// Timestamp unit when the request or source gives none.
    pub precision: TimeUnit,
}

impl LineProtocolMapping {
    /// The three keys as written in the effective configuration.
    pub fn keys(&self) -> (Option<String>, Option<String>, Option<String>) {
        (
            Some(self.path_prefix.clone()),
            Some(self.device_template.as_str().to_string()),
            Some(self.precision.as_str().to_string()),
        )
    }
}

/// Validates the line-protocol keys of the table at `at`; `default_prefix` applies when
/// `path_prefix` is not written.
pub fn line_mapping(
    v: &mut Validator<'_>,
    prefix: &Option<String>,
    template: &Option<String>,
    precision: &Option<String>,
    at: &KeyPath,
    default_prefix: &str,
) -> LineProtocolMapping {
    let path_prefix = prefix.clone().unwrap_or_else(|| default_prefix.to_string());
    if let Err(e) = check_prefix(&path_prefix, true) {
        v.err(&at.key("path_prefix"), e);
    }
    let tpl_text = template
        .clone()
        .unwrap_or_else(|| "{measurement}.{tags}".to_string());
    // The template's first node is the level after the prefix's last.
    let first_level = path_prefix.split('.').count();
    let device_template = match Template::parse_at(&tpl_text, first_level, None, &["tags"]) {
        Ok(t) => t,
        Err(e) => {
            v.err(&at.key("device_template"), e);
            Template::fallback()
        }
    };
    LineProtocolMapping {
        path_prefix,
        device_template,
        precision: v.choice(precision, &at.key("precision"), TimeUnit::Nanos, PRECISIONS),
    }
}
