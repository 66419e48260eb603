//! `tsfiled sequence FILE`: the sequential reader of the seed's `TsFileSequenceRead`
//! (apache/tsfile `ff5e342d`, format 000002): every structure of the data section in
//! file order with its position (chunk headers, page headers with their statistics and
//! the page's points, chunk group footers, version records, the separator), then the
//! metadata (`TsFileMetadata`, its version info and bloom filter, and every series with
//! its statistics, sorted by device and measurement).
//!
//! Format v4 (TsFile 2.x) files are listed the same way by [`sequence_v4`]: chunk group
//! headers, chunk headers (time, value or plain chunks), page headers with their
//! statistics and points (an aligned value page's points take the times of the same
//! page of the group's time chunk; nulls are shown as `null`), operation index ranges
//! and the separator, then the metadata (every table's index root, the bloom filter,
//! the file properties and every series with its statistics).
//!
//! Lines start with the absolute position of the structure (`POSITION: kind`), points
//! are `\t\t\tTIME\tVALUE` with values in the canonical dump format. The third line
//! names the format read (`file version: 000002` or `file version: 4`).

use crate::basic::{DataType, Value};
use crate::errors::{Error, Result};
use crate::file::reader::{PageData, Source, TsFileReader, WalkEvent};
use crate::file::v4::metadata::{ChunkHeaderV4, DeviceId};
use crate::file::v4::statistics::{StatisticsV4, ValuesV4};
use crate::file::v4::{marker, TsFileReaderV4, TIME_COLUMN_MASK, VALUE_COLUMN_MASK, VECTOR_TYPE};
use crate::tools::dump::{push_value, value_text_v4};
use crate::tools::javafmt::{escape_text, java_f32, java_f64};
use crate::tools::sketch::statistics_text;
use crate::util::io::ByteReader;
use std::fmt::Write as _;
use std::io::Write;

