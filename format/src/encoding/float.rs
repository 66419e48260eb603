//! FLOAT/DOUBLE under RLE or TS_2DIFF (Java `FloatEncoder`, spec §6.4).
//!
//! Each page's value stream is `uvarint max_point_number` followed by the inner integer
//! encoding (INT32 codec for FLOAT, INT64 codec for DOUBLE) of
//! `Math.round(v * 10^max_point_number)`. FLOAT narrows the `long` result of
//! `Math.round` to `int` by wrapping, exactly as Java's `(int)` cast. Lossy by design:
//! NaN becomes 0, -0.0 becomes 0.0, huge values and infinities saturate (quirk 3).
//!
//! The var-int is written into the column stream at the first value of every page (as
//! Java does), which the page-sealing estimate sees.

use super::rle::{self, IntRleEncoder, LongRleEncoder};
use super::ts2diff::{self, IntDeltaEncoder, LongDeltaEncoder};
use super::Encoder;
use crate::basic::{DataType, Encoding};
use crate::errors::{Error, Result};
use crate::util::io::put_uvarint;

/// Java `Math.round(double)`: nearest `long`, ties toward +∞, NaN → 0, saturating.
#[inline]
pub fn java_round(x: f64) -> i64 {
    let f = x.floor();
    // x - floor(x) is exact for every finite double.
    let r = if x - f >= 0.5 { f + 1.0 } else { f };
    // `as` saturates at i64::MIN/MAX and maps NaN to 0, like Java.
    r as i64
}

/// `Math.pow(10, n)` as Java computes it for the scale (`n <= 0` gives 1).
///
/// For `n <= 22` the power is exact in both languages; above that the correctly
/// rounded value is used.
pub fn scale_for(max_point_number: i32) -> f64 {
    if max_point_number <= 0 {
        1.0
    } else {
        format!("1e{max_point_number}")
            .parse::<f64>()
            .unwrap_or(f64::INFINITY)
    }
}

#[derive(Debug, Clone)]
enum Inner {
    IntRle(IntRleEncoder),
    LongRle(LongRleEncoder),
    IntDelta(IntDeltaEncoder),
    LongDelta(LongDeltaEncoder),
}

/// Java `FloatEncoder`: FLOAT or DOUBLE values, scaled to integers, under RLE or TS_2DIFF.
#[derive(Debug, Clone)]
pub struct FloatEncoder {
    inner: Inner,
    max_point_number: u32,
    scale: f64,
    saved: bool,
}

impl FloatEncoder {
    /// A FloatEncoder for `data_type` (FLOAT or DOUBLE) under `encoding` (RLE or TS_2DIFF)
    /// with `max_point_number` decimals.
    pub fn new(encoding: Encoding, data_type: DataType, max_point_number: u32) -> Result<Self> {
        let inner = match (encoding, data_type) {
            (Encoding::RLE, DataType::FLOAT) => Inner::IntRle(IntRleEncoder::new()),
            (Encoding::RLE, DataType::DOUBLE) => Inner::LongRle(LongRleEncoder::new()),
            (Encoding::TS_2DIFF, DataType::FLOAT) => Inner::IntDelta(IntDeltaEncoder::new()),
            (Encoding::TS_2DIFF, DataType::DOUBLE) => Inner::LongDelta(LongDeltaEncoder::new()),
            (e, t) => {
                return Err(Error::unsupported(format!(
                    "FloatEncoder takes FLOAT or DOUBLE under RLE or TS_2DIFF, not {e} {t}"
                )))
            }
        };
        // Java stores an int; values that do not fit are negative there, hence 0.
        let mpn = if max_point_number > i32::MAX as u32 {
            0
        } else {
            max_point_number
        };
        Ok(FloatEncoder {
            inner,
            max_point_number: mpn,
            scale: scale_for(mpn as i32),
            saved: false,
        })
    }

    #[inline]
    fn save_header(&mut self, out: &mut Vec<u8>) {
        if !self.saved {
            put_uvarint(out, self.max_point_number);
            self.saved = true;
        }
    }
}

