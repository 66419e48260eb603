//! The v4 table model checked against the PyPI `tsfile` library (Apache TsFile's C++
//! library, installed by `ops/ci-deps.sh`): tables our writer produces are read row for
//! row by the library's `query_table`, and the library's own table files
//! (`tests/fixtures/v4/table`, written by its `register_table` + `write_table`) are read
//! row for row by us. The tests fail (never skip) when python3 or the library is missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use tsfile::basic::{Compression, DataType, Encoding, Value};
use tsfile::file::properties::{MeasurementSchema, WriterProperties};
use tsfile::file::v4::table::dump_tables;
use tsfile::file::v4::{
    codec, AlignedColumn, TableColumn, TableSchema, TsFileReaderV4, TsFileWriterV4,
};
use tsfile::tools::dump::value_text_v4;
use tsfile::tools::javafmt::escape_text;

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The library's canonical table dump of `path` (tests/v4/read_table_with_pytsfile.py).
fn library_table_dump(path: &Path) -> String {
    let script = manifest().join("tests/v4/read_table_with_pytsfile.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("python3 is required (run ops/ci-deps.sh): {e}"));
    assert!(
        out.status.success(),
        "{} failed ({}); is the PyPI `tsfile` library installed (ops/ci-deps.sh)?\n{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn our_table_dump(path: &Path) -> String {
    let r = TsFileReaderV4::open_path(path).expect("our reader opens the file");
    let mut out = Vec::new();
    dump_tables(&r, &mut out).expect("our reader reads the tables");
    String::from_utf8(out).unwrap()
}

/// The first differing line of two dumps, for a readable failure.
fn first_difference(want: &str, got: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let i = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    format!(
        "{} lines expected, {} read; first difference at line {i}:\nexpected {:?}\nread     {:?}",
        a.len(),
        b.len(),
        a.get(i),
        b.get(i)
    )
}

#[test]
fn we_read_library_table_files() {
    let dir = manifest().join("tests/fixtures/v4/table");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsfile"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "the table fixtures of {}", dir.display());
    let mut rows = 0;
    for f in &files {
        let want = std::fs::read_to_string(f.with_extension("expected.tsv")).unwrap();
        let got = our_table_dump(f);
        assert!(
            got == want,
            "{}: {}",
            f.display(),
            first_difference(&want, &got)
        );
        rows += want.lines().filter(|l| !l.starts_with('#')).count();
    }
    // 240 + 900 + 250 rows (the fixtures' meta.json)
    assert_eq!(rows, 1390);
}

/// A deterministic xorshift generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random value the library reads back exactly under encoding `e`: finite floats only
/// (it does not read NaN/Infinity back, see the acceptance notes), FLOAT/DOUBLE
/// TS_2DIFF values multiples of 1/4 (2 stored decimals), no BLOB 0x00 byte (the library
/// cuts a BLOB at its first NUL).
fn random_value(rng: &mut Rng, t: DataType, e: Encoding) -> Value {
    match t {
        DataType::BOOLEAN => Value::Boolean(rng.below(2) == 1),
        DataType::INT32 => Value::Int32(match rng.below(3) {
            0 => rng.below(100) as i32,
            1 => (rng.next() as i32).max(i32::MIN + 1),
            _ => -(rng.below(1 << 20) as i32),
        }),
        DataType::DATE => Value::Int32(
            (1970 + rng.below(130) as i32) * 10000
                + (1 + rng.below(12) as i32) * 100
                + 1
                + rng.below(28) as i32,
        ),
        DataType::INT64 | DataType::TIMESTAMP => Value::Int64(match rng.below(3) {
            0 => rng.below(1000) as i64,
            1 => (rng.next() as i64).max(i64::MIN + 1),
            _ => 1_700_000_000_000 + rng.below(1 << 30) as i64,
        }),
        DataType::FLOAT if e == Encoding::TS_2DIFF => {
            Value::Float((rng.below(4000) as f32 - 2000.0) / 4.0)
        }
        DataType::DOUBLE if e == Encoding::TS_2DIFF => {
            Value::Double((rng.below(4_000_000) as f64 - 2e6) / 4.0)
        }
        DataType::FLOAT => loop {
            let v = match rng.below(2) {
                0 => (rng.below(200_000) as f32 - 100_000.0) / 64.0,
                _ => f32::from_bits(rng.next() as u32),
            };
            if v.is_finite() {
                break Value::Float(v);
            }
        },
        DataType::DOUBLE => loop {
            let v = match rng.below(2) {
                0 => (rng.below(2_000_000) as f64 - 1_000_000.0) / 128.0,
                _ => f64::from_bits(rng.next()),
            };
            if v.is_finite() {
                break Value::Double(v);
            }
        },
        DataType::TEXT | DataType::STRING => {
            const PARTS: [&str; 8] = ["a", "Zz", "é", "温度", "\t", "x y", "\\", "😀"];
            let n = rng.below(6) as usize;
            let s: String = (0..n).map(|_| PARTS[rng.below(8) as usize]).collect();
            Value::Text(s.into_bytes())
        }
        DataType::BLOB => Value::Text(
            (0..1 + rng.below(8))
                .map(|_| 1 + rng.below(255) as u8)
                .collect(),
        ),
    }
}

const TYPES: [DataType; 10] = [
    DataType::BOOLEAN,
    DataType::INT32,
    DataType::INT64,
    DataType::FLOAT,
    DataType::DOUBLE,
    DataType::TEXT,
    DataType::STRING,
    DataType::BLOB,
    DataType::DATE,
    DataType::TIMESTAMP,
];
/// Every encoding TsFile 2.x writes (DICTIONARY is `PLAIN_DICTIONARY`, GORILLA is
/// `GORILLA_V2`); [`field_matrix`] keeps the (type, encoding) pairs the v4 codec allows.
/// [`random_value`] leaves out the values GORILLA, CHIMP and SPRINTZ refuse (their
/// end-marker values: NaN, the INT32/INT64 minimum).
const ENCODINGS: [Encoding; 9] = [
    Encoding::PLAIN,
    Encoding::RLE,
    Encoding::TS_2DIFF,
    Encoding::GORILLA_V2,
    Encoding::ZIGZAG,
    Encoding::CHIMP,
    Encoding::SPRINTZ,
    Encoding::RLBE,
    Encoding::PLAIN_DICTIONARY,
];
const COMPRESSIONS: [Compression; 5] = [
    Compression::UNCOMPRESSED,
    Compression::SNAPPY,
    Compression::GZIP,
    Compression::LZ4,
    Compression::ZSTD,
];

/// FIELD columns: every type x encoding x compression of the matrix.
fn field_matrix() -> Vec<MeasurementSchema> {
    let mut out = Vec::new();
    for t in TYPES {
        for e in ENCODINGS {
            for c in COMPRESSIONS {
                if codec::supports(e, t) {
                    out.push(MeasurementSchema::new(
                        format!(
                            "{}_{}_{}",
                            t.name().to_lowercase(),
                            e.name().to_lowercase(),
                            c.name().to_lowercase()
                        ),
                        t,
                        e,
                        c,
                    ));
                }
            }
        }
    }
    out
}

/// One table to write: name, tag names, fields, devices' tag values.
struct Spec {
    name: &'static str,
    tags: Vec<&'static str>,
    fields: Vec<MeasurementSchema>,
    devices: Vec<Vec<Option<&'static str>>>,
}

/// Writes the tables of `specs` with random rows (`groups` chunk groups per device of
/// `rows` rows, 20% nulls, every row with a value; every third device's last group
/// carries only the first half of the fields) and returns the expected canonical dump.
fn write_tables(
    path: &Path,
    seed: u64,
    props: WriterProperties,
    specs: &[Spec],
    groups: usize,
    rows: usize,
) -> String {
    let mut rng = Rng(seed);
    let file = std::fs::File::create(path).unwrap();
    let mut w = TsFileWriterV4::new(std::io::BufWriter::new(file), props).unwrap();
    let mut expected = String::new();
    for s in specs {
        let mut cols: Vec<TableColumn> = s.tags.iter().map(|t| TableColumn::tag(t)).collect();
        cols.extend(s.fields.iter().cloned().map(TableColumn::field));
        w.add_table(TableSchema::new(s.name, cols).unwrap())
            .unwrap();
    }
    let mut tables: Vec<&Spec> = specs.iter().collect();
    tables.sort_by_key(|s| s.name.as_bytes());
    for s in tables.iter().copied() {
        let mut head = format!("#table\t{}", s.name);
        for t in &s.tags {
            head.push_str(&format!("\t{t}:TAG:STRING"));
        }
        for f in &s.fields {
            head.push_str(&format!("\t{}:FIELD:{}", f.measurement, f.data_type.name()));
        }
        let mut lines = Vec::new();
        for (d, tags) in s.devices.iter().enumerate() {
            let mut t0 = 1_700_000_000_000i64;
            for g in 0..groups {
                let n_fields = if d % 3 == 0 && g + 1 == groups {
                    s.fields.len().div_ceil(2)
                } else {
                    s.fields.len()
                };
                let mut times = Vec::with_capacity(rows);
                let mut values: Vec<Vec<Option<Value>>> = vec![Vec::new(); n_fields];
                for _ in 0..rows {
                    t0 += 1 + rng.below(1000) as i64;
                    times.push(t0);
                    let mut any = false;
                    for (f, col) in s.fields[..n_fields].iter().zip(values.iter_mut()) {
                        let v = (rng.below(5) != 0)
                            .then(|| random_value(&mut rng, f.data_type, f.encoding));
                        any |= v.is_some();
                        col.push(v);
                    }
                    if !any {
                        let f = &s.fields[0];
                        values[0][times.len() - 1] =
                            Some(random_value(&mut rng, f.data_type, f.encoding));
                    }
                }
                for (i, t) in times.iter().enumerate() {
                    let mut l = format!("{}\t{t}", s.name);
                    for tag in tags {
                        l.push('\t');
                        l.push_str(&tag.map_or("\\N".into(), |v| escape_text(v.as_bytes())));
                    }
                    for (k, f) in s.fields.iter().enumerate() {
                        l.push('\t');
                        match values.get(k).and_then(|c| c[i].as_ref()) {
                            Some(v) => l.push_str(&value_text_v4(f.data_type, v)),
                            None => l.push_str("\\N"),
                        }
                    }
                    lines.push(l);
                }
                let columns: Vec<AlignedColumn<'_>> = s.fields[..n_fields]
                    .iter()
                    .zip(&values)
                    .map(|(schema, values)| AlignedColumn { schema, values })
                    .collect();
                w.write_table_chunk_group(s.name, tags, &times, &columns)
                    .unwrap();
            }
        }
        lines.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        expected.push_str(&head);
        expected.push('\n');
        for l in lines {
            expected.push_str(&l);
            expected.push('\n');
        }
    }
    w.finish().unwrap();
    expected
}

fn specs() -> Vec<Spec> {
    vec![
        Spec {
            name: "sensor",
            tags: vec!["site", "unit"],
            fields: field_matrix(),
            devices: vec![
                vec![Some("s1"), Some("u1")],
                vec![Some("s1"), Some("u2")],
                vec![None, Some("u1")],          // a null tag in the middle
                vec![Some("s2"), None],          // a trailing null tag
                vec![None, None],                // every tag null: the table name alone
                vec![Some("温度 x"), Some("é")], // non-ASCII tag values
            ],
        },
        Spec {
            name: "cpu",
            tags: vec!["host"],
            fields: vec![
                MeasurementSchema::new(
                    "usage",
                    DataType::DOUBLE,
                    Encoding::PLAIN,
                    Compression::LZ4,
                ),
                MeasurementSchema::new("n", DataType::INT64, Encoding::RLE, Compression::ZSTD),
            ],
            devices: vec![vec![Some("h1")], vec![Some("h2")], vec![Some("h3")]],
        },
    ]
}

fn check(path: &Path, expected: &str) {
    let lib = library_table_dump(path);
    assert!(
        lib == expected,
        "the library's query_table on {}: {}",
        path.display(),
        first_difference(expected, &lib)
    );
    let ours = our_table_dump(path);
    assert!(
        ours == expected,
        "our reader on {}: {}",
        path.display(),
        first_difference(expected, &ours)
    );
}

#[test]
fn library_reads_our_tables_single_page_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tables.tsfile");
    let expected = write_tables(&path, 11, WriterProperties::default(), &specs(), 2, 25);
    // 6 sensor devices + 3 cpu devices, 2 groups of 25 rows each
    assert_eq!(expected.lines().count(), 2 + 9 * 50);
    check(&path, &expected);
}

#[test]
fn library_reads_our_tables_multi_page_deep_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tables.tsfile");
    let props = WriterProperties {
        max_points_per_page: 7,
        max_degree: 3,
        ..WriterProperties::default()
    };
    let mut specs = specs();
    // enough devices for internal device index nodes at max_degree 3
    specs[1].devices = (0..20)
        .map(|i| vec![Some(&*Box::leak(format!("h{i}").into_boxed_str()))])
        .collect();
    let expected = write_tables(&path, 29, props, &specs, 3, 20);
    assert_eq!(expected.lines().count(), 2 + (6 + 20) * 60);
    check(&path, &expected);
}

