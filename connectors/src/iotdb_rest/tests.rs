//! Expected values come from IoTDB's REST documentation (iotdb-docs, `RestServiceV1.md` and
//! `RestServiceV2.md`: the example requests and the query results they lead to) and from the
//! Javadoc of `Double.toString`, never from this parser.

use super::*;
use proptest::prelude::*;
use FieldValue::{Bool, Float, Int, Text};

fn opts() -> RestOptions {
    RestOptions::default()
}

fn field(m: &str, v: FieldValue, t: DataType) -> Field {
    Field {
        measurement: m.into(),
        value: v,
        type_hint: Some(t),
    }
}

fn rec(device: &str, time: i64, fields: Vec<Field>) -> Record {
    Record {
        device: device.into(),
        time,
        fields,
    }
}

fn summary(b: &Batch) -> Vec<(String, RejectReason, u64)> {
    b.rejections
        .iter()
        .map(|r| (r.location.to_string(), r.reason, r.points))
        .collect()
}

fn v2(s: &str) -> Batch {
    parse_insert_tablet(s.as_bytes(), TabletNames::V2, &opts())
}

fn records(s: &str) -> Batch {
    parse_insert_records(s.as_bytes(), &opts())
}

/// The documentation's insertTablet example means: s3 (INT32) is 11 at the first timestamp
/// and absent at the second; s4 (BOOLEAN) is false then true (its query example reads back
/// exactly that).
fn docs_tablet_records() -> Vec<Record> {
    vec![
        rec(
            "root.sg27",
            1635232143960,
            vec![
                field("s3", Int(11), DataType::INT32),
                field("s4", Bool(false), DataType::BOOLEAN),
            ],
        ),
        rec(
            "root.sg27",
            1635232153960,
            vec![field("s4", Bool(true), DataType::BOOLEAN)],
        ),
    ]
}

