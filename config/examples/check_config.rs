//! Validates a configuration file like `tsfiled check-config` will: prints every problem, or
//! the machine checks and the effective configuration.
//!
//! `cargo run -p tsfiled-config --example check_config -- FILE` (no FILE: the embedded default).

use std::process::ExitCode;

use tsfiled_config::{check, Config, Secrets};

fn main() -> ExitCode {
    let config = match std::env::args_os().nth(1) {
        Some(path) => Config::load(std::path::Path::new(&path)),
        None => Config::embedded_default(),
    };
    let config = match config {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let report = check(&config);
    eprint!("{report}");
    match config.to_toml(Secrets::Redact) {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
