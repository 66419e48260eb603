//! The status page: `GET /` (the embedded `assets/status.html`) and `GET /api/status`, the
//! JSON the page reads beside `/metrics` (its top comment documents the shape).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::metrics::Metrics;
use crate::pipeline::Pipeline;

/// The page, compiled into the binary.
pub const STATUS_HTML: &str = include_str!("../assets/status.html");

/// Kind of a source, for the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceType {
    /// HTTP push.
    Http,
    /// MQTT subscription.
    Mqtt,
    /// CSV directory.
    Csv,
}

/// What the status endpoint knows of one pipeline.
pub struct PipelineStatus {
    /// The pipeline.
    pub pipeline: Arc<Pipeline>,
    /// WAL limit in bytes (0: unlimited).
    pub wal_max_bytes: u64,
    /// Memtable budget in bytes.
    pub memtable_budget_bytes: u64,
    /// Its sources: name and type.
    pub sources: Vec<(String, SourceType)>,
}

/// State of the status endpoints.
pub struct StatusState {
    /// Daemon start, Unix milliseconds.
    pub started_at_ms: u64,
    /// Every pipeline.
    pub pipelines: Vec<PipelineStatus>,
    /// Metrics (for the byte gauges and MQTT connection states).
    pub metrics: Arc<Metrics>,
}

/// Now as Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `GET /` and `GET /api/status`.
pub fn router(state: Arc<StatusState>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/status", get(status))
        .with_state(state)
}

async fn page() -> Response {
    let mut r = STATUS_HTML.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

/// The `/api/status` document.
pub fn status_json(s: &StatusState) -> serde_json::Value {
    s.metrics.refresh();
    let pipelines: Vec<serde_json::Value> = s
        .pipelines
        .iter()
        .map(|p| {
            let name = p.pipeline.name();
            let sources: Vec<serde_json::Value> = p
                .sources
                .iter()
                .map(|(src, kind)| {
                    let (t, state) = match kind {
                        SourceType::Http => ("http", "listening"),
                        SourceType::Csv => ("csv", "watching"),
                        SourceType::Mqtt => {
                            let up = s
                                .metrics
                                .mqtt_connected
                                .with_label_values(&[name, src])
                                .get();
                            ("mqtt", if up == 1 { "connected" } else { "disconnected" })
                        }
                    };
                    serde_json::json!({ "name": src, "type": t, "state": state })
                })
                .collect();
            serde_json::json!({
                "name": name,
                "accepting": p.pipeline.is_accepting(),
                "wal": {
                    "bytes": s.metrics.wal_bytes.with_label_values(&[name]).get(),
                    "max_bytes": p.wal_max_bytes,
                },
                "memtable": {
                    "bytes": s.metrics.memtable_bytes.with_label_values(&[name]).get(),
                    "budget_bytes": p.memtable_budget_bytes,
                },
                "sources": sources,
            })
        })
        .collect();
    serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "started_at_ms": s.started_at_ms,
        "time_ms": now_ms(),
        "pipelines": pipelines,
    })
}

async fn status(State(s): State<Arc<StatusState>>) -> Response {
    let mut r = status_json(&s).to_string().into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}
