//! Prometheus metrics, prefix `tsfiled_`. Labels are bounded: `pipeline`, `source`,
//! `reason`, `code`, `op`, `kind` — never device or file names.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use prometheus::{
    exponential_buckets, Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use tsfiled_connectors::source::{Counter, Gauge, SourceMetrics};

type Refresher = Box<dyn Fn() + Send + Sync>;

/// Every metric the daemon exports.
pub struct Metrics {
    registry: Registry,
    refreshers: Mutex<Vec<Refresher>>,
    /// Families registered by sources through [`SourceMetricsHandle`], by name.
    source_families: Mutex<SourceFamilies>,
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
    /// Acknowledged records the engine read back from the write-ahead log (past the
    /// backlog's memory limit).
    pub wal_records_read_back: IntCounterVec,
    /// Durations of the write-ahead log's fdatasync calls.
    pub wal_fsync_seconds: HistogramVec,
    /// Known series.
    pub series: IntGaugeVec,
    /// Memtable flush durations.
    pub flush_seconds: HistogramVec,
    /// Seal durations.
    pub seal_seconds: HistogramVec,
    /// Time the engine thread waited for the sealer when handing it a seal.
    pub seal_wait_seconds: HistogramVec,
    /// From receipt of a payload to its points being durable (acknowledged).
    pub ack_seconds: HistogramVec,
    /// From receipt of the oldest point of a memtable to its flush into a TsFile.
    pub end_to_end_seconds: HistogramVec,
    /// Appends refused because the buffer is full.
    pub backpressure: IntCounterVec,
    /// HTTP requests by status code.
    pub http_requests: IntCounterVec,
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
            wal_records_read_back: counter(
                "tsfiled_wal_records_read_back_total",
                "Acknowledged records the engine read back from the write-ahead log because the backlog in memory was full.",
                &["pipeline"],
            ),
            wal_fsync_seconds: hist(
                "tsfiled_wal_fsync_seconds",
                "Duration of the write-ahead log's fdatasync calls (every acknowledgement waits for one).",
                &["pipeline"],
                0.00005,
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
            seal_wait_seconds: hist(
                "tsfiled_seal_wait_seconds",
                "Time the engine waited for the sealer thread when handing it a seal (intake waits meanwhile).",
                &["pipeline"],
                0.00005,
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
                "Submissions refused because the write-ahead log, its queue or the engine's backlog was full.",
                &["pipeline", "source"],
            ),
            http_requests: counter(
                "tsfiled_http_requests_total",
                "HTTP requests, by status code.",
                &["code"],
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
            source_families: Mutex::new(SourceFamilies::default()),
        })
    }

    /// Drops the gauge series of a source that a reload removed, so dashboards do not show a
    /// removed source as disconnected or its last queue length. Counters stay: their totals
    /// remain true.
    pub fn forget_source(&self, pipeline: &str, source: &str) {
        let families = self
            .source_families
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for g in families.gauges.values() {
            let _ = g.remove_label_values(&[pipeline, source]);
        }
    }

    /// The counter family `name` with labels pipeline, source and `extra`, registered on first
    /// use (sources declare their own metrics).
    fn source_counter(&self, name: &str, help: &str, extra: Option<&str>) -> IntCounterVec {
        let mut families = self
            .source_families
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let key = (name.to_string(), extra.map(str::to_string));
        if let Some(c) = families.counters.get(&key) {
            return c.clone();
        }
        let mut labels = vec!["pipeline", "source"];
        labels.extend(extra);
        debug_assert!(
            name.starts_with("tsfiled_") && name.ends_with("_total"),
            "counter {name} must start with tsfiled_ and end in _total"
        );
        let c = IntCounterVec::new(Opts::new(name, help), &labels).expect("valid metric");
        if let Err(e) = self.registry.register(Box::new(c.clone())) {
            tracing::error!(metric = name, error = %e, "cannot register a source metric");
        }
        families.counters.insert(key, c.clone());
        c
    }

    /// The gauge family `name` with labels pipeline and source, registered on first use.
    fn source_gauge(&self, name: &str, help: &str) -> IntGaugeVec {
        let mut families = self
            .source_families
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(g) = families.gauges.get(name) {
            return g.clone();
        }
        debug_assert!(
            name.starts_with("tsfiled_") && !name.ends_with("_total"),
            "gauge {name} must start with tsfiled_ and not end in _total"
        );
        let g =
            IntGaugeVec::new(Opts::new(name, help), &["pipeline", "source"]).expect("valid metric");
        if let Err(e) = self.registry.register(Box::new(g.clone())) {
            tracing::error!(metric = name, error = %e, "cannot register a source metric");
        }
        families.gauges.insert(name.to_string(), g.clone());
        g
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

/// Metric families registered by sources.
#[derive(Default)]
struct SourceFamilies {
    counters: HashMap<(String, Option<String>), IntCounterVec>,
    gauges: HashMap<String, IntGaugeVec>,
}

/// The metrics handle given to one source: its series carry its pipeline and source labels,
/// and its progress feeds the watchdog.
pub struct SourceMetricsHandle {
    metrics: Arc<Metrics>,
    pipeline: String,
    source: String,
    progress: Option<crate::notify::Progress>,
}

impl SourceMetricsHandle {
    /// The handle of `source` in `pipeline`; `progress` reports liveness to the watchdog.
    pub fn new(
        metrics: Arc<Metrics>,
        pipeline: &str,
        source: &str,
        progress: Option<crate::notify::Progress>,
    ) -> SourceMetricsHandle {
        SourceMetricsHandle {
            metrics,
            pipeline: pipeline.to_string(),
            source: source.to_string(),
            progress,
        }
    }
}

impl SourceMetrics for SourceMetricsHandle {
    fn counter(&self, name: &str, help: &str, extra: Option<(&str, &str)>) -> Counter {
        let family = self
            .metrics
            .source_counter(name, help, extra.map(|(k, _)| k));
        let c: IntCounter = match extra {
            Some((_, v)) => family.with_label_values(&[self.pipeline.as_str(), &self.source, v]),
            None => family.with_label_values(&[self.pipeline.as_str(), &self.source]),
        };
        Arc::new(move |n| c.inc_by(n))
    }

    fn gauge(&self, name: &str, help: &str) -> Gauge {
        let g: IntGauge = self
            .metrics
            .source_gauge(name, help)
            .with_label_values(&[self.pipeline.as_str(), &self.source]);
        Arc::new(move |v| g.set(v))
    }

    fn progress(&self) {
        if let Some(p) = &self.progress {
            p.progress();
        }
    }

    fn pending(&self, items: u64) {
        if let Some(p) = &self.progress {
            p.set_pending(items);
        }
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

    /// A source's metrics handle labels its series with pipeline and source (and the extra
    /// label), and a removed source's gauges go while its counters stay.
    #[test]
    fn source_handles_label_their_series() {
        let m = Metrics::new();
        let h = SourceMetricsHandle::new(m.clone(), "p", "s1", None);
        h.counter("tsfiled_x_events_total", "Events.", None)(3);
        h.counter(
            "tsfiled_x_errors_total",
            "Errors.",
            Some(("reason", "parse")),
        )(2);
        h.gauge("tsfiled_x_queue", "Queue.")(7);
        // A second source shares the families.
        SourceMetricsHandle::new(m.clone(), "p", "s2", None).gauge("tsfiled_x_queue", "Queue.")(1);
        let text = m.render();
        for line in [
            "tsfiled_x_events_total{pipeline=\"p\",source=\"s1\"} 3",
            "tsfiled_x_errors_total{pipeline=\"p\",reason=\"parse\",source=\"s1\"} 2",
            "tsfiled_x_queue{pipeline=\"p\",source=\"s1\"} 7",
            "tsfiled_x_queue{pipeline=\"p\",source=\"s2\"} 1",
            "# TYPE tsfiled_x_events_total counter",
            "# TYPE tsfiled_x_queue gauge",
        ] {
            assert!(text.contains(line), "{line} not in\n{text}");
        }
        m.forget_source("p", "s1");
        let text = m.render();
        assert!(
            !text.contains("tsfiled_x_queue{pipeline=\"p\",source=\"s1\"}"),
            "{text}"
        );
        assert!(
            text.contains("tsfiled_x_queue{pipeline=\"p\",source=\"s2\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("tsfiled_x_events_total{pipeline=\"p\",source=\"s1\"} 3"),
            "{text}"
        );
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