impl Encoder for FloatEncoder {
    fn encode_f32(&mut self, v: f32, out: &mut Vec<u8>) -> Result<()> {
        if !matches!(self.inner, Inner::IntRle(_) | Inner::IntDelta(_)) {
            return Err(Error::unsupported(
                "this FloatEncoder takes DOUBLE values, not FLOAT",
            ));
        }
        // Java: `(int) Math.round((double) v * maxPointValue)`, narrowing by wrapping.
        let q = java_round(v as f64 * self.scale) as i32;
        self.save_header(out);
        match &mut self.inner {
            Inner::IntRle(e) => e.encode(q),
            Inner::IntDelta(e) => e.encode(q, out),
            Inner::LongRle(_) | Inner::LongDelta(_) => {}
        }
        Ok(())
    }

    fn encode_f64(&mut self, v: f64, out: &mut Vec<u8>) -> Result<()> {
        if !matches!(self.inner, Inner::LongRle(_) | Inner::LongDelta(_)) {
            return Err(Error::unsupported(
                "this FloatEncoder takes FLOAT values, not DOUBLE",
            ));
        }
        let q = java_round(v * self.scale);
        self.save_header(out);
        match &mut self.inner {
            Inner::LongRle(e) => e.encode(q),
            Inner::LongDelta(e) => e.encode(q, out),
            Inner::IntRle(_) | Inner::IntDelta(_) => {}
        }
        Ok(())
    }

    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        match &mut self.inner {
            Inner::IntRle(e) => e.flush_frame(out),
            Inner::LongRle(e) => e.flush_frame(out),
            Inner::IntDelta(e) => e.flush_block(out),
            Inner::LongDelta(e) => e.flush_block(out),
        }
        self.saved = false;
        Ok(())
    }

    fn max_byte_size(&self) -> usize {
        match &self.inner {
            Inner::IntRle(e) => e.max_byte_size(),
            Inner::LongRle(e) => e.max_byte_size(),
            Inner::IntDelta(e) => e.max_byte_size(),
            Inner::LongDelta(e) => e.max_byte_size(),
        }
    }
}

/// Reads the leading `max_point_number` var-int (Java's lenient ByteBuffer reader, but a
/// var-int cut off by the end of the stream is an error here) and returns
/// `(scale, bytes consumed)`.
fn read_header(stream: &'static str, data: &[u8]) -> Result<(f64, usize)> {
    let mut v: u32 = 0;
    for i in 0..5 {
        let Some(&b) = data.get(i) else {
            return Err(Error::decode(
                stream,
                0,
                "the max_point_number var-int, but the stream ended",
            ));
        };
        v |= ((b & 0x7f) as u32) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((scale_for(v as i32), i + 1));
        }
    }
    Err(Error::decode(
        stream,
        0,
        "a max_point_number var-int of at most 5 bytes",
    ))
}

/// Offsets inner errors by the header length so they stay relative to the stream.
fn shift(e: Error, by: usize) -> Error {
    match e {
        Error::Decode { stream, at, msg } => Error::Decode {
            stream,
            at: at + by,
            msg,
        },
        other => other,
    }
}

/// Decodes exactly `count` FLOAT values (`(float)(q / 10^mpn)`).
pub fn decode_f32(encoding: Encoding, data: &[u8], count: usize, out: &mut Vec<f32>) -> Result<()> {
    let stream = match encoding {
        Encoding::RLE => "RLE FLOAT column",
        _ => "TS_2DIFF FLOAT column",
    };
    if count == 0 {
        return Ok(());
    }
    let (scale, h) = read_header(stream, data)?;
    let mut q: Vec<i32> = Vec::new();
    match encoding {
        Encoding::RLE => rle::decode_into::<i32>(stream, &data[h..], count, &mut q),
        Encoding::TS_2DIFF => ts2diff::decode_into::<i32>(stream, &data[h..], Some(count), &mut q),
        e => {
            return Err(Error::unsupported(format!(
                "FLOAT values are not scaled under {e}"
            )))
        }
    }
    .map_err(|e| shift(e, h))?;
    out.reserve(q.len());
    out.extend(q.into_iter().map(|q| (q as f64 / scale) as f32));
    Ok(())
}

