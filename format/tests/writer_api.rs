//! Behaviour of the writer API: refusals leave no trace, Java's ordering and flushing
//! rules, tablets, versions, I/O failures.

mod common;

use common::check_file;
use std::io::Write;
use tsfile::basic::{Column, Compression, DataType, Encoding, Value};
use tsfile::file::properties::{MeasurementSchema, WriterProperties};
use tsfile::file::writer::TsFileWriter;

fn schema(m: &str, dt: DataType, enc: Encoding) -> MeasurementSchema {
    MeasurementSchema::new(m, dt, enc, Compression::UNCOMPRESSED)
}

fn writer(props: WriterProperties) -> TsFileWriter<Vec<u8>> {
    TsFileWriter::new(Vec::new(), props).unwrap()
}

fn two_series() -> TsFileWriter<Vec<u8>> {
    let mut w = writer(WriterProperties::default());
    w.register("root.d", schema("s1", DataType::INT64, Encoding::TS_2DIFF))
        .unwrap();
    w.register("root.d", schema("s2", DataType::DOUBLE, Encoding::PLAIN))
        .unwrap();
    w
}

fn row(w: &mut TsFileWriter<Vec<u8>>, t: i64) {
    w.write_record(
        "root.d",
        t,
        &[
            ("s1", Value::Int64(t * 7)),
            ("s2", Value::Double(t as f64 / 4.0)),
        ],
    )
    .unwrap();
}

#[test]
fn refused_rows_leave_no_trace() {
    let mut a = two_series();
    let mut b = two_series();
    for t in 1..=5 {
        row(&mut a, t);
        row(&mut b, t);
    }
    // Wrong type in the second value: nothing of the row may be written.
    let e = a
        .write_record(
            "root.d",
            6,
            &[("s1", Value::Int64(1)), ("s2", Value::Int32(1))],
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("root.d.s2") && e.contains("time 6") && e.contains("INT32"),
        "{e}"
    );
    // Decreasing time.
    let e = a
        .write_record("root.d", 4, &[("s1", Value::Int64(1))])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("root.d.s1") && e.contains("time 4") && e.contains('5'),
        "{e}"
    );
    // Unknown measurement / device.
    let e = a
        .write_record(
            "root.d",
            9,
            &[("s1", Value::Int64(1)), ("nope", Value::Int64(1))],
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("root.d.nope") && e.contains("not registered"),
        "{e}"
    );
    let e = a
        .write_record("root.x", 9, &[("s1", Value::Int64(1))])
        .unwrap_err()
        .to_string();
    assert!(e.contains("root.x.s1"), "{e}");
    for t in 6..=8 {
        row(&mut a, t);
        row(&mut b, t);
    }
    let (fa, _) = a.close().unwrap();
    let (fb, _) = b.close().unwrap();
    assert_eq!(fa, fb);
}

#[test]
fn refused_tablets_leave_no_trace() {
    let mut a = two_series();
    let mut b = two_series();
    row(&mut a, 10);
    row(&mut b, 10);
    let t = vec![11i64, 12, 13];
    let ok1 = Column::Int64(vec![1, 2, 3]);
    let ok2 = Column::Double(vec![1.0, 2.0, 3.0]);
    let short = Column::Double(vec![1.0]);
    let wrong = Column::Int32(vec![1, 2, 3]);
    type Case<'a> = (Vec<i64>, Vec<(&'a str, &'a Column)>, &'a str);
    let cases: Vec<Case> = vec![
        (
            t.clone(),
            vec![("s1", &ok1), ("s2", &short)],
            "1 values for 3 times",
        ),
        (t.clone(), vec![("s1", &ok1), ("s2", &wrong)], "INT32"),
        (t.clone(), vec![("s1", &ok1), ("s1", &ok1)], "twice"),
        (vec![11, 13, 12], vec![("s1", &ok1)], "time 12 follows 13"),
        (vec![9, 12, 13], vec![("s1", &ok1)], "time 9"),
        (t.clone(), vec![("s1", &ok1), ("s3", &ok1)], "root.d.s3"),
    ];
    for (times, cols, needle) in cases {
        let e = a
            .write_tablet("root.d", &times, &cols)
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{e} (expected {needle})");
    }
    let cols = [("s1", &ok1), ("s2", &ok2)];
    a.write_tablet("root.d", &t, &cols).unwrap();
    b.write_tablet("root.d", &t, &cols).unwrap();
    assert_eq!(a.close().unwrap().0, b.close().unwrap().0);
}

