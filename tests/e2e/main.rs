//! End-to-end tests (one binary): modules are added as the daemon grows.
