//! The `csv` source on the plugin API: effective configuration, machine checks, and the run
//! (settings and a [`CsvRun`], telemetry → the source's metrics handle and status).

use std::sync::Arc;

use tsfiled_core::probe::{check_timezone_exists, device_of, dir_writable, CheckItem, CheckLevel};

use super::config::{
    AmbiguousTime, ColumnRef, CsvDevice, CsvFormat, CsvSourceConfig, CsvTable, OnSuccess,
    RawColumn, TimeFormat,
};
use super::metrics::{CsvMetrics, FileResult};
use super::options::{CsvParseOptions, CsvRun};
use crate::model::TimeUnit;
use crate::source::written::{duration as d, path as p, text as t};
use crate::source::{Counter, Gauge, SourceContext, SourceFuture, SourceMetrics, SourceSettings};

fn col(c: &ColumnRef) -> RawColumn {
    match c {
        ColumnRef::Name(n) => RawColumn::Name(n.clone()),
        ColumnRef::Index(i) => {
            RawColumn::Index(i64::try_from(*i).unwrap_or(i64::MAX).saturating_add(1))
        }
    }
}

impl SourceSettings for CsvSourceConfig {
    type Table = CsvTable;

    fn to_table(&self, name: &str, _secret: &dyn Fn(&str) -> String) -> CsvTable {
        let c = self;
        let mut r = CsvTable {
            name: t(name),
            directories: Some(c.directories.iter().filter_map(|x| p(x)).collect()),
            patterns: Some(c.patterns.iter().map(|g| g.as_str().to_string()).collect()),
            ignore: Some(c.ignore.iter().map(|g| g.as_str().to_string()).collect()),
            recursive: Some(c.recursive),
            settle: d(c.settle),
            format: t(match c.rows.format {
                CsvFormat::IotdbWide => "iotdb-wide",
                CsvFormat::IotdbDevice => "iotdb-device",
                CsvFormat::Generic(_) => "generic",
            }),
            time_format: t(c.rows.time_format.as_str()),
            time_pattern: match &c.rows.time_format {
                TimeFormat::Strftime(pat) => t(pat),
                _ => None,
            },
            timezone: t(&c.rows.timezone),
            ambiguous_time: t(match c.rows.ambiguous_time {
                AmbiguousTime::Earliest => "earliest",
                AmbiguousTime::Latest => "latest",
                AmbiguousTime::Reject => "reject",
            }),
            delimiter: Some(char::from(c.rows.delimiter).to_string()),
            skip_rows: Some(i64::from(c.rows.skip_rows)),
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
        if let CsvFormat::Generic(g) = &c.rows.format {
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
        r
    }

    fn check(&self, at: &str, out: &mut Vec<CheckItem>) {
        let c = self;
        for (k, dir) in c.directories.iter().enumerate() {
            out.push(CheckItem::from_result(
                format!("{at}.directories[{k}]"),
                dir_writable(dir),
            ));
            let mut targets = vec![("error_dir", c.error_dir_for(dir))];
            if c.on_success == OnSuccess::Move {
                targets.insert(0, ("done_dir", c.done_dir_for(dir)));
            }
            for (key, target) in targets {
                let subject = format!("{at}.{key}");
                out.push(match dir_writable(&target) {
                    Err(e) => CheckItem::new(CheckLevel::Error, subject, e),
                    Ok(m) => match (device_of(dir), device_of(&target)) {
                        (Some(a), Some(b)) if a != b => CheckItem::new(
                            CheckLevel::Error,
                            subject,
                            format!(
                                "{} is on another filesystem than {}; files are moved by rename, which needs the same filesystem",
                                target.display(),
                                dir.display()
                            ),
                        ),
                        _ => CheckItem::new(CheckLevel::Ok, subject, m),
                    },
                });
            }
        }
        let (level, msg) = check_timezone_exists(&c.rows.timezone);
        out.push(CheckItem::new(level, format!("{at}.timezone"), msg));
    }

    fn initial_state(&self) -> &'static str {
        "watching"
    }

    fn start(&self, cx: SourceContext) -> SourceFuture {
        let mut csv_run = CsvRun::new(cx.state_dir.join("csv").join(&cx.name));
        csv_run.stored_unit = cx.stored_unit;
        let metrics: Arc<dyn CsvMetrics> = Arc::new(HandleMetrics::new(cx.metrics.clone()));
        tracing::info!(source = %format!("{}/{}", cx.pipeline, cx.name), dirs = ?self.directories, "CSV source starting");
        let run = super::run(self.clone(), csv_run, cx.sink, cx.shutdown, metrics);
        Box::pin(async move { run.await.map_err(|e| e.to_string()) })
    }
}

impl CsvSourceConfig {
    /// The parsing settings; `stored` is the pipeline's stored time unit.
    pub fn parse_options(&self, stored: TimeUnit) -> CsvParseOptions {
        CsvParseOptions {
            rows: self.rows.clone(),
            precision: stored,
            ..CsvParseOptions::default()
        }
    }
}

/// The CSV telemetry on the source's metrics handle (`tsfiled_csv_*`).
struct HandleMetrics {
    handle: Arc<dyn SourceMetrics>,
    files: [Counter; 4],
    rows: [Counter; 2],
    points: [Counter; 2],
    bytes: Counter,
    queue: Gauge,
    rescans: [Counter; 2],
}

impl HandleMetrics {
    fn new(handle: Arc<dyn SourceMetrics>) -> HandleMetrics {
        let m = handle.as_ref();
        let files = |r: FileResult| {
            m.counter(
                "tsfiled_csv_files_total",
                "CSV files finished, by result (done, deleted, error, stuck).",
                Some(("result", r.label())),
            )
        };
        let two = |name: &str, help: &str| {
            ["accepted", "rejected"].map(|r| m.counter(name, help, Some(("result", r))))
        };
        HandleMetrics {
            files: [
                files(FileResult::Done),
                files(FileResult::Deleted),
                files(FileResult::Error),
                files(FileResult::Stuck),
            ],
            rows: two("tsfiled_csv_rows_total", "CSV rows, by result (accepted, rejected)."),
            points: two("tsfiled_csv_points_total", "CSV points, by result (accepted, rejected)."),
            bytes: m.counter("tsfiled_csv_bytes_read_total", "CSV bytes read.", None),
            queue: m.gauge("tsfiled_csv_queue_length", "CSV files waiting to be ingested."),
            rescans: ["scheduled", "event_loss"].map(|r| {
                m.counter(
                    "tsfiled_csv_rescans_total",
                    "Full CSV directory rescans, by reason (scheduled: at start and every rescan_interval; event_loss: the file watcher lost events).",
                    Some(("reason", r)),
                )
            }),
            handle,
        }
    }
}

impl CsvMetrics for HandleMetrics {
    fn file_finished(&self, result: FileResult) {
        let i = match result {
            FileResult::Done => 0,
            FileResult::Deleted => 1,
            FileResult::Error => 2,
            FileResult::Stuck => 3,
        };
        (self.files[i])(1);
        self.handle.progress();
    }
    fn rows(&self, accepted: u64, rejected: u64) {
        (self.rows[0])(accepted);
        (self.rows[1])(rejected);
    }
    fn points(&self, accepted: u64, rejected: u64) {
        (self.points[0])(accepted);
        (self.points[1])(rejected);
        self.handle.progress();
    }
    fn bytes_read(&self, bytes: u64) {
        (self.bytes)(bytes);
    }
    fn queue_length(&self, files: usize) {
        (self.queue)(i64::try_from(files).unwrap_or(i64::MAX));
        self.handle.pending(files as u64);
    }
    fn rescan(&self, event_loss: bool) {
        (self.rescans[usize::from(event_loss)])(1);
    }
}
