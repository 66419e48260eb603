//! The daemon in TsFile v4 writes every (type, encoding) its configuration accepts, with
//! every v4 compression: one series per triple pinned by a schema rule, pushed over HTTP,
//! sealed at SIGTERM, then read back point for point by our reader and by the PyPI `tsfile`
//! library (Apache TsFile's C++ reader), and each chunk's header must carry the codes
//! Apache TsFile 2.x gives the names (its `TSEncoding` and `CompressionType`).

use std::collections::BTreeMap;

use tsfile::file::v4::TsFileReaderV4;
use tsfile::Value;

use crate::harness::*;

/// TsFile 2.x's encoding codes by name (`TSEncoding`): GORILLA is 8 in v4.
const ENCODING_CODES: [(&str, u8); 9] = [
    ("PLAIN", 0),
    ("DICTIONARY", 1),
    ("RLE", 2),
    ("TS_2DIFF", 4),
    ("GORILLA", 8),
    ("ZIGZAG", 9),
    ("CHIMP", 11),
    ("SPRINTZ", 12),
    ("RLBE", 13),
];

/// TsFile 2.x's compression codes by name (`CompressionType`).
const COMPRESSION_CODES: [(&str, u8); 5] = [
    ("UNCOMPRESSED", 0),
    ("SNAPPY", 1),
    ("GZIP", 2),
    ("LZ4", 7),
    ("ZSTD", 8),
];

