//! Every source type, keyed by its `type` value: one line per source.
//!
//! The configuration crate dispatches `[[pipeline.source]]` tables through [`find`], the
//! reference documents [`SOURCES`], and the daemon starts what they validated to.

use crate::source::{Plugin, SourcePlugin};

/// The source types, in reference order.
pub static SOURCES: &[&dyn SourcePlugin] = &[
    &Plugin::<crate::http::HttpTable>::new(),
    &Plugin::<crate::mqtt::MqttTable>::new(),
    &Plugin::<crate::csv::CsvTable>::new(),
];

/// The source type named `type_name`.
pub fn find(type_name: &str) -> Option<&'static dyn SourcePlugin> {
    SOURCES.iter().copied().find(|p| p.type_name() == type_name)
}

/// The type names, for messages: `"http", "mqtt" or "csv"`.
pub fn type_names() -> String {
    let names: Vec<&str> = SOURCES.iter().map(|p| p.type_name()).collect();
    tsfiled_core::choices_text(&names)
}