/// Writes the sequential listing of the complete TsFile in `src` to `out` (either
/// format: a v4 file is read whole and listed by [`sequence_v4`]).
pub fn sequence<S: Source>(src: S, out: &mut impl Write) -> Result<()> {
    let len = src.size()?;
    let mut head = [0u8; 12];
    src.read_exact_at(0, &mut head[..(len.min(12) as usize)])?;
    if crate::file::v4::is_v4(&head[..(len.min(12) as usize)]) {
        let mut bytes = vec![0u8; len as usize];
        src.read_exact_at(0, &mut bytes)?;
        return sequence_v4(&TsFileReaderV4::open(bytes)?, out);
    }
    let reader = TsFileReader::open(src)?;
    let mut t = String::new();
    let _ = writeln!(t, "file length: {len}");
    let _ = writeln!(
        t,
        "0: file magic head: {}",
        String::from_utf8_lossy(&head[..6])
    );
    let _ = writeln!(
        t,
        "6: file version: {}",
        String::from_utf8_lossy(&head[6..])
    );
    out.write_all(t.as_bytes())?;
    let mut walk = reader.walk();
    let mut page = PageData::new(crate::DataType::INT32);
    while let Some(ev) = walk.next() {
        let ev = ev?;
        t.clear();
        match &ev {
            WalkEvent::ChunkHeader { offset, header, .. } => {
                let _ = writeln!(
                    t,
                    "{offset}: chunk header: measurement: {} dataType: {} encoding: {} compression: {} dataSize: {} numOfPages: {}",
                    escape_text(header.measurement.as_bytes()),
                    header.data_type,
                    header.encoding,
                    header.compression,
                    header.data_size,
                    header.num_pages
                );
            }
            WalkEvent::Page(p) => {
                let _ = writeln!(
                    t,
                    "{}: page header: uncompressedSize: {} compressedSize: {} {}",
                    p.offset,
                    p.header.uncompressed_size,
                    p.header.compressed_size,
                    statistics_text(&p.header.statistics)
                );
                page.reset(p.data_type);
                walk.decode_page(p, &mut page)?;
                let _ = writeln!(t, "\t\tpoints: {}", page.times.len());
                for (i, time) in page.times.iter().enumerate() {
                    let _ = write!(t, "\t\t\t{time}\t");
                    push_value(&mut t, &page.values, i);
                    t.push('\n');
                }
            }
            WalkEvent::ChunkGroupFooter { offset, footer, .. } => {
                let _ = writeln!(
                    t,
                    "{offset}: chunk group footer: device: {} dataSize: {} numberOfChunks: {}",
                    escape_text(footer.device.as_bytes()),
                    footer.data_size,
                    footer.num_chunks
                );
            }
            WalkEvent::Version { offset, version } => {
                let _ = writeln!(t, "{offset}: version: {version}");
            }
            WalkEvent::Separator { offset } => {
                let _ = writeln!(t, "{offset}: separator");
            }
        }
        out.write_all(t.as_bytes())?;
    }
    t.clear();
    let m = reader.metadata();
    let size_pos = len.saturating_sub(10);
    let _ = writeln!(t, "[metadata]");
    let _ = writeln!(
        t,
        "metaOffset: {} totalChunkNum: {} invalidChunkNum: {}",
        m.meta_offset, m.total_chunk_num, m.invalid_chunk_num
    );
    for (offset, version) in &m.version_info {
        let _ = writeln!(t, "version info: {offset} {version}");
    }
    if let Some(b) = &m.bloom_filter {
        let _ = writeln!(
            t,
            "bloom filter: size: {} hashFunctions: {}",
            b.size(),
            b.hash_count()
        );
    }
    let mut series = reader.all_series()?;
    series.sort_by(|a, b| {
        (a.0.as_bytes(), a.1.measurement.as_bytes())
            .cmp(&(b.0.as_bytes(), b.1.measurement.as_bytes()))
    });
    for (device, ts) in &series {
        let _ = writeln!(
            t,
            "series: {}.{} dataType: {} {}",
            escape_text(device.as_bytes()),
            escape_text(ts.measurement.as_bytes()),
            ts.data_type,
            statistics_text(&ts.statistics)
        );
    }
    let _ = writeln!(t, "{size_pos}: metadata size");
    let _ = writeln!(t, "{}: file magic tail", size_pos + 4);
    out.write_all(t.as_bytes())?;
    Ok(())
}

/// The statistics of a v4 page, chunk or series in the style of [`statistics_text`]:
/// `startTime: S endTime: E count: N` and the type's values in brackets (DATE as
/// `YYYY-MM-DD`, BLOB and the time column have none, STRING also min and max).
pub fn statistics_text_v4(s: &StatisticsV4) -> String {
    let mut t = format!(
        "startTime: {} endTime: {} count: {}",
        s.start_time, s.end_time, s.count
    );
    let date = s.type_code == DataType::DATE.code() as u8;
    let text = |b: &[u8]| escape_text(b);
    let _ = match &s.values {
        ValuesV4::Boolean { first, last, sum } => {
            write!(t, " [firstValue:{first},lastValue:{last},sumValue:{sum}]")
        }
        ValuesV4::Int32 {
            min,
            max,
            first,
            last,
            sum,
        } => {
            let f = |v: i32| {
                if date {
                    value_text_v4(DataType::DATE, &Value::Int32(v))
                } else {
                    v.to_string()
                }
            };
            write!(
                t,
                " [minValue:{},maxValue:{},firstValue:{},lastValue:{},sumValue:{sum}]",
                f(*min),
                f(*max),
                f(*first),
                f(*last)
            )
        }
        ValuesV4::Int64 {
            min,
            max,
            first,
            last,
            sum,
        } => write!(
            t,
            " [minValue:{min},maxValue:{max},firstValue:{first},lastValue:{last},sumValue:{}]",
            java_f64(*sum)
        ),
        ValuesV4::Float {
            min,
            max,
            first,
            last,
            sum,
        } => write!(
            t,
            " [minValue:{},maxValue:{},firstValue:{},lastValue:{},sumValue:{}]",
            java_f32(*min),
            java_f32(*max),
            java_f32(*first),
            java_f32(*last),
            java_f64(*sum)
        ),
        ValuesV4::Double {
            min,
            max,
            first,
            last,
            sum,
        } => write!(
            t,
            " [minValue:{},maxValue:{},firstValue:{},lastValue:{},sumValue:{}]",
            java_f64(*min),
            java_f64(*max),
            java_f64(*first),
            java_f64(*last),
            java_f64(*sum)
        ),
        ValuesV4::Text { first, last } => {
            write!(t, " [firstValue:{},lastValue:{}]", text(first), text(last))
        }
        ValuesV4::String {
            first,
            last,
            min,
            max,
        } => write!(
            t,
            " [minValue:{},maxValue:{},firstValue:{},lastValue:{}]",
            text(min),
            text(max),
            text(first),
            text(last)
        ),
        ValuesV4::Blob | ValuesV4::Time => Ok(()),
    };
    t
}

