//! Unit tests of the CSV parser: IoTDB `export-csv` shapes (aligned by time and by device, as
//! IoTDB's documentation shows them), the import rules of the module docs (nulls, whole-row
//! rejections, chunk bounds, resume points), generic layouts and the device templates. Every
//! expected value is worked out by hand from the input text: times from the written instant
//! (`2017-11-01T00:00:00.000+08:00` is 2017-10-31T16:00:00Z, epoch 1509465600 s, as `date -u -d`
//! prints it), byte offsets by counting the input's bytes.

use std::io::{self, Read};
use std::path::Path;

use super::*;
use crate::csv::options::{CsvRows, GenericCsv, TimeFormat};
use crate::model::FieldValue::{Bool, Float, Int, Text};
use crate::model::{FieldValue, TimeUnit};

fn run_with(
    opts: &CsvParseOptions,
    input: &[u8],
    file: &FileContext,
    resume: Option<ResumePoint>,
) -> Result<(Vec<Chunk>, ParseSummary), Error> {
    let mut chunks = Vec::new();
    let sum = CsvParser::new(opts)?.parse::<_, Error, _>(Sequential(input), file, resume, |c| {
        chunks.push(c);
        Ok(())
    })?;
    Ok((chunks, sum))
}

fn run(opts: &CsvParseOptions, input: &str) -> (Vec<Chunk>, ParseSummary) {
    run_with(opts, input.as_bytes(), &FileContext::default(), None).unwrap()
}

fn file_error(opts: &CsvParseOptions, input: &str) -> String {
    match run_with(opts, input.as_bytes(), &FileContext::default(), None) {
        Err(Error::CsvFile { message, .. }) => message,
        other => panic!("expected a file error, got {other:?}"),
    }
}

fn option_error(opts: &CsvParseOptions) -> (&'static str, String) {
    match CsvParser::new(opts) {
        Err(Error::CsvOption { key, message }) => (key, message),
        other => panic!("expected an option error, got {other:?}"),
    }
}

fn records(chunks: &[Chunk]) -> Vec<Record> {
    chunks
        .iter()
        .flat_map(|c| c.batch.records.iter().cloned())
        .collect()
}

/// (reason, points lost) of every rejected row.
fn rejected(chunks: &[Chunk]) -> Vec<(RejectReason, u64)> {
    chunks
        .iter()
        .flat_map(|c| c.row_errors.iter().map(|e| (e.reason, e.points)))
        .collect()
}

fn messages(chunks: &[Chunk]) -> Vec<String> {
    chunks
        .iter()
        .flat_map(|c| c.row_errors.iter().map(|e| e.message.clone()))
        .collect()
}

fn field(m: &str, v: FieldValue, hint: Option<DataType>) -> Field {
    Field {
        measurement: m.into(),
        value: v,
        type_hint: hint,
    }
}

