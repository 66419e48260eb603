//! HTTP push source and service endpoints (axum on tokio).
//!
//! * `POST /ingest/iotdb-json` — IoTDB JSON (single record, batch form, arrays).
//! * `POST /write` (InfluxDB 1.x) and `POST /api/v2/write` (2.x) — line protocol with
//!   `precision` (`db`, `org`, `bucket` and `rp` are accepted and ignored: the source's
//!   device template names devices).
//!
//! * `POST /rest/v2/insertTablet`, `/rest/v2/insertRecords`, `/rest/v1/insertTablet` —
//!   IoTDB's REST write API, answered with IoTDB's `{"code": …, "message": …}` bodies.
//!
//! Each HTTP source of a pipeline serves these below its `base_path`.
//! * `GET /health`, `GET /ready`, `GET /metrics`; `POST /query` answers like InfluxDB so
//!   Telegraf's influxdb output starts without complaint; `GET /ping` answers like IoTDB
//!   (`{"code":200,"message":"SUCCESS_STATUS"}`) when a source serves IoTDB's REST API, else
//!   like InfluxDB (204); both carry InfluxDB's version header.
//!
//! Authentication (when tokens or users are configured): `Authorization: Bearer|Token
//! <token>`, `Basic base64(user:password)` of a configured user (or with a token as the
//! password), or InfluxDB 1.x `?p=<token>`.
//!
//! A 2xx answer means the accepted points are durable. Rejections give 400 with counts
//! and the first errors; a full buffer gives 429 (queue) or 503 (disk budget, an engine stuck past the backlog wait) with
//! `Retry-After`; bodies over the raw or decompressed limit give 413.

use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tokio_util::sync::CancellationToken;
use tsfiled_config::{HttpConfig, HttpUser};
use tsfiled_connectors::http::{HttpEndpoint, HttpSourceConfig};
use tsfiled_connectors::iotdb_rest::{rejection_status, status, Status};
use tsfiled_connectors::source::StatusReporter;
use tsfiled_connectors::{Batch, DeviceTemplate, RejectReason, RestRequest, TabletNames, TimeUnit};

use crate::metrics::Metrics;
use crate::parse::Parsers;
use crate::pipeline::{Pipeline, SubmitOutcome};
use crate::{Error, Refusal};

/// Shared state of the HTTP server.
pub struct HttpState {
    /// All pipelines (for readiness).
    pub pipelines: Vec<Arc<Pipeline>>,
    /// Settings (replaced on reload).
    pub settings: RwLock<HttpConfig>,
    /// Accepted tokens and users: the configured ones plus their files' (replaced on reload).
    pub credentials: RwLock<Credentials>,
    /// Payload parsers.
    pub parsers: Arc<dyn Parsers>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Whether `/metrics` is served on this listener, and where.
    pub metrics_path: Option<String>,
    /// Set once start-up is complete.
    pub ready: AtomicBool,
    /// Unix ms of the daemon's start (status page).
    pub started_at_ms: i64,
    /// Every source (status page), replaced on reload.
    pub sources: RwLock<Vec<SourceStatus>>,
}

/// Unit of IoTDB JSON and IoTDB REST timestamps unless `?precision=` says otherwise (IoTDB's:
/// milliseconds).
const JSON_TIME_UNIT: TimeUnit = TimeUnit::Millis;

/// The status page, served at `/`.
pub const STATUS_PAGE: &str = include_str!("../../assets/status.html");

/// A source as the status page shows it.
#[derive(Debug, Clone)]
pub struct SourceStatus {
    /// Its pipeline.
    pub pipeline: String,
    /// Its name.
    pub name: String,
    /// Its `type`.
    pub type_name: &'static str,
    /// Its state, as the source reports it.
    pub state: StatusReporter,
}

/// One HTTP push source's routes.
#[derive(Clone)]
pub struct SourceRoute {
    /// The pipeline it feeds.
    pub pipeline: Arc<Pipeline>,
    /// The pipeline's stored precision.
    pub stored: TimeUnit,
    /// The source's name (metric label).
    pub name: String,
    /// Its settings.
    pub config: HttpSourceConfig,
    /// Line-protocol device naming (`path_prefix` + `device_template`, compiled).
    pub device_template: DeviceTemplate,
}

