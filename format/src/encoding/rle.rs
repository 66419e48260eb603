//! RLE / bit-packing hybrid for BOOLEAN, INT32, INT64 (spec §6.2).
