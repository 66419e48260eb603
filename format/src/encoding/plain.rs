//! PLAIN encoding for every type (spec §6.1).
