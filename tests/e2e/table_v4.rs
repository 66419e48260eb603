//! Line protocol in IoTDB 2.x's table model (`storage.line_protocol_model = "table"`): lines
//! with tags pushed over HTTP, the daemon killed (SIGKILL) mid-stream and restarted, then
//! every sealed file read with the PyPI `tsfile` library's `query_table`
//! (`format/tests/v4/read_table_with_pytsfile.py`). The pushed lines are the oracle: each
//! line is a row of the table its measurement names (lower case), its tags the row's TAG
//! values (a missing tag or the value `null` null), its fields the FIELD values, typed as
//! IoTDB 2.x's line format types them (`1.5` DOUBLE, `3i` INT64, `"s"` TEXT, `t` BOOLEAN);
//! the TAG columns of a table keep the order the tags first appeared in the input, in every
//! file, across the restart.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tsfile::tools::dump::value_text_v4;
use tsfile::{DataType, Value};

use crate::harness::*;

/// A row as the library prints it: table, time, non-null tags by name, non-null fields by
/// name (type name, value text).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    table: String,
    time: i64,
    tags: BTreeMap<String, String>,
    fields: BTreeMap<String, (String, String)>,
}

/// One pushed line: its text and the row it must become.
struct Line {
    text: String,
    row: Row,
}

const T0: i64 = 1_700_000_000_000;

/// Line `i` of the input. Table `cpu` (written `CPU` now and then: table names are lower
/// case) with tags `host`, `core` and, from line `rack_from` on, `rack` (a tag key first seen
/// late, after the restart); every 7th line has no tags, every 11th `core=null`; its fields
/// vary so rows have nulls. Table `mem` has one tag, `Host` (lower-cased to `host`).
fn line(i: i64, rack_from: i64) -> Line {
    let time = T0 + i;
    let mut tags: Vec<(String, String)> = Vec::new();
    let mut fields: Vec<(&str, String, DataType, Value)> = Vec::new();
    let table;
    let written_table;
    if i % 5 == 4 {
        table = "mem";
        written_table = "mem";
        tags.push(("Host".into(), format!("gw{}", i % 3)));
        fields.push((
            "free",
            format!("{}i", i * 1000),
            DataType::INT64,
            Value::Int64(i * 1000),
        ));
        if i % 2 == 0 {
            let d = i as f64 * 0.5;
            fields.push(("used", format!("{d:?}"), DataType::DOUBLE, Value::Double(d)));
        }
    } else {
        table = "cpu";
        written_table = if i % 9 == 0 { "CPU" } else { "cpu" };
        if i % 7 != 0 {
            tags.push(("host".into(), format!("gw{}", i % 3)));
            if i % 11 == 0 {
                tags.push(("core".into(), "null".into()));
            } else {
                tags.push(("core".into(), format!("{}", i % 2)));
            }
            if i >= rack_from {
                tags.push(("rack".into(), format!("r.{}", i % 4)));
            }
            if i % 3 == 0 {
                // tags in another order than first seen
                tags.reverse();
            }
        }
        let u = (i % 400) as f64 * 0.25 - 20.0;
        fields.push((
            "usage",
            format!("{u:?}"),
            DataType::DOUBLE,
            Value::Double(u),
        ));
        if i % 2 == 1 {
            fields.push((
                "procs",
                format!("{}i", -i),
                DataType::INT64,
                Value::Int64(-i),
            ));
        }
        if i % 3 != 1 {
            let s = format!("st {i} \"q\" é");
            let lp = s.replace('"', "\\\"");
            fields.push((
                "state",
                format!("\"{lp}\""),
                DataType::TEXT,
                Value::Text(s.into_bytes()),
            ));
        }
        if i % 4 == 0 {
            let b = i % 8 == 0;
            fields.push((
                "ok",
                if b { "t" } else { "false" }.into(),
                DataType::BOOLEAN,
                Value::Boolean(b),
            ));
        }
    }
    let mut text = written_table.to_string();
    for (k, v) in &tags {
        text.push_str(&format!(",{k}={v}"));
    }
    let fs: Vec<String> = fields
        .iter()
        .map(|(k, lp, _, _)| format!("{k}={lp}"))
        .collect();
    text.push_str(&format!(" {} {time}\n", fs.join(",")));
    Line {
        text,
        row: Row {
            table: table.into(),
            time,
            tags: tags
                .into_iter()
                .filter(|(_, v)| v != "null")
                .map(|(k, v)| (k.to_lowercase(), v))
                .collect(),
            fields: fields
                .into_iter()
                .map(|(k, _, t, v)| (k.to_string(), (t.name().to_string(), value_text_v4(t, &v))))
                .collect(),
        },
    }
}

