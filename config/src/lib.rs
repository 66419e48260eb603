//! tsfiled's TOML configuration: raw serde structures, then a validated runtime
//! configuration whose errors name the TOML key path and line.
