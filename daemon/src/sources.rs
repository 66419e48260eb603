//! Non-HTTP sources in pipelines: the [`BatchSink`] adapter over [`Pipeline::submit`] and the
//! mapping of the configuration's MQTT sources onto the connector's options.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tsfiled_config as cfg;
use tsfiled_connectors::csv;
use tsfiled_connectors::mqtt::{MqttSourceOptions, PayloadFormat, TopicFilter};
use tsfiled_connectors::sink::{BatchSink, SinkError, SinkFuture, SinkOutcome};
use tsfiled_connectors::{Batch, TimeUnit};

use crate::pipeline::{Pipeline, SubmitOutcome};
use crate::{Error, Refusal};

/// A pipeline seen as a connector's [`BatchSink`], labelled with the source's name.
pub struct PipelineSink {
    pipeline: Arc<Pipeline>,
    source: String,
}

impl PipelineSink {
    /// A sink that submits to `pipeline` as source `source`.
    pub fn new(pipeline: Arc<Pipeline>, source: impl Into<String>) -> PipelineSink {
        PipelineSink {
            pipeline,
            source: source.into(),
        }
    }
}

fn outcome(o: SubmitOutcome) -> SinkOutcome {
    SinkOutcome {
        accepted: o.accepted,
        rejected: o.rejected,
        rejections: o.rejections,
    }
}

fn error(e: Error) -> SinkError {
    match e.refusal() {
        Some(Refusal::Full {
            reason,
            retry_after,
        }) => SinkError::Full {
            reason,
            retry_after,
        },
        Some(Refusal::Closed) => SinkError::Closed,
        None => SinkError::Io(e.to_string()),
    }
}

impl BatchSink for PipelineSink {
    fn submit(&self, batch: Batch, received: Instant) -> SinkFuture<'_> {
        Box::pin(async move {
            self.pipeline
                .submit(&self.source, batch, received)
                .await
                .map(outcome)
                .map_err(error)
        })
    }
}

/// Maps a validated MQTT source of the configuration onto the connector's options;
/// `stored` is the pipeline's stored time precision; the session's subscriptions are recorded in
/// `state_dir/mqtt/<name>.subscriptions.json`.
pub fn mqtt_options(
    name: &str,
    m: &cfg::MqttSourceConfig,
    stored: TimeUnit,
    state_dir: &Path,
) -> MqttSourceOptions {
    let mut o = MqttSourceOptions::new(m.url.clone(), m.client_id.clone().unwrap_or_default());
    o.name = name.to_string();
    o.protocol = m.protocol;
    o.username = m.username.clone();
    o.password = m.password.clone();
    o.tls = m.tls.clone();
    o.keep_alive = m.keep_alive;
    o.clean_session = m.clean_session;
    o.session_expiry = m.session_expiry;
    o.shared_group = m.shared_group.clone();
    o.max_payload_bytes = usize::try_from(m.max_payload_size.0).unwrap_or(usize::MAX);
    o.in_flight = usize::from(m.max_inflight.max(1));
    o.reconnect_max_backoff = m.reconnect_max_backoff;
    o.dead_letter = Some(m.dead_letter_file.clone());
    o.subscription_record = Some(
        state_dir
            .join("mqtt")
            .join(format!("{name}.subscriptions.json")),
    );
    o.stored_unit = stored;
    o.filters = m
        .topics
        .iter()
        .map(|t| TopicFilter {
            filter: t.filter.clone(),
            qos: t.qos,
            format: match &t.payload {
                cfg::MqttPayload::IotdbJson => PayloadFormat::IotdbJson {
                    time_unit: TimeUnit::Millis,
                },
                cfg::MqttPayload::Line(lp) => PayloadFormat::LineProtocol {
                    precision: lp.precision.into(),
                    path_prefix: lp.path_prefix.clone(),
                    device_template: lp.device_template.as_str().to_string(),
                },
                cfg::MqttPayload::Value {
                    topic_template,
                    path_prefix,
                } => PayloadFormat::TopicValue {
                    template: topic_template.as_str().to_string(),
                    path_prefix: path_prefix.clone(),
                    time_unit: TimeUnit::Millis,
                },
            },
        })
        .collect();
    o
}

/// Maps the parsing settings of a validated CSV source; `stored` is the pipeline's stored
/// time precision.
pub fn csv_parse_options(c: &cfg::CsvSourceConfig, stored: TimeUnit) -> csv::CsvParseOptions {
    csv::CsvParseOptions {
        format: c.format.clone(),
        time_format: c.time_format.clone(),
        timezone: c.timezone.clone(),
        ambiguous_time: c.ambiguous_time,
        delimiter: c.delimiter,
        skip_rows: c.skip_rows,
        precision: stored,
        ..csv::CsvParseOptions::default()
    }
}

/// Maps a validated CSV source onto the connector's options; its checkpoints live under
/// `state_dir/csv/<name>`.
pub fn csv_options(
    name: &str,
    c: &cfg::CsvSourceConfig,
    stored: TimeUnit,
    state_dir: &std::path::Path,
) -> csv::CsvSourceOptions {
    let mut o = csv::CsvSourceOptions::new(c.directories.clone(), state_dir.join("csv").join(name));
    o.patterns = c.patterns.clone();
    o.ignore = c.ignore.clone();
    o.recursive = c.recursive;
    o.settle = c.settle;
    o.parse = csv_parse_options(c, stored);
    o.done_dir = c.done_dir.clone();
    o.error_dir = c.error_dir.clone();
    o.on_success = c.on_success;
    o.max_concurrent_files = c.max_concurrent_files.max(1) as usize;
    o.rescan_interval = c.rescan_interval;
    o
}
