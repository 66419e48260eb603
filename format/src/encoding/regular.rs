//! REGULAR encoding for INT32/INT64 (spec §6.6).
