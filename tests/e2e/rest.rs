//! IoTDB's REST write API through the real daemon: the documentation's example requests
//! (iotdb-docs `RestServiceV1.md` / `RestServiceV2.md`, copied as data), read back from the
//! sealed files; IoTDB's answers to bad credentials and malformed bodies.
//!
//! Expected values are derived by hand from what the documentation says the examples mean
//! (its query examples read the tablet back as `s3 = [11, null]`, `s4 = [false, true]`, and
//! `show timeseries` lists s3 as INT32): each series has its declared type in the file.
//!
//! Tests named `…_v4` run the same test with `storage.format_version = 4`; there the PyPI
//! `tsfile` library reads the sealed files too.

use std::path::Path;

use tsfile::Value;

use crate::harness::*;

/// `Authorization` for user `root`, password `root`, as the documentation writes it
/// (`echo -n root:root | base64`).
const ROOT: (&str, &str) = ("Authorization", "Basic cm9vdDpyb290");

const DOC_TABLET_V2: &str = r#"{"timestamps":[1635232143960,1635232153960],"measurements":["s3","s4"],"data_types":["INT32","BOOLEAN"],"values":[[11,null],[false,true]],"is_aligned":false,"device":"root.sg27"}"#;
const DOC_TABLET_V1: &str = r#"{"timestamps":[1635232143960,1635232153960],"measurements":["s3","s4"],"dataTypes":["INT32","BOOLEAN"],"values":[[11,null],[false,true]],"isAligned":false,"deviceId":"root.sg27"}"#;
const DOC_RECORDS: &str = r#"{"timestamps":[1635232113960,1635232151960,1635232143960,1635232143960],"measurements_list":[["s33","s44"],["s55","s66"],["s77","s88"],["s771","s881"]],"data_types_list":[["INT32","INT64"],["FLOAT","DOUBLE"],["FLOAT","DOUBLE"],["BOOLEAN","TEXT"]],"values_list":[[1,11],[2.1,2],[4,6],[false,"cccccc"]],"is_aligned":false,"devices":["root.s1","root.s1","root.s1","root.s3"]}"#;

/// A configuration with the documentation's user `root`/`root`, a bearer token, a user file
/// and a small body limit.
fn write_config(dir: &Path, fmt: Fmt) -> std::path::PathBuf {
    let users = dir.join("users");
    std::fs::write(&users, "# more users\nops:s3cret:with:colons\n").unwrap();
    let path = dir.join("rest.toml");
    std::fs::write(
        &path,
        format!(
            r#"
[http]
tokens = ["tok1"]
user_file = "{}"
max_body_size = "4KiB"

[[http.user]]
name = "root"
password = "root"

[[pipeline]]
name = "main"

[pipeline.storage]
{}
[[pipeline.source]]
type = "http"
"#,
            users.display(),
            fmt.storage_lines()
        ),
    )
    .unwrap();
    path
}

fn start(dir: &Path, fmt: Fmt) -> (DaemonProc, std::path::PathBuf) {
    let config = write_config(dir, fmt);
    let data = dir.join("data");
    let d = DaemonProc::start(&data, &["--config", config.to_str().unwrap()]);
    (d, data)
}

fn success() -> serde_json::Value {
    serde_json::json!({"code": 200, "message": "SUCCESS_STATUS"})
}

/// The sealed files hold exactly `expected`; in v4 the PyPI `tsfile` library reads the same.
fn assert_points(data: &Path, expected: &[(&str, &str, i64, Value)], fmt: Fmt) {
    let (points, files) = read_all_in(data, fmt);
    if fmt == Fmt::V4 {
        let want = canonical_lines(expected.iter().map(|(d, m, t, v)| (*d, *m, *t, v)));
        assert_eq!(pytsfile_lines(&files), want);
    }
    let got: Vec<_> = points.iter().collect();
    assert_eq!(got.len(), expected.len(), "{got:?}");
    for (d, m, t, v) in expected {
        let key = (d.to_string(), m.to_string(), *t);
        let values = points
            .get(&key)
            .unwrap_or_else(|| panic!("no point {key:?} in {got:?}"));
        // Exact values of the declared types: INT32 is Int32, FLOAT is Float, ….
        assert_eq!(values, &vec![v.clone()], "{key:?}");
    }
    assert!(files
        .iter()
        .all(|f| f.to_string_lossy().contains("/sequence/")));
}

fn tablet_points() -> Vec<(&'static str, &'static str, i64, Value)> {
    vec![
        ("root.sg27", "s3", 1635232143960, Value::Int32(11)),
        ("root.sg27", "s4", 1635232143960, Value::Boolean(false)),
        ("root.sg27", "s4", 1635232153960, Value::Boolean(true)),
    ]
}

