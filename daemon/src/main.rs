//! `tsfiled`: the daemon and the TsFile tools.

use clap::{Parser, Subcommand};

/// tsfiled: turns live data into Apache IoTDB TsFiles.
#[derive(Parser)]
#[command(name = "tsfiled", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the build version.
    Version,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => println!("tsfiled {}", env!("CARGO_PKG_VERSION")),
    }
    Ok(())
}