#[test]
fn registration_rules() {
    let mut w = two_series();
    // Same schema again: no-op. Different schema: error naming both.
    w.register("root.d", schema("s1", DataType::INT64, Encoding::TS_2DIFF))
        .unwrap();
    let e = w
        .register("root.d", schema("s1", DataType::INT64, Encoding::PLAIN))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("root.d.s1") && e.contains("TS_2DIFF") && e.contains("PLAIN"),
        "{e}"
    );
    for (s, needle) in [
        (schema("g", DataType::INT32, Encoding::GORILLA), "GORILLA"),
        (schema("t", DataType::TEXT, Encoding::RLE), "RLE"),
        (
            schema("b", DataType::BOOLEAN, Encoding::TS_2DIFF),
            "TS_2DIFF",
        ),
        (schema("d", DataType::INT64, Encoding::DIFF), "DIFF"),
        (schema("q\"x", DataType::INT64, Encoding::PLAIN), "'\"'"),
        (schema("", DataType::INT64, Encoding::PLAIN), "empty"),
        (
            MeasurementSchema::new("z", DataType::INT64, Encoding::PLAIN, Compression::GZIP),
            "GZIP",
        ),
    ] {
        let e = w.register("root.d", s).unwrap_err().to_string();
        assert!(e.contains(needle), "{e} (expected {needle})");
    }
    assert!(w
        .register("", schema("s", DataType::INT64, Encoding::PLAIN))
        .is_err());
}

#[test]
fn equal_times_are_kept_and_empty_rows_write_nothing() {
    let mut w = two_series();
    w.write_record("root.d", 5, &[("s1", Value::Int64(1))])
        .unwrap();
    w.write_record("root.d", 5, &[("s1", Value::Int64(2))])
        .unwrap();
    w.write_record(
        "root.d",
        5,
        &[("s1", Value::Int64(3)), ("s1", Value::Int64(4))],
    )
    .unwrap();
    w.write_record("root.unknown", 1, &[]).unwrap();
    w.write_record("root.d", 1, &[]).unwrap();
    let (f, s) = w.close().unwrap();
    let walk = check_file(&f).unwrap();
    assert_eq!(s.points, 4);
    assert_eq!(
        walk.series.len(),
        1,
        "s2 never written: no chunk, no metadata"
    );
    assert_eq!(s.chunk_groups, 1);

    let mut w = writer(WriterProperties::default());
    w.write_record("root.empty", 1, &[]).unwrap();
    w.register("root.d", schema("s", DataType::INT64, Encoding::PLAIN))
        .unwrap();
    w.flush_chunk_groups().unwrap();
    let (f, s) = w.close().unwrap();
    assert_eq!(f.len(), 84, "nothing empty is written");
    assert_eq!(s.chunk_groups, 0);
}

#[test]
fn chunk_and_group_order_follow_java_hashmaps() {
    let mut w = writer(WriterProperties::default());
    for d in 0..20 {
        let dev = format!("root.sg.d{d}");
        for m in ["s1", "s2", "s3", "s4"] {
            w.register(&dev, schema(m, DataType::INT32, Encoding::PLAIN))
                .unwrap();
        }
        let vals: Vec<(&str, Value)> = ["s1", "s2", "s3", "s4"]
            .iter()
            .map(|m| (*m, Value::Int32(d)))
            .collect();
        w.write_record(&dev, 1, &vals).unwrap();
    }
    let (f, _) = w.close().unwrap();
    let walk = check_file(&f).unwrap();
    // java.util.HashMap keySet() order of these 20 device ids (OpenJDK 17).
    let java = "root.sg.d0 root.sg.d1 root.sg.d2 root.sg.d3 root.sg.d4 root.sg.d5 root.sg.d10 \
                root.sg.d12 root.sg.d11 root.sg.d6 root.sg.d14 root.sg.d7 root.sg.d13 root.sg.d8 \
                root.sg.d16 root.sg.d9 root.sg.d15 root.sg.d18 root.sg.d17 root.sg.d19";
    let mut groups: Vec<&str> = walk.chunks.iter().map(|c| c.device.as_str()).collect();
    groups.dedup();
    assert_eq!(groups.join(" "), java);
    let first: Vec<&str> = walk.chunks[..4]
        .iter()
        .map(|c| c.header.measurement.as_str())
        .collect();
    assert_eq!(first, ["s3", "s4", "s1", "s2"], "spec §7.1 example");
}