/// The tables' columns as the library reads them from one file: per table, its TAG columns
/// in order and its FIELD columns with their types.
type Schemas = BTreeMap<String, (Vec<String>, BTreeMap<String, String>)>;

/// Per file of `files`, its rows as `read_table_with_pytsfile.py` prints them and its table
/// schemas. Fails (never skips) when python3 or the library is missing.
fn library_rows(files: &[PathBuf]) -> Vec<(Vec<Row>, Schemas)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../format/tests/v4/read_table_with_pytsfile.py");
    let mut per_file = Vec::new();
    for f in files {
        let mut rows = Vec::new();
        let out = Command::new("python3")
            .arg(&script)
            .arg(f)
            .output()
            .unwrap_or_else(|e| panic!("python3 is required (run ops/ci-deps.sh): {e}"));
        assert!(
            out.status.success(),
            "the PyPI tsfile library cannot read {} ({}); is it installed (ops/ci-deps.sh)?\n{}",
            f.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let mut file_schemas = Schemas::new();
        // (tags, fields with types) of the table whose rows follow
        let mut cols: (Vec<String>, Vec<(String, String)>) = Default::default();
        for l in text.lines() {
            let parts: Vec<&str> = l.split('\t').collect();
            if parts[0] == "#table" {
                cols = Default::default();
                for c in &parts[2..] {
                    let p: Vec<&str> = c.split(':').collect();
                    assert_eq!(p.len(), 3, "{l}");
                    match p[1] {
                        "TAG" => {
                            assert_eq!(p[2], "STRING", "TAG column type: {l}");
                            cols.0.push(p[0].to_string())
                        }
                        "FIELD" => cols.1.push((p[0].to_string(), p[2].to_string())),
                        other => panic!("category {other}: {l}"),
                    }
                }
                file_schemas.insert(
                    parts[1].to_string(),
                    (cols.0.clone(), cols.1.iter().cloned().collect()),
                );
                continue;
            }
            assert_eq!(parts.len(), 2 + cols.0.len() + cols.1.len(), "{l}");
            let mut row = Row {
                table: parts[0].to_string(),
                time: parts[1].parse().unwrap(),
                tags: BTreeMap::new(),
                fields: BTreeMap::new(),
            };
            for (k, v) in cols.0.iter().zip(&parts[2..]) {
                if *v != "\\N" {
                    row.tags.insert(k.clone(), v.to_string());
                }
            }
            for ((k, t), v) in cols.1.iter().zip(&parts[2 + cols.0.len()..]) {
                if *v != "\\N" {
                    row.fields.insert(k.clone(), (t.clone(), v.to_string()));
                }
            }
            rows.push(row);
        }
        per_file.push((rows, file_schemas));
    }
    per_file
}

/// A device id as a `.resource` stores it (segments, `None` a null) with its time range.
type ResourceDevice = (Vec<Option<String>>, i64, i64);

/// Reads a v4 `.resource` in IoTDB 2.x's layout (`TsFileResource.serializeTo`,
/// `ArrayDeviceTimeIndex.serialize`, device ids as `StringArrayDeviceID.serialize`: var-int
/// segment count, each segment a zigzag var-int length, -1 for a null, and UTF-8).
fn resource_devices(b: &[u8]) -> Vec<ResourceDevice> {
    let mut p = 0usize;
    let take = |p: &mut usize, n: usize| {
        let s = &b[*p..*p + n];
        *p += n;
        s
    };
    let varint = |p: &mut usize| {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let x = take(p, 1)[0];
            v |= u64::from(x & 0x7f) << shift;
            if x < 0x80 {
                return v;
            }
            shift += 7;
        }
    };
    assert_eq!(
        take(&mut p, 2),
        [1, 3],
        "resource version 1, array device time index"
    );
    let n = i32::from_be_bytes(take(&mut p, 4).try_into().unwrap()) as usize;
    let times: Vec<(i64, i64)> = (0..n)
        .map(|_| {
            let s = i64::from_be_bytes(take(&mut p, 8).try_into().unwrap());
            let e = i64::from_be_bytes(take(&mut p, 8).try_into().unwrap());
            (s, e)
        })
        .collect();
    let mut out = vec![None; n];
    for _ in 0..n {
        let segs = varint(&mut p) as usize;
        let id: Vec<Option<String>> = (0..segs)
            .map(|_| {
                let z = varint(&mut p) as i64;
                let len = (z >> 1) ^ -(z & 1);
                (len >= 0).then(|| String::from_utf8(take(&mut p, len as usize).to_vec()).unwrap())
            })
            .collect();
        let i = i32::from_be_bytes(take(&mut p, 4).try_into().unwrap()) as usize;
        assert!(out[i].is_none(), "index {i} twice");
        out[i] = Some((id, times[i].0, times[i].1));
    }
    assert_eq!(
        i64::from_be_bytes(take(&mut p, 8).try_into().unwrap()),
        i64::MIN
    );
    assert_eq!(
        i64::from_be_bytes(take(&mut p, 8).try_into().unwrap()),
        i64::MAX
    );
    assert_eq!(take(&mut p, 4), [0xff; 4], "no modification file");
    assert_eq!(take(&mut p, 1), [0], "an empty block");
    assert_eq!(p, b.len(), "resource length");
    let mut out: Vec<ResourceDevice> = out.into_iter().map(Option::unwrap).collect();
    out.sort();
    out
}

