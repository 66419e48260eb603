//! Prometheus metrics, prefix `tsfiled_`. Labels are bounded: `pipeline`, `source`,
//! `reason`, `code`, `op`, `kind` — never device or file names.

use std::sync::{Arc, Mutex};

use prometheus::{
    exponential_buckets, Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use tsfiled_connectors::csv::{CsvMetrics, FileResult};
use tsfiled_connectors::mqtt::{MessageError, MqttMetrics};

type Refresher = Box<dyn Fn() + Send + Sync>;

/// Every metric the daemon exports.
pub struct Metrics {
    registry: Registry,
    refreshers: Mutex<Vec<Refresher>>,
    /// Points received (accepted or not), by pipeline and source.
    pub points_received: IntCounterVec,
    /// Points rejected, by pipeline, source and reason.
    pub points_rejected: IntCounterVec,
    /// Points written into flushed chunk groups.
    pub points_written: IntCounterVec,
    /// TsFile bytes written.
    pub bytes_written: IntCounterVec,
    /// Files sealed, by reason.
    pub files_sealed: IntCounterVec,
    /// Open (unsealed) files.
    pub open_files: IntGaugeVec,
    /// Bytes held in memtables.
    pub memtable_bytes: IntGaugeVec,
    /// Bytes in write-ahead-log segments.
    pub wal_bytes: IntGaugeVec,
    /// The write-ahead log's size limit (0: unlimited).
    pub wal_max_bytes: IntGaugeVec,
    /// The memtable budget (0: unlimited).
    pub memtable_max_bytes: IntGaugeVec,
    /// Write-ahead-log fsyncs (a counter: refreshed at scrape time from the log's own count).
    pub wal_fsyncs: IntCounterVec,
    /// Known series.
    pub series: IntGaugeVec,
    /// Memtable flush durations.
    pub flush_seconds: HistogramVec,
    /// Seal durations.
    pub seal_seconds: HistogramVec,
    /// From receipt of a payload to its points being durable (acknowledged).
    pub ack_seconds: HistogramVec,
    /// From receipt of the oldest point of a memtable to its flush into a TsFile.
    pub end_to_end_seconds: HistogramVec,
    /// Appends refused because the buffer is full.
    pub backpressure: IntCounterVec,
    /// HTTP requests by status code.
    pub http_requests: IntCounterVec,
    /// MQTT connection state (1 connected), by pipeline and source.
    pub mqtt_connected: IntGaugeVec,
    /// MQTT reconnections.
    pub mqtt_reconnects: IntCounterVec,
    /// MQTT messages received.
    pub mqtt_messages: IntCounterVec,
    /// MQTT payload bytes received.
    pub mqtt_bytes: IntCounterVec,
    /// MQTT messages (or points) not ingested, by reason.
    pub mqtt_message_errors: IntCounterVec,
    /// MQTT messages received and not yet durable.
    pub mqtt_inflight: IntGaugeVec,
    /// CSV files finished, by result (done, deleted, error, stuck).
    pub csv_files: IntCounterVec,
    /// CSV rows, by result (accepted, rejected).
    pub csv_rows: IntCounterVec,
    /// CSV points, by result (accepted, rejected).
    pub csv_points: IntCounterVec,
    /// CSV bytes read.
    pub csv_bytes: IntCounterVec,
    /// CSV files waiting.
    pub csv_queue: IntGaugeVec,
    /// Full CSV directory rescans, by reason (scheduled, event_loss).
    pub csv_rescans: IntCounterVec,
    /// Failed storage operations, by operation and kind (see [`crate::health`]).
    pub storage_errors: IntCounterVec,
    /// 1 while a storage operation of the pipeline is failing.
    pub storage_degraded: IntGaugeVec,
}

impl Metrics {
    /// Creates and registers every metric.
    pub fn new() -> Arc<Metrics> {
        let registry = Registry::new();
        // Prometheus naming: counters, and only counters, end in `_total`.
        let counter = |name: &str, help: &str, labels: &[&str]| {
            assert!(
                name.ends_with("_total"),
                "counter {name} must end in _total"
            );
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(c.clone()))
                .expect("unique metric");
            c
        };
        let gauge = |name: &str, help: &str, labels: &[&str]| {
            assert!(
                !name.ends_with("_total"),
                "gauge {name} must not end in _total"
            );
            let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(g.clone()))
                .expect("unique metric");
            g
        };
        let hist = |name: &str, help: &str, labels: &[&str], start: f64| {
            let h = HistogramVec::new(
                HistogramOpts::new(name, help)
                    .buckets(exponential_buckets(start, 2.0, 18).expect("valid buckets")),
                labels,
            )
            .expect("valid metric");
            registry
                .register(Box::new(h.clone()))
                .expect("unique metric");
            h
        };
        let build = gauge(
            "tsfiled_build_info",
            "Build information (always 1).",
            &["version"],
        );
        build.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        Arc::new(Metrics {
            points_received: counter(
                "tsfiled_points_received_total",
                "Points received by sources, accepted or not.",
                &["pipeline", "source"],
            ),
            points_rejected: counter(
                "tsfiled_points_rejected_total",
                "Points rejected, by reason.",
                &["pipeline", "source", "reason"],
            ),
            points_written: counter(
                "tsfiled_points_written_total",
                "Points written into flushed chunk groups of TsFiles.",
                &["pipeline"],
            ),
            bytes_written: counter(
                "tsfiled_tsfile_bytes_written_total",
                "Bytes written to TsFiles.",
                &["pipeline"],
            ),
            files_sealed: counter(
                "tsfiled_files_sealed_total",
                "TsFiles sealed, by reason (size, age, idle, partition, shutdown, wal, reload).",
                &["pipeline", "reason"],
            ),
            open_files: gauge(
                "tsfiled_open_files",
                "TsFiles open for writing.",
                &["pipeline"],
            ),
            memtable_bytes: gauge(
                "tsfiled_memtable_bytes",
                "Bytes of points held in memtables.",
                &["pipeline"],
            ),
            wal_bytes: gauge(
                "tsfiled_wal_bytes",
                "Bytes in write-ahead-log segments on disk.",
                &["pipeline"],
            ),
            wal_max_bytes: gauge(
                "tsfiled_wal_max_bytes",
                "Size limit of the write-ahead log; at it, sources are refused new points.",
                &["pipeline"],
            ),
            memtable_max_bytes: gauge(
                "tsfiled_memtable_max_bytes",
                "Memtable budget of the pipeline.",
                &["pipeline"],
            ),
            wal_fsyncs: counter(
                "tsfiled_wal_fsyncs_total",
                "Write-ahead-log fsync calls.",
                &["pipeline"],
            ),
            series: gauge(
                "tsfiled_series",
                "Distinct series known to the pipeline.",
                &["pipeline"],
            ),
            flush_seconds: hist(
                "tsfiled_flush_duration_seconds",
                "Duration of memtable flushes into TsFiles.",
                &["pipeline"],
                0.0001,
            ),
            seal_seconds: hist(
                "tsfiled_seal_duration_seconds",
                "Duration of sealing a storage group partition's files.",
                &["pipeline"],
                0.0001,
            ),
            ack_seconds: hist(
                "tsfiled_ack_latency_seconds",
                "From receipt of a payload until its points are durable.",
                &["pipeline", "source"],
                0.00005,
            ),
            end_to_end_seconds: hist(
                "tsfiled_end_to_end_latency_seconds",
                "From receipt of the oldest point of a memtable until it is written to a TsFile.",
                &["pipeline"],
                0.001,
            ),
            backpressure: counter(
                "tsfiled_backpressure_total",
                "Submissions refused because the write-ahead log or queue was full.",
                &["pipeline", "source"],
            ),
            http_requests: counter(
                "tsfiled_http_requests_total",
                "HTTP requests, by status code.",
                &["code"],
            ),
            mqtt_connected: gauge(
                "tsfiled_mqtt_connected",
                "1 while the MQTT source is connected to its broker.",
                &["pipeline", "source"],
            ),
            mqtt_reconnects: counter(
                "tsfiled_mqtt_reconnects_total",
                "MQTT connections established after the first one.",
                &["pipeline", "source"],
            ),
            mqtt_messages: counter(
                "tsfiled_mqtt_messages_total",
                "MQTT messages received.",
                &["pipeline", "source"],
            ),
            mqtt_bytes: counter(
                "tsfiled_mqtt_bytes_total",
                "MQTT payload bytes received.",
                &["pipeline", "source"],
            ),
            mqtt_message_errors: counter(
                "tsfiled_mqtt_message_errors_total",
                "MQTT messages (or points of them) not ingested, by reason.",
                &["pipeline", "source", "reason"],
            ),
            mqtt_inflight: gauge(
                "tsfiled_mqtt_inflight_messages",
                "MQTT messages received and not yet durable.",
                &["pipeline", "source"],
            ),
            csv_files: counter(
                "tsfiled_csv_files_total",
                "CSV files finished, by result (done, deleted, error, stuck).",
                &["pipeline", "source", "result"],
            ),
            csv_rows: counter(
                "tsfiled_csv_rows_total",
                "CSV rows, by result (accepted, rejected).",
                &["pipeline", "source", "result"],
            ),
            csv_points: counter(
                "tsfiled_csv_points_total",
                "CSV points, by result (accepted, rejected).",
                &["pipeline", "source", "result"],
            ),
            csv_bytes: counter(
                "tsfiled_csv_bytes_read_total",
                "CSV bytes read.",
                &["pipeline", "source"],
            ),
            csv_queue: gauge(
                "tsfiled_csv_queue_length",
                "CSV files waiting to be ingested.",
                &["pipeline", "source"],
            ),
            csv_rescans: counter(
                "tsfiled_csv_rescans_total",
                "Full CSV directory rescans, by reason (scheduled: at start and every rescan_interval; event_loss: the file watcher lost events).",
                &["pipeline", "source", "reason"],
            ),
            storage_errors: counter(
                "tsfiled_storage_errors_total",
                "Failed storage operations, by op (wal, flush, seal, rebuild, journal) and kind (no_space, read_only, io).",
                &["pipeline", "op", "kind"],
            ),
            storage_degraded: gauge(
                "tsfiled_storage_degraded",
                "1 while a storage operation of the pipeline is failing (points are kept in the write-ahead log and retried; intake is refused while flushes or seals fail).",
                &["pipeline"],
            ),
            registry,
            refreshers: Mutex::new(Vec::new()),
        })
    }

    /// Drops the gauge series of a source that a reload removed (`kind`: "mqtt" or "csv"),
    /// so dashboards do not show a removed source as disconnected or its last queue length.
    /// Counters stay: their totals remain true.
    pub fn forget_source(&self, pipeline: &str, source: &str, kind: &str) {
        let l = [pipeline, source];
        match kind {
            "mqtt" => {
                let _ = self.mqtt_connected.remove_label_values(&l);
                let _ = self.mqtt_inflight.remove_label_values(&l);
            }
            "csv" => {
                let _ = self.csv_queue.remove_label_values(&l);
            }
            _ => {}
        }
    }

    /// Adds a function that updates gauges just before each scrape.
    pub fn on_scrape(&self, f: impl Fn() + Send + Sync + 'static) {
        if let Ok(mut r) = self.refreshers.lock() {
            r.push(Box::new(f));
        }
    }

    /// The sum of a counter family over all its labels (0 when absent), e.g. for the
    /// throughput summary of systemd's `STATUS=`.
    pub fn total(&self, name: &str) -> f64 {
        self.registry
            .gather()
            .iter()
            .filter(|f| f.name() == name)
            .flat_map(|f| f.get_metric().iter())
            .map(|m| m.get_counter().get_value())
            .sum()
    }

    /// Runs the scrape-time updaters (as [`Metrics::render`] does first).
    pub fn refresh(&self) {
        if let Ok(r) = self.refreshers.lock() {
            for f in r.iter() {
                f();
            }
        }
    }

    /// Renders the Prometheus text format.
    pub fn render(&self) -> String {
        self.refresh();
        let mut buf = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }
}