#[test]
fn documented_examples_of_v2_are_written_as_iotdb_reads_them() {
    documented_examples_of_v2_are_written_as_iotdb_reads_them_in(Fmt::V2);
}

#[test]
fn documented_examples_of_v2_are_written_as_iotdb_reads_them_v4() {
    documented_examples_of_v2_are_written_as_iotdb_reads_them_in(Fmt::V4);
}

fn documented_examples_of_v2_are_written_as_iotdb_reads_them_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let (d, data) = start(tmp.path(), fmt);
    // The liveness probe needs no authentication.
    let r = get(d.addr, "/ping");
    assert_eq!((r.status, r.json()), (200, success()), "{}", r.body);
    let r = post(
        d.addr,
        "/rest/v2/insertTablet",
        &[ROOT],
        DOC_TABLET_V2.as_bytes(),
    );
    assert_eq!((r.status, r.json()), (200, success()), "{}", r.body);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let r = post(
        d.addr,
        "/rest/v2/insertRecords",
        &[ROOT],
        DOC_RECORDS.as_bytes(),
    );
    assert_eq!((r.status, r.json()), (200, success()), "{}", r.body);
    // root.sg27.s3 is INT32 now: declaring it INT64 is a type mismatch (614), nothing written.
    let r = post(
        d.addr,
        "/rest/v2/insertTablet",
        &[ROOT],
        br#"{"device":"root.sg27","timestamps":[1635232163960],"measurements":["s3"],"data_types":["INT64"],"values":[[12]],"is_aligned":false}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["code"], 614, "{}", r.body);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let mut expected = tablet_points();
    expected.extend([
        ("root.s1", "s33", 1635232113960, Value::Int32(1)),
        ("root.s1", "s44", 1635232113960, Value::Int64(11)),
        ("root.s1", "s55", 1635232151960, Value::Float(2.1)),
        ("root.s1", "s66", 1635232151960, Value::Double(2.0)),
        ("root.s1", "s77", 1635232143960, Value::Float(4.0)),
        ("root.s1", "s88", 1635232143960, Value::Double(6.0)),
        ("root.s3", "s771", 1635232143960, Value::Boolean(false)),
        (
            "root.s3",
            "s881",
            1635232143960,
            Value::Text(b"cccccc".to_vec()),
        ),
    ]);
    assert_points(&data, &expected, fmt);
}

#[test]
fn documented_example_of_v1_is_written_as_iotdb_reads_it() {
    documented_example_of_v1_is_written_as_iotdb_reads_it_in(Fmt::V2);
}

#[test]
fn documented_example_of_v1_is_written_as_iotdb_reads_it_v4() {
    documented_example_of_v1_is_written_as_iotdb_reads_it_in(Fmt::V4);
}

fn documented_example_of_v1_is_written_as_iotdb_reads_it_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let (d, data) = start(tmp.path(), fmt);
    let r = post(
        d.addr,
        "/rest/v1/insertTablet",
        &[ROOT],
        DOC_TABLET_V1.as_bytes(),
    );
    assert_eq!((r.status, r.json()), (200, success()), "{}", r.body);
    // The v2 body on the v1 path lacks v1's required `isAligned`: refused as a whole.
    let r = post(
        d.addr,
        "/rest/v1/insertTablet",
        &[ROOT],
        DOC_TABLET_V2.as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["code"], 303);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert_points(&data, &tablet_points(), fmt);
}

/// Exactly IoTDB's shape: an integer `code` and a string `message`, nothing else.
fn iotdb_error(r: &Resp, http: u16, code: u64) -> String {
    assert_eq!(r.status, http, "{}", r.body);
    let j = r.json();
    let o = j
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {j}"));
    assert_eq!(o.len(), 2, "{j}");
    assert_eq!(j["code"].as_u64(), Some(code), "{j}");
    j["message"].as_str().expect("message").to_string()
}

#[test]
fn credentials_are_checked_with_iotdb_answers() {
    credentials_are_checked_with_iotdb_answers_in(Fmt::V2);
}

#[test]
fn credentials_are_checked_with_iotdb_answers_v4() {
    credentials_are_checked_with_iotdb_answers_in(Fmt::V4);
}