#[test]
fn device_capacity_survives_flushes() {
    // 13 devices grow the group-writer map to 32 buckets; after a flush (clear() keeps
    // the capacity) two ids whose order differs between 16 and 32 buckets must come
    // in their 32-bucket order.
    let ids: Vec<String> = (0..64).map(|i| format!("k{i}")).collect();
    let hash = |s: &str| {
        s.encode_utf16()
            .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
    };
    let bucket = |s: &str, cap: u32| {
        let h = hash(s) as u32;
        (h ^ (h >> 16)) & (cap - 1)
    };
    let (x, y) = ids
        .iter()
        .flat_map(|a| ids.iter().map(move |b| (a, b)))
        .find(|(a, b)| bucket(a, 16) < bucket(b, 16) && bucket(a, 32) > bucket(b, 32))
        .unwrap();
    let props = WriterProperties::default();
    let mut w = writer(props);
    let mut all: Vec<String> = (0..13).map(|i| format!("filler{i}")).collect();
    all.push(x.clone());
    all.push(y.clone());
    for d in &all {
        w.register(d, schema("s", DataType::INT32, Encoding::PLAIN))
            .unwrap();
    }
    for d in &all[..13] {
        w.write_record(d, 1, &[("s", Value::Int32(1))]).unwrap();
    }
    w.flush_chunk_groups().unwrap();
    // Insert x first: with 16 buckets x would come first, with 32 y does.
    w.write_record(x, 2, &[("s", Value::Int32(1))]).unwrap();
    w.write_record(y, 2, &[("s", Value::Int32(1))]).unwrap();
    let (f, _) = w.close().unwrap();
    let walk = check_file(&f).unwrap();
    let last: Vec<&str> = walk.chunks[13..]
        .iter()
        .map(|c| c.device.as_str())
        .collect();
    assert_eq!(last, [y.as_str(), x.as_str()]);
}

#[test]
fn odd_names_sort_like_java() {
    // Spec §5.4 "odd" example.
    let mut w = writer(WriterProperties::default());
    let series = [
        ("a", "a"),
        ("a", "c"),
        ("a.b", "x"),
        ("root.d1-x", "s1"),
        ("root.d1", "m.n"),
        ("root.d1", "s0"),
        ("root.d1", "s1"),
    ];
    for (d, m) in series {
        w.register(d, schema(m, DataType::INT64, Encoding::PLAIN))
            .unwrap();
        w.write_record(d, 1, &[(m, Value::Int64(1))]).unwrap();
    }
    let (f, _) = w.close().unwrap();
    let walk = check_file(&f).unwrap();
    let off = |d: &str, m: &str| walk.series[&(d.to_string(), m.to_string())].chunk_metadata_offset;
    // Phase A: full paths a.a < a.b.x < a.c, root.d1-x.s1 < root.d1."m.n" < root.d1.s0.
    assert!(off("a", "a") < off("a.b", "x") && off("a.b", "x") < off("a", "c"));
    assert!(off("root.d1-x", "s1") < off("root.d1", "m.n"));
    assert!(off("root.d1", "m.n") < off("root.d1", "s0"));
    let root = &walk.metadata.as_ref().unwrap().metadata_index;
    let names: Vec<&str> = root.children.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["a", "a.b", "root.d1", "root.d1-x"]);
    // Phase B (first appearance): root.d1-x's TimeseriesMetadata before root.d1's.
    let ts_offset = |i: usize| {
        let at = root.children[i].offset as usize;
        let mut r = tsfile::util::io::ByteReader::new(&f[at..], at as u64);
        let top = tsfile::file::metadata::MetadataIndexNode::deserialize(&mut r).unwrap();
        top.children[0].offset
    };
    assert!(ts_offset(0) < ts_offset(1), "a before a.b");
    assert!(ts_offset(3) < ts_offset(2), "root.d1-x before root.d1");
}

#[test]
fn tablets_equal_rows_when_no_page_check_intervenes() {
    let mut a = two_series();
    let mut b = two_series();
    let times: Vec<i64> = (0..1000).map(|i| 1000 + 3 * i).collect();
    for &t in &times {
        row(&mut a, t);
    }
    let c1 = Column::Int64(times.iter().map(|t| t * 7).collect());
    let c2 = Column::Double(times.iter().map(|t| *t as f64 / 4.0).collect());
    b.write_tablet("root.d", &times, &[("s1", &c1), ("s2", &c2)])
        .unwrap();
    assert_eq!(a.close().unwrap().0, b.close().unwrap().0);
}