#[test]
fn table_writer_refuses_bad_input() {
    assert!(TableSchema::new("Cpu", vec![TableColumn::tag("host")]).is_err());
    let bad_tag = TableColumn {
        schema: MeasurementSchema::new(
            "t",
            DataType::INT32,
            Encoding::PLAIN,
            Compression::UNCOMPRESSED,
        ),
        category: tsfile::file::v4::ColumnCategory::Tag,
    };
    assert!(TableSchema::new("cpu", vec![bad_tag]).is_err());
    let mut w = TsFileWriterV4::new(Vec::new(), WriterProperties::default()).unwrap();
    let usage = MeasurementSchema::new(
        "usage",
        DataType::DOUBLE,
        Encoding::PLAIN,
        Compression::UNCOMPRESSED,
    );
    w.add_table(
        TableSchema::new(
            "cpu",
            vec![TableColumn::tag("host"), TableColumn::field(usage.clone())],
        )
        .unwrap(),
    )
    .unwrap();
    let vals = [Some(Value::Double(1.0))];
    let col = [AlignedColumn {
        schema: &usage,
        values: &vals,
    }];
    // undeclared table, wrong tag count, unknown field, wrong type
    assert!(w
        .write_table_chunk_group("mem", &[Some("a")], &[1], &col)
        .is_err());
    assert!(w.write_table_chunk_group("cpu", &[], &[1], &col).is_err());
    let other = MeasurementSchema::new(
        "x",
        DataType::DOUBLE,
        Encoding::PLAIN,
        Compression::UNCOMPRESSED,
    );
    let col2 = [AlignedColumn {
        schema: &other,
        values: &vals,
    }];
    assert!(w
        .write_table_chunk_group("cpu", &[Some("a")], &[1], &col2)
        .is_err());
    let wrong = MeasurementSchema::new(
        "usage",
        DataType::INT64,
        Encoding::PLAIN,
        Compression::UNCOMPRESSED,
    );
    let ivals = [Some(Value::Int64(1))];
    let col3 = [AlignedColumn {
        schema: &wrong,
        values: &ivals,
    }];
    assert!(w
        .write_table_chunk_group("cpu", &[Some("a")], &[1], &col3)
        .is_err());
    w.write_table_chunk_group("cpu", &[Some("a")], &[1], &col)
        .unwrap();
}

