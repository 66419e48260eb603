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
