//! The `tsfiled` command line: `run` (the daemon), `check-config`, `import`, `version` and the
//! TsFile tools. The `tsfiled` binary is [`main`]; so is the end-to-end tests' copy of it.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

use crate::hooks::TestHooks;
use crate::settings::Settings;

mod tools;

/// tsfiled: turns live data into Apache IoTDB TsFiles.
#[derive(Parser)]
#[command(name = "tsfiled", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands (the format tools are added here as further variants).
#[derive(Subcommand)]
enum Command {
    /// Run the daemon (without --config: the embedded default, HTTP push and metrics
    /// on 127.0.0.1:8080, data under ./data).
    Run(RunArgs),
    /// Validate a configuration file and print the effective configuration.
    CheckConfig {
        /// The TOML file.
        file: PathBuf,
    },
    /// Import CSV files offline into sealed TsFiles under a directory (no HTTP).
    Import {
        /// CSV files (`.csv` or `.csv.gz`).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Data directory receiving the TsFiles.
        #[arg(long)]
        to: PathBuf,
        /// Configuration: its first pipeline's storage and schema, and its first CSV
        /// source's parsing settings (default: the embedded configuration, IoTDB wide CSV).
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
    },
    /// Print the build version.
    Version,
    #[command(flatten)]
    Tool(tools::ToolCommand),
}

#[derive(clap::Args)]
struct RunArgs {
    /// TOML configuration file.
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// Data directory of the first pipeline (overrides the configuration).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// HTTP listen address, e.g. 127.0.0.1:0 for a free port (overrides the configuration).
    #[arg(long)]
    http_listen: Option<String>,
    /// Accept only requests with this bearer token (repeatable; adds to the configuration's).
    #[arg(long = "http-token", value_name = "TOKEN")]
    http_tokens: Vec<String>,
    /// Log as JSON lines.
    #[arg(long)]
    log_json: bool,
    /// Memtable budget of every pipeline in bytes (overrides the configuration).
    #[arg(long, hide = true)]
    memtable_bytes: Option<usize>,
    /// Seal files at this size in bytes (overrides the configuration).
    #[arg(long, hide = true)]
    file_max_bytes: Option<u64>,
    /// Seal files after this many idle milliseconds (overrides the configuration).
    #[arg(long, hide = true)]
    seal_idle_ms: Option<u64>,
}

fn init_logging(level: &str, json: bool, color: Option<bool>) {
    let filter = EnvFilter::try_from_env("TSFILED_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new(level));
    let ansi = color.unwrap_or_else(|| std::io::stderr().is_terminal());
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    if json {
        let _ = b.json().try_init();
    } else {
        let _ = b.try_init();
    }
}

fn load(args: &RunArgs, hooks: &TestHooks) -> anyhow::Result<Settings> {
    let mut s = crate::config_file::load(
        args.config.as_deref(),
        args.data_dir.as_deref(),
        args.http_listen.as_deref(),
    )?;
    s.http.tokens.extend(args.http_tokens.iter().cloned());
    for p in &mut s.pipelines {
        p.options.set_hooks(hooks.clone());
        let e = &mut p.options.engine;
        if let Some(v) = args.memtable_bytes {
            e.memtable_bytes = v;
        }
        if let Some(v) = args.file_max_bytes {
            e.file_max_bytes = v;
        }
        if let Some(v) = args.seal_idle_ms {
            e.file_idle = std::time::Duration::from_millis(v);
            e.tick = e.tick.min(e.file_idle);
        }
    }
    Ok(s)
}

fn run(args: RunArgs, hooks: TestHooks) -> anyhow::Result<()> {
    let settings = load(&args, &hooks)?;
    init_logging(
        &settings.log.level,
        settings.log.format == tsfiled_config::LogFormat::Json || args.log_json,
        match settings.log.color {
            tsfiled_config::ColorMode::Auto => None,
            tsfiled_config::ColorMode::Never => Some(false),
            tsfiled_config::ColorMode::Always => Some(true),
        },
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("tsfiled-rt")
        .build()?;
    let result = rt.block_on(async move {
        let shutdown = CancellationToken::new();
        let (reload_tx, reload_rx) = tokio::sync::mpsc::channel(4);
        let token = shutdown.clone();
        tokio::spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
                signal(SignalKind::hangup()),
            ) else {
                tracing::error!("cannot install signal handlers");
                return;
            };
            loop {
                tokio::select! {
                    _ = term.recv() => { tracing::info!("SIGTERM received"); token.cancel(); return; }
                    _ = int.recv() => { tracing::info!("SIGINT received"); token.cancel(); return; }
                    _ = hup.recv() => {
                        tracing::info!("SIGHUP received: reloading the configuration");
                        match load(&args, &hooks) {
                            Ok(s) => { let _ = reload_tx.send(s).await; }
                            Err(e) => tracing::error!(error = %format!("{e:#}"), "reload failed; keeping the current configuration"),
                        }
                    }
                }
            }
        });
        crate::app::run(settings, None, shutdown, reload_rx).await
    });
    // Past the shutdown deadline a seal may still run on a blocking thread: exit without
    // waiting for it (dropping the runtime would); the next start recovers from the WAL.
    rt.shutdown_background();
    result?;
    Ok(())
}

/// Sets the action of SIGPIPE. The tools (and `--help`, `version`, `check-config`) write to
/// standard output, often into a pipe such as `| head`: with the default action a closed pipe
/// ends them quietly with the conventional status, as any Unix filter, instead of a
/// "Broken pipe" error or a panic in `println!` (Rust ignores SIGPIPE unless told). The
/// daemon ignores it again: a peer closing a socket must not kill it.
fn sigpipe(action: libc::sighandler_t) {
    // SAFETY: signal(2) with SIG_DFL or SIG_IGN installs no handler code; it is called at
    // start-up before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, action);
    }
}

/// Parses the process arguments, runs the subcommand and returns the process exit code.
pub fn main() -> ExitCode {
    main_with(std::env::args_os(), TestHooks::default())
}

/// [`main`] on the arguments `args` (the program name first), the daemon (`run`) with the
/// faults `hooks` injected into every pipeline (tests).
pub fn main_with(args: impl IntoIterator<Item = std::ffi::OsString>, hooks: TestHooks) -> ExitCode {
    sigpipe(libc::SIG_DFL);
    let cli = Cli::parse_from(args);
    let result = match cli.command {
        Command::Run(args) => {
            sigpipe(libc::SIG_IGN);
            run(args, hooks)
        }
        Command::CheckConfig { file } => crate::config_file::check(&file)
            .map(|text| print!("{text}"))
            .map_err(anyhow::Error::from),
        Command::Import { files, to, config } => {
            init_logging("warn", false, None);
            crate::import::import(&files, &to, config.as_deref())
                .map(|s| {
                    println!(
                        "imported {} files: {} rows ({} rejected), {} points ({} rejected) into {}",
                        s.files,
                        s.rows,
                        s.rejected_rows,
                        s.points,
                        s.rejected_points,
                        to.display()
                    )
                })
                .map_err(anyhow::Error::from)
        }
        Command::Version => {
            println!("tsfiled {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Tool(t) => match tools::run(&t) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "tsfiled failed");
            eprintln!("tsfiled: {e:#}");
            ExitCode::FAILURE
        }
    }
}