#[test]
fn library_reads_a_table_whose_schema_grew() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grown.tsfile");
    let usage = MeasurementSchema::new(
        "usage",
        DataType::DOUBLE,
        Encoding::PLAIN,
        Compression::SNAPPY,
    );
    let load = MeasurementSchema::new("load", DataType::INT32, Encoding::RLE, Compression::ZSTD);
    let file = std::fs::File::create(&path).unwrap();
    let mut w = TsFileWriterV4::new(file, WriterProperties::default()).unwrap();
    let first = vec![TableColumn::tag("host"), TableColumn::field(usage.clone())];
    w.add_table(TableSchema::new("cpu", first.clone()).unwrap())
        .unwrap();
    let v1 = [Some(Value::Double(0.5)), Some(Value::Double(1.5))];
    w.write_table_chunk_group(
        "cpu",
        &[Some("a")],
        &[10, 20],
        &[AlignedColumn {
            schema: &usage,
            values: &v1,
        }],
    )
    .unwrap();
    // a reordering is refused; appending a tag and a field is accepted
    let swapped = vec![TableColumn::field(usage.clone()), TableColumn::tag("host")];
    assert!(w
        .add_table(TableSchema::new("cpu", swapped).unwrap())
        .is_err());
    let mut grown = first;
    grown.push(TableColumn::tag("region"));
    grown.push(TableColumn::field(load.clone()));
    w.add_table(TableSchema::new("cpu", grown).unwrap())
        .unwrap();
    let v2 = [Some(Value::Double(2.5))];
    let l2 = [Some(Value::Int32(7))];
    w.write_table_chunk_group(
        "cpu",
        &[Some("a"), Some("eu")],
        &[30],
        &[
            AlignedColumn {
                schema: &usage,
                values: &v2,
            },
            AlignedColumn {
                schema: &load,
                values: &l2,
            },
        ],
    )
    .unwrap();
    w.finish().unwrap();
    let expected =
        "#table\tcpu\thost:TAG:STRING\tusage:FIELD:DOUBLE\tregion:TAG:STRING\tload:FIELD:INT32\n\
                    cpu\t10\ta\t\\N\t0.5\t\\N\n\
                    cpu\t20\ta\t\\N\t1.5\t\\N\n\
                    cpu\t30\ta\teu\t2.5\t7\n";
    check(&path, expected);
}

