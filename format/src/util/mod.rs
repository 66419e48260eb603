//! Byte-level helpers shared by every layer.

pub(crate) mod hash;
pub mod io;
