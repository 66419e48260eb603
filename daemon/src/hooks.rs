//! Faults the tests inject into a running daemon: a stalled engine, slow WAL fsyncs, slow
//! seals. Production runs none ([`TestHooks::default`]); the end-to-end tests set them through
//! the library's entry point ([`crate::cli::main_with`]) from a test-only program.

use std::sync::{Arc, Condvar, Mutex};
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
    /// The engine waits at this gate before applying each live record, until it is opened
    /// (an engine held up by a long flush or seal).
    pub engine_gate: Option<Gate>,
}

/// A gate threads wait at until it is opened (tests).
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    /// Waits until the gate is open.
    pub fn wait(&self) {
        let (open, cv) = &*self.0;
        let mut g = open.lock().unwrap_or_else(|e| e.into_inner());
        while !*g {
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Opens the gate for good.
    pub fn open(&self) {
        let (open, cv) = &*self.0;
        *open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }
}

/// Two gates are equal when they are the same gate.
impl PartialEq for Gate {
    fn eq(&self, other: &Gate) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Gate {}
