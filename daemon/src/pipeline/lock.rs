//! The data directory's lock file.

use std::io;

/// Takes an exclusive lock (`flock`) on `<state>/lock` so two daemons never share a data
/// directory (released when the process ends, also by SIGKILL).
pub(super) fn lock_dir(
    fs: &dyn tsfiled_fsio::Fs,
    state_dir: &std::path::Path,
) -> io::Result<Box<dyn std::any::Any + Send + Sync>> {
    let path = state_dir.join("lock");
    fs.lock(&path).map_err(|e| {
        if e.kind() == io::ErrorKind::WouldBlock {
            io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "{} is locked: another tsfiled uses this data directory",
                    path.display()
                ),
            )
        } else {
            e
        }
    })
}
