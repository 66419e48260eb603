//! What config, connectors and daemon share, defined once: configuration diagnostics
//! ([`KeyPath`], [`Diagnostic`]), the positions of a TOML document ([`SpanIndex`]), the
//! stage-two [`Validator`] with its typed readers, the [`config_table!`] declaration of raw
//! tables, units (sizes, durations, [`TimeUnit`]), IoTDB path rules ([`path`]), the
//! template grammars ([`DeviceTemplate`], [`Template`], [`TopicTemplate`], [`Glob`]), TsFile data types, encodings
//! and compressions (the `tsfile` crate's, with their configuration names: [`schema`]), and the
//! machine checks of `check-config` ([`probe`]).
//!
//! No tokio.

mod device_template;
mod diag;
mod error;
pub mod locate;
pub mod path;
mod patterns;
pub mod probe;
mod raw;
pub mod schema;
pub mod table_line;
mod time;
pub mod units;
mod validate;

pub use device_template::DeviceTemplate;
pub use diag::{Diagnostic, Diagnostics, KeyPath, Segment};
pub use error::Error;
pub use locate::SpanIndex;
pub use patterns::{
    check_strftime, check_timezone, check_topic_filter, Glob, Template, TemplatePart, TopicLevel,
    TopicTemplate,
};
pub use raw::{ConfigTable, FieldDoc, Human};
pub use schema::{
    declared_type, encoding_supported, encoding_supported_v4, encodings_for, encodings_for_v4,
    Compression, ConfigName, DataType, Encoding, EncodingName, Named, PathPattern, PatternNode,
};
pub use table_line::{LineProtocolModel, TableLine};
pub use time::TimeUnit;
pub use units::{format_duration, parse_duration, parse_size, ByteSize};
pub use validate::{choices_text, same_path, Validator, PRECISIONS};

#[doc(hidden)]
pub use serde;
