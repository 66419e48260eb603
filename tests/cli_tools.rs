//! The format tools through the real `tsfiled` program (the `tsfiled-e2e` binary), on the
//! golden corpus.

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tsfiled-e2e"))
}

fn fixtures() -> PathBuf {
    tsfiled_tests::workspace_root().join("format/tests/fixtures")
}

fn golden_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".tsfile").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
}

#[test]
fn dump_matches_every_golden_file() {
    let names = golden_names();
    assert_eq!(names.len(), 56);
    for name in &names {
        let out = bin()
            .arg("dump")
            .arg(fixtures().join(format!("{name}.tsfile")))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let want = std::fs::read(fixtures().join(format!("{name}.expected.tsv"))).unwrap();
        assert!(out.stdout == want, "{name}: dump differs from expected.tsv");
    }
}

#[test]
fn convert_then_dump_round_trips_with_golden_settings() {
    let settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("settings.json")).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "sensor_typical",
        "enc_double_gorilla_snappy",
        "index_5dev_5meas_deg10",
        "struct_times",
    ] {
        let s = &settings[name];
        let schema = dir.path().join(format!("{name}.schema"));
        let lines: String = s["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                format!(
                    "{}\t{}\t{}\t{}\n",
                    r[0].as_str().unwrap(),
                    r[1].as_str().unwrap(),
                    r[3].as_str().unwrap(),
                    r[4].as_str().unwrap()
                )
            })
            .collect();
        std::fs::write(&schema, lines).unwrap();
        let out = dir.path().join(format!("{name}.tsfile"));
        let status = bin()
            .arg("convert")
            .arg(fixtures().join(format!("{name}.expected.tsv")))
            .arg(&out)
            .arg("--schema")
            .arg(&schema)
            .args([
                "--max-points-per-page",
                &s["max_points_per_page"].to_string(),
            ])
            .args(["--page-size", &s["page_size_bytes"].to_string()])
            .args(["--group-size", &s["group_size_bytes"].to_string()])
            .args(["--max-degree", &s["max_degree"].to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "{name}: convert failed");
        let dumped = bin().arg("dump").arg(&out).output().unwrap();
        let want = std::fs::read(fixtures().join(format!("{name}.expected.tsv"))).unwrap();
        assert!(dumped.stdout == want, "{name}: re-dump differs");
        let ours = std::fs::metadata(&out).unwrap().len() as f64;
        let java = std::fs::metadata(fixtures().join(format!("{name}.tsfile")))
            .unwrap()
            .len() as f64;
        assert!(
            (ours / java - 1.0).abs() <= 0.02,
            "{name}: size ratio {}",
            ours / java
        );
    }
}

#[test]
fn sketch_lists_the_file_to_its_end() {
    let f = fixtures().join("struct_versions.tsfile");
    let len = std::fs::metadata(&f).unwrap().len();
    let out = bin().arg("sketch").arg(&f).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for label in [
        "[magic head]",
        "[Chunk Group]",
        "[Version Info]",
        "[marker] 2",
        "[TsFileMetadata]",
        "END",
    ] {
        assert!(text.contains(label), "sketch lacks {label}");
    }
    assert!(text.contains(&format!("file length: {len}")));
}

/// `tsfiled sequence` on the golden file with version records: its figures from the
/// Java oracle's `struct_versions.meta.json` (5 chunk groups, 5 chunks, 3 version
/// markers, separator at 2103, 250 points).
#[test]
fn sequence_walks_the_file_in_order() {
    let f = fixtures().join("struct_versions.tsfile");
    let out = bin().arg("sequence").arg(&f).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let count = |pat: &str| text.lines().filter(|l| l.contains(pat)).count();
    assert_eq!(count(": chunk group footer:"), 5);
    assert_eq!(count(": chunk header:"), 5);
    assert_eq!(count(": version: "), 3);
    assert_eq!(count("2103: separator"), 1);
    let points: usize = text
        .lines()
        .filter_map(|l| l.strip_prefix("\t\tpoints: "))
        .map(|n| n.parse::<usize>().unwrap())
        .sum();
    assert_eq!(points, 250);
    // Positions only grow through the data section.
    let positions: Vec<u64> = text
        .lines()
        .take_while(|l| !l.starts_with("[metadata]"))
        .filter_map(|l| l.split(':').next()?.parse().ok())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    let missing = bin()
        .arg("sequence")
        .arg("/nonexistent.tsfile")
        .output()
        .unwrap();
    assert!(!missing.status.success());
}

#[test]
fn bad_input_is_a_clear_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.tsfile");
    let mut bytes = std::fs::read(fixtures().join("sensor_typical.tsfile")).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&f, &bytes).unwrap();
    let out = bin().arg("dump").arg(&f).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("byte"), "error should name an offset: {err}");
    assert!(!err.contains("panicked"), "{err}");
}