impl SourceRoute {
    /// The routes of push source `name` feeding `pipeline`.
    pub fn new(
        pipeline: Arc<Pipeline>,
        stored: TimeUnit,
        name: &str,
        config: &HttpSourceConfig,
    ) -> SourceRoute {
        SourceRoute {
            pipeline,
            stored,
            name: name.to_string(),
            config: config.clone(),
            device_template: config.line_protocol.device_template.clone(),
        }
    }

    fn serves(&self, endpoint: HttpEndpoint) -> bool {
        self.config.endpoints.contains(&endpoint)
    }
}

struct RouteState {
    shared: Shared,
    route: SourceRoute,
}

type Shared = Arc<HttpState>;
type RouteRef = Arc<RouteState>;

/// Who may push: bearer tokens and Basic-authentication users. Both empty: anyone.
#[derive(Clone, Default)]
pub struct Credentials {
    /// Bearer tokens (also accepted as the password of a Basic header, and as `?p=`).
    pub tokens: Vec<String>,
    /// Users with their passwords.
    pub users: Vec<HttpUser>,
}

impl Credentials {
    /// The configured tokens and users plus those of `token_file` and `user_file`. Fails with
    /// [`Error::TokenFile`] or [`Error::UserFile`].
    pub fn load(settings: &HttpConfig) -> crate::Result<Credentials> {
        Ok(Credentials {
            tokens: load_tokens(settings)?,
            users: load_users(settings)?,
        })
    }
}

/// The configured users plus the user file's ([`tsfiled_config::parse_user_file`]); a user
/// of the file replaces a configured one of the same name. Fails with [`Error::UserFile`].
pub fn load_users(settings: &HttpConfig) -> crate::Result<Vec<HttpUser>> {
    let mut users = settings.users.clone();
    if let Some(f) = &settings.user_file {
        let err = |message: String| Error::UserFile {
            path: f.clone(),
            message,
        };
        let text = std::fs::read_to_string(f).map_err(|e| err(e.to_string()))?;
        let more = tsfiled_config::parse_user_file(&text)
            .map_err(|(line, m)| err(format!("line {line}: {m}")))?;
        users.retain(|u| !more.iter().any(|m| m.name == u.name));
        users.extend(more);
    }
    Ok(users)
}

/// The configured tokens plus the token file's (one token per line, `#` comments and blank
/// lines ignored). Fails with [`Error::TokenFile`].
pub fn load_tokens(settings: &HttpConfig) -> crate::Result<Vec<String>> {
    let mut tokens = settings.tokens.clone();
    if let Some(f) = &settings.token_file {
        let text = std::fs::read_to_string(f).map_err(|source| Error::TokenFile {
            path: f.clone(),
            source,
        })?;
        tokens.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string),
        );
    }
    Ok(tokens)
}

/// The router (without a listener), for tests and for [`run`].
pub fn router(state: Shared, sources: Vec<SourceRoute>) -> Router {
    let limit = state
        .settings
        .read()
        .map(|s| usize::try_from(s.max_body_size.0).unwrap_or(usize::MAX))
        .unwrap_or(16 << 20);
    let mut app = Router::new()
        .route("/", get(status_page))
        .route("/api/status", get(api_status))
        .route("/health", get(|| async { "ok\n" }))
        .route("/ready", get(ready))
        .route("/query", post(query).get(query));
    app = if sources.iter().any(|r| r.serves(HttpEndpoint::IotdbRest)) {
        app.route("/ping", get(iotdb_ping).head(ping))
    } else {
        app.route("/ping", get(ping).head(ping))
    };
    if let Some(path) = state.metrics_path.clone() {
        app = app.route(&path, get(metrics));
    }
    let mut app = app.with_state(state.clone());
    for route in sources {
        let base = route.config.base_path.trim_end_matches('/').to_string();
        let rs = Arc::new(RouteState {
            shared: state.clone(),
            route: route.clone(),
        });
        let mut r = Router::new();
        if route.serves(HttpEndpoint::IotdbJson) {
            r = r.route(&format!("{base}/ingest/iotdb-json"), post(ingest_json));
        }
        if route.serves(HttpEndpoint::LineProtocol) {
            r = r
                .route(&format!("{base}/write"), post(write_v1))
                .route(&format!("{base}/api/v2/write"), post(write_v2));
        }
        if route.serves(HttpEndpoint::IotdbRest) {
            r = r
                .route(
                    &format!("{base}/rest/v2/insertTablet"),
                    post(rest_tablet_v2),
                )
                .route(&format!("{base}/rest/v2/insertRecords"), post(rest_records))
                .route(
                    &format!("{base}/rest/v1/insertTablet"),
                    post(rest_tablet_v1),
                );
            if !base.is_empty() {
                r = r.route(&format!("{base}/ping"), get(rest_ping));
            }
        }
        app = app.merge(r.with_state(rs));
    }
    app.layer(DefaultBodyLimit::max(limit))
}

