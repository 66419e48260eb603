//! Test harness shared by the end-to-end tests.
