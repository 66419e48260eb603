//! What the engine publishes for the status page: open and recently sealed files, and the
//! open-files gauge.

use std::path::Path;
use std::sync::{Arc, Mutex};

use super::Engine;

/// A file as the status page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStatus {
    /// Path relative to the data directory.
    pub path: String,
    /// Storage group.
    pub storage_group: String,
    /// Bytes written so far (sealed: the file size).
    pub bytes: u64,
    /// Points in it.
    pub points: u64,
    /// Unix ms of creation (open files) or of the seal (sealed files).
    pub time_ms: i64,
    /// Why it was sealed (sealed files).
    pub reason: Option<&'static str>,
}

/// What the engine publishes for the status page: open files and the last sealed ones.
#[derive(Debug, Default)]
pub struct EngineStatus {
    /// Open files by path.
    pub open: std::collections::BTreeMap<String, FileStatus>,
    /// Recently sealed files, newest first (at most [`RECENT_SEALED`]).
    pub sealed: std::collections::VecDeque<FileStatus>,
}

/// How many sealed files [`EngineStatus`] remembers.
pub const RECENT_SEALED: usize = 20;

impl Engine {
    /// The status the engine publishes (open and recently sealed files).
    pub fn status_handle(&self) -> Arc<Mutex<EngineStatus>> {
        self.status.clone()
    }

    pub(super) fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.opts.data_dir)
            .unwrap_or(p)
            .to_string_lossy()
            .to_string()
    }

    pub(super) fn update_open_files(&self) {
        let n: usize = self
            .groups
            .values()
            .map(|g| g.seq.file.is_some() as usize + g.unseq.file.is_some() as usize)
            .sum::<usize>()
            + self.pending.values().map(|p| p.files).sum::<usize>();
        self.metrics
            .open_files
            .with_label_values(&[&self.opts.pipeline])
            .set(n as i64);
    }
}
