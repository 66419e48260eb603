//! The process loop of the `exec` source.

use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

use super::config::{ExecFormat, ExecSourceConfig};
use crate::iotdb_json::{parse_iotdb_json, JsonOptions};
use crate::line_protocol::{parse_line_protocol, LineProtocolOptions};
use crate::model::{Batch, TimeUnit};
use crate::path::DeviceTemplate;
use crate::sink::SinkError;
use crate::source::{Counter, SourceContext};

/// Lines gathered into one batch at most.
const MAX_BATCH_LINES: usize = 10_000;
/// Longest stderr line logged (longer ones are cut).
const MAX_LOGGED_STDERR: usize = 1000;

/// How one payload (a line, or lines) becomes a batch.
enum Parser {
    Line {
        template: DeviceTemplate,
        precision: TimeUnit,
    },
    Json,
}

impl Parser {
    fn new(format: &ExecFormat) -> Parser {
        match format {
            ExecFormat::Line(m) => Parser::Line {
                template: m.device_template.clone(),
                precision: m.precision,
            },
            ExecFormat::IotdbJson => Parser::Json,
        }
    }

    /// Parses the complete lines in `buf` (each ending in `\n`).
    fn parse(&self, buf: &[u8], stored: TimeUnit) -> Batch {
        match self {
            Parser::Line {
                template,
                precision,
            } => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_nanos() as i64)
                    .unwrap_or(0);
                parse_line_protocol(
                    buf,
                    &LineProtocolOptions {
                        device_template: template,
                        precision: *precision,
                        stored_unit: stored,
                        now: TimeUnit::Nanos.convert(now, stored).unwrap_or(0),
                    },
                )
            }
            Parser::Json => {
                let opts = JsonOptions {
                    input_unit: TimeUnit::Millis,
                    stored_unit: stored,
                };
                let mut batch = Batch::default();
                for line in buf.split(|&b| b == b'\n') {
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let b = parse_iotdb_json(line, &opts);
                    batch.records.extend(b.records);
                    batch.rejections.extend(b.rejections);
                }
                batch
            }
        }
    }
}

/// The source's counters.
struct Telemetry {
    restarts: Counter,
    lines: Counter,
    too_long: Counter,
    stderr: Counter,
    running: crate::source::Gauge,
}

impl Telemetry {
    fn new(cx: &SourceContext) -> Telemetry {
        let m = cx.metrics.as_ref();
        Telemetry {
            restarts: m.counter(
                "tsfiled_exec_restarts_total",
                "Starts of the exec source's program after the first (exits and failed starts).",
                None,
            ),
            lines: m.counter(
                "tsfiled_exec_lines_total",
                "Lines read from the exec source's program.",
                None,
            ),
            too_long: m.counter(
                "tsfiled_exec_lines_too_long_total",
                "Lines of the exec source's program dropped for exceeding max_line_size.",
                None,
            ),
            stderr: m.counter(
                "tsfiled_exec_stderr_lines_total",
                "Lines the exec source's program wrote to its standard error (logged).",
                None,
            ),
            running: m.gauge(
                "tsfiled_exec_running",
                "1 while the exec source's program is running.",
            ),
        }
    }
}

/// Runs the program until `cx.shutdown` is cancelled, restarting it with backoff.
pub(super) async fn run(cfg: ExecSourceConfig, cx: SourceContext) -> Result<(), String> {
    let parser = Parser::new(&cfg.format);
    let t = Telemetry::new(&cx);
    let label = format!("{}/{}", cx.pipeline, cx.name);
    let mut delay = cfg.restart_delay;
    let mut first = true;
    loop {
        if cx.shutdown.is_cancelled() {
            return Ok(());
        }
        if !first {
            (t.restarts)(1);
        }
        first = false;
        let started = Instant::now();
        match spawn(&cfg) {
            Err(e) => {
                tracing::error!(source = %label, program = %cfg.command[0], error = %e, "exec: cannot start the program");
            }
            Ok(mut child) => {
                tracing::info!(source = %label, program = %cfg.command[0], pid = child.id(), "exec: program started");
                cx.status.set("running");
                (t.running)(1);
                if let Some(err) = child.stderr.take() {
                    tokio::spawn(log_stderr(err, label.clone(), t.stderr.clone()));
                }
                let stdout = child.stdout.take();
                let stopped = match stdout {
                    Some(out) => read_output(&cfg, &parser, &cx, &t, &label, out).await,
                    None => false,
                };
                (t.running)(0);
                if stopped || cx.shutdown.is_cancelled() {
                    stop(&mut child, cfg.stop_timeout, &label).await;
                    return Ok(());
                }
                // Its output ended; it may still be running (stdout closed on purpose).
                let waited = tokio::select! {
                    _ = cx.shutdown.cancelled() => None,
                    r = child.wait() => Some(r),
                };
                match waited {
                    None => {
                        stop(&mut child, cfg.stop_timeout, &label).await;
                        return Ok(());
                    }
                    Some(Ok(status)) => {
                        tracing::warn!(source = %label, %status, "exec: program exited")
                    }
                    Some(Err(e)) => {
                        tracing::warn!(source = %label, error = %e, "exec: cannot wait for the program")
                    }
                }
            }
        }
        if started.elapsed() >= cfg.restart_max_delay {
            delay = cfg.restart_delay;
        }
        cx.status.set("restarting");
        tracing::info!(source = %label, delay_ms = delay.as_millis() as u64, "exec: restarting the program");
        tokio::select! {
            _ = cx.shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(cfg.restart_max_delay);
    }
}

fn spawn(cfg: &ExecSourceConfig) -> std::io::Result<Child> {
    let mut cmd = Command::new(&cfg.command[0]);
    cmd.args(&cfg.command[1..])
        .envs(cfg.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = &cfg.working_dir {
        cmd.current_dir(dir);
    }
    cmd.spawn()
}

/// SIGTERM, then SIGKILL after `grace`.
async fn stop(child: &mut Child, grace: Duration, label: &str) {
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) with a pid this process spawned and has not yet reaped.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    match tokio::time::timeout(grace, child.wait()).await {
        Ok(_) => tracing::info!(source = %label, "exec: program stopped"),
        Err(_) => {
            tracing::warn!(source = %label, grace_ms = grace.as_millis() as u64, "exec: program ignored SIGTERM; killing it");
            let _ = child.kill().await;
        }
    }
}

async fn log_stderr(err: tokio::process::ChildStderr, label: String, count: Counter) {
    let mut lines = BufReader::new(err).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        count(1);
        let shown: String = line.chars().take(MAX_LOGGED_STDERR).collect();
        tracing::warn!(source = %label, "exec stderr: {shown}");
    }
}

