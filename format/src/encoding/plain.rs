//! PLAIN encoding for every type (spec §6.1).
//!
//! Fixed-width big-endian values (floats through Java's `floatToIntBits` /
//! `doubleToLongBits`, so NaN is canonicalised), TEXT as an i32 length plus the bytes.
//! Values are written to the column stream immediately; flush writes nothing.
//!
//! Format v4 ([`PlainEncoder::v4`], [`decode_v4`]) differs for two types: INT32 (and
//! DATE) is a zigzag var-int (Java `writeVarInt`), and TEXT (STRING, BLOB) takes a
//! zigzag var-int length instead of the i32 one. The other types are unchanged.

use super::{BatchResult, Encoder};
use crate::basic::{Column, DataType};
use crate::errors::{Error, Result};
use crate::util::io::{put_binary, put_f32, put_f64, put_i32, put_i64, ByteReader};

/// Java `PlainEncoder` (big-endian) for one data type.
#[derive(Debug, Clone)]
pub struct PlainEncoder {
    data_type: DataType,
    v4: bool,
}

impl PlainEncoder {
    /// A PLAIN encoder (format 000002) for values of `data_type`.
    pub fn new(data_type: DataType) -> Self {
        PlainEncoder {
            data_type,
            v4: false,
        }
    }

    /// A PLAIN encoder of format v4 for values of the storage type `data_type`.
    pub fn v4(data_type: DataType) -> Self {
        PlainEncoder {
            data_type,
            v4: true,
        }
    }

    #[inline]
    fn expect(&self, t: DataType) -> Result<()> {
        if self.data_type == t {
            Ok(())
        } else {
            Err(Error::unsupported(format!(
                "this PLAIN encoder takes {} values, not {t}",
                self.data_type
            )))
        }
    }
}

impl PlainEncoder {
    /// Appends fixed-width values of type `t` with `put` (all of them, or none when the
    /// encoder takes another type).
    #[inline]
    fn fixed<T: Copy>(
        &self,
        t: DataType,
        v: &[T],
        out: &mut Vec<u8>,
        put: impl Fn(&mut Vec<u8>, T),
    ) -> BatchResult {
        if v.is_empty() {
            return Ok(());
        }
        self.expect(t).map_err(|e| (0, e))?;
        out.reserve(std::mem::size_of_val(v));
        for x in v {
            put(out, *x);
        }
        Ok(())
    }
}

impl Encoder for PlainEncoder {
    fn encode_bool(&mut self, v: bool, out: &mut Vec<u8>) -> Result<()> {
        self.expect(DataType::BOOLEAN)?;
        out.push(v as u8);
        Ok(())
    }
    fn encode_i32(&mut self, v: i32, out: &mut Vec<u8>) -> Result<()> {
        self.expect(DataType::INT32)?;
        if self.v4 {
            super::dictionary::put_varint(out, v);
        } else {
            put_i32(out, v);
        }
        Ok(())
    }
    fn encode_i64(&mut self, v: i64, out: &mut Vec<u8>) -> Result<()> {
        self.expect(DataType::INT64)?;
        put_i64(out, v);
        Ok(())
    }
    fn encode_f32(&mut self, v: f32, out: &mut Vec<u8>) -> Result<()> {
        self.expect(DataType::FLOAT)?;
        put_f32(out, v);
        Ok(())
    }
    fn encode_f64(&mut self, v: f64, out: &mut Vec<u8>) -> Result<()> {
        self.expect(DataType::DOUBLE)?;
        put_f64(out, v);
        Ok(())
    }
    fn encode_i32s(&mut self, v: &[i32], out: &mut Vec<u8>) -> BatchResult {
        if self.v4 {
            return v
                .iter()
                .enumerate()
                .try_for_each(|(k, x)| self.encode_i32(*x, out).map_err(|e| (k, e)));
        }
        self.fixed(DataType::INT32, v, out, put_i32)
    }
    fn encode_i64s(&mut self, v: &[i64], out: &mut Vec<u8>) -> BatchResult {
        self.fixed(DataType::INT64, v, out, put_i64)
    }
    fn encode_f32s(&mut self, v: &[f32], out: &mut Vec<u8>) -> BatchResult {
        self.fixed(DataType::FLOAT, v, out, put_f32)
    }
    fn encode_f64s(&mut self, v: &[f64], out: &mut Vec<u8>) -> BatchResult {
        self.fixed(DataType::DOUBLE, v, out, put_f64)
    }
    fn encode_binary(&mut self, v: &[u8], out: &mut Vec<u8>) -> Result<()> {
        self.expect(DataType::TEXT)?;
        if v.len() > i32::MAX as usize {
            return Err(Error::invalid(format!(
                "TEXT value of {} bytes exceeds the i32 length prefix",
                v.len()
            )));
        }
        if self.v4 {
            super::dictionary::put_varint(out, v.len() as i32);
            out.extend_from_slice(v);
        } else {
            put_binary(out, v);
        }
        Ok(())
    }
    fn flush(&mut self, _out: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        0
    }
}

