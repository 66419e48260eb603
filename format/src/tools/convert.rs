//! `convert`: turns a canonical point dump (the conformance corpus' `expected.tsv`
//! format) back into a TsFile.
//!
//! Input lines are `DEVICE<TAB>MEASUREMENT<TAB>TYPE<TAB>TIME<TAB>VALUE`, each ending
//! with LF; names and TEXT values use the dump's escapes (`\\`, `\t`, `\n`, `\r`,
//! `\uXXXX`), floats the Java text form (`NaN`, `Infinity`, `1.0E-4`, ...). A series is
//! registered when it first appears, with the encoding and compression of its schema
//! line, else the defaults for its type. Every point is one write call, in input order:
//! written from a dump (series after series), this reproduces the page and chunk
//! structure of files that were written point by point.

use crate::basic::{Compression, DataType, Encoding, Value};
use crate::errors::{Error, Result};
use crate::file::properties::{MeasurementSchema, WriterProperties};
use crate::file::writer::{FileSummary, TsFileWriter};
use std::collections::HashMap;
use std::io::{BufRead, Write};

/// Encoding and compression of one series (a schema line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesOptions {
    /// Device path.
    pub device: String,
    /// Measurement name.
    pub measurement: String,
    /// Value encoding.
    pub encoding: Encoding,
    /// Page compression.
    pub compression: Compression,
}

/// Settings of [`convert`].
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertOptions {
    /// Per-series encoding and compression; series not listed use the defaults.
    pub series: Vec<SeriesOptions>,
    /// Encoding per data type, indexed by [`DataType::code`] (0..=11; default: PLAIN, as
    /// Java's `valueEncoder` default).
    pub default_encoding: [Encoding; 12],
    /// Compression of unlisted series (default: SNAPPY, Java's default).
    pub default_compression: Compression,
    /// Writer settings: points per page, page size, group size, index degree, ...
    pub properties: WriterProperties,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            series: Vec::new(),
            default_encoding: [Encoding::PLAIN; 12],
            default_compression: Compression::SNAPPY,
            properties: WriterProperties::default(),
        }
    }
}

impl ConvertOptions {
    /// Sets the default encoding of a data type.
    pub fn set_default_encoding(&mut self, data_type: DataType, encoding: Encoding) {
        self.default_encoding[data_type.code() as usize] = encoding;
    }

    /// The default encoding of a data type.
    pub fn default_encoding(&self, data_type: DataType) -> Encoding {
        self.default_encoding[data_type.code() as usize]
    }

    /// Parses one schema line `DEVICE<TAB>MEASUREMENT<TAB>ENCODING<TAB>COMPRESSION`
    /// (names escaped as in the dump).
    pub fn parse_schema_line(line: &str) -> Result<SeriesOptions> {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 4 {
            return Err(Error::invalid(format!(
                "expected 4 TAB-separated fields DEVICE, MEASUREMENT, ENCODING, COMPRESSION, found {}",
                f.len()
            )));
        }
        Ok(SeriesOptions {
            device: unescape(f[0]).and_then(into_string)?,
            measurement: unescape(f[1]).and_then(into_string)?,
            encoding: f[2].parse()?,
            compression: f[3].parse()?,
        })
    }

    /// Adds the schema lines of `text`; empty lines and lines starting with `#` are
    /// skipped. Errors name the line.
    pub fn add_schema(&mut self, text: impl BufRead) -> Result<()> {
        for (n, line) in text.lines().enumerate() {
            let line = line?;
            let line = line.strip_suffix('\r').unwrap_or(&line);
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let s = Self::parse_schema_line(line)
                .map_err(|e| Error::invalid(format!("schema line {}: {e}", n + 1)))?;
            self.series.push(s);
        }
        Ok(())
    }
}

fn into_string(b: Vec<u8>) -> Result<String> {
    String::from_utf8(b).map_err(|_| Error::invalid("a name must be valid UTF-8"))
}

