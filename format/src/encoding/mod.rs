//! Value and time encodings, one module per encoding with encoder and decoder side by
//! side (spec §6). [`get_encoder`] and [`decode_values`] are the factories the file
//! writer and reader use.
//!
//! Encoders mirror Java's `Encoder`: values are pushed one at a time into an output
//! buffer (the page's column stream); [`Encoder::flush`] ends the page and resets the
//! logical state; [`Encoder::max_byte_size`] is Java's `getMaxByteSize`, used by the
//! page-sealing rule.

use crate::basic::{Column, DataType, Encoding};
#[cfg(test)]
use crate::basic::{Compression, Value};
use crate::errors::{Error, Result};

pub mod bitpack;
pub mod chimp;
pub mod dictionary;
pub mod float;
pub mod gorilla;
pub mod gorilla_v2;
pub mod plain;
pub mod regular;
pub mod rlbe;
pub mod rle;
pub mod sprintz;
pub mod ts2diff;
pub mod zigzag;

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
    /// Encodes BOOLEAN values in order, as one [`Encoder::encode_bool`] call each.
    /// On a refusal the values before the refused one stay encoded; their number
    /// comes with the error. (The same holds for the other `encode_*s` methods.)
    fn encode_bools(&mut self, v: &[bool], out: &mut Vec<u8>) -> BatchResult {
        each(v, |x| self.encode_bool(x, out))
    }
    /// Encodes INT32 values in order (see [`Encoder::encode_bools`]).
    fn encode_i32s(&mut self, v: &[i32], out: &mut Vec<u8>) -> BatchResult {
        each(v, |x| self.encode_i32(x, out))
    }
    /// Encodes INT64 values in order (see [`Encoder::encode_bools`]).
    fn encode_i64s(&mut self, v: &[i64], out: &mut Vec<u8>) -> BatchResult {
        each(v, |x| self.encode_i64(x, out))
    }
    /// Encodes FLOAT values in order (see [`Encoder::encode_bools`]).
    fn encode_f32s(&mut self, v: &[f32], out: &mut Vec<u8>) -> BatchResult {
        each(v, |x| self.encode_f32(x, out))
    }
    /// Encodes DOUBLE values in order (see [`Encoder::encode_bools`]).
    fn encode_f64s(&mut self, v: &[f64], out: &mut Vec<u8>) -> BatchResult {
        each(v, |x| self.encode_f64(x, out))
    }
    /// Ends the page: writes everything still buffered and resets the logical state.
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()>;
    /// Java's `getMaxByteSize()`: the bytes still held inside the encoder, as Java
    /// estimates them (spec §6.8).
    fn max_byte_size(&self) -> usize;
}

/// What the `encode_*s` methods of [`Encoder`] return: on a refusal, the number of
/// values encoded before the refused one, and the refusal.
pub type BatchResult = std::result::Result<(), (usize, Error)>;

/// Calls `f` on each value in order, stopping at the first refusal.
#[inline]
fn each<T: Copy>(v: &[T], mut f: impl FnMut(T) -> Result<()>) -> BatchResult {
    for (k, x) in v.iter().enumerate() {
        f(*x).map_err(|e| (k, e))?;
    }
    Ok(())
}

/// The encoder the 0.10 writer uses for `encoding` of `data_type`.
///
/// `float_precision` is `max_point_number` for FLOAT/DOUBLE under RLE or TS_2DIFF.
/// Combinations the 0.10 writer refuses give [`Error::Unsupported`].
///
/// Two encoders refuse individual values with [`Error::InvalidInput`], leaving their
/// state unchanged: GORILLA refuses NaN (its end-of-page marker, see [`gorilla`]) and
/// REGULAR refuses any value after which the block would not decode back exactly with
/// Java's reader (see [`regular`]).
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
        (Encoding::RLE | Encoding::TS_2DIFF, FLOAT | DOUBLE) => {
            float::encoder(encoding, data_type, float_precision)?
        }
        (Encoding::GORILLA, FLOAT) => Box::new(gorilla::GorillaEncoder::single()),
        (Encoding::GORILLA, DOUBLE) => Box::new(gorilla::GorillaEncoder::double()),
        (Encoding::REGULAR, INT32) => Box::new(regular::IntRegularEncoder::new()),
        (Encoding::REGULAR, INT64) => Box::new(regular::LongRegularEncoder::new()),
        (Encoding::TS_2DIFF, INT32) => Box::new(ts2diff::IntDeltaEncoder::new()),
        (Encoding::TS_2DIFF, INT64) => Box::new(ts2diff::LongDeltaEncoder::new()),
        (e, t) => {
            return Err(Error::unsupported(format!(
                "encoding {e} cannot encode {t}"
            )))
        }
    })
}