#[test]
fn documented_v2_insert_tablet() {
    let b = v2(
        r#"{"timestamps":[1635232143960,1635232153960],"measurements":["s3","s4"],"data_types":["INT32","BOOLEAN"],"values":[[11,null],[false,true]],"is_aligned":false,"device":"root.sg27"}"#,
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(b.records, docs_tablet_records());
}

#[test]
fn documented_v1_insert_tablet() {
    let b = parse_insert_tablet(
        br#"{"timestamps":[1635232143960,1635232153960],"measurements":["s3","s4"],"dataTypes":["INT32","BOOLEAN"],"values":[[11,null],[false,true]],"isAligned":false,"deviceId":"root.sg27"}"#,
        TabletNames::V1,
        &opts(),
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(b.records, docs_tablet_records());
    // v2 names are not v1 names.
    let b = parse_insert_tablet(
        br#"{"timestamps":[1],"measurements":["s3"],"data_types":["INT32"],"values":[[11]],"is_aligned":false,"device":"root.sg27"}"#,
        TabletNames::V1,
        &opts(),
    );
    assert_eq!(b.records, vec![]);
    assert_eq!(
        summary(&b),
        [("$.isAligned".into(), RejectReason::Parse, 1)]
    );
}

#[test]
fn documented_v2_insert_records() {
    let b = records(
        r#"{"timestamps":[1635232113960,1635232151960,1635232143960,1635232143960],"measurements_list":[["s33","s44"],["s55","s66"],["s77","s88"],["s771","s881"]],"data_types_list":[["INT32","INT64"],["FLOAT","DOUBLE"],["FLOAT","DOUBLE"],["BOOLEAN","TEXT"]],"values_list":[[1,11],[2.1,2],[4,6],[false,"cccccc"]],"is_aligned":false,"devices":["root.s1","root.s1","root.s1","root.s3"]}"#,
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(
        b.records,
        vec![
            rec(
                "root.s1",
                1635232113960,
                vec![
                    field("s33", Int(1), DataType::INT32),
                    field("s44", Int(11), DataType::INT64)
                ]
            ),
            rec(
                "root.s1",
                1635232151960,
                vec![
                    field("s55", Float(2.1), DataType::FLOAT),
                    field("s66", Float(2.0), DataType::DOUBLE)
                ]
            ),
            rec(
                "root.s1",
                1635232143960,
                vec![
                    field("s77", Float(4.0), DataType::FLOAT),
                    field("s88", Float(6.0), DataType::DOUBLE)
                ]
            ),
            rec(
                "root.s3",
                1635232143960,
                vec![
                    field("s771", Bool(false), DataType::BOOLEAN),
                    field("s881", Text("cccccc".into()), DataType::TEXT)
                ]
            ),
        ]
    );
}

#[test]
fn requests_refused_as_a_whole() {
    let tablet = |body: &str| summary(&v2(body));
    let one = |at: &str, points| vec![(at.to_string(), RejectReason::Parse, points)];
    // Not JSON, or a field of the wrong JSON type.
    assert_eq!(tablet("{\"device\":"), one("$", 1));
    assert_eq!(
        tablet(
            r#"{"device":"root.sg.d","timestamps":"1","measurements":[],"data_types":[],"values":[],"is_aligned":false}"#
        ),
        one("$", 1)
    );
    // Missing (or null) fields.
    assert_eq!(
        tablet(
            r#"{"device":"root.sg.d","timestamps":[1,2],"measurements":["s"],"data_types":["INT64"],"values":[[1,2]]}"#
        ),
        one("$.is_aligned", 2)
    );
    assert_eq!(
        tablet(
            r#"{"device":null,"timestamps":[1],"measurements":["s"],"data_types":["INT64"],"values":[[1]],"is_aligned":true}"#
        ),
        one("$.device", 1)
    );
    // Lengths that disagree.
    assert_eq!(
        tablet(
            r#"{"device":"root.sg.d","timestamps":[1,2],"measurements":["s","t"],"data_types":["INT64"],"values":[[1,2]],"is_aligned":false}"#
        ),
        one("$.measurements", 2)
    );
    assert_eq!(
        tablet(
            r#"{"device":"root.sg.d","timestamps":[1,2],"measurements":["s"],"data_types":["INT64"],"values":[[1,2,3]],"is_aligned":false}"#
        ),
        one("$.values[0]", 3)
    );
    assert_eq!(
        tablet(
            r#"{"device":"root.sg.d","timestamps":[],"measurements":["s"],"data_types":["INT64"],"values":[[]],"is_aligned":false}"#
        ),
        one("$.timestamps", 1)
    );
    // Types that are not IoTDB's, or that TsFile 0.10 cannot hold: all named at once.
    let b = v2(
        r#"{"device":"root.sg.d","timestamps":[1],"measurements":["a","b","c"],"data_types":["INT33","date","int32"],"values":[[1],[2],[3]],"is_aligned":false}"#,
    );
    assert_eq!(summary(&b), one("$.data_types", 3));
    let m = &b.rejections[0].message;
    assert!(m.contains("root.sg.d.a") && m.contains("INT33"), "{m}");
    assert!(m.contains("root.sg.d.b") && m.contains("TsFile"), "{m}");
    assert!(!m.contains("root.sg.d.c"), "{m}");
    // insertRecords: lists of different lengths, rows of different widths, nothing but nulls.
    let recs = |body: &str| summary(&records(body));
    assert_eq!(
        recs(
            r#"{"timestamps":[1,2],"devices":["root.sg.d"],"measurements_list":[["s"]],"data_types_list":[["INT64"]],"values_list":[[1]],"is_aligned":false}"#
        ),
        one("$.timestamps", 1)
    );
    assert_eq!(
        recs(
            r#"{"timestamps":[1],"devices":["root.sg.d"],"measurements_list":[["s","t"]],"data_types_list":[["INT64"]],"values_list":[[1,2]],"is_aligned":false}"#
        ),
        one("$.data_types_list[0]", 2)
    );
    assert_eq!(
        recs(
            r#"{"timestamps":[1],"devices":["root.sg.d"],"measurements_list":[["s"]],"data_types_list":[["INT64"]],"values_list":[[null]],"is_aligned":false}"#
        ),
        one("$.values_list", 1)
    );
    assert_eq!(
        recs(
            r#"{"timestamps":[1],"devices":["root.sg.d"],"measurements_list":[["s"]],"data_types_list":[["INT64"]],"values_list":[[1]]}"#
        ),
        one("$.is_aligned", 1)
    );
}

#[test]
fn tablet_values_follow_the_declared_types() {
    let b = v2(
        r#"{"device":"root.sg.d","timestamps":[1,2,3],"is_aligned":true,
            "measurements":["b","i","l","f","t"],
            "data_types":["BOOLEAN","INT32","INT64","FLOAT","TEXT"],
            "values":[[1,"0",2],[2147483647,2147483648,1.5],[9223372036854775807,9223372036854775808,-1],
                      ["2.5",3,"x"],[2.0,10000000000.0,true]]}"#,
    );
    let h = |m, v, t| field(m, v, t);
    assert_eq!(
        b.records,
        vec![
            rec(
                "root.sg.d",
                1,
                vec![
                    h("b", Bool(true), DataType::BOOLEAN),
                    h("i", Int(2147483647), DataType::INT32),
                    h("l", Int(i64::MAX), DataType::INT64),
                    h("f", Float(2.5), DataType::FLOAT),
                    h("t", Text("2.0".into()), DataType::TEXT),
                ]
            ),
            rec(
                "root.sg.d",
                2,
                vec![
                    h("b", Bool(false), DataType::BOOLEAN),
                    h("f", Float(3.0), DataType::FLOAT),
                    h("t", Text("1.0E10".into()), DataType::TEXT),
                ]
            ),
            rec(
                "root.sg.d",
                3,
                vec![
                    h("l", Int(-1), DataType::INT64),
                    h("t", Text("true".into()), DataType::TEXT),
                ]
            ),
        ]
    );
    assert_eq!(
        summary(&b),
        vec![
            ("$.values[1][1]".into(), RejectReason::TypeMismatch, 1),
            ("$.values[2][1]".into(), RejectReason::TypeMismatch, 1),
            ("$.values[0][2]".into(), RejectReason::TypeMismatch, 1),
            ("$.values[1][2]".into(), RejectReason::TypeMismatch, 1),
            ("$.values[3][2]".into(), RejectReason::TypeMismatch, 1),
        ]
    );
}

#[test]
fn records_values_follow_the_declared_types() {
    let b = records(
        r#"{"timestamps":[1,2],"devices":["root.sg.d","root.sg.d"],"is_aligned":false,
            "measurements_list":[["b","i","f","t"],["b","i","f","t"]],
            "data_types_list":[["BOOLEAN","INT32","DOUBLE","STRING"],["BOOLEAN","INT64","DOUBLE","TEXT"]],
            "values_list":[[true,4.0,"2.5",7],[1,2.5,-3,"x"]]}"#,
    );
    assert_eq!(
        b.records,
        vec![
            rec(
                "root.sg.d",
                1,
                vec![
                    field("b", Bool(true), DataType::BOOLEAN),
                    field("i", Int(4), DataType::INT32),
                    field("t", Text("7".into()), DataType::TEXT),
                ]
            ),
            rec(
                "root.sg.d",
                2,
                vec![
                    field("f", Float(-3.0), DataType::DOUBLE),
                    field("t", Text("x".into()), DataType::TEXT),
                ]
            ),
        ]
    );
    assert_eq!(
        summary(&b),
        vec![
            ("$.values_list[0][2]".into(), RejectReason::TypeMismatch, 1),
            ("$.values_list[1][0]".into(), RejectReason::TypeMismatch, 1),
            ("$.values_list[1][1]".into(), RejectReason::TypeMismatch, 1),
        ]
    );
}

#[test]
fn bad_paths_and_times_reject_only_their_points() {
    let b = v2(
        r#"{"device":"root.sg.d","timestamps":[1,"2",2.5],"is_aligned":false,"measurements":["ok","bad name"],
            "data_types":["INT64","INT64"],"values":[[1,2,3],[4,null,6]]}"#,
    );
    assert_eq!(
        b.records,
        vec![
            rec("root.sg.d", 1, vec![field("ok", Int(1), DataType::INT64)]),
            rec("root.sg.d", 2, vec![field("ok", Int(2), DataType::INT64)]),
        ]
    );
    assert_eq!(
        summary(&b),
        vec![
            ("$.measurements[1]".into(), RejectReason::InvalidPath, 2),
            ("$.timestamps[2]".into(), RejectReason::InvalidTime, 1),
        ]
    );
    let b = v2(
        r#"{"device":"root..d","timestamps":[1,2],"is_aligned":false,"measurements":["s"],"data_types":["INT64"],"values":[[1,2]]}"#,
    );
    assert_eq!(b.records, vec![]);
    assert_eq!(
        summary(&b),
        [("$.device".into(), RejectReason::InvalidPath, 2)]
    );
    let b = records(
        r#"{"timestamps":[1,true],"devices":["bad","root.sg.d"],"is_aligned":false,"measurements_list":[["s"],["s"]],
            "data_types_list":[["INT64"],["INT64"]],"values_list":[[1],[2]]}"#,
    );
    assert_eq!(b.records, vec![]);
    assert_eq!(
        summary(&b),
        vec![
            ("$.devices[0]".into(), RejectReason::InvalidPath, 1),
            ("$.timestamps[1]".into(), RejectReason::InvalidTime, 1),
        ]
    );
}