/// A router serving only metrics (for a separate metrics listener).
pub fn metrics_router(state: Shared, path: &str) -> Router {
    Router::new().route(path, get(metrics)).with_state(state)
}

/// Serves on `listener` until `shutdown` is cancelled; then waits at most `grace` for
/// open connections (axum's graceful shutdown would wait for idle keep-alive
/// connections indefinitely).
pub async fn run(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: CancellationToken,
    grace: Duration,
) -> std::io::Result<()> {
    let token = shutdown.clone();
    let server =
        axum::serve(listener, app).with_graceful_shutdown(async move { token.cancelled().await });
    let mut server = tokio::spawn(std::future::IntoFuture::into_future(server));
    tokio::select! {
        r = &mut server => return r.map_err(std::io::Error::other)?,
        _ = shutdown.cancelled() => {}
    }
    match tokio::time::timeout(grace, &mut server).await {
        Ok(r) => r.map_err(std::io::Error::other)?,
        Err(_) => {
            tracing::warn!(
                grace_ms = grace.as_millis() as u64,
                "HTTP connections still open at the shutdown deadline; closing them"
            );
            server.abort();
            Ok(())
        }
    }
}

fn count(state: &HttpState, code: StatusCode) {
    state
        .metrics
        .http_requests
        .with_label_values(&[code.as_str()])
        .inc();
}

