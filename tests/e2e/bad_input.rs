//! Every rejection path: each answers with the right status and counts, never blocks
//! the good points of its request, and is counted in the metrics. Each test has a `_v4`
//! twin, run with `storage.format_version = 4`.

use std::io::Write;
use std::time::Duration;

use crate::harness::*;

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// POSTs a body of `len` spaces to `/write` and returns the answer's status. The server may
/// answer 413 and close the connection while the body is still being sent, so the body is
/// written from another thread (its write error is expected then) while this one reads the
/// answer; a connection that closes without an answer fails the test.
fn post_oversized(addr: std::net::SocketAddr, auth: (&str, &str), len: usize) -> u16 {
    use std::io::{BufRead, BufReader};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let head = format!(
        "POST /write HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len}\r\n{}: {}\r\n\r\n",
        auth.0, auth.1
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let chunk = vec![b' '; 64 * 1024];
        let mut left = len;
        while left > 0 {
            let n = left.min(chunk.len());
            if writer.write_all(&chunk[..n]).is_err() {
                return;
            }
            left -= n;
        }
    });
    let mut status_line = String::new();
    BufReader::new(&stream)
        .read_line(&mut status_line)
        .expect("reading the answer to an oversized body");
    let _ = stream.shutdown(std::net::Shutdown::Both);
    sender.join().unwrap();
    status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer to an oversized body: {status_line:?}"))
}

#[test]
fn every_rejection_path() {
    every_rejection_path_in(Fmt::V2);
}

#[test]
fn every_rejection_path_v4() {
    every_rejection_path_in(Fmt::V4);
}

