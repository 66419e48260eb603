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
    encoding.check(data_type)?;
    use DataType::*;
    Ok(match (encoding, data_type) {
        (Encoding::PLAIN, t) => Box::new(plain::PlainEncoder::new(t)),
        (Encoding::RLE, BOOLEAN | INT32) => Box::new(rle::IntRleEncoder::new()),
        (Encoding::RLE, INT64) => Box::new(rle::LongRleEncoder::new()),
        (Encoding::RLE | Encoding::TS_2DIFF, FLOAT | DOUBLE) => Box::new(float::FloatEncoder::new(
            encoding,
            data_type,
            float_precision,
        )?),
        (Encoding::GORILLA, FLOAT) => Box::new(gorilla::GorillaEncoder::single()),
        (Encoding::GORILLA, DOUBLE) => Box::new(gorilla::GorillaEncoder::double()),
        (Encoding::TS_2DIFF, INT32) => Box::new(ts2diff::IntDeltaEncoder::new()),
        (Encoding::TS_2DIFF, INT64) => Box::new(ts2diff::LongDeltaEncoder::new()),
        (e, t) => {
            return Err(Error::unsupported(format!(
                "{e} {t} is not implemented yet"
            )))
        }
    })
}

/// The time column encoder (TS_2DIFF over INT64; not recorded in the file).
pub fn time_encoder() -> Box<dyn Encoder> {
    Box::new(ts2diff::LongDeltaEncoder::new())
}

/// Stream name used in errors about a page's time column.
pub const TIME_STREAM: &str = "TS_2DIFF INT64 time column";

/// Decodes a page's time column (TS_2DIFF INT64 blocks until `data` is exhausted),
/// appending to `out`.
pub fn decode_times(data: &[u8], out: &mut Vec<i64>) -> Result<()> {
    ts2diff::decode_into::<i64>(TIME_STREAM, data, None, out)
}

/// Decodes exactly `count` values of a page's value column into `out`, which must be
/// a column of `data_type`.
///
/// Bytes after the `count`-th value are ignored, as the Java reader (driven by the
/// time column) never reads them.
pub fn decode_values(
    encoding: Encoding,
    data_type: DataType,
    data: &[u8],
    count: usize,
    out: &mut Column,
) -> Result<()> {
    if out.data_type() != data_type {
        return Err(Error::invalid(format!(
            "decode_values: a {data_type} column was expected, got a {} column",
            out.data_type()
        )));
    }
    encoding.check(data_type)?;
    match (encoding, out) {
        (Encoding::PLAIN, out) => plain::decode(data, count, out),
        (Encoding::RLE, Column::Boolean(v)) => {
            rle::decode_bools("RLE BOOLEAN column", data, count, v)
        }
        (Encoding::RLE, Column::Int32(v)) => {
            rle::decode_into::<i32>("RLE INT32 column", data, count, v)
        }
        (Encoding::RLE, Column::Int64(v)) => {
            rle::decode_into::<i64>("RLE INT64 column", data, count, v)
        }
        (Encoding::TS_2DIFF, Column::Int32(v)) => {
            ts2diff::decode_into::<i32>("TS_2DIFF INT32 column", data, Some(count), v)
        }
        (Encoding::TS_2DIFF, Column::Int64(v)) => {
            ts2diff::decode_into::<i64>("TS_2DIFF INT64 column", data, Some(count), v)
        }
        (Encoding::GORILLA, Column::Float(v)) => gorilla::decode_f32(data, count, v),
        (Encoding::GORILLA, Column::Double(v)) => gorilla::decode_f64(data, count, v),
        (e @ (Encoding::RLE | Encoding::TS_2DIFF), Column::Float(v)) => {
            float::decode_f32(e, data, count, v)
        }
        (e @ (Encoding::RLE | Encoding::TS_2DIFF), Column::Double(v)) => {
            float::decode_f64(e, data, count, v)
        }
        (e, _) => Err(Error::unsupported(format!(
            "decoding {e} {data_type} is not implemented yet"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factory_refuses_what_java_refuses() {
        for e in Encoding::ALL {
            for t in DataType::ALL {
                let r = get_encoder(*e, *t, DEFAULT_FLOAT_PRECISION);
                if !e.supports(*t) {
                    assert!(matches!(r, Err(Error::Unsupported(_))), "{e} {t}");
                }
            }
        }
        assert!(get_encoder(Encoding::PLAIN, DataType::TEXT, 2).is_ok());
        assert!(get_encoder(Encoding::TS_2DIFF, DataType::INT64, 2).is_ok());
    }

    #[test]
    fn time_column_round_trip() {
        let mut e = time_encoder();
        let mut out = Vec::new();
        for t in [1_593_302_400_000i64, 1_593_302_401_003, 1_593_302_402_017] {
            e.encode_i64(t, &mut out).unwrap();
        }
        e.flush(&mut out).unwrap();
        let mut back = Vec::new();
        decode_times(&out, &mut back).unwrap();
        assert_eq!(
            back,
            [1_593_302_400_000, 1_593_302_401_003, 1_593_302_402_017]
        );
    }

    #[test]
    fn decode_values_checks_the_column_type() {
        let mut c = Column::new(DataType::INT32);
        assert!(decode_values(Encoding::PLAIN, DataType::INT64, &[0; 8], 1, &mut c).is_err());
        assert!(decode_values(Encoding::GORILLA, DataType::INT32, &[0; 8], 1, &mut c).is_err());
        decode_values(Encoding::PLAIN, DataType::INT32, &[0, 0, 0, 7], 1, &mut c).unwrap();
        assert_eq!(c, Column::Int32(vec![7]));
    }
}
