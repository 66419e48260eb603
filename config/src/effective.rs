//! The effective configuration: a validated [`Config`] written back as TOML with every default
//! filled in (what `tsfiled check-config` prints). It parses back to an equal [`Config`].

use std::path::Path;

use crate::error::Result;
use crate::model::*;
use crate::raw::*;
use tsfiled_core::{format_duration, EncodingName, Named};

/// Whether secrets (bearer tokens, HTTP and MQTT passwords) are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secrets {
    /// Replace them by `"<redacted>"` (for logs and terminals).
    Redact,
    /// Print them as configured.
    Show,
}

const REDACTED: &str = "<redacted>";

fn p(path: &Path) -> Option<String> {
    Some(path.to_string_lossy().into_owned())
}

fn d(v: std::time::Duration) -> Option<Human> {
    Some(Human::Text(format_duration(v)))
}

fn s(v: tsfiled_core::ByteSize) -> Option<Human> {
    Some(Human::Text(v.to_string()))
}

fn t(v: &str) -> Option<String> {
    Some(v.to_string())
}

impl Config {
    /// The raw form of this configuration with every default written out.
    pub fn to_raw(&self, secrets: Secrets) -> RawConfig {
        let secret = |v: &str| match secrets {
            Secrets::Redact => REDACTED.to_string(),
            Secrets::Show => v.to_string(),
        };
        RawConfig {
            data_dir: p(&self.data_dir),
            shutdown_timeout: d(self.shutdown_timeout),
            http: Some(RawHttp {
                listen: Some(self.http.listen.to_string()),
                tokens: Some(self.http.tokens.iter().map(|x| secret(x)).collect()),
                token_file: self.http.token_file.as_deref().and_then(p),
                user: Some(
                    self.http
                        .users
                        .iter()
                        .map(|u| RawHttpUser {
                            name: t(&u.name),
                            password: Some(secret(&u.password)),
                        })
                        .collect(),
                ),
                user_file: self.http.user_file.as_deref().and_then(p),
                max_body_size: s(self.http.max_body_size),
                max_decompressed_size: s(self.http.max_decompressed_size),
                request_timeout: d(self.http.request_timeout),
            }),
            metrics: Some(RawMetrics {
                enabled: Some(self.metrics.enabled),
                path: t(&self.metrics.path),
                listen: self.metrics.listen.map(|a| a.to_string()),
            }),
            log: Some(RawLog {
                level: t(&self.log.level),
                format: t(match self.log.format {
                    LogFormat::Text => "text",
                    LogFormat::Json => "json",
                }),
                color: t(match self.log.color {
                    ColorMode::Auto => "auto",
                    ColorMode::Never => "never",
                    ColorMode::Always => "always",
                }),
            }),
            pipeline: self
                .pipelines
                .iter()
                .map(|pl| pipeline_raw(pl, &secret))
                .collect(),
        }
    }

    /// The effective configuration as TOML text, every default filled in.
    pub fn to_toml(&self, secrets: Secrets) -> Result<String> {
        Ok(toml::to_string(&self.to_raw(secrets))?)
    }
}

fn pipeline_raw(pl: &PipelineConfig, secret: &dyn Fn(&str) -> String) -> RawPipeline {
    let st = &pl.storage;
    let df = &pl.schema.defaults;
    RawPipeline {
        name: t(&pl.name),
        storage: Some(RawStorage {
            data_dir: p(&st.data_dir),
            storage_group_level: Some(i64::from(st.storage_group_level)),
            time_precision: t(st.time_precision.as_str()),
            memtable_budget: s(st.memtable_budget),
            chunk_group_size: s(st.chunk_group_size),
            seal_size: s(st.seal_size),
            seal_age: d(st.seal_age),
            seal_idle: d(st.seal_idle),
            time_partitioning: Some(st.time_partition.is_some()),
            time_partition_interval: d(st.time_partition_interval),
            wal_dir: p(&st.wal_dir),
            wal_commit_interval: d(st.wal_commit_interval),
            wal_commit_size: s(st.wal_commit_size),
            wal_max_size: s(st.wal_max_size),
            page_size: s(st.page_size),
            max_points_per_page: Some(i64::from(st.max_points_per_page)),
            max_index_degree: Some(i64::from(st.max_index_degree)),
            bloom_filter_error_rate: Some(st.bloom_filter_error_rate),
            format_version: Some(st.format_version.number()),
            line_protocol_model: Some(st.line_protocol_model.as_str().to_string()),
        }),
        schema: (!pl.schema.rules.is_empty()).then(|| {
            pl.schema
                .rules
                .iter()
                .map(|r| RawSchemaRule {
                    pattern: t(r.pattern.as_str()),
                    data_type: Some(Named::Known(r.data_type)),
                    encoding: Some(Named::Known(EncodingName::of(r.encoding))),
                    compression: Some(Named::Known(r.compression)),
                })
                .collect()
        }),
        schema_defaults: Some(RawSchemaDefaults {
            boolean: Some(Named::Known(EncodingName::of(df.boolean))),
            int32: Some(Named::Known(EncodingName::of(df.int32))),
            int64: Some(Named::Known(EncodingName::of(df.int64))),
            float: Some(Named::Known(EncodingName::of(df.float))),
            double: Some(Named::Known(EncodingName::of(df.double))),
            text: Some(Named::Known(EncodingName::of(df.text))),
            compression: Some(Named::Known(df.compression)),
            choose_encoding: Some(df.choose_encoding),
            integer_type: Some(Named::Known(df.integer_type)),
            float_type: Some(Named::Known(df.float_type)),
        }),
        source: pl.sources.iter().map(|s| source_raw(s, secret)).collect(),
    }
}

fn source_raw(src: &SourceConfig, secret: &dyn Fn(&str) -> String) -> RawSource {
    RawSource(src.settings.to_raw(&src.name, secret))
}
