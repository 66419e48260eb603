use super::*;
use crate::model::Rejection;
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
        .map(|r| (r.location.clone(), r.reason, r.points))
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

#[test]
fn batch_form_and_arrays() {
    let b = parse(
        r#"[{"device":"root.sg.d1","timestamps":[1,2],"measurements":["s1","s2"],"values":[[1,null],[2.5,3.5]]},
            {"device":"root.sg.d2","timestamp":3,"measurements":["s1"],"values":[false]},
            {"device":"root.sg.d3","timestamps":[4],"measurements":["s1"],"values":[[null]]}]"#,
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(
        b.records,
        vec![
            rec("root.sg.d1", 1, &[("s1", Int(1)), ("s2", Float(2.5))]),
            rec("root.sg.d1", 2, &[("s2", Float(3.5))]),
            rec("root.sg.d2", 3, &[("s1", Bool(false))]),
        ]
    );
    assert_eq!(b.point_count(), 4);
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
             {"device":"root.a.b","timestamps":[3,9223372037,4],"measurements":["s","t"],"values":[[1,2,3],[null,null,4]]}]"#,
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
        assert_eq!(b.rejections[0].location, loc, "{text}: {}", b.rejections[0]);
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
            (r.location.as_str(), r.reason, r.points),
            (*loc, *reason, *points),
            "{bad}: {r}"
        );
        assert!(r.message.contains(msg), "{bad}: {r}");
        // Same record alone at the top level: path `$`.
        let (_, rejections) = one(bad);
        assert_eq!(
            rejections[0].location,
            loc.replacen("$[0]", "$", 1),
            "{bad}"
        );
    }
}

#[test]
fn column_and_point_errors() {
    // Bad measurement names reject their column only.
    let (records, rejections) = one(
        r#"{"device":"root.a.b","timestamps":[1,2],"measurements":["s.x",7,"ok","time"],"values":[[1,2],[3,null],[5,6],[7,8]]}"#,
    );
    assert_eq!(
        records,
        vec![
            rec("root.a.b", 1, &[("ok", Int(5))]),
            rec("root.a.b", 2, &[("ok", Int(6))])
        ]
    );
    let s: Vec<_> = rejections
        .iter()
        .map(|r| (r.location.as_str(), r.reason, r.points))
        .collect();
    assert_eq!(
        s,
        vec![
            ("$.measurements[0]", RejectReason::InvalidPath, 2),
            ("$.measurements[1]", RejectReason::Parse, 1),
            ("$.measurements[3]", RejectReason::InvalidPath, 2),
        ]
    );
    // Column length mismatch and non-array column reject that column.
    let (records, rejections) = one(
        r#"{"device":"root.a.b","timestamps":[1,2],"measurements":["a","b","c"],"values":[[1],5,[true,false]]}"#,
    );
    assert_eq!(
        records,
        vec![
            rec("root.a.b", 1, &[("c", Bool(true))]),
            rec("root.a.b", 2, &[("c", Bool(false))])
        ]
    );
    let s: Vec<_> = rejections
        .iter()
        .map(|r| (r.location.as_str(), r.reason, r.points))
        .collect();
    assert_eq!(
        s,
        vec![
            ("$.values[0]", RejectReason::Parse, 1),
            ("$.values[1]", RejectReason::Parse, 1)
        ]
    );
    assert!(rejections[0].message.contains("1 values for 2 timestamps"));
    // Bad single values reject only their point.
    let (records, rejections) = one(
        r#"[{"device":"root.a.b","timestamps":[1,2],"measurements":["a","b"],"values":[[{"x":1},2],[[1],9223372036854775808]]},
            {"device":"root.a.b","timestamp":3,"measurements":["a","b","c"],"values":[{},[1,[2]],3]}]"#,
    );
    assert_eq!(
        records,
        vec![
            rec("root.a.b", 2, &[("a", Int(2))]),
            rec("root.a.b", 3, &[("c", Int(3))])
        ]
    );
    let s: Vec<_> = rejections
        .iter()
        .map(|r| (r.location.as_str(), r.reason, r.points))
        .collect();
    assert_eq!(
        s,
        vec![
            ("$[0].values[0][0]", RejectReason::TypeMismatch, 1),
            ("$[0].values[1][0]", RejectReason::TypeMismatch, 1),
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
    assert!(rejections[2].message.contains("INT64"), "{}", rejections[2]);
    // A bad timestamp in batch form loses only the points at that timestamp.
    let (records, rejections) = one(
        r#"{"device":"root.a.b","timestamps":[1,"x",3,null],"measurements":["a"],"values":[[1,2,3,null]]}"#,
    );
    assert_eq!(
        records,
        vec![
            rec("root.a.b", 1, &[("a", Int(1))]),
            rec("root.a.b", 3, &[("a", Int(3))])
        ]
    );
    let s: Vec<_> = rejections
        .iter()
        .map(|r| (r.location.as_str(), r.reason, r.points))
        .collect();
    assert_eq!(s, vec![("$.timestamps[1]", RejectReason::InvalidTime, 1)]);
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
    s.push_str(r#"],"measurements":["a"],"values":[["#);
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str("{}");
    }
    s.push_str("]]}");
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
            device: format!("root.{}", nodes.join(".")),
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

    #[test]
    fn single_records_round_trip(records in proptest::collection::vec(arb_record(), 0..8)) {
        let mut s = String::from("[");
        for (i, r) in records.iter().enumerate() {
            if i > 0 { s.push(','); }
            write_record(&mut s, r);
        }
        s.push(']');
        let b = parse(&s);
        prop_assert_eq!(b.rejections, vec![]);
        prop_assert_eq!(b.records, records);
    }

    #[test]
    fn tablets_round_trip(
        device in proptest::collection::vec(arb_name(), 1..3),
        times in proptest::collection::vec(-1_000_000i64..1_000_000, 1..20),
        columns in proptest::collection::btree_map(arb_name(), proptest::collection::vec(proptest::option::of(arb_value()), 20), 1..5),
    ) {
        let device = format!("root.{}", device.join("."));
        let names: Vec<&str> = columns.keys().map(String::as_str).collect();
        let cols: Vec<Vec<Option<FieldValue>>> = columns.values().cloned().collect();
        let mut s = String::new();
        write_tablet(&mut s, &device, &times, &names, &cols);
        let b = parse(&s);
        prop_assert_eq!(b.rejections, vec![]);
        let mut expected = Vec::new();
        for (t, &time) in times.iter().enumerate() {
            let fields: Vec<Field> = names.iter().zip(&cols)
                .filter_map(|(m, c)| c[t].clone().map(|value| Field::new(*m, value)))
                .collect();
            if !fields.is_empty() {
                expected.push(Record { device: device.clone(), time, fields });
            }
        }
        prop_assert_eq!(b.records, expected);
    }
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
            {"device":"root.a.b","timestamps":["8", 9, "1.5"],"measurements":["s"],"values":[[1,2,3]]}]"#,
    );
    let times: Vec<i64> = b.records.iter().map(|r| r.time).collect();
    assert_eq!(times, vec![-7, 8, 9]);
    assert_eq!(
        summary(&b),
        vec![rj("$[1].timestamps[2]", RejectReason::InvalidTime, 1)]
    );
}