/// Outcome of reading one line into the payload buffer.
enum Read {
    /// A complete line was appended.
    Line,
    /// A line over the limit was skipped.
    TooLong,
    /// End of output.
    Eof,
}

/// Appends the next line (with its `\n`) to `buf`, unless it is longer than `max`: then it
/// is skipped without being buffered.
async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Read> {
    let start = buf.len();
    let mut skipping = false;
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            if skipping {
                return Ok(Read::TooLong);
            }
            if buf.len() > start {
                buf.push(b'\n'); // a last line without newline
                return Ok(Read::Line);
            }
            return Ok(Read::Eof);
        }
        let (chunk, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let n = chunk.len();
        if !skipping {
            if buf.len() - start + n > max + 1 {
                buf.truncate(start);
                skipping = true;
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        r.consume(n);
        if done {
            return Ok(if skipping { Read::TooLong } else { Read::Line });
        }
    }
}

/// Reads the program's output until it ends (`false`) or the source is stopped (`true`).
async fn read_output(
    cfg: &ExecSourceConfig,
    parser: &Parser,
    cx: &SourceContext,
    t: &Telemetry,
    label: &str,
    out: ChildStdout,
) -> bool {
    let max = usize::try_from(cfg.max_line_size.0).unwrap_or(usize::MAX);
    let mut reader = BufReader::with_capacity(64 * 1024, out);
    let mut buf: Vec<u8> = Vec::new();
    loop {
        buf.clear();
        let mut lines = 0usize;
        let mut eof = false;
        // Wait for one line, then take every complete line already buffered.
        loop {
            let r = tokio::select! {
                _ = cx.shutdown.cancelled() => return true,
                r = read_line(&mut reader, &mut buf, max) => r,
            };
            match r {
                Ok(Read::Line) => lines += 1,
                Ok(Read::TooLong) => {
                    (t.too_long)(1);
                    tracing::warn!(source = %label, max_line_size = max, "exec: output line too long; dropped");
                }
                Ok(Read::Eof) => {
                    eof = true;
                    break;
                }
                Err(e) => {
                    tracing::warn!(source = %label, error = %e, "exec: cannot read the program's output");
                    eof = true;
                    break;
                }
            }
            if lines >= MAX_BATCH_LINES || !reader.buffer().contains(&b'\n') {
                break;
            }
        }
        if lines > 0 {
            (t.lines)(lines as u64);
            if submit(parser, cx, &buf, label).await {
                return true;
            }
        }
        if eof {
            return false;
        }
    }
}

/// Hands the lines in `buf` to the sink, waiting while it is full; `true` when the sink closed
/// or the source was stopped.
async fn submit(parser: &Parser, cx: &SourceContext, buf: &[u8], label: &str) -> bool {
    let received = Instant::now();
    loop {
        let batch = parser.parse(buf, cx.stored_unit);
        if let Some(r) = batch.rejections.first() {
            tracing::warn!(source = %label, location = %r.location, reason = r.reason.label(), "exec: {} ({} point(s) rejected in this batch)", r.message, batch.rejected_points());
        }
        let wait = match cx.sink.submit(batch, received).await {
            Ok(_) => {
                cx.metrics.progress();
                return false;
            }
            Err(SinkError::Closed) => return true,
            Err(SinkError::Full { retry_after, .. }) => retry_after,
            Err(SinkError::Io(e)) => {
                tracing::warn!(source = %label, error = %e, "exec: the pipeline failed; retrying");
                Duration::from_secs(1)
            }
        };
        tokio::select! {
            _ = cx.shutdown.cancelled() => return true,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}
