//! Faults the tests inject into a running daemon: a stalled engine, slow WAL fsyncs, slow
//! seals. Production runs none ([`TestHooks::default`]); the end-to-end tests set them through
//! the library's entry point ([`crate::cli::main_with`]) from a test-only program.

use std::time::Duration;

/// Test hooks of a pipeline (default: none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestHooks {
    /// The engine stops at its first live write (it parks forever), and a pipeline is judged
    /// stalled after two watchdog intervals: the systemd watchdog test sees the pings stop.
    pub stall_engine: bool,
    /// Slept after every WAL fsync.
    pub wal_sync_delay: Option<Duration>,
    /// Slept at the start of every seal, on the sealer thread.
    pub seal_delay: Option<Duration>,
}
