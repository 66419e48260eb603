//! `[metrics]` and `[log]`.

use std::net::SocketAddr;

use tsfiled_core::{choices_text, Validator as V};

use crate::error::KeyPath;
use crate::model::{ColorMode, LogConfig, LogFormat, MetricsConfig};
use crate::raw::{RawLog, RawMetrics};

/// Validates `[metrics]` (at `mp`); `http_listen` is the HTTP listener's address.
pub(super) fn validate_metrics(
    v: &mut V<'_>,
    rm: &RawMetrics,
    mp: &KeyPath,
    http_listen: SocketAddr,
) -> MetricsConfig {
    let metrics_path = rm.path.clone().unwrap_or_else(|| "/metrics".to_string());
    if !metrics_path.starts_with('/')
        || metrics_path.len() < 2
        || metrics_path
            .chars()
            .any(|c| c.is_whitespace() || c == '?' || c == '#')
    {
        v.err(
            &mp.key("path"),
            format!("\"{metrics_path}\" is not a URL path such as \"/metrics\""),
        );
    }
    let metrics_listen = match &rm.listen {
        Some(s) => v.socket_addr(s, &mp.key("listen")),
        None => None,
    };
    if let Some(a) = metrics_listen {
        if a == http_listen && a.port() != 0 {
            v.err(
                &mp.key("listen"),
                format!("{a} is also http.listen; leave metrics.listen unset to serve metrics on the HTTP listener"),
            );
        }
    }
    MetricsConfig {
        enabled: rm.enabled.unwrap_or(true),
        path: metrics_path,
        listen: metrics_listen,
    }
}

/// Validates `[log]` (at `lp`).
pub(super) fn validate_log(v: &mut V<'_>, rl: &RawLog, lp: &KeyPath) -> LogConfig {
    let level = rl.level.clone().unwrap_or_else(|| "info".to_string());
    if let Err(e) = check_log_level(&level) {
        v.err(&lp.key("level"), e);
    }
    LogConfig {
        level,
        format: v.choice(
            &rl.format,
            &lp.key("format"),
            LogFormat::Text,
            &[("text", LogFormat::Text), ("json", LogFormat::Json)],
        ),
        color: v.choice(
            &rl.color,
            &lp.key("color"),
            ColorMode::Auto,
            &[
                ("auto", ColorMode::Auto),
                ("never", ColorMode::Never),
                ("always", ColorMode::Always),
            ],
        ),
    }
}

const LOG_LEVELS: &[&str] = &["trace", "debug", "info", "warn", "error", "off"];

fn check_log_level(s: &str) -> Result<(), String> {
    if s.trim().is_empty() {
        return Err("empty log level".into());
    }
    for d in s.split(',') {
        let d = d.trim();
        if d.is_empty() {
            continue;
        }
        let (target, level) = match d.split_once('=') {
            Some((t, l)) => (Some(t), l),
            None => (None, d),
        };
        if !LOG_LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "\"{level}\" is not a log level; expected {} (or target=level directives such as \"info,tsfiled=debug\")",
                choices_text(LOG_LEVELS)
            ));
        }
        if let Some(t) = target {
            if t.is_empty()
                || !t
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '-' | '.'))
            {
                return Err(format!("\"{t}\" is not a log target such as \"tsfiled\""));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_levels() {
        assert!(check_log_level("info").is_ok());
        assert!(check_log_level("INFO").is_ok());
        assert!(check_log_level("warn,tsfiled=debug,tsfiled::wal=trace").is_ok());
        assert!(check_log_level("inf")
            .unwrap_err()
            .contains("not a log level"));
        assert!(check_log_level("tsfiled=loud").is_err());
        assert!(check_log_level("=debug").is_err());
        assert!(check_log_level("").is_err());
    }
}
