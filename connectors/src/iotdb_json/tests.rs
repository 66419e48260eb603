use super::*;
use crate::model::Rejection;
use crate::path::validate_measurement;
use proptest::prelude::*;

fn parse(s: &str) -> Batch {
    parse_iotdb_json(s.as_bytes(), &JsonOptions::default())
}

fn rec(device: &str, time: i64, fields: &[(&str, FieldValue)]) -> Record {
    Record {
        device: device.into(),
        time,
        fields: fields
            .iter()
            .map(|(m, v)| Field::new(*m, v.clone()))
            .collect(),
    }
}

fn rj(location: &str, reason: RejectReason, points: u64) -> (String, RejectReason, u64) {
    (location.into(), reason, points)
}

fn summary(b: &Batch) -> Vec<(String, RejectReason, u64)> {
    b.rejections
        .iter()
        .map(|r| (r.location.to_string(), r.reason, r.points))
        .collect()
}

use FieldValue::{Bool, Float, Int, Text};

#[test]
fn single_record() {
    let b = parse(
        r#"{"device":"root.sg.d1","timestamp":1586076045524,"measurements":["s1","s2","s3","s4","s5"],"values":[1,2.5,true,"x",null]}"#,
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(
        b.records,
        vec![rec(
            "root.sg.d1",
            1586076045524,
            &[
                ("s1", Int(1)),
                ("s2", Float(2.5)),
                ("s3", Bool(true)),
                ("s4", Text("x".into()))
            ]
        )]
    );
}

/// The two payloads of IoTDB's MQTT documentation ("MQTT Protocol", built-in MQTT service) and
/// of `JSONPayloadFormatter`'s doc comment, with what IoTDB stores for them: in the batch form
/// `values[i]` is the row of `timestamps[i]`.
#[test]
fn iotdb_documented_examples() {
    let b = parse(
        r#"{"device":"root.sg.d1","timestamp":1586076045524,"measurements":["s1","s2"],"values":[0.530635,0.530635]}"#,
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(
        b.records,
        vec![rec(
            "root.sg.d1",
            1586076045524,
            &[("s1", Float(0.530635)), ("s2", Float(0.530635))]
        )]
    );
    let b = parse(
        r#"{"device":"root.sg.d1","timestamps":[1586076045524,1586076065526],"measurements":["s1","s2"],"values":[[0.530635,0.530635], [0.530655,0.530695]]}"#,
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(
        b.records,
        vec![
            rec(
                "root.sg.d1",
                1586076045524,
                &[("s1", Float(0.530635)), ("s2", Float(0.530635))]
            ),
            rec(
                "root.sg.d1",
                1586076065526,
                &[("s1", Float(0.530655)), ("s2", Float(0.530695))]
            ),
        ]
    );
}

/// As many timestamps as measurements: a transposed reading would store s1@2000=2 and
/// s2@1000=3; IoTDB stores s1@1000=1, s2@1000=2, s1@2000=3, s2@2000=4.
#[test]
fn square_batch_is_read_as_rows() {
    let b = parse(
        r#"{"device":"root.sq.d1","timestamps":[1000,2000],"measurements":["s1","s2"],"values":[[1,2],[3,4]]}"#,
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(
        b.records,
        vec![
            rec("root.sq.d1", 1000, &[("s1", Int(1)), ("s2", Int(2))]),
            rec("root.sq.d1", 2000, &[("s1", Int(3)), ("s2", Int(4))]),
        ]
    );
}

/// The rows of a batch share one device string and one string per measurement (no copy per
/// row or per point: the daemon's HTTP JSON rate depends on it).
#[test]
fn batch_rows_share_device_and_measurement_strings() {
    let b = parse(
        r#"{"device":"root.sq.d1","timestamps":[1,2,3],"measurements":["s1","s2"],"values":[[1,2],[3,null],[5,6]]}"#,
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(b.records.len(), 3);
    let first = &b.records[0];
    for r in &b.records[1..] {
        assert!(Arc::ptr_eq(&r.device, &first.device));
        for f in &r.fields {
            let same = first.fields.iter().find(|g| g.measurement == f.measurement);
            assert!(Arc::ptr_eq(&f.measurement, &same.unwrap().measurement));
        }
    }
    assert_eq!(&*b.records[2].fields[1].measurement, "s2");
}

/// With a [`Names`] cache, payloads of one stream share their name strings, and a bad name is
/// rejected as without it (and not kept).
#[test]
fn a_name_cache_is_shared_across_payloads() {
    let mut names = Names::default();
    let opts = JsonOptions::default();
    let a = parse_iotdb_json_with(
        br#"{"device":"root.sg.d1","timestamp":1,"measurements":["s1","time"],"values":[1,2]}"#,
        &opts,
        &mut names,
    );
    let b = parse_iotdb_json_with(
        br#"{"device":"root.sg.d1","timestamp":2,"measurements":["s1","time"],"values":[3,4]}"#,
        &opts,
        &mut names,
    );
    let expected = |t, v| vec![rec("root.sg.d1", t, &[("s1", Int(v))])];
    assert_eq!(a.records, expected(1, 1));
    assert_eq!(b.records, expected(2, 3));
    let reserved = vec![rj("$.measurements[1]", RejectReason::InvalidPath, 1)];
    assert_eq!(summary(&a), reserved);
    assert_eq!(summary(&b), reserved);
    assert!(Arc::ptr_eq(&a.records[0].device, &b.records[0].device));
    let (fa, fb) = (&a.records[0].fields[0], &b.records[0].fields[0]);
    assert!(Arc::ptr_eq(&fa.measurement, &fb.measurement));
    // One device and one measurement kept: `time` is not a valid measurement.
    assert_eq!(names.len(), 2);
    let bad = parse_iotdb_json_with(
        br#"{"device":"sg.d1","timestamp":3,"measurements":["s1"],"values":[5]}"#,
        &opts,
        &mut names,
    );
    assert_eq!(bad.records, vec![]);
    assert_eq!(
        summary(&bad),
        vec![rj("$.device", RejectReason::InvalidPath, 1)]
    );
    assert_eq!(
        bad.rejections[0].message,
        r#"device "sg.d1" must start with "root""#
    );
    assert_eq!(names.len(), 2);
    // A payload that is not JSON leaves the cache as it was.
    let broken = parse_iotdb_json_with(br#"{"device":"root.sg.d2","#, &opts, &mut names);
    assert_eq!(broken.records, vec![]);
    assert_eq!(names.len(), 2);
    let c = parse_iotdb_json_with(
        br#"{"device":"root.sg.d1","timestamp":4,"measurements":["s1"],"values":[6]}"#,
        &opts,
        &mut names,
    );
    assert!(Arc::ptr_eq(&a.records[0].device, &c.records[0].device));
}

/// Payloads parsed into one vector of records: each payload's records are appended after
/// those already there (read directly or by the general parser), and its rejections returned;
/// a payload that is not JSON appends nothing.
#[test]
fn payloads_append_their_records_to_one_vector() {
    let mut names = Names::default();
    let opts = JsonOptions::default();
    let mut records = Vec::new();
    let into = |text: &str, names: &mut Names, records: &mut Vec<Record>| {
        let rejections = parse_iotdb_json_into(text.as_bytes(), &opts, names, records);
        rejections
            .iter()
            .map(|r| (r.location.to_string(), r.reason, r.points))
            .collect::<Vec<_>>()
    };
    // Read directly.
    let none = into(
        r#"{"device":"root.sg.d1","timestamp":1,"measurements":["s1","s2"],"values":[1.5,2]}"#,
        &mut names,
        &mut records,
    );
    assert_eq!(none, vec![]);
    // The general parser: two records of the batch form, then one with a bad value.
    let none = into(
        r#"{"device":"root.sg.d2","timestamps":[2,3],"measurements":["s1"],"values":[[true],["x"]]}"#,
        &mut names,
        &mut records,
    );
    assert_eq!(none, vec![]);
    let bad = into(
        r#"{"device":"root.sg.d1","timestamp":4,"measurements":["s1","s2"],"values":[{},7]}"#,
        &mut names,
        &mut records,
    );
    assert_eq!(bad, vec![rj("$.values[0]", RejectReason::TypeMismatch, 1)]);
    // Not JSON: nothing appended, one rejection.
    let broken = into(r#"{"device":"root.sg.d1","#, &mut names, &mut records);
    assert_eq!(
        broken,
        vec![rj("line 1, column 23", RejectReason::Parse, 1)]
    );
    // All null: no record.
    let nulls = into(
        r#"{"device":"root.sg.d1","timestamp":5,"measurements":["s1"],"values":[null]}"#,
        &mut names,
        &mut records,
    );
    assert_eq!(nulls, vec![]);
    assert_eq!(
        records,
        vec![
            rec("root.sg.d1", 1, &[("s1", Float(1.5)), ("s2", Int(2))]),
            rec("root.sg.d2", 2, &[("s1", Bool(true))]),
            rec("root.sg.d2", 3, &[("s1", Text("x".into()))]),
            rec("root.sg.d1", 4, &[("s2", Int(7))]),
        ]
    );
    // The same through the batch-returning entry point.
    let b = parse_iotdb_json_with(
        br#"{"device":"root.sg.d1","timestamp":4,"measurements":["s1","s2"],"values":[{},7]}"#,
        &opts,
        &mut names,
    );
    assert_eq!(b.records, vec![rec("root.sg.d1", 4, &[("s2", Int(7))])]);
    assert_eq!(
        summary(&b),
        vec![rj("$.values[0]", RejectReason::TypeMismatch, 1)]
    );
}

#[test]
fn batch_form_and_arrays() {
    // Three timestamps, two measurements: three rows of two values.
    let b = parse(
        r#"[{"device":"root.sg.d1","timestamps":[1,2,3],"measurements":["s1","s2"],"values":[[1,null],[2.5,3.5],[null,"x"]]},
            {"device":"root.sg.d2","timestamp":3,"measurements":["s1"],"values":[false]},
            {"device":"root.sg.d3","timestamps":[4],"measurements":["s1"],"values":[[null]]}]"#,
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(
        b.records,
        vec![
            rec("root.sg.d1", 1, &[("s1", Int(1))]),
            rec("root.sg.d1", 2, &[("s1", Float(2.5)), ("s2", Float(3.5))]),
            rec("root.sg.d1", 3, &[("s2", Text("x".into()))]),
            rec("root.sg.d2", 3, &[("s1", Bool(false))]),
        ]
    );
    assert_eq!(b.point_count(), 5);
}

#[test]
fn escapes_bom_unknown_keys_and_empty() {
    let b = parse(
        "\u{feff}{\"x\":{\"y\":[1,[2]]},\"device\":\"root.sg.\\u8bbe\\u59071\",\"timestamp\":-5,\
         \"measurements\":[\"s\\u0031\"],\"values\":[\"a\\\"b\\n\"]}",
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(
        b.records,
        vec![rec("root.sg.设备1", -5, &[("s1", Text("a\"b\n".into()))])]
    );
    assert_eq!(parse("[]"), Batch::default());
    assert_eq!(parse(" [ ] \n"), Batch::default());
    let b = parse(r#"{"device":"root.sg.d1","timestamp":1,"measurements":[],"values":[]}"#);
    assert_eq!(b, Batch::default());
}

#[test]
fn time_units() {
    let opts = JsonOptions {
        input_unit: TimeUnit::Seconds,
        stored_unit: TimeUnit::Nanos,
    };
    let b = parse_iotdb_json(
        br#"[{"device":"root.a.b","timestamp":2,"measurements":["s"],"values":[1]},
             {"device":"root.a.b","timestamp":9223372037,"measurements":["s"],"values":[1]},
             {"device":"root.a.b","timestamps":[3,9223372037,4],"measurements":["s","t"],"values":[[1,null],[2,null],[3,4]]}]"#,
        &opts,
    );
    assert_eq!(
        b.records,
        vec![
            rec("root.a.b", 2_000_000_000, &[("s", Int(1))]),
            rec("root.a.b", 3_000_000_000, &[("s", Int(1))]),
            rec("root.a.b", 4_000_000_000, &[("s", Int(3)), ("t", Int(4))]),
        ]
    );
    assert_eq!(
        summary(&b),
        vec![
            rj("$[1].timestamp", RejectReason::InvalidTime, 1),
            rj("$[2].timestamps[1]", RejectReason::InvalidTime, 1),
        ]
    );
    assert!(
        b.rejections[0].message.contains("overflows"),
        "{}",
        b.rejections[0]
    );
    // Coarser stored unit truncates.
    let b = parse_iotdb_json(
        br#"{"device":"root.a.b","timestamp":1999,"measurements":["s"],"values":[1]}"#,
        &JsonOptions {
            input_unit: TimeUnit::Micros,
            stored_unit: TimeUnit::Millis,
        },
    );
    assert_eq!(b.records[0].time, 1);
}

#[test]
fn not_json() {
    for (text, loc) in [
        ("", "line 1, column 0"),
        ("{\"device\":", "line 1, column 10"),
        ("[{}]\n x", "line 2, column 2"),
        ("{\"a\":1,}", "line 1, column 8"),
        ("[1e999]", "line 1, column 6"),
    ] {
        let b = parse(text);
        assert_eq!(b.records, vec![], "{text}");
        assert_eq!(b.rejections.len(), 1, "{text}");
        assert_eq!(
            b.rejections[0].location.to_string(),
            loc,
            "{text}: {}",
            b.rejections[0]
        );
        assert_eq!(b.rejections[0].reason, RejectReason::Parse);
    }
    // Invalid UTF-8 inside a string.
    let b = parse_iotdb_json(b"{\"device\":\"root.a\xff\"}", &JsonOptions::default());
    assert_eq!(
        summary(&b),
        vec![rj("line 1, column 18", RejectReason::Parse, 1)]
    );
    // Good records before a syntax error are not accepted.
    let b = parse(
        r#"[{"device":"root.a.b","timestamp":1,"measurements":["s","t"],"values":[1,2]}, x]"#,
    );
    assert_eq!(b.records, vec![]);
    assert_eq!(b.rejections.len(), 1);
    assert_eq!(b.rejections[0].points, 2);
}

#[test]
fn wrong_top_level_and_elements() {
    for text in [
        "1",
        "-1",
        "1.5",
        "true",
        "null",
        "\"s\"",
        "18446744073709551615",
    ] {
        let b = parse(text);
        assert_eq!(summary(&b), vec![rj("$", RejectReason::Parse, 1)], "{text}");
    }
    let b = parse(
        r#"[1, [1,2], "x", null, {"device":"root.a.b","timestamp":1,"measurements":["s"],"values":[1]}, true, 2.5]"#,
    );
    assert_eq!(b.records, vec![rec("root.a.b", 1, &[("s", Int(1))])]);
    assert_eq!(
        summary(&b),
        vec![
            rj("$[0]", RejectReason::Parse, 1),
            rj("$[1]", RejectReason::Parse, 2),
            rj("$[2]", RejectReason::Parse, 1),
            rj("$[3]", RejectReason::Parse, 1),
            rj("$[5]", RejectReason::Parse, 1),
            rj("$[6]", RejectReason::Parse, 1),
        ]
    );
}

fn one(text: &str) -> (Vec<Record>, Vec<Rejection>) {
    let b = parse(text);
    (b.records, b.rejections)
}

#[test]
fn record_shape_errors() {
    let good = r#"{"device":"root.a.b","timestamp":1,"measurements":["s"],"values":[1]}"#;
    let cases: &[(&str, &str, RejectReason, u64, &str)] = &[
        (
            r#"{"timestamp":1,"measurements":["s"],"values":[1]}"#,
            "$[0]",
            RejectReason::Parse,
            1,
            "missing key \"device\"",
        ),
        (
            r#"{"device":1,"timestamp":1,"measurements":["s","t"],"values":[1,2]}"#,
            "$[0].device",
            RejectReason::Parse,
            2,
            "found an integer",
        ),
        (
            r#"{"device":"root.a.b","timestamp":1,"values":[1]}"#,
            "$[0]",
            RejectReason::Parse,
            1,
            "missing key \"measurements\"",
        ),
        (
            r#"{"device":"root.a.b","timestamp":1,"measurements":"s","values":[1]}"#,
            "$[0].measurements",
            RejectReason::Parse,
            1,
            "found a string",
        ),
        (
            r#"{"device":"root.a.b","timestamp":1,"measurements":["s"]}"#,
            "$[0]",
            RejectReason::Parse,
            1,
            "missing key \"values\"",
        ),
        (
            r#"{"device":"root.a.b","timestamp":1,"measurements":["s"],"values":{"s":1}}"#,
            "$[0].values",
            RejectReason::Parse,
            1,
            "found an object",
        ),
        (
            r#"{"device":"root.a.b","timestamp":1,"measurements":["s","t"],"values":[1]}"#,
            "$[0].values",
            RejectReason::Parse,
            1,
            "1 values for 2 measurements",
        ),
        (
            r#"{"device":"root.a.b","measurements":["s"],"values":[1]}"#,
            "$[0]",
            RejectReason::Parse,
            1,
            "missing key \"timestamp\"",
        ),
        (
            r#"{"device":"root.a.b","timestamp":1,"timestamps":[1],"measurements":["s"],"values":[1]}"#,
            "$[0]",
            RejectReason::Parse,
            1,
            "both",
        ),
        (
            r#"{"device":"root.a.b","timestamps":1,"measurements":["s"],"values":[[1]]}"#,
            "$[0].timestamps",
            RejectReason::Parse,
            1,
            "found an integer",
        ),
        (
            r#"{"device":"root.a-b","timestamp":1,"measurements":["s","t"],"values":[1,null]}"#,
            "$[0].device",
            RejectReason::InvalidPath,
            1,
            "'-'",
        ),
        (
            r#"{"device":"sg.d","timestamp":1,"measurements":["s"],"values":[1]}"#,
            "$[0].device",
            RejectReason::InvalidPath,
            1,
            "root",
        ),
        (
            r#"{"device":"root.a.b","timestamp":1.5,"measurements":["s"],"values":[1]}"#,
            "$[0].timestamp",
            RejectReason::InvalidTime,
            1,
            "found a number",
        ),
        (
            r#"{"device":"root.a.b","timestamp":"1x","measurements":["s"],"values":[1]}"#,
            "$[0].timestamp",
            RejectReason::InvalidTime,
            1,
            "found a string",
        ),
        (
            r#"{"device":"root.a.b","timestamp":"99999999999999999999","measurements":["s"],"values":[1]}"#,
            "$[0].timestamp",
            RejectReason::InvalidTime,
            1,
            "INT64",
        ),
        (
            r#"{"device":"root.a.b","timestamp":null,"measurements":["s"],"values":[1]}"#,
            "$[0].timestamp",
            RejectReason::InvalidTime,
            1,
            "found null",
        ),
        (
            r#"{"device":"root.a.b","timestamp":9223372036854775808,"measurements":["s"],"values":[1]}"#,
            "$[0].timestamp",
            RejectReason::InvalidTime,
            1,
            "INT64",
        ),
    ];
    for (bad, loc, reason, points, msg) in cases {
        let (records, rejections) = one(&format!("[{bad},{good}]"));
        assert_eq!(records, vec![rec("root.a.b", 1, &[("s", Int(1))])], "{bad}");
        assert_eq!(rejections.len(), 1, "{bad}: {rejections:?}");
        let r = &rejections[0];
        assert_eq!(
            (r.location.to_string().as_str(), r.reason, r.points),
            (*loc, *reason, *points),
            "{bad}: {r}"
        );
        assert!(r.message.contains(msg), "{bad}: {r}");
        // Same record alone at the top level: path `$`.
        let (_, rejections) = one(bad);
        assert_eq!(
            rejections[0].location.to_string(),
            loc.replacen("$[0]", "$", 1),
            "{bad}"
        );
    }
}

/// The rejections as (location as shown, reason, points); the texts are leaked (a few bytes
/// per test assertion).
fn locations(rejections: &[Rejection]) -> Vec<(&'static str, RejectReason, u64)> {
    rejections
        .iter()
        .map(|r| {
            let shown: &'static str = Box::leak(r.location.to_string().into_boxed_str());
            (shown, r.reason, r.points)
        })
        .collect()
}

#[test]
fn column_row_and_point_errors() {
    // Bad measurement names reject their column only (its values in every row).
    let (records, rejections) = one(
        r#"{"device":"root.a.b","timestamps":[1,2],"measurements":["s.x",7,"ok","time"],"values":[[1,3,5,7],[2,null,6,8]]}"#,
    );
    assert_eq!(
        records,
        vec![
            rec("root.a.b", 1, &[("ok", Int(5))]),
            rec("root.a.b", 2, &[("ok", Int(6))])
        ]
    );
    assert_eq!(
        locations(&rejections),
        vec![
            ("$.measurements[0]", RejectReason::InvalidPath, 2),
            ("$.measurements[1]", RejectReason::Parse, 1),
            ("$.measurements[3]", RejectReason::InvalidPath, 2),
        ]
    );
    // A row of the wrong length, or not an array, is rejected alone, naming its index.
    let (records, rejections) = one(
        r#"{"device":"root.a.b","timestamps":[1,2,3,4],"measurements":["a","b"],"values":[[1],5,[true,false],[1,2,3]]}"#,
    );
    assert_eq!(
        records,
        vec![rec("root.a.b", 3, &[("a", Bool(true)), ("b", Bool(false))])]
    );
    assert_eq!(
        locations(&rejections),
        vec![
            ("$.values[0]", RejectReason::Parse, 1),
            ("$.values[1]", RejectReason::Parse, 1),
            ("$.values[3]", RejectReason::Parse, 3),
        ]
    );
    assert_eq!(
        rejections[0].message,
        "row 0 has 1 values for 2 measurements"
    );
    assert!(rejections[1].message.contains("found an integer"));
    assert_eq!(
        rejections[2].message,
        "row 3 has 3 values for 2 measurements"
    );
    // A row count other than the timestamp count rejects the record.
    let (records, rejections) = one(
        r#"[{"device":"root.a.b","timestamps":[1,2],"measurements":["a","b"],"values":[[1,2]]},
            {"device":"root.a.b","timestamp":9,"measurements":["a"],"values":[9]}]"#,
    );
    assert_eq!(records, vec![rec("root.a.b", 9, &[("a", Int(9))])]);
    assert_eq!(
        locations(&rejections),
        vec![("$[0].values", RejectReason::Parse, 2)]
    );
    assert_eq!(rejections[0].message, "1 rows for 2 timestamps");
    // Bad single values reject only their point: `values[row][measurement]`.
    let (records, rejections) = one(
        r#"[{"device":"root.a.b","timestamps":[1,2],"measurements":["a","b"],"values":[[{"x":1},[1]],[2,9223372036854775808]]},
            {"device":"root.a.b","timestamp":3,"measurements":["a","b","c"],"values":[{},[1,[2]],3]}]"#,
    );
    assert_eq!(
        records,
        vec![
            rec("root.a.b", 2, &[("a", Int(2))]),
            rec("root.a.b", 3, &[("c", Int(3))])
        ]
    );
    assert_eq!(
        locations(&rejections),
        vec![
            ("$[0].values[0][0]", RejectReason::TypeMismatch, 1),
            ("$[0].values[0][1]", RejectReason::TypeMismatch, 1),
            ("$[0].values[1][1]", RejectReason::TypeMismatch, 1),
            ("$[1].values[0]", RejectReason::TypeMismatch, 1),
            ("$[1].values[1]", RejectReason::TypeMismatch, 1),
        ]
    );
    assert!(
        rejections[0].message.contains("found an object"),
        "{}",
        rejections[0]
    );
    assert!(
        rejections[1].message.contains("found an array"),
        "{}",
        rejections[1]
    );
    assert!(rejections[2].message.contains("INT64"), "{}", rejections[2]);
    // A bad timestamp in batch form loses only the points of its row.
    let (records, rejections) = one(
        r#"{"device":"root.a.b","timestamps":[1,"x",3,null],"measurements":["a","b"],"values":[[1,null],[2,20],[3,null],[null,null]]}"#,
    );
    assert_eq!(
        records,
        vec![
            rec("root.a.b", 1, &[("a", Int(1))]),
            rec("root.a.b", 3, &[("a", Int(3))])
        ]
    );
    assert_eq!(
        locations(&rejections),
        vec![("$.timestamps[1]", RejectReason::InvalidTime, 2)]
    );
}

#[test]
fn many_bad_values_are_summarized() {
    let n = crate::reject::MAX_ITEMIZED_REJECTIONS + 500;
    let mut s = String::from(r#"{"device":"root.a.b","timestamps":["#);
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&i.to_string());
    }
    s.push_str(r#"],"measurements":["a"],"values":["#);
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str("[{}]");
    }
    s.push_str("]}");
    let b = parse(&s);
    assert_eq!(b.records, vec![]);
    assert_eq!(
        b.rejections.len(),
        crate::reject::MAX_ITEMIZED_REJECTIONS + 1
    );
    assert_eq!(b.rejected_points(), n as u64);
}

// ----- properties ------------------------------------------------------------------------------

fn arb_name() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_]{0,6}".prop_filter("valid", |s| validate_measurement(s).is_ok())
}

fn arb_value() -> impl Strategy<Value = FieldValue> {
    prop_oneof![
        any::<bool>().prop_map(Bool),
        any::<i64>().prop_map(Int),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Float),
        any::<String>().prop_map(Text),
    ]
}

fn arb_record() -> impl Strategy<Value = Record> {
    (
        proptest::collection::vec(arb_name(), 1..4),
        any::<i64>(),
        proptest::collection::btree_map(arb_name(), arb_value(), 1..5),
    )
        .prop_map(|(nodes, time, fields)| Record {
            device: format!("root.{}", nodes.join(".")).into(),
            time,
            fields: fields
                .into_iter()
                .map(|(measurement, value)| Field::new(measurement, value))
                .collect(),
        })
}

proptest! {
    #[test]
    fn never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let b = parse_iotdb_json_default(&bytes);
        prop_assert!(b.records.iter().all(|r| !r.fields.is_empty()));
    }

    #[test]
    fn never_panics_on_json_like_text(s in r#"[\[\]{}",:0-9a-z.\- ]{0,200}"#) {
        let _ = parse_iotdb_json_default(s.as_bytes());
        let wrapped = format!(r#"[{{"device":"root.a.b","timestamps":[1,2],"measurements":["a","b"],"values":{s}}}]"#);
        let _ = parse_iotdb_json_default(wrapped.as_bytes());
    }

    /// Records written by an independent JSON writer (serde_json) in the single-record form
    /// read back as themselves.
    #[test]
    fn single_records_from_serde_json(records in proptest::collection::vec(arb_record(), 0..8)) {
        let json: Vec<serde_json::Value> = records.iter().map(|r| serde_json::json!({
            "device": &*r.device,
            "timestamp": r.time,
            "measurements": r.fields.iter().map(|f| &*f.measurement).collect::<Vec<_>>(),
            "values": r.fields.iter().map(|f| to_json(Some(&f.value))).collect::<Vec<_>>(),
        })).collect();
        let b = parse(&serde_json::to_string(&json).unwrap());
        prop_assert_eq!(b.rejections, vec![]);
        prop_assert_eq!(b.records, records);
    }

    /// Batches written by serde_json in IoTDB's row form: row `i` is the record at
    /// `timestamps[i]`, holding the non-null values in measurement order.
    #[test]
    fn batches_from_serde_json(
        device in proptest::collection::vec(arb_name(), 1..3),
        names in proptest::collection::btree_set(arb_name(), 1..5),
        rows in proptest::collection::vec((-1_000_000i64..1_000_000, proptest::collection::vec(proptest::option::of(arb_value()), 5)), 1..20),
    ) {
        let device = format!("root.{}", device.join("."));
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let w = names.len();
        let json = serde_json::json!({
            "device": device,
            "timestamps": rows.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
            "measurements": names,
            "values": rows.iter().map(|(_, row)| row[..w].iter().map(|v| to_json(v.as_ref())).collect::<Vec<_>>()).collect::<Vec<_>>(),
        });
        let b = parse(&json.to_string());
        prop_assert_eq!(b.rejections, vec![]);
        let mut expected = Vec::new();
        for (time, row) in &rows {
            let fields: Vec<Field> = names.iter().zip(&row[..w])
                .filter_map(|(m, v)| v.clone().map(|value| Field::new(*m, value)))
                .collect();
            if !fields.is_empty() {
                expected.push(Record { device: device.as_str().into(), time: *time, fields });
            }
        }
        prop_assert_eq!(b.records, expected);
    }
}

/// A value as serde_json writes it.
fn to_json(v: Option<&FieldValue>) -> serde_json::Value {
    match v {
        None => serde_json::Value::Null,
        Some(Bool(b)) => (*b).into(),
        Some(Int(i)) => (*i).into(),
        Some(Float(f)) => (*f).into(),
        Some(Text(s)) => s.as_str().into(),
    }
}

/// The writers (used by load generators and benchmarks) produce IoTDB's documented shapes.
#[test]
fn writers_produce_the_documented_forms() {
    let mut s = String::new();
    write_tablet(
        &mut s,
        "root.sq.d1",
        &[1000, 2000],
        &["s1", "s2"],
        &[
            vec![Some(Int(1)), Some(Int(2))],
            vec![Some(Int(3)), Some(Int(4))],
        ],
    );
    assert_eq!(
        s,
        r#"{"device":"root.sq.d1","timestamps":[1000,2000],"measurements":["s1","s2"],"values":[[1,2],[3,4]]}"#
    );
    s.clear();
    write_tablet(
        &mut s,
        "root.sg.d1",
        &[1, 2, 3],
        &["a", "b"],
        &[vec![Some(Float(0.5))], vec![None, Some(Bool(true))]],
    );
    assert_eq!(
        s,
        r#"{"device":"root.sg.d1","timestamps":[1,2,3],"measurements":["a","b"],"values":[[0.5,null],[null,true],[null,null]]}"#
    );
    s.clear();
    write_record(
        &mut s,
        &rec(
            "root.sg.d1",
            1586076045524,
            &[("s1", Float(1.0)), ("s2", Text("a\"b".into()))],
        ),
    );
    assert_eq!(
        s,
        r#"{"device":"root.sg.d1","timestamp":1586076045524,"measurements":["s1","s2"],"values":[1.0,"a\"b"]}"#
    );
}

#[test]
fn deep_nesting_does_not_crash() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let b = parse(&deep);
    assert_eq!(b.records, vec![]);
    assert_eq!(summary(&b), vec![rj("$[0]", RejectReason::Parse, 1)]);
    let deep = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
    let b = parse(&deep);
    assert_eq!(summary(&b), vec![rj("$", RejectReason::Parse, 1)]);
    assert!(
        b.rejections[0].message.contains("missing key"),
        "{}",
        b.rejections[0]
    );
    let nested_value = format!(
        r#"{{"device":"root.a.b","timestamp":1,"measurements":["s","t"],"values":[{}1{},2]}}"#,
        "[".repeat(50),
        "]".repeat(50)
    );
    let b = parse(&nested_value);
    assert_eq!(b.records, vec![rec("root.a.b", 1, &[("t", Int(2))])]);
    assert_eq!(
        summary(&b),
        vec![rj("$.values[0]", RejectReason::TypeMismatch, 1)]
    );
}

#[test]
fn quoted_integer_timestamps() {
    // As IoTDB's MQTT service accepts them.
    let b = parse(
        r#"[{"device":"root.a.b","timestamp":"-7","measurements":["s"],"values":[1]},
            {"device":"root.a.b","timestamps":["8", 9, "1.5"],"measurements":["s"],"values":[[1],[2],[3]]}]"#,
    );
    let times: Vec<i64> = b.records.iter().map(|r| r.time).collect();
    assert_eq!(times, vec![-7, 8, 9]);
    assert_eq!(
        summary(&b),
        vec![rj("$[1].timestamps[2]", RejectReason::InvalidTime, 1)]
    );
}