#[test]
fn tablets_overshoot_the_point_limit_like_java() {
    let props = WriterProperties {
        max_points_per_page: 200,
        ..WriterProperties::default()
    };
    let mut w = writer(props);
    w.register("d1", schema("s", DataType::INT32, Encoding::PLAIN))
        .unwrap();
    w.register("d2", schema("s", DataType::INT32, Encoding::PLAIN))
        .unwrap();
    let mut t0 = 0;
    for n in [500, 500, 200] {
        let times: Vec<i64> = (t0..t0 + n).collect();
        let col = Column::Int32((0..n as i32).collect());
        w.write_tablet("d1", &times, &[("s", &col)]).unwrap();
        t0 += n;
    }
    for k in 0..3 {
        let times: Vec<i64> = (k * 200..k * 200 + 200).collect();
        let col = Column::Int32((0..200).collect());
        w.write_tablet("d2", &times, &[("s", &col)]).unwrap();
    }
    let (f, _) = w.close().unwrap();
    let walk = check_file(&f).unwrap();
    for c in &walk.chunks {
        let counts: Vec<i64> = c.pages.iter().map(|p| p.statistics.count).collect();
        match c.device.as_str() {
            "d1" => assert_eq!(counts, [1200]),
            _ => assert_eq!(counts, [200, 200, 200]),
        }
    }
}

#[test]
fn versions_and_positions() {
    let mut w = two_series();
    assert_eq!(w.position(), 12);
    row(&mut w, 1);
    w.write_version(7).unwrap();
    let p1 = w.position();
    w.write_version(8).unwrap(); // nothing buffered: only the record
    assert_eq!(w.position(), p1 + 9);
    row(&mut w, 2);
    w.flush_chunk_groups().unwrap();
    assert_eq!(w.buffered_bytes(), 0);
    let p2 = w.position();
    let (f, s) = w.close().unwrap();
    assert_eq!(s.file_size, f.len() as u64);
    let walk = check_file(&f).unwrap();
    assert_eq!(walk.versions, [(p1, 7), (p1 + 9, 8)]);
    assert_eq!(walk.chunk_groups, 2);
    assert_eq!(walk.meta_offset, p2);
}

#[test]
fn automatic_group_flushes_bound_memory() {
    let props = WriterProperties {
        group_size_bytes: 20_000,
        ..WriterProperties::default()
    };
    let mut w = writer(props);
    for m in 0..5 {
        w.register(
            "root.d",
            schema(&format!("m{m}"), DataType::INT64, Encoding::PLAIN),
        )
        .unwrap();
    }
    let mut peak = 0;
    for t in 0..20_000i64 {
        let vals: Vec<(String, Value)> =
            (0..5).map(|m| (format!("m{m}"), Value::Int64(t))).collect();
        let vals: Vec<(&str, Value)> = vals.iter().map(|(m, v)| (m.as_str(), v.clone())).collect();
        w.write_record("root.d", t, &vals).unwrap();
        peak = peak.max(w.buffered_bytes());
    }
    assert!(peak < 3 * 20_000, "estimate peaked at {peak}");
    let (f, s) = w.close().unwrap();
    let walk = check_file(&f).unwrap();
    assert!(s.chunk_groups > 5, "{} groups", s.chunk_groups);
    assert_eq!(walk.points(), 100_000);
    for ts in walk.series.values() {
        assert_eq!(
            (ts.statistics.start_time, ts.statistics.end_time),
            (0, 19_999)
        );
    }
}

/// A sink that fails once `limit` bytes were written.
struct Failing {
    written: Vec<u8>,
    limit: usize,
}

