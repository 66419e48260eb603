//! End-to-end tests of the daemon live in `daemon/tests/e2e/` (test target `e2e` of the
//! `tsfiled` package), where Cargo provides the path of the real `tsfiled` binary
//! (`CARGO_BIN_EXE_tsfiled`); run them with `cargo test -p tsfiled --test e2e`.