fn credentials_are_checked_with_iotdb_answers_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let (d, data) = start(tmp.path(), fmt);
    let a = d.addr;
    let tablet = |t: i64, v: i64| {
        format!(
            r#"{{"device":"root.auth.d","timestamps":[{t}],"measurements":["s"],"data_types":["INT64"],"values":[[{v}]],"is_aligned":false}}"#
        )
    };
    let path = "/rest/v2/insertTablet";
    // No Authorization header; wrong password (root:wrong); unknown user (nobody:root);
    // a token that is not configured.
    let r = post(a, path, &[], tablet(1, 1).as_bytes());
    assert_eq!(iotdb_error(&r, 401, 800), "INIT_AUTH_ERROR");
    let r = post(
        a,
        path,
        &[("Authorization", "Basic cm9vdDp3cm9uZw==")],
        tablet(2, 2).as_bytes(),
    );
    assert_eq!(iotdb_error(&r, 401, 801), "WRONG_LOGIN_PASSWORD");
    let r = post(
        a,
        path,
        &[("Authorization", "Basic bm9ib2R5OnJvb3Q=")],
        tablet(3, 3).as_bytes(),
    );
    assert_eq!(iotdb_error(&r, 401, 801), "WRONG_LOGIN_PASSWORD");
    let r = post(
        a,
        path,
        &[("Authorization", "Bearer nope")],
        tablet(4, 4).as_bytes(),
    );
    assert_eq!(iotdb_error(&r, 401, 801), "WRONG_LOGIN_PASSWORD");
    // Not `name:password` once decoded ("rootroot"): IoTDB's 400 with ILLEGAL_PARAMETER.
    let r = post(
        a,
        path,
        &[("Authorization", "Basic cm9vdHJvb3Q=")],
        tablet(5, 5).as_bytes(),
    );
    iotdb_error(&r, 400, 303);
    // Accepted: the configured user, the user file's user (ops:s3cret:with:colons), a token.
    let r = post(a, path, &[ROOT], tablet(10, 10).as_bytes());
    assert_eq!((r.status, r.json()), (200, success()));
    let r = post(
        a,
        path,
        &[("Authorization", "Basic b3BzOnMzY3JldDp3aXRoOmNvbG9ucw==")],
        tablet(11, 11).as_bytes(),
    );
    assert_eq!((r.status, r.json()), (200, success()), "{}", r.body);
    let r = post(
        a,
        path,
        &[("Authorization", "Bearer tok1")],
        tablet(12, 12).as_bytes(),
    );
    assert_eq!((r.status, r.json()), (200, success()));
    // The other push endpoints take the same users (their own answers).
    let r = post(
        a,
        "/ingest/iotdb-json",
        &[ROOT],
        br#"{"device":"root.auth.d","timestamp":13,"measurements":["s"],"values":[13]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = post(a, "/ingest/iotdb-json", &[], b"{}");
    assert_eq!(r.status, 401);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(!log.contains("s3cret"), "a password was logged:\n{log}");
    let (points, _) = read_all_in(&data, fmt);
    let times: Vec<i64> = points.keys().map(|k| k.2).collect();
    assert_eq!(times, [10, 11, 12, 13], "refused requests wrote nothing");
}

#[test]
fn malformed_bodies_get_iotdb_error_codes_and_good_points_stay() {
    malformed_bodies_get_iotdb_error_codes_and_good_points_stay_in(Fmt::V2);
}

#[test]
fn malformed_bodies_get_iotdb_error_codes_and_good_points_stay_v4() {
    malformed_bodies_get_iotdb_error_codes_and_good_points_stay_in(Fmt::V4);
}

