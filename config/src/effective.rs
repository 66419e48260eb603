//! The effective configuration: a validated [`Config`] written back as TOML with every default
//! filled in (what `tsfiled check-config` prints). It parses back to an equal [`Config`].

use std::path::Path;

use crate::error::Result;
use crate::model::*;
use crate::raw::*;
use crate::units::format_duration;

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

fn s(v: crate::units::ByteSize) -> Option<Human> {
    Some(Human::Text(v.to_string()))
}

fn t(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn col(c: &ColumnRef) -> RawColumn {
    match c {
        ColumnRef::Name(n) => RawColumn::Name(n.clone()),
        ColumnRef::Index(i) => {
            RawColumn::Index(i64::try_from(*i).unwrap_or(i64::MAX).saturating_add(1))
        }
    }
}

fn lp_keys(m: &LineProtocolMapping) -> (Option<String>, Option<String>, Option<String>) {
    (
        t(&m.path_prefix),
        t(m.device_template.as_str()),
        t(m.precision.as_str()),
    )
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
        }),
        schema: (!pl.schema.rules.is_empty()).then(|| {
            pl.schema
                .rules
                .iter()
                .map(|r| RawSchemaRule {
                    pattern: t(r.pattern.as_str()),
                    data_type: t(r.data_type.as_str()),
                    encoding: t(r.encoding.as_str()),
                    compression: t(r.compression.as_str()),
                })
                .collect()
        }),
        schema_defaults: Some(RawSchemaDefaults {
            boolean: t(df.boolean.as_str()),
            int32: t(df.int32.as_str()),
            int64: t(df.int64.as_str()),
            float: t(df.float.as_str()),
            double: t(df.double.as_str()),
            text: t(df.text.as_str()),
            compression: t(df.compression.as_str()),
            integer_type: t(df.integer_type.as_str()),
            float_type: t(df.float_type.as_str()),
        }),
        source: pl.sources.iter().map(|s| source_raw(s, secret)).collect(),
    }
}

fn source_raw(src: &SourceConfig, secret: &dyn Fn(&str) -> String) -> RawSource {
    let name = t(&src.name);
    match &src.kind {
        SourceKind::Http(h) => {
            let (path_prefix, device_template, precision) = lp_keys(&h.line_protocol);
            RawSource::Http(RawHttpSource {
                name,
                base_path: t(&h.base_path),
                endpoints: Some(h.endpoints.iter().map(|e| e.as_str().to_string()).collect()),
                path_prefix,
                device_template,
                precision,
            })
        }
        SourceKind::Mqtt(m) => {
            let (password, password_file) = match &m.password {
                None => (None, None),
                Some(Password::Inline(pw)) => (Some(secret(pw)), None),
                Some(Password::File(f)) => (None, p(f)),
            };
            let tls = m.tls.as_ref();
            RawSource::Mqtt(RawMqttSource {
                name,
                url: t(&m.url),
                protocol: t(match m.protocol {
                    MqttProtocol::V311 => "v3",
                    MqttProtocol::V5 => "v5",
                }),
                client_id: m.client_id.clone(),
                username: m.username.clone(),
                password,
                password_file,
                ca_file: tls.and_then(|t| t.ca_file.as_deref()).and_then(p),
                client_cert_file: tls
                    .and_then(|t| t.client_auth.as_ref())
                    .and_then(|(c, _)| p(c)),
                client_key_file: tls
                    .and_then(|t| t.client_auth.as_ref())
                    .and_then(|(_, k)| p(k)),
                keep_alive: d(m.keep_alive),
                clean_session: Some(m.clean_session),
                session_expiry: match m.protocol {
                    MqttProtocol::V5 => d(m.session_expiry),
                    MqttProtocol::V311 => None,
                },
                shared_group: m.shared_group.clone(),
                max_payload_size: s(m.max_payload_size),
                max_inflight: Some(i64::from(m.max_inflight)),
                reconnect_max_backoff: d(m.reconnect_max_backoff),
                dead_letter_file: p(&m.dead_letter_file),
                topic: Some(
                    m.topics
                        .iter()
                        .map(|tc| {
                            let mut r = RawTopic {
                                filter: t(&tc.filter),
                                qos: Some(tc.qos as i64),
                                payload: t(tc.payload.as_str()),
                                ..Default::default()
                            };
                            match &tc.payload {
                                MqttPayload::IotdbJson => {}
                                MqttPayload::Line(lm) => {
                                    (r.path_prefix, r.device_template, r.precision) = lp_keys(lm);
                                }
                                MqttPayload::Value {
                                    topic_template,
                                    path_prefix,
                                } => {
                                    r.topic_template = t(topic_template.as_str());
                                    r.path_prefix = t(path_prefix);
                                }
                            }
                            r
                        })
                        .collect(),
                ),
            })
        }
        SourceKind::Csv(c) => {
            let mut r = RawCsvSource {
                name,
                directories: Some(c.directories.iter().filter_map(|x| p(x)).collect()),
                patterns: Some(c.patterns.iter().map(|g| g.as_str().to_string()).collect()),
                ignore: Some(c.ignore.iter().map(|g| g.as_str().to_string()).collect()),
                recursive: Some(c.recursive),
                settle: d(c.settle),
                format: t(match c.format {
                    CsvFormat::IotdbWide => "iotdb-wide",
                    CsvFormat::IotdbDevice => "iotdb-device",
                    CsvFormat::Generic(_) => "generic",
                }),
                time_format: t(c.time_format.as_str()),
                time_pattern: match &c.time_format {
                    TimeFormat::Strftime(pat) => t(pat),
                    _ => None,
                },
                timezone: t(&c.timezone),
                ambiguous_time: t(match c.ambiguous_time {
                    AmbiguousTime::Earliest => "earliest",
                    AmbiguousTime::Latest => "latest",
                    AmbiguousTime::Reject => "reject",
                }),
                delimiter: Some(char::from(c.delimiter).to_string()),
                skip_rows: Some(i64::from(c.skip_rows)),
                done_dir: match c.on_success {
                    OnSuccess::Move => p(&c.done_dir),
                    OnSuccess::Delete => None,
                },
                error_dir: p(&c.error_dir),
                on_success: t(match c.on_success {
                    OnSuccess::Move => "move",
                    OnSuccess::Delete => "delete",
                }),
                max_concurrent_files: Some(i64::from(c.max_concurrent_files)),
                rescan_interval: d(c.rescan_interval),
                ..Default::default()
            };
            if let CsvFormat::Generic(g) = &c.format {
                r.header_rows = Some(i64::from(g.header_rows));
                r.time_column = Some(col(&g.time_column));
                match &g.device {
                    CsvDevice::Column {
                        column,
                        path_prefix,
                    } => {
                        r.device_column = Some(col(column));
                        r.path_prefix = path_prefix.clone();
                    }
                    CsvDevice::Template(tpl) => r.device_template = t(tpl.as_str()),
                }
                r.value_columns = Some(g.value_columns.iter().map(col).collect());
            }
            RawSource::Csv(r)
        }
    }
}
