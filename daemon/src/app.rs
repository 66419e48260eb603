//! The running daemon: opens the pipelines, serves HTTP, reloads, and shuts down in
//! order (stop intake → make durable → seal → exit) within the deadline.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::http::{self, HttpState, SourceRoute, SourceStatus};
use tsfiled_connectors::source::{DynSettings, SourceContext, StatusReporter};
use tsfiled_connectors::TimeUnit;

use crate::metrics::{Metrics, SourceMetricsHandle};
use crate::notify::{self, Notifier, ProgressTracker, Watchdog};
use crate::parse::{ConnectorParsers, Parsers};
use crate::pipeline::Pipeline;
use crate::settings::Settings;
use crate::sources::PipelineSink;
use crate::{Error, Result};

/// A started daemon.
pub struct Daemon {
    /// The pipelines, in configuration order.
    pub pipelines: Vec<Arc<Pipeline>>,
    /// HTTP state (for reloads).
    pub http: Arc<HttpState>,
    /// The bound HTTP address.
    pub http_addr: std::net::SocketAddr,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// systemd notifications (a no-op when not run by systemd).
    pub notifier: Notifier,
    /// Liveness of the pipelines (and later the sources), for the watchdog.
    pub tracker: ProgressTracker,
    settings: Settings,
    http_tasks: Vec<tokio::task::JoinHandle<std::io::Result<()>>>,
    http_token: CancellationToken,
    watchdog: Option<Watchdog>,
    sources: Vec<RunningSource>,
    starter: SourceStarter,
}

/// The status-page entry of every source: (pipeline, source, type, state).
fn status_sources(running: &[RunningSource]) -> Vec<SourceStatus> {
    running
        .iter()
        .map(|s| SourceStatus {
            pipeline: s.pipeline.clone(),
            name: s.name.clone(),
            type_name: s.settings.type_name(),
            state: s.status.clone(),
        })
        .collect()
}

/// A running source (a task of its plugin); a reload restarts it when its settings changed.
struct RunningSource {
    pipeline: String,
    name: String,
    settings: Arc<dyn DynSettings>,
    status: StatusReporter,
    /// Cancels this source only (a child of the daemon's source token).
    token: CancellationToken,
    task: tokio::task::JoinHandle<std::result::Result<(), String>>,
}

impl RunningSource {
    fn label(&self) -> String {
        format!("{}/{}", self.pipeline, self.name)
    }
}

/// Starts sources through their plugins, at start-up and on reload.
struct SourceStarter {
    metrics: Arc<Metrics>,
    tracker: ProgressTracker,
    stall: std::time::Duration,
    /// Cancelled at shutdown: stops every source.
    token: CancellationToken,
}

impl SourceStarter {
    fn start(
        &self,
        pipeline: &Arc<Pipeline>,
        (stored_unit, state_dir): &(TimeUnit, PathBuf),
        source: &tsfiled_config::SourceConfig,
    ) -> RunningSource {
        let pl = pipeline.name().to_string();
        let name = source.name.as_str();
        self.metrics
            .points_received
            .with_label_values(&[pl.as_str(), name]);
        let label = format!("{pl}/{name}");
        let settings = source.settings.clone();
        // Push sources are served by the HTTP listener: their liveness is its, not a task's.
        let progress = settings
            .http_push()
            .is_none()
            .then(|| self.tracker.register(format!("source/{label}"), self.stall));
        let token = self.token.child_token();
        let status = StatusReporter::new(settings.initial_state());
        let cx = SourceContext {
            pipeline: pl.clone(),
            name: name.to_string(),
            sink: Arc::new(PipelineSink::new(pipeline.clone(), name)),
            shutdown: token.clone(),
            metrics: Arc::new(SourceMetricsHandle::new(
                self.metrics.clone(),
                &pl,
                name,
                progress,
            )),
            state_dir: state_dir.clone(),
            status: status.clone(),
            stored_unit: *stored_unit,
        };
        let run = settings.start(cx);
        let kind = settings.type_name();
        let l = label.clone();
        let ended = status.clone();
        let task = tokio::spawn(async move {
            let r = run.await;
            if let Err(e) = &r {
                tracing::error!(source = %l, kind, error = %e, "source stopped");
            }
            ended.set(if r.is_ok() { "stopped" } else { "failed" });
            r
        });
        RunningSource {
            pipeline: pl,
            name: name.to_string(),
            settings,
            status,
            token,
            task,
        }
    }
}