/// Decodes exactly `count` DOUBLE values (`q / 10^mpn`).
pub fn decode_f64(encoding: Encoding, data: &[u8], count: usize, out: &mut Vec<f64>) -> Result<()> {
    let stream = match encoding {
        Encoding::RLE => "RLE DOUBLE column",
        _ => "TS_2DIFF DOUBLE column",
    };
    if count == 0 {
        return Ok(());
    }
    let (scale, h) = read_header(stream, data)?;
    let mut q: Vec<i64> = Vec::new();
    match encoding {
        Encoding::RLE => rle::decode_into::<i64>(stream, &data[h..], count, &mut q),
        Encoding::TS_2DIFF => ts2diff::decode_into::<i64>(stream, &data[h..], Some(count), &mut q),
        e => {
            return Err(Error::unsupported(format!(
                "DOUBLE values are not scaled under {e}"
            )))
        }
    }
    .map_err(|e| shift(e, h))?;
    out.reserve(q.len());
    out.extend(q.into_iter().map(|q| q as f64 / scale));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn java_round_semantics() {
        assert_eq!(java_round(-2.5), -2);
        assert_eq!(java_round(2.5), 3);
        assert_eq!(java_round(-0.5), 0);
        assert_eq!(java_round(-1.5), -1);
        assert_eq!(java_round(0.49999999999999994), 0);
        assert_eq!(java_round(-0.49999999999999994), 0);
        assert_eq!(java_round(f64::NAN), 0);
        assert_eq!(java_round(f64::INFINITY), i64::MAX);
        assert_eq!(java_round(f64::NEG_INFINITY), i64::MIN);
        assert_eq!(java_round(1e300), i64::MAX);
        assert_eq!(java_round(4503599627370497.0), 4503599627370497);
        assert_eq!(java_round(-4503599627370497.0), -4503599627370497);
        assert_eq!(java_round(110.00000000000001), 110);
    }

    fn enc(e: Encoding, t: DataType, mpn: u32, v: &[f64]) -> Vec<u8> {
        let mut enc = FloatEncoder::new(e, t, mpn).unwrap();
        let mut out = Vec::new();
        for x in v {
            if t == DataType::FLOAT {
                enc.encode_f32(*x as f32, &mut out).unwrap();
            } else {
                enc.encode_f64(*x, &mut out).unwrap();
            }
        }
        enc.flush(&mut out).unwrap();
        out
    }

    #[test]
    fn spec_vectors() {
        let b = enc(Encoding::RLE, DataType::FLOAT, 2, &[1.1, 2.2, 3.3]);
        assert_eq!(hex(&b), "020c090303373729400000000000");
        let mut d = Vec::new();
        decode_f32(Encoding::RLE, &b, 3, &mut d).unwrap();
        assert_eq!(d, [1.1f32, 2.2, 3.3]);

        let b = enc(Encoding::TS_2DIFF, DataType::DOUBLE, 2, &[1.1, 2.2, 3.3]);
        assert_eq!(
            hex(&b),
            "020000000200000000000000000000006e000000000000006e"
        );
        let mut d = Vec::new();
        decode_f64(Encoding::TS_2DIFF, &b, 3, &mut d).unwrap();
        assert_eq!(d, [1.1, 2.2, 3.3]);

        let b = enc(Encoding::TS_2DIFF, DataType::FLOAT, 0, &[-2.5, 2.5, 0.5]);
        assert_eq!(hex(&b), "000000000200000003fffffffefffffffee0");
        let mut d = Vec::new();
        decode_f32(Encoding::TS_2DIFF, &b, 3, &mut d).unwrap();
        assert_eq!(d, [-2.0f32, 3.0, 1.0]);
    }

    #[test]
    fn header_written_at_first_value_of_every_page() {
        let mut e = FloatEncoder::new(Encoding::RLE, DataType::DOUBLE, 3).unwrap();
        let mut out = Vec::new();
        e.encode_f64(1.0, &mut out).unwrap();
        assert_eq!(out, [3]);
        assert_eq!(e.max_byte_size(), 8 + 5 + 8);
        e.flush(&mut out).unwrap();
        let page1 = out.clone();
        out.clear();
        e.encode_f64(1.0, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        assert_eq!(out, page1);
        assert!(e.encode_f32(1.0, &mut out).is_err());
    }

    #[test]
    fn quirk_3_lossy_values() {
        // FLOAT +Infinity saturates to Long.MAX, narrowed to int -1: reads back as -0.01.
        let b = enc(
            Encoding::RLE,
            DataType::FLOAT,
            2,
            &[f64::INFINITY, f64::NAN, -0.0],
        );
        let mut d = Vec::new();
        decode_f32(Encoding::RLE, &b, 3, &mut d).unwrap();
        assert_eq!(d[0], -0.01f32);
        assert_eq!(d[1].to_bits(), 0.0f32.to_bits());
        assert_eq!(d[2].to_bits(), 0.0f32.to_bits());
        // DOUBLE infinity saturates: 9.223372036854776E16.
        let b = enc(Encoding::TS_2DIFF, DataType::DOUBLE, 2, &[f64::INFINITY]);
        let mut d = Vec::new();
        decode_f64(Encoding::TS_2DIFF, &b, 1, &mut d).unwrap();
        assert_eq!(d[0], 9.223372036854776E16);
    }

    #[test]
    fn malformed_streams_are_errors() {
        assert!(decode_f64(Encoding::RLE, &[], 1, &mut Vec::new()).is_err());
        assert!(decode_f64(
            Encoding::RLE,
            &[0x80, 0x80, 0x80, 0x80, 0x80, 0],
            1,
            &mut Vec::new()
        )
        .is_err());
        let b = enc(Encoding::TS_2DIFF, DataType::DOUBLE, 2, &[1.1, 2.2, 3.3]);
        let e = decode_f64(Encoding::TS_2DIFF, &b[..10], 3, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, Error::Decode { at: 1, .. }), "{e}");
    }

    fn model_f32(mpn: u32, x: f32) -> f32 {
        let s = scale_for(mpn as i32);
        ((java_round(x as f64 * s) as i32) as f64 / s) as f32
    }

    fn model_f64(mpn: u32, x: f64) -> f64 {
        let s = scale_for(mpn as i32);
        java_round(x * s) as f64 / s
    }

    fn vals() -> impl Strategy<Value = Vec<f64>> {
        proptest::collection::vec(
            prop_oneof![
                (-100000i64..100000).prop_map(|q| q as f64 / 100.0),
                any::<f64>(),
                -1e6f64..1e6,
                Just(0.0),
            ],
            1..400,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn round_trip_matches_java_model(v in vals(), mpn in 0u32..5, rle_enc in any::<bool>(),
                                         cut in any::<usize>()) {
            let e = if rle_enc { Encoding::RLE } else { Encoding::TS_2DIFF };
            let cut = cut % (v.len() + 1);
            let mut fe = FloatEncoder::new(e, DataType::FLOAT, mpn).unwrap();
            let mut de = FloatEncoder::new(e, DataType::DOUBLE, mpn).unwrap();
            for page in [&v[..cut], &v[cut..]] {
                let (mut fo, mut dout) = (Vec::new(), Vec::new());
                for x in page {
                    fe.encode_f32(*x as f32, &mut fo).unwrap();
                    de.encode_f64(*x, &mut dout).unwrap();
                }
                fe.flush(&mut fo).unwrap();
                de.flush(&mut dout).unwrap();
                let (mut fd, mut dd) = (Vec::new(), Vec::new());
                decode_f32(e, &fo, page.len(), &mut fd).unwrap();
                decode_f64(e, &dout, page.len(), &mut dd).unwrap();
                let fw: Vec<u32> = page.iter().map(|x| model_f32(mpn, *x as f32).to_bits()).collect();
                let dw: Vec<u64> = page.iter().map(|x| model_f64(mpn, *x).to_bits()).collect();
                prop_assert_eq!(fd.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), fw);
                prop_assert_eq!(dd.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), dw);
            }
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..100), count in 0usize..300) {
            for e in [Encoding::RLE, Encoding::TS_2DIFF] {
                let _ = decode_f32(e, &data, count, &mut Vec::new());
                let _ = decode_f64(e, &data, count, &mut Vec::new());
            }
        }
    }
}
