//! `tsfiled sequence FILE`: the sequential reader of the seed's `TsFileSequenceRead`
//! (apache/tsfile `ff5e342d`, format 000002): every structure of the data section in
//! file order with its position (chunk headers, page headers with their statistics and
//! the page's points, chunk group footers, version records, the separator), then the
//! metadata (`TsFileMetadata`, its version info and bloom filter, and every series with
//! its statistics, sorted by device and measurement).
//!
//! Lines start with the absolute position of the structure (`POSITION: kind`), points
//! are `\t\t\tTIME\tVALUE` with values in the canonical dump format.

use crate::errors::Result;
use crate::file::reader::{PageData, Source, TsFileReader, WalkEvent};
use crate::tools::dump::push_value;
use crate::tools::javafmt::escape_text;
use crate::tools::sketch::statistics_text;
use std::fmt::Write as _;
use std::io::Write;

/// Writes the sequential listing of the complete TsFile in `src` to `out`.
pub fn sequence<S: Source>(src: S, out: &mut impl Write) -> Result<()> {
    let len = src.size()?;
    let mut head = [0u8; 12];
    src.read_exact_at(0, &mut head)?;
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