/// What the configuration reference lists for format 4, type by type.
fn accepted(t: &str) -> &'static [&'static str] {
    match t {
        "BOOLEAN" => &["PLAIN"],
        "INT32" | "INT64" => &[
            "PLAIN", "RLE", "TS_2DIFF", "GORILLA", "ZIGZAG", "CHIMP", "SPRINTZ", "RLBE",
        ],
        "FLOAT" | "DOUBLE" => &["PLAIN", "TS_2DIFF", "GORILLA", "CHIMP", "SPRINTZ", "RLBE"],
        _ => &["PLAIN", "DICTIONARY"],
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A value of type `t` that encoding `e` stores exactly and JSON carries exactly: no NaN or
/// infinity (JSON has none), no INT32/INT64 minimum under GORILLA, CHIMP and SPRINTZ (their
/// end marker, rejected by the daemon), FLOAT/DOUBLE under TS_2DIFF with at most 2 decimal
/// places (what TsFile keeps), FLOAT values exact in 32 bits.
fn value(rng: &mut Rng, t: &str, e: &str, i: usize) -> Value {
    // runs of equal values and small steps now and then, so run-length and delta encodings
    // see their good cases too
    let calm = i % 40 < 15;
    match t {
        "BOOLEAN" => Value::Boolean(if calm { i % 20 < 10 } else { rng.below(2) == 1 }),
        "INT32" => Value::Int32(match (calm, rng.below(3)) {
            (true, _) => (i / 4) as i32,
            (_, 0) => rng.below(100) as i32,
            (_, 1) => (rng.next() as i32).max(i32::MIN + 1),
            _ => -(rng.below(1 << 20) as i32),
        }),
        "INT64" => Value::Int64(match (calm, rng.below(3)) {
            (true, _) => 1_700_000_000_000 + (i as i64) * 1000,
            (_, 0) => rng.below(1000) as i64,
            (_, 1) => (rng.next() as i64).max(i64::MIN + 1),
            _ => -(rng.below(1 << 40) as i64),
        }),
        "FLOAT" => Value::Float(if calm {
            20.25
        } else if e == "TS_2DIFF" || rng.below(2) == 0 {
            (rng.below(400_000) as f32 - 200_000.0) / 4.0
        } else {
            // an f32 with a wide exponent that the JSON number carries exactly
            (rng.below(1 << 24) as f32 - 8_388_608.0) * 2f32.powi(rng.below(40) as i32 - 20)
        }),
        "DOUBLE" => Value::Double(if calm {
            -3.5
        } else if e == "TS_2DIFF" || rng.below(2) == 0 {
            (rng.below(4_000_000) as f64 - 2e6) / 4.0
        } else {
            loop {
                let v = f64::from_bits(rng.next());
                if v.is_finite() {
                    break v;
                }
            }
        }),
        _ => {
            const PARTS: [&str; 7] = ["a", "Zz", "é", "温度", "x y", "\\", "😀"];
            let n = if calm { 1 } else { rng.below(5) as usize };
            Value::Text(
                (0..n)
                    .map(|_| PARTS[rng.below(7) as usize])
                    .collect::<String>()
                    .into_bytes(),
            )
        }
    }
}

fn json(v: &Value) -> String {
    match v {
        Value::Boolean(b) => b.to_string(),
        Value::Int32(x) => x.to_string(),
        Value::Int64(x) => x.to_string(),
        Value::Float(x) => format!("{:?}", *x as f64),
        Value::Double(x) => format!("{x:?}"),
        Value::Text(t) => serde_json::to_string(std::str::from_utf8(t).unwrap()).unwrap(),
    }
}

#[test]
fn every_accepted_type_encoding_and_compression_is_read_back_by_the_library_v4() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut series = Vec::new();
    for t in ["BOOLEAN", "INT32", "INT64", "FLOAT", "DOUBLE", "TEXT"] {
        for e in accepted(t) {
            for (c, _) in COMPRESSION_CODES {
                let m = format!("{t}_{e}_{c}").to_lowercase();
                series.push((t, *e, c, m));
            }
        }
    }
    let mut config = Fmt::V4.default_config().replacen(
        "[pipeline.storage]\n",
        "[pipeline.storage]\nmax_points_per_page = 100\n",
        1,
    );
    for (t, e, c, m) in &series {
        config.push_str(&format!(
            "\n[[pipeline.schema]]\npattern = \"root.enc.d1.{m}\"\ntype = \"{t}\"\nencoding = \"{e}\"\ncompression = \"{c}\"\n"
        ));
    }
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(&file, &config).unwrap();
    let d = DaemonProc::start(&data, &["--config", file.to_str().unwrap()]);
    // 330 points per series in three requests (several pages, chunks of several flushes
    // are not needed: one file per run).
    let mut rng = Rng(4);
    let mut expected: Vec<(String, i64, Value)> = Vec::new();
    for part in 0..3usize {
        let mut body = Vec::new();
        for (t, e, _, m) in &series {
            let mut times = Vec::new();
            let mut rows = Vec::new();
            for i in part * 110..(part + 1) * 110 {
                let v = value(&mut rng, t, e, i);
                let time = 1_000_000 + i as i64 * 10;
                times.push(time.to_string());
                rows.push(format!("[{}]", json(&v)));
                expected.push((m.clone(), time, v));
            }
            body.push(format!(
                r#"{{"device":"root.enc.d1","timestamps":[{}],"measurements":["{m}"],"values":[{}]}}"#,
                times.join(","),
                rows.join(",")
            ));
        }
        let r = post(
            d.addr,
            "/ingest/iotdb-json",
            &[],
            format!("[{}]", body.join(",")).as_bytes(),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            r.json()["accepted"].as_u64(),
            Some(series.len() as u64 * 110)
        );
    }
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(
        !log.contains("the series is written PLAIN"),
        "no series fell back to PLAIN:\n{log}"
    );
    let (points, files) = read_all_in(&data, Fmt::V4);
    let want: PointMap = expected
        .iter()
        .map(|(m, t, v)| (("root.enc.d1".to_string(), m.clone(), *t), vec![v.clone()]))
        .collect();
    assert_eq!(points.len(), want.len());
    for (k, v) in &want {
        assert_eq!(points.get(k), Some(v), "{k:?}");
    }
    // Each series' chunks carry the codes TsFile 2.x gives its encoding and compression.
    let by_name: BTreeMap<&str, (u8, u8)> = series
        .iter()
        .map(|(_, e, c, m)| {
            let code = |table: &[(&str, u8)], n: &str| {
                table.iter().find(|x| x.0 == n).map(|x| x.1).unwrap()
            };
            (
                m.as_str(),
                (code(&ENCODING_CODES, e), code(&COMPRESSION_CODES, c)),
            )
        })
        .collect();
    let mut checked = 0;
    for f in &files {
        let r = TsFileReaderV4::open_path(f).unwrap();
        for dev in r.devices().unwrap() {
            for ts in dev.series {
                for (offset, _) in &ts.chunks {
                    let (h, _) = r.chunk_header(*offset).unwrap();
                    assert_eq!(
                        Some(&(h.encoding, h.compression)),
                        by_name.get(ts.measurement.as_str()),
                        "{}: encoding and compression codes of {}",
                        f.display(),
                        ts.measurement
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= series.len(), "{checked} chunks");
    // The Apache TsFile library reads every value back.
    let want_lines = canonical_lines(
        expected
            .iter()
            .map(|(m, t, v)| ("root.enc.d1", m.as_str(), *t, v)),
    );
    let got = pytsfile_lines(&files);
    assert_eq!(got.len(), want_lines.len());
    for (g, w) in got.iter().zip(&want_lines) {
        assert_eq!(g, w);
    }
}
