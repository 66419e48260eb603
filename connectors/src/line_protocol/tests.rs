use super::*;
use crate::path::{validate_device, validate_measurement};
use proptest::prelude::*;
use FieldValue::{Bool, Float, Int, Text};

fn opts(t: &DeviceTemplate) -> LineProtocolOptions<'_> {
    LineProtocolOptions {
        device_template: t,
        precision: TimeUnit::Nanos,
        stored_unit: TimeUnit::Millis,
        now: 777,
    }
}

fn parse(s: &str) -> Batch {
    let t = DeviceTemplate::default();
    parse_line_protocol(s.as_bytes(), &opts(&t))
}

fn fields(b: &Batch, i: usize) -> Vec<(&str, FieldValue)> {
    b.records[i]
        .fields
        .iter()
        .map(|f| (&*f.measurement, f.value.clone()))
        .collect()
}

/// The rejections as (location as shown, reason, points).
fn rejections(b: &Batch) -> Vec<(&'static str, RejectReason, u64)> {
    b.rejections
        .iter()
        .map(|r| (shown(&r.location), r.reason, r.points))
        .collect()
}

/// A location as shown (leaked: a few bytes per test assertion).
fn shown(l: &crate::model::Location) -> &'static str {
    Box::leak(l.to_string().into_boxed_str())
}

/// Lines of one series that repeat their field keys share the device string and one string
/// per key (no copy per line or per point); a key at another position is its own.
#[test]
fn repeated_series_and_keys_share_strings() {
    let b = parse("m,t=a x=1i,y=2i 1000000\nm,t=a x=3i,y=4i 2000000\nm,t=a y=5i 3000000\n");
    assert_eq!(b.rejections, vec![]);
    assert_eq!(fields(&b, 1), vec![("x", Int(3)), ("y", Int(4))]);
    assert_eq!(fields(&b, 2), vec![("y", Int(5))]);
    let (r0, r1, r2) = (&b.records[0], &b.records[1], &b.records[2]);
    assert!(Arc::ptr_eq(&r0.device, &r1.device) && Arc::ptr_eq(&r0.device, &r2.device));
    assert!(Arc::ptr_eq(
        &r0.fields[0].measurement,
        &r1.fields[0].measurement
    ));
    assert!(Arc::ptr_eq(
        &r0.fields[1].measurement,
        &r1.fields[1].measurement
    ));
}