/// The encoder format v4 (TsFile 2.x) uses for `encoding` of the storage type
/// `data_type` (DATE as INT32, TIMESTAMP as INT64, STRING and BLOB as TEXT; see
/// [`Encoding::supports_v4`]). FLOAT/DOUBLE under TS_2DIFF use `float_precision`.
///
/// Pairs format v4 does not have give [`Error::Unsupported`]. GORILLA (v4) and CHIMP
/// refuse their end-of-page marker values, SPRINTZ refuses NaN (its last values may go
/// through GORILLA), with [`Error::InvalidInput`] and the encoder unchanged.
pub fn get_encoder_v4(
    encoding: Encoding,
    data_type: DataType,
    float_precision: u32,
) -> Result<Box<dyn Encoder>> {
    use DataType::*;
    if !encoding.supports_v4(data_type) {
        return Err(Error::unsupported(format!(
            "format v4 has no encoding {} for {data_type}",
            encoding.v4_name()
        )));
    }
    Ok(match (encoding, data_type) {
        (Encoding::PLAIN, t) => Box::new(plain::PlainEncoder::v4(t)),
        (Encoding::PLAIN_DICTIONARY, TEXT) => Box::new(dictionary::DictionaryEncoder::new()),
        (Encoding::RLE, INT32) => Box::new(rle::IntRleEncoder::new()),
        (Encoding::RLE, INT64) => Box::new(rle::LongRleEncoder::new()),
        (Encoding::TS_2DIFF, INT32) => Box::new(ts2diff::IntDeltaEncoder::new()),
        (Encoding::TS_2DIFF, INT64) => Box::new(ts2diff::LongDeltaEncoder::new()),
        (Encoding::TS_2DIFF, FLOAT | DOUBLE) => {
            float::encoder(encoding, data_type, float_precision)?
        }
        (Encoding::GORILLA_V2, INT32) => Box::new(gorilla_v2::GorillaV2Encoder::int32()),
        (Encoding::GORILLA_V2, INT64) => Box::new(gorilla_v2::GorillaV2Encoder::int64()),
        (Encoding::GORILLA_V2, FLOAT) => Box::new(gorilla_v2::GorillaV2Encoder::float()),
        (Encoding::GORILLA_V2, DOUBLE) => Box::new(gorilla_v2::GorillaV2Encoder::double()),
        (Encoding::CHIMP, INT32) => Box::new(chimp::ChimpEncoder::int32()),
        (Encoding::CHIMP, INT64) => Box::new(chimp::ChimpEncoder::int64()),
        (Encoding::CHIMP, FLOAT) => Box::new(chimp::ChimpEncoder::float()),
        (Encoding::CHIMP, DOUBLE) => Box::new(chimp::ChimpEncoder::double()),
        (Encoding::RLBE, INT32) => Box::new(rlbe::RlbeEncoder::int32()),
        (Encoding::RLBE, INT64) => Box::new(rlbe::RlbeEncoder::int64()),
        (Encoding::RLBE, FLOAT) => Box::new(rlbe::RlbeEncoder::float()),
        (Encoding::RLBE, DOUBLE) => Box::new(rlbe::RlbeEncoder::double()),
        (Encoding::SPRINTZ, INT32) => Box::new(sprintz::SprintzEncoder::int32()),
        (Encoding::SPRINTZ, INT64) => Box::new(sprintz::SprintzEncoder::int64()),
        (Encoding::SPRINTZ, FLOAT) => Box::new(sprintz::SprintzEncoder::float()),
        (Encoding::SPRINTZ, DOUBLE) => Box::new(sprintz::SprintzEncoder::double()),
        (Encoding::ZIGZAG, INT32) => Box::new(zigzag::ZigzagEncoder::int32()),
        (Encoding::ZIGZAG, INT64) => Box::new(zigzag::ZigzagEncoder::int64()),
        (e, t) => {
            return Err(Error::unsupported(format!(
                "encoding {} of {t} is not implemented for format v4 yet",
                e.v4_name()
            )))
        }
    })
}