fn json_response(state: &HttpState, code: StatusCode, body: serde_json::Value) -> Response {
    count(state, code);
    let mut r = (code, body.to_string()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn error(state: &HttpState, code: StatusCode, msg: &str) -> Response {
    json_response(
        state,
        code,
        serde_json::json!({"code": code.canonical_reason().unwrap_or("error").to_lowercase().replace(' ', "_"), "message": msg}),
    )
}

/// The verdict on a request's credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Auth {
    /// Allowed (or no authentication configured).
    Allowed,
    /// No `Authorization` header (nor `?p=`).
    Missing,
    /// Unknown token, user or password.
    Wrong,
    /// An `Authorization` header that cannot be read (bad base64, no `:`, unknown scheme).
    Malformed,
}

/// Checks `Authorization: Bearer|Token <t>`, `Basic base64(user:password)` (a configured user,
/// or any user name with a token as the password), or InfluxDB 1.x `?p=<token>`.
fn authorize(creds: &Credentials, headers: &HeaderMap, query: &HashMap<String, String>) -> Auth {
    if creds.tokens.is_empty() && creds.users.is_empty() {
        return Auth::Allowed;
    }
    let token_ok = |t: &str| {
        creds
            .tokens
            .iter()
            .any(|k| constant_time_eq(k.as_bytes(), t.trim().as_bytes()))
    };
    let verdict = |ok: bool| if ok { Auth::Allowed } else { Auth::Wrong };
    let Some(v) = headers.get(header::AUTHORIZATION) else {
        return match query.get("p") {
            Some(p) => verdict(token_ok(p)),
            None => Auth::Missing,
        };
    };
    let Ok(v) = v.to_str() else {
        return Auth::Malformed;
    };
    if let Some(t) = v
        .strip_prefix("Bearer ")
        .or_else(|| v.strip_prefix("Token "))
    {
        return verdict(token_ok(t));
    }
    let Some(b) = v.strip_prefix("Basic ") else {
        return Auth::Malformed;
    };
    let Some(decoded) = base64_decode(b.trim()) else {
        return Auth::Malformed;
    };
    let Some((name, pass)) = std::str::from_utf8(&decoded)
        .ok()
        .and_then(|d| d.split_once(':'))
    else {
        return Auth::Malformed;
    };
    let user_ok = creds.users.iter().fold(false, |found, u| {
        let hit = constant_time_eq(u.name.as_bytes(), name.as_bytes())
            & constant_time_eq(u.password.as_bytes(), pass.as_bytes());
        found | hit
    });
    verdict(user_ok || token_ok(pass))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let n = match chunk.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => return None,
        };
        for i in 0..n {
            out.push((acc >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

/// The answer to a request whose credentials are missing, wrong or malformed (`None`: go on).
fn refuse_unauthorized(
    state: &HttpState,
    style: Style,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Option<Response> {
    let (auth, basic) = state
        .credentials
        .read()
        .map(|c| (authorize(&c, headers, query), !c.users.is_empty()))
        .unwrap_or((Auth::Wrong, false));
    let rest_status = match auth {
        Auth::Allowed => return None,
        Auth::Missing => status::INIT_AUTH_ERROR,
        Auth::Wrong => status::WRONG_LOGIN_PASSWORD,
        Auth::Malformed if style == Style::Rest => {
            return Some(rest_body(
                state,
                StatusCode::BAD_REQUEST,
                status::ILLEGAL_PARAMETER.code,
                "malformed Authorization header: expected `Basic base64(name:password)` or `Bearer <token>`",
            ))
        }
        Auth::Malformed => status::WRONG_LOGIN_PASSWORD,
    };
    let mut r = match style {
        Style::Rest => rest_body(
            state,
            StatusCode::UNAUTHORIZED,
            rest_status.code,
            rest_status.name,
        ),
        Style::Json | Style::Influx => {
            error(state, StatusCode::UNAUTHORIZED, "missing or invalid token")
        }
    };
    let challenge = if basic {
        "Basic realm=\"tsfiled\""
    } else {
        "Bearer"
    };
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    Some(r)
}

/// Why a request body is unusable (private to [`ingest`]: picks 413 or 400).
enum BodyError {
    TooLarge(String),
    Bad(String),
}

/// The request body, gunzipped if `Content-Encoding: gzip`, within the limits.
fn body_bytes(
    settings: &HttpConfig,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Vec<u8>, BodyError> {
    if body.len() as u64 > settings.max_body_size.0 {
        return Err(BodyError::TooLarge(format!(
            "request body of {} bytes exceeds the limit of {} bytes",
            body.len(),
            settings.max_body_size.0
        )));
    }
    let enc = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match enc.as_str() {
        "" | "identity" => Ok(body.to_vec()),
        "gzip" | "x-gzip" => {
            let limit = usize::try_from(settings.max_decompressed_size.0).unwrap_or(usize::MAX);
            let mut out = Vec::with_capacity((body.len() * 4).min(limit));
            let mut dec = flate2::read::MultiGzDecoder::new(&body[..]).take(limit as u64 + 1);
            dec.read_to_end(&mut out)
                .map_err(|e| BodyError::Bad(format!("invalid gzip body: {e}")))?;
            if out.len() > limit {
                return Err(BodyError::TooLarge(format!(
                    "decompressed body exceeds the limit of {limit} bytes"
                )));
            }
            Ok(out)
        }
        other => Err(BodyError::Bad(format!(
            "unsupported Content-Encoding {other:?} (use gzip or none)"
        ))),
    }
}

/// How a push endpoint answers.
#[derive(Clone, Copy, PartialEq)]
enum Style {
    /// `{"accepted", "rejected"}`; errors `{"code": "<reason>", "message", …}`.
    Json,
    /// 204; errors as [`Style::Json`].
    Influx,
    /// IoTDB's REST API: `{"code": <IoTDB status>, "message"}` for success and errors.
    Rest,
}

/// An error answer: for [`Style::Rest`] IoTDB's body with `iotdb`'s code, else [`error`].
fn fail(state: &HttpState, style: Style, code: StatusCode, iotdb: Status, msg: &str) -> Response {
    match style {
        Style::Rest => rest_body(state, code, iotdb.code, msg),
        Style::Json | Style::Influx => error(state, code, msg),
    }
}

/// IoTDB's response body `{"code": …, "message": …}`.
fn rest_body(state: &HttpState, http: StatusCode, code: u16, message: &str) -> Response {
    json_response(
        state,
        http,
        serde_json::json!({"code": code, "message": message}),
    )
}

async fn ingest(
    rs: RouteRef,
    headers: HeaderMap,
    query: HashMap<String, String>,
    body: Bytes,
    style: Style,
    parse: impl FnOnce(&HttpState, &[u8], TimeUnit) -> Result<Batch, String>,
) -> Response {
    let received = Instant::now();
    let state = &*rs.shared;
    let settings = match state.settings.read() {
        Ok(s) => s.clone(),
        Err(_) => {
            return fail(
                state,
                style,
                StatusCode::INTERNAL_SERVER_ERROR,
                status::INTERNAL_SERVER_ERROR,
                "settings lock poisoned",
            )
        }
    };
    if let Some(refused) = refuse_unauthorized(state, style, &headers, &query) {
        return refused;
    }
    let pipeline = &rs.route.pipeline;
    let source = rs.route.name.as_str();
    let data = match body_bytes(&settings, &headers, body) {
        Ok(d) => d,
        Err(BodyError::TooLarge(m)) => {
            state
                .metrics
                .points_rejected
                .with_label_values(&[pipeline.name(), source, RejectReason::TooLarge.label()])
                .inc();
            let too_large = status::REQUEST_TOO_LARGE;
            return fail(state, style, StatusCode::PAYLOAD_TOO_LARGE, too_large, &m);
        }
        Err(BodyError::Bad(m)) => {
            let bad = status::ILLEGAL_PARAMETER;
            return fail(state, style, StatusCode::BAD_REQUEST, bad, &m);
        }
    };
    let batch = match parse(state, &data, rs.route.stored) {
        Ok(b) => b,
        Err(m) => {
            let bad = status::ILLEGAL_PARAMETER;
            return fail(state, style, StatusCode::BAD_REQUEST, bad, &m);
        }
    };
    drop(data);
    let submitted = tokio::time::timeout(
        settings.request_timeout,
        pipeline.submit(source, batch, received),
    )
    .await;
    match submitted {
        Ok(Ok(outcome)) => outcome_response(state, outcome, style),
        Ok(Err(Error::Refused(Refusal::Full {
            reason,
            retry_after,
        }))) => {
            let code = if reason == "queue" {
                StatusCode::TOO_MANY_REQUESTS
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            // A failing storage names itself; the other reasons are buffers.
            let what = if reason.starts_with("storage") {
                reason.to_string()
            } else {
                format!("buffer full ({reason})")
            };
            retry_later(
                state,
                style,
                code,
                &format!("{what}; nothing of this request was accepted, retry later"),
                retry_after.as_secs().max(1),
            )
        }
        Ok(Err(Error::Refused(Refusal::Closed))) => retry_later(
            state,
            style,
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting down; retry later",
            5,
        ),
        Ok(Err(e)) => fail(
            state,
            style,
            StatusCode::INTERNAL_SERVER_ERROR,
            status::INTERNAL_SERVER_ERROR,
            &e.to_string(),
        ),
        Err(_) => retry_later(
            state,
            style,
            StatusCode::SERVICE_UNAVAILABLE,
            "the points did not become durable within the request timeout; retry later",
            1,
        ),
    }
}

/// An error response with `Retry-After: secs` (IoTDB style: a rejected write, 606).
fn retry_later(
    state: &HttpState,
    style: Style,
    code: StatusCode,
    message: &str,
    secs: u64,
) -> Response {
    let mut r = fail(state, style, code, status::WRITE_PROCESS_REJECT, message);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    r
}

fn outcome_response(state: &HttpState, o: SubmitOutcome, style: Style) -> Response {
    if style == Style::Rest {
        return rest_outcome(state, &o);
    }
    if o.rejections.is_empty() {
        return match style {
            Style::Json => json_response(
                state,
                StatusCode::OK,
                serde_json::json!({"accepted": o.accepted, "rejected": 0}),
            ),
            Style::Influx | Style::Rest => {
                count(state, StatusCode::NO_CONTENT);
                StatusCode::NO_CONTENT.into_response()
            }
        };
    }
    let errors: Vec<serde_json::Value> = o
        .rejections
        .iter()
        .take(20)
        .map(|r| serde_json::json!({"location": r.location.to_string(), "reason": r.reason.label(), "message": r.message, "points": r.points}))
        .collect();
    let first = &o.rejections[0];
    let message = format!(
        "{}: {} ({}); {} points accepted, {} rejected",
        first.location,
        first.message,
        first.reason.label(),
        o.accepted,
        o.rejected
    );
    json_response(
        state,
        StatusCode::BAD_REQUEST,
        serde_json::json!({
            "code": "invalid",
            "message": message,
            "accepted": o.accepted,
            "rejected": o.rejected,
            "errors": errors,
        }),
    )
}

/// IoTDB's answer to a write: `SUCCESS_STATUS`, or 400 with the rejections' status and
/// a message naming the first rejections and the counts.
fn rest_outcome(state: &HttpState, o: &SubmitOutcome) -> Response {
    let st = rejection_status(&o.rejections);
    if o.rejections.is_empty() {
        return rest_body(state, StatusCode::OK, st.code, st.name);
    }
    let mut message = o
        .rejections
        .iter()
        .take(5)
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join("; ");
    if o.rejections.len() > 5 {
        message.push_str(&format!("; {} more", o.rejections.len() - 5));
    }
    message.push_str(&format!(
        " ({} points accepted, {} rejected)",
        o.accepted, o.rejected
    ));
    rest_body(state, StatusCode::BAD_REQUEST, st.code, &message)
}

fn precision_param(query: &HashMap<String, String>, default: TimeUnit) -> Result<TimeUnit, String> {
    match query.get("precision") {
        None => Ok(default),
        Some(p) => TimeUnit::parse(p)
            .ok_or_else(|| format!("unknown precision {p:?} (expected ns, us, ms or s)")),
    }
}

fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

async fn ingest_json(
    State(rs): State<RouteRef>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let q = query.clone();
    ingest(
        rs,
        headers,
        query,
        body,
        Style::Json,
        move |st, data, stored| {
            let unit = precision_param(&q, JSON_TIME_UNIT)?;
            Ok(st.parsers.iotdb_json(data, unit, stored))
        },
    )
    .await
}

async fn write_line(
    rs: RouteRef,
    query: HashMap<String, String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let q = query.clone();
    let template = rs.route.device_template.clone();
    let default_precision = rs.route.config.line_protocol.precision;
    ingest(
        rs,
        headers,
        query,
        body,
        Style::Influx,
        move |st, data, stored| {
            let precision = precision_param(&q, default_precision)?;
            let now = TimeUnit::Nanos.convert(now_nanos(), stored).unwrap_or(0);
            Ok(st
                .parsers
                .line_protocol(data, precision, stored, &template, now))
        },
    )
    .await
}

async fn write_v1(
    State(rs): State<RouteRef>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    write_line(rs, query, headers, body).await
}

async fn write_v2(
    State(rs): State<RouteRef>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    write_line(rs, query, headers, body).await
}

/// A REST body as axum buffered it: bodies over the limit (and unreadable ones) are answered
/// in IoTDB's shape too, after the credentials are checked.
type RestBody = Result<Bytes, axum::extract::rejection::BytesRejection>;

async fn rest(rs: RouteRef, headers: HeaderMap, body: RestBody, request: RestRequest) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(rejection) => {
            let state = &*rs.shared;
            let no_query = HashMap::new();
            if let Some(refused) = refuse_unauthorized(state, Style::Rest, &headers, &no_query) {
                return refused;
            }
            let code = rejection.status();
            let iotdb = if code == StatusCode::PAYLOAD_TOO_LARGE {
                let pipeline = rs.route.pipeline.name();
                let source = rs.route.name.as_str();
                state
                    .metrics
                    .points_rejected
                    .with_label_values(&[pipeline, source, RejectReason::TooLarge.label()])
                    .inc();
                status::REQUEST_TOO_LARGE
            } else {
                status::ILLEGAL_PARAMETER
            };
            return rest_body(state, code, iotdb.code, &rejection.body_text());
        }
    };
    ingest(
        rs,
        headers,
        HashMap::new(),
        body,
        Style::Rest,
        move |st, data, stored| Ok(st.parsers.iotdb_rest(data, request, JSON_TIME_UNIT, stored)),
    )
    .await
}

async fn rest_tablet_v2(
    State(rs): State<RouteRef>,
    headers: HeaderMap,
    body: RestBody,
) -> Response {
    rest(
        rs,
        headers,
        body,
        RestRequest::InsertTablet(TabletNames::V2),
    )
    .await
}

async fn rest_tablet_v1(
    State(rs): State<RouteRef>,
    headers: HeaderMap,
    body: RestBody,
) -> Response {
    rest(
        rs,
        headers,
        body,
        RestRequest::InsertTablet(TabletNames::V1),
    )
    .await
}

async fn rest_records(State(rs): State<RouteRef>, headers: HeaderMap, body: RestBody) -> Response {
    rest(rs, headers, body, RestRequest::InsertRecords).await
}

/// Whether the daemon accepts writes: started, every pipeline open and below 95% of its WAL.
fn is_ready(state: &HttpState) -> bool {
    state.ready.load(Ordering::Relaxed)
        && state
            .pipelines
            .iter()
            .all(|p| p.is_accepting() && p.wal_fill() < 0.95)
}

/// IoTDB's liveness probe (no authentication): 200 `SUCCESS_STATUS`, or 503 with code 500
/// while the daemon cannot accept writes.
fn iotdb_ping_response(state: &HttpState) -> Response {
    let mut r = if is_ready(state) {
        let ok = status::SUCCESS;
        rest_body(state, StatusCode::OK, ok.code, ok.name)
    } else {
        rest_body(
            state,
            StatusCode::SERVICE_UNAVAILABLE,
            500,
            "not accepting writes now (starting, shutting down or the write-ahead log is full)",
        )
    };
    r.headers_mut()
        .insert("X-Influxdb-Version", HeaderValue::from_static("1.8.10"));
    r
}

async fn iotdb_ping(State(state): State<Shared>) -> Response {
    iotdb_ping_response(&state)
}

async fn rest_ping(State(rs): State<RouteRef>) -> Response {
    iotdb_ping_response(&rs.shared)
}

async fn ready(State(state): State<Shared>) -> Response {
    let ok = is_ready(&state);
    let code = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, if ok { "ready\n" } else { "not ready\n" }).into_response()
}

async fn metrics(State(state): State<Shared>) -> Response {
    let mut r = state.metrics.render().into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    r
}

async fn status_page() -> Response {
    let mut r = STATUS_PAGE.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

async fn api_status(State(state): State<Shared>) -> Response {
    let pipelines: Vec<serde_json::Value> = state
        .pipelines
        .iter()
        .map(|p| {
            let all = state.sources.read().unwrap_or_else(|e| e.into_inner());
            let sources: Vec<(String, &'static str, &'static str)> = all
                .iter()
                .filter(|s| s.pipeline == p.name())
                .map(|s| (s.name.clone(), s.type_name, s.state.get()))
                .collect();
            p.status_json(&sources)
        })
        .collect();
    let body = serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "started_at_ms": state.started_at_ms,
        "time_ms": now_nanos() / 1_000_000,
        "pipelines": pipelines,
    });
    let mut r = body.to_string().into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

async fn ping() -> Response {
    let mut r = StatusCode::NO_CONTENT.into_response();
    r.headers_mut()
        .insert("X-Influxdb-Version", HeaderValue::from_static("1.8.10"));
    r
}

async fn query() -> Response {
    let mut r = r#"{"results":[{"statement_id":0}]}"#.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[http]` with every key at its default.
    fn defaults() -> HttpConfig {
        let text = "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"http\"\n";
        tsfiled_config::Config::from_toml_str(text, "t.toml")
            .unwrap()
            .http
    }

    #[test]
    fn basic_auth_decoding() {
        // `echo -n user:secret | base64`, `echo -n root:root | base64`.
        assert_eq!(base64_decode("dXNlcjpzZWNyZXQ=").unwrap(), b"user:secret");
        assert!(base64_decode("!!").is_none());
        let creds = Credentials {
            tokens: vec!["secret".to_string()],
            users: vec![HttpUser {
                name: "root".into(),
                password: "root".into(),
            }],
        };
        let q = HashMap::new();
        let with = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, HeaderValue::from_static(v));
            authorize(&creds, &h, &q)
        };
        assert_eq!(authorize(&creds, &HeaderMap::new(), &q), Auth::Missing);
        assert_eq!(with("Token secret"), Auth::Allowed);
        assert_eq!(with("Bearer nope"), Auth::Wrong);
        assert_eq!(with("Basic dXNlcjpzZWNyZXQ="), Auth::Allowed);
        assert_eq!(with("Basic cm9vdDpyb290"), Auth::Allowed);
        // root:wrong, and ops:root (a user that does not exist).
        assert_eq!(with("Basic cm9vdDp3cm9uZw=="), Auth::Wrong);
        assert_eq!(with("Basic b3BzOnJvb3Q="), Auth::Wrong);
        // "rootroot" has no ':'; "!!" is not base64; Digest is not a scheme we take.
        assert_eq!(with("Basic cm9vdHJvb3Q="), Auth::Malformed);
        assert_eq!(with("Basic !!"), Auth::Malformed);
        assert_eq!(with("Digest x"), Auth::Malformed);
        let mut p = HashMap::new();
        p.insert("p".to_string(), "secret".to_string());
        assert_eq!(authorize(&creds, &HeaderMap::new(), &p), Auth::Allowed);
        let none = Credentials::default();
        assert_eq!(authorize(&none, &HeaderMap::new(), &q), Auth::Allowed);
    }

    #[test]
    fn user_file_is_read_and_its_errors_name_the_line_not_the_password() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("users");
        std::fs::write(&path, "# users\nroot:n3w\nops:pw\n").unwrap();
        let mut settings = HttpConfig {
            users: vec![HttpUser {
                name: "root".into(),
                password: "old".into(),
            }],
            user_file: Some(path.clone()),
            ..defaults()
        };
        let users = load_users(&settings).unwrap();
        let pairs: Vec<(&str, &str)> = users
            .iter()
            .map(|u| (u.name.as_str(), u.password.as_str()))
            .collect();
        assert_eq!(pairs, [("root", "n3w"), ("ops", "pw")]);
        std::fs::write(&path, "root:s3cret\nbroken s3cret\n").unwrap();
        let e = load_users(&settings).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "cannot use http.user_file {}: line 2: expected `name:password`",
                path.display()
            )
        );
        settings.user_file = Some(tmp.path().join("absent"));
        assert!(load_users(&settings).is_err());
        assert!(!format!("{settings:?}").contains("old"));
    }

    #[test]
    fn token_file_is_read_and_a_missing_one_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("tokens");
        std::fs::write(&path, "# comment\n\n  t2  \nt3\n").unwrap();
        let mut settings = HttpConfig {
            tokens: vec!["t1".into()],
            token_file: Some(path.clone()),
            ..defaults()
        };
        assert_eq!(load_tokens(&settings).unwrap(), ["t1", "t2", "t3"]);
        settings.token_file = Some(tmp.path().join("absent"));
        let e = load_tokens(&settings).unwrap_err();
        assert!(matches!(&e, Error::TokenFile { path, .. } if path.ends_with("absent")));
        let want = format!(
            "cannot read http.token_file {}: ",
            tmp.path().join("absent").display()
        );
        assert!(e.to_string().starts_with(&want), "{e}");
    }
}
