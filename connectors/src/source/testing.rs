//! Helpers for the tests of a source: validating one table on its own, recording metrics,
//! a context.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use toml::de::{DeTable, Deserializer};
use toml::Spanned;
use tsfiled_core::{KeyPath, SpanIndex, Validator};

use super::{Counter, Gauge, SourceContext, SourceEnv, SourceMetrics, SourceTable, StatusReporter};
use crate::model::TimeUnit;
use crate::sink::BatchSink;

/// Validates `text`, the keys of one `[[pipeline.source]]` table of type `T` (without `type`),
/// as the configuration would (the pipeline's data directory is `data`). Problems come back as
/// `line:column: key: message`, the key relative to the table.
pub fn validate_table<T: SourceTable>(text: &str) -> Result<T::Settings, Vec<String>> {
    let root = DeTable::parse(text).map_err(|e| vec![e.to_string()])?;
    let spans = SpanIndex::new(text, &root);
    let render = |d: &tsfiled_core::Diagnostic| {
        if d.path.is_root() {
            format!("{}:{}: {}", d.line, d.column, d.message)
        } else {
            format!("{}:{}: {}: {}", d.line, d.column, d.path, d.message)
        }
    };
    let span = root.span();
    let table =
        T::deserialize(Deserializer::from(Spanned::new(span, root.into_inner()))).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            vec![render(&spans.at_span(
                spans.path_at(&span),
                &span,
                e.message().to_string(),
            ))]
        })?;
    let mut v = Validator {
        spans: &spans,
        diags: Vec::new(),
    };
    let name = table.name().unwrap_or(T::TYPE).to_string();
    let env = SourceEnv {
        name: &name,
        data_dir: Path::new("data"),
        line_protocol_model: Default::default(),
    };
    match table.validate(&mut v, &KeyPath::root(), &env) {
        Some(s) if v.diags.is_empty() => Ok(s),
        _ => Err(v.diags.iter().map(render).collect()),
    }
}

/// [`SourceMetrics`] that keep every series in memory, for the tests of a source: counters by
/// name (`name{label=value}` with the extra label), gauges by name, progress calls.
#[derive(Debug, Default)]
pub struct RecordingMetrics {
    counters: Mutex<HashMap<String, Arc<AtomicU64>>>,
    gauges: Mutex<HashMap<String, Arc<AtomicI64>>>,
    progress: AtomicU64,
}

impl RecordingMetrics {
    /// The counter `name` (`name{label=value}` for one with an extra label); 0 if never
    /// resolved.
    pub fn counter_value(&self, name: &str) -> u64 {
        let c = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        c.get(name).map_or(0, |v| v.load(Ordering::Relaxed))
    }

    /// The gauge `name`; `None` if never resolved.
    pub fn gauge_value(&self, name: &str) -> Option<i64> {
        let g = self.gauges.lock().unwrap_or_else(|e| e.into_inner());
        g.get(name).map(|v| v.load(Ordering::Relaxed))
    }

    /// How often the source reported progress.
    pub fn progress_calls(&self) -> u64 {
        self.progress.load(Ordering::Relaxed)
    }
}

impl SourceMetrics for RecordingMetrics {
    fn counter(&self, name: &str, _help: &str, extra: Option<(&str, &str)>) -> Counter {
        let key = match extra {
            Some((k, v)) => format!("{name}{{{k}={v}}}"),
            None => name.to_string(),
        };
        let c = self
            .counters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_default()
            .clone();
        Arc::new(move |n| {
            c.fetch_add(n, Ordering::Relaxed);
        })
    }

    fn gauge(&self, name: &str, _help: &str) -> Gauge {
        let g = self
            .gauges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name.to_string())
            .or_default()
            .clone();
        Arc::new(move |v| g.store(v, Ordering::Relaxed))
    }

    fn progress(&self) {
        self.progress.fetch_add(1, Ordering::Relaxed);
    }

    fn pending(&self, _items: u64) {}
}

impl SourceContext {
    /// A context for the tests of a source: pipeline `p`, source `name`, a fresh cancellation
    /// token, status `"starting"`, state directory `state_dir`, timestamps stored in
    /// milliseconds.
    pub fn for_test(
        name: &str,
        sink: Arc<dyn BatchSink>,
        metrics: Arc<dyn SourceMetrics>,
        state_dir: PathBuf,
    ) -> SourceContext {
        SourceContext {
            pipeline: "p".into(),
            name: name.into(),
            sink,
            shutdown: CancellationToken::new(),
            metrics,
            state_dir,
            status: StatusReporter::new("starting"),
            stored_unit: TimeUnit::Millis,
        }
    }
}
