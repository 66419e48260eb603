//! CSV directory sources in pipelines: a wide CSV dropped into a watched directory ends in
//! `done/`, and every point is read back from the sealed files. The tests with a `_v4` twin
//! run in both TsFile formats.

use std::path::Path;

use tsfile::Value;

use crate::harness::*;

fn config(data: &Path, watch: &Path, fmt: Fmt) -> String {
    format!(
        r#"
data_dir = "{}"
shutdown_timeout = "20s"

[http]
listen = "127.0.0.1:0"

[[pipeline]]
name = "main"

[pipeline.storage]
storage_group_level = 1
{storage}
[[pipeline.source]]
type = "csv"
name = "drop"
directories = ["{}"]
settle = "100ms"
rescan_interval = "1s"
"#,
        data.display(),
        watch.display(),
        storage = fmt.storage_lines(),
    )
}

/// Rows `0..n` of devices d1 and d2: `d1.a = i` (INT64), `d1.b = i / 4` (DOUBLE),
/// `d2.c = -i` (INT64).
pub fn wide_csv(n: i64) -> String {
    let mut s = String::from("Time,root.sg.d1.a,root.sg.d1.b(DOUBLE),root.sg.d2.c\n");
    for i in 0..n {
        s.push_str(&format!("{},{},{},{}\n", 10_000 + i, i, i as f64 / 4.0, -i));
    }
    s
}

/// Every point of [`wide_csv`] is in `points`.
pub fn check_wide(points: &PointMap, n: i64) {
    for i in 0..n {
        let t = 10_000 + i;
        for (d, m, v) in [
            ("root.sg.d1", "a", Value::Int64(i)),
            ("root.sg.d1", "b", Value::Double(i as f64 / 4.0)),
            ("root.sg.d2", "c", Value::Int64(-i)),
        ] {
            let got = points.get(&(d.to_string(), m.to_string(), t));
            assert_eq!(got, Some(&vec![v]), "{d}.{m} at {t}");
        }
    }
    assert_eq!(points.len(), 3 * n as usize);
}

#[test]
fn csv_dropped_in_watched_dir_ends_in_done_and_is_sealed() {
    dropped_in_watched_dir(Fmt::V2);
}

#[test]
fn csv_dropped_in_watched_dir_ends_in_done_and_is_sealed_v4() {
    dropped_in_watched_dir(Fmt::V4);
}

fn dropped_in_watched_dir(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let watch = tmp.path().join("inbox");
    std::fs::create_dir_all(&watch).unwrap();
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(&file, config(&data, &watch, fmt)).unwrap();
    let d = DaemonProc::start_with(&["run", "--config", file.to_str().unwrap()]);
    let n = 5_000;
    // Written under an ignored name, then renamed: the source sees only complete files.
    let part = watch.join("batch.csv.part");
    std::fs::write(&part, wide_csv(n)).unwrap();
    std::fs::rename(&part, watch.join("batch.csv")).unwrap();
    until("the file ends in done/", 60, || {
        watch.join("done").join("batch.csv").exists()
    });
    // Prometheus sorts labels: pipeline, result, source.
    let l = |r: &str| format!("{{pipeline=\"main\",result=\"{r}\",source=\"drop\"}}");
    let files_done = format!("tsfiled_csv_files_total{}", l("done"));
    until("the file is counted", 30, || {
        metric(&get(d.addr, "/metrics").body, &files_done) == Some(1.0)
    });
    let m = get(d.addr, "/metrics").body;
    assert_eq!(
        metric(&m, &format!("tsfiled_csv_rows_total{}", l("accepted"))),
        Some(n as f64),
        "{m}"
    );
    assert_eq!(
        metric(&m, &format!("tsfiled_csv_points_total{}", l("accepted"))),
        Some(3.0 * n as f64),
        "{m}"
    );
    assert!(!watch.join("batch.csv").exists());
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (points, _) = read_all_in(&data, fmt);
    check_wide(&points, n);
}

#[test]
fn import_subcommand_writes_sealed_files() {
    import_subcommand(Fmt::V2);
}

#[test]
fn import_subcommand_writes_sealed_files_v4() {
    import_subcommand(Fmt::V4);
}

fn import_subcommand(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    let f = tmp.path().join("wide.csv");
    let n = 3_000;
    std::fs::write(&f, wide_csv(n)).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tsfiled-e2e"));
    cmd.arg("import").arg(&f).arg("--to").arg(&out_dir);
    if fmt == Fmt::V4 {
        let cfg = tmp.path().join("v4.toml");
        std::fs::write(&cfg, fmt.default_config()).unwrap();
        cmd.arg("--config").arg(&cfg);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "imported 1 files: {n} rows (0 rejected), {} points",
            3 * n
        )),
        "{stdout}"
    );
    assert!(temporaries(&out_dir).is_empty());
    let (points, files) = read_all_in(&out_dir, fmt);
    assert!(!files.is_empty());
    check_wide(&points, n);

    // A missing file fails, naming it.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tsfiled-e2e"))
        .args(["import", "/nonexistent/x.csv", "--to"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/x.csv"), "{err}");
}

#[test]
fn sigkill_mid_file_then_restart_loses_and_doubles_no_row() {
    sigkill_mid_file(Fmt::V2);
}

#[test]
fn sigkill_mid_file_then_restart_loses_and_doubles_no_row_v4() {
    sigkill_mid_file(Fmt::V4);
}

fn sigkill_mid_file(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let watch = tmp.path().join("inbox");
    std::fs::create_dir_all(&watch).unwrap();
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(&file, config(&data, &watch, fmt)).unwrap();
    let args = ["run", "--config", file.to_str().unwrap()];
    let n = 400_000;
    let part = watch.join("big.csv.part");
    std::fs::write(&part, wide_csv(n)).unwrap();

    let d = DaemonProc::start_with(&args);
    std::fs::rename(&part, watch.join("big.csv")).unwrap();
    let accepted =
        "tsfiled_csv_points_total{pipeline=\"main\",result=\"accepted\",source=\"drop\"}";
    until("some rows of the file are durable", 60, || {
        metric(&get(d.addr, "/metrics").body, accepted).unwrap_or(0.0) > 0.0
    });
    assert!(
        !watch.join("done").join("big.csv").exists(),
        "the kill must land mid-file"
    );
    d.kill();
    assert!(
        watch.join("big.csv").exists(),
        "an unfinished file stays in place"
    );

    let d = DaemonProc::start_with(&args);
    until("the file ends in done/ after the restart", 120, || {
        watch.join("done").join("big.csv").exists()
    });
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(temporaries(&data).is_empty());
    // Every row exactly once: check_wide requires one value per point and 3 n points.
    let (points, _) = read_all_in(&data, fmt);
    check_wide(&points, n);
}