impl Daemon {
    /// Opens every pipeline (recovery and replay), binds the HTTP listener (or uses
    /// `listener`) and starts serving. Fails with [`Error::Pipeline`], [`Error::Listen`],
    /// [`Error::TokenFile`] or [`Error::UserFile`].
    pub async fn start(settings: Settings, listener: Option<TcpListener>) -> Result<Daemon> {
        let metrics = Metrics::new();
        let notifier = Notifier::from_env().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "NOTIFY_SOCKET is unusable; not notifying systemd");
            Notifier::disabled()
        });
        let tracker = ProgressTracker::new();
        // A pipeline with work queued and no batch applied for this long is wedged.
        let mut stall = settings
            .shutdown_timeout
            .max(std::time::Duration::from_secs(30));
        if settings
            .pipelines
            .iter()
            .any(|p| p.options.engine.hooks.stall_engine)
        {
            // Test hook (see `TestHooks::stall_engine`): judge a stall after two ping intervals.
            if let Some(iv) = notify::watchdog_interval_from_env() {
                stall = iv * 2;
            }
        }
        let mut pipelines = Vec::new();
        let mut routes = Vec::new();
        let starter = SourceStarter {
            metrics: metrics.clone(),
            tracker: tracker.clone(),
            stall,
            token: CancellationToken::new(),
        };
        let mut sources = Vec::new();
        for ps in &settings.pipelines {
            let opts = ps.options.clone();
            let m = metrics.clone();
            let name = opts.engine.pipeline.clone();
            let started = Instant::now();
            let progress = tracker.register(format!("pipeline/{name}"), stall);
            let p =
                tokio::task::spawn_blocking(move || Pipeline::open_with(opts, m, Some(progress)))
                    .await
                    .map_err(|e| Error::Pipeline {
                        pipeline: name.clone(),
                        source: std::io::Error::other(e),
                    })??;
            tracing::info!(pipeline = %name, data_dir = %ps.options.engine.data_dir.display(), elapsed_ms = started.elapsed().as_millis() as u64, "pipeline ready");
            for src in &ps.sources {
                if let Some(push) = src.settings.http_push() {
                    routes.push(SourceRoute::new(
                        p.clone(),
                        ps.time_precision,
                        &src.name,
                        push,
                    ));
                }
                sources.push(starter.start(&p, &ps.source_env(), src));
            }
            pipelines.push(p);
        }
        let listen_err = |addr: &str, e: std::io::Error| Error::Listen {
            addr: addr.to_string(),
            source: e,
        };
        let listener = match listener {
            Some(l) => l,
            None => TcpListener::bind(settings.http.listen)
                .await
                .map_err(|e| listen_err(&settings.http.listen.to_string(), e))?,
        };
        let http_addr = listener
            .local_addr()
            .map_err(|e| listen_err(&settings.http.listen.to_string(), e))?;
        let credentials = http::Credentials::load(&settings.http)?;
        let parsers: Arc<dyn Parsers> = Arc::new(ConnectorParsers);
        let separate_metrics = settings.metrics.enabled && settings.metrics.listen.is_some();
        let state = Arc::new(HttpState {
            pipelines: pipelines.clone(),
            settings: RwLock::new(settings.http.clone()),
            credentials: RwLock::new(credentials),
            parsers,
            metrics: metrics.clone(),
            metrics_path: (settings.metrics.enabled && !separate_metrics)
                .then(|| settings.metrics.path.clone()),
            ready: AtomicBool::new(false),
            started_at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0),
            sources: RwLock::new(status_sources(&sources)),
        });
        let http_token = CancellationToken::new();
        let grace = settings.http_shutdown_grace();
        let mut http_tasks = Vec::new();
        if let (true, Some(addr)) = (separate_metrics, &settings.metrics.listen) {
            let ml = TcpListener::bind(addr)
                .await
                .map_err(|e| listen_err(&addr.to_string(), e))?;
            let maddr = ml
                .local_addr()
                .map_err(|e| listen_err(&addr.to_string(), e))?;
            let app = http::metrics_router(state.clone(), &settings.metrics.path);
            http_tasks.push(tokio::spawn(http::run(ml, app, http_token.clone(), grace)));
            tracing::info!(addr = %maddr, "metrics listening on http://{maddr}{}", settings.metrics.path);
        }
        let app = http::router(state.clone(), routes);
        http_tasks.push(tokio::spawn(http::run(
            listener,
            app,
            http_token.clone(),
            grace,
        )));
        state.ready.store(true, Ordering::Relaxed);
        tracing::info!(addr = %http_addr, "HTTP listening on http://{http_addr}");
        let watchdog = match notify::watchdog_interval_from_env() {
            Some(iv) if notifier.is_enabled() => {
                match Watchdog::spawn(notifier.clone(), tracker.clone(), iv, None) {
                    Ok(w) => Some(w),
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot start the watchdog thread");
                        None
                    }
                }
            }
            _ => None,
        };
        let up = format!("{} pipeline(s) up; HTTP on {http_addr}", pipelines.len());
        let _ = notifier.ready_with_status(&status_line(&up, &[], &state));
        if notifier.is_enabled() {
            tokio::spawn(systemd_status(
                notifier.clone(),
                pipelines.clone(),
                state.clone(),
                up,
                http_token.clone(),
            ));
        }
        Ok(Daemon {
            pipelines,
            http: state,
            http_addr,
            metrics,
            notifier,
            tracker,
            settings,
            http_tasks,
            http_token,
            watchdog,
            sources,
            starter,
        })
    }

    /// Applies a new configuration where that is possible without a restart: HTTP
    /// tokens, limits and mapping, schema rules, and MQTT and CSV sources (a source whose
    /// settings changed is stopped and started again; added ones start, removed ones stop;
    /// unchanged ones keep running). Other changes are logged.
    pub async fn reload(&mut self, new: Settings) {
        let _ = self.notifier.reloading();
        self.reload_sources(&new).await;
        self.apply_reload(new);
        let _ = self.notifier.ready();
    }

    /// Stops the MQTT and CSV sources that a reload to `new` removes or changes (and waits
    /// for them: a source's checkpoint or MQTT session is handed over whole), then starts
    /// the changed and added ones. Sources of pipelines that `new` does not have keep
    /// running (pipelines change with a restart).
    async fn reload_sources(&mut self, new: &Settings) {
        // Push sources keep their routes until a restart (the router is built once).
        let wanted: Vec<(String, (TimeUnit, PathBuf), tsfiled_config::SourceConfig)> = new
            .pipelines
            .iter()
            .filter(|ps| self.pipeline(&ps.options.engine.pipeline).is_some())
            .flat_map(|ps| {
                ps.sources
                    .iter()
                    .filter(|s| s.settings.http_push().is_none())
                    .map(|s| {
                        (
                            ps.options.engine.pipeline.clone(),
                            ps.source_env(),
                            s.clone(),
                        )
                    })
            })
            .collect();
        let (mut keep, mut stop) = (Vec::new(), Vec::new());
        for s in self.sources.drain(..) {
            let pipeline_stays = new
                .pipelines
                .iter()
                .any(|ps| ps.options.engine.pipeline == s.pipeline);
            let unchanged = wanted.iter().any(|(p, _, src)| {
                *p == s.pipeline && src.name == s.name && src.settings.same(s.settings.as_ref())
            });
            if unchanged || !pipeline_stays || s.settings.http_push().is_some() {
                keep.push(s);
            } else {
                stop.push(s);
            }
        }
        for s in &stop {
            s.token.cancel();
        }
        let deadline = self.settings.shutdown_timeout;
        for s in stop {
            let label = s.label();
            let still_wanted = wanted
                .iter()
                .any(|(p, _, src)| *p == s.pipeline && src.name == s.name);
            match tokio::time::timeout(deadline, s.task).await {
                Ok(Ok(Err(e))) => {
                    tracing::warn!(source = %label, error = %e, "reload: source ended with an error")
                }
                Ok(Err(e)) => {
                    tracing::warn!(source = %label, error = %e, "reload: source task failed")
                }
                Ok(Ok(Ok(()))) => {}
                Err(_) => tracing::error!(
                    source = %label,
                    "reload: source did not stop within the shutdown timeout; starting its successor anyway"
                ),
            }
            if still_wanted {
                tracing::info!(source = %label, "reload: source settings changed; restarting it");
            } else {
                tracing::info!(source = %label, "reload: source removed");
                self.metrics.forget_source(&s.pipeline, &s.name);
            }
        }
        for (pl, env, src) in wanted {
            if keep.iter().any(|s| s.pipeline == pl && s.name == src.name) {
                continue;
            }
            if let Some(p) = self.pipeline(&pl).cloned() {
                keep.push(self.starter.start(&p, &env, &src));
            }
        }
        self.sources = keep;
        if let Ok(mut list) = self.http.sources.write() {
            *list = status_sources(&self.sources);
        }
    }

    fn pipeline(&self, name: &str) -> Option<&Arc<Pipeline>> {
        self.pipelines.iter().find(|p| p.name() == name)
    }

    fn apply_reload(&mut self, new: Settings) {
        if new.http.listen != self.settings.http.listen {
            tracing::warn!("reload: a new HTTP listen address takes effect after a restart");
        }
        if new.http.max_body_size > self.settings.http.max_body_size {
            tracing::warn!("reload: a larger HTTP body limit takes effect after a restart");
        }
        match http::Credentials::load(&new.http) {
            Ok(c) => {
                if let Ok(mut creds) = self.http.credentials.write() {
                    *creds = c;
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "reload: cannot read the token or user file; keeping the current tokens and users")
            }
        }
        if let Ok(mut s) = self.http.settings.write() {
            let listen = s.listen;
            *s = new.http.clone();
            s.listen = listen;
        }
        let names: Vec<&str> = self.pipelines.iter().map(|p| p.name()).collect();
        let new_names: Vec<&str> = new
            .pipelines
            .iter()
            .map(|p| p.options.engine.pipeline.as_str())
            .collect();
        if names != new_names {
            tracing::warn!(
                ?names,
                ?new_names,
                "reload: adding or removing pipelines takes effect after a restart"
            );
        }
        for ps in &new.pipelines {
            if let Some(p) = self
                .pipelines
                .iter()
                .find(|p| p.name() == ps.options.engine.pipeline)
            {
                p.set_rules(ps.options.rules.clone(), ps.options.defaults);
            }
        }
        self.settings = new;
        tracing::info!("configuration reloaded");
    }

    /// Stops intake, makes everything durable, seals every file; fails with
    /// [`Error::ShutdownDeadline`] if the deadline passes first.
    pub async fn shutdown(self) -> Result<()> {
        let deadline = self.settings.shutdown_timeout;
        let started = Instant::now();
        tracing::info!(
            deadline_s = deadline.as_secs_f64(),
            "shutting down: stopping intake"
        );
        self.http.ready.store(false, Ordering::Relaxed);
        let _ = self.notifier.stopping();
        // Draining and sealing must not be judged by the watchdog.
        if let Some(w) = self.watchdog {
            w.stop();
        }
        let work = async move {
            self.http_token.cancel();
            self.starter.token.cancel();
            for s in self.sources {
                let name = s.label();
                match s.task.await {
                    Ok(Err(e)) => {
                        tracing::warn!(source = %name, error = %e, "source ended with an error")
                    }
                    Err(e) => tracing::warn!(source = %name, error = %e, "source task failed"),
                    Ok(Ok(())) => {}
                }
            }
            for t in self.http_tasks {
                match t.await {
                    Ok(Err(e)) => tracing::warn!(error = %e, "HTTP server ended with an error"),
                    Err(e) => tracing::warn!(error = %e, "HTTP server task failed"),
                    Ok(Ok(())) => {}
                }
            }
            let pipelines = self.pipelines.clone();
            let _ = tokio::task::spawn_blocking(move || {
                for p in pipelines {
                    p.shutdown_blocking();
                }
            })
            .await;
        };
        match tokio::time::timeout(deadline, work).await {
            Ok(()) => {
                tracing::info!(
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "shutdown complete"
                );
                Ok(())
            }
            Err(_) => Err(Error::ShutdownDeadline(deadline)),
        }
    }
}

