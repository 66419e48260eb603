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
//! This crate knows neither tokio nor the `tsfile` crate: TsFile types, encodings and
//! compressions are named by [`DataType`], [`Encoding`] and [`Compression`], whose
//! `as_str()` gives the canonical TsFile names. `tsfiled-connectors` depends on this crate
//! and uses its CSV option types, [`Glob`], [`Template`], [`check_topic_filter`] and its MQTT
//! option types ([`BrokerAddress`], [`MqttProtocol`], [`Qos`], [`Password`], [`MqttTls`]) as
//! they are.

mod check;
mod default;
mod effective;
mod error;
mod locate;
mod model;
pub mod path;
mod patterns;
pub mod raw;
mod reference;
mod schema;
pub mod units;
mod validate;

pub use check::{check, CheckItem, CheckLevel, CheckReport};
pub use default::DEFAULT_CONFIG;
pub use effective::Secrets;
pub use error::{ConfigError, Diagnostic, Diagnostics, KeyPath, Result, Segment};
pub use model::*;
pub use path::PathError;
pub use patterns::{
    check_strftime, check_timezone, check_topic_filter, Glob, Template, TemplatePart, TopicLevel,
    TopicTemplate,
};
pub use reference::{reference, reference_markdown, KeyDoc};
pub use schema::{
    encoding_supported, encoding_supported_v4, encodings_for, encodings_for_v4, Compression,
    DataType, Encoding, PathPattern, PatternNode,
};
pub use units::{format_duration, parse_duration, parse_size, ByteSize, UnitError};

#[cfg(test)]
mod tests;
