//! Value and time encodings, one module per encoding with encoder and decoder side by
//! side (spec §6). [`get_encoder`] and [`decode_values`] are the factories the file
//! writer and reader use.
//!
//! Encoders mirror Java's `Encoder`: values are pushed one at a time into an output
//! buffer (the page's column stream); [`Encoder::flush`] ends the page and resets the
//! logical state; [`Encoder::max_byte_size`] is Java's `getMaxByteSize`, used by the
//! page-sealing rule.

use crate::basic::{Column, DataType, Encoding};
use crate::errors::{Error, Result};

pub mod bitpack;
pub mod float;
pub mod gorilla;
pub mod plain;
pub mod regular;
pub mod rle;
pub mod ts2diff;

/// Default `max_point_number` (float precision) of FLOAT/DOUBLE under RLE or TS_2DIFF.
pub const DEFAULT_FLOAT_PRECISION: u32 = 2;

/// A column encoder. Only the methods of its data type are implemented; the others
/// return [`Error::Unsupported`].
pub trait Encoder: Send {
    /// Encodes a BOOLEAN value.
    fn encode_bool(&mut self, _v: bool, _out: &mut Vec<u8>) -> Result<()> {
        Err(Error::unsupported(
            "this encoder does not take BOOLEAN values",
        ))
    }
    /// Encodes an INT32 value.
    fn encode_i32(&mut self, _v: i32, _out: &mut Vec<u8>) -> Result<()> {
        Err(Error::unsupported(
            "this encoder does not take INT32 values",
        ))
    }
    /// Encodes an INT64 value.
    fn encode_i64(&mut self, _v: i64, _out: &mut Vec<u8>) -> Result<()> {
        Err(Error::unsupported(
            "this encoder does not take INT64 values",
        ))
    }
    /// Encodes a FLOAT value.
    fn encode_f32(&mut self, _v: f32, _out: &mut Vec<u8>) -> Result<()> {
        Err(Error::unsupported(
            "this encoder does not take FLOAT values",
        ))
    }
    /// Encodes a DOUBLE value.
    fn encode_f64(&mut self, _v: f64, _out: &mut Vec<u8>) -> Result<()> {
        Err(Error::unsupported(
            "this encoder does not take DOUBLE values",
        ))
    }
    /// Encodes a TEXT value.
    fn encode_binary(&mut self, _v: &[u8], _out: &mut Vec<u8>) -> Result<()> {
        Err(Error::unsupported("this encoder does not take TEXT values"))
    }
    /// Ends the page: writes everything still buffered and resets the logical state.
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()>;
    /// Java's `getMaxByteSize()`: the bytes still held inside the encoder, as Java
    /// estimates them (spec §6.8).
    fn max_byte_size(&self) -> usize;
}

/// The encoder the 0.10 writer uses for `encoding` of `data_type`.
///
/// `float_precision` is `max_point_number` for FLOAT/DOUBLE under RLE or TS_2DIFF.
/// Combinations the 0.10 writer refuses give [`Error::Unsupported`].
pub fn get_encoder(
    encoding: Encoding,
    data_type: DataType,
    float_precision: u32,
) -> Result<Box<dyn Encoder>> {
    let _ = (encoding, data_type, float_precision);
    Err(Error::unsupported("encoders not implemented yet"))
}

/// The time column encoder (TS_2DIFF over INT64; not recorded in the file).
pub fn time_encoder() -> Box<dyn Encoder> {
    get_encoder(Encoding::TS_2DIFF, DataType::INT64, 0).expect("TS_2DIFF INT64 exists")
}

/// Decodes a page's time column (TS_2DIFF INT64 blocks until `data` is exhausted),
/// appending to `out`.
pub fn decode_times(data: &[u8], out: &mut Vec<i64>) -> Result<()> {
    let _ = (data, out);
    Err(Error::unsupported("decoders not implemented yet"))
}

/// Decodes exactly `count` values of a page's value column into `out`, which must be
/// a column of `data_type`.
pub fn decode_values(
    encoding: Encoding,
    data_type: DataType,
    data: &[u8],
    count: usize,
    out: &mut Column,
) -> Result<()> {
    let _ = (encoding, data_type, data, count, out);
    Err(Error::unsupported("decoders not implemented yet"))
}
