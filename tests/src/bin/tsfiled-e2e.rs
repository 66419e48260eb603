//! The `tsfiled` program under the name `tsfiled-e2e`, for the end-to-end tests.
//!
//! Cargo gives a package's integration tests the paths of that package's own binaries only
//! (`CARGO_BIN_EXE_<name>`), and builds them fresh before the tests run. This binary makes the
//! tests of this package drive the real daemon: it is `tsfiled::cli::main`, exactly what the
//! `tsfiled` binary of the `tsfiled` package runs. It is not named `tsfiled` because two
//! binaries of one name in a workspace overwrite each other in `target/`. The name shows only
//! where the program prints its own file name (clap's usage lines); no test depends on it.

fn main() -> std::process::ExitCode {
    tsfiled::cli::main()
}