fn type_text(code: u8) -> String {
    if code == VECTOR_TYPE {
        return "VECTOR".to_string();
    }
    DataType::from_code(code as i16)
        .map(|t| t.name().to_string())
        .unwrap_or_else(|| format!("type code {code}"))
}

fn chunk_kind(h: &ChunkHeaderV4) -> &'static str {
    match (
        h.chunk_type & TIME_COLUMN_MASK != 0,
        h.chunk_type & VALUE_COLUMN_MASK != 0,
        h.single_page(),
    ) {
        (true, _, true) => "time chunk header (one page)",
        (true, _, false) => "time chunk header",
        (_, true, true) => "value chunk header (one page)",
        (_, true, false) => "value chunk header",
        (_, _, true) => "chunk header (one page)",
        _ => "chunk header",
    }
}

/// Writes the sequential listing of a format v4 file (see the module documentation).
pub fn sequence_v4(reader: &TsFileReaderV4, out: &mut impl Write) -> Result<()> {
    let bytes = reader.bytes();
    let len = bytes.len() as u64;
    let meta = reader.metadata();
    let mut t = String::new();
    let _ = writeln!(t, "file length: {len}");
    let _ = writeln!(
        t,
        "0: file magic head: {}",
        String::from_utf8_lossy(&bytes[..6])
    );
    let _ = writeln!(t, "6: file version: {}", bytes[6]);
    out.write_all(t.as_bytes())?;
    let end = meta.meta_offset;
    let mut pos = crate::file::v4::HEADER_LEN;
    // Times of the pages of the current chunk group's time chunk (aligned devices).
    let mut time_pages: Vec<Vec<i64>> = Vec::new();
    loop {
        t.clear();
        let m = *bytes
            .get(pos as usize)
            .filter(|_| pos <= end)
            .ok_or_else(|| Error::format(pos, "a marker before the metadata"))?;
        match m {
            marker::CHUNK_GROUP_HEADER => {
                let mut r = ByteReader::new(&bytes[pos as usize + 1..end as usize], pos + 1);
                let d = DeviceId::deserialize(&mut r)?;
                let _ = writeln!(
                    t,
                    "{pos}: chunk group header: device: {}",
                    escape_text(d.path().as_bytes())
                );
                time_pages.clear();
                pos = r.offset();
            }
            marker::OPERATION_INDEX_RANGE => {
                let mut r = ByteReader::new(&bytes[pos as usize + 1..end as usize], pos + 1);
                let a = r.read_i64("operation index range start")?;
                let b = r.read_i64("operation index range end")?;
                let _ = writeln!(t, "{pos}: operation index range: {a} {b}");
                pos = r.offset();
            }
            marker::SEPARATOR => {
                let _ = writeln!(t, "{pos}: separator");
                out.write_all(t.as_bytes())?;
                break;
            }
            m if matches!(
                m & 0x3f,
                marker::CHUNK_HEADER | marker::ONLY_ONE_PAGE_CHUNK_HEADER
            ) =>
            {
                let (h, data_at) = reader.chunk_header(pos)?;
                let _ = writeln!(
                    t,
                    "{pos}: {}: measurement: {} dataType: {} encoding: {} compression: {} dataSize: {}",
                    chunk_kind(&h),
                    escape_text(h.measurement.as_bytes()),
                    type_text(h.type_code),
                    h.encoding().map(|e| e.v4_name().to_string()).unwrap_or_else(|| format!("code {}", h.encoding)),
                    h.compression().map(|c| c.name().to_string()).unwrap_or_else(|| format!("code {}", h.compression)),
                    h.data_size
                );
                let (_, pages) = reader.chunk_pages(pos)?;
                let is_time = h.chunk_type & TIME_COLUMN_MASK != 0;
                let is_value = h.chunk_type & VALUE_COLUMN_MASK != 0;
                if is_time {
                    time_pages.clear();
                }
                let dt = DataType::from_code(h.type_code as i16);
                for (i, p) in pages.iter().enumerate() {
                    let stats = p
                        .statistics
                        .as_ref()
                        .map(|s| format!(" {}", statistics_text_v4(s)))
                        .unwrap_or_default();
                    let mut r = ByteReader::new(&bytes[p.offset as usize..], p.offset);
                    let unc = r.read_uvarint("page uncompressed size")?;
                    if p.empty {
                        let _ = writeln!(t, "{}: page header: all null", p.offset);
                    } else {
                        let comp = r.read_uvarint("page compressed size")?;
                        let _ = writeln!(
                            t,
                            "{}: page header: uncompressedSize: {unc} compressedSize: {comp}{stats}",
                            p.offset
                        );
                    }
                    if is_time {
                        let _ = writeln!(t, "\t\ttimes: {}", p.times.len());
                        for time in &p.times {
                            let _ = writeln!(t, "\t\t\t{time}");
                        }
                        time_pages.push(p.times.clone());
                        continue;
                    }
                    let times: &[i64] = if is_value {
                        time_pages.get(i).map(Vec::as_slice).unwrap_or(&[])
                    } else {
                        &p.times
                    };
                    if p.empty {
                        let _ = writeln!(t, "\t\tpoints: 0");
                        continue;
                    }
                    if times.len() != p.values.len() {
                        return Err(Error::format(
                            p.offset,
                            format_args!(
                                "{} values for {} times of the page",
                                p.values.len(),
                                times.len()
                            ),
                        ));
                    }
                    let present = p.values.iter().filter(|v| v.is_some()).count();
                    let _ = writeln!(t, "\t\tpoints: {present}");
                    for (time, v) in times.iter().zip(&p.values) {
                        match (v, dt) {
                            (Some(v), Some(dt)) => {
                                let _ = writeln!(t, "\t\t\t{time}\t{}", value_text_v4(dt, v));
                            }
                            _ => {
                                let _ = writeln!(t, "\t\t\t{time}\tnull");
                            }
                        }
                    }
                }
                pos = data_at + h.data_size as u64;
            }
            m => {
                return Err(Error::format(
                    pos,
                    format_args!(
                        "a v4 marker (0, 1, 2, 4, 5, 0x41, 0x45, 0x81, 0x85), found {m:#04x}"
                    ),
                ))
            }
        }
        out.write_all(t.as_bytes())?;
    }
    t.clear();
    let _ = writeln!(t, "[metadata]");
    let _ = writeln!(
        t,
        "{}: file metadata: metaOffset: {}",
        reader.metadata_pos(),
        meta.meta_offset
    );
    for (table, root) in &meta.tables {
        let _ = writeln!(
            t,
            "table: {} index root: {} entries, {} node",
            escape_text(table.as_bytes()),
            root.entries.len(),
            if root.is_device_level() {
                "device-level"
            } else {
                "measurement-level"
            }
        );
    }
    if let Some(b) = &meta.bloom {
        let _ = writeln!(
            t,
            "bloom filter: size: {} hashFunctions: {}",
            b.size(),
            b.hash_count()
        );
    }
    for (k, v) in &meta.properties {
        let _ = writeln!(
            t,
            "property: {} = {}",
            escape_text(k.as_bytes()),
            v.as_deref()
                .map(|v| escape_text(v.as_bytes()))
                .unwrap_or_else(|| "null".to_string())
        );
    }
    let mut devices = reader.devices()?;
    devices.sort_by(|a, b| a.device.cmp(&b.device));
    for d in &devices {
        let mut series: Vec<_> = d.series.iter().collect();
        series.sort_by(|a, b| a.measurement.as_bytes().cmp(b.measurement.as_bytes()));
        for ts in series {
            let _ = writeln!(
                t,
                "{}: series: {}.{} dataType: {} chunks: {} {}",
                ts.offset,
                escape_text(d.device.path().as_bytes()),
                escape_text(ts.measurement.as_bytes()),
                type_text(ts.type_code),
                ts.chunks.len(),
                statistics_text_v4(&ts.statistics)
            );
        }
    }
    let size_pos = len.saturating_sub(10);
    let _ = writeln!(t, "{size_pos}: metadata size");
    let _ = writeln!(t, "{}: file magic tail", size_pos + 4);
    out.write_all(t.as_bytes())?;
    Ok(())
}