fn stream_name(t: DataType) -> &'static str {
    match t.storage_type() {
        DataType::BOOLEAN => "PLAIN BOOLEAN column",
        DataType::INT32 => "PLAIN INT32 column",
        DataType::INT64 => "PLAIN INT64 column",
        DataType::FLOAT => "PLAIN FLOAT column",
        DataType::DOUBLE => "PLAIN DOUBLE column",
        _ => "PLAIN TEXT column",
    }
}

fn fixed<'a, const N: usize>(
    t: DataType,
    data: &'a [u8],
    count: usize,
) -> Result<std::slice::ChunksExact<'a, u8>> {
    match count.checked_mul(N) {
        Some(need) if need <= data.len() => Ok(data[..need].chunks_exact(N)),
        _ => Err(Error::decode(
            stream_name(t),
            data.len() - data.len() % N,
            format_args!(
                "{count} values of {N} bytes, but the stream holds only {} bytes",
                data.len()
            ),
        )),
    }
}

#[inline]
fn arr<const N: usize>(c: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(c);
    a
}

/// Decodes exactly `count` PLAIN values of `out`'s type from `data`, appending to `out`.
/// Bytes after the last value are ignored (the Java reader is driven by the time column).
pub fn decode(data: &[u8], count: usize, out: &mut Column) -> Result<()> {
    let t = out.data_type();
    match out {
        Column::Boolean(v) => {
            let it = fixed::<1>(t, data, count)?;
            v.reserve(count);
            v.extend(it.map(|c| c[0] != 0));
        }
        Column::Int32(v) => {
            let it = fixed::<4>(t, data, count)?;
            v.reserve(count);
            v.extend(it.map(|c| i32::from_be_bytes(arr(c))));
        }
        Column::Int64(v) => {
            let it = fixed::<8>(t, data, count)?;
            v.reserve(count);
            v.extend(it.map(|c| i64::from_be_bytes(arr(c))));
        }
        Column::Float(v) => {
            let it = fixed::<4>(t, data, count)?;
            v.reserve(count);
            v.extend(it.map(|c| f32::from_bits(u32::from_be_bytes(arr(c)))));
        }
        Column::Double(v) => {
            let it = fixed::<8>(t, data, count)?;
            v.reserve(count);
            v.extend(it.map(|c| f64::from_bits(u64::from_be_bytes(arr(c)))));
        }
        Column::Text(v) => {
            // Each value needs at least its 4-byte length prefix.
            v.reserve(count.min(data.len() / 4));
            let mut pos = 0usize;
            for i in 0..count {
                let Some(h) = data.get(pos..pos + 4) else {
                    return Err(Error::decode(
                        stream_name(t),
                        pos,
                        format_args!("length prefix of TEXT value {i} of {count}"),
                    ));
                };
                let n = i32::from_be_bytes(arr(h));
                if n < 0 || n as usize > data.len() - pos - 4 {
                    return Err(Error::decode(
                        stream_name(t),
                        pos,
                        format_args!(
                            "TEXT value {i}: a length in 0..={}, found {n}",
                            data.len() - pos - 4
                        ),
                    ));
                }
                let start = pos + 4;
                pos = start + n as usize;
                v.push(data[start..pos].to_vec());
            }
        }
    }
    Ok(())
}