#[test]
fn telegraf_line() {
    let b = parse(
        "cpu,host=gw-1,cpu=cpu0 usage_idle=99.5,count=3i,n=7u,ok=t,name=\"a b\" 1600000000123456789\n",
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(b.records.len(), 1);
    assert_eq!(&*b.records[0].device, "root.lp.cpu.cpu0.gw_1");
    assert_eq!(b.records[0].time, 1600000000123);
    assert_eq!(
        fields(&b, 0),
        vec![
            ("usage_idle", Float(99.5)),
            ("count", Int(3)),
            ("n", Int(7)),
            ("ok", Bool(true)),
            ("name", Text("a b".into())),
        ]
    );
}

#[test]
fn precision_and_now() {
    let t = DeviceTemplate::default();
    for (p, ts, want) in [
        (TimeUnit::Seconds, "5", 5000),
        (TimeUnit::Millis, "5", 5),
        (TimeUnit::Micros, "5999", 5),
        (TimeUnit::Nanos, "-1", -1),
    ] {
        let o = LineProtocolOptions {
            precision: p,
            ..opts(&t)
        };
        let b = parse_line_protocol(format!("m f=1 {ts}").as_bytes(), &o);
        assert_eq!(b.records[0].time, want, "{p} {ts}");
    }
    let b = parse("m f=1\nm f=2   \r\n");
    assert_eq!(b.rejections, vec![]);
    assert_eq!(b.records.len(), 2);
    assert!(b.records.iter().all(|r| r.time == 777));
    // Overflow on conversion is an InvalidTime of the line.
    let o = LineProtocolOptions {
        precision: TimeUnit::Seconds,
        stored_unit: TimeUnit::Nanos,
        ..opts(&t)
    };
    let b = parse_line_protocol(b"m a=1,b=2 9223372037\nm a=1 1", &o);
    assert_eq!(
        rejections(&b),
        vec![("line 1, column 11", RejectReason::InvalidTime, 2)]
    );
    assert!(b.rejections[0].message.contains("overflows"));
    assert_eq!(b.records.len(), 1);
    assert_eq!(b.records[0].time, 1_000_000_000);
}

#[test]
fn comments_blank_lines_and_line_ends() {
    let b = parse("# comment\n\n   \n  # indented comment\r\n\t m f=1 1\r\n\r\nm f=2 2");
    assert_eq!(b.rejections, vec![]);
    let times: Vec<i64> = b.records.iter().map(|r| r.time).collect();
    assert_eq!(times, vec![0, 0]);
    assert_eq!(fields(&b, 1), vec![("f", Float(2.0))]);
}

#[test]
fn escapes() {
    let t = DeviceTemplate::parse("root.x.{measurement}.{tag:k=1}.{tags}").unwrap();
    let b = parse_line_protocol(
        br#"my\ meas\,x,k\=1=a\ b,z=c\,d\\,w=e\x f\ g\=h=1,s="q\"uo\\te \n" 1"#,
        &opts(&t),
    );
    assert_eq!(b.rejections, vec![]);
    // Tags sorted by key: w (e\x), z (c,d\).
    assert_eq!(&*b.records[0].device, "root.x.my_meas_x.a_b.e_x.c_d_");
    assert_eq!(
        fields(&b, 0),
        vec![("f_g_h", Float(1.0)), ("s", Text("q\"uo\\te \\n".into()))]
    );
    // Raw bytes in measurement: a backslash before an ordinary char is literal.
    let b = parse("a\\b f=1");
    assert_eq!(&*b.records[0].device, "root.lp.a_b");
}

#[test]
fn field_types() {
    let b = parse(
        "m a=t,b=T,c=true,d=True,e=TRUE,f=f,g=F,h=false,i=False,j=FALSE,k=-1.5e3,l=.5,m=1.,n=-7i,o=0u,p=\"\"",
    );
    assert_eq!(b.rejections, vec![]);
    assert_eq!(
        fields(&b, 0),
        vec![
            ("a", Bool(true)),
            ("b", Bool(true)),
            ("c", Bool(true)),
            ("d", Bool(true)),
            ("e", Bool(true)),
            ("f", Bool(false)),
            ("g", Bool(false)),
            ("h", Bool(false)),
            ("i", Bool(false)),
            ("j", Bool(false)),
            ("k", Float(-1500.0)),
            ("l", Float(0.5)),
            ("m", Float(1.0)),
            ("n", Int(-7)),
            ("o", Int(0)),
            ("p", Text(String::new())),
        ]
    );
}

#[test]
fn out_of_range_values_reject_only_their_field() {
    let b = parse(
        "m a=9223372036854775807u,b=9223372036854775808u,c=99999999999999999999u,d=9223372036854775808i,e=1e999,f=1\nm g=-9223372036854775808i",
    );
    assert_eq!(fields(&b, 0), vec![("a", Int(i64::MAX)), ("f", Float(1.0))]);
    assert_eq!(fields(&b, 1), vec![("g", Int(i64::MIN))]);
    assert_eq!(
        rejections(&b),
        vec![
            ("line 1, column 28", RejectReason::TypeMismatch, 1),
            ("line 1, column 51", RejectReason::TypeMismatch, 1),
            ("line 1, column 75", RejectReason::TypeMismatch, 1),
            ("line 1, column 98", RejectReason::TypeMismatch, 1),
        ]
    );
    assert!(
        b.rejections[0].message.contains("\"b\""),
        "{}",
        b.rejections[0]
    );
    assert!(b.rejections[0].message.contains("INT64"));
    // All fields bad: no record, only the field rejections.
    let b = parse("m a=18446744073709551615u");
    assert_eq!(b.records, vec![]);
    assert_eq!(
        rejections(&b),
        vec![("line 1, column 5", RejectReason::TypeMismatch, 1)]
    );
}

#[test]
fn syntax_errors_name_line_and_column() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "cpu",
            "line 2, column 4",
            "expected a space and a field set",
        ),
        (
            "cpu,host=a",
            "line 2, column 11",
            "expected a space and a field set",
        ),
        ("cpu ", "line 2, column 5", "expected a field set"),
        (
            ",t=1 f=1",
            "line 2, column 1",
            "expected a measurement name",
        ),
        (
            "cpu,host f=1",
            "line 2, column 9",
            "expected '=' after the tag key",
        ),
        ("cpu,=a f=1", "line 2, column 5", "expected a tag key"),
        ("cpu,h= f=1", "line 2, column 7", "expected a tag value"),
        ("cpu,h=a=b f=1", "line 2, column 8", "unescaped '='"),
        ("cpu,h=a,h=b f=1", "line 2, column 4", "duplicate tag key"),
        (
            "cpu f",
            "line 2, column 6",
            "expected '=' after the field key",
        ),
        (
            "cpu f g=1",
            "line 2, column 6",
            "expected '=' after the field key",
        ),
        ("cpu =1", "line 2, column 5", "expected a field key"),
        ("cpu f=", "line 2, column 7", "expected a field value"),
        ("cpu f=,g=1", "line 2, column 7", "expected a field value"),
        ("cpu f=1,", "line 2, column 9", "expected a field set"),
        ("cpu f=abc", "line 2, column 7", "invalid field value"),
        ("cpu f=1x", "line 2, column 7", "invalid field value"),
        ("cpu f=-1u", "line 2, column 7", "invalid field value"),
        ("cpu f=1.5i", "line 2, column 7", "invalid field value"),
        ("cpu f=nan", "line 2, column 7", "invalid field value"),
        ("cpu f=1e", "line 2, column 7", "invalid field value"),
        ("cpu f=\"abc", "line 2, column 7", "unterminated string"),
        (
            "cpu f=\"a\"x",
            "line 2, column 10",
            "expected ',' and a field",
        ),
        (
            "cpu f=1 abc",
            "line 2, column 9",
            "expected an integer timestamp",
        ),
        (
            "cpu f=1 1.5",
            "line 2, column 9",
            "expected an integer timestamp",
        ),
        (
            "cpu f=1 123 x",
            "line 2, column 13",
            "expected the end of the line",
        ),
        ("cpu f=1\t123", "line 2, column 7", "invalid field value"),
        // A `\r` not before `\n` ends no line, so it is part of the value's token.
        ("cpu f=1\rx", "line 2, column 7", "invalid field value"),
        // An empty field key before `,` or a space, as before `=` (influxdata's corpus:
        // "invalid character '=' found at start of field key", "expected field key but none
        // found").
        ("cpu ,f=1", "line 2, column 5", "expected a field key"),
        ("cpu f=1,,g=2", "line 2, column 9", "expected a field key"),
        ("cpu f=1, g=2", "line 2, column 9", "expected a field key"),
    ];
    // `\r\n` ends a line as `\n` does (the module docs): the same error at the same column,
    // the line's end being where the `\r` is.
    for eol in ["\n", "\r\n"] {
        for (bad, loc, msg) in cases {
            let text = format!("ok f=1 1{eol}{bad}{eol}ok f=2 2{eol}");
            let b = parse(&text);
            assert_eq!(b.records.len(), 2, "{bad:?}: {:?}", b.rejections);
            assert_eq!(b.records[1].fields[0].value, Float(2.0), "{bad:?}");
            assert_eq!(b.rejections.len(), 1, "{bad:?}: {:?}", b.rejections);
            let r = &b.rejections[0];
            assert_eq!(r.location.to_string(), *loc, "{bad:?} {eol:?}: {r}");
            assert_eq!(r.reason, RejectReason::Parse, "{bad:?}");
            assert!(r.message.contains(msg), "{bad:?} {eol:?}: {r}");
            assert!(r.points >= 1);
        }
    }
    // Timestamp out of the i64 range is InvalidTime, not Parse.
    let b = parse("m f=1 99999999999999999999");
    assert_eq!(
        rejections(&b),
        vec![("line 1, column 7", RejectReason::InvalidTime, 1)]
    );
}

