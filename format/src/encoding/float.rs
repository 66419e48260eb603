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
    // From 2^52 on every double is an integer (and NaN/±∞ land here too): `as`
    // saturates at i64::MIN/MAX and maps NaN to 0, like Java.
    if x.is_nan() || x.abs() >= 4_503_599_627_370_496.0 {
        return x as i64;
    }
    // floor(x) without libm: truncate, then step down for negative non-integers.
    let t = x as i64;
    let floor = if (t as f64) > x { t - 1 } else { t };
    // x - floor(x) is exact here.
    if x - floor as f64 >= 0.5 {
        floor + 1
    } else {
        floor
    }
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

/// Java `FloatEncoder`: FLOAT or DOUBLE values, scaled to integers by
/// `10^max_point_number`, encoded by the inner integer codec `I`
/// ([`IntRleEncoder`] / [`IntDeltaEncoder`] for FLOAT, [`LongRleEncoder`] /
/// [`LongDeltaEncoder`] for DOUBLE).
#[derive(Debug, Clone)]
pub struct FloatEncoder<I> {
    inner: I,
    max_point_number: u32,
    scale: f64,
    saved: bool,
}

impl<I> FloatEncoder<I> {
    /// Wraps `inner` with `max_point_number` decimals.
    pub fn with_inner(inner: I, max_point_number: u32) -> Self {
        // Java stores an int; values that do not fit are negative there, hence 0.
        let mpn = if max_point_number > i32::MAX as u32 {
            0
        } else {
            max_point_number
        };
        FloatEncoder {
            inner,
            max_point_number: mpn,
            scale: scale_for(mpn as i32),
            saved: false,
        }
    }

    #[inline]
    fn save_header(&mut self, out: &mut Vec<u8>) {
        if !self.saved {
            put_uvarint(out, self.max_point_number);
            self.saved = true;
        }
    }
}

/// The FloatEncoder for `data_type` (FLOAT or DOUBLE) under `encoding` (RLE or TS_2DIFF).
pub fn encoder(
    encoding: Encoding,
    data_type: DataType,
    max_point_number: u32,
) -> Result<Box<dyn Encoder>> {
    let mpn = max_point_number;
    Ok(match (encoding, data_type) {
        (Encoding::RLE, DataType::FLOAT) => {
            Box::new(FloatEncoder::with_inner(IntRleEncoder::new(), mpn))
        }
        (Encoding::RLE, DataType::DOUBLE) => {
            Box::new(FloatEncoder::with_inner(LongRleEncoder::new(), mpn))
        }
        (Encoding::TS_2DIFF, DataType::FLOAT) => {
            Box::new(FloatEncoder::with_inner(IntDeltaEncoder::new(), mpn))
        }
        (Encoding::TS_2DIFF, DataType::DOUBLE) => {
            Box::new(FloatEncoder::with_inner(LongDeltaEncoder::new(), mpn))
        }
        (e, t) => {
            return Err(Error::unsupported(format!(
                "FloatEncoder takes FLOAT or DOUBLE under RLE or TS_2DIFF, not {e} {t}"
            )))
        }
    })
}

macro_rules! float_encoder {
    ($inner:ty, $method:ident, $ty:ty, $q:ident, $convert:expr, $push:expr, $flush:ident) => {
        impl Encoder for FloatEncoder<$inner> {
            #[inline]
            fn $method(&mut self, v: $ty, out: &mut Vec<u8>) -> Result<()> {
                let $q = $convert(v, self.scale);
                self.save_header(out);
                $push(&mut self.inner, $q, out);
                Ok(())
            }
            fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
                self.inner.$flush(out);
                self.saved = false;
                Ok(())
            }
            fn max_byte_size(&self) -> usize {
                self.inner.max_byte_size()
            }
        }
    };
}

// Java: `(int) Math.round((double) v * maxPointValue)`, narrowing by wrapping.
fn scale_f32(v: f32, scale: f64) -> i32 {
    java_round(v as f64 * scale) as i32
}