/// The fuzzing entry point reads with IoTDB's default units (milliseconds in and stored).
#[test]
fn the_default_entry_point_reads_milliseconds() {
    let b = parse_iotdb_json_default(
        br#"{"device":"root.sg.d1","timestamp":1586076045524,"measurements":["s1"],"values":[0.5]}"#,
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(
        b.records,
        vec![rec("root.sg.d1", 1586076045524, &[("s1", Float(0.5))])]
    );
}

/// A value that is itself an array is one bad point, however deep: at a bad timestamp of the
/// batch form, a row of one measurement loses one point.
#[test]
fn an_array_in_a_row_is_one_point() {
    let b = parse(
        r#"{"device":"root.sg.d1","timestamps":["x"],"measurements":["s1"],"values":[[[1,2,3]]]}"#,
    );
    assert_eq!(b.records, vec![]);
    assert_eq!(
        summary(&b),
        vec![rj("$.timestamps[0]", RejectReason::InvalidTime, 1)]
    );
    let b = parse(
        r#"{"device":"root.sg.d1","timestamps":[1],"measurements":["s1","s2"],"values":[[[1,[2,3]],4]]}"#,
    );
    assert_eq!(b.records, vec![rec("root.sg.d1", 1, &[("s2", Int(4))])]);
    assert_eq!(
        summary(&b),
        vec![rj("$.values[0][0]", RejectReason::TypeMismatch, 1)]
    );
}

/// Negative and huge integers in a top-level array are rejected elements like the others.
#[test]
fn integers_as_array_elements_are_rejected_alone() {
    let b = parse(r#"[-1, 18446744073709551615, -2.5]"#);
    assert_eq!(b.records, vec![]);
    assert_eq!(
        summary(&b),
        vec![
            rj("$[0]", RejectReason::Parse, 1),
            rj("$[1]", RejectReason::Parse, 1),
            rj("$[2]", RejectReason::Parse, 1),
        ]
    );
    assert_eq!(
        b.rejections[0].message,
        "expected an object, found a number"
    );
}

/// RFC 8259: control characters (U+0000 to U+001F) must be escaped in strings, other
/// characters (from the space on) need not; JSON has no NaN or infinities.
#[test]
fn writers_escape_control_characters_and_null_non_finite_floats() {
    let mut s = String::new();
    write_json_value(&mut s, Some(&Text("a\u{1}b\u{1f} c\"\\\n\r\t".into())));
    assert_eq!(s, r#""a\u0001b\u001f c\"\\\n\r\t""#);
    for f in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        s.clear();
        write_json_value(&mut s, Some(&Float(f)));
        assert_eq!(s, "null");
    }
    s.clear();
    write_json_value(&mut s, Some(&Float(-0.25)));
    assert_eq!(s, "-0.25");
}

/// A rejected column counts its values in the rows of the right length only: the longer row
/// is rejected whole, on its own.
#[test]
fn a_rejected_column_skips_rows_of_the_wrong_length() {
    let (records, rejections) = one(
        r#"{"device":"root.a.b","timestamps":[1,2],"measurements":["ok","s.x"],"values":[[1,2],[3,4,5]]}"#,
    );
    assert_eq!(records, vec![rec("root.a.b", 1, &[("ok", Int(1))])]);
    assert_eq!(
        locations(&rejections),
        vec![
            ("$.measurements[1]", RejectReason::InvalidPath, 1),
            ("$.values[1]", RejectReason::Parse, 3),
        ]
    );
}

/// The arena starts with room for a quarter as many entries as the payload has bytes (a JSON
/// value with its separator takes at least 4, `1.5,`), at most 2^16 (`Vec::with_capacity`
/// gives exactly the capacity asked for, by its documentation).
#[test]
fn arena_is_sized_for_the_payload() {
    assert_eq!(Arena::for_payload(0).items.capacity(), 0);
    assert_eq!(Arena::for_payload(4003).items.capacity(), 1000);
    assert_eq!(Arena::for_payload(1 << 20).items.capacity(), 1 << 16);
}

/// Each visitor names what it takes when a deserializer offers a type it does not take
/// (serde's "invalid type: ..., expected ..." error). serde_json never offers one (every
/// visitor takes every JSON type, and keys are strings), so this drives them with serde's
/// value deserializers.
#[test]
fn visitors_name_what_they_expect() {
    use serde::de::value::{BytesDeserializer, Error as ValueError, U64Deserializer};
    use serde::Deserialize;
    let bytes = || BytesDeserializer::<ValueError>::new(b"x");
    let mut arena = Arena::default();
    let e = JSeed {
        depth: 2,
        arena: &mut arena,
    }
    .deserialize(bytes())
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid type: byte array, expected a JSON value"
    );
    let e = Key::deserialize(U64Deserializer::<ValueError>::new(5))
        .err()
        .unwrap();
    assert_eq!(e.to_string(), "invalid type: integer `5`, expected a key");
    let mut ctx = Ctx {
        opts: JsonOptions::default(),
        batch: Batch::default(),
        arena: Arena::default(),
        names: Names::default(),
    };
    let e = TopSeed { ctx: &mut ctx }.deserialize(bytes()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid type: byte array, expected an object or an array of objects"
    );
    let e = ElemSeed {
        ctx: &mut ctx,
        index: 0,
    }
    .deserialize(bytes())
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid type: byte array, expected an object"
    );
    assert_eq!(ctx.batch, Batch::default());
}