/// Reverses the dump's text escaping.
fn unescape(s: &str) -> Result<Vec<u8>> {
    if !s.contains('\\') {
        return Ok(s.as_bytes().to_vec());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            let mut b = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            continue;
        }
        match chars.next().map(|(_, c)| c) {
            Some('\\') => out.push(b'\\'),
            Some('t') => out.push(b'\t'),
            Some('n') => out.push(b'\n'),
            Some('r') => out.push(b'\r'),
            Some('u') => {
                let hex = s
                    .get(i + 2..i + 6)
                    .filter(|h| h.len() == 4)
                    .ok_or_else(|| {
                        Error::invalid(format!("truncated \\u escape at character {i}"))
                    })?;
                let code = u32::from_str_radix(hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| Error::invalid(format!("bad escape \\u{hex}")))?;
                let mut b = [0u8; 4];
                out.extend_from_slice(code.encode_utf8(&mut b).as_bytes());
                for _ in 0..4 {
                    chars.next();
                }
            }
            other => {
                return Err(Error::invalid(format!(
                    "unknown escape \\{} at character {i}",
                    other.map_or(String::new(), |c| c.to_string())
                )))
            }
        }
    }
    Ok(out)
}

fn parse_value(data_type: DataType, s: &str) -> Result<Value> {
    let bad = |what: &str| Error::invalid(format!("value {s:?} is not a valid {what}"));
    Ok(match data_type {
        DataType::BOOLEAN => match s {
            "true" => Value::Boolean(true),
            "false" => Value::Boolean(false),
            _ => return Err(bad("BOOLEAN (true or false)")),
        },
        DataType::INT32 => Value::Int32(s.parse().map_err(|_| bad("INT32"))?),
        DataType::INT64 => Value::Int64(s.parse().map_err(|_| bad("INT64"))?),
        DataType::FLOAT => Value::Float(s.parse().map_err(|_| bad("FLOAT"))?),
        DataType::DOUBLE => Value::Double(s.parse().map_err(|_| bad("DOUBLE"))?),
        DataType::TEXT | DataType::STRING => Value::Text(unescape(s)?),
        DataType::TIMESTAMP => Value::Int64(s.parse().map_err(|_| bad("TIMESTAMP (int64)"))?),
        DataType::DATE => Value::Int32(parse_date(s).ok_or_else(|| bad("DATE (YYYY-MM-DD)"))?),
        DataType::BLOB => {
            Value::Text(parse_blob(s).ok_or_else(|| bad("BLOB (0x and hex digits)"))?)
        }
    })
}

/// `YYYY-MM-DD` as the `yyyyMMdd` int v4 stores (a real calendar date).
pub fn parse_date(s: &str) -> Option<i32> {
    let d = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    use chrono::Datelike;
    if !(1000..=9999).contains(&d.year()) {
        return None;
    }
    Some(d.year() * 10000 + d.month() as i32 * 100 + d.day() as i32)
}