impl Write for Failing {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.written.len() + b.len() > self.limit {
            return Err(std::io::Error::other("disk full"));
        }
        self.written.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn io_errors_poison_the_writer() {
    let out = Failing {
        written: Vec::new(),
        limit: 100,
    };
    let mut w = TsFileWriter::new(out, WriterProperties::default()).unwrap();
    w.register("root.d", schema("s1", DataType::INT64, Encoding::PLAIN))
        .unwrap();
    for t in 0..100 {
        w.write_record("root.d", t, &[("s1", Value::Int64(t))])
            .unwrap();
    }
    let e = w.flush_chunk_groups().unwrap_err().to_string();
    assert!(e.contains("disk full"), "{e}");
    let e = w
        .write_record("root.d", 200, &[("s1", Value::Int64(1))])
        .unwrap_err()
        .to_string();
    assert!(e.contains("incomplete"), "{e}");
    assert!(w.close().is_err());
    assert!(TsFileWriter::new(
        Failing {
            written: Vec::new(),
            limit: 3
        },
        WriterProperties::default()
    )
    .is_err());
}

#[test]
fn summary_reports_device_ranges() {
    let mut w = writer(WriterProperties::default());
    for d in ["root.b", "root.a"] {
        w.register(d, schema("s", DataType::BOOLEAN, Encoding::PLAIN))
            .unwrap();
    }
    w.write_record("root.b", -5, &[("s", Value::Boolean(true))])
        .unwrap();
    w.write_record("root.a", 3, &[("s", Value::Boolean(true))])
        .unwrap();
    w.flush_chunk_groups().unwrap();
    w.write_record("root.b", 40, &[("s", Value::Boolean(false))])
        .unwrap();
    let (_, s) = w.close().unwrap();
    let r: Vec<(String, i64, i64)> = s
        .devices
        .iter()
        .map(|d| (d.device.clone(), d.start_time, d.end_time))
        .collect();
    assert_eq!(r, [("root.a".into(), 3, 3), ("root.b".into(), -5, 40)]);
    assert_eq!((s.points, s.chunks, s.chunk_groups), (3, 3, 3));
}

#[test]
fn staged_rows_give_the_bytes_of_immediate_writes() {
    // Rows with a stable layout are staged and encoded in batches; single-value rows
    // with alternating layouts are encoded at once. Page seals (point limit and the size
    // rule) must fall on the same points.
    let make = |max_points: usize| {
        let props = WriterProperties {
            max_points_per_page: max_points,
            ..WriterProperties::default()
        };
        let mut w = writer(props);
        w.register("root.d", schema("a", DataType::INT64, Encoding::TS_2DIFF))
            .unwrap();
        w.register("root.d", schema("b", DataType::DOUBLE, Encoding::GORILLA))
            .unwrap();
        w.register("root.d", schema("c", DataType::BOOLEAN, Encoding::RLE))
            .unwrap();
        w.register("root.d", schema("t", DataType::TEXT, Encoding::PLAIN))
            .unwrap();
        w
    };
    for max_points in [1_048_576, 1000, 7] {
        let mut staged = make(max_points);
        let mut immediate = make(max_points);
        for t in 0..20_000i64 {
            let vals = [
                ("a", Value::Int64(t * t)),
                ("b", Value::Double((t % 97) as f64 * 0.5)),
                ("c", Value::Boolean(t % 3 == 0)),
                ("t", Value::Text(format!("v{}", t % 11).into_bytes())),
            ];
            staged.write_record("root.d", t, &vals).unwrap();
            for v in &vals {
                immediate
                    .write_record("root.d", t, std::slice::from_ref(v))
                    .unwrap();
            }
        }
        let a = staged.close().unwrap().0;
        let b = immediate.close().unwrap().0;
        let walk = check_file(&a).unwrap();
        assert!(walk.pages() > 4, "{} pages", walk.pages());
        assert!(
            a == b,
            "max_points {max_points}: staged and immediate bytes differ"
        );
    }
}

#[test]
fn regular_refusals_keep_the_row_checks_exact() {
    let mut w = writer(WriterProperties::default());
    for m in ["r1", "r2"] {
        w.register("root.d", schema(m, DataType::INT64, Encoding::REGULAR))
            .unwrap();
    }
    w.register("root.d", schema("x", DataType::INT64, Encoding::PLAIN))
        .unwrap();
    let row = |a: i64, b: i64| {
        [
            ("r1", Value::Int64(a)),
            ("r2", Value::Int64(b)),
            ("x", Value::Int64(0)),
        ]
    };
    w.write_record("root.d", 1, &row(0, 0)).unwrap();
    w.write_record("root.d", 2, &row(10, 10)).unwrap();
    // r2 = 17 breaks its progression (step 7 does not divide 10): refused after r1
    // was written; x is not written.
    let e = w
        .write_record("root.d", 3, &row(20, 17))
        .unwrap_err()
        .to_string();
    assert!(e.contains("root.d.r2") && e.contains("REGULAR"), "{e}");
    // r1 now holds time 3: an earlier time must be refused for it.
    let e = w
        .write_record("root.d", 2, &row(30, 20))
        .unwrap_err()
        .to_string();
    assert!(e.contains("root.d.r1") && e.contains("time 2"), "{e}");
    w.write_record("root.d", 3, &row(30, 20)).unwrap();
    let (f, s) = w.close().unwrap();
    let walk = check_file(&f).unwrap();
    let count = |m: &str| {
        walk.series[&("root.d".to_string(), m.to_string())]
            .statistics
            .count
    };
    assert_eq!((count("r1"), count("r2"), count("x")), (4, 3, 3));
    assert_eq!(s.points, 10);
}