#[test]
fn invalid_utf8() {
    let b = parse_line_protocol(
        b"m,t=\xff f=1\nm f\xfe=1\nm s=\"\xc3\"\nm\xff f=1\nm f=1",
        &LineProtocolOptions::default(),
    );
    assert_eq!(b.records.len(), 1);
    let locs: Vec<_> = b.rejections.iter().map(|r| shown(&r.location)).collect();
    assert_eq!(
        locs,
        vec![
            "line 1, column 5",
            "line 2, column 4",
            "line 3, column 6",
            "line 4, column 2"
        ]
    );
    assert!(b.rejections.iter().all(|r| r.message.contains("UTF-8")));
}

#[test]
fn multi_line_strings_keep_line_numbers() {
    let b = parse("m s=\"a\nb\" 1\nm f=bad\nm s=\"x\ny\",g=bad\nm f=1");
    assert_eq!(b.records.len(), 2);
    assert_eq!(fields(&b, 0), vec![("s", Text("a\nb".into()))]);
    assert_eq!(
        rejections(&b),
        vec![
            ("line 3, column 5", RejectReason::Parse, 1),
            ("line 4 (at line 5, column 6)", RejectReason::Parse, 2),
        ]
    );
    assert_eq!(b.records[1].fields[0].value, Float(1.0));
}