fn malformed_bodies_get_iotdb_error_codes_and_good_points_stay_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let (d, data) = start(tmp.path(), fmt);
    let a = d.addr;
    let post_v2 = |path: &str, body: &str| post(a, path, &[ROOT], body.as_bytes());
    // Refused as a whole (400, ILLEGAL_PARAMETER): not JSON; a required field missing; lists
    // of different lengths; a type that is not IoTDB's; a type TsFile 0.10 cannot hold.
    for body in [
        "{\"timestamps\":[1,",
        r#"{"timestamps":[1],"measurements":["s"],"data_types":["INT64"],"values":[[1]],"is_aligned":false}"#,
        r#"{"device":"root.bad.d","timestamps":[1,2],"measurements":["s"],"data_types":["INT64"],"values":[[1]],"is_aligned":false}"#,
        r#"{"device":"root.bad.d","timestamps":[1],"measurements":["s"],"data_types":["INT33"],"values":[[1]],"is_aligned":false}"#,
        r#"{"device":"root.bad.d","timestamps":[1],"measurements":["s"],"data_types":["DATE"],"values":[[20240101]],"is_aligned":false}"#,
    ] {
        let r = post_v2("/rest/v2/insertTablet", body);
        let m = iotdb_error(&r, 400, 303);
        assert!(!m.is_empty());
    }
    let r = post_v2(
        "/rest/v2/insertRecords",
        r#"{"timestamps":[1],"devices":["root.bad.d"],"measurements_list":[["s","t"]],"data_types_list":[["INT64"]],"values_list":[[1,2]],"is_aligned":false}"#,
    );
    iotdb_error(&r, 400, 303);
    // A value that does not fit its declared type: that point is rejected (400,
    // DATA_TYPE_MISMATCH naming it), the others are written.
    let r = post_v2(
        "/rest/v2/insertTablet",
        r#"{"device":"root.mix.d","timestamps":[100,200],"measurements":["n","b"],"data_types":["INT64","BOOLEAN"],"values":[[7,"x"],[true,false]],"is_aligned":false}"#,
    );
    let m = iotdb_error(&r, 400, 614);
    assert!(m.contains("$.values[0][1]"), "{m}");
    // An invalid path and a type mismatch in one request: MULTIPLE_ERROR.
    let r = post_v2(
        "/rest/v2/insertRecords",
        r#"{"timestamps":[300,300],"devices":["root.mix.d","root.mix.bad device"],"measurements_list":[["n"],["n"]],"data_types_list":[["INT64"],["INT64"]],"values_list":[[1.5],[1]],"is_aligned":false}"#,
    );
    iotdb_error(&r, 400, 302);
    // Over max_body_size (4KiB): 413 with code 413, as IoTDB's request limit.
    let big = format!(
        r#"{{"device":"root.big.d","timestamps":[1],"measurements":["s"],"data_types":["TEXT"],"values":[["{}"]],"is_aligned":false}}"#,
        "x".repeat(5000)
    );
    let r = post_v2("/rest/v2/insertTablet", &big);
    iotdb_error(&r, 413, 413);
    let m = get(a, "/metrics").body;
    assert_eq!(
        metric(
            &m,
            r#"tsfiled_points_rejected_total{pipeline="main",reason="type_mismatch",source="http"}"#
        ),
        Some(2.0),
        "{m}"
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert_points(
        &data,
        &[
            ("root.mix.d", "b", 100, Value::Boolean(true)),
            ("root.mix.d", "b", 200, Value::Boolean(false)),
            ("root.mix.d", "n", 100, Value::Int64(7)),
        ],
        fmt,
    );
}

/// The user file is re-read on SIGHUP: a user added to it is accepted, a removed one refused.
/// `check-config` names the file and line of a bad user file, never the password.
#[test]
fn user_file_reloads_and_check_config_names_its_bad_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (d, _data) = start(tmp.path(), Fmt::V2);
    let tablet = |t: i64| {
        format!(
            r#"{{"device":"root.reload.d","timestamps":[{t}],"measurements":["s"],"data_types":["INT64"],"values":[[{t}]],"is_aligned":false}}"#
        )
    };
    // `echo -n ops:s3cret:with:colons | base64`, `echo -n new:pw | base64`.
    let ops = ("Authorization", "Basic b3BzOnMzY3JldDp3aXRoOmNvbG9ucw==");
    let new = ("Authorization", "Basic bmV3OnB3");
    let path = "/rest/v2/insertTablet";
    assert_eq!(post(d.addr, path, &[ops], tablet(1).as_bytes()).status, 200);
    assert_eq!(post(d.addr, path, &[new], tablet(2).as_bytes()).status, 401);
    std::fs::write(tmp.path().join("users"), "new:pw\n").unwrap();
    d.signal(libc::SIGHUP);
    until("the new user is accepted", 30, || {
        post(d.addr, path, &[new], tablet(3).as_bytes()).status == 200
    });
    let r = post(d.addr, path, &[ops], tablet(4).as_bytes());
    assert_eq!(iotdb_error(&r, 401, 801), "WRONG_LOGIN_PASSWORD");
    // The configured user stays.
    assert_eq!(
        post(d.addr, path, &[ROOT], tablet(5).as_bytes()).status,
        200
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");

    std::fs::write(tmp.path().join("users"), "new:pw\nno-colon-s3cret\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tsfiled-e2e"))
        .arg("check-config")
        .arg(tmp.path().join("rest.toml"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    let want = format!(
        "http.user_file: {}:2: expected `name:password`",
        tmp.path().join("users").display()
    );
    assert!(text.contains(&want), "{text}");
    assert!(
        !text.contains("s3cret") && !text.contains("\"root\"\npassword = \"root\""),
        "{text}"
    );
}
