//! The CSV parser: every format, timestamp option, null and rejection rule, gzip, chunking
//! and resuming.

use std::io::Write;

use tsfiled_connectors::csv::{
    parse_path, parse_reader, AmbiguousTime, Chunk, ColumnRef, CsvDevice, CsvFormat,
    CsvParseOptions, CsvParser, CsvRows, FileContext, GenericCsv, ParseSummary, ResumePoint,
    Sequential, Template, TimeFormat,
};
use tsfiled_connectors::{DataType, Error, Field, FieldValue, Record, RejectReason, TimeUnit};

fn parse(opts: &CsvParseOptions, input: &str) -> (Vec<Chunk>, ParseSummary) {
    parse_ctx(opts, input, &FileContext::default())
}

fn parse_ctx(opts: &CsvParseOptions, input: &str, ctx: &FileContext) -> (Vec<Chunk>, ParseSummary) {
    let mut chunks = Vec::new();
    let sum = parse_reader::<_, Error, _>(input.as_bytes(), opts, ctx, |c| {
        chunks.push(c);
        Ok(())
    })
    .unwrap();
    (chunks, sum)
}

fn parse_err(opts: &CsvParseOptions, input: &str) -> Error {
    parse_reader::<_, Error, _>(input.as_bytes(), opts, &FileContext::default(), |_| Ok(()))
        .unwrap_err()
}

fn records(chunks: &[Chunk]) -> Vec<Record> {
    chunks
        .iter()
        .flat_map(|c| c.batch.records.clone())
        .collect()
}

fn errors(chunks: &[Chunk]) -> Vec<(u64, RejectReason)> {
    chunks
        .iter()
        .flat_map(|c| c.row_errors.iter().map(|e| (e.line, e.reason)))
        .collect()
}

fn f(m: &str, v: FieldValue) -> Field {
    Field::new(m, v)
}