#[test]
fn timestamps_are_converted_to_the_stored_unit() {
    let b = parse_insert_tablet(
        br#"{"deviceId":"root.sg.d","timestamps":[2],"isAligned":false,"measurements":["s"],"dataTypes":["DOUBLE"],"values":[[1]]}"#,
        TabletNames::V1,
        &RestOptions {
            input_unit: TimeUnit::Millis,
            stored_unit: TimeUnit::Micros,
        },
    );
    assert_eq!(b.records[0].time, 2000);
}

#[test]
fn statuses_of_rejections() {
    let r = |reason| Rejection {
        location: Location::Json("$".into()),
        reason,
        message: String::new(),
        points: 1,
    };
    assert_eq!(rejection_status(&[]), status::SUCCESS);
    assert_eq!(rejection_status(&[r(RejectReason::Parse)]).code, 303);
    assert_eq!(rejection_status(&[r(RejectReason::InvalidPath)]).code, 509);
    let two = [r(RejectReason::TypeMismatch), r(RejectReason::TypeMismatch)];
    assert_eq!(rejection_status(&two).code, 614);
    // A value whose declared type differs from the series' is IoTDB's type mismatch too.
    let conflict = [r(RejectReason::DeclaredTypeConflict)];
    assert_eq!(rejection_status(&conflict).code, 614);
    let mixed = [r(RejectReason::TypeMismatch), r(RejectReason::InvalidPath)];
    assert_eq!(rejection_status(&mixed).code, 302);
}

