//! Bit-packing helpers (MSB-first) shared by RLE and TS_2DIFF.