/// Sources listed one by one on the `STATUS=` line at most; beyond, counted by state.
const STATUS_SOURCES_LISTED: usize = 8;

/// The sources' part of the `STATUS=` line, from their status reporters:
/// `sources: p/mqtt connected, p/csv watching`, or with many sources
/// `12 sources: 10 connected, 2 disconnected` (states in order of first appearance).
fn sources_status(sources: &[SourceStatus]) -> String {
    if sources.len() <= STATUS_SOURCES_LISTED {
        let each: Vec<String> = sources
            .iter()
            .map(|s| format!("{}/{} {}", s.pipeline, s.name, s.state.get()))
            .collect();
        return format!("sources: {}", each.join(", "));
    }
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for s in sources {
        let state = s.state.get();
        match counts.iter_mut().find(|(st, _)| *st == state) {
            Some((_, n)) => *n += 1,
            None => counts.push((state, 1)),
        }
    }
    let each: Vec<String> = counts.iter().map(|(st, n)| format!("{n} {st}")).collect();
    format!("{} sources: {}", sources.len(), each.join(", "))
}

/// The whole `STATUS=` line: `up` (or the storage problems) and the sources' states.
fn status_line(up: &str, failing: &[String], http: &HttpState) -> String {
    let head = if failing.is_empty() {
        up.to_string()
    } else {
        failing.join("; ")
    };
    let sources = match http.sources.read() {
        Ok(list) if !list.is_empty() => sources_status(&list),
        _ => return head,
    };
    format!("{head}; {sources}")
}