/// Reads everything a table file holds; errors are fine, panics are not.
fn read_all_tables(bytes: Vec<u8>) {
    if let Ok(r) = TsFileReaderV4::open(bytes) {
        let names: Vec<String> = r.table_schemas().iter().map(|t| t.name.clone()).collect();
        for n in names {
            let _ = r.table_rows(&n);
        }
        let _ = dump_tables(&r, &mut Vec::new());
    }
}

#[test]
fn corrupt_table_files_never_panic() {
    let path = manifest().join("tests/fixtures/v4/table/table_two_tables.tsfile");
    let good = std::fs::read(path).unwrap();
    let n = good.len();
    // every prefix
    for len in 0..n {
        read_all_tables(good[..len].to_vec());
    }
    // every byte of the metadata section and tail replaced by a few values, and a
    // stride of the data section
    let meta_start = {
        let r = TsFileReaderV4::open(good.clone()).unwrap();
        r.metadata().meta_offset as usize
    };
    let positions: Vec<usize> = (7..meta_start).step_by(7).chain(meta_start..n).collect();
    for &i in &positions {
        for v in [0x00u8, 0x01, 0x7F, 0x80, 0xFF, good[i] ^ 0x04] {
            if v == good[i] {
                continue;
            }
            let mut b = good.clone();
            b[i] = v;
            read_all_tables(b);
        }
    }
    assert!(positions.len() > 100, "{} positions", positions.len());
}