fn scale_f64(v: f64, scale: f64) -> i64 {
    java_round(v * scale)
}

float_encoder!(
    IntRleEncoder,
    encode_f32,
    f32,
    q,
    scale_f32,
    |e: &mut IntRleEncoder, q, _out: &mut Vec<u8>| e.encode(q),
    flush_frame
);
float_encoder!(
    LongRleEncoder,
    encode_f64,
    f64,
    q,
    scale_f64,
    |e: &mut LongRleEncoder, q, _out: &mut Vec<u8>| e.encode(q),
    flush_frame
);
float_encoder!(
    IntDeltaEncoder,
    encode_f32,
    f32,
    q,
    scale_f32,
    |e: &mut IntDeltaEncoder, q, out: &mut Vec<u8>| e.encode(q, out),
    flush_block
);
float_encoder!(
    LongDeltaEncoder,
    encode_f64,
    f64,
    q,
    scale_f64,
    |e: &mut LongDeltaEncoder, q, out: &mut Vec<u8>| e.encode(q, out),
    flush_block
);

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
        let mut enc = encoder(e, t, mpn).unwrap();
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
        let mut e = encoder(Encoding::RLE, DataType::DOUBLE, 3).unwrap();
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

    /// The test's model of Java `Math.round(double)`, written from its Javadoc and not
    /// from [`java_round`]: "the closest long to the argument, with ties rounding to
    /// positive infinity" — `floor(x + 1/2)` computed exactly; NaN gives 0; values at or
    /// beyond the `long` range give `Long.MIN_VALUE` / `Long.MAX_VALUE`.
    fn math_round(x: f64) -> i64 {
        if x.is_nan() {
            return 0;
        }
        let f = x.floor();
        // `x - floor(x)` is exact for every finite double.
        let r = if x - f >= 0.5 { f + 1.0 } else { f };
        if r >= 9_223_372_036_854_775_807.0 {
            i64::MAX
        } else if r <= -9_223_372_036_854_775_808.0 {
            i64::MIN
        } else {
            r as i64
        }
    }

    /// `Math.pow(10, mpn)` for the small exponents the property uses (exact doubles).
    const POW10: [f64; 5] = [1.0, 10.0, 100.0, 1000.0, 10000.0];

    /// Java's decode of an encoded FLOAT: `(float) ((int) Math.round(v * 10^mpn) / 10^mpn)`
    /// (the `(int)` cast of the `long` wraps to its low 32 bits).
    fn model_f32(mpn: u32, x: f32) -> f32 {
        let s = POW10[mpn as usize];
        ((math_round(x as f64 * s) as i32) as f64 / s) as f32
    }

    /// Java's decode of an encoded DOUBLE: `Math.round(v * 10^mpn) / 10^mpn`.
    fn model_f64(mpn: u32, x: f64) -> f64 {
        let s = POW10[mpn as usize];
        math_round(x * s) as f64 / s
    }

    /// The header is Java's `maxPointNumber`, an `int`, as an unsigned var-int: up to
    /// `i32::MAX` it is kept (2147483647 = ff ff ff ff 07), above it is 0 (hand-computed).
    #[test]
    fn header_bounds() {
        for (mpn, want) in [
            (2u32, vec![0x02u8]),
            (128, vec![0x80, 0x01]),
            (i32::MAX as u32, vec![0xff, 0xff, 0xff, 0xff, 0x07]),
            (i32::MAX as u32 + 1, vec![0x00]),
            (u32::MAX, vec![0x00]),
        ] {
            let mut e = encoder(Encoding::RLE, DataType::DOUBLE, mpn).unwrap();
            let mut out = Vec::new();
            e.encode_f64(0.0, &mut out).unwrap();
            assert!(out.starts_with(&want), "{mpn}: {out:02x?}");
        }
    }

    /// A multi-byte header: 0x80 0x01 is 128 (7 low bits first), so the scale is 10^128
    /// and two bytes are consumed.
    #[test]
    fn multi_byte_header_is_read() {
        assert_eq!(read_header("s", &[0x80, 0x01, 0x55]).unwrap(), (1e128, 2));
        assert_eq!(read_header("s", &[0x03, 0x80]).unwrap(), (1000.0, 1));
    }

    /// Errors name the column's encoding and type.
    #[test]
    fn errors_name_the_stream() {
        let names = |e: Error| match e {
            Error::Decode { stream, at, .. } => (stream, at),
            other => panic!("{other}"),
        };
        for (enc, f32_name, f64_name) in [
            (Encoding::RLE, "RLE FLOAT column", "RLE DOUBLE column"),
            (
                Encoding::TS_2DIFF,
                "TS_2DIFF FLOAT column",
                "TS_2DIFF DOUBLE column",
            ),
        ] {
            let e = decode_f32(enc, &[], 1, &mut Vec::new()).unwrap_err();
            assert_eq!(names(e), (f32_name, 0));
            let e = decode_f64(enc, &[], 1, &mut Vec::new()).unwrap_err();
            assert_eq!(names(e), (f64_name, 0));
        }
    }

    /// Values worked out by hand from Java semantics (`Math.round`, then the division).
    #[test]
    fn model_values_by_hand() {
        for (x, r) in [
            (2.5, 3),
            (-2.5, -2),
            (-0.5, 0),
            (0.49999999999999994, 0),
            (-1.5, -1),
            (f64::NAN, 0),
            (f64::INFINITY, i64::MAX),
            (f64::NEG_INFINITY, i64::MIN),
            (9.3e18, i64::MAX),
            (-9.3e18, i64::MIN),
            (4503599627370497.0, 4503599627370497),
        ] {
            assert_eq!(math_round(x), r, "{x}");
            assert_eq!(java_round(x), r, "{x}");
        }
        // 1.005 is 1.00499999999999989... so * 100 gives 100.49999999999999 → 100 → 1.0.
        assert_eq!(model_f64(2, 1.005), 1.0);
        assert_eq!(model_f64(2, -1.005), -1.0);
        assert_eq!(model_f64(1, 0.25), 0.3);
        assert_eq!(model_f64(1, -0.25), -0.2);
        assert_eq!(model_f64(0, f64::NAN), 0.0);
        // FLOAT: 3e9 does not fit an int; (int) 3000000000L wraps to -1294967296.
        assert_eq!(model_f32(0, 3e9), -1294967296.0);
        // FLOAT +∞ → Long.MAX_VALUE → (int) = -1.
        assert_eq!(model_f32(0, f32::INFINITY), -1.0);
        // Encode and decode agree with these.
        for (mpn, x, want) in [(2u32, 1.005f64, 1.0f64), (1, 0.25, 0.3), (1, -0.25, -0.2)] {
            let b = enc(Encoding::RLE, DataType::DOUBLE, mpn, &[x]);
            let mut out = Vec::new();
            decode_f64(Encoding::RLE, &b, 1, &mut out).unwrap();
            assert_eq!(out, vec![want]);
        }
        let mut fe = encoder(Encoding::TS_2DIFF, DataType::FLOAT, 0).unwrap();
        let mut b = Vec::new();
        fe.encode_f32(3e9, &mut b).unwrap();
        fe.encode_f32(f32::INFINITY, &mut b).unwrap();
        fe.flush(&mut b).unwrap();
        let mut out = Vec::new();
        decode_f32(Encoding::TS_2DIFF, &b, 2, &mut out).unwrap();
        assert_eq!(out, vec![-1294967296.0, -1.0]);
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
            let mut fe = encoder(e, DataType::FLOAT, mpn).unwrap();
            let mut de = encoder(e, DataType::DOUBLE, mpn).unwrap();
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
        fn java_round_matches_floor_definition(bits in any::<u64>(), small in -1e6f64..1e6, k in -100000i64..100000) {
            for x in [f64::from_bits(bits), small, k as f64 / 2.0, k as f64 / 100.0] {
                prop_assert_eq!(java_round(x), math_round(x), "{}", x);
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