/// Keeps systemd's `STATUS=` line telling whether storage is failing and what state each
/// source reports (checked every second, sent on change): `systemctl status` then shows why
/// intake is refused or which source is disconnected.
async fn systemd_status(
    notifier: Notifier,
    pipelines: Vec<Arc<Pipeline>>,
    http: Arc<HttpState>,
    up: String,
    stop: CancellationToken,
) {
    let mut last = status_line(&up, &[], &http);
    let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = every.tick() => {}
        }
        let failing: Vec<String> = pipelines
            .iter()
            .filter_map(|p| {
                let why = p.health().summary()?;
                let refusing = if p.health().refusal().is_some() {
                    "intake refused; "
                } else {
                    ""
                };
                Some(format!(
                    "pipeline {}: storage degraded ({refusing}{why})",
                    p.name()
                ))
            })
            .collect();
        let text = status_line(&up, &failing, &http);
        if text != last {
            let _ = notifier.status(&text);
            last = text;
        }
    }
}

/// Runs until `shutdown` is cancelled; `reloads` yields new settings on SIGHUP.
pub async fn run(
    settings: Settings,
    listener: Option<TcpListener>,
    shutdown: CancellationToken,
    mut reloads: tokio::sync::mpsc::Receiver<Settings>,
) -> Result<()> {
    let mut daemon = Daemon::start(settings, listener).await?;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            s = reloads.recv() => match s {
                Some(s) => daemon.reload(s).await,
                None => { shutdown.cancelled().await; break; }
            },
        }
    }
    daemon.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(pipeline: &str, name: &str, state: &'static str) -> SourceStatus {
        SourceStatus {
            pipeline: pipeline.into(),
            name: name.into(),
            type_name: "mqtt",
            state: StatusReporter::new(state),
        }
    }

    #[test]
    fn the_status_line_shows_each_source_state_as_reported() {
        let list = vec![
            source("p", "m", "disconnected"),
            source("p", "c", "watching"),
        ];
        assert_eq!(
            sources_status(&list),
            "sources: p/m disconnected, p/c watching"
        );
        // The reporter is shared: a later state shows on the next line.
        list[0].state.set("connected");
        assert_eq!(
            sources_status(&list),
            "sources: p/m connected, p/c watching"
        );
        let many: Vec<SourceStatus> = (0..10)
            .map(|i| {
                source(
                    "q",
                    &format!("s{i}"),
                    if i < 7 { "connected" } else { "failed" },
                )
            })
            .collect();
        assert_eq!(sources_status(&many), "10 sources: 7 connected, 3 failed");
    }
}