#[test]
fn device_templates_and_sanitizing() {
    let t = DeviceTemplate::parse("root.telegraf.{tag:host}.{measurement}").unwrap();
    let b = parse_line_protocol(
        b"disk,host=h1,path=/ used-percent=5,time=1\ndisk,path=/ free=1\n",
        &opts(&t),
    );
    assert_eq!(b.records.len(), 1);
    assert_eq!(&*b.records[0].device, "root.telegraf.h1.disk");
    assert_eq!(
        fields(&b, 0),
        vec![("used_percent", Float(5.0)), ("_time", Float(1.0))]
    );
    assert_eq!(
        rejections(&b),
        vec![("line 2, column 1", RejectReason::InvalidPath, 1)]
    );
    assert!(b.rejections[0].message.contains("\"host\""));
    // `{tags}` with no tags and nothing else: no level after root.
    let t = DeviceTemplate::parse("root.{tags}").unwrap();
    let b = parse_line_protocol(b"m f=1\nm,a=b f=1", &opts(&t));
    assert_eq!(
        rejections(&b),
        vec![("line 1, column 1", RejectReason::InvalidPath, 1)]
    );
    assert_eq!(&*b.records[0].device, "root.b");
}

#[test]
fn many_bad_lines_are_summarized() {
    let text = "x\n".repeat(crate::reject::MAX_ITEMIZED_REJECTIONS + 7);
    let b = parse(&text);
    assert_eq!(
        b.rejections.len(),
        crate::reject::MAX_ITEMIZED_REJECTIONS + 1
    );
    assert_eq!(
        b.rejected_points(),
        crate::reject::MAX_ITEMIZED_REJECTIONS as u64 + 7
    );
}

#[test]
fn writer_escapes() {
    let mut s = String::new();
    write_line(
        &mut s,
        "a b,c",
        &[("k=", "v \\")],
        &[
            ("f", &Text("q\"\\".into())),
            ("n", &Float(f64::NAN)),
            ("i", &Int(-3)),
        ],
        Some(5),
    );
    assert_eq!(s, "a\\ b\\,c,k\\==v\\ \\\\ f=\"q\\\"\\\\\",i=-3i 5\n");
    let before = s.len();
    write_line(&mut s, "m", &[], &[("n", &Float(f64::INFINITY))], None);
    assert_eq!(s.len(), before);
}

// ----- properties ------------------------------------------------------------------------------

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

