//! `tsfiled`: the daemon and the TsFile tools (the command line is [`tsfiled::cli`]).

fn main() -> std::process::ExitCode {
    tsfiled::cli::main()
}
