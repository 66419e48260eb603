//! TS_2DIFF delta-of-delta blocks for INT32/INT64 and the time column (spec §6.3).
