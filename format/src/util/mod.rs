//! Byte-level helpers shared by every layer.

pub mod io;