/// The devices of a file's rows as IoTDB 2.x identifies them (table name, then the tag values
/// in the file's TAG column order, trailing nulls dropped) with their time ranges.
fn row_devices(rows: &[Row], schemas: &Schemas) -> Vec<ResourceDevice> {
    let mut m: BTreeMap<Vec<Option<String>>, (i64, i64)> = BTreeMap::new();
    for r in rows {
        let mut id = vec![Some(r.table.clone())];
        id.extend(schemas[&r.table].0.iter().map(|t| r.tags.get(t).cloned()));
        while id.last() == Some(&None) {
            id.pop();
        }
        let e = m.entry(id).or_insert((r.time, r.time));
        e.0 = e.0.min(r.time);
        e.1 = e.1.max(r.time);
    }
    m.into_iter().map(|(id, (s, e))| (id, s, e)).collect()
}

/// The `.resource` beside a TsFile.
fn tsfile_resource(f: &Path) -> PathBuf {
    let mut p = f.as_os_str().to_owned();
    p.push(".resource");
    PathBuf::from(p)
}

/// The embedded default in v4 with line protocol stored as tables (database `lp`, the
/// default `path_prefix` `root.lp`).
fn table_config() -> String {
    let text = Fmt::V4.default_config();
    let template = "device_template = \"{measurement}.{tags}\"\n";
    assert!(text.contains(template));
    text.replacen(template, "", 1).replacen(
        "format_version = 4\n",
        "format_version = 4\nline_protocol_model = \"table\"\n",
        1,
    )
}