fn every_rejection_path_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let d = DaemonProc::start_fmt(&data, &["--http-token", "s3cret"], fmt);
    let a = d.addr;
    let auth: &[(&str, &str)] = &[("Authorization", "Bearer s3cret")];

    // Authentication.
    let r = post(
        a,
        "/ingest/iotdb-json",
        &[],
        br#"{"device":"root.sg.d1","timestamp":1,"measurements":["a"],"values":[1]}"#,
    );
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let r = post(a, "/write", &[("Authorization", "Token wrong")], b"m f=1 1");
    assert_eq!(r.status, 401);
    let r = post(
        a,
        "/write?precision=ms",
        &[("Authorization", "Token s3cret")],
        b"m,host=h f=1 1",
    );
    assert_eq!(r.status, 204, "{}", r.body);

    // Malformed JSON: position named, nothing accepted.
    let r = post(
        a,
        "/ingest/iotdb-json",
        auth,
        b"{\"device\": \"root.sg.d1\",\n \"timestamp\": }",
    );
    assert_eq!(r.status, 400);
    let j = r.json();
    assert_eq!(j["accepted"], 0);
    assert_eq!(j["errors"][0]["reason"], "parse");
    assert!(
        j["errors"][0]["location"]
            .as_str()
            .unwrap()
            .starts_with("line 2, column"),
        "{j}"
    );

    // Missing field: JSON path named.
    let r = post(a, "/ingest/iotdb-json", auth, br#"[{"device":"root.sg.d1","timestamp":1,"measurements":["a"],"values":[1]},{"device":"root.sg.d1","timestamp":2}]"#);
    assert_eq!(r.status, 400);
    let j = r.json();
    assert_eq!(j["accepted"], 1);
    assert_eq!(j["errors"][0]["location"], "$[1]");

    // Line protocol: the bad line is named, the good ones are written.
    let r = post(
        a,
        "/write?precision=ms",
        auth,
        b"m,host=h f=2 2\nthis is not line protocol at all\nm,host=h f=3 3\n",
    );
    assert_eq!(r.status, 400);
    let j = r.json();
    assert_eq!(
        (j["accepted"].as_u64(), j["rejected"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(j["errors"][0]["location"], "line 2, column 8");
    assert!(j["message"].as_str().unwrap().contains("line 2"));

    // Invalid paths: device and reserved measurement; type mismatch; good points kept.
    let r = post(
        a,
        "/ingest/iotdb-json",
        auth,
        br#"[{"device":"root.sg.d1","timestamp":10,"measurements":["a","time"],"values":[10,1]},
            {"device":"nope.d1","timestamp":10,"measurements":["a"],"values":[1]},
            {"device":"root.sg.bad device","timestamp":10,"measurements":["a"],"values":[1]},
            {"device":"root.sg.d1","timestamp":11,"measurements":["a","c"],"values":[1.5,"x"]}]"#,
    );
    assert_eq!(r.status, 400);
    let j = r.json();
    assert_eq!(
        (j["accepted"].as_u64(), j["rejected"].as_u64()),
        (Some(2), Some(4)),
        "{j}"
    );
    let reasons: Vec<&str> = j["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        vec![
            "invalid_path",
            "invalid_path",
            "invalid_path",
            "type_mismatch"
        ]
    );

    // Times: not an integer, overflowing after conversion, unknown precision.
    let r = post(
        a,
        "/ingest/iotdb-json",
        auth,
        br#"{"device":"root.sg.d1","timestamp":"soon","measurements":["a"],"values":[1]}"#,
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["errors"][0]["reason"], "invalid_time");
    let r = post(
        a,
        "/write?precision=s",
        auth,
        b"m,host=h f=1 9223372036854776\n",
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["errors"][0]["reason"], "invalid_time");
    let r = post(a, "/write?precision=fortnights", auth, b"m,host=h f=1 1\n");
    assert_eq!(r.status, 400);
    assert!(r.body.contains("precision"));

    // Bodies: bad gzip, unknown encoding, too large raw, too large decompressed.
    let r = post(
        a,
        "/write",
        &[auth[0], ("Content-Encoding", "gzip")],
        b"not gzip",
    );
    assert_eq!(r.status, 400);
    let r = post(
        a,
        "/write",
        &[auth[0], ("Content-Encoding", "br")],
        b"m f=1 1",
    );
    assert_eq!(r.status, 400);
    assert_eq!(post_oversized(a, auth[0], 17 * 1024 * 1024), 413);
    let bomb = gzip(&vec![b'\n'; 65 * 1024 * 1024]);
    let r = post(a, "/write", &[auth[0], ("Content-Encoding", "gzip")], &bomb);
    assert_eq!(r.status, 413, "{}", r.body);

    let m = get(a, "/metrics").body;
    let rejected = |reason: &str| {
        metric(
            &m,
            &format!(
                r#"tsfiled_points_rejected_total{{pipeline="default",reason="{reason}",source="http"}}"#
            ),
        )
    };
    assert_eq!(rejected("parse"), Some(3.0), "{m}");
    assert_eq!(rejected("invalid_path"), Some(3.0));
    assert_eq!(rejected("type_mismatch"), Some(1.0));
    assert_eq!(rejected("invalid_time"), Some(2.0));
    assert!(rejected("too_large").is_some());
    assert_eq!(
        metric(&m, r#"tsfiled_http_requests_total{code="401"}"#),
        Some(2.0)
    );

    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (points, _) = read_all_in(&data, fmt);
    let keys: Vec<String> = points
        .keys()
        .map(|(d, m, t)| format!("{d}.{m}@{t}"))
        .collect();
    assert_eq!(
        keys,
        [
            "root.lp.m.h.f@1",
            "root.lp.m.h.f@2",
            "root.lp.m.h.f@3",
            "root.sg.d1.a@1",
            "root.sg.d1.a@10",
            "root.sg.d1.c@11",
        ]
    );
}

#[test]
fn full_buffer_answers_503_with_retry_after() {
    full_buffer_answers_503_with_retry_after_in(Fmt::V2);
}

#[test]
fn full_buffer_answers_503_with_retry_after_v4() {
    full_buffer_answers_503_with_retry_after_in(Fmt::V4);
}

fn full_buffer_answers_503_with_retry_after_in(fmt: Fmt) {
    use tsfiled::settings::Settings;
    let tmp = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut s = Settings::embedded_with(&tmp.path().join("data"), "127.0.0.1:0");
        s.pipelines[0].options.wal.max_bytes = 2048;
        if fmt == Fmt::V4 {
            s.pipelines[0].options.engine.format = tsfiled::engine::files::FormatVersion::V4;
        }
        s.pipelines[0].options.retry_after = Duration::from_secs(3);
        let d = tsfiled::app::Daemon::start(s, None).await.unwrap();
        let addr = d.http_addr;
        // 2,000 doubles: at least 16,000 bytes of write-ahead log, far over its 2,048.
        let body: String = (0..2000).map(|i| format!("m,host=h f={i} {i}\n")).collect();
        let r = tokio::task::spawn_blocking(move || {
            post(addr, "/write?precision=ms", &[], body.as_bytes())
        })
        .await
        .unwrap();
        assert_eq!(r.status, 503, "{}", r.body);
        assert_eq!(r.header("retry-after"), Some("3"));
        // A small request still fits.
        let r = tokio::task::spawn_blocking(move || {
            post(addr, "/write?precision=ms", &[], b"m,host=h f=1 1\n")
        })
        .await
        .unwrap();
        assert_eq!(r.status, 204, "{}", r.body);
        let m = d.metrics.render();
        assert_eq!(
            metric(
                &m,
                r#"tsfiled_backpressure_total{pipeline="default",source="http"}"#
            ),
            Some(1.0)
        );
        d.shutdown().await.unwrap();
    });
    let (points, _) = read_all_in(&tmp.path().join("data"), fmt);
    assert_eq!(points.len(), 1);
}
