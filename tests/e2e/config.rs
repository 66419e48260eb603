//! Configuration files: `check-config`, `run --config`, and SIGHUP reloads (a valid
//! file takes effect, an invalid one is refused and the old configuration kept). Tests
//! named `…_v4` run their twin with `storage.format_version = 4` (in the two-pipeline test,
//! the second pipeline only: one daemon writes both formats).

use std::path::Path;
use std::process::Command;

use tsfile::DataType;

use crate::harness::*;

fn config(data: &Path, token: &str, fmt: Fmt) -> String {
    format!(
        r#"
data_dir = "{}"
shutdown_timeout = "20s"

[http]
listen = "127.0.0.1:0"
tokens = ["{token}"]

[[pipeline]]
name = "main"

[pipeline.storage]
storage_group_level = 1
{}
[[pipeline.schema]]
pattern = "root.plant.*.pinned"
type = "INT32"
encoding = "RLE"

[[pipeline.source]]
type = "http"
name = "push"
path_prefix = "root.tele"
device_template = "{{measurement}}.{{host}}"
precision = "s"
"#,
        data.display(),
        fmt.storage_lines()
    )
}

/// `tsfiled check-config FILE`.
fn check_config(file: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tsfiled-e2e"))
        .arg("check-config")
        .arg(file)
        .output()
        .unwrap()
}

/// `check-config` refuses a path prefix and a device template that the sources would refuse
/// at run time, naming file, line, key and the rule.
#[test]
fn check_config_refuses_paths_the_sources_refuse() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bad = tmp.path().join("bad.toml");
    let text = config(&data, "t1", Fmt::V2)
        .replace("\"root.tele\"", "\"root.1e5\"")
        .replace("{measurement}.{host}", "{measurement}.root");
    std::fs::write(&bad, text).unwrap();
    let out = check_config(&bad);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for line in [
        "bad.toml:23:15: pipeline[0].source[0].path_prefix: path \"root.1e5\" level 1 \"1e5\" reads as a number with an exponent",
        "bad.toml:24:19: pipeline[0].source[0].device_template: template \"{measurement}.root\": level 3 \"root\" is a reserved word",
    ] {
        assert!(err.contains(line), "{line} in: {err}");
    }
}

#[test]
fn check_config_run_and_reload() {
    check_config_run_and_reload_in(Fmt::V2);
}

#[test]
fn check_config_run_and_reload_v4() {
    check_config_run_and_reload_in(Fmt::V4);
}

fn check_config_run_and_reload_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(&file, config(&data, "t1", fmt)).unwrap();

    let out = check_config(&file);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[[pipeline]]") && text.contains("main"),
        "{text}"
    );
    assert!(!text.contains("\"t1\""), "tokens are redacted: {text}");

    let bad = tmp.path().join("bad.toml");
    std::fs::write(
        &bad,
        config(&data, "t1", fmt).replace("[http]", "[http]\nlisten_port = 3"),
    )
    .unwrap();
    let out = check_config(&bad);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml:6:1: http.listen_port"),
        "file, line and key named: {err}"
    );

    // `run --config`: no --data-dir (the file's), port 0.
    let d = DaemonProc::start_with(&["run", "--config", file.to_str().unwrap()]);
    let a = d.addr;
    let t1: &[(&str, &str)] = &[("Authorization", "Bearer t1")];
    let t2: &[(&str, &str)] = &[("Authorization", "Bearer t2")];
    let r = post(a, "/ingest/iotdb-json", t1, br#"{"device":"root.plant.p1","timestamp":1,"measurements":["pinned","free"],"values":[7,7]}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    let r = post(a, "/write", t1, b"cpu,host=gw1 usage=0.5 2\n");
    assert_eq!(r.status, 204, "{}", r.body);

    // A valid new file: t2 replaces t1.
    std::fs::write(&file, config(&data, "t2", fmt)).unwrap();
    d.signal(libc::SIGHUP);
    until("t2 accepted", 30, || {
        post(a, "/write", t2, b"cpu,host=gw1 usage=0.75 3\n").status == 204
    });
    assert_eq!(
        post(a, "/write", t1, b"cpu,host=gw1 usage=1 4\n").status,
        401
    );

    // An invalid file is refused; t2 keeps working.
    std::fs::write(&file, "this is = not [valid").unwrap();
    d.signal(libc::SIGHUP);
    until("reload refusal logged", 30, || {
        d.log.lock().unwrap().contains("reload failed")
    });
    assert_eq!(
        post(a, "/write", t2, b"cpu,host=gw1 usage=1.25 5\n").status,
        204
    );

    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (points, files) = read_all_in(&data, fmt);
    let keys: Vec<String> = points
        .keys()
        .map(|(d, m, t)| format!("{d}.{m}@{t}"))
        .collect();
    assert_eq!(
        keys,
        [
            "root.plant.p1.free@1",
            "root.plant.p1.pinned@1",
            "root.tele.cpu.gw1.usage@2000",
            "root.tele.cpu.gw1.usage@3000",
            "root.tele.cpu.gw1.usage@5000",
        ]
    );
    // The rule pinned INT32; the free series was typed on first sight (INT64).
    let plant = files
        .iter()
        .find(|f| f.to_string_lossy().contains("root.plant"))
        .unwrap();
    let types: Vec<(String, DataType)> = file_series(plant)
        .into_iter()
        .map(|(_, m, t, _)| (m, t))
        .collect();
    assert_eq!(
        types,
        vec![
            ("free".to_string(), DataType::INT64),
            ("pinned".to_string(), DataType::INT32)
        ]
    );
}

#[test]
fn two_pipelines_with_their_own_routes_and_directories() {
    two_pipelines_with_their_own_routes_and_directories_in(Fmt::V2);
}

#[test]
fn two_pipelines_with_their_own_routes_and_directories_v4() {
    two_pipelines_with_their_own_routes_and_directories_in(Fmt::V4);
}

fn two_pipelines_with_their_own_routes_and_directories_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let file = tmp.path().join("two.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[http]
listen = "127.0.0.1:0"

[[pipeline]]
name = "a"
[pipeline.storage]
data_dir = "{}"
[[pipeline.source]]
type = "http"

[[pipeline]]
name = "b"
[pipeline.storage]
data_dir = "{}"
time_precision = "us"
{}[[pipeline.source]]
type = "http"
base_path = "/b"
endpoints = ["iotdb-json"]
"#,
            a.display(),
            b.display(),
            fmt.storage_lines()
        ),
    )
    .unwrap();
    let d = DaemonProc::start_with(&["run", "--config", file.to_str().unwrap()]);
    let body = br#"{"device":"root.sg.d1","timestamp":5,"measurements":["s"],"values":[1]}"#;
    assert_eq!(post(d.addr, "/ingest/iotdb-json", &[], body).status, 200);
    assert_eq!(post(d.addr, "/b/ingest/iotdb-json", &[], body).status, 200);
    // Pipeline b serves JSON only.
    assert_eq!(post(d.addr, "/b/write", &[], b"m f=1 1").status, 404);
    let m = get(d.addr, "/metrics").body;
    assert_eq!(
        metric(
            &m,
            r#"tsfiled_points_received_total{pipeline="b",source="http"}"#
        ),
        Some(1.0)
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (pa, _) = read_all_in(&a, Fmt::V2);
    let (pb, _) = read_all_in(&b, fmt);
    // Milliseconds in, stored as ms in a and as us in b.
    assert_eq!(pa.keys().map(|k| k.2).collect::<Vec<_>>(), vec![5]);
    assert_eq!(pb.keys().map(|k| k.2).collect::<Vec<_>>(), vec![5000]);
}
