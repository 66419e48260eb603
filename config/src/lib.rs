//! tsfiled's TOML configuration: raw serde structures, then a validated runtime
//! configuration whose errors name the TOML key path, line and column.
//!
//! ```
//! use tsfiled_config::Config;
//! let config = Config::embedded_default().unwrap();
//! assert_eq!(config.pipelines[0].name, "default");
//! assert!(Config::from_toml_str("[http]\nlisten = 1\n", "x.toml").is_err());
//! ```
//!
//! - Stage one ([`raw`]): serde structures, unknown keys refused.
//! - Stage two ([`Config`]): defaults, typed values, every problem collected
//!   ([`Diagnostics`], rendered `file:line:col: key: message`).
//! - [`check`]: what `tsfiled check-config` verifies beyond the file (directories writable,
//!   ports free, files readable); [`Config::to_toml`] prints the effective configuration.
//! - [`reference`]: every key with type, default and meaning.
//!
//! Sources are plugins: each `[[pipeline.source]]` table goes to the source type its `type`
//! names in [`tsfiled_connectors::registry`], which declares, validates, documents and runs
//! it. The shared machinery (diagnostics, the validator, units, path rules, templates, data
//! types) is `tsfiled-core`'s, re-exported here.

mod check;
mod default;
mod effective;
mod error;
mod model;
pub mod raw;
mod reference;
mod validate;

pub use tsfiled_core::{path, units};

pub use check::{check, CheckItem, CheckLevel, CheckReport};
pub use default::DEFAULT_CONFIG;
pub use effective::Secrets;
pub use error::{ConfigError, Diagnostic, Diagnostics, KeyPath, Result, Segment};
pub use model::*;
pub use reference::{reference, reference_markdown, KeyDoc};
pub use tsfiled_connectors::csv::config::{
    AmbiguousTime, ColumnRef, CsvDevice, CsvFormat, CsvSourceConfig, GenericCsv, OnSuccess,
    TimeFormat,
};
pub use tsfiled_connectors::http::{HttpEndpoint, HttpSourceConfig};
pub use tsfiled_connectors::mqtt::config::{
    BrokerAddress, MqttPayload, MqttProtocol, MqttSourceConfig, MqttTls, Qos, TopicConfig,
};
pub use tsfiled_connectors::source::{LineProtocolMapping, Secret};
pub use tsfiled_core::{
    check_strftime, check_timezone, check_topic_filter, declared_type, encoding_supported,
    encoding_supported_v4, encodings_for, encodings_for_v4, format_duration, parse_duration,
    parse_size, ByteSize, Compression, ConfigName, DataType, Encoding, EncodingName, Glob,
    PathPattern, PatternNode, Template, TemplatePart, TimeUnit, TopicLevel, TopicTemplate,
};

#[cfg(test)]
mod tests;