#[test]
fn numbers_as_java_prints_them() {
    // Javadoc of Double.toString: plain from 10^-3 (inclusive) to 10^7 (exclusive), with at
    // least one digit after the point; computerized scientific notation outside.
    for (f, s) in [
        (2.0, "2.0"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (123.456, "123.456"),
        (-1.5e-7, "-1.5E-7"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (f64::INFINITY, "Infinity"),
        (f64::NEG_INFINITY, "-Infinity"),
        (f64::NAN, "NaN"),
    ] {
        assert_eq!(java_double(f), s, "{f}");
    }
}

/// `parse_rest_request` reads each request with its own names (the documentation's bodies).
#[test]
fn requests_by_kind() {
    let v1 = br#"{"timestamps":[1635232143960,1635232153960],"measurements":["s3","s4"],"dataTypes":["INT32","BOOLEAN"],"values":[[11,null],[false,true]],"isAligned":false,"deviceId":"root.sg27"}"#;
    let v2 = br#"{"timestamps":[1635232143960,1635232153960],"measurements":["s3","s4"],"data_types":["INT32","BOOLEAN"],"values":[[11,null],[false,true]],"is_aligned":false,"device":"root.sg27"}"#;
    let kind = |body: &[u8], request| parse_rest_request(body, request, &opts());
    let b = kind(v1, RestRequest::InsertTablet(TabletNames::V1));
    assert_eq!((b.records, b.rejections), (docs_tablet_records(), vec![]));
    let b = kind(v2, RestRequest::InsertTablet(TabletNames::V2));
    assert_eq!((b.records, b.rejections), (docs_tablet_records(), vec![]));
    let b = kind(
        br#"{"timestamps":[5],"devices":["root.s3"],"measurements_list":[["s771"]],"data_types_list":[["BOOLEAN"]],"values_list":[[false]],"is_aligned":false}"#,
        RestRequest::InsertRecords,
    );
    assert_eq!(
        b.records,
        vec![rec(
            "root.s3",
            5,
            vec![field("s771", Bool(false), DataType::BOOLEAN)]
        )]
    );
    // A tablet body is no insertRecords body.
    assert_eq!(
        summary(&kind(v2, RestRequest::InsertRecords)),
        [("$.devices".into(), RejectReason::Parse, 1)]
    );
}

/// insertRecords takes integers written as numbers with a zero fraction, within the range of
/// the declared type: INT32 from -2^31 to 2^31 - 1, INT64 from -2^63 to the largest double
/// below 2^63 (2^63 - 1024); insertTablet takes none of them.
#[test]
fn integral_numbers_within_the_declared_range() {
    let b = records(
        r#"{"timestamps":[1],"devices":["root.sg.d"],"is_aligned":false,
            "measurements_list":[["a","b","c","d","e","f","g","h"]],
            "data_types_list":[["INT32","INT32","INT32","INT32","INT64","INT64","INT64","INT64"]],
            "values_list":[[2147483647.0,-2147483648.0,2147483648.0,-2147483649.0,
                            9223372036854774784.0,-9223372036854775808.0,9223372036854775808.0,-9.3e18]]}"#,
    );
    assert_eq!(
        b.records,
        vec![rec(
            "root.sg.d",
            1,
            vec![
                field("a", Int(2147483647), DataType::INT32),
                field("b", Int(-2147483648), DataType::INT32),
                field("e", Int(9223372036854774784), DataType::INT64),
                field("f", Int(i64::MIN), DataType::INT64),
            ]
        )]
    );
    let mismatch = |at: &str| (at.to_string(), RejectReason::TypeMismatch, 1);
    assert_eq!(
        summary(&b),
        vec![
            mismatch("$.values_list[0][2]"),
            mismatch("$.values_list[0][3]"),
            mismatch("$.values_list[0][6]"),
            mismatch("$.values_list[0][7]"),
        ]
    );
    let b = v2(
        r#"{"device":"root.sg.d","timestamps":[1],"is_aligned":false,"measurements":["a","b"],
            "data_types":["INT32","INT64"],"values":[[4.0],[4.0]]}"#,
    );
    assert_eq!(b.records, vec![]);
    assert_eq!(
        summary(&b),
        vec![mismatch("$.values[0][0]"), mismatch("$.values[1][0]")]
    );
}

