//! The canonical dump of every golden file equals its `.expected.tsv`, byte for byte.

mod golden_common;

use golden_common::{fixture, for_all_golden};
use tsfile::file::reader::TsFileReader;
use tsfile::tools::dump::dump;

fn check(name: &str) {
    let reader = TsFileReader::open(fixture(name, "tsfile")).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    dump(&reader, &mut out).unwrap_or_else(|e| panic!("{e}"));
    let expected = fixture(name, "expected.tsv");
    if out != expected {
        let got = String::from_utf8_lossy(&out);
        let want = String::from_utf8_lossy(&expected);
        let (n, (g, w)) = got
            .lines()
            .zip(want.lines())
            .enumerate()
            .find(|(_, (g, w))| g != w)
            .unwrap_or((0, ("<length differs>", "")));
        panic!(
            "dump differs ({} vs {} bytes); first differing line {}:\n got: {g}\nwant: {w}",
            out.len(),
            expected.len(),
            n + 1
        );
    }
}

#[test]
fn golden_dump_matches_expected_tsv() {
    for_all_golden("dump", check);
}

#[test]
fn empty_file_dumps_nothing() {
    let reader = TsFileReader::open(fixture("struct_empty", "tsfile")).unwrap();
    let mut out = Vec::new();
    dump(&reader, &mut out).unwrap();
    assert!(out.is_empty());
}