/// The MQTT source's telemetry on the Prometheus metrics of one (pipeline, source).
pub struct MqttSourceMetrics {
    metrics: Arc<Metrics>,
    pipeline: String,
    source: String,
    connected: IntGauge,
    reconnects: IntCounter,
    messages: IntCounter,
    bytes: IntCounter,
    inflight: IntGauge,
    progress: Option<crate::notify::Progress>,
}

impl MqttSourceMetrics {
    /// Resolves (and so exports at 0) the series of `source` in `pipeline`.
    pub fn new(metrics: Arc<Metrics>, pipeline: &str, source: &str) -> MqttSourceMetrics {
        let l = [pipeline, source];
        MqttSourceMetrics {
            connected: metrics.mqtt_connected.with_label_values(&l),
            reconnects: metrics.mqtt_reconnects.with_label_values(&l),
            messages: metrics.mqtt_messages.with_label_values(&l),
            bytes: metrics.mqtt_bytes.with_label_values(&l),
            inflight: metrics.mqtt_inflight.with_label_values(&l),
            progress: None,
            pipeline: pipeline.to_string(),
            source: source.to_string(),
            metrics,
        }
    }
}

impl MqttSourceMetrics {
    /// Also reports liveness to the watchdog: in-flight messages are pending work, durable
    /// points are progress.
    pub fn with_progress(mut self, p: crate::notify::Progress) -> Self {
        self.progress = Some(p);
        self
    }
}

