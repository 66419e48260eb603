//! The TsFile reader (spec §8): head and tail validation, the index tree, series
//! lookup, point iteration, time-range queries, the sequential walk and recovery scan.
//!
//! (In progress.)