#[derive(Debug, Clone)]
struct Line {
    measurement: String,
    tags: Vec<(String, String)>,
    fields: Vec<(String, FieldValue)>,
    time: Option<i64>,
    /// Which spelling of a boolean to write (line protocol has five per value).
    bool_spelling: usize,
}

/// Names for the round trip: a letter, then letters, digits, `_` and the characters line
/// protocol escapes (space, `,`, `=`, `\`); never a reserved word.
fn arb_round_trip_name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_ ,=\\\\]{0,7}".prop_filter("reserved", |n| {
        !["root", "time", "timestamp"].contains(&n.as_str())
    })
}

fn arb_line() -> impl Strategy<Value = Line> {
    (
        arb_round_trip_name(),
        proptest::collection::btree_map(arb_round_trip_name(), arb_round_trip_name(), 0..4),
        proptest::collection::btree_map(arb_round_trip_name(), arb_value(), 1..5),
        proptest::option::of(any::<i64>()),
        0usize..5,
    )
        .prop_map(|(measurement, tags, fields, time, bool_spelling)| Line {
            measurement,
            tags: tags.into_iter().collect(),
            fields: fields.into_iter().collect(),
            time,
            bool_spelling,
        })
        .prop_filter("distinct field nodes", |l| {
            let mut nodes: Vec<String> = l.fields.iter().map(|(k, _)| node(k)).collect();
            nodes.sort();
            nodes.dedup();
            nodes.len() == l.fields.len()
        })
}

/// The test's own rendering of a line, from the line-protocol syntax (not [`write_line`]):
/// measurement escapes `\`, `,` and space; tag keys, tag values and field keys also `=`.
fn render_line(l: &Line) -> String {
    fn esc(s: &str, specials: &str) -> String {
        let mut o = String::new();
        for c in s.chars() {
            if c == '\\' || specials.contains(c) {
                o.push('\\');
            }
            o.push(c);
        }
        o
    }
    let mut out = esc(&l.measurement, ", ");
    for (k, v) in &l.tags {
        out += &format!(",{}={}", esc(k, ",= "), esc(v, ",= "));
    }
    for (i, (k, v)) in l.fields.iter().enumerate() {
        out.push(if i == 0 { ' ' } else { ',' });
        out += &esc(k, ",= ");
        out.push('=');
        out += &match v {
            Bool(true) => ["t", "T", "true", "True", "TRUE"][l.bool_spelling].to_string(),
            Bool(false) => ["f", "F", "false", "False", "FALSE"][l.bool_spelling].to_string(),
            Int(i) => format!("{i}i"),
            Float(f) => format!("{f:e}"),
            Text(t) => format!("\"{}\"", t.replace('\\', "\\\\").replace('"', "\\\"")),
        };
    }
    if let Some(t) = l.time {
        out += &format!(" {t}");
    }
    out.push('\n');
    out
}

