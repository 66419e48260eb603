//! Errors of the MQTT source.

use std::path::PathBuf;

/// Why the MQTT source could not start or stopped.
///
/// Broker outages are not errors: the source reconnects with backoff and keeps running.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MqttError {
    /// An option is invalid.
    #[error("mqtt.{field}: {message}")]
    Invalid {
        /// The option (as named in the TOML config).
        field: &'static str,
        /// What is wrong and what was expected.
        message: String,
    },
    /// A file named by the options could not be read or opened.
    #[error("mqtt {what} file {path}: {source}")]
    File {
        /// What the file is for (`password`, `ca_file`, `dead_letter`...).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TLS configuration could not be built.
    #[error("mqtt tls: {0}")]
    Tls(String),
    /// The sink is closed (the pipeline is shutting down); unacknowledged messages stay with
    /// the broker.
    #[error("the sink closed; unacknowledged messages remain with the broker")]
    SinkClosed,
}

impl MqttError {
    pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> MqttError {
        MqttError::Invalid {
            field,
            message: message.into(),
        }
    }
}
