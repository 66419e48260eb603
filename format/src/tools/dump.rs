//! The canonical point dump of the conformance corpus (`NAME.expected.tsv`).
//!
//! One line per point, `DEVICE \t MEASUREMENT \t TYPE \t TIME \t VALUE \n`, sorted by
//! device and measurement (UTF-8 bytes), then by signed time; points with equal times
//! keep file order (chunk offset, then position in the chunk). Points come from the
//! index/query path; unlike Java's query reader (conformance quirk 5) a time of
//! exactly `i64::MIN` is kept.

use crate::basic::{Column, Value};
use crate::errors::Result;
use crate::file::reader::{PageData, Source, TsFileReader};
use crate::tools::javafmt::{
    escape_text, java_f32, java_f64, push_escaped_bytes, push_java_f32, push_java_f64,
};
use std::io::Write;

/// The canonical text of a value (the dump's VALUE column and the meta summary's
/// min/max/first/last).
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Boolean(b) => b.to_string(),
        Value::Int32(x) => x.to_string(),
        Value::Int64(x) => x.to_string(),
        Value::Float(x) => java_f32(*x),
        Value::Double(x) => java_f64(*x),
        Value::Text(b) => escape_text(b),
    }
}

pub(crate) fn push_value(line: &mut String, col: &Column, i: usize) {
    use std::fmt::Write as _;
    match col {
        Column::Boolean(v) => line.push_str(if v[i] { "true" } else { "false" }),
        Column::Int32(v) => {
            let _ = write!(line, "{}", v[i]);
        }
        Column::Int64(v) => {
            let _ = write!(line, "{}", v[i]);
        }
        Column::Float(v) => push_java_f32(line, v[i]),
        Column::Double(v) => push_java_f64(line, v[i]),
        Column::Text(v) => push_escaped_bytes(line, &v[i]),
    }
}

/// Writes the canonical dump of every point of `reader` to `out`. A file without
/// points gives no output.
pub fn dump<S: Source>(reader: &TsFileReader<S>, out: &mut impl Write) -> Result<()> {
    let mut devices = reader.index_tree()?.devices;
    devices.sort_by(|a, b| a.device.as_bytes().cmp(b.device.as_bytes()));
    let mut pages: Vec<PageData> = Vec::new();
    let mut order: Vec<(i64, u32, u32)> = Vec::new();
    let mut text = String::new();
    for d in &mut devices {
        d.series
            .sort_by(|a, b| a.1.measurement.as_bytes().cmp(b.1.measurement.as_bytes()));
        let dev = escape_text(d.device.as_bytes());
        for (_, ts) in &d.series {
            let prefix = format!(
                "{dev}\t{}\t{}\t",
                escape_text(ts.measurement.as_bytes()),
                ts.data_type.name()
            );
            // Chunks come in file order and pages in chunk order, so a stable sort by
            // time keeps ties in file order.
            let mut sr = reader.series_reader_for(&d.device, ts)?;
            pages.clear();
            order.clear();
            loop {
                let mut p = PageData::new(ts.data_type);
                if !sr.next_page(&mut p)? {
                    break;
                }
                let k = pages.len() as u32;
                order.extend(p.times.iter().enumerate().map(|(i, t)| (*t, k, i as u32)));
                pages.push(p);
            }
            order.sort_by_key(|e| e.0);
            text.clear();
            for (t, k, i) in &order {
                use std::fmt::Write as _;
                text.push_str(&prefix);
                let _ = write!(text, "{t}\t");
                push_value(&mut text, &pages[*k as usize].values, *i as usize);
                text.push('\n');
            }
            out.write_all(text.as_bytes())?;
        }
    }
    Ok(())
}

/// The canonical text of a value of a v4 series of `data_type`: as [`value_text`],
/// except DATE (`YYYY-MM-DD` from the stored `yyyyMMdd`) and BLOB (`0x` + lower-case hex).
pub fn value_text_v4(data_type: crate::basic::DataType, v: &Value) -> String {
    use crate::basic::DataType;
    match (data_type, v) {
        (DataType::DATE, Value::Int32(d)) => date_text(*d),
        (DataType::BLOB, Value::Text(b)) => {
            let mut s = String::with_capacity(2 + 2 * b.len());
            s.push_str("0x");
            for x in b {
                use std::fmt::Write as _;
                let _ = write!(s, "{x:02x}");
            }
            s
        }
        _ => value_text(v),
    }
}

/// `yyyyMMdd` as `YYYY-MM-DD` (digits as stored, even if not a real date).
pub fn date_text(d: i32) -> String {
    format!("{:04}-{:02}-{:02}", d / 10000, (d / 100) % 100, d % 100)
}

/// Writes the canonical dump of a v4 file (same format as [`dump`]; TYPE is the v4 type
/// name, values as [`value_text_v4`]; nulls of aligned series are not points).
pub fn dump_v4(reader: &crate::file::v4::TsFileReaderV4, out: &mut impl Write) -> Result<()> {
    use crate::file::v4::{TIME_COLUMN_MASK, VALUE_COLUMN_MASK};
    let mut devices = reader.devices()?;
    devices.sort_by(|a, b| a.device.path().as_bytes().cmp(b.device.path().as_bytes()));
    for d in &devices {
        let time = d.series.iter().find(|s| s.mask() & TIME_COLUMN_MASK != 0);
        let mut series: Vec<_> = d
            .series
            .iter()
            .filter(|s| s.mask() & TIME_COLUMN_MASK == 0)
            .collect();
        series.sort_by(|a, b| a.measurement.as_bytes().cmp(b.measurement.as_bytes()));
        let dev = escape_text(d.device.path().as_bytes());
        for ts in series {
            let dt = crate::basic::DataType::from_code(ts.type_code as i16).ok_or_else(|| {
                crate::errors::Error::format(
                    ts.offset,
                    format_args!("a known data type, found code {}", ts.type_code),
                )
            })?;
            let aligned_time = if ts.mask() & VALUE_COLUMN_MASK != 0 {
                time
            } else {
                None
            };
            let mut points = reader.series_points(ts, aligned_time)?;
            points.sort_by_key(|p| p.0);
            let mut text = String::new();
            let prefix = format!(
                "{dev}\t{}\t{}\t",
                escape_text(ts.measurement.as_bytes()),
                dt.name()
            );
            for (t, v) in &points {
                use std::fmt::Write as _;
                text.push_str(&prefix);
                let _ = writeln!(text, "{t}\t{}", value_text_v4(dt, v));
            }
            out.write_all(text.as_bytes())?;
        }
    }
    Ok(())
}