impl MqttMetrics for MqttSourceMetrics {
    fn points_durable(&self, _points: u64) {
        if let Some(p) = &self.progress {
            p.progress();
        }
    }
    fn connected(&self, up: bool) {
        self.connected.set(i64::from(up));
    }
    fn reconnect(&self) {
        self.reconnects.inc();
    }
    fn received(&self, bytes: u64) {
        self.messages.inc();
        self.bytes.inc_by(bytes);
    }
    fn message_error(&self, reason: MessageError, count: u64) {
        self.metrics
            .mqtt_message_errors
            .with_label_values(&[&self.pipeline, &self.source, reason.label()])
            .inc_by(count);
    }
    fn in_flight(&self, messages: u64) {
        self.inflight
            .set(i64::try_from(messages).unwrap_or(i64::MAX));
        if let Some(p) = &self.progress {
            p.set_pending(messages);
        }
    }
}

/// The CSV source's telemetry on the Prometheus metrics of one (pipeline, source).
pub struct CsvSourceMetrics {
    files: [IntCounter; 4],
    rows: [IntCounter; 2],
    points: [IntCounter; 2],
    bytes: IntCounter,
    queue: IntGauge,
    rescans: [IntCounter; 2],
    progress: Option<crate::notify::Progress>,
}

impl CsvSourceMetrics {
    /// Also reports liveness to the watchdog: queued files are pending work, ingested points
    /// and finished files are progress.
    pub fn with_progress(mut self, p: crate::notify::Progress) -> Self {
        self.progress = Some(p);
        self
    }

