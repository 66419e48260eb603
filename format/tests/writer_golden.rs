//! The writer against the Java golden files: every `size_comparable` file of the
//! conformance corpus is rewritten from its dump with its settings; the result must be
//! within 2% of the Java file's size, structurally sound, and, for UNCOMPRESSED files,
//! byte-identical to the Java file.

mod common;

use common::{check_file, fixture_dir};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use tsfile::basic::Compression;
use tsfile::file::properties::WriterProperties;
use tsfile::file::reader::TsFileReader;
use tsfile::tools::convert::{convert, ConvertOptions, SeriesOptions};
use tsfile::tools::dump::dump;

fn settings() -> BTreeMap<String, Json> {
    let text = std::fs::read_to_string(fixture_dir().join("settings.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn options(s: &Json) -> ConvertOptions {
    let num = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("settings key {k}")) as usize;
    let series = s["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let f = |i: usize| row[i].as_str().unwrap().to_string();
            SeriesOptions {
                device: f(0),
                measurement: f(1),
                encoding: f(3).parse().unwrap(),
                compression: f(4).parse().unwrap(),
            }
        })
        .collect();
    ConvertOptions {
        series,
        properties: WriterProperties {
            max_points_per_page: num("max_points_per_page"),
            page_size_bytes: num("page_size_bytes"),
            group_size_bytes: num("group_size_bytes"),
            max_degree: num("max_degree"),
            ..WriterProperties::default()
        },
        ..ConvertOptions::default()
    }
}

/// Points per series in a dump.
fn tsv_counts(tsv: &str) -> BTreeMap<(String, String), i64> {
    let mut m = BTreeMap::new();
    for line in tsv.lines() {
        let mut f = line.split('\t');
        let d = f.next().unwrap().to_string();
        let s = f.next().unwrap().to_string();
        *m.entry((d, s)).or_insert(0) += 1;
    }
    m
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or((a.len() != b.len()).then(|| a.len().min(b.len())))
}

#[test]
fn java_golden_files_pass_the_structural_checker() {
    // Validates the checker used below on the 56 Java files themselves.
    let dir = fixture_dir();
    let mut n = 0;
    for (name, _) in settings() {
        let bytes = std::fs::read(dir.join(format!("{name}.tsfile"))).unwrap();
        let walk = check_file(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let meta: Json = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.meta.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(
            walk.chunk_groups as u64,
            meta["chunk_groups"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            walk.chunks.len() as u64,
            meta["chunks"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            walk.points() as u64,
            meta["point_count"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            walk.index_depth,
            meta["index_levels"].as_array().unwrap().len(),
            "{name}"
        );
        n += 1;
    }
    assert_eq!(n, 56);
}

#[test]
fn size_comparable_files_match_java() {
    let dir = fixture_dir();
    let mut failures = Vec::new();
    let (mut compared, mut uncompressed, mut identical) = (0, 0, 0);
    for (name, s) in settings() {
        if s["size_comparable"] != Json::Bool(true) {
            continue;
        }
        compared += 1;
        let tsv = std::fs::read_to_string(dir.join(format!("{name}.expected.tsv"))).unwrap();
        let java = std::fs::read(dir.join(format!("{name}.tsfile"))).unwrap();
        let opts = options(&s);
        let mut out = Vec::new();
        let summary = match convert(tsv.as_bytes(), &mut out, &opts) {
            Ok(x) => x,
            Err(e) => {
                failures.push(format!("{name}: convert failed: {e}"));
                continue;
            }
        };
        assert_eq!(summary.file_size, out.len() as u64);
        let ratio = out.len() as f64 / java.len() as f64;
        println!(
            "{name}: {} bytes, Java {} bytes, ratio {ratio:.4}",
            out.len(),
            java.len()
        );
        match check_file(&out) {
            Ok(walk) => {
                let counts: BTreeMap<_, _> = walk
                    .series
                    .iter()
                    .map(|(k, ts)| (k.clone(), ts.statistics.count))
                    .collect();
                if counts != tsv_counts(&tsv) {
                    failures.push(format!("{name}: series/point counts differ from the dump"));
                }
                let java_walk = check_file(&java).unwrap();
                if walk.pages() != java_walk.pages() || walk.chunk_groups != java_walk.chunk_groups
                {
                    failures.push(format!(
                        "{name}: {} pages / {} groups, Java {} / {}",
                        walk.pages(),
                        walk.chunk_groups,
                        java_walk.pages(),
                        java_walk.chunk_groups
                    ));
                }
            }
            Err(e) => failures.push(format!("{name}: written file is inconsistent: {e}")),
        }
        if !(0.98..=1.02).contains(&ratio) {
            failures.push(format!("{name}: size ratio {ratio:.4} outside 2%"));
        }
        let all_uncompressed = opts
            .series
            .iter()
            .all(|x| x.compression == Compression::UNCOMPRESSED);
        if all_uncompressed {
            uncompressed += 1;
            if out == java {
                identical += 1;
            } else {
                let at = first_difference(&out, &java).unwrap_or(0);
                let java_meta = check_file(&java).map(|w| w.meta_offset).unwrap_or(0);
                failures.push(format!(
                    "{name}: not byte-identical, first difference at byte {at} \
                     (Java metaOffset {java_meta}, lengths {} vs {})",
                    out.len(),
                    java.len()
                ));
            }
        }
    }
    println!(
        "{compared} size-comparable files; {identical} of {uncompressed} UNCOMPRESSED files byte-identical"
    );
    assert_eq!(compared, 44);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_dump_round_trips_through_the_writer() {
    // Dump -> convert -> our file -> canonical dump again: identical text, for all 56
    // files (the dump lists points sorted by time, so struct_unsorted converts too).
    let dir = fixture_dir();
    let mut n = 0;
    for (name, s) in settings() {
        let tsv = std::fs::read_to_string(dir.join(format!("{name}.expected.tsv"))).unwrap();
        let mut out = Vec::new();
        convert(tsv.as_bytes(), &mut out, &options(&s)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let reader = TsFileReader::open(out).unwrap();
        let mut text = Vec::new();
        dump(&reader, &mut text).unwrap();
        assert!(
            text == tsv.as_bytes(),
            "{name}: dump of the rewritten file differs"
        );
        n += 1;
    }
    assert_eq!(n, 56);
}