fn rec(device: &str, time: i64, fields: Vec<Field>) -> Record {
    Record {
        device: device.into(),
        time,
        fields,
    }
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

fn by_name(n: &str) -> ColumnRef {
    ColumnRef::Name(n.into())
}

fn column_device(column: ColumnRef, prefix: Option<&str>) -> CsvDevice {
    CsvDevice::Column {
        column,
        path_prefix: prefix.map(str::to_owned),
    }
}

/// 2017-11-01T00:00:00.000+08:00 in epoch milliseconds.
const T0: i64 = 1_509_465_600_000;

use crate::DataType::{BOOLEAN as B, FLOAT as F, INT32 as I32, TEXT as T};

/// The export of IoTDB's documentation, aligned by time: its header names full series paths
/// with their types; devices interleave.
const ALIGNED_BY_TIME: &str =
    "Time,root.ln.wf04.wt04.status(BOOLEAN),root.ln.wf04.wt04.temperature(FLOAT),\
                 root.ln.wf04.wt05.hardware(TEXT),root.ln.wf04.wt04.id\n\
                 2017-11-01T00:00:00.000+08:00,true,24.36,\"v1\",7\n\
                 2017-11-01T00:01:00.000+08:00,false,null,,\n\
                 1509465720000,,,\"a,\"\"b\"\"\",null\n";

/// The records of [`ALIGNED_BY_TIME`], worked out by hand.
fn aligned_by_time_records() -> Vec<Record> {
    let wt04 = "root.ln.wf04.wt04";
    let wt05 = "root.ln.wf04.wt05";
    vec![
        rec(
            wt04,
            T0,
            vec![
                field("status", Bool(true), Some(B)),
                field("temperature", Float(24.36), Some(F)),
                field("id", Int(7), None),
            ],
        ),
        rec(
            wt05,
            T0,
            vec![field("hardware", Text("v1".into()), Some(T))],
        ),
        rec(
            wt04,
            T0 + 60_000,
            vec![field("status", Bool(false), Some(B))],
        ),
        rec(
            wt05,
            T0 + 120_000,
            vec![field("hardware", Text("a,\"b\"".into()), Some(T))],
        ),
    ]
}

#[test]
fn iotdb_export_aligned_by_time() {
    let input = ALIGNED_BY_TIME;
    let (chunks, sum) = run(&CsvParseOptions::default(), input);
    assert_eq!(records(&chunks), aligned_by_time_records());
    assert_eq!(chunks.len(), 1);
    let c = &chunks[0];
    assert_eq!(c.record_lines, vec![2, 2, 3, 4]);
    assert_eq!((c.rows, c.points), (3, 6));
    assert!(c.row_errors.is_empty() && c.batch.rejections.is_empty());
    assert_eq!(
        sum,
        ParseSummary {
            rows: 3,
            rejected_rows: 0,
            points: 6,
            rejected_points: 0,
            end: ResumePoint {
                offset: input.len() as u64,
                line: 5
            },
            complete: true,
        }
    );
}

/// Recycled field vectors (longer or shorter than a record, other names, type hints and
/// values left in them) are refilled into exactly the records fresh ones give.
#[test]
fn recycled_field_vectors_give_the_same_records() {
    std::thread::spawn(|| {
        // This thread keeps what it recycles once one of its parsers asked for a vector.
        assert!(crate::model::spare_fields(0).is_empty());
        let stale =
            |m: &str, v: FieldValue, hint: Option<DataType>, n: usize| vec![field(m, v, hint); n];
        let vectors = [
            stale("zz", Int(1), Some(DataType::INT32), 3),
            stale("yy", Float(2.5), None, 1),
            stale("xx", Bool(false), Some(B), 5),
            stale("ww", Int(-4), Some(DataType::INT64), 1),
        ];
        let at: Vec<*const Field> = vectors.iter().map(|v| v.as_ptr()).collect();
        for v in vectors {
            crate::model::recycle_fields(v);
        }
        let (chunks, _) = run(&CsvParseOptions::default(), ALIGNED_BY_TIME);
        assert_eq!(records(&chunks), aligned_by_time_records());
        // The records were filled into the recycled vectors, the last recycled first (the
        // first record's vector grew, so it moved; a row of nulls took none).
        let used: Vec<*const Field> = chunks[0]
            .batch
            .records
            .iter()
            .map(|r| r.fields.as_ptr())
            .collect();
        assert_eq!(used[1..], [at[2], at[1], at[0]]);
    })
    .join()
    .unwrap();
}

#[test]
fn iotdb_export_aligned_by_device() {
    // Devices alternate row by row (the last device is cached between rows).
    let input = "Time,Device,status(BOOLEAN),temperature(FLOAT),note\n\
                 2017-11-01T00:00:00.000+08:00,root.ln.wf04.wt04,true,24.36,null\n\
                 2017-11-01T00:00:00.000+08:00,root.ln.wf04.wt05,,20.5,ok\n\
                 2017-11-01T00:01:00.000+08:00,root.ln.wf04.wt04,TRUE,,\n\
                 2017-11-01T00:01:00.000+08:00, root.ln.wf04.wt05 ,false,null,\n\
                 2017-11-01T00:02:00.000+08:00,root.ln.wf04.wt05,,,\n";
    let opts = CsvParseOptions {
        rows: CsvRows {
            format: CsvFormat::IotdbDevice,
            ..CsvRows::default()
        },
        ..CsvParseOptions::default()
    };
    let (chunks, sum) = run(&opts, input);
    let wt04 = "root.ln.wf04.wt04";
    let wt05 = "root.ln.wf04.wt05";
    assert_eq!(
        records(&chunks),
        vec![
            rec(
                wt04,
                T0,
                vec![
                    field("status", Bool(true), Some(B)),
                    field("temperature", Float(24.36), Some(F)),
                ]
            ),
            rec(
                wt05,
                T0,
                vec![
                    field("temperature", Float(20.5), Some(F)),
                    field("note", Text("ok".into()), None),
                ]
            ),
            rec(
                wt04,
                T0 + 60_000,
                vec![field("status", Bool(true), Some(B))]
            ),
            rec(
                wt05,
                T0 + 60_000,
                vec![field("status", Bool(false), Some(B))]
            ),
        ]
    );
    // The last row has only nulls: a row without points.
    assert_eq!((sum.rows, sum.points, sum.rejected_rows), (5, 6, 0));
}

#[test]
fn time_header_spellings() {
    for first in ["Time", "time", "TIME", "Timestamp", "timestamp"] {
        let input = format!("{first},root.sg.d1.s1\n5,1\n");
        let (chunks, _) = run(&CsvParseOptions::default(), &input);
        assert_eq!(
            records(&chunks),
            vec![rec("root.sg.d1", 5, vec![field("s1", Int(1), None)])],
            "{first}"
        );
    }
    for first in ["Times", "ts", ""] {
        let input = format!("{first},root.sg.d1.s1\n5,1\n");
        let m = file_error(&CsvParseOptions::default(), &input);
        assert!(m.contains("first column to be \"Time\""), "{first}: {m}");
    }
}

#[test]
fn iotdb_header_errors() {
    let wide = CsvParseOptions::default();
    for (header, want) in [
        ("Time,root.sg.d1.s1(INT8)", "unknown data type \"INT8\""),
        ("Time,s1", "not a series path"),
        (
            "Time,root.sg.d1.s1,root.sg.d2.s1,root.sg.d1.s1(INT64)",
            "appears twice",
        ),
    ] {
        let m = file_error(&wide, &format!("{header}\n1,2\n"));
        assert!(m.contains(want), "{header}: {m}");
    }
    // Types in any case, blanks around the type and name.
    let (chunks, _) = run(
        &wide,
        "Time,root.sg.d1.a( int64 ),root.sg.d1.b (double)\n1,5,5\n",
    );
    assert_eq!(
        records(&chunks),
        vec![rec(
            "root.sg.d1",
            1,
            vec![
                field("a", Int(5), Some(DataType::INT64)),
                field("b", Float(5.0), Some(DataType::DOUBLE)),
            ]
        )]
    );

    let by_device = CsvParseOptions {
        rows: CsvRows {
            format: CsvFormat::IotdbDevice,
            ..CsvRows::default()
        },
        ..CsvParseOptions::default()
    };
    for (header, want) in [
        ("Time,Dev,s1", "second column to be \"Device\""),
        ("Time", "second column to be \"Device\""),
        ("Time,Device,s1,s2,s1(INT32)", "appears twice"),
        ("Time,Device,s1(BYTE)", "unknown data type"),
    ] {
        let m = file_error(&by_device, &format!("{header}\n1,root.sg.d1,2,3,4\n"));
        assert!(m.contains(want), "{header}: {m}");
    }
    let (chunks, _) = run(&by_device, "time,DEVICE,s1\n1,root.sg.d1,2\n");
    assert_eq!(
        records(&chunks),
        vec![rec("root.sg.d1", 1, vec![field("s1", Int(2), None)])]
    );
}

#[test]
fn bad_rows_are_rejected_whole_and_counted() {
    let input = "Time,root.sg.d1.a(INT32),root.sg.d1.b,root.sg.d2.c(BOOLEAN)\n\
                 1,1,2,true\n\
                 2,2147483648,5,false\n\
                 3,1,2\n\
                 ,4,5,true\n\
                 abc,7,,null\n\
                 6,1,2,yes\n\
                 7,,,\n\
                 8,-2147483648,x,FALSE\n";
    let (chunks, sum) = run(&CsvParseOptions::default(), input);
    assert_eq!(
        records(&chunks),
        vec![
            rec(
                "root.sg.d1",
                1,
                vec![field("a", Int(1), Some(I32)), field("b", Int(2), None)]
            ),
            rec("root.sg.d2", 1, vec![field("c", Bool(true), Some(B))]),
            rec(
                "root.sg.d1",
                8,
                vec![
                    field("a", Int(-2_147_483_648), Some(I32)),
                    field("b", Text("x".into()), None),
                ]
            ),
            rec("root.sg.d2", 8, vec![field("c", Bool(false), Some(B))]),
        ]
    );
    // Points lost: every non-null value cell of the row (a short row counts the cells it has).
    assert_eq!(
        rejected(&chunks),
        vec![
            (RejectReason::TypeMismatch, 3),
            (RejectReason::Parse, 2),
            (RejectReason::InvalidTime, 3),
            (RejectReason::InvalidTime, 1),
            (RejectReason::TypeMismatch, 3),
        ]
    );
    let m = messages(&chunks);
    assert!(m[0].starts_with("column 2: "), "{}", m[0]);
    assert!(m[0].contains("INT32"), "{}", m[0]);
    assert!(m[1].contains("expected 4 fields, found 3"), "{}", m[1]);
    assert!(m[2].contains("empty"), "{}", m[2]);
    assert!(m[4].starts_with("column 4: "), "{}", m[4]);
    let c = &chunks[0];
    assert_eq!((c.rows, c.points), (3, 6));
    assert_eq!((c.rejected_rows(), c.rejected_points()), (5, 12));
    assert_eq!(c.batch.rejections.len(), 5);
    assert_eq!(c.batch.rejected_points(), 12);
    assert_eq!(
        (sum.rows, sum.points, sum.rejected_rows, sum.rejected_points),
        (3, 6, 5, 12)
    );
    // Lines of the good records (the row of line 7 has no point: no record).
    assert_eq!(c.record_lines, vec![2, 2, 9, 9]);
}

#[test]
fn invalid_devices_in_the_device_column() {
    let opts = CsvParseOptions {
        rows: CsvRows {
            format: CsvFormat::IotdbDevice,
            ..CsvRows::default()
        },
        ..CsvParseOptions::default()
    };
    let input = b"Time,Device,s\n\
                 1,root.sg.d1,1\n\
                 2,root.sg..d1,2\n\
                 3,,3\n\
                 4,root.sg.d1,4\n\
                 5,\"root.sg.\xff\",5\n";
    let (chunks, sum) = run_with(&opts, input, &FileContext::default(), None).unwrap();
    assert_eq!(
        records(&chunks),
        vec![
            rec("root.sg.d1", 1, vec![field("s", Int(1), None)]),
            rec("root.sg.d1", 4, vec![field("s", Int(4), None)]),
        ]
    );
    assert_eq!(
        rejected(&chunks),
        vec![
            (RejectReason::InvalidPath, 1),
            (RejectReason::InvalidPath, 1),
            (RejectReason::InvalidPath, 1),
        ]
    );
    assert_eq!((sum.rows, sum.rejected_rows), (2, 3));
}

#[test]
fn chunks_close_at_the_point_or_row_limit() {
    let opts = CsvParseOptions {
        max_batch_points: 2,
        ..CsvParseOptions::default()
    };
    // Header 29 bytes; rows of 6, 4, 4 and 5 bytes.
    let input = "Time,root.sg.d.a,root.sg.d.b\n1,1,1\n2,,\n3,,\n4,1,\n";
    let (chunks, sum) = run(&opts, input);
    let shape: Vec<(u64, u64, ResumePoint)> =
        chunks.iter().map(|c| (c.rows, c.points, c.end)).collect();
    let at = |offset, line| ResumePoint { offset, line };
    // Two points close the first chunk after one row; two rows without points the second.
    assert_eq!(
        shape,
        vec![(1, 2, at(35, 3)), (2, 0, at(43, 5)), (1, 1, at(48, 6))]
    );
    assert_eq!((sum.rows, sum.points, sum.end), (4, 3, at(48, 6)));
    assert!(sum.complete);

    // Ending right after a closed chunk: no empty chunk follows.
    let (chunks, sum) = run(&opts, &input[..43]);
    let shape: Vec<(u64, u64, ResumePoint)> =
        chunks.iter().map(|c| (c.rows, c.points, c.end)).collect();
    assert_eq!(shape, vec![(1, 2, at(35, 3)), (2, 0, at(43, 5))]);
    assert_eq!((sum.rows, sum.points, sum.end), (3, 2, at(43, 5)));

    // A header alone: no chunk at all.
    let (chunks, sum) = run(&opts, &input[..29]);
    assert!(chunks.is_empty());
    assert_eq!((sum.rows, sum.end), (0, at(29, 2)));

    // Rejected rows count towards the row limit too.
    let (chunks, _) = run(&opts, "Time,root.sg.d.a\nx,1\ny,1\n3,1\n");
    let shape: Vec<(u64, u64)> = chunks.iter().map(|c| (c.rows, c.rejected_rows())).collect();
    assert_eq!(shape, vec![(0, 2), (1, 0)]);
}

#[test]
fn resume_continues_after_a_chunk_end() {
    let input = "Time,root.sg.d.a,root.sg.d.b\n1,1,1\n2,,\n3,,\n4,1,\n";
    let opts = CsvParseOptions::default();
    let ctx = FileContext::default();
    let at = |offset, line| ResumePoint { offset, line };
    let (chunks, sum) = run_with(&opts, input.as_bytes(), &ctx, Some(at(35, 3))).unwrap();
    assert_eq!(
        records(&chunks),
        vec![rec("root.sg.d", 4, vec![field("a", Int(1), None)])]
    );
    assert_eq!(chunks[0].record_lines, vec![5]);
    assert_eq!((sum.rows, sum.end), (3, at(48, 6)));
    // Right after the header: every row.
    let (_, sum) = run_with(&opts, input.as_bytes(), &ctx, Some(at(29, 2))).unwrap();
    assert_eq!((sum.rows, sum.points), (4, 3));
    // Inside the header: an error naming the header's end.
    for offset in [0, 28] {
        match run_with(&opts, input.as_bytes(), &ctx, Some(at(offset, 1))) {
            Err(Error::CsvFile { message, .. }) => {
                assert!(message.contains("ends at byte 29"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn incomplete_last_line_stops_parsing() {
    struct Growing<'a>(&'a [u8]);
    impl Read for Growing<'_> {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            self.0.read(b)
        }
    }
    impl Input for Growing<'_> {
        fn complete_at_eof(&mut self) -> bool {
            false
        }
    }
    let parser = CsvParser::new(&CsvParseOptions::default()).unwrap();
    let mut n = 0;
    let sum = parser
        .parse::<_, Error, _>(
            Growing(b"Time,root.sg.d.a\n1,1\n2,2"),
            &FileContext::default(),
            None,
            |c| {
                n += c.rows;
                Ok(())
            },
        )
        .unwrap();
    assert!(!sum.complete);
    assert_eq!((n, sum.rows), (1, 1));
    assert_eq!(
        sum.end,
        ResumePoint {
            offset: 21,
            line: 3
        }
    );
}

#[test]
fn too_long_and_unclosed_records() {
    let opts = CsvParseOptions {
        max_record_bytes: 16,
        ..CsvParseOptions::default()
    };
    // The reader's buffer holds at least 4 KiB: a longer record goes past it.
    let input = format!("Time,root.sg.d.a\n1,1\n2,{}\n3,\"open\n", "1".repeat(5000));
    let (chunks, sum) = run(&opts, &input);
    assert_eq!(
        records(&chunks),
        vec![rec("root.sg.d", 1, vec![field("a", Int(1), None)])]
    );
    assert_eq!(
        rejected(&chunks),
        vec![(RejectReason::TooLarge, 0), (RejectReason::Parse, 0)]
    );
    let m = messages(&chunks);
    assert!(m[0].contains("longer than 16 bytes"), "{}", m[0]);
    assert!(m[1].contains("not closed"), "{}", m[1]);
    // The batch's rejections count each at least one point.
    assert_eq!(chunks[0].batch.rejected_points(), 2);
    assert_eq!((sum.rows, sum.rejected_rows), (1, 2));
    assert_eq!(sum.end.offset, input.len() as u64);
    // A header with an unclosed quote is a file error.
    let m = file_error(&opts, "Time,\"root\n1,1\n");
    assert!(m.contains("header row"), "{m}");
}

#[test]
fn skip_rows_then_header_rows() {
    let g = GenericCsv {
        header_rows: 2,
        time_column: by_name("time"),
        device: column_device(by_name("dev"), Some("root.plant")),
        value_columns: vec![],
    };
    let mut opts = generic(g.clone());
    opts.rows.skip_rows = 2;
    let input = "# exported by a PLC\n# \"quoted, not a record\n\
                 time,dev,temp\n\
                 s,,C\n\
                 1000,a,5\n";
    let (chunks, sum) = run(&opts, input);
    assert_eq!(
        records(&chunks),
        vec![rec("root.plant.a", 1000, vec![field("temp", Int(5), None)])]
    );
    assert_eq!((sum.rows, sum.rejected_rows), (1, 0));
    assert_eq!(chunks[0].record_lines, vec![5]);

    // Fewer lines than skip_rows.
    let m = file_error(
        &CsvParseOptions {
            rows: CsvRows {
                skip_rows: 3,
                ..opts.rows.clone()
            },
            ..opts.clone()
        },
        "a\nb\n",
    );
    assert!(m.contains("2 lines, fewer than the 3 skip_rows"), "{m}");
    // Exactly skip_rows lines: then the header is missing.
    let m = file_error(&opts, "a\nb\n");
    assert!(m.contains("no header line"), "{m}");
    // Fewer header rows than configured.
    let m = file_error(&opts, "a\nb\ntime,dev,temp\n");
    assert!(m.contains("expected 2 header rows, found 1"), "{m}");

    // No header row: columns are named by position.
    let opts = generic(GenericCsv {
        header_rows: 0,
        time_column: ColumnRef::Index(0),
        device: column_device(ColumnRef::Index(1), None),
        value_columns: vec![],
    });
    let (chunks, _) = run(&opts, "7,root.x.y,1.5,on\n8,root.x.y,,\n");
    assert_eq!(
        records(&chunks),
        vec![rec(
            "root.x.y",
            7,
            vec![
                field("col3", Float(1.5), None),
                field("col4", Text("on".into()), None)
            ]
        )]
    );
    assert_eq!(chunks[0].rows, 2);
}

#[test]
fn generic_null_is_text() {
    let opts = generic(GenericCsv {
        header_rows: 1,
        time_column: ColumnRef::Index(0),
        device: column_device(ColumnRef::Index(1), None),
        value_columns: vec![],
    });
    let (chunks, _) = run(&opts, "t,d,v\n1,root.a.b,null\n2,root.a.b, \n");
    assert_eq!(
        records(&chunks),
        vec![rec(
            "root.a.b",
            1,
            vec![field("v", Text("null".into()), None)]
        )]
    );
}

#[test]
fn generic_columns_by_name_and_position() {
    // Time and device in the middle; every other column is a value, in column order.
    let g = GenericCsv {
        header_rows: 1,
        time_column: by_name("ts"),
        device: column_device(by_name("dev"), None),
        value_columns: vec![],
    };
    let input = "v1,ts,dev,v2\n10,1,root.a.b,20\n";
    let (chunks, _) = run(&generic(g.clone()), input);
    assert_eq!(
        records(&chunks),
        vec![rec(
            "root.a.b",
            1,
            vec![field("v1", Int(10), None), field("v2", Int(20), None)]
        )]
    );
    // Chosen value columns, in the configured order.
    let chosen = GenericCsv {
        value_columns: vec![ColumnRef::Index(3), by_name("v1")],
        ..g.clone()
    };
    let (chunks, _) = run(&generic(chosen), input);
    assert_eq!(
        records(&chunks),
        vec![rec(
            "root.a.b",
            1,
            vec![field("v2", Int(20), None), field("v1", Int(10), None)]
        )]
    );
    // The last column by position.
    let last = GenericCsv {
        time_column: ColumnRef::Index(3),
        device: column_device(ColumnRef::Index(2), None),
        value_columns: vec![ColumnRef::Index(0)],
        header_rows: 1,
    };
    let (chunks, _) = run(&generic(last), input);
    assert_eq!(
        records(&chunks),
        vec![rec("root.a.b", 20, vec![field("v1", Int(10), None)])]
    );

    for (g, want) in [
        (
            GenericCsv {
                time_column: ColumnRef::Index(4),
                ..g.clone()
            },
            "the time column 5 does not exist (the file has 4 columns)",
        ),
        (
            GenericCsv {
                time_column: ColumnRef::Index(7),
                ..g.clone()
            },
            "the time column 8 does not exist",
        ),
        (
            GenericCsv {
                time_column: by_name("time"),
                ..g.clone()
            },
            "no time column named \"time\"",
        ),
        (
            GenericCsv {
                device: column_device(by_name("ts"), None),
                ..g.clone()
            },
            "the device column is the time column",
        ),
        (
            GenericCsv {
                value_columns: vec![by_name("v1"), by_name("ts")],
                ..g.clone()
            },
            "value column 2 is the time or device column",
        ),
        (
            GenericCsv {
                value_columns: vec![by_name("dev")],
                ..g.clone()
            },
            "value column 3 is the time or device column",
        ),
        (
            GenericCsv {
                value_columns: vec![ColumnRef::Index(9)],
                ..g.clone()
            },
            "the value column 10 does not exist",
        ),
    ] {
        let m = file_error(&generic(g), input);
        assert!(m.contains(want), "{want}: {m}");
    }
    let m = file_error(&generic(g), "v,ts,dev,v\n1,1,root.a.b,2\n");
    assert!(
        m.contains("columns 1 and 4 both give the measurement"),
        "{m}"
    );
}

#[test]
fn device_templates() {
    // The example of the option's documentation: `line-3.csv.gz` gives `line_3`.
    let ctx = FileContext::from_path(Path::new("/data/plant7/line-3.csv.gz"));
    assert_eq!(
        ctx,
        FileContext {
            file_stem: "line-3".into(),
            dir: "plant7".into()
        }
    );
    assert_eq!(
        FileContext::from_path(Path::new("x.csv")),
        FileContext {
            file_stem: "x".into(),
            dir: String::new()
        }
    );
    let with = |t: Template| {
        generic(GenericCsv {
            header_rows: 1,
            time_column: ColumnRef::Index(0),
            device: CsvDevice::Template(t),
            value_columns: vec![],
        })
    };
    let t = Template::parse_csv_device("root.{dir}.{file_stem}").unwrap();
    let (chunks, _) = run_with(&with(t), b"t,v\n1,2\n", &ctx, None).unwrap();
    assert_eq!(
        records(&chunks),
        vec![rec("root.plant7.line_3", 1, vec![field("v", Int(2), None)])]
    );
    // Templates not built by parse_csv_device are checked too.
    let (key, m) = option_error(&with(
        Template::parse("plant.{file_stem}", None, &[]).unwrap(),
    ));
    assert_eq!(key, "device_template");
    assert!(m.contains("must start with \"root.\""), "{m}");
    let (key, m) = option_error(&with(Template::parse("root.{host}", None, &[]).unwrap()));
    assert_eq!(key, "device_template");
    assert!(m.contains("unknown placeholder {host}"), "{m}");
    assert!(CsvParser::new(&with(Template::parse("root.{dir}", None, &[]).unwrap())).is_ok());
    // A prefix must be a device path.
    let (key, _) = option_error(&generic(GenericCsv {
        header_rows: 1,
        time_column: ColumnRef::Index(0),
        device: column_device(ColumnRef::Index(1), Some("plant")),
        value_columns: vec![],
    }));
    assert_eq!(key, "path_prefix");
}

#[test]
fn options_and_delimiters() {
    let opts = CsvParseOptions {
        rows: CsvRows {
            delimiter: b';',
            time_format: TimeFormat::EpochS,
            ..CsvRows::default()
        },
        precision: TimeUnit::Micros,
        ..CsvParseOptions::default()
    };
    let parser = CsvParser::new(&opts).unwrap();
    assert_eq!(parser.options(), &opts);
    let (chunks, _) = run(&opts, "Time;root.a.b.c\n2;\"x;y\"\n");
    assert_eq!(
        records(&chunks),
        vec![rec(
            "root.a.b",
            2_000_000,
            vec![field("c", Text("x;y".into()), None)]
        )]
    );
    for d in [b'"', b'\n', b'\r', 0xe9] {
        let (key, _) = option_error(&CsvParseOptions {
            rows: CsvRows {
                delimiter: d,
                ..CsvRows::default()
            },
            ..CsvParseOptions::default()
        });
        assert_eq!(key, "delimiter");
    }
}

#[test]
fn files_plain_and_gzip() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let text = "Time,root.sg.d.a\n1,10\n2,20\n";
    let plain = dir.path().join("a.csv");
    std::fs::write(&plain, text).unwrap();
    let gz = dir.path().join("b.csv.GZ");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(text.as_bytes()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let want = vec![
        rec("root.sg.d", 1, vec![field("a", Int(10), None)]),
        rec("root.sg.d", 2, vec![field("a", Int(20), None)]),
    ];
    for p in [&plain, &gz] {
        let mut got = Vec::new();
        let sum = parse_path::<Error, _>(p, &CsvParseOptions::default(), |c| {
            got.extend(c.batch.records);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, want, "{}", p.display());
        assert_eq!((sum.rows, sum.points), (2, 2));
        assert_eq!(sum.end.offset, text.len() as u64);
    }
    assert!(is_gzip(Path::new("x.csv.gz")) && is_gzip(&gz));
    assert!(!is_gzip(&plain) && !is_gzip(Path::new("gz")));

    let mut got = Vec::new();
    let sum = parse_reader::<_, Error, _>(
        text.as_bytes(),
        &CsvParseOptions::default(),
        &FileContext::default(),
        |c| {
            got.extend(c.batch.records);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(got, want);
    assert_eq!(sum.points, 2);
}