/// Decodes exactly `count` values of a format v4 page's value column (storage type
/// `data_type`, see [`get_encoder_v4`]) into `out`.
pub fn decode_values_v4(
    encoding: Encoding,
    data_type: DataType,
    data: &[u8],
    count: usize,
    out: &mut Column,
) -> Result<()> {
    if out.data_type() != data_type {
        return Err(Error::invalid(format!(
            "decode_values_v4: a {data_type} column was expected, got a {} column",
            out.data_type()
        )));
    }
    if !encoding.supports_v4(data_type) {
        return Err(Error::unsupported(format!(
            "format v4 has no encoding {} for {data_type}",
            encoding.v4_name()
        )));
    }
    match (encoding, out) {
        (Encoding::PLAIN, out) => plain::decode_v4(data, count, out),
        (Encoding::PLAIN_DICTIONARY, Column::Text(v)) => dictionary::decode(data, count, v),
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
        (Encoding::TS_2DIFF, Column::Float(v)) => float::decode_f32(encoding, data, count, v),
        (Encoding::TS_2DIFF, Column::Double(v)) => float::decode_f64(encoding, data, count, v),
        (Encoding::GORILLA_V2, Column::Int32(v)) => gorilla_v2::decode_i32(data, count, v),
        (Encoding::GORILLA_V2, Column::Int64(v)) => gorilla_v2::decode_i64(data, count, v),
        (Encoding::GORILLA_V2, Column::Float(v)) => gorilla_v2::decode_f32(data, count, v),
        (Encoding::GORILLA_V2, Column::Double(v)) => gorilla_v2::decode_f64(data, count, v),
        (Encoding::CHIMP, Column::Int32(v)) => chimp::decode_i32(data, count, v),
        (Encoding::CHIMP, Column::Int64(v)) => chimp::decode_i64(data, count, v),
        (Encoding::CHIMP, Column::Float(v)) => chimp::decode_f32(data, count, v),
        (Encoding::CHIMP, Column::Double(v)) => chimp::decode_f64(data, count, v),
        (Encoding::RLBE, Column::Int32(v)) => rlbe::decode_i32(data, count, v),
        (Encoding::RLBE, Column::Int64(v)) => rlbe::decode_i64(data, count, v),
        (Encoding::RLBE, Column::Float(v)) => rlbe::decode_f32(data, count, v),
        (Encoding::RLBE, Column::Double(v)) => rlbe::decode_f64(data, count, v),
        (Encoding::SPRINTZ, Column::Int32(v)) => sprintz::decode_i32(data, count, v),
        (Encoding::SPRINTZ, Column::Int64(v)) => sprintz::decode_i64(data, count, v),
        (Encoding::SPRINTZ, Column::Float(v)) => sprintz::decode_f32(data, count, v),
        (Encoding::SPRINTZ, Column::Double(v)) => sprintz::decode_f64(data, count, v),
        (Encoding::ZIGZAG, Column::Int32(v)) => zigzag::decode_i32(data, count, v),
        (Encoding::ZIGZAG, Column::Int64(v)) => zigzag::decode_i64(data, count, v),
        (e, _) => Err(Error::unsupported(format!(
            "encoding {} of {data_type} is not implemented for format v4 yet",
            e.v4_name()
        ))),
    }
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
/// time column) never reads them. Values are those the Java 0.10 reader returns, also
/// in its odd corners: GORILLA past an end marker (a NaN) and REGULAR bitmaps are
/// emulated exactly (see [`gorilla`], [`regular`]). Malformed streams give
/// [`Error::Decode`] with the offset inside `data`.
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
        (Encoding::REGULAR, Column::Int32(v)) => {
            regular::decode_into::<i32>("REGULAR INT32 column", data, count, v)
        }
        (Encoding::REGULAR, Column::Int64(v)) => {
            regular::decode_into::<i64>("REGULAR INT64 column", data, count, v)
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
            "encoding {e} cannot decode {data_type}"
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

    /// A value of another type is refused (the trait's defaults) and writes nothing.
    #[test]
    fn encoders_refuse_values_of_other_types() {
        let mut out = Vec::new();
        let unsupported = |r: Result<()>| matches!(r, Err(Error::Unsupported(_)));
        let mut g = get_encoder(Encoding::GORILLA, DataType::FLOAT, 2).unwrap();
        assert!(unsupported(g.encode_bool(true, &mut out)));
        assert!(unsupported(g.encode_i32(1, &mut out)));
        assert!(unsupported(g.encode_i64(1, &mut out)));
        assert!(unsupported(g.encode_binary(b"x", &mut out)));
        let mut r = get_encoder(Encoding::RLE, DataType::INT32, 2).unwrap();
        assert!(unsupported(r.encode_f64(1.0, &mut out)));
        assert!(out.is_empty());
    }

    /// The default run methods encode as one call per value (PLAIN, big-endian, spec
    /// §6.1) and stop at the first refusal with the number of values before it.
    #[test]
    fn default_runs_encode_each_value_in_order() {
        let mut out = Vec::new();
        let mut e = get_encoder(Encoding::PLAIN, DataType::BOOLEAN, 2).unwrap();
        e.encode_bools(&[true, false, true], &mut out).unwrap();
        assert_eq!(out, [1, 0, 1]);
        let mut out = Vec::new();
        let mut e = get_encoder(Encoding::PLAIN, DataType::INT32, 2).unwrap();
        e.encode_i32s(&[1, -2], &mut out).unwrap();
        assert_eq!(out, [0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe]);
        let mut out = Vec::new();
        let mut e = get_encoder(Encoding::PLAIN, DataType::INT64, 2).unwrap();
        e.encode_i64s(&[258], &mut out).unwrap();
        assert_eq!(out, [0, 0, 0, 0, 0, 0, 1, 2]);
        let mut out = Vec::new();
        let mut e = get_encoder(Encoding::PLAIN, DataType::FLOAT, 2).unwrap();
        e.encode_f32s(&[1.0], &mut out).unwrap();
        assert_eq!(out, [0x3f, 0x80, 0, 0]);
        let mut out = Vec::new();
        let mut e = get_encoder(Encoding::PLAIN, DataType::DOUBLE, 2).unwrap();
        e.encode_f64s(&[-2.0], &mut out).unwrap();
        assert_eq!(out, [0xc0, 0, 0, 0, 0, 0, 0, 0]);
        // A value of another type: refused at 0, nothing written; an empty run is fine.
        assert!(matches!(
            e.encode_i64s(&[1, 2], &mut out),
            Err((0, Error::Unsupported(_)))
        ));
        assert!(e.encode_i64s(&[], &mut out).is_ok());
        assert_eq!(out, [0xc0, 0, 0, 0, 0, 0, 0, 0]);
        // The RLE INT32 encoder (BOOLEAN's too) takes booleans, not floats.
        let mut r = get_encoder(Encoding::RLE, DataType::INT32, 2).unwrap();
        assert!(matches!(
            r.encode_f32s(&[1.0], &mut out),
            Err((0, Error::Unsupported(_)))
        ));
        assert!(matches!(r.encode_bools(&[true], &mut out), Ok(())));
    }

    /// A refusal inside a run of the default method: the count of the values before it.
    #[test]
    fn default_run_reports_where_it_stopped() {
        struct Picky(Vec<i32>);
        impl Encoder for Picky {
            fn encode_i32(&mut self, v: i32, _out: &mut Vec<u8>) -> Result<()> {
                if v < 0 {
                    return Err(Error::invalid("negative"));
                }
                self.0.push(v);
                Ok(())
            }
            fn flush(&mut self, _out: &mut Vec<u8>) -> Result<()> {
                Ok(())
            }
            fn max_byte_size(&self) -> usize {
                0
            }
        }
        let mut p = Picky(Vec::new());
        let r = p.encode_i32s(&[4, 5, -1, 6], &mut Vec::new());
        assert!(matches!(r, Err((2, Error::InvalidInput(_)))), "{r:?}");
        assert_eq!(p.0, [4, 5]);
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

    proptest::proptest! {
        #[test]
        fn every_decoder_survives_random_bytes(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80),
            count in 0usize..200,
        ) {
            for e in Encoding::ALL {
                for t in DataType::ALL {
                    let mut c = Column::new(*t);
                    let r = decode_values(*e, *t, &data, count, &mut c);
                    if r.is_ok() {
                        proptest::prop_assert_eq!(c.len(), count);
                    }
                }
            }
            let _ = decode_times(&data, &mut Vec::new());
        }

        #[test]
        fn every_v4_decoder_survives_random_bytes(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80),
            count in 0usize..200,
        ) {
            for e in Encoding::ALL {
                for t in DataType::ALL {
                    let mut c = Column::new(*t);
                    let r = decode_values_v4(*e, *t, &data, count, &mut c);
                    if r.is_ok() {
                        proptest::prop_assert_eq!(c.len(), count);
                    }
                }
            }
        }

        #[test]
        fn every_v4_encoder_round_trips(
            ints in proptest::collection::vec(proptest::prelude::any::<i64>(), 1..300),
        ) {
            for e in Encoding::ALL {
                // storage types only (v4-only logical types are stored as these)
                for t in DataType::ALL.iter().filter(|t| t.in_v2()) {
                    let Ok(mut enc) = get_encoder_v4(*e, *t, DEFAULT_FLOAT_PRECISION) else {
                        continue;
                    };
                    let lossy = *e == Encoding::TS_2DIFF && matches!(t, DataType::FLOAT | DataType::DOUBLE);
                    let mut want = Column::new(*t);
                    let mut out = Vec::new();
                    for x in &ints {
                        let v = match t {
                            DataType::BOOLEAN => Value::Boolean(x & 1 == 1),
                            DataType::INT32 => Value::Int32(*x as i32),
                            DataType::INT64 => Value::Int64(*x),
                            DataType::FLOAT if lossy => Value::Float((*x % 1000) as f32 / 4.0),
                            DataType::DOUBLE if lossy => Value::Double((*x % 100000) as f64 / 4.0),
                            DataType::FLOAT => Value::Float(f32::from_bits(*x as u32)),
                            DataType::DOUBLE => Value::Double(f64::from_bits(*x as u64)),
                            _ => Value::Text(x.to_string().into_bytes()),
                        };
                        let r = match &v {
                            Value::Boolean(b) => enc.encode_bool(*b, &mut out),
                            Value::Int32(b) => enc.encode_i32(*b, &mut out),
                            Value::Int64(b) => enc.encode_i64(*b, &mut out),
                            Value::Float(b) => enc.encode_f32(*b, &mut out),
                            Value::Double(b) => enc.encode_f64(*b, &mut out),
                            Value::Text(b) => enc.encode_binary(b, &mut out),
                        };
                        // Refused values (end markers, NaN) leave the encoder unchanged.
                        if r.is_ok() {
                            want.push(v).unwrap();
                        }
                    }
                    enc.flush(&mut out).unwrap();
                    let mut back = Column::new(*t);
                    decode_values_v4(*e, *t, &out, want.len(), &mut back).unwrap();
                    for i in 0..want.len() {
                        let (b, w) = (back.get(i).unwrap(), want.get(i).unwrap());
                        // PLAIN writes NaN as Java's canonical NaN.
                        let both_nan = matches!((&b, &w), (Value::Float(x), Value::Float(y)) if x.is_nan() && y.is_nan())
                            || matches!((&b, &w), (Value::Double(x), Value::Double(y)) if x.is_nan() && y.is_nan());
                        proptest::prop_assert!(
                            both_nan || b.bit_eq(&w),
                            "{} {t} value {i}", e.v4_name()
                        );
                    }
                }
            }
        }
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

/// Byte identity and decoding against the golden files of the Java 0.10 writer
/// (`format/tests/fixtures`): every page of every chunk is decoded, compared with the
/// Java reader's dump, then re-encoded with one encoder pair per chunk (as the Java
/// chunk writer does) and compared byte for byte with the page body.
#[cfg(test)]
mod golden {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn fixtures() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
    }

    struct Cur<'a> {
        b: &'a [u8],
        p: usize,
    }

    impl<'a> Cur<'a> {
        fn take(&mut self, n: usize) -> &'a [u8] {
            let s = &self.b[self.p..self.p + n];
            self.p += n;
            s
        }
        fn u8(&mut self) -> u8 {
            self.take(1)[0]
        }
        fn i16(&mut self) -> i16 {
            i16::from_be_bytes(self.take(2).try_into().unwrap())
        }
        fn i32(&mut self) -> i32 {
            i32::from_be_bytes(self.take(4).try_into().unwrap())
        }
        fn string(&mut self) -> String {
            let n = self.i32() as usize;
            String::from_utf8(self.take(n).to_vec()).unwrap()
        }
    }

    struct Page {
        times: Vec<u8>,
        values: Vec<u8>,
    }

    struct Chunk {
        measurement: String,
        data_type: DataType,
        encoding: Encoding,
        pages: Vec<Page>,
    }

    /// Walks the data section: (device, chunk) in file order.
    fn chunks(file: &[u8]) -> Vec<(String, Chunk)> {
        let mut c = Cur { b: file, p: 12 };
        let mut out = Vec::new();
        let mut group = Vec::new();
        loop {
            match c.u8() {
                1 => {
                    let measurement = c.string();
                    let size = c.i32() as usize;
                    let data_type = DataType::from_code(c.i16()).unwrap();
                    let _pages = c.i32();
                    let compression = Compression::from_code(c.i16()).unwrap();
                    let encoding = Encoding::from_code(c.i16()).unwrap();
                    let end = c.p + size;
                    let mut pages = Vec::new();
                    while c.p < end {
                        let _uncompressed = c.i32();
                        let compressed = c.i32() as usize;
                        let stats = match data_type {
                            DataType::TEXT => {
                                c.take(24);
                                let n = c.i32() as usize;
                                c.take(n);
                                let n = c.i32() as usize;
                                c.take(n);
                                0
                            }
                            t => t.fixed_statistics_size(),
                        };
                        c.take(stats);
                        let raw = c.take(compressed);
                        let body = match compression {
                            Compression::UNCOMPRESSED => raw.to_vec(),
                            Compression::SNAPPY => {
                                snap::raw::Decoder::new().decompress_vec(raw).unwrap()
                            }
                            other => panic!("{other}"),
                        };
                        let mut r = crate::util::io::ByteReader::new(&body, 0);
                        let tlen = r.read_uvarint("time length").unwrap() as usize;
                        let rest = r.rest();
                        pages.push(Page {
                            times: rest[..tlen].to_vec(),
                            values: rest[tlen..].to_vec(),
                        });
                    }
                    group.push(Chunk {
                        measurement,
                        data_type,
                        encoding,
                        pages,
                    });
                }
                0 => {
                    let device = c.string();
                    c.take(12);
                    for ch in group.drain(..) {
                        out.push((device.clone(), ch));
                    }
                }
                3 => {
                    c.take(8);
                }
                2 => return out,
                m => panic!("unexpected marker {m} at {}", c.p - 1),
            }
        }
    }

    fn escape(s: &str) -> String {
        let mut o = String::new();
        for ch in s.chars() {
            match ch {
                '\\' => o.push_str("\\\\"),
                '\t' => o.push_str("\\t"),
                '\n' => o.push_str("\\n"),
                '\r' => o.push_str("\\r"),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                    o.push_str(&format!("\\u{:04X}", c as u32))
                }
                c => o.push(c),
            }
        }
        o
    }

    /// Whether a decoded value equals the dump's text (floats compared bitwise after
    /// parsing the shortest representation).
    fn same(v: &Value, text: &str) -> bool {
        match v {
            Value::Boolean(b) => text == if *b { "true" } else { "false" },
            Value::Int32(x) => text == x.to_string(),
            Value::Int64(x) => text == x.to_string(),
            Value::Float(x) => match text.parse::<f32>() {
                Ok(p) if p.is_nan() => x.is_nan(),
                Ok(p) => p.to_bits() == x.to_bits(),
                Err(_) => false,
            },
            Value::Double(x) => match text.parse::<f64>() {
                Ok(p) if p.is_nan() => x.is_nan(),
                Ok(p) => p.to_bits() == x.to_bits(),
                Err(_) => false,
            },
            Value::Text(b) => escape(&String::from_utf8_lossy(b)) == text,
        }
    }

    fn encode_value(e: &mut dyn Encoder, v: &Value, out: &mut Vec<u8>) -> Result<()> {
        match v {
            Value::Boolean(x) => e.encode_bool(*x, out),
            Value::Int32(x) => e.encode_i32(*x, out),
            Value::Int64(x) => e.encode_i64(*x, out),
            Value::Float(x) => e.encode_f32(*x, out),
            Value::Double(x) => e.encode_f64(*x, out),
            Value::Text(x) => e.encode_binary(x, out),
        }
    }

    /// Checks one fixture; returns the number of pages checked.
    fn check_file(name: &str) -> usize {
        let dir = fixtures();
        let file = std::fs::read(dir.join(format!("{name}.tsfile"))).unwrap();
        let tsv = std::fs::read_to_string(dir.join(format!("{name}.expected.tsv"))).unwrap();
        let mut expected: BTreeMap<(String, String), Vec<(i64, String)>> = BTreeMap::new();
        for line in tsv.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            expected
                .entry((f[0].to_string(), f[1].to_string()))
                .or_default()
                .push((f[3].parse().unwrap(), f[4].to_string()));
        }
        let mut decoded: BTreeMap<(String, String), Vec<(i64, Value)>> = BTreeMap::new();
        let mut npages = 0;
        let mut gapped_regular = 0;
        for (device, ch) in chunks(&file) {
            let mut venc = get_encoder(ch.encoding, ch.data_type, DEFAULT_FLOAT_PRECISION)
                .unwrap_or_else(|e| panic!("{name} {}: {e}", ch.measurement));
            let mut tenc = time_encoder();
            let series = decoded
                .entry((escape(&device), escape(&ch.measurement)))
                .or_default();
            for (pi, page) in ch.pages.iter().enumerate() {
                let ctx = format!("{name} {device}.{} page {pi}", ch.measurement);
                let mut times = Vec::new();
                decode_times(&page.times, &mut times).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                let mut col = Column::new(ch.data_type);
                decode_values(
                    ch.encoding,
                    ch.data_type,
                    &page.values,
                    times.len(),
                    &mut col,
                )
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert_eq!(col.len(), times.len(), "{ctx}");
                let (mut tout, mut vout) = (Vec::new(), Vec::new());
                for (i, t) in times.iter().enumerate() {
                    let v = col.get(i).unwrap();
                    tenc.encode_i64(*t, &mut tout).unwrap();
                    encode_value(venc.as_mut(), &v, &mut vout)
                        .unwrap_or_else(|e| panic!("{ctx} value {i}: {e}"));
                    series.push((*t, v));
                }
                tenc.flush(&mut tout).unwrap();
                venc.flush(&mut vout).unwrap();
                assert_eq!(tout, page.times, "{ctx}: time column bytes");
                assert_eq!(
                    vout, page.values,
                    "{ctx}: value column bytes ({})",
                    ch.encoding
                );
                npages += 1;
                if ch.encoding == Encoding::REGULAR && page.values.first() == Some(&1) {
                    gapped_regular += 1;
                }
            }
        }
        if name.contains("regular") {
            assert!(gapped_regular >= 2, "{name}: pages with missing points");
        }
        assert_eq!(
            decoded.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{name}: series"
        );
        for (k, mut pts) in decoded {
            pts.sort_by_key(|p| p.0);
            let want = &expected[&k];
            assert_eq!(pts.len(), want.len(), "{name} {k:?}");
            for (i, ((t, v), (wt, wv))) in pts.iter().zip(want).enumerate() {
                assert_eq!(t, wt, "{name} {k:?} point {i}");
                assert!(
                    same(v, wv),
                    "{name} {k:?} point {i}: decoded {v:?}, Java read {wv}"
                );
            }
        }
        npages
    }

    #[test]
    fn every_fixture_decodes_and_reencodes_byte_identically() {
        let mut names: Vec<String> = std::fs::read_dir(fixtures())
            .unwrap()
            .filter_map(|e| {
                let n = e.unwrap().file_name().into_string().unwrap();
                n.strip_suffix(".tsfile").map(str::to_string)
            })
            .collect();
        names.sort();
        assert_eq!(names.len(), 56);
        let mut pages = 0;
        for n in &names {
            pages += check_file(n);
        }
        assert!(pages > 500, "{pages}");
    }
}

