//! End-to-end tests of tsfiled against real parts: the real daemon (this package's
//! `tsfiled-e2e` binary, the `tsfiled` program under another name) on temporary directories,
//! a real MQTT broker, `promtool`, `systemd-analyze` and headless Chromium.
//!
//! Test targets: `e2e` (the daemon over HTTP, MQTT, CSV, signals, crashes, systemd notify),
//! `csv_1gb` (a 1 GB CSV under the memory bound, alone in its binary), `cli_tools` (the format
//! tools on the golden corpus), `example_configs` (`check-config` on `config/examples/`) and
//! `ops_kit` (`ops/`, `systemd/` and the status page). Run one with e.g.
//! `cargo test -p tsfiled-tests --test e2e`.
//!
//! This library holds what the test targets share that needs no binary.

use std::path::{Path, PathBuf};

/// The workspace root (this package's parent directory), from which the tests find the
/// golden fixtures, `config/examples/`, `ops/`, `systemd/` and the daemon's sources.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests package lies inside the workspace")
        .to_path_buf()
}
