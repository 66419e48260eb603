//! End-to-end tests of tsfiled: the real binary on temporary directories, pushed to
//! over HTTP, stopped with SIGTERM or killed with SIGKILL, and every sealed file read
//! back with the format library.

mod harness;

mod bad_input;
mod closed_pipe;
mod config;
mod crash;
mod csv;
mod disk_full;
mod encodings_v4;
mod exec;
mod iotdb_clients;
mod limits;
mod mqtt;
mod push;
mod quick_start;
mod reload;
mod rest;
mod status_page;
mod systemd;
mod table_v4;
mod watchdog_stall;