/// A name as a path node, by the documented rule for these names: every character outside
/// letters, digits and `_` becomes `_`.
fn node(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The record the default template (`root.lp.{measurement}.{tags}`: tag values in the order
/// of their keys) gives for a line.
fn expected_record(l: &Line, now: i64) -> Record {
    let mut device = format!("root.lp.{}", node(&l.measurement));
    for (_, v) in &l.tags {
        device += &format!(".{}", node(v));
    }
    Record {
        device: device.into(),
        time: l.time.unwrap_or(now),
        fields: l
            .fields
            .iter()
            .map(|(k, v)| Field {
                measurement: node(k).into(),
                value: v.clone(),
                // Line protocol declares every type but a plain number's: `i` integers,
                // quoted strings and booleans.
                type_hint: match v {
                    Int(_) => Some(DataType::INT64),
                    Text(_) => Some(DataType::TEXT),
                    Bool(_) => Some(DataType::BOOLEAN),
                    Float(_) => None,
                },
            })
            .collect(),
    }
}

proptest! {
    #[test]
    fn never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let b = parse_line_protocol_default(&bytes);
        for r in &b.records {
            prop_assert!(!r.fields.is_empty());
            prop_assert_eq!(validate_device(&r.device), Ok(()));
            for f in &r.fields {
                prop_assert_eq!(validate_measurement(&f.measurement), Ok(()));
            }
        }
    }

    #[test]
    fn never_panics_on_line_like_text(s in r##"[a-z ,=\\"#\n\r0-9.itfuTFe-]{0,200}"##) {
        let _ = parse_line_protocol_default(s.as_bytes());
    }

    #[test]
    fn round_trip(lines in proptest::collection::vec(arb_line(), 0..8), now in any::<i64>()) {
        let t = DeviceTemplate::default();
        let o = LineProtocolOptions {
            device_template: &t,
            precision: TimeUnit::Nanos,
            stored_unit: TimeUnit::Nanos,
            now,
        };
        let text: String = lines.iter().map(render_line).collect();
        let expected: Vec<Record> = lines.iter().map(|l| expected_record(l, now)).collect();
        let b = parse_line_protocol(text.as_bytes(), &o);
        prop_assert_eq!(b.rejections, vec![]);
        prop_assert_eq!(b.records, expected.clone());
        // The load generator's writer produces text that parses to the same records.
        let mut written = String::new();
        for l in &lines {
            let tags: Vec<(&str, &str)> = l.tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let fields: Vec<(&str, &FieldValue)> = l.fields.iter().map(|(k, v)| (k.as_str(), v)).collect();
            write_line(&mut written, &l.measurement, &tags, &fields, l.time);
        }
        let b = parse_line_protocol(written.as_bytes(), &o);
        prop_assert_eq!(b.rejections, vec![]);
        prop_assert_eq!(b.records, expected);
    }
}

/// InfluxDB's field types: `i` and `u` suffixes are integers, quoted values strings, `t`/`f`
/// booleans; a plain number is a float and declares no IoTDB type.
#[test]
fn suffixes_declare_types() {
    let b = parse_line_protocol_default(
        b"m x=1i,y=2u,s=\"on\",b=t,c=FALSE,f=1.5,g=3 1\nm big=18446744073709551615u 2\n",
    );
    let got: Vec<(&str, &FieldValue, Option<DataType>)> = b.records[0]
        .fields
        .iter()
        .map(|f| (&*f.measurement, &f.value, f.type_hint))
        .collect();
    assert_eq!(
        got,
        vec![
            ("x", &FieldValue::Int(1), Some(DataType::INT64)),
            ("y", &FieldValue::Int(2), Some(DataType::INT64)),
            ("s", &FieldValue::Text("on".into()), Some(DataType::TEXT)),
            ("b", &FieldValue::Bool(true), Some(DataType::BOOLEAN)),
            ("c", &FieldValue::Bool(false), Some(DataType::BOOLEAN)),
            ("f", &FieldValue::Float(1.5), None),
            ("g", &FieldValue::Float(3.0), None),
        ]
    );
    assert_eq!(b.records.len(), 1);
    assert_eq!(b.rejections.len(), 1);
    assert_eq!(b.rejections[0].reason, RejectReason::TypeMismatch);
}

/// Only `\n`, `\r\n` and a `\r` ending the input end a line (the module docs): a lone `\r`
/// at the start of a line is the first character of the measurement, a control character
/// that becomes `_` in the path (the path rules).
#[test]
fn lone_carriage_return_is_part_of_the_name() {
    let b = parse("\rm f=1 1000000\nm f=2 2000000\r");
    assert_eq!(b.rejections, vec![]);
    let got: Vec<(&str, i64)> = b.records.iter().map(|r| (&*r.device, r.time)).collect();
    assert_eq!(got, vec![("root.lp._m", 1), ("root.lp.m", 2)]);
    // Before a space, a comma or `=` it is part of the measurement, the tag value and the
    // field key.
    let b = parse("m\r,t=a\r f\r=1i 3000000\r\n");
    assert_eq!(b.rejections, vec![]);
    assert_eq!(&*b.records[0].device, "root.lp.m_.a_");
    assert_eq!(fields(&b, 0), vec![("f_", Int(1))]);
}