/// Every golden file of the Java 0.10 corpus (`format/tests/fixtures`): the listing's
/// structure counts, positions and points against the Java oracle's `meta.json` and
/// dump, not against our own reader.
#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::path::PathBuf;

    fn num(m: &serde_json::Value, k: &str) -> i64 {
        m[k].as_i64().unwrap_or_else(|| panic!("{k}"))
    }

    #[test]
    fn golden_files_list_what_the_java_oracle_found() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            let Some(base) = name.strip_suffix(".tsfile") else {
                continue;
            };
            let meta: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join(format!("{base}.meta.json"))).unwrap(),
            )
            .unwrap();
            let tsv = std::fs::read_to_string(dir.join(format!("{base}.expected.tsv"))).unwrap();
            // "TIME\tVALUE" of every point the Java reader returned.
            let points: HashSet<String> = tsv
                .lines()
                .map(|l| l.splitn(4, '\t').nth(3).unwrap().to_string())
                .collect();
            let mut out = Vec::new();
            sequence(std::fs::File::open(dir.join(&name)).unwrap(), &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            let count = |pat: &str| text.lines().filter(|l| l.contains(pat)).count() as i64;
            assert_eq!(
                count(": chunk group footer:"),
                num(&meta, "chunk_groups"),
                "{base}"
            );
            assert_eq!(count(": chunk header:"), num(&meta, "chunks"), "{base}");
            assert_eq!(
                count(": version: "),
                num(&meta, "version_markers"),
                "{base}"
            );
            assert_eq!(count("series: "), num(&meta, "series_count"), "{base}");
            let sep = format!("{}: separator", num(&meta, "meta_offset"));
            assert_eq!(count(&sep), 1, "{base}: {sep}");
            assert!(
                text.contains(&format!(
                    "metaOffset: {} totalChunkNum: {}",
                    num(&meta, "meta_offset"),
                    num(&meta, "total_chunk_num")
                )),
                "{base}"
            );
            assert!(
                text.starts_with(&format!("file length: {}\n", num(&meta, "file_length"))),
                "{base}"
            );
            let mut total = 0;
            for l in text.lines() {
                if let Some(k) = l.strip_prefix("\t\tpoints: ") {
                    total += k.parse::<i64>().unwrap();
                } else if let Some(p) = l.strip_prefix("\t\t\t") {
                    assert!(
                        points.contains(p),
                        "{base}: point {p:?} not in the Java dump"
                    );
                }
            }
            assert_eq!(total, num(&meta, "point_count"), "{base}");
            n += 1;
        }
        assert_eq!(n, 56);
    }
}