/// Format v4 page bytes written by the Apache TsFile 2.5 C++ library (PyPI `tsfile`
/// 2.5.0, `format/tests/fixtures/v4`, see its README): every single-series `enc_*`
/// file's page is decoded and compared with the library's dump, re-encoded and
/// compared byte for byte, and every compressed twin decompresses to the same page
/// body.
#[cfg(test)]
mod golden_v4 {
    use super::*;
    use crate::compression::{compress_v4, decompress_v4};
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    fn dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v4")
    }

    struct Cur<'a> {
        b: &'a [u8],
        p: usize,
    }

    impl Cur<'_> {
        fn u8(&mut self) -> u8 {
            self.p += 1;
            self.b[self.p - 1]
        }
        fn uvar(&mut self) -> usize {
            let (mut v, mut s) = (0usize, 0);
            loop {
                let b = self.u8();
                v |= ((b & 0x7f) as usize) << s;
                s += 7;
                if b & 0x80 == 0 {
                    return v;
                }
            }
        }
        fn var_str(&mut self) -> String {
            let z = self.uvar() as u32;
            let n = ((z >> 1) as i32 ^ -((z & 1) as i32)) as usize;
            self.p += n;
            String::from_utf8(self.b[self.p - n..self.p].to_vec()).unwrap()
        }
    }

    /// The one single-page chunk of a single-series file: (type code, encoding code,
    /// compression code, uncompressed size, stored page bytes).
    fn only_page(file: &[u8]) -> (u8, u8, u8, usize, Vec<u8>) {
        assert_eq!(&file[..7], b"TsFile\x04");
        let mut c = Cur { b: file, p: 7 };
        assert_eq!(c.u8(), 0, "chunk group header");
        for _ in 0..c.uvar() {
            c.var_str();
        }
        assert_eq!(c.u8(), 5, "a single-page chunk header");
        c.var_str();
        let _data_size = c.uvar();
        let (t, comp, enc) = (c.u8(), c.u8(), c.u8());
        let usize_ = c.uvar();
        let csize = c.uvar();
        let body = file[c.p..c.p + csize].to_vec();
        (t, enc, comp, usize_, body)
    }

    fn storage(type_code: u8) -> DataType {
        match type_code {
            8 => DataType::INT64,
            9 => DataType::INT32,
            10 | 11 => DataType::TEXT,
            c => DataType::from_code(c as i16).unwrap(),
        }
    }

    fn text(type_code: u8, v: &Value) -> String {
        match (type_code, v) {
            (9, Value::Int32(d)) => format!("{:04}-{:02}-{:02}", d / 10000, d / 100 % 100, d % 100),
            (10, Value::Text(b)) => {
                format!(
                    "0x{}",
                    b.iter().map(|x| format!("{x:02x}")).collect::<String>()
                )
            }
            (_, Value::Text(b)) => {
                let mut o = String::new();
                for ch in String::from_utf8_lossy(b).chars() {
                    match ch {
                        '\\' => o.push_str("\\\\"),
                        '\t' => o.push_str("\\t"),
                        '\n' => o.push_str("\\n"),
                        '\r' => o.push_str("\\r"),
                        c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                            o.push_str(&format!("\\u{:04X}", c as u32))
                        }
                        c => o.push(c),
                    }
                }
                o
            }
            (_, Value::Boolean(b)) => b.to_string(),
            (_, Value::Int32(x)) => x.to_string(),
            (_, Value::Int64(x)) => x.to_string(),
            _ => unreachable!(),
        }
    }

    fn same(type_code: u8, v: &Value, want: &str) -> bool {
        match v {
            Value::Float(x) => want
                .parse::<f32>()
                .map(|p| p.to_bits() == x.to_bits())
                .unwrap_or(false),
            Value::Double(x) => want
                .parse::<f64>()
                .map(|p| p.to_bits() == x.to_bits())
                .unwrap_or(false),
            v => text(type_code, v) == want,
        }
    }

    fn encode_value(e: &mut dyn Encoder, v: &Value, out: &mut Vec<u8>) -> Result<()> {
        match v {
            Value::Boolean(x) => e.encode_bool(*x, out),
            Value::Int32(x) => e.encode_i32(*x, out),
            Value::Int64(x) => e.encode_i64(*x, out),
            Value::Float(x) => e.encode_f32(*x, out),
            Value::Double(x) => e.encode_f64(*x, out),
            Value::Text(x) => e.encode_binary(x, out),
        }
    }

    /// Checks one uncompressed single-series file; returns its (type, encoding) names.
    fn check(name: &str) -> (String, String) {
        let d = dir();
        let file = std::fs::read(d.join(format!("{name}.tsfile"))).unwrap();
        let tsv = std::fs::read_to_string(d.join(format!("{name}.expected.tsv"))).unwrap();
        let want: Vec<(i64, String, String)> = tsv
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f[3].parse().unwrap(), f[4].to_string(), f[2].to_string())
            })
            .collect();
        let (tcode, ecode, ccode, usize_, body) = only_page(&file);
        assert_eq!(ccode, 0, "{name}");
        assert_eq!(body.len(), usize_, "{name}");
        let t = storage(tcode);
        let e = Encoding::from_code(ecode as i16).unwrap();
        let pair = (want[0].2.clone(), e.v4_name().to_string());
        let mut r = crate::util::io::ByteReader::new(&body, 0);
        let tlen = r.read_uvarint("time length").unwrap() as usize;
        let (tbytes, vbytes) = r.rest().split_at(tlen);
        let mut times = Vec::new();
        decode_times(tbytes, &mut times).unwrap();
        assert_eq!(
            times,
            want.iter().map(|w| w.0).collect::<Vec<_>>(),
            "{name}"
        );
        let mut venc = get_encoder_v4(e, t, DEFAULT_FLOAT_PRECISION)
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let mut col = Column::new(t);
        decode_values_v4(e, t, vbytes, times.len(), &mut col)
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let mut again = Vec::new();
        for (i, w) in want.iter().enumerate() {
            let v = col.get(i).unwrap();
            assert!(
                same(tcode, &v, &w.1),
                "{name} point {i}: decoded {v:?}, library read {}",
                w.1
            );
            encode_value(venc.as_mut(), &v, &mut again).unwrap();
        }
        venc.flush(&mut again).unwrap();
        if e == Encoding::SPRINTZ && matches!(t, DataType::INT64 | DataType::DOUBLE) {
            // The C++ writer packs blocks whose 64-bit predictions the Java reader makes
            // differently; ours writes those as short blocks: compare the values.
            let misread =
                sprintz::java_misread_blocks(t == DataType::DOUBLE, vbytes, times.len()).unwrap();
            let ours =
                sprintz::java_misread_blocks(t == DataType::DOUBLE, &again, times.len()).unwrap();
            assert_eq!(ours, 0, "{name}: we write no block Java misreads");
            if misread == 0 {
                assert_eq!(again, vbytes, "{name}: re-encoded value bytes");
            }
            let mut back = Column::new(t);
            decode_values_v4(e, t, &again, times.len(), &mut back).unwrap();
            assert_eq!(back, col, "{name}: our re-encoding");
        } else {
            assert_eq!(again, vbytes, "{name}: re-encoded value bytes");
        }
        if !name.ends_with("_uncompressed") {
            return pair;
        }
        // Every compressed twin holds the same page body.
        for codec in [
            crate::basic::Compression::SNAPPY,
            crate::basic::Compression::GZIP,
            crate::basic::Compression::LZ4,
            crate::basic::Compression::ZSTD,
        ] {
            let twin = name.replace(
                "_uncompressed",
                &format!("_{}", codec.name().to_lowercase()),
            );
            let f = std::fs::read(d.join(format!("{twin}.tsfile"))).unwrap();
            let (_, _, cc, us, stored) = only_page(&f);
            assert_eq!(cc as i16, codec.code(), "{twin}");
            assert_eq!(us, body.len(), "{twin}");
            let plain =
                decompress_v4(codec, &stored, us, 0).unwrap_or_else(|e| panic!("{twin}: {e}"));
            assert_eq!(plain, body, "{twin}: decompressed page body");
            let mut ours = Vec::new();
            compress_v4(codec, &body, &mut ours).unwrap();
            assert_eq!(
                decompress_v4(codec, &ours, us, 0).unwrap(),
                body,
                "{twin}: our frame"
            );
        }
        pair
    }

    #[test]
    fn library_pages_decode_and_reencode_byte_identically() {
        let mut names: Vec<String> = std::fs::read_dir(dir())
            .unwrap()
            .filter_map(|e| {
                let n = e.unwrap().file_name().into_string().unwrap();
                n.strip_suffix("_uncompressed.tsfile")
                    .map(|s| format!("{s}_uncompressed"))
            })
            .collect();
        names.sort();
        assert_eq!(
            names.len(),
            46,
            "one file per (type, encoding) the library accepts"
        );
        let verified: BTreeSet<String> = names
            .iter()
            .map(|n| {
                let (t, e) = check(n);
                format!("{t} {e}")
            })
            .collect();
        eprintln!("verified against the library: {verified:?}");
        assert_eq!(verified.len(), 46, "{verified:?}");
        // 400-point pages of every encoding that carries state across values.
        let mut long: Vec<String> = std::fs::read_dir(dir())
            .unwrap()
            .filter_map(|e| {
                let n = e.unwrap().file_name().into_string().unwrap();
                n.strip_suffix(".tsfile")
                    .filter(|s| s.starts_with("long_"))
                    .map(str::to_string)
            })
            .collect();
        long.sort();
        assert_eq!(long.len(), 25, "{long:?}");
        for n in &long {
            check(n);
        }
    }
}

/// Helpers the encodings' unit tests share: hand-written bit strings and decode error offsets.
#[cfg(test)]
pub(crate) mod test_bits {
    use crate::errors::{Error, Result};

    /// Bytes of an MSB-first bit string (spaces ignored), the last byte padded with zeros.
    pub(crate) fn bytes(bits: &str) -> Vec<u8> {
        let mut b: String = bits.chars().filter(|c| !c.is_whitespace()).collect();
        while !b.len().is_multiple_of(8) {
            b.push('0');
        }
        (0..b.len() / 8)
            .map(|i| u8::from_str_radix(&b[8 * i..8 * i + 8], 2).unwrap())
            .collect()
    }

    /// The byte offset a decode error names; panics on any other outcome.
    pub(crate) fn decode_err_at<T>(r: Result<T>) -> usize {
        match r {
            Err(Error::Decode { at, .. }) => at,
            Err(e) => panic!("expected a decode error, got {e}"),
            Ok(_) => panic!("expected a decode error"),
        }
    }
}