/// Pushes `lines` in requests of `per` lines; acknowledged lines (indexes in `lines`) go to
/// `acked`. Stops at a connection error once `killing` is set (fails before); from line
/// `hold_at` on, waits for `killing` first (so the kill comes before the end).
fn push(
    addr: std::net::SocketAddr,
    lines: &[Line],
    per: usize,
    acked: &Mutex<Vec<usize>>,
    killing: &AtomicBool,
    pause_every: usize,
    hold_at: usize,
) {
    let mut conn = Conn::new(addr).expect("connect");
    for (n, chunk) in lines.chunks(per).enumerate() {
        if n * per >= hold_at {
            while !killing.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        if pause_every > 0 && n % pause_every == pause_every - 1 {
            // let idle sealing happen mid-stream
            std::thread::sleep(Duration::from_millis(250));
        }
        let body: String = chunk.iter().map(|l| l.text.as_str()).collect();
        match conn.request("POST", "/write?precision=ms", &[], body.as_bytes()) {
            Ok(r) if r.status == 204 => {
                let first = n * per;
                acked.lock().unwrap().extend(first..first + chunk.len());
            }
            Ok(r) => panic!("unexpected answer {}: {}", r.status, r.body),
            Err(_) if killing.load(Ordering::SeqCst) => return,
            Err(e) => panic!("request failed before the kill: {e}"),
        }
    }
}

#[test]
fn line_protocol_tables_survive_a_crash_and_read_back_in_the_library() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let conf = tmp.path().join("table.toml");
    std::fs::write(&conf, table_config()).unwrap();
    let conf = conf.to_str().unwrap().to_string();
    // Small memtables and files, quick idle sealing: files are sealed mid-stream, and the
    // kill lands while some are open.
    let args = |extra: &[&'static str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "--config",
            &conf,
            "--memtable-bytes",
            "60000",
            "--file-max-bytes",
            "30000",
            "--seal-idle-ms",
            "200",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let total: i64 = 6000;
    let rack_from = 4000;
    let lines: Arc<Vec<Line>> = Arc::new((0..total).map(|i| line(i, rack_from)).collect());
    let acked: Arc<Mutex<Vec<usize>>> = Arc::default();

    // First run: lines 0..3000 pushed, the daemon killed while they stream in.
    let a = args(&[]);
    let argv: Vec<&str> = a.iter().map(String::as_str).collect();
    let d = DaemonProc::start(&data, &argv);
    let killing = Arc::new(AtomicBool::new(false));
    let pusher = {
        let (lines, acked, killing, addr) = (lines.clone(), acked.clone(), killing.clone(), d.addr);
        std::thread::spawn(move || push(addr, &lines[..3000], 25, &acked, &killing, 20, 1500))
    };
    until("some lines acknowledged", 60, || {
        acked.lock().unwrap().len() >= 1000
    });
    killing.store(true, Ordering::SeqCst);
    d.kill();
    pusher.join().expect("the first pusher failed");
    let first_run = acked.lock().unwrap().len();
    assert!(
        (1000..=1500).contains(&first_run)
            && *acked.lock().unwrap() == (0..first_run).collect::<Vec<_>>(),
        "the first run acknowledged lines 0..{first_run} in order"
    );

    // Second run: the rest after the request that was in flight at the kill (its lines may
    // or may not have been kept: they were not acknowledged), with the new tag.
    let d = DaemonProc::start(&data, &argv);
    let resume = first_run + 25;
    let never = AtomicBool::new(false);
    let second: Mutex<Vec<usize>> = Mutex::default();
    push(
        d.addr,
        &lines[resume..],
        40,
        &second,
        &never,
        25,
        usize::MAX,
    );
    acked
        .lock()
        .unwrap()
        .extend(second.into_inner().unwrap().into_iter().map(|i| i + resume));
    assert_eq!(acked.lock().unwrap().len(), total as usize - 25);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(temporaries(&data).is_empty());

    let files = sealed_files(&data);
    assert!(files.len() >= 2, "{} sealed files", files.len());
    for f in &files {
        // the database's directory
        assert!(
            f.components().any(|c| c.as_os_str() == "lp"),
            "{} is not under the database lp",
            f.display()
        );
    }
    let per_file = library_rows(&files);
    // Each `.resource` lists exactly the devices of its file's rows, as IoTDB 2.x ids.
    for (f, (rows, s)) in files.iter().zip(&per_file) {
        let res = std::fs::read(tsfile_resource(f)).unwrap();
        assert_eq!(
            resource_devices(&res),
            row_devices(rows, s),
            "{}",
            f.display()
        );
    }
    let rows: Vec<Row> = per_file
        .iter()
        .flat_map(|(r, _)| r.iter().cloned())
        .collect();
    let schemas: Vec<&Schemas> = per_file.iter().map(|(_, s)| s).collect();

    // Every file's tables: TAG columns in first-seen order (a prefix of it: files sealed
    // before `rack` appeared lack it), FIELD columns typed as IoTDB types the values.
    let tag_order = BTreeMap::from([("cpu", vec!["host", "core", "rack"]), ("mem", vec!["host"])]);
    let types = BTreeMap::from([
        ("usage", "DOUBLE"),
        ("procs", "INT64"),
        ("state", "TEXT"),
        ("ok", "BOOLEAN"),
        ("free", "INT64"),
        ("used", "DOUBLE"),
    ]);
    let mut saw_rack = false;
    for (f, s) in files.iter().zip(schemas) {
        for (table, (tags, fields)) in s {
            let want = &tag_order[table.as_str()];
            assert!(
                tags.len() <= want.len() && tags.iter().zip(want).all(|(a, b)| a == b),
                "{}: table {table} TAG columns {tags:?}, expected a prefix of {want:?}",
                f.display()
            );
            saw_rack |= tags.len() == 3;
            for (c, t) in fields {
                assert_eq!(types[c.as_str()], t, "{}: {table}.{c}", f.display());
            }
        }
    }
    assert!(saw_rack, "no file has the tag first seen after the restart");

    // Rows: every acknowledged line is there as pushed; every row read is a pushed line.
    let want: BTreeMap<(String, i64), &Row> = lines
        .iter()
        .map(|l| ((l.row.table.clone(), l.row.time), &l.row))
        .collect();
    let mut got: BTreeMap<(String, i64), Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        let expected = want
            .get(&(r.table.clone(), r.time))
            .unwrap_or_else(|| panic!("a row no line was pushed for: {r:?}"));
        assert_eq!(*expected, r, "row differs from its pushed line");
        got.entry((r.table.clone(), r.time)).or_default().push(r);
    }
    let acked = acked.lock().unwrap();
    let mut missing = Vec::new();
    let mut dup_acked = 0;
    for &i in acked.iter() {
        let r = &lines[i].row;
        match got.get(&(r.table.clone(), r.time)) {
            None => missing.push(i),
            Some(v) if v.len() > 1 => dup_acked += 1,
            Some(_) => {}
        }
    }
    let duplicates = got.values().filter(|v| v.len() > 1).count();
    eprintln!(
        "table model: {} lines pushed ({first_run} acknowledged before the kill), {} rows read by the library from {} files, {} lines missing, {duplicates} duplicated ({dup_acked} acknowledged)",
        total,
        rows.len(),
        files.len(),
        missing.len()
    );
    assert!(
        missing.is_empty(),
        "acknowledged lines missing: {:?}",
        &missing[..missing.len().min(20)]
    );
    assert_eq!(dup_acked, 0, "acknowledged lines written twice");
}