/// `0x` + lower- or upper-case hex digits as bytes.
pub fn parse_blob(s: &str) -> Option<Vec<u8>> {
    let h = s.strip_prefix("0x")?;
    if h.len() % 2 != 0 {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

/// What [`convert_v4`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryV4 {
    /// Points written.
    pub points: u64,
    /// Series written.
    pub series: usize,
    /// File size in bytes.
    pub file_size: u64,
}

/// Converts a canonical dump into a TsFile format v4 written to `out`: every series
/// non-aligned, one chunk group per device holding all of its points (pages cut by the
/// writer properties). A series' times must be strictly increasing. Errors name the line.
pub fn convert_v4(
    mut tsv: impl BufRead,
    out: impl Write,
    opts: &ConvertOptions,
) -> Result<SummaryV4> {
    use crate::basic::Column;
    use crate::file::v4::{SeriesChunk, TsFileWriterV4};
    use std::collections::BTreeMap;
    let overrides: HashMap<(&str, &str), &SeriesOptions> = opts
        .series
        .iter()
        .map(|s| ((s.device.as_str(), s.measurement.as_str()), s))
        .collect();
    // device -> measurement -> (schema, times, values)
    type Series = (MeasurementSchema, Vec<i64>, Column);
    let mut data: BTreeMap<String, BTreeMap<String, Series>> = BTreeMap::new();
    let mut line = String::new();
    let mut n = 0usize;
    let mut points = 0u64;
    loop {
        line.clear();
        if tsv.read_line(&mut line)? == 0 {
            break;
        }
        n += 1;
        let at = |e: Error| Error::invalid(format!("TSV line {n}: {e}"));
        let (d, m, data_type, time, value) = parse_tsv_line(&line).map_err(at)?;
        let dev = data.entry(d.clone()).or_default();
        let entry = match dev.get_mut(&m) {
            Some(e) => e,
            None => {
                let (encoding, compression) = match overrides.get(&(d.as_str(), m.as_str())) {
                    Some(o) => (o.encoding, o.compression),
                    None => (opts.default_encoding(data_type), opts.default_compression),
                };
                let schema = MeasurementSchema::new(&m, data_type, encoding, compression);
                crate::file::v4::writer::validate_schema(&schema).map_err(at)?;
                dev.entry(m.clone())
                    .or_insert((schema, Vec::new(), Column::new(data_type)))
            }
        };
        if entry.0.data_type != data_type {
            return Err(at(Error::invalid(format!(
                "series {d}.{m} was {} on an earlier line, now {data_type}",
                entry.0.data_type
            ))));
        }
        if let Some(last) = entry.1.last() {
            if time <= *last {
                return Err(at(Error::invalid(format!(
                    "time {time} of {d}.{m} is not after {last} (v4 series need strictly increasing times)"
                ))));
            }
        }
        entry.1.push(time);
        entry.2.push(value).map_err(at)?;
        points += 1;
    }
    let mut w = TsFileWriterV4::new(out, opts.properties.clone())?;
    let mut series = 0;
    for (device, ms) in &data {
        let chunks: Vec<SeriesChunk<'_>> = ms
            .values()
            .map(|(s, t, v)| SeriesChunk {
                schema: s,
                times: t,
                values: v,
            })
            .collect();
        series += chunks.len();
        w.write_chunk_group(device, &chunks)?;
    }
    let (_, file_size) = w.finish()?;
    Ok(SummaryV4 {
        points,
        series,
        file_size,
    })
}

/// Converts a canonical dump into a TsFile written to `out`. Errors name the line.
pub fn convert(
    mut tsv: impl BufRead,
    out: impl Write,
    opts: &ConvertOptions,
) -> Result<FileSummary> {
    let overrides: HashMap<(&str, &str), &SeriesOptions> = opts
        .series
        .iter()
        .map(|s| ((s.device.as_str(), s.measurement.as_str()), s))
        .collect();
    let mut w = TsFileWriter::new(out, opts.properties.clone())?;
    let mut line = String::new();
    let mut device = String::new();
    let mut measurement = String::new();
    let mut n = 0usize;
    loop {
        line.clear();
        if tsv.read_line(&mut line)? == 0 {
            break;
        }
        n += 1;
        let at = |e: Error| Error::invalid(format!("TSV line {n}: {e}"));
        let (d, m, data_type, time, value) = parse_tsv_line(&line).map_err(at)?;
        if d != device || m != measurement {
            match w.schema(&d, &m) {
                Some(s) if s.data_type != data_type => {
                    return Err(at(Error::invalid(format!(
                        "series {d}.{m} was {} on an earlier line, now {data_type}",
                        s.data_type
                    ))));
                }
                Some(_) => {}
                None => {
                    let (encoding, compression) = match overrides.get(&(d.as_str(), m.as_str())) {
                        Some(o) => (o.encoding, o.compression),
                        None => (opts.default_encoding(data_type), opts.default_compression),
                    };
                    let schema = MeasurementSchema::new(&m, data_type, encoding, compression);
                    w.register(&d, schema).map_err(at)?;
                }
            }
            device = d;
            measurement = m;
        }
        w.write_record(&device, time, &[(measurement.as_str(), value)])
            .map_err(at)?;
    }
    let (_, summary) = w.close()?;
    Ok(summary)
}

/// One canonical-dump line (`DEVICE`, `MEASUREMENT`, `TYPE`, `TIME`, `VALUE`, TAB-separated,
/// escaped as the dump escapes them), its line end removed.
fn parse_tsv_line(line: &str) -> Result<(String, String, DataType, i64, Value)> {
    let text = line.strip_suffix('\n').unwrap_or(line);
    let text = text.strip_suffix('\r').unwrap_or(text);
    let mut f = text.splitn(5, '\t');
    let (Some(fd), Some(fm), Some(ft), Some(ftime), Some(fv)) =
        (f.next(), f.next(), f.next(), f.next(), f.next())
    else {
        return Err(Error::invalid(
            "expected 5 TAB-separated fields DEVICE, MEASUREMENT, TYPE, TIME, VALUE",
        ));
    };
    let d = into_string(unescape(fd)?)?;
    let m = into_string(unescape(fm)?)?;
    let data_type: DataType = ft.parse()?;
    let time: i64 = ftime
        .parse()
        .map_err(|_| Error::invalid(format!("time {ftime:?} is not an INT64")))?;
    let value = parse_value(data_type, fv)?;
    Ok((d, m, data_type, time, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape_reverses_the_dump_rules() {
        assert_eq!(unescape("a\\tb\\nc\\rd\\\\e").unwrap(), b"a\tb\nc\rd\\e");
        assert_eq!(unescape("\\u0000x\\u007F").unwrap(), b"\0x\x7f");
        assert_eq!(unescape("中\\u0001").unwrap(), "中\u{1}".as_bytes());
        assert!(unescape("\\q").is_err());
        assert!(unescape("\\u12").is_err());
        assert!(unescape("tail\\").is_err());
    }

    #[test]
    fn java_float_text_parses() {
        for (s, v) in [
            ("Infinity", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("1.0E-4", 1.0e-4),
            ("4.9E-324", 4.9e-324),
            ("-0.0", -0.0),
        ] {
            assert_eq!(parse_value(DataType::DOUBLE, s).unwrap(), Value::Double(v));
        }
        match parse_value(DataType::FLOAT, "NaN").unwrap() {
            Value::Float(f) => assert!(f.is_nan()),
            v => panic!("{v:?}"),
        }
        assert_eq!(
            parse_value(DataType::FLOAT, "1.4E-45").unwrap(),
            Value::Float(f32::from_bits(1))
        );
        assert!(parse_value(DataType::BOOLEAN, "TRUE").is_err());
        assert!(parse_value(DataType::INT32, "2147483648").is_err());
    }

    #[test]
    fn errors_name_the_line() {
        let tsv = "d\ts\tINT64\t1\t5\nd\ts\tINT64\tx\t6\n";
        let e = convert(tsv.as_bytes(), Vec::new(), &ConvertOptions::default()).unwrap_err();
        assert!(e.to_string().contains("TSV line 2"), "{e}");
        let tsv = "d\ts\tINT64\t1\t5\nd\ts\tINT32\t2\t6\n";
        let e = convert(tsv.as_bytes(), Vec::new(), &ConvertOptions::default()).unwrap_err();
        assert!(e.to_string().contains("TSV line 2"), "{e}");
        let tsv = "d\ts\tINT64\t5\t5\nd\ts\tINT64\t4\t6\n";
        let e = convert(tsv.as_bytes(), Vec::new(), &ConvertOptions::default()).unwrap_err();
        assert!(
            e.to_string().contains("line 2") && e.to_string().contains("time 4"),
            "{e}"
        );
        let e = convert(
            "d\ts\tINT64\t1\n".as_bytes(),
            Vec::new(),
            &ConvertOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("TSV line 1"), "{e}");
    }

    #[test]
    fn schema_lines() {
        let mut o = ConvertOptions::default();
        o.add_schema("# c\nroot.d\\t1\ts1\tts_2diff\tUNCOMPRESSED\n\n".as_bytes())
            .unwrap();
        assert_eq!(
            o.series,
            [SeriesOptions {
                device: "root.d\t1".into(),
                measurement: "s1".into(),
                encoding: Encoding::TS_2DIFF,
                compression: Compression::UNCOMPRESSED
            }]
        );
        let e = o.add_schema("a\tb\tPLAIN\n".as_bytes()).unwrap_err();
        assert!(e.to_string().contains("schema line 1"), "{e}");
        let e = o.add_schema("a\tb\tZIP\tSNAPPY\n".as_bytes()).unwrap_err();
        assert!(e.to_string().contains("schema line 1"), "{e}");
    }

    #[test]
    fn converts_a_small_dump() {
        let o = ConvertOptions {
            default_compression: Compression::UNCOMPRESSED,
            ..ConvertOptions::default()
        };
        let tsv = "d1\ts1\tINT64\t1\t10\nd1\ts1\tINT64\t2\t20\nd1\ts1\tINT64\t3\t30\n";
        let mut out = Vec::new();
        let s = convert(tsv.as_bytes(), &mut out, &o).unwrap();
        // The spec's minimal file (§12.4).
        assert_eq!(out.len(), 481);
        assert_eq!((s.points, s.chunks, s.file_size), (3, 1, 481));
    }
}