/// Decodes exactly `count` PLAIN values of format v4 (see the module docs), appending
/// to `out`.
pub fn decode_v4(data: &[u8], count: usize, out: &mut Column) -> Result<()> {
    let t = out.data_type();
    let err = |r: &ByteReader<'_>, i: usize, e: Error| {
        Error::decode(stream_name(t), r.position(), format_args!("value {i}: {e}"))
    };
    match out {
        Column::Int32(v) => {
            let mut r = ByteReader::new(data, 0);
            v.reserve(count.min(data.len()));
            for i in 0..count {
                let x =
                    super::dictionary::read_varint(&mut r, "var-int").map_err(|e| err(&r, i, e))?;
                v.push(x);
            }
            Ok(())
        }
        Column::Text(v) => {
            let mut r = ByteReader::new(data, 0);
            v.reserve(count.min(data.len()));
            for i in 0..count {
                let n =
                    super::dictionary::read_varint(&mut r, "length").map_err(|e| err(&r, i, e))?;
                if n < 0 {
                    return Err(err(&r, i, Error::invalid(format!("length {n}"))));
                }
                let b = r
                    .take(n as usize, "value bytes")
                    .map_err(|e| err(&r, i, e))?;
                v.push(b.to_vec());
            }
            Ok(())
        }
        out => decode(data, count, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batch methods write what one call per value writes: big-endian, NaN as Java's
    /// `0x7ff8000000000000` / `0x7fc00000`; a value of another type is refused first.
    #[test]
    fn batches_are_big_endian_and_typed() {
        let mut out = Vec::new();
        let mut d = PlainEncoder::new(DataType::DOUBLE);
        d.encode_f64s(&[1.0, -2.5, f64::NAN], &mut out).unwrap();
        assert_eq!(
            out,
            [
                0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xc0, 0x04, 0, 0, 0, 0, 0, 0, 0x7f, 0xf8, 0, 0, 0, 0,
                0, 0
            ]
        );
        out.clear();
        PlainEncoder::new(DataType::FLOAT)
            .encode_f32s(&[1.0, f32::NAN], &mut out)
            .unwrap();
        assert_eq!(out, [0x3f, 0x80, 0, 0, 0x7f, 0xc0, 0, 0]);
        out.clear();
        PlainEncoder::new(DataType::INT64)
            .encode_i64s(&[1, -2], &mut out)
            .unwrap();
        assert_eq!(
            out,
            [0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]
        );
        out.clear();
        PlainEncoder::new(DataType::INT32)
            .encode_i32s(&[258, -1], &mut out)
            .unwrap();
        assert_eq!(out, [0, 0, 1, 2, 0xff, 0xff, 0xff, 0xff]);
        // v4 INT32: zigzag var-ints (258 -> 516 = 0x84 0x04, -1 -> 1).
        out.clear();
        PlainEncoder::v4(DataType::INT32)
            .encode_i32s(&[258, -1], &mut out)
            .unwrap();
        assert_eq!(out, [0x84, 0x04, 0x01]);
        out.clear();
        let (k, _) = d.encode_i64s(&[1], &mut out).unwrap_err();
        assert_eq!((k, out.len()), (0, 0));
        assert!(d.encode_i64s(&[], &mut out).is_ok());
    }

    use proptest::prelude::*;

    #[test]
    fn v4_int32_and_text_are_varint() {
        let mut out = Vec::new();
        let mut e = PlainEncoder::v4(DataType::INT32);
        for v in [0, 7, 14, -1, 64] {
            e.encode_i32(v, &mut out).unwrap();
        }
        // As the PyPI tsfile 2.5.0 writer stores 0, 7, 14 (seen in its page bytes).
        assert_eq!(hex(&out), "000e1c018001");
        let mut c = Column::new(DataType::INT32);
        decode_v4(&out, 5, &mut c).unwrap();
        assert_eq!(c, Column::Int32(vec![0, 7, 14, -1, 64]));
        let mut out = Vec::new();
        let mut e = PlainEncoder::v4(DataType::TEXT);
        e.encode_binary(b"ab", &mut out).unwrap();
        assert_eq!(hex(&out), "046162");
        assert!(decode_v4(&out[..2], 1, &mut Column::new(DataType::TEXT)).is_err());
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn spec_vectors() {
        let mut out = Vec::new();
        let mut e = PlainEncoder::new(DataType::INT32);
        e.encode_i32(1, &mut out).unwrap();
        e.encode_i32(-2, &mut out).unwrap();
        e.flush(&mut out).unwrap();
        assert_eq!(hex(&out), "00000001fffffffe");

        let mut out = Vec::new();
        let mut e = PlainEncoder::new(DataType::INT64);
        e.encode_i64(1, &mut out).unwrap();
        e.encode_i64(-2, &mut out).unwrap();
        assert_eq!(hex(&out), "0000000000000001fffffffffffffffe");

        let mut out = Vec::new();
        let mut e = PlainEncoder::new(DataType::FLOAT);
        e.encode_f32(1.5, &mut out).unwrap();
        e.encode_f32(f32::from_bits(0x7f80_0001), &mut out).unwrap();
        assert_eq!(hex(&out), "3fc000007fc00000");

        let mut out = Vec::new();
        let mut e = PlainEncoder::new(DataType::DOUBLE);
        e.encode_f64(1.5, &mut out).unwrap();
        assert_eq!(hex(&out), "3ff8000000000000");

        let mut out = Vec::new();
        let mut e = PlainEncoder::new(DataType::BOOLEAN);
        e.encode_bool(true, &mut out).unwrap();
        e.encode_bool(false, &mut out).unwrap();
        assert_eq!(hex(&out), "0100");

        let mut out = Vec::new();
        let mut e = PlainEncoder::new(DataType::TEXT);
        e.encode_binary(b"abc", &mut out).unwrap();
        e.encode_binary(b"", &mut out).unwrap();
        assert_eq!(hex(&out), "0000000361626300000000");
        assert_eq!(e.max_byte_size(), 0);
    }

    #[test]
    fn wrong_type_is_refused() {
        let mut out = Vec::new();
        let mut e = PlainEncoder::new(DataType::INT32);
        assert!(matches!(
            e.encode_i64(1, &mut out),
            Err(Error::Unsupported(_))
        ));
        assert!(out.is_empty());
    }

    #[test]
    fn decode_reads_booleans_like_java() {
        let mut c = Column::new(DataType::BOOLEAN);
        decode(&[1, 0, 2], 3, &mut c).unwrap();
        assert_eq!(c, Column::Boolean(vec![true, false, true]));
    }

    #[test]
    fn errors_name_the_stream_and_the_last_whole_value() {
        // (type, bytes given, values asked, the stream, offset of the first missing value)
        let cases = [
            (DataType::BOOLEAN, 2, 3, "PLAIN BOOLEAN column", 2),
            (DataType::INT32, 7, 2, "PLAIN INT32 column", 4),
            (DataType::INT64, 20, 3, "PLAIN INT64 column", 16),
            (DataType::FLOAT, 9, 3, "PLAIN FLOAT column", 8),
            (DataType::DOUBLE, 17, 3, "PLAIN DOUBLE column", 16),
            (DataType::TEXT, 2, 1, "PLAIN TEXT column", 0),
        ];
        for (t, n, count, stream, at) in cases {
            let e = decode(&vec![0; n], count, &mut Column::new(t)).unwrap_err();
            assert!(
                matches!(e, Error::Decode { stream: s, at: a, .. } if s == stream && a == at),
                "{t}: {e:?}"
            );
        }
        // The second TEXT value (at byte 5) claims 3 bytes, 1 remains.
        let data = [0, 0, 0, 1, b'a', 0, 0, 0, 3, b'b'];
        let e = decode(&data, 2, &mut Column::new(DataType::TEXT)).unwrap_err();
        assert!(matches!(e, Error::Decode { at: 5, .. }), "{e:?}");
        let mut c = Column::new(DataType::TEXT);
        decode(&data[..9], 1, &mut c).unwrap();
        assert_eq!(c, Column::Text(vec![b"a".to_vec()]));
        // Format v4: var-int INT32 and var-int-length TEXT.
        let e = decode_v4(&[0x80], 1, &mut Column::new(DataType::INT32)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Decode {
                    stream: "PLAIN INT32 column",
                    ..
                }
            ),
            "{e:?}"
        );
        // A negative length (zigzag 0x05 = -3) is named as such.
        let e = decode_v4(&[0x05, b'a'], 1, &mut Column::new(DataType::TEXT)).unwrap_err();
        assert!(e.to_string().contains("length -3"), "{e}");
        // An empty value is a zero length.
        let mut c = Column::new(DataType::TEXT);
        decode_v4(&[0x00, 0x02, b'z'], 2, &mut c).unwrap();
        assert_eq!(c, Column::Text(vec![vec![], b"z".to_vec()]));
    }

    #[test]
    fn truncated_streams_are_errors() {
        let mut c = Column::new(DataType::INT64);
        let e = decode(&[0; 12], 2, &mut c).unwrap_err();
        assert!(matches!(e, Error::Decode { at: 8, .. }), "{e}");
        let mut c = Column::new(DataType::TEXT);
        assert!(decode(&[0, 0, 0, 5, b'a'], 1, &mut c).is_err());
        assert!(decode(&[0xff, 0xff, 0xff, 0xff], 1, &mut c).is_err());
        assert!(decode(&[0, 0, 0], 1, &mut c).is_err());
        let mut c = Column::new(DataType::INT32);
        assert!(decode(&[], usize::MAX, &mut c).is_err());
    }

    fn roundtrip(t: DataType, col: Column, pages: usize) {
        let n = col.len();
        let mut e = PlainEncoder::new(t);
        let mut back = Column::new(t);
        let bounds: Vec<usize> = (0..=pages).map(|p| p * n / pages.max(1)).collect();
        for w in bounds.windows(2) {
            let mut out = Vec::new();
            for i in w[0]..w[1] {
                match &col {
                    Column::Boolean(v) => e.encode_bool(v[i], &mut out),
                    Column::Int32(v) => e.encode_i32(v[i], &mut out),
                    Column::Int64(v) => e.encode_i64(v[i], &mut out),
                    Column::Float(v) => e.encode_f32(v[i], &mut out),
                    Column::Double(v) => e.encode_f64(v[i], &mut out),
                    Column::Text(v) => e.encode_binary(&v[i], &mut out),
                }
                .unwrap();
            }
            e.flush(&mut out).unwrap();
            decode(&out, w[1] - w[0], &mut back).unwrap();
        }
        // Compare bitwise for floats; NaN is canonicalised by PLAIN.
        match (&col, &back) {
            (Column::Float(a), Column::Float(b)) => {
                let a: Vec<u32> = a
                    .iter()
                    .map(|x| crate::util::io::java_float_bits(*x))
                    .collect();
                let b: Vec<u32> = b.iter().map(|x| x.to_bits()).collect();
                assert_eq!(a, b);
            }
            (Column::Double(a), Column::Double(b)) => {
                let a: Vec<u64> = a
                    .iter()
                    .map(|x| crate::util::io::java_double_bits(*x))
                    .collect();
                let b: Vec<u64> = b.iter().map(|x| x.to_bits()).collect();
                assert_eq!(a, b);
            }
            _ => assert_eq!(col, back),
        }
    }

    proptest! {
        #[test]
        fn roundtrips(pages in 1usize..4,
                      b in proptest::collection::vec(any::<bool>(), 0..300),
                      i in proptest::collection::vec(any::<i32>(), 0..300),
                      l in proptest::collection::vec(any::<i64>(), 0..300),
                      f in proptest::collection::vec(any::<u32>(), 0..300),
                      d in proptest::collection::vec(any::<u64>(), 0..300),
                      t in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 0..50)) {
            roundtrip(DataType::BOOLEAN, Column::Boolean(b), pages);
            roundtrip(DataType::INT32, Column::Int32(i), pages);
            roundtrip(DataType::INT64, Column::Int64(l), pages);
            roundtrip(DataType::FLOAT, Column::Float(f.into_iter().map(f32::from_bits).collect()), pages);
            roundtrip(DataType::DOUBLE, Column::Double(d.into_iter().map(f64::from_bits).collect()), pages);
            roundtrip(DataType::TEXT, Column::Text(t), pages);
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64), count in 0usize..40) {
            for t in DataType::ALL {
                let mut c = Column::new(*t);
                let _ = decode(&data, count, &mut c);
            }
        }
    }
}