fn typed(m: &str, v: FieldValue, t: DataType) -> Field {
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

use FieldValue::{Bool, Float, Int, Text};

#[test]
fn iotdb_wide_with_types_devices_nulls_and_quotes() {
    let input =
        "Time,root.sg.d1.s1(INT32),root.sg.d1.s2(TEXT),root.sg.d2.s1,root.sg.d1.s3(BOOLEAN)\r\n\
                 1,10,\"a, \"\"b\"\"\",1.5,true\r\n\
                 2,,null,,\r\n\
                 3,30,\"multi\nline\",7,FALSE\r\n\
                 4,,,x,";
    let opts = CsvParseOptions::default();
    let (chunks, sum) = parse(&opts, input);
    assert_eq!(
        records(&chunks),
        vec![
            rec(
                "root.sg.d1",
                1,
                vec![
                    typed("s1", Int(10), DataType::INT32),
                    typed("s2", Text("a, \"b\"".into()), DataType::TEXT),
                    typed("s3", Bool(true), DataType::BOOLEAN),
                ]
            ),
            rec("root.sg.d2", 1, vec![f("s1", Float(1.5))]),
            rec(
                "root.sg.d1",
                3,
                vec![
                    typed("s1", Int(30), DataType::INT32),
                    typed("s2", Text("multi\nline".into()), DataType::TEXT),
                    typed("s3", Bool(false), DataType::BOOLEAN),
                ]
            ),
            rec("root.sg.d2", 3, vec![f("s1", Int(7))]),
            rec("root.sg.d2", 4, vec![f("s1", Text("x".into()))]),
        ]
    );
    assert_eq!(chunks[0].record_lines, vec![2, 2, 4, 4, 6]);
    assert_eq!(sum.rows, 4);
    assert_eq!(sum.points, 9);
    assert_eq!(sum.rejected_rows, 0);
    assert!(sum.complete);
    assert_eq!(
        sum.end,
        ResumePoint {
            offset: input.len() as u64,
            line: 6
        }
    );
}

#[test]
fn iotdb_wide_bad_rows_are_reported_by_line_and_good_rows_kept() {
    let input = "Time,root.sg.d1.s1(INT32),root.sg.d1.s2\n\
                 1,1,1\n\
                 x,2,2\n\
                 3,3\n\
                 4,99999999999,4\n\
                 ,5,5\n\
                 6,6,6,6\n\
                 7,7,7\n";
    let (chunks, sum) = parse(&CsvParseOptions::default(), input);
    assert_eq!(
        records(&chunks),
        vec![
            rec(
                "root.sg.d1",
                1,
                vec![typed("s1", Int(1), DataType::INT32), f("s2", Int(1))]
            ),
            rec(
                "root.sg.d1",
                7,
                vec![typed("s1", Int(7), DataType::INT32), f("s2", Int(7))]
            ),
        ]
    );
    assert_eq!(
        errors(&chunks),
        vec![
            (3, RejectReason::InvalidTime),
            (4, RejectReason::Parse),
            (5, RejectReason::TypeMismatch),
            (6, RejectReason::InvalidTime),
            (7, RejectReason::Parse),
        ]
    );
    let msgs: Vec<&str> = chunks[0]
        .row_errors
        .iter()
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(msgs[1], "expected 3 fields, found 2");
    assert_eq!(msgs[2], "column 2: \"99999999999\" is not an INT32");
    assert_eq!(msgs[3], "the time is empty");
    assert_eq!(sum.rows, 2);
    assert_eq!(sum.rejected_rows, 5);
    // Points lost: 2 + 1 + 2 + 2 + 2 (the 4-field row counts its first two value cells).
    assert_eq!(sum.rejected_points, 9);
    // The batch carries the same rejections for the daemon's counters.
    let rj = &chunks[0].batch.rejections;
    assert_eq!(rj.len(), 5);
    assert_eq!(rj[0].location.to_string(), "line 3");
    assert_eq!(chunks[0].batch.rejected_points(), 9);
}

#[test]
fn iotdb_wide_header_errors() {
    let o = CsvParseOptions::default();
    let cases = [
        ("", "no header line"),
        (
            "Timestamp,root.sg.d1.s1(DATE)\n1,1\n",
            "unknown data type \"DATE\"",
        ),
        ("Zeit,root.sg.d1.s1\n", "first column to be \"Time\""),
        ("Time,s1\n", "is not a series path"),
        ("Time,root.sg.d-1.s1\n", "device \"root.sg.d-1\""),
        ("Time,root.sg.d1.time\n", "measurement \"time\""),
        ("Time,root.sg.d1.s1,root.sg.d1.s1(INT64)\n", "appears twice"),
    ];
    for (input, want) in cases {
        match parse_err(&o, input) {
            Error::CsvFile { message, .. } => {
                assert!(message.contains(want), "{input:?}: {message}")
            }
            e => panic!("{input:?}: {e}"),
        }
    }
}

#[test]
fn iotdb_by_device() {
    let o = CsvParseOptions {
        rows: CsvRows {
            format: CsvFormat::IotdbDevice,
            ..CsvRows::default()
        },
        ..CsvParseOptions::default()
    };
    let input = "Time,Device,s1(DOUBLE),s2\n\
                 1,root.sg.d1,1,a\n\
                 1,root.sg.d2,2,\n\
                 2,root.sg.d1,,null\n\
                 3,root.bad-dev,3,c\n\
                 4,,4,d\n\
                 5,root.sg.d2,x,e\n\
                 6,root.sg.d2,6,f\n";
    let (chunks, sum) = parse(&o, input);
    assert_eq!(
        records(&chunks),
        vec![
            rec(
                "root.sg.d1",
                1,
                vec![
                    typed("s1", Float(1.0), DataType::DOUBLE),
                    f("s2", Text("a".into()))
                ]
            ),
            rec(
                "root.sg.d2",
                1,
                vec![typed("s1", Float(2.0), DataType::DOUBLE)]
            ),
            rec(
                "root.sg.d2",
                6,
                vec![
                    typed("s1", Float(6.0), DataType::DOUBLE),
                    f("s2", Text("f".into()))
                ]
            ),
        ]
    );
    assert_eq!(
        errors(&chunks),
        vec![
            (5, RejectReason::InvalidPath),
            (6, RejectReason::InvalidPath),
            (7, RejectReason::TypeMismatch)
        ]
    );
    assert_eq!(sum.rows, 4);
    match parse_err(&o, "Time,Dev,s1\n") {
        Error::CsvFile { line: 1, message } => assert!(message.contains("\"Device\"")),
        e => panic!("{e}"),
    }
}

fn tpl(text: &str) -> Template {
    Template::parse_csv_device(text).unwrap()
}

fn generic(g: GenericCsv) -> CsvParseOptions {
    CsvParseOptions {
        rows: CsvRows {
            format: CsvFormat::Generic(g),
            ..CsvRows::default()
        },
        ..CsvParseOptions::default()
    }
}

#[test]
fn generic_skip_rows_header_rows_delimiter_names_and_indexes() {
    let mut o = generic(GenericCsv {
        header_rows: 2,
        time_column: ColumnRef::Name("Timestamp".into()),
        device: CsvDevice::Column {
            column: ColumnRef::Name("Machine".into()),
            path_prefix: Some("root.plc".into()),
        },
        value_columns: vec![ColumnRef::Name("Temp (°C)".into()), ColumnRef::Index(4)],
    });
    o.rows.delimiter = b';';
    o.rows.skip_rows = 2;
    o.rows.time_format = TimeFormat::Strftime("%d.%m.%Y %H:%M:%S".into());
    o.rows.timezone = "Europe/Berlin".into();
    o.precision = TimeUnit::Seconds;
    let input = "exported by PLC \"7\"; v1.2\n\
                 ---\n\
                 Timestamp;Machine;Temp (°C);Ignored;Pressure\n\
                 ;;degC;;bar\n\
                 01.07.2024 12:00:00;m1;21,5;zzz;1.013\n\
                 01.07.2024 12:00:01;m1.a;22;zzz;\n";
    let (chunks, sum) = parse(&o, input);
    assert_eq!(
        records(&chunks),
        vec![
            rec(
                "root.plc.m1",
                1_719_828_000,
                vec![
                    f("Temp___C_", Text("21,5".into())),
                    f("Pressure", Float(1.013))
                ]
            ),
            rec(
                "root.plc.m1.a",
                1_719_828_001,
                vec![f("Temp___C_", Int(22))]
            ),
        ]
    );
    assert_eq!(chunks[0].record_lines, vec![5, 6]);
    assert_eq!(sum.rows, 2);
}

#[test]
fn generic_template_from_file_name_and_all_columns() {
    let o = generic(GenericCsv {
        header_rows: 1,
        time_column: ColumnRef::Index(1),
        device: CsvDevice::Template(tpl("root.plant.{dir}.{file_stem}")),
        value_columns: vec![],
    });
    let ctx = FileContext::from_path(std::path::Path::new("/srv/drop/hall-2/line-3.csv.gz"));
    assert_eq!(ctx.file_stem, "line-3");
    assert_eq!(ctx.dir, "hall-2");
    let (chunks, _) = parse_ctx(&o, "a,t,b\n1,5,2\n", &ctx);
    assert_eq!(
        records(&chunks),
        vec![rec(
            "root.plant.hall_2.line_3",
            5,
            vec![f("a", Int(1)), f("b", Int(2))]
        )]
    );
}

#[test]
fn generic_without_header_names_columns_by_position() {
    let o = generic(GenericCsv {
        header_rows: 0,
        time_column: ColumnRef::Index(0),
        device: CsvDevice::Template(tpl("root.x")),
        value_columns: vec![ColumnRef::Index(2)],
    });
    let (chunks, _) = parse(&o, "5,1,2\n6,3,4\n");
    assert_eq!(
        records(&chunks),
        vec![
            rec("root.x", 5, vec![f("col3", Int(2))]),
            rec("root.x", 6, vec![f("col3", Int(4))])
        ]
    );
}

#[test]
fn generic_option_and_header_errors() {
    let bad_template = generic(GenericCsv {
        header_rows: 1,
        time_column: ColumnRef::Index(0),
        // Only a template built outside the configuration's CSV rule can carry another
        // placeholder: the parser refuses it.
        device: CsvDevice::Template(Template::parse("root.{host}", None, &[]).unwrap()),
        value_columns: vec![],
    });
    assert!(matches!(
        CsvParser::new(&bad_template),
        Err(Error::CsvOption {
            key: "device_template",
            ..
        })
    ));
    let no_root = generic(GenericCsv {
        header_rows: 1,
        time_column: ColumnRef::Index(0),
        device: CsvDevice::Template(Template::parse("plant.{file_stem}", None, &[]).unwrap()),
        value_columns: vec![],
    });
    assert!(matches!(
        CsvParser::new(&no_root),
        Err(Error::CsvOption {
            key: "device_template",
            ..
        })
    ));
    let missing = generic(GenericCsv {
        header_rows: 1,
        time_column: ColumnRef::Name("ts".into()),
        device: CsvDevice::Template(tpl("root.x")),
        value_columns: vec![],
    });
    match parse_err(&missing, "time,a\n1,2\n") {
        Error::CsvFile { line: 1, message } => {
            assert_eq!(message, "no time column named \"ts\" in the header")
        }
        e => panic!("{e}"),
    }
    let clash = generic(GenericCsv {
        header_rows: 1,
        time_column: ColumnRef::Index(0),
        device: CsvDevice::Template(tpl("root.x")),
        value_columns: vec![],
    });
    match parse_err(&clash, "t,a-b,a.b\n") {
        Error::CsvFile { message, .. } => assert!(message.contains("both give the measurement")),
        e => panic!("{e}"),
    }
    let mut skip = clash.clone();
    skip.rows.skip_rows = 5;
    assert!(matches!(parse_err(&skip, "a\nb\n"), Error::CsvFile { .. }));
}

fn times(
    format: TimeFormat,
    tz: &str,
    precision: TimeUnit,
    cells: &[&str],
) -> Vec<Result<i64, RejectReason>> {
    let o = CsvParseOptions {
        rows: CsvRows {
            time_format: format,
            timezone: tz.into(),
            ambiguous_time: AmbiguousTime::Reject,
            ..CsvRows::default()
        },
        precision,
        ..CsvParseOptions::default()
    };
    let mut input = String::from("Time,root.t.d.v\n");
    for c in cells {
        input.push_str(&format!("\"{c}\",1\n"));
    }
    let (chunks, _) = parse(&o, &input);
    let recs = records(&chunks);
    let errs = errors(&chunks);
    let mut out = Vec::new();
    let (mut ri, mut ei) = (0, 0);
    for i in 0..cells.len() {
        let line = i as u64 + 2;
        if errs.get(ei).is_some_and(|e| e.0 == line) {
            out.push(Err(errs[ei].1));
            ei += 1;
        } else {
            out.push(Ok(recs[ri].time));
            ri += 1;
        }
    }
    out
}

#[test]
fn every_timestamp_format_and_precision() {
    use TimeUnit::*;
    let inv = Err(RejectReason::InvalidTime);
    assert_eq!(
        times(
            TimeFormat::EpochS,
            "UTC",
            Millis,
            &["1", "-2", "1.25", "x", "9223372036854776"]
        ),
        vec![Ok(1000), Ok(-2000), Ok(1250), inv, inv]
    );
    assert_eq!(
        times(
            TimeFormat::EpochMs,
            "UTC",
            Nanos,
            &["1", "1.5", "9223372036855"]
        ),
        vec![Ok(1_000_000), Ok(1_500_000), inv]
    );
    assert_eq!(
        times(TimeFormat::EpochUs, "UTC", Millis, &["1999", "-1"]),
        vec![Ok(1), Ok(-1)]
    );
    assert_eq!(
        times(
            TimeFormat::EpochNs,
            "UTC",
            Micros,
            &["1999", "9223372036854775807"]
        ),
        vec![Ok(1), Ok(9_223_372_036_854_775)]
    );
    assert_eq!(
        times(
            TimeFormat::Rfc3339,
            "Asia/Tokyo",
            Millis,
            &[
                "1970-01-01T00:00:00.5Z",
                "1970-01-01T09:00:00+09:00",
                "1970-01-01 00:00:00"
            ]
        ),
        vec![Ok(500), Ok(0), inv]
    );
    // Auto: integers are epoch ms; naive ISO times are local (Tokyo is UTC+9).
    assert_eq!(
        times(
            TimeFormat::Auto,
            "Asia/Tokyo",
            Seconds,
            &[
                "5000",
                "1970-01-01T09:00:00Z",
                "1970-01-01 09:00:01",
                "soon"
            ]
        ),
        vec![Ok(5), Ok(32_400), Ok(1), inv]
    );
    // strftime with DST: 2024-03-31 02:30 does not exist in Berlin, 2024-10-27 02:30 is
    // ambiguous (rejected here), 03:30 is plain CET.
    assert_eq!(
        times(
            TimeFormat::Strftime("%Y-%m-%d %H:%M".into()),
            "Europe/Berlin",
            Seconds,
            &["2024-03-31 02:30", "2024-10-27 02:30", "2024-10-27 03:30"]
        ),
        vec![inv, inv, Ok(1_729_996_200)]
    );
}

#[test]
fn ambiguity_rules_earliest_and_latest() {
    for (rule, want) in [
        (AmbiguousTime::Earliest, 1_729_989_000),
        (AmbiguousTime::Latest, 1_729_992_600),
    ] {
        let o = CsvParseOptions {
            rows: CsvRows {
                time_format: TimeFormat::Strftime("%Y-%m-%d %H:%M".into()),
                timezone: "Europe/Berlin".into(),
                ambiguous_time: rule,
                ..CsvRows::default()
            },
            precision: TimeUnit::Seconds,
            ..CsvParseOptions::default()
        };
        let (chunks, _) = parse(&o, "Time,root.t.d.v\n2024-10-27 02:30,1\n");
        assert_eq!(records(&chunks)[0].time, want);
    }
}

#[test]
fn gzip_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("export.csv.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"Time,root.sg.d1.s1\n1,1\n2,2\n").unwrap();
    let mut bytes = gz.finish().unwrap();
    // A second gzip member continues the stream (as `cat a.gz b.gz` does).
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"3,3\n").unwrap();
    bytes.extend(gz.finish().unwrap());
    std::fs::write(&path, bytes).unwrap();
    let mut got = Vec::new();
    let sum = parse_path::<Error, _>(&path, &CsvParseOptions::default(), |c| {
        got.extend(c.batch.records);
        Ok(())
    })
    .unwrap();
    assert_eq!(sum.rows, 3);
    assert_eq!(
        got.iter().map(|r| r.time).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
}

#[test]
fn chunks_are_bounded_and_resume_from_any_chunk_end() {
    let mut input = String::from("skip me\nTime,root.sg.d1.a,root.sg.d1.b,root.sg.d2.c\n");
    for i in 0..500 {
        match i % 7 {
            3 => input.push_str(&format!("bad{i},1,2,3\n")),
            5 => input.push_str(&format!("{i},,,\n")),
            _ => input.push_str(&format!("{i},{i},\"{i}\",{}\r\n", i * 2)),
        }
    }
    let o = CsvParseOptions {
        rows: CsvRows {
            skip_rows: 1,
            ..CsvRows::default()
        },
        max_batch_points: 50,
        ..CsvParseOptions::default()
    };
    let (chunks, sum) = parse(&o, &input);
    assert!(chunks.len() > 10);
    for c in &chunks {
        assert!(c.points <= 52, "{}", c.points);
        assert!(c.rows + c.rejected_rows() <= 50);
    }
    let all = records(&chunks);
    let parser = CsvParser::new(&o).unwrap();
    for (k, c) in chunks.iter().enumerate() {
        let mut rest = Vec::new();
        let s = parser
            .parse::<_, Error, _>(
                Sequential(input.as_bytes()),
                &FileContext::default(),
                Some(c.end),
                |c| {
                    rest.extend(c.batch.records);
                    Ok(())
                },
            )
            .unwrap();
        let before: usize = chunks[..=k].iter().map(|c| c.batch.records.len()).sum();
        assert_eq!(rest, all[before..].to_vec(), "resume after chunk {k}");
        assert_eq!(s.end, sum.end);
    }
    // A resume point inside the header is refused.
    let e = parser
        .parse::<_, Error, _>(
            Sequential(input.as_bytes()),
            &FileContext::default(),
            Some(ResumePoint { offset: 3, line: 1 }),
            |_| Ok(()),
        )
        .unwrap_err();
    assert!(matches!(e, Error::CsvFile { .. }));
}

#[test]
fn callback_errors_stop_parsing() {
    let mut n = 0;
    let r = parse_reader::<_, Error, _>(
        "Time,root.a.b.c\n1,1\n2,2\n3,3\n".as_bytes(),
        &CsvParseOptions {
            max_batch_points: 1,
            ..CsvParseOptions::default()
        },
        &FileContext::default(),
        |_| {
            n += 1;
            if n == 2 {
                Err(Error::Watch("stop".into()))
            } else {
                Ok(())
            }
        },
    );
    assert_eq!(r.unwrap_err(), Error::Watch("stop".into()));
    assert_eq!(n, 2);
}
