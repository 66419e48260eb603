//! Every TsFile v4 golden file (written by the PyPI `tsfile` 2.5.0 library, see
//! `tests/fixtures/v4/README.md`) is read by our v4 reader and dumps exactly as the
//! library's own reader dumped it (`*.expected.tsv`).

use std::path::PathBuf;
use tsfile::file::v4::TsFileReaderV4;
use tsfile::tools::dump::dump_v4;

#[test]
fn every_v4_fixture_dumps_exactly() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v4");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsfile"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 200,
        "expected the v4 fixtures, found {}",
        files.len()
    );
    let (mut points, mut failures) = (0usize, Vec::new());
    for f in &files {
        let want = std::fs::read_to_string(f.with_extension("expected.tsv")).unwrap();
        let got = TsFileReaderV4::open_path(f).and_then(|r| {
            let mut out = Vec::new();
            dump_v4(&r, &mut out)?;
            Ok(String::from_utf8(out).unwrap())
        });
        match got {
            Ok(g) if g == want => points += want.lines().count(),
            Ok(g) => {
                let first = want.lines().zip(g.lines()).position(|(a, b)| a != b);
                failures.push(format!(
                    "{}: {} lines vs {} expected, first difference at {first:?}",
                    f.display(),
                    g.lines().count(),
                    want.lines().count()
                ));
            }
            Err(e) => failures.push(format!("{}: {e}", f.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} files differ:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    eprintln!("{} v4 fixtures, {points} points, read exactly", files.len());
}

/// `tsfiled sequence` on every v4 golden file: the listing names format 4, has one
/// series line per series the library wrote (`meta.json`), and its point lines are
/// exactly the library's dump of each series, page after page in file order.
#[test]
fn sequence_lists_every_v4_fixture_as_the_library_wrote_it() {
    use std::collections::BTreeMap;
    use tsfile::tools::sequence::sequence;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v4");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsfile"))
        .collect();
    files.sort();
    assert!(files.len() >= 200, "{}", files.len());
    for f in &files {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f.with_extension("meta.json")).unwrap())
                .unwrap();
        let want = std::fs::read_to_string(f.with_extension("expected.tsv")).unwrap();
        let mut out = Vec::new();
        sequence(std::fs::File::open(f).unwrap(), &mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let text = String::from_utf8(out).unwrap();
        let name = f.display();
        let len = std::fs::metadata(f).unwrap().len();
        assert!(
            text.starts_with(&format!(
                "file length: {len}\n0: file magic head: TsFile\n6: file version: 4\n"
            )),
            "{name}"
        );
        // The first chunk group starts right after the 7-byte head (spec).
        assert!(text.contains("\n7: chunk group header: device: "), "{name}");
        let series = text.lines().filter(|l| l.contains(": series: ")).count();
        assert_eq!(series as u64, meta["series"].as_u64().unwrap(), "{name}");
        // Points per (device, measurement) in listing order vs the library's dump.
        let mut listed: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        let (mut device, mut measurement) = (String::new(), String::new());
        for l in text.lines() {
            if let Some((_, d)) = l.split_once(": chunk group header: device: ") {
                device = d.to_string();
            } else if l.contains("chunk header") {
                let m = l.split(" measurement: ").nth(1).unwrap();
                measurement = m.split(" dataType: ").next().unwrap().to_string();
            } else if let Some(p) = l.strip_prefix("\t\t\t") {
                listed
                    .entry((device.clone(), measurement.clone()))
                    .or_default()
                    .push(p.to_string());
            }
        }
        let mut dumped: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for l in want.lines() {
            let f: Vec<&str> = l.splitn(5, '\t').collect();
            dumped
                .entry((f[0].to_string(), f[1].to_string()))
                .or_default()
                .push(format!("{}\t{}", f[3], f[4]));
        }
        assert_eq!(listed, dumped, "{name}");
        let points: usize = text
            .lines()
            .filter_map(|l| l.strip_prefix("\t\tpoints: "))
            .map(|n| n.parse::<usize>().unwrap())
            .sum();
        assert_eq!(points as u64, meta["points"].as_u64().unwrap(), "{name}");
    }
}

/// `tsfiled sketch` on every v4 golden file: it names format 4, ends at the file's
/// length, lists one `[TimeseriesMetadata]` per series and chunks whose statistics
/// count the points the library wrote (`meta.json`).
#[test]
fn sketch_lists_every_v4_fixture() {
    use tsfile::tools::sketch::sketch_path;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v4");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsfile"))
        .collect();
    files.sort();
    assert!(files.len() >= 200, "{}", files.len());
    for f in &files {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f.with_extension("meta.json")).unwrap())
                .unwrap();
        let mut out = Vec::new();
        sketch_path(f, &mut out).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let text = String::from_utf8(out).unwrap();
        let name = f.display();
        let len = std::fs::metadata(f).unwrap().len();
        assert!(
            text.contains(&format!("{:>20}|\t[version number] 4\n", 6)),
            "{name}"
        );
        assert!(
            text.contains(&format!("{:>20}|\t[ChunkGroup Header]\n", 7)),
            "{name}"
        );
        assert!(
            text.contains(&format!("{len:>20}|\tEND of TsFile\n")),
            "{name}"
        );
        let series = text.matches("|\t[TimeseriesMetadata] of ").count();
        assert_eq!(series as u64, meta["series"].as_u64().unwrap(), "{name}");
        let points: u64 = text
            .lines()
            .filter(|l| l.contains("|\t[Chunk] of "))
            .map(|l| {
                let c = l.split(" count: ").nth(1).unwrap();
                c.split(' ').next().unwrap().parse::<u64>().unwrap()
            })
            .sum();
        assert_eq!(points, meta["points"].as_u64().unwrap(), "{name}");
    }
}
