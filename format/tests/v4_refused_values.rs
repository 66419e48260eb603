//! A chunk group whose values an encoder refuses (GORILLA's end-of-page marker, NaN) is
//! refused as a whole before anything is written: the writer goes on, and the file holds
//! exactly the groups that were accepted.

use tsfile::basic::Column;
use tsfile::file::properties::{MeasurementSchema, WriterProperties};
use tsfile::file::v4::{SeriesChunk, TsFileReaderV4, TsFileWriterV4};
use tsfile::{Compression, DataType, Encoding, Value};

#[test]
fn a_refused_group_writes_nothing_and_the_writer_goes_on() {
    let plain = MeasurementSchema::new("a", DataType::DOUBLE, Encoding::PLAIN, Compression::SNAPPY);
    let gorilla = MeasurementSchema::new(
        "b",
        DataType::DOUBLE,
        Encoding::GORILLA_V2,
        Compression::SNAPPY,
    );
    let mut w = TsFileWriterV4::new(Vec::new(), WriterProperties::default()).unwrap();
    let (t1, v1) = (vec![1, 2], Column::Double(vec![1.5, 2.5]));
    let ok = [
        SeriesChunk {
            schema: &plain,
            times: &t1,
            values: &v1,
        },
        SeriesChunk {
            schema: &gorilla,
            times: &t1,
            values: &v1,
        },
    ];
    w.write_chunk_group("root.sg.d1", &ok).unwrap();
    let before = w.position();
    // `a` is fine; `b` holds NaN, which GORILLA cannot store.
    let (t2, v2) = (vec![3, 4], Column::Double(vec![3.5, f64::NAN]));
    let bad = [
        SeriesChunk {
            schema: &plain,
            times: &t2,
            values: &v2,
        },
        SeriesChunk {
            schema: &gorilla,
            times: &t2,
            values: &v2,
        },
    ];
    assert!(w.write_chunk_group("root.sg.d1", &bad).is_err());
    assert_eq!(
        w.position(),
        before,
        "nothing of the refused group was written"
    );
    // The same points with `b` PLAIN are taken.
    let b_plain =
        MeasurementSchema::new("b", DataType::DOUBLE, Encoding::PLAIN, Compression::SNAPPY);
    let again = [
        SeriesChunk {
            schema: &plain,
            times: &t2,
            values: &v2,
        },
        SeriesChunk {
            schema: &b_plain,
            times: &t2,
            values: &v2,
        },
    ];
    w.write_chunk_group("root.sg.d1", &again).unwrap();
    let (bytes, _) = w.finish().unwrap();
    let r = TsFileReaderV4::open(bytes).unwrap();
    let mut got = Vec::new();
    for d in r.devices().unwrap() {
        for ts in &d.series {
            for (t, v) in r.series_points(ts, None).unwrap() {
                got.push((ts.measurement.clone(), t, v));
            }
        }
    }
    let text: Vec<String> = got
        .iter()
        .map(|(m, t, v)| match v {
            Value::Double(x) => format!("{m} {t} {x}"),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        text,
        ["a 1 1.5", "a 2 2.5", "a 3 3.5", "a 4 NaN", "b 1 1.5", "b 2 2.5", "b 3 3.5", "b 4 NaN"]
    );
}