    fn tick(&self) {
        if let Some(p) = &self.progress {
            p.progress();
        }
    }
}

impl CsvSourceMetrics {
    /// Resolves (and so exports at 0) the series of `source` in `pipeline`.
    pub fn new(metrics: &Metrics, pipeline: &str, source: &str) -> CsvSourceMetrics {
        let f = |r: FileResult| {
            metrics
                .csv_files
                .with_label_values(&[pipeline, source, r.label()])
        };
        let two = |v: &IntCounterVec| {
            [
                v.with_label_values(&[pipeline, source, "accepted"]),
                v.with_label_values(&[pipeline, source, "rejected"]),
            ]
        };
        CsvSourceMetrics {
            files: [
                f(FileResult::Done),
                f(FileResult::Deleted),
                f(FileResult::Error),
                f(FileResult::Stuck),
            ],
            rows: two(&metrics.csv_rows),
            points: two(&metrics.csv_points),
            bytes: metrics.csv_bytes.with_label_values(&[pipeline, source]),
            queue: metrics.csv_queue.with_label_values(&[pipeline, source]),
            rescans: ["scheduled", "event_loss"].map(|r| {
                metrics
                    .csv_rescans
                    .with_label_values(&[pipeline, source, r])
            }),
            progress: None,
        }
    }
}

impl CsvMetrics for CsvSourceMetrics {
    fn file_finished(&self, result: FileResult) {
        let i = match result {
            FileResult::Done => 0,
            FileResult::Deleted => 1,
            FileResult::Error => 2,
            FileResult::Stuck => 3,
        };
        self.files[i].inc();
        self.tick();
    }
    fn rows(&self, accepted: u64, rejected: u64) {
        self.rows[0].inc_by(accepted);
        self.rows[1].inc_by(rejected);
    }
    fn points(&self, accepted: u64, rejected: u64) {
        self.points[0].inc_by(accepted);
        self.points[1].inc_by(rejected);
        self.tick();
    }
    fn bytes_read(&self, bytes: u64) {
        self.bytes.inc_by(bytes);
    }
    fn queue_length(&self, files: usize) {
        self.queue.set(i64::try_from(files).unwrap_or(i64::MAX));
        if let Some(p) = &self.progress {
            p.set_pending(files as u64);
        }
    }
    fn rescan(&self, event_loss: bool) {
        self.rescans[usize::from(event_loss)].inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_named_metrics() {
        let m = Metrics::new();
        m.points_received
            .with_label_values(&["p", "http"])
            .inc_by(5);
        m.points_rejected
            .with_label_values(&["p", "http", "type_mismatch"])
            .inc();
        m.on_scrape({
            let g = m.wal_bytes.clone();
            move || g.with_label_values(&["p"]).set(42)
        });
        let text = m.render();
        assert!(text.contains("tsfiled_points_received_total{pipeline=\"p\",source=\"http\"} 5"));
        assert!(text.contains("reason=\"type_mismatch\""));
        assert!(text.contains("tsfiled_wal_bytes{pipeline=\"p\"} 42"));
        assert!(text.contains("tsfiled_build_info{version="));
    }

    /// Prometheus naming (checked as every metric is registered): a counter's name ends in
    /// `_total`, a gauge's does not.
    #[test]
    fn counter_names_end_in_total() {
        let m = Metrics::new();
        m.wal_fsyncs.with_label_values(&["p"]).inc_by(3);
        let text = m.render();
        assert!(
            text.contains("# TYPE tsfiled_wal_fsyncs_total counter"),
            "{text}"
        );
        assert!(
            text.contains("tsfiled_wal_fsyncs_total{pipeline=\"p\"} 3"),
            "{text}"
        );
    }
}
