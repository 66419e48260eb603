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
