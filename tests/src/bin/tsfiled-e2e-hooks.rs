//! The `tsfiled` program with test faults injected through the daemon library's entry point
//! ([`tsfiled::cli::main_with`]), for the end-to-end tests that need a stalled engine, slow
//! WAL fsyncs or slow seals. The production program has no such faults; this one takes them
//! as its first arguments, before the `tsfiled` command line:
//!
//! `tsfiled-e2e-hooks [--stall-engine] [--wal-sync-delay-ms=N] [--seal-delay-ms=N] <tsfiled arguments>`

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use tsfiled::hooks::TestHooks;

fn millis(arg: &str, value: &str) -> Option<Duration> {
    let ms = value
        .parse::<u64>()
        .unwrap_or_else(|_| panic!("{arg}: not a number of milliseconds"));
    Some(Duration::from_millis(ms))
}

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let program = args.next().unwrap_or_else(|| OsString::from("tsfiled"));
    let mut hooks = TestHooks::default();
    let mut rest: Vec<OsString> = vec![program];
    let mut args = args.peekable();
    while let Some(a) = args.next_if(|a| a.to_str().is_some_and(|s| s.starts_with("--"))) {
        let a = a.into_string().expect("checked above");
        match a.split_once('=') {
            None if a == "--stall-engine" => hooks.stall_engine = true,
            Some(("--wal-sync-delay-ms", v)) => hooks.wal_sync_delay = millis(&a, v),
            Some(("--seal-delay-ms", v)) => hooks.seal_delay = millis(&a, v),
            _ => {
                rest.push(a.into());
                break;
            }
        }
    }
    rest.extend(args);
    tsfiled::cli::main_with(rest, hooks)
}