/// The option is refused without TsFile v4, naming the file, line and key.
#[test]
fn the_table_model_needs_format_version_4() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("t.toml");
    let text = table_config().replacen("format_version = 4\n", "", 1);
    std::fs::write(&conf, &text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tsfiled-e2e"))
        .args(["check-config", conf.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .position(|l| l.starts_with("line_protocol_model"))
        .unwrap()
        + 1;
    assert!(
        err.contains(&format!("t.toml:{line}:"))
            && err.contains("pipeline[0].storage.line_protocol_model")
            && err.contains("format_version = 4"),
        "{err}"
    );
}

/// MQTT messages with `payload = "line"` in a table pipeline: each line a row of its table in
/// the database the topic's `path_prefix` names, read back by the library.
#[test]
fn mqtt_line_payloads_are_stored_as_tables() {
    use crate::mqtt::{publish, Broker};
    let broker = Broker::start();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(
        &file,
        format!(
            r#"
data_dir = "{}"
[http]
listen = "127.0.0.1:0"
[[pipeline]]
name = "main"
[pipeline.storage]
format_version = 4
line_protocol_model = "table"
[[pipeline.source]]
type = "mqtt"
name = "broker"
url = "mqtt://127.0.0.1:{}"
client_id = "e2e-table-{}"
[[pipeline.source.topic]]
filter = "plant/#"
qos = 1
payload = "line"
path_prefix = "root.Plant"
precision = "ms"
"#,
            data.display(),
            broker.port,
            std::process::id()
        ),
    )
    .unwrap();
    let d = DaemonProc::start_with(&["run", "--config", file.to_str().unwrap()]);
    let src = "{pipeline=\"main\",source=\"broker\"}";
    until("the MQTT source connects", 30, || {
        metric(
            &get(d.addr, "/metrics").body,
            &format!("tsfiled_mqtt_connected{src}"),
        ) == Some(1.0)
    });
    let n = 600;
    let lines: Vec<Line> = (0..n).map(|i| line(i, 300)).collect();
    let texts: Vec<String> = lines
        .iter()
        .map(|l| l.text.trim_end().to_string())
        .collect();
    publish(broker.port, "plant/line1", &texts);
    until("every message is durable", 60, || {
        let m = get(d.addr, "/metrics").body;
        metric(&m, &format!("tsfiled_mqtt_messages_total{src}")) == Some(n as f64)
            && metric(&m, &format!("tsfiled_mqtt_inflight_messages{src}")) == Some(0.0)
    });
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let files = sealed_files(&data);
    assert!(!files.is_empty());
    for f in &files {
        assert!(
            f.components().any(|c| c.as_os_str() == "plant"),
            "{} is not under the database plant (lower case)",
            f.display()
        );
    }
    let mut rows: Vec<Row> = library_rows(&files)
        .into_iter()
        .flat_map(|(r, _)| r)
        .collect();
    rows.sort();
    let mut want: Vec<Row> = lines.into_iter().map(|l| l.row).collect();
    want.sort();
    assert_eq!(rows.len(), want.len());
    assert!(
        rows == want,
        "the library's rows differ from the published lines"
    );
}