/// BOOLEAN: insertTablet also takes `1`/`0` and `"1"`/`"0"`, insertRecords only `true`/`false`;
/// other strings neither.
#[test]
fn booleans_by_request() {
    let b = v2(
        r#"{"device":"root.sg.d","timestamps":[1,2,3],"is_aligned":false,"measurements":["b"],
            "data_types":["BOOLEAN"],"values":[["1","true",2]]}"#,
    );
    assert_eq!(
        b.records,
        vec![rec(
            "root.sg.d",
            1,
            vec![field("b", Bool(true), DataType::BOOLEAN)]
        )]
    );
    let mismatch = |at: &str| (at.to_string(), RejectReason::TypeMismatch, 1);
    assert_eq!(
        summary(&b),
        vec![mismatch("$.values[0][1]"), mismatch("$.values[0][2]")]
    );
    let b = records(
        r#"{"timestamps":[1],"devices":["root.sg.d"],"is_aligned":false,"measurements_list":[["a","b","c"]],
            "data_types_list":[["BOOLEAN","BOOLEAN","BOOLEAN"]],"values_list":[["1",0,false]]}"#,
    );
    assert_eq!(
        b.records,
        vec![rec(
            "root.sg.d",
            1,
            vec![field("c", Bool(false), DataType::BOOLEAN)]
        )]
    );
    assert_eq!(
        summary(&b),
        vec![
            mismatch("$.values_list[0][0]"),
            mismatch("$.values_list[0][1]")
        ]
    );
}

