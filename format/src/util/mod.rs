//! Byte-level helpers shared by every layer.

pub mod io;
pub(crate) mod hash;
