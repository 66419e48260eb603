//! `tsfiled`: the daemon and the TsFile tools.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod tools_cli;

/// tsfiled: turns live data into Apache IoTDB TsFiles.
#[derive(Parser)]
#[command(name = "tsfiled", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    #[command(flatten)]
    Tool(tools_cli::ToolCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Tool(t) => tools_cli::run(t),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tsfiled: {e:#}");
            ExitCode::FAILURE
        }
    }
}