/// An integer above the INT64 range: a DOUBLE value (rounded to the nearest double, 2^64), a
/// TEXT value as Java prints the integer, and a mismatch for the integer types; an array is
/// no value of any type.
#[test]
fn integers_above_int64() {
    let b = v2(
        r#"{"device":"root.sg.d","timestamps":[1],"is_aligned":false,"measurements":["d","t","l","x"],
            "data_types":["DOUBLE","TEXT","INT64","TEXT"],"values":[[18446744073709551615],[18446744073709551615],[18446744073709551615],[[1]]]}"#,
    );
    assert_eq!(
        b.records,
        vec![rec(
            "root.sg.d",
            1,
            vec![
                field("d", Float(18446744073709551616.0), DataType::DOUBLE),
                field("t", Text("18446744073709551615".into()), DataType::TEXT),
            ]
        )]
    );
    assert_eq!(
        summary(&b),
        vec![
            ("$.values[2][0]".into(), RejectReason::TypeMismatch, 1),
            ("$.values[3][0]".into(), RejectReason::TypeMismatch, 1),
        ]
    );
}

/// A bad name loses only its points: a column or record of nulls under a bad name loses
/// none, so nothing is rejected.
#[test]
fn bad_names_count_their_points() {
    let b = records(
        r#"{"timestamps":[1,2],"devices":["root.sg.d","bad"],"is_aligned":false,
            "measurements_list":[["ok","bad name","also bad"],["s"]],
            "data_types_list":[["INT64","INT64","INT64"],["INT64"]],"values_list":[[1,2,null],[null]]}"#,
    );
    assert_eq!(
        b.records,
        vec![rec(
            "root.sg.d",
            1,
            vec![field("ok", Int(1), DataType::INT64)]
        )]
    );
    assert_eq!(
        summary(&b),
        vec![(
            "$.measurements_list[0][1]".into(),
            RejectReason::InvalidPath,
            1
        )]
    );
    let b = v2(
        r#"{"device":"root.sg.d","timestamps":[1,2],"is_aligned":false,"measurements":["ok","bad name"],
            "data_types":["INT64","INT64"],"values":[[1,2],[null,null]]}"#,
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(b.records.len(), 2);
}

/// Consecutive records of one device share its name (one string per run of a device).
#[test]
fn records_of_a_device_share_its_name() {
    let b = records(
        r#"{"timestamps":[1,2,3],"devices":["root.a","root.a","root.b"],"is_aligned":false,
            "measurements_list":[["s"],["s"],["s"]],"data_types_list":[["INT64"],["INT64"],["INT64"]],
            "values_list":[[1],[2],[3]]}"#,
    );
    let d: Vec<&str> = b.records.iter().map(|r| &*r.device).collect();
    assert_eq!(d, ["root.a", "root.a", "root.b"]);
    assert!(Arc::ptr_eq(&b.records[0].device, &b.records[1].device));
}

/// The value visitor names what it takes when a deserializer offers a type it does not take
/// (serde's "invalid type: ..., expected ..." error). serde_json never offers one (it takes
/// every JSON type), so this drives it with one of serde's value deserializers.
#[test]
fn value_visitor_names_what_it_expects() {
    use serde::de::value::{BytesDeserializer, Error as ValueError};
    let e = Scalar::deserialize(BytesDeserializer::<ValueError>::new(b"x")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid type: byte array, expected a JSON value"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200),
                    text in "[\\[\\]{}\",:0-9a-z_. ]{0,120}") {
        for body in [&bytes[..], text.as_bytes()] {
            let _ = parse_insert_tablet(body, TabletNames::V2, &opts());
            let _ = parse_insert_tablet(body, TabletNames::V1, &opts());
            let _ = parse_insert_records(body, &opts());
        }
    }
}
