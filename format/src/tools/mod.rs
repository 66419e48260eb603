//! The logic behind the format tools of the `tsfiled` CLI: canonical dump, convert,
//! sketch, resource print and data-directory overview.

pub mod convert;
pub mod dump;
pub mod javafmt;
pub mod overview;
pub mod resource_print;
pub mod sequence;
pub mod sketch;
