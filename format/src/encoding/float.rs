//! FLOAT/DOUBLE under RLE or TS_2DIFF (Java `FloatEncoder`, spec §6.4).
