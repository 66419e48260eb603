//! Tests of the whole pipeline: TOML text → diagnostics or [`Config`] → effective TOML.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::*;

const MIN: &str = "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"http\"\n";

fn ok(text: &str) -> Config {
    match Config::from_toml_str(text, "t.toml") {
        Ok(c) => c,
        Err(e) => panic!("expected a valid config, got:\n{e}\n--- text:\n{text}"),
    }
}

/// The rendered diagnostic lines.
fn errs(text: &str) -> Vec<String> {
    match Config::from_toml_str(text, "t.toml") {
        Ok(_) => panic!("expected errors for:\n{text}"),
        Err(ConfigError::Invalid(d)) => d.to_string().lines().map(str::to_string).collect(),
        Err(e) => panic!("unexpected error {e}"),
    }
}

/// Exactly one diagnostic, and it starts with `prefix`.
fn err1(text: &str, prefix: &str) {
    let e = errs(text);
    assert_eq!(
        e.len(),
        1,
        "expected one error, got {e:#?}\n--- text:\n{text}"
    );
    assert!(
        e[0].starts_with(prefix),
        "expected a line starting with\n  {prefix}\ngot\n  {}",
        e[0]
    );
}

fn mqtt(extra: &str, topic: &str) -> String {
    format!(
        "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"mqtt\"\nurl = \"mqtt://localhost\"\n{extra}\n[[pipeline.source.topic]]\nfilter = \"a/#\"\n{topic}\n"
    )
}

// ---- valid configurations -------------------------------------------------------------------

#[test]
fn default_config_validates() {
    let c = Config::embedded_default().unwrap();
    assert_eq!(c.origin(), "<embedded default>");
    assert_eq!(
        c.http.listen,
        "127.0.0.1:8080".parse::<SocketAddr>().unwrap()
    );
    assert_eq!(c.data_dir, PathBuf::from("./data"));
    assert!(c.metrics.enabled && c.metrics.listen.is_none());
    assert_eq!(c.metrics.path, "/metrics");
    assert_eq!(c.pipelines.len(), 1);
    let p = &c.pipelines[0];
    assert_eq!(p.name, "default");
    assert_eq!(p.storage.data_dir, PathBuf::from("./data"));
    assert_eq!(p.storage.wal_dir, PathBuf::from("./data/wal"));
    assert_eq!(p.storage.time_precision, TimeUnit::Millis);
    assert_eq!(p.storage.time_partition, None);
    assert_eq!(p.sources.len(), 1);
    let Some(h) = p.sources[0].settings::<HttpSourceConfig>() else {
        panic!("the default source is http")
    };
    assert_eq!(
        h.routes(),
        vec![
            "/ingest/iotdb-json",
            "/write",
            "/api/v2/write",
            "/rest/v2/insertTablet",
            "/rest/v2/insertRecords",
            "/rest/v1/insertTablet"
        ]
    );
    assert!(!c.http.auth_required());
    // The embedded default equals the defaults of a minimal file.
    let min = ok(MIN);
    assert_eq!(min.pipelines[0].storage, p.storage);
    assert_eq!(min.pipelines[0].schema, p.schema);
    assert_eq!(min.http, c.http);
}

#[test]
fn defaults_of_minimal_config() {
    let c = ok(MIN);
    let s = &c.pipelines[0].storage;
    assert_eq!(s.memtable_budget, ByteSize::mib(64));
    assert_eq!(s.chunk_group_size, ByteSize::mib(16));
    assert_eq!(s.seal_size, ByteSize::mib(256));
    assert_eq!(s.seal_age, Duration::from_secs(3600));
    assert_eq!(s.seal_idle, Duration::from_secs(600));
    assert_eq!(s.time_partition_interval, Duration::from_secs(7 * 86400));
    assert_eq!(s.wal_max_size, ByteSize(1 << 30));
    assert_eq!(s.page_size, ByteSize::kib(64));
    assert_eq!(s.max_points_per_page, 1 << 20);
    assert_eq!(s.max_index_degree, 1024);
    assert_eq!(s.bloom_filter_error_rate, 0.05);
    assert_eq!(s.storage_group_of("root.sg.d1"), Some("root.sg"));
    assert_eq!(s.storage_group_of("root"), None);
    let d = &c.pipelines[0].schema.defaults;
    assert_eq!(d.encoding_for(DataType::INT64), Encoding::TS_2DIFF);
    assert_eq!(d.encoding_for(DataType::INT32), Encoding::TS_2DIFF);
    assert_eq!(d.encoding_for(DataType::FLOAT), Encoding::GORILLA);
    assert_eq!(d.encoding_for(DataType::DOUBLE), Encoding::GORILLA);
    assert_eq!(d.encoding_for(DataType::BOOLEAN), Encoding::RLE);
    assert_eq!(d.encoding_for(DataType::TEXT), Encoding::PLAIN);
    assert_eq!(d.compression, Compression::SNAPPY);
    assert_eq!(c.shutdown_timeout, Duration::from_secs(30));
    assert_eq!(c.log.format, LogFormat::Text);
    assert_eq!(c.log.color, ColorMode::Auto);
    // Budget-dependent defaults follow the budget.
    let c = ok(&format!(
        "{MIN}[pipeline.storage]\nmemtable_budget = \"4MiB\"\n"
    ));
    assert_eq!(c.pipelines[0].storage.chunk_group_size, ByteSize::mib(4));
    let c = ok(&format!(
        "{MIN}[pipeline.storage]\nmemtable_budget = \"1GiB\"\n"
    ));
    assert_eq!(c.pipelines[0].storage.wal_max_size, ByteSize(2 << 30));
}

fn example(name: &str) -> &'static str {
    match name {
        "http-telegraf" => include_str!("../examples/http-telegraf.toml"),
        "mqtt" => include_str!("../examples/mqtt.toml"),
        "csv" => include_str!("../examples/csv.toml"),
        "modbus-nats" => include_str!("../examples/modbus-nats.toml"),
        _ => unreachable!(),
    }
}

#[test]
fn example_modbus_nats_validates() {
    use tsfiled_connectors::modbus::{ModbusSourceConfig, Order, RegisterKind, ValueType};
    use tsfiled_connectors::nats::{NatsPayload, NatsSourceConfig};
    let c = ok(example("modbus-nats"));
    let p = &c.pipelines[0];
    let Some(m) = p.sources[0].settings::<ModbusSourceConfig>() else {
        panic!("{:?}", p.sources[0])
    };
    let d = &m.devices[0];
    assert_eq!((d.host.as_str(), d.port, d.unit_id), ("10.0.0.7", 502, 1));
    assert_eq!(d.poll_interval, Duration::from_millis(500));
    let kinds: Vec<(RegisterKind, ValueType, Order)> = d
        .register
        .iter()
        .map(|r| (r.kind, r.value_type, r.word_order))
        .collect();
    assert_eq!(
        kinds,
        [
            (RegisterKind::Holding, ValueType::Float32, Order::Little),
            (RegisterKind::Input, ValueType::Uint16, Order::Big),
            (RegisterKind::Coil, ValueType::Bool, Order::Big),
        ]
    );
    assert_eq!(d.register[1].scale, Some(0.01));
    let Some(n) = p.sources[1].settings::<NatsSourceConfig>() else {
        panic!("{:?}", p.sources[1])
    };
    assert_eq!(n.servers.len(), 3);
    assert_eq!(
        n.payload,
        NatsPayload::Value {
            subject_template: "sensors.{device}.{measurement}".into(),
            path_prefix: "root.plant".into()
        }
    );
}

#[test]
fn example_http_validates() {
    let c = ok(example("http-telegraf"));
    let p = &c.pipelines[0];
    assert_eq!(p.storage.storage_group_level, 2);
    assert_eq!(p.schema.rules.len(), 2);
    let r = p.schema.rule_for("root.telegraf.gw1.uptime").unwrap();
    assert_eq!(
        (r.data_type, r.encoding),
        (DataType::INT64, Encoding::TS_2DIFF)
    );
    let r = p
        .schema
        .rule_for("root.telegraf.gw1.cpu.cpu0.usage_user")
        .unwrap();
    assert_eq!(
        (r.data_type, r.encoding),
        (DataType::FLOAT, Encoding::GORILLA)
    );
    assert!(p.schema.rule_for("root.other.x").is_none());
    let Some(h) = p.sources[0].settings::<HttpSourceConfig>() else {
        panic!()
    };
    assert_eq!(h.line_protocol.path_prefix, "root.telegraf");
    assert_eq!(
        h.line_protocol
            .device_template
            .placeholders()
            .collect::<Vec<_>>(),
        vec!["host", "measurement", "tags"]
    );
    assert!(c.http.auth_required());
    assert_eq!(c.log.format, LogFormat::Json);
}

#[test]
fn example_mqtt_validates() {
    let c = ok(example("mqtt"));
    let p = &c.pipelines[0];
    assert_eq!(p.storage.time_partition, Some(Duration::from_secs(86400)));
    assert_eq!(p.schema.defaults.integer_type, DataType::INT32);
    let Some(m) = p.sources[0].settings::<MqttSourceConfig>() else {
        panic!()
    };
    assert_eq!(
        m.broker,
        BrokerAddress {
            tls: true,
            host: "broker.plant.local".into(),
            port: 8883
        }
    );
    assert_eq!(m.protocol, MqttProtocol::V5);
    assert!(m.persistent_session());
    assert_eq!(m.session_expiry, Duration::from_secs(7 * 86400));
    assert_eq!(
        m.login.password,
        Some(Secret::File(
            "/run/credentials/tsfiled.service/mqtt-password".into()
        ))
    );
    assert!(m.tls.as_ref().unwrap().client_auth.is_some());
    assert_eq!(m.topics.len(), 3);
    assert_eq!(
        m.subscription_filter(&m.topics[0]),
        "$share/tsfiled/plant/json/#"
    );
    assert_eq!(m.topics[2].qos, Qos::ExactlyOnce);
    let MqttPayload::Value {
        topic_template,
        path_prefix,
    } = &m.topics[1].payload
    else {
        panic!()
    };
    assert_eq!(path_prefix, "root.plant");
    assert_eq!(
        topic_template.apply("plant/values/d7/temp"),
        Some((vec!["d7"], "temp"))
    );
    let MqttPayload::Line(lm) = &m.topics[2].payload else {
        panic!()
    };
    assert_eq!(lm.precision, TimeUnit::Millis);
    assert_eq!(
        m.dead_letter_file,
        Some(PathBuf::from("/var/lib/tsfiled/dead-letter/broker.jsonl"))
    );
}

#[test]
fn example_csv_validates() {
    let c = ok(example("csv"));
    assert_eq!(c.pipelines.len(), 2);
    let Some(a) = c.pipelines[0].sources[0].settings::<CsvSourceConfig>() else {
        panic!()
    };
    assert_eq!(a.rows.format, CsvFormat::IotdbWide);
    assert!(a.accepts("export.csv") && a.accepts("x.csv.gz"));
    assert!(!a.accepts("export.csv.tmp") && !a.accepts(".export.csv"));
    let Some(b) = c.pipelines[1].sources[0].settings::<CsvSourceConfig>() else {
        panic!()
    };
    assert_eq!(b.rows.delimiter, b';');
    assert_eq!(
        b.rows.time_format,
        TimeFormat::Strftime("%d.%m.%Y %H:%M:%S".into())
    );
    assert_eq!(b.rows.ambiguous_time, AmbiguousTime::Reject);
    let CsvFormat::Generic(g) = &b.rows.format else {
        panic!()
    };
    assert_eq!(g.time_column, ColumnRef::Name("Timestamp".into()));
    assert_eq!(g.value_columns[2], ColumnRef::Index(4));
    assert!(matches!(&g.device, CsvDevice::Template(t) if t.as_str() == "root.plc.{file_stem}"));
    assert_eq!(
        b.done_dir_for(Path::new("/srv/drop/plc")),
        PathBuf::from("/srv/drop/done")
    );
    assert_eq!(
        b.error_dir_for(Path::new("/srv/drop/plc")),
        PathBuf::from("/srv/drop/plc/error")
    );
    assert_eq!(
        c.pipelines[1].storage.wal_dir,
        PathBuf::from("/var/lib/tsfiled/plc/wal")
    );
    assert_eq!(
        c.pipelines[1].state_dir(),
        PathBuf::from("/var/lib/tsfiled/plc/state")
    );
}

// ---- effective configuration ----------------------------------------------------------------

#[test]
fn effective_config_round_trips() {
    for text in [
        DEFAULT_CONFIG,
        MIN,
        example("http-telegraf"),
        example("mqtt"),
        example("csv"),
        &mqtt("client_id = \"x\"\npassword = \"pw\"\nusername = \"u\"", ""),
    ] {
        let c = ok(text);
        let shown = c.to_toml(Secrets::Show).unwrap();
        let again = Config::from_toml_str(&shown, "effective")
            .unwrap_or_else(|e| panic!("effective config does not validate:\n{e}\n{shown}"));
        assert_eq!(again, c, "{shown}");
        // Printing is a fixed point.
        assert_eq!(again.to_toml(Secrets::Show).unwrap(), shown);
    }
}

#[test]
fn effective_config_fills_defaults_and_redacts() {
    let c = ok(&mqtt(
        "client_id = \"x\"\nusername = \"u\"\npassword = \"hunter2\"",
        "",
    ));
    let shown = c.to_toml(Secrets::Redact).unwrap();
    assert!(shown.contains("memtable_budget = \"64MiB\""), "{shown}");
    assert!(shown.contains("seal_idle = \"10m\""), "{shown}");
    assert!(shown.contains("listen = \"127.0.0.1:8080\""), "{shown}");
    assert!(shown.contains("wal_dir = \"./data/wal\""), "{shown}");
    assert!(shown.contains("type = \"mqtt\""), "{shown}");
    assert!(shown.contains("[[pipeline.source.topic]]"), "{shown}");
    assert!(shown.contains("password = \"<redacted>\""), "{shown}");
    assert!(!shown.contains("hunter2"));
    assert!(c.to_toml(Secrets::Show).unwrap().contains("hunter2"));
}

// ---- overrides ------------------------------------------------------------------------------

#[test]
fn data_dir_override() {
    let text = "data_dir = \"/a\"\n[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"mqtt\"\nurl = \"mqtt://h\"\nclient_id = \"c\"\n[[pipeline.source.topic]]\nfilter = \"x\"\n\
                [[pipeline]]\nname = \"q\"\n[pipeline.storage]\ndata_dir = \"/q\"\n[[pipeline.source]]\ntype = \"http\"\nbase_path = \"/q\"\n";
    let c = ok(text).with_data_dir(Path::new("/b")).unwrap();
    assert_eq!(c.data_dir, PathBuf::from("/b"));
    assert_eq!(c.pipelines[0].storage.data_dir, PathBuf::from("/b"));
    assert_eq!(c.pipelines[0].storage.wal_dir, PathBuf::from("/b/wal"));
    let Some(m) = c.pipelines[0].sources[0].settings::<MqttSourceConfig>() else {
        panic!()
    };
    assert_eq!(
        m.dead_letter_file,
        Some(PathBuf::from("/b/dead-letter/mqtt.jsonl"))
    );
    // An explicit pipeline directory stays.
    assert_eq!(c.pipelines[1].storage.data_dir, PathBuf::from("/q"));
    assert_eq!(c.origin(), "t.toml");
    // Overriding onto the other pipeline's directory is refused, naming the flag.
    let e = ok(text)
        .with_data_dir(Path::new("/q"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("t.toml (with --data-dir):"), "{e}");
    assert!(
        e.contains("data directory /q is also the data directory of pipeline[0].storage.data_dir"),
        "{e}"
    );
}

#[test]
fn http_listen_override() {
    let c = Config::embedded_default()
        .unwrap()
        .with_http_listen("127.0.0.1:0".parse().unwrap())
        .unwrap();
    assert_eq!(c.http.listen.port(), 0);
    assert_eq!(c.pipelines.len(), 1);
    let c = ok("[metrics]\nlisten = \"127.0.0.1:9000\"\n[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"http\"\n");
    let e = c
        .with_http_listen("127.0.0.1:9000".parse().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("metrics.listen: 127.0.0.1:9000 is also http.listen"),
        "{e}"
    );
}

// ---- error paths ----------------------------------------------------------------------------

#[test]
fn toml_syntax_error_has_line_and_column() {
    err1(
        "[http]\nlisten = \"127.0.0.1:8080\nx = 1\n",
        "t.toml:2:25: invalid basic string",
    );
    let e = errs("a = \n");
    assert!(e[0].starts_with("t.toml:1:"), "{e:?}");
    err1(
        "[[pipeline]]\nname = 'a'\nname = 'b'\n",
        "t.toml:3:1: duplicate key `name`",
    );
}

#[test]
fn unknown_keys_are_errors_with_their_line() {
    err1(
        &format!("colour = 1\n{MIN}"),
        "t.toml:1:1: colour: unknown key `colour`, expected one of",
    );
    err1(
        &format!("{MIN}[pipeline.storage]\nmemtable_budgt = \"1MiB\"\n"),
        "t.toml:6:1: pipeline[0].storage.memtable_budgt: unknown key `memtable_budgt`",
    );
    err1(
        &format!("[http]\nlisten = \"127.0.0.1:1\"\nport = 80\n{MIN}"),
        "t.toml:3:1: http.port: unknown key `port`",
    );
    err1(
        &mqtt("client_id = \"c\"\nbroker = \"x\"", ""),
        "t.toml:7:1: pipeline[0].source[0].broker: unknown key `broker`",
    );
    err1(
        &mqtt("client_id = \"c\"", "qoss = 1"),
        "t.toml:9:1: pipeline[0].source[0].topic[0].qoss: unknown key `qoss`; did you mean `qos`?",
    );
    // A key of another source type is unknown here.
    err1(
        &format!("{MIN}directories = [\"/x\"]\n"),
        "t.toml:5:1: pipeline[0].source[0].directories: unknown key `directories`",
    );
}

#[test]
fn bad_size() {
    err1(
        &format!("{MIN}[pipeline.storage]\nmemtable_budget = \"64M\"\n"),
        "t.toml:6:19: pipeline[0].storage.memtable_budget: unknown size unit \"M\" in \"64M\"; a bare \"M\" is ambiguous",
    );
    err1(
        &format!("[http]\nmax_body_size = -5\n{MIN}"),
        "t.toml:2:17: http.max_body_size: negative size -5",
    );
    err1(
        &format!("[http]\nmax_body_size = true\n{MIN}"),
        "t.toml:2:17: http.max_body_size: invalid type: boolean `true`, expected a string such as",
    );
    // Plain integers are bytes.
    let c = ok(&format!("[http]\nmax_body_size = 2048\n{MIN}"));
    assert_eq!(c.http.max_body_size, ByteSize(2048));
}

#[test]
fn bad_duration() {
    err1(
        &format!("shutdown_timeout = 30\n{MIN}"),
        "t.toml:1:20: shutdown_timeout: a duration needs a unit: write e.g. \"30s\"",
    );
    err1(
        &format!("{MIN}[pipeline.storage]\nseal_age = \"1.5h\"\n"),
        "t.toml:6:12: pipeline[0].storage.seal_age: \"1.5h\" has a fraction",
    );
    err1(
        &format!("{MIN}[pipeline.storage]\nseal_idle = \"0s\"\n"),
        "t.toml:6:13: pipeline[0].storage.seal_idle: must be more than 0s",
    );
    err1(
        &mqtt("client_id = \"c\"\nkeep_alive = \"1500ms\"", ""),
        "t.toml:7:14: pipeline[0].source[0].keep_alive: 1s500ms is not a whole number of seconds",
    );
    err1(
        &format!("{MIN}[pipeline.storage]\ntime_precision = \"s\"\ntime_partition_interval = \"1500ms\"\n"),
        "t.toml:7:27: pipeline[0].storage.time_partition_interval: 1s500ms is not a whole number of s",
    );
}

#[test]
fn bad_enum_values() {
    err1(
        &format!("[log]\nformat = \"xml\"\n{MIN}"),
        "t.toml:2:10: log.format: unknown value \"xml\"; expected \"text\" or \"json\"",
    );
    err1(
        &format!("{MIN}[pipeline.storage]\ntime_precision = \"min\"\n"),
        "t.toml:6:18: pipeline[0].storage.time_precision: unknown value \"min\"; expected \"ms\", \"us\", \"ns\" or \"s\"",
    );
    err1(
        &format!("{MIN}[[pipeline.schema]]\npattern = \"root.a.b\"\ntype = \"STRING\"\n"),
        "t.toml:7:8: pipeline[0].schema[0].type: unknown data type \"STRING\"; expected one of \"BOOLEAN\"",
    );
    err1(
        &format!("{MIN}[pipeline.schema_defaults]\ncompression = \"LZO\"\n"),
        "t.toml:6:15: pipeline[0].schema_defaults.compression: unknown compression \"LZO\"; expected one of \"UNCOMPRESSED\", \"SNAPPY\", \"GZIP\", \"LZ4\", \"ZSTD\"",
    );
    err1(
        "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"kafka\"\n",
        "t.toml:4:8: pipeline[0].source[0].type: unknown source type \"kafka\"; expected \"http\", \"mqtt\"",
    );
    err1(
        &mqtt("client_id = \"c\"", "payload = \"protobuf\""),
        "t.toml:9:11: pipeline[0].source[0].topic[0].payload: unknown value \"protobuf\"",
    );
    err1(
        &mqtt("client_id = \"c\"", "qos = 3"),
        "t.toml:9:7: pipeline[0].source[0].topic[0].qos: 3 is out of range; expected 0 to 2",
    );
    err1(
        &format!("[log]\nlevel = \"verbose\"\n{MIN}"),
        "t.toml:2:9: log.level: \"verbose\" is not a log level",
    );
    // Names are case-insensitive and printed canonically.
    let c = ok(&format!(
        "{MIN}[[pipeline.schema]]\npattern = \"root.a.b\"\ntype = \"int32\"\nencoding = \"rle\"\n"
    ));
    assert_eq!(c.pipelines[0].schema.rules[0].encoding, Encoding::RLE);
}

#[test]
fn unknown_names_do_not_hide_other_problems() {
    let e = errs(&format!(
        "{MIN}[pipeline.storage]\nseal_idle = \"0s\"\n[pipeline.schema_defaults]\nint64 = \"ZSTD\"\n"
    ));
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(
        e[0].starts_with("t.toml:6:13: pipeline[0].storage.seal_idle: must be more than 0s"),
        "{e:#?}"
    );
    assert!(
        e[1].starts_with("t.toml:8:9: pipeline[0].schema_defaults.int64: unknown encoding \"ZSTD\"; expected one of \"PLAIN\", \"RLE\", \"TS_2DIFF\", \"GORILLA\", \"REGULAR\""),
        "{e:#?}"
    );
}

#[test]
fn refused_encodings() {
    err1(
        &format!("{MIN}[[pipeline.schema]]\npattern = \"root.a.b\"\ntype = \"TEXT\"\nencoding = \"GORILLA\"\n"),
        "t.toml:8:12: pipeline[0].schema[0].encoding: TsFile 0.10 cannot encode TEXT with GORILLA; TEXT takes \"PLAIN\"",
    );
    err1(
        &format!("{MIN}[[pipeline.schema]]\npattern = \"root.a.b\"\ntype = \"BOOLEAN\"\nencoding = \"TS_2DIFF\"\n"),
        "t.toml:8:12: pipeline[0].schema[0].encoding: TsFile 0.10 cannot encode BOOLEAN with TS_2DIFF; BOOLEAN takes \"PLAIN\" or \"RLE\"",
    );
    err1(
        &format!("{MIN}[pipeline.schema_defaults]\nint64 = \"GORILLA\"\n"),
        "t.toml:6:9: pipeline[0].schema_defaults.int64: TsFile 0.10 cannot encode INT64 with GORILLA",
    );
    err1(
        &format!("{MIN}[pipeline.schema_defaults]\ndouble = \"REGULAR\"\n"),
        "t.toml:6:10: pipeline[0].schema_defaults.double: TsFile 0.10 cannot encode DOUBLE with REGULAR",
    );
    err1(
        &format!("{MIN}[pipeline.schema_defaults]\nfloat_type = \"INT32\"\n"),
        "t.toml:6:14: pipeline[0].schema_defaults.float_type: INT32 cannot hold numbers; expected \"DOUBLE\" or \"FLOAT\"",
    );
    // Every accepted pair validates.
    for t in DataType::accepted() {
        for e in encodings_for(t) {
            ok(&format!("{MIN}[[pipeline.schema]]\npattern = \"root.a.b\"\ntype = \"{t}\"\nencoding = \"{e}\"\n"));
        }
    }
}

#[test]
fn qos_needs_persistent_session() {
    err1(
        &mqtt("client_id = \"c\"\nclean_session = true", "qos = 1"),
        "t.toml:10:7: pipeline[0].source[0].topic[0].qos: QoS 1 needs a persistent session",
    );
    err1(
        &mqtt("client_id = \"c\"\nclean_session = true", "qos = 2"),
        "t.toml:10:7: pipeline[0].source[0].topic[0].qos: QoS 2 needs a persistent session",
    );
    // Default QoS is 1: the message points at the topic table.
    err1(
        &mqtt("client_id = \"c\"\nclean_session = true", ""),
        "t.toml:8:1: pipeline[0].source[0].topic[0].qos: QoS 1 needs a persistent session",
    );
    err1(
        &mqtt("client_id = \"c\"\nprotocol = \"v5\"\nsession_expiry = \"0s\"", "qos = 1"),
        "t.toml:11:7: pipeline[0].source[0].topic[0].qos: QoS 1 needs a persistent session: with MQTT 5 set session_expiry above 0s",
    );
    // Persistent session without client id.
    err1(
        &mqtt("", "qos = 1"),
        "t.toml:3:1: pipeline[0].source[0].client_id: a persistent session (clean_session = false, the default) needs a stable, non-empty client_id",
    );
    err1(
        &mqtt("client_id = \"\"", "qos = 1"),
        "t.toml:6:13: pipeline[0].source[0].client_id: must not be empty",
    );
    // QoS 0 with a clean session needs no client id.
    let c = ok(&mqtt("clean_session = true", "qos = 0"));
    let Some(m) = c.pipelines[0].sources[0].settings::<MqttSourceConfig>() else {
        panic!()
    };
    assert!(!m.persistent_session() && m.client_id.is_none());
}

#[test]
fn mqtt_rules() {
    err1(
        &mqtt("client_id = \"c\"\nsession_expiry = \"1h\"", ""),
        "t.toml:7:1: pipeline[0].source[0].session_expiry: session_expiry is an MQTT 5 setting",
    );
    err1(
        &mqtt("client_id = \"c\"\nca_file = \"/ca.pem\"", ""),
        "t.toml:7:1: pipeline[0].source[0].ca_file: TLS settings need an mqtts:// url",
    );
    err1(
        &mqtt("client_id = \"c\"\npassword = \"x\"\npassword_file = \"/p\"\nusername = \"u\"", ""),
        "t.toml:8:1: pipeline[0].source[0].password_file: give either password or password_file, not both",
    );
    err1(
        &mqtt("client_id = \"c\"\npassword = \"x\"", ""),
        "t.toml:7:1: pipeline[0].source[0].password: MQTT 3.1.1 sends a password only with a username",
    );
    err1(
        &mqtt("client_id = \"c\"\nshared_group = \"a/b\"", ""),
        "t.toml:7:16: pipeline[0].source[0].shared_group: \"a/b\" is not a shared-subscription group",
    );
    err1(
        &mqtt("client_id = \"c\"", "payload = \"value\""),
        "t.toml:7:1: pipeline[0].source[0].topic[0].topic_template: payload = \"value\" needs a topic_template",
    );
    err1(
        &mqtt("client_id = \"c\"", "precision = \"ms\""),
        "t.toml:9:1: pipeline[0].source[0].topic[0].precision: not used with payload = \"iotdb-json\"; remove it",
    );
    err1(
        &mqtt("client_id = \"c\"\nurl2 = 1", "").replace("url2 = 1", "").replace("mqtt://localhost", "http://localhost"),
        "t.toml:5:7: pipeline[0].source[0].url: broker URL \"http://localhost\" must start with mqtt:// or mqtts://",
    );
    let text = mqtt("client_id = \"c\"", "").replace("filter = \"a/#\"", "filter = \"a/#/b\"");
    err1(&text, "t.toml:8:10: pipeline[0].source[0].topic[0].filter: topic filter \"a/#/b\": '#' must be a whole level and the last one");
    let text = format!(
        "{}[[pipeline.source.topic]]\nfilter = \"a/#\"\n",
        mqtt("client_id = \"c\"", "")
    );
    err1(
        &text,
        "t.toml:11:10: pipeline[0].source[0].topic[1].filter: filter \"a/#\" is subscribed twice",
    );
}

#[test]
fn duplicate_pipeline_names() {
    let text = "[[pipeline]]\nname = \"a\"\n[[pipeline.source]]\ntype = \"http\"\n\
                [[pipeline]]\nname = \"a\"\n[pipeline.storage]\ndata_dir = \"/other\"\n[[pipeline.source]]\ntype = \"http\"\nbase_path = \"/b\"\n";
    err1(
        text,
        "t.toml:6:8: pipeline[1].name: pipeline name \"a\" is already used by pipeline[0]",
    );
    // Reported even when the second pipeline has other problems.
    let e = errs("[[pipeline]]\nname = \"a\"\n[[pipeline.source]]\ntype = \"http\"\n[[pipeline]]\nname = \"a\"\n");
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(
        e[0].starts_with("t.toml:5:1: pipeline[1].source: no [[pipeline.source]]"),
        "{e:#?}"
    );
    assert!(
        e[1].starts_with("t.toml:6:8: pipeline[1].name: pipeline name \"a\" is already used"),
        "{e:#?}"
    );
    // Two pipelines on the default data_dir collide too.
    let text = "[[pipeline]]\nname = \"a\"\n[[pipeline.source]]\ntype = \"http\"\n\
                [[pipeline]]\nname = \"b\"\n[[pipeline.source]]\ntype = \"http\"\nbase_path = \"/b\"\n";
    let e = errs(text);
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(e[0].starts_with("t.toml:5:1: pipeline[1]: data directory ./data is also the data directory of pipeline[0].storage.data_dir"), "{e:#?}");
    assert!(
        e[1].starts_with(
            "t.toml:5:1: pipeline[1]: WAL directory ./data/wal is also the WAL directory"
        ),
        "{e:#?}"
    );
    // Two sources serving the same route.
    let text = "[[pipeline]]\nname = \"a\"\n[[pipeline.source]]\ntype = \"http\"\nname = \"x\"\n[[pipeline.source]]\ntype = \"http\"\nname = \"y\"\nendpoints = [\"line-protocol\"]\n";
    let e = errs(text);
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(
        e[0].starts_with(
            "t.toml:6:1: pipeline[0].source[1]: /write is already served by pipeline[0].source[0]"
        ),
        "{e:#?}"
    );
    // Duplicate source names.
    let text = "[[pipeline]]\nname = \"a\"\n[[pipeline.source]]\ntype = \"http\"\n[[pipeline.source]]\ntype = \"http\"\nbase_path = \"/x\"\n";
    err1(
        text,
        "t.toml:5:1: pipeline[0].source[1]: source name \"http\" is already used in this pipeline",
    );
}

#[test]
fn missing_required_keys() {
    err1("", "t.toml:1:1: no [[pipeline]]: at least one pipeline");
    err1(
        "[[pipeline]]\n[[pipeline.source]]\ntype = \"http\"\n",
        "t.toml:1:1: pipeline[0].name: missing required key `name`",
    );
    err1(
        "[[pipeline]]\nname = \"p\"\n",
        "t.toml:1:1: pipeline[0].source: no [[pipeline.source]]: a pipeline needs at least one source",
    );
    err1(
        "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\nname = \"x\"\n",
        "t.toml:3:1: pipeline[0].source[0].type: missing required key `type`",
    );
    err1(
        "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"mqtt\"\nclient_id = \"c\"\n[[pipeline.source.topic]]\nfilter = \"x\"\n",
        "t.toml:3:1: pipeline[0].source[0].url: missing required key `url`",
    );
    err1(
        "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"mqtt\"\nurl = \"mqtt://h\"\nclient_id = \"c\"\n",
        "t.toml:3:1: pipeline[0].source[0].topic: missing required key `topic`",
    );
    err1(
        &mqtt("client_id = \"c\"", "").replace("filter = \"a/#\"", "qos = 0"),
        "t.toml:7:1: pipeline[0].source[0].topic[0].filter: missing required key `filter`",
    );
    err1(
        "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"csv\"\n",
        "t.toml:3:1: pipeline[0].source[0].directories: missing required key `directories`",
    );
    err1(
        &format!("{MIN}[[pipeline.schema]]\ntype = \"INT32\"\n"),
        "t.toml:5:1: pipeline[0].schema[0].pattern: missing required key `pattern`",
    );
}

#[test]
fn structural_errors() {
    err1(
        "[pipeline]\nname = \"p\"\n",
        "t.toml:1:1: pipeline: expected an array of tables, found table; write [[pipeline]] (double brackets)",
    );
    err1(
        &format!("http = 3\n{MIN}"),
        "t.toml:1:8: http: invalid type: integer `3`, expected a table",
    );
    err1(
        "[[pipeline]]\nname = \"p\"\nsource = 1\n",
        "t.toml:3:10: pipeline[0].source: expected an array of tables, found integer; write [[pipeline.source]]",
    );
    err1(
        "[[pipeline]]\nname = 7\n[[pipeline.source]]\ntype = \"http\"\n",
        "t.toml:2:8: pipeline[0].name: invalid type: integer `7`, expected a string",
    );
}

#[test]
fn csv_rules() {
    let csv = |extra: &str| {
        format!("[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"csv\"\ndirectories = [\"/d\"]\n{extra}\n")
    };
    err1(
        &csv("time_column = \"ts\""),
        "t.toml:6:1: pipeline[0].source[0].time_column: not used unless format = \"generic\"; remove it",
    );
    err1(
        &csv("format = \"generic\""),
        "t.toml:3:1: pipeline[0].source[0].device_column: the generic format needs device_column or device_template",
    );
    err1(
        &csv("format = \"generic\"\ndevice_column = 2\nheader_rows = 0\ntime_column = \"ts\""),
        "t.toml:9:15: pipeline[0].source[0].time_column: column \"ts\" is named but header_rows = 0",
    );
    err1(
        &csv("format = \"generic\"\ndevice_column = 0"),
        "t.toml:7:17: pipeline[0].source[0].device_column: column numbers start at 1, found 0",
    );
    err1(
        &csv("format = \"generic\"\ndevice_template = \"plant.{file_stem}\""),
        "t.toml:7:19: pipeline[0].source[0].device_template: \"plant.{file_stem}\" must start with \"root.\"",
    );
    err1(
        &csv("format = \"generic\"\ndevice_template = \"root.{file}\""),
        "t.toml:7:19: pipeline[0].source[0].device_template: template \"root.{file}\": unknown placeholder {file}",
    );
    err1(
        &csv("time_format = \"strftime\""),
        "t.toml:3:1: pipeline[0].source[0].time_pattern: time_format = \"strftime\" needs time_pattern",
    );
    err1(
        &csv("time_format = \"strftime\"\ntime_pattern = \"%Y-%q\""),
        "t.toml:7:16: pipeline[0].source[0].time_pattern: time pattern \"%Y-%q\": unknown specifier %q",
    );
    err1(
        &csv("timezone = \"UTC+01:00\""),
        "t.toml:6:12: pipeline[0].source[0].timezone: \"UTC+01:00\" is not an IANA time-zone name",
    );
    err1(
        &csv("delimiter = \"||\""),
        "t.toml:6:13: pipeline[0].source[0].delimiter: \"||\" is not one ASCII character",
    );
    err1(
        &csv("patterns = [\"*.csv\", \"[x\"]"),
        "t.toml:6:22: pipeline[0].source[0].patterns[1]: file pattern \"[x\": unclosed '['",
    );
    err1(
        &csv("on_success = \"delete\"\ndone_dir = \"d\""),
        "t.toml:7:1: pipeline[0].source[0].done_dir: not used with on_success = \"delete\"; remove it",
    );
    err1(
        &csv("done_dir = \"x\"\nerror_dir = \"./x\""),
        "t.toml:7:13: pipeline[0].source[0].error_dir: error_dir must differ from done_dir",
    );
    err1(
        &csv("ambiguous_time = \"first\""),
        "t.toml:6:18: pipeline[0].source[0].ambiguous_time: unknown value \"first\"; expected \"earliest\", \"latest\" or \"reject\"",
    );
    let c = ok(&csv("format = \"generic\"\ndevice_column = \"dev\"\npath_prefix = \"root.plant\"\ndelimiter = \"\\t\""));
    let Some(s) = c.pipelines[0].sources[0].settings::<CsvSourceConfig>() else {
        panic!()
    };
    assert_eq!(s.rows.delimiter, b'\t');
    assert!(matches!(
        &s.rows.format,
        CsvFormat::Generic(GenericCsv {
            time_column: ColumnRef::Index(0),
            ..
        })
    ));
}

#[test]
fn storage_rules() {
    let st = |extra: &str| format!("{MIN}[pipeline.storage]\n{extra}\n");
    err1(
        &st("chunk_group_size = \"128MiB\""),
        "t.toml:6:20: pipeline[0].storage.chunk_group_size: 128MiB is more than memtable_budget (64MiB)",
    );
    err1(
        &st("wal_max_size = \"32MiB\""),
        "t.toml:6:16: pipeline[0].storage.wal_max_size: 32MiB is less than memtable_budget (64MiB)",
    );
    err1(
        &st("bloom_filter_error_rate = 0.5"),
        "t.toml:6:27: pipeline[0].storage.bloom_filter_error_rate: 0.5 is out of range; TsFile 0.10 accepts 0.01 to 0.1",
    );
    err1(
        &st("max_index_degree = 1"),
        "t.toml:6:20: pipeline[0].storage.max_index_degree: 1 is out of range; expected 2 to",
    );
    err1(
        &st("storage_group_level = 0"),
        "t.toml:6:23: pipeline[0].storage.storage_group_level: 0 is out of range; expected 1 to 64",
    );
    err1(
        &st("wal_commit_interval = \"1m\""),
        "t.toml:6:23: pipeline[0].storage.wal_commit_interval: 1m is not less than http.request_timeout (30s)",
    );
    err1(
        &format!("{MIN}[[pipeline.schema]]\npattern = \"root.*x\"\ntype = \"INT32\"\n"),
        "t.toml:6:11: pipeline[0].schema[0].pattern: in pattern \"root.*x\": \"*x\": '*' and '**' must be a whole path node",
    );
    err1(
        &format!("{MIN}[[pipeline.schema]]\npattern = \"root.a\"\ntype = \"INT32\"\n[[pipeline.schema]]\npattern = \"root.a\"\ntype = \"INT64\"\n"),
        "t.toml:9:11: pipeline[0].schema[1].pattern: same pattern as pipeline[0].schema[0]",
    );
}

#[test]
fn format_version_is_2_or_4_and_v4_limits_encodings() {
    let st = |extra: &str| format!("{MIN}[pipeline.storage]\n{extra}\n");
    assert_eq!(
        ok(MIN).pipelines[0].storage.format_version,
        FormatVersion::V2
    );
    err1(
        &st("format_version = 3"),
        "t.toml:6:18: pipeline[0].storage.format_version: unknown format version 3; expected 2 (TsFile 000002, IoTDB 0.10) or 4 (TsFile v4, IoTDB 2.x)",
    );
    // v4: defaults not written that v4 does not write (BOOLEAN RLE) become PLAIN; the
    // others stay (GORILLA now names TsFile 2.x's GORILLA).
    let c = ok(&st("format_version = 4"));
    let p = &c.pipelines[0];
    assert_eq!(p.storage.format_version, FormatVersion::V4);
    let d = &p.schema.defaults;
    assert_eq!(
        (d.boolean, d.int32, d.int64, d.float, d.double, d.text),
        (
            Encoding::PLAIN,
            Encoding::TS_2DIFF,
            Encoding::TS_2DIFF,
            Encoding::GORILLA_V2,
            Encoding::GORILLA_V2,
            Encoding::PLAIN
        )
    );
    // the effective configuration keeps the version and the fitted defaults
    let again = ok(&c.to_toml(Secrets::Show).unwrap());
    assert_eq!(again.pipelines[0].storage.format_version, FormatVersion::V4);
    assert_eq!(again.pipelines[0].schema.defaults, *d);
    // written encodings v4 does not write are errors where they are written
    err1(
        &format!("{MIN}[pipeline.storage]\nformat_version = 4\n[pipeline.schema_defaults]\nfloat = \"GORILLA_V1\"\n"),
        "t.toml:8:9: pipeline[0].schema_defaults.float: FLOAT GORILLA_V1 is not written in TsFile v4 (storage.format_version = 4); FLOAT takes \"PLAIN\", \"TS_2DIFF\", \"GORILLA\", \"CHIMP\", \"SPRINTZ\" or \"RLBE\" (GORILLA_V1 is TsFile 2.x's name of format 000002's GORILLA; in v4 \"GORILLA\" is TsFile 2.x's GORILLA)",
    );
    err1(
        &format!("{MIN}[pipeline.storage]\nformat_version = 4\n[pipeline.schema_defaults]\ntext = \"RLE\"\n"),
        "t.toml:8:8: pipeline[0].schema_defaults.text: TEXT RLE is not written in TsFile v4 (storage.format_version = 4); TEXT takes \"PLAIN\" or \"DICTIONARY\"",
    );
    err1(
        &format!("{MIN}[pipeline.storage]\nformat_version = 4\n[[pipeline.schema]]\npattern = \"root.**\"\ntype = \"INT64\"\nencoding = \"REGULAR\"\n"),
        "t.toml:10:12: pipeline[0].schema[0].encoding: INT64 REGULAR is not written in TsFile v4 (storage.format_version = 4); INT64 takes \"PLAIN\", \"RLE\", \"TS_2DIFF\", \"GORILLA\", \"ZIGZAG\", \"CHIMP\", \"SPRINTZ\" or \"RLBE\" (TsFile 2.x has no REGULAR encoder)",
    );
    // v4-only encodings and compressions in format 2 name the setting that takes them
    err1(
        &format!("{MIN}[[pipeline.schema]]\npattern = \"root.**\"\ntype = \"INT64\"\nencoding = \"ZIGZAG\"\n"),
        "t.toml:8:12: pipeline[0].schema[0].encoding: TsFile 0.10 cannot encode INT64 with ZIGZAG; INT64 takes \"PLAIN\", \"RLE\", \"TS_2DIFF\" or \"REGULAR\" (INT64 ZIGZAG is written in TsFile v4: storage.format_version = 4)",
    );
    err1(
        &format!("{MIN}[pipeline.schema_defaults]\ncompression = \"ZSTD\"\n"),
        "t.toml:6:15: pipeline[0].schema_defaults.compression: TsFile 0.10 has no compression ZSTD; format 000002 takes \"UNCOMPRESSED\" or \"SNAPPY\" (ZSTD is written in TsFile v4: storage.format_version = 4)",
    );
    err1(
        &format!("{MIN}[[pipeline.schema]]\npattern = \"root.**\"\ntype = \"INT64\"\ncompression = \"LZ4\"\n"),
        "t.toml:8:15: pipeline[0].schema[0].compression: TsFile 0.10 has no compression LZ4; format 000002 takes \"UNCOMPRESSED\" or \"SNAPPY\" (LZ4 is written in TsFile v4: storage.format_version = 4)",
    );
    // v4: every pair of the v4 matrix with every compression validates and is kept
    // (by TsFile 2.x's names of the encodings: GORILLA is code 8, DICTIONARY code 1)
    for t in DataType::accepted() {
        for e in encodings_for_v4(t) {
            let name = e.v4_name();
            for c in Compression::accepted() {
                let c4 = ok(&format!("{MIN}[pipeline.storage]\nformat_version = 4\n[[pipeline.schema]]\npattern = \"root.a.b\"\ntype = \"{t}\"\nencoding = \"{name}\"\ncompression = \"{c}\"\n"));
                let r = &c4.pipelines[0].schema.rules[0];
                assert_eq!((r.data_type, r.encoding, r.compression), (t, e, c));
            }
        }
    }
    assert_eq!(Compression::accepted().len(), 5);
    let c = ok(&format!("{MIN}[pipeline.storage]\nformat_version = 4\n[pipeline.schema_defaults]\ncompression = \"gzip\"\ntext = \"dictionary\"\nint64 = \"ZIGZAG\"\n"));
    let d = &c.pipelines[0].schema.defaults;
    assert_eq!(
        (d.compression, d.text, d.int64),
        (
            Compression::GZIP,
            Encoding::PLAIN_DICTIONARY,
            Encoding::ZIGZAG
        )
    );
    err1(
        &format!("{MIN}[pipeline.storage]\nformat_version = 4\n[[pipeline.schema]]\npattern = \"root.**\"\ntype = \"BOOLEAN\"\nencoding = \"RLE\"\n"),
        "t.toml:10:12: pipeline[0].schema[0].encoding: BOOLEAN RLE is not written in TsFile v4 (storage.format_version = 4); BOOLEAN takes \"PLAIN\"",
    );
    // the same files are fine with format 2
    ok(&format!(
        "{MIN}[[pipeline.schema]]\npattern = \"root.**\"\ntype = \"BOOLEAN\"\nencoding = \"RLE\"\n"
    ));
    // v4 keeps what it writes: INT32 RLE in a rule
    let c = ok(&format!("{MIN}[pipeline.storage]\nformat_version = 4\n[[pipeline.schema]]\npattern = \"root.**\"\ntype = \"INT32\"\nencoding = \"RLE\"\n"));
    assert_eq!(c.pipelines[0].schema.rules[0].encoding, Encoding::RLE);
}

#[test]
fn http_rules() {
    err1(
        &format!("[http]\nlisten = \"localhost:8080\"\n{MIN}"),
        "t.toml:2:10: http.listen: \"localhost:8080\" is not an IP address and port",
    );
    err1(
        &format!("[http]\nmax_body_size = \"10MiB\"\nmax_decompressed_size = \"1MiB\"\n{MIN}"),
        "t.toml:3:25: http.max_decompressed_size: 1MiB is less than max_body_size (10MiB)",
    );
    err1(
        &format!("[http]\ntokens = [\"a b\"]\n{MIN}"),
        "t.toml:2:11: http.tokens[0]: a token must be non-empty and contain no whitespace",
    );
    err1(
        &format!("[metrics]\npath = \"/write\"\n{MIN}"),
        "t.toml:2:8: metrics.path: /write is already a route of the HTTP listener",
    );
    err1(
        &format!("{MIN}device_template = \"{{measurement}}..x\""),
        "t.toml:5:19: pipeline[0].source[0].device_template: template \"{measurement}..x\": empty path node",
    );
    err1(
        &format!("{MIN}path_prefix = \"lp\""),
        "t.toml:5:15: pipeline[0].source[0].path_prefix: path \"lp\" must start with \"root\"",
    );
    err1(
        &format!("{MIN}endpoints = []"),
        "t.toml:5:13: pipeline[0].source[0].endpoints: an http source needs at least one endpoint",
    );
    err1(
        &format!("{MIN}base_path = \"api/\""),
        "t.toml:5:13: pipeline[0].source[0].base_path: \"api/\" must start with '/'",
    );
    err1(
        &format!("{MIN}name = \"my source\""),
        "t.toml:5:8: pipeline[0].source[0].name: name \"my source\" may only use letters",
    );
}

#[test]
fn all_errors_are_collected_in_order() {
    let text = "shutdown_timeout = \"soon\"\n[http]\nlisten = \"x\"\n[log]\ncolor = \"rainbow\"\n\
                [[pipeline]]\nname = \"a b\"\n[pipeline.storage]\nseal_size = \"big\"\n\
                [[pipeline.source]]\ntype = \"mqtt\"\nurl = \"mqtt://h\"\nclient_id = \"c\"\nclean_session = true\n\
                [[pipeline.source.topic]]\nfilter = \"t\"\nqos = 1\n";
    let e = errs(text);
    let heads: Vec<&str> = e
        .iter()
        .map(|l| {
            l.match_indices(": ")
                .nth(1)
                .map_or(l.as_str(), |(i, _)| &l[..=i])
        })
        .collect();
    assert_eq!(
        heads,
        vec![
            "t.toml:1:20: shutdown_timeout:",
            "t.toml:3:10: http.listen:",
            "t.toml:5:9: log.color:",
            "t.toml:7:8: pipeline[0].name:",
            "t.toml:9:13: pipeline[0].storage.seal_size:",
            "t.toml:17:7: pipeline[0].source[0].topic[0].qos:",
        ],
        "{e:#?}"
    );
    // Serde errors in different pipelines and sources are all reported as well.
    let text =
        "[[pipeline]]\nname = \"a\"\nfoo = 1\n[[pipeline.source]]\ntype = \"http\"\nbar = 2\n\
                [[pipeline]]\nname = \"b\"\nbaz = 3\n[[pipeline.source]]\ntype = \"csv\"\n";
    let e = errs(text);
    assert_eq!(e.len(), 3, "{e:#?}");
    assert!(e[0].starts_with("t.toml:3:1: pipeline[0].foo: unknown key `foo`"));
    assert!(e[1].starts_with("t.toml:6:1: pipeline[0].source[0].bar: unknown key `bar`"));
    assert!(e[2].starts_with("t.toml:9:1: pipeline[1].baz: unknown key `baz`"));
}

// ---- reference ------------------------------------------------------------------------------

/// A document that has every table of the schema (each source type, a topic, a rule).
const ALL_TABLES: &str = r#"
[http]
[[http.user]]
name = "u"
password = "p"
[metrics]
[log]
[[pipeline]]
name = "p"
[pipeline.storage]
[pipeline.schema_defaults]
[[pipeline.schema]]
pattern = "root.a.b"
type = "INT32"
[[pipeline.source]]
type = "http"
[[pipeline.source]]
type = "mqtt"
url = "mqtt://h"
client_id = "c"
[[pipeline.source.topic]]
filter = "json/#"
[[pipeline.source.topic]]
filter = "line/#"
payload = "line"
[[pipeline.source.topic]]
filter = "value/+/+"
payload = "value"
topic_template = "value/{device}/{measurement}"
[[pipeline.source]]
type = "mqtt"
name = "m5"
protocol = "v5"
url = "mqtt://h"
client_id = "c5"
[[pipeline.source.topic]]
filter = "x"
[[pipeline.source]]
type = "csv"
directories = ["/d"]
[[pipeline.source]]
type = "csv"
name = "g"
format = "generic"
directories = ["/g"]
device_column = 2
"#;

/// The example table of every registered source type is a valid source, and its effective
/// configuration parses back to the same configuration.
#[test]
fn every_source_example_validates() {
    for plugin in tsfiled_connectors::registry::sources() {
        let t = plugin.type_name();
        let text = format!(
            "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"{t}\"\n{}",
            plugin.example()
        );
        let c = ok(&text);
        assert_eq!(c.pipelines[0].sources[0].type_name(), t);
        assert_eq!(
            c.pipelines[0].sources[0].name, t,
            "the name defaults to the type"
        );
        let again = ok(&c.to_toml(Secrets::Show).unwrap());
        assert_eq!(again, c, "{t}");
    }
}

/// [`ALL_TABLES`] plus the example table of every registered source type it lacks.
fn all_tables() -> String {
    let mut text = ALL_TABLES.to_string();
    for plugin in tsfiled_connectors::registry::sources() {
        let t = plugin.type_name();
        if !text.contains(&format!("type = \"{t}\"\n")) {
            text.push_str(&format!(
                "[[pipeline.source]]\ntype = \"{t}\"\n{}",
                plugin.example()
            ));
        }
    }
    text
}

/// The table of `doc` that a reference prefix names (first matching element of arrays).
fn table_at<'a>(doc: &'a mut toml::Table, prefix: &str) -> &'a mut toml::Table {
    let mut cur = doc;
    for seg in prefix
        .trim_end_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
    {
        let (key, sel) = match seg.split_once('[') {
            Some((k, rest)) => (k, Some(rest.trim_end_matches(']'))),
            None => (seg, None),
        };
        let v = cur
            .get_mut(key)
            .unwrap_or_else(|| panic!("no {key} in test document"));
        cur = match sel {
            None => v.as_table_mut().unwrap(),
            Some(sel) => {
                let arr = v.as_array_mut().unwrap();
                let want = sel.strip_prefix("type=");
                arr.iter_mut()
                    .map(|e| e.as_table_mut().unwrap())
                    .find(|t| {
                        want.is_none_or(|w| t.get("type").and_then(|x| x.as_str()) == Some(w))
                    })
                    .unwrap_or_else(|| panic!("no element {sel} of {key}"))
            }
        };
    }
    cur
}

/// The keys serde accepts in a table, read from the "unknown key" error for a probe key.
fn accepted_keys(prefix: &str) -> BTreeSet<String> {
    let mut doc: toml::Table = toml::from_str(&all_tables()).unwrap();
    table_at(&mut doc, prefix).insert("__probe__".into(), toml::Value::Integer(1));
    let text = toml::to_string(&doc).unwrap();
    let e = errs(&text);
    let line = e
        .iter()
        .find(|l| l.contains("unknown key `__probe__`"))
        .unwrap_or_else(|| panic!("no probe error for {prefix}: {e:#?}"));
    let list = line.split("expected ").nth(1).unwrap();
    let list = list.strip_prefix("one of ").unwrap_or(list);
    list.split(", ")
        .flat_map(|s| s.split(" or "))
        .map(|s| s.trim().trim_matches('`').to_string())
        .collect()
}

#[test]
fn reference_matches_the_serde_structures() {
    let reference = reference();
    for (prefix, _) in crate::reference::tables() {
        if prefix == "pipeline[].source[]." {
            continue; // `type` is read by the dispatch, not by a struct
        }
        let documented: BTreeSet<String> = reference
            .iter()
            .filter_map(|k| k.path.strip_prefix(prefix.as_str()))
            .filter(|rest| !rest.contains('.') && !rest.contains('['))
            .map(str::to_string)
            .collect();
        let mut accepted = accepted_keys(&prefix);
        // Keys taken out of the table before serde sees it.
        match prefix.as_str() {
            "" => {
                accepted.insert("pipeline".into());
            }
            "pipeline[]." => {
                accepted.insert("source".into());
            }
            _ => {}
        }
        assert_eq!(documented, accepted, "table {prefix}");
    }
    let paths: BTreeSet<&str> = reference.iter().map(|k| k.path.as_str()).collect();
    assert_eq!(paths.len(), reference.len(), "duplicate reference paths");
    assert!(paths.contains("pipeline[].source[].type"));
    assert!(paths.contains("pipeline[].source[type=mqtt].topic[].qos"));
    for k in &reference {
        assert!(k.doc.len() > 10, "{} has no real documentation", k.path);
        assert!(!k.ty.is_empty() && !k.default.is_empty(), "{}", k.path);
    }
    let md = reference_markdown();
    assert!(
        md.contains("| `pipeline[].storage.memtable_budget` | size | \"64MiB\" |"),
        "{md}"
    );
}

/// Values at a reference path in an effective-config table (all elements of arrays).
fn values_at<'a>(v: &'a toml::Value, path: &[&str], out: &mut Vec<&'a toml::Value>) {
    let Some((first, rest)) = path.split_first() else {
        out.push(v);
        return;
    };
    let (key, sel) = match first.split_once('[') {
        Some((k, s)) => (k, Some(s.trim_end_matches(']'))),
        None => (*first, None),
    };
    let Some(child) = v.get(key) else { return };
    match sel {
        None => values_at(child, rest, out),
        Some(sel) => {
            let want = sel.strip_prefix("type=");
            for e in child.as_array().into_iter().flatten() {
                if want.is_none_or(|w| e.get("type").and_then(|t| t.as_str()) == Some(w)) {
                    values_at(e, rest, out);
                }
            }
        }
    }
}

#[test]
fn documented_defaults_are_the_real_defaults() {
    let effective: toml::Value =
        toml::from_str(&ok(&all_tables()).to_toml(Secrets::Show).unwrap()).unwrap();
    let mut checked = 0;
    for k in reference() {
        if k.ty.contains("table") {
            continue; // tables are documented by their keys
        }
        let Ok(lit) = toml::from_str::<toml::Table>(&format!("v = {}", k.default)) else {
            continue; // described in words
        };
        let want = &lit["v"];
        let path: Vec<&str> = k.path.split('.').collect();
        let mut found = Vec::new();
        values_at(&effective, &path, &mut found);
        assert!(
            !found.is_empty(),
            "{}: default {} not in the effective config",
            k.path,
            k.default
        );
        // Some element of the document has the default (it sets as few keys as it can; the
        // MQTT 5 source exists for the v5-only session_expiry).
        let same_as_default = |got: &toml::Value| {
            // Durations and sizes compare by value ("60s" documents what prints as "1m").
            match (got.as_str(), want.as_str()) {
                (Some(g), Some(w)) => match (parse_duration(g), parse_duration(w)) {
                    (Ok(a), Ok(b)) => a == b,
                    _ => match (parse_size(g), parse_size(w)) {
                        (Ok(a), Ok(b)) => a == b,
                        _ => g == w,
                    },
                },
                _ => got == want,
            }
        };
        assert!(
            found.iter().any(|g| same_as_default(g)),
            "{}: documented default {}, effective {found:?}",
            k.path,
            k.default
        );
        checked += 1;
    }
    assert!(checked > 60, "only {checked} defaults checked");
}

// ---- check ----------------------------------------------------------------------------------

#[test]
fn check_reports_machine_problems() {
    let tmp = tempfile::tempdir().unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap();
    let ro_file = tmp.path().join("file");
    std::fs::write(&ro_file, b"x").unwrap();
    let text = format!(
        "data_dir = {data:?}\n[http]\nlisten = \"{busy_addr}\"\n\
         [[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"mqtt\"\nurl = \"mqtts://h\"\nclient_id = \"c\"\n\
         username = \"u\"\npassword_file = {pw:?}\nca_file = {ca:?}\n[[pipeline.source.topic]]\nfilter = \"x\"\n\
         [[pipeline]]\nname = \"q\"\n[pipeline.storage]\ndata_dir = {bad:?}\n[[pipeline.source]]\ntype = \"csv\"\ndirectories = [{watch:?}]\n\
         timezone = \"Mars/Olympus_Mons\"\n",
        data = tmp.path().join("data"),
        pw = tmp.path().join("missing-password"),
        ca = ro_file,
        bad = ro_file.join("sub"),
        watch = tmp.path().join("watch"),
    );
    let c = ok(&text);
    let report = check(&c);
    assert!(!report.is_ok());
    let get = |s: &str| {
        report
            .items
            .iter()
            .find(|i| i.subject == s)
            .unwrap_or_else(|| panic!("no check of {s}: {report}"))
    };
    assert_eq!(get("http.listen").level, CheckLevel::Error);
    assert!(get("http.listen").message.contains("in use"));
    assert_eq!(get("pipeline[0].storage.data_dir").level, CheckLevel::Ok);
    assert!(get("pipeline[0].storage.data_dir")
        .message
        .contains("can be created"));
    assert_eq!(
        get("pipeline[0].source[0].password_file").level,
        CheckLevel::Error
    );
    assert_eq!(get("pipeline[0].source[0].ca_file").level, CheckLevel::Ok);
    assert_eq!(
        get("pipeline[0].source[0].dead_letter_file").level,
        CheckLevel::Ok
    );
    assert_eq!(get("pipeline[1].storage.data_dir").level, CheckLevel::Error);
    assert_eq!(
        get("pipeline[1].source[0].directories[0]").level,
        CheckLevel::Ok
    );
    assert_eq!(get("pipeline[1].source[0].done_dir").level, CheckLevel::Ok);
    let tz = get("pipeline[1].source[0].timezone");
    if Path::new("/usr/share/zoneinfo").is_dir() {
        assert_eq!(tz.level, CheckLevel::Error, "{}", tz.message);
    } else {
        assert_eq!(tz.level, CheckLevel::Warning);
    }
    let errors: Vec<&str> = report.errors().map(|i| i.subject.as_str()).collect();
    assert!(errors.contains(&"http.listen"));
    let shown = report.to_string();
    assert!(shown.contains("error   http.listen: "), "{shown}");
    drop(busy);
    // Nothing was created by the check.
    assert!(!tmp.path().join("data").exists());
    assert!(!tmp.path().join("watch").exists());
}

#[test]
fn check_passes_on_a_good_machine() {
    let tmp = tempfile::tempdir().unwrap();
    let c = Config::embedded_default()
        .unwrap()
        .with_data_dir(&tmp.path().join("data"))
        .unwrap()
        .with_http_listen("127.0.0.1:0".parse().unwrap())
        .unwrap();
    let report = check(&c);
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.items.len(), 3, "{report}");
}

// ---- robustness -----------------------------------------------------------------------------

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Any edit of a valid file gives a config or diagnostics with real positions, never a panic.
    #[test]
    fn mutated_files_never_panic(
        which in 0usize..4,
        line in 0usize..80,
        op in 0u8..4,
        junk in "[ -~]{0,12}",
    ) {
        let base = [DEFAULT_CONFIG, example("http-telegraf"), example("mqtt"), example("csv")][which];
        let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
        let i = line % lines.len();
        match op {
            0 => { lines.remove(i); }
            1 => lines.insert(i, junk.clone()),
            2 => {
                if let Some((k, _)) = lines[i].clone().split_once('=') {
                    lines[i] = format!("{k}= {junk}");
                }
            }
            _ => lines[i].push_str(&junk),
        }
        let text = lines.join("\n");
        match Config::from_toml_str(&text, "m.toml") {
            Ok(c) => {
                let again = Config::from_toml_str(&c.to_toml(Secrets::Show).unwrap(), "e").unwrap();
                proptest::prop_assert_eq!(again, c);
            }
            Err(ConfigError::Invalid(d)) => {
                proptest::prop_assert!(!d.items.is_empty());
                let n = text.lines().count().max(1);
                for item in &d.items {
                    proptest::prop_assert!(item.line >= 1 && item.line <= n + 1, "{item:?}");
                    proptest::prop_assert!(item.column >= 1);
                }
            }
            Err(e) => proptest::prop_assert!(false, "unexpected {e}"),
        }
    }

    /// Arbitrary text never panics.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = Config::from_toml_str(&text, "x.toml");
    }
}

#[test]
fn mqtt_values() {
    assert_eq!(
        format!("{:?}", Secret::Inline("s3cret".into())),
        "Inline(***)"
    );
    assert_eq!(format!("{:?}", Secret::File("/pw".into())), "File(\"/pw\")");
    // A whole configuration never shows an inline password either.
    let c = ok(&mqtt(
        "client_id = \"c\"\nusername = \"u\"\npassword = \"s3cret\"",
        "",
    ));
    assert!(!format!("{c:?}").contains("s3cret"));
    for (level, q) in [
        (0, Qos::AtMostOnce),
        (1, Qos::AtLeastOnce),
        (2, Qos::ExactlyOnce),
    ] {
        assert_eq!(q.level(), level);
        assert_eq!(Qos::from_level(level), Some(q));
    }
    assert_eq!(Qos::from_level(3), None);
    assert_eq!(Qos::default(), Qos::AtLeastOnce);
    assert_eq!(MqttProtocol::default(), MqttProtocol::V311);
}

#[test]
fn debug_never_shows_bearer_tokens() {
    let c = ok(&format!(
        "[http]\ntokens = [\"t0ps3cret\", \"other\"]\n{MIN}"
    ));
    let text = format!("{c:?}");
    assert!(
        !text.contains("t0ps3cret") && !text.contains("other"),
        "{text}"
    );
    assert!(text.contains("[2 redacted]"), "{text}");
}

/// Prefixes and fixed template nodes follow the connectors' path rules
/// ([`crate::path`]): what `check-config` accepts, the sources accept at run time.
#[test]
fn path_rules_are_the_connectors() {
    // HTTP line protocol.
    err1(
        &format!("{MIN}path_prefix = \"root.1e5\""),
        "t.toml:5:15: pipeline[0].source[0].path_prefix: path \"root.1e5\" level 1 \"1e5\" reads as a number with an exponent",
    );
    err1(
        &format!("{MIN}path_prefix = \"root.lp.ROOT\""),
        "t.toml:5:15: pipeline[0].source[0].path_prefix: path \"root.lp.ROOT\" level 2 \"ROOT\" is a reserved word",
    );
    let long = format!("root.{}x", "abcdefghi.".repeat(102));
    let e = errs(&format!("{MIN}path_prefix = \"{long}\""));
    assert_eq!(
        e,
        [format!("t.toml:5:15: pipeline[0].source[0].path_prefix: path \"{long}\" is 1026 bytes long, more than the 1024 allowed")]
    );
    err1(
        &format!("{MIN}device_template = \"{{measurement}}.root\""),
        "t.toml:5:19: pipeline[0].source[0].device_template: template \"{measurement}.root\": level 3 \"root\" is a reserved word",
    );
    err1(
        &format!("{MIN}path_prefix = \"root\"\ndevice_template = \"root.{{measurement}}\""),
        "t.toml:6:19: pipeline[0].source[0].device_template: template \"root.{measurement}\": level 1 \"root\" is a reserved word",
    );
    err1(
        &format!("{MIN}device_template = \"{{measurement}}.1E3\""),
        "t.toml:5:19: pipeline[0].source[0].device_template: template \"{measurement}.1E3\": level 3 \"1E3\" reads as a number with an exponent",
    );
    err1(
        &format!("{MIN}device_template = \"{{tags}}.{{measurement}}.{{tags}}\""),
        "t.toml:5:19: pipeline[0].source[0].device_template: template \"{tags}.{measurement}.{tags}\": {tags} appears twice",
    );
    // Line protocol below `root` itself is fine: the template adds the levels.
    ok(&format!("{MIN}path_prefix = \"root\""));
    // The configuration accepts what the sources render (one parser): a tag placeholder with a
    // default, compiled once and rendered as the http source renders it.
    let c = ok(&format!(
        "{MIN}path_prefix = \"root.gw\"\ndevice_template = \"{{tag:host|unknown}}.{{measurement}}\""
    ));
    let Some(h) = c.pipelines[0].sources[0].settings::<HttpSourceConfig>() else {
        panic!("an http source")
    };
    let mut out = String::new();
    h.line_protocol
        .device_template
        .render("cpu", &[("region", "eu")], &mut out)
        .unwrap();
    assert_eq!(out, "root.gw.unknown.cpu");
    // A bad prefix and a bad template are both reported.
    let e = errs(&format!(
        "{MIN}path_prefix = \"root.a-b\"\ndevice_template = \"{{measurement}}..x\""
    ));
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(
        e[1].contains("template \"{measurement}..x\": empty path node"),
        "{e:#?}"
    );

    // MQTT: line protocol and plain values.
    err1(
        &mqtt(
            "client_id = \"c\"",
            "payload = \"line\"\npath_prefix = \"root.1e5\"",
        ),
        "t.toml:10:15: pipeline[0].source[0].topic[0].path_prefix: path \"root.1e5\" level 1 \"1e5\" reads as a number with an exponent",
    );
    err1(
        &mqtt(
            "client_id = \"c\"",
            "payload = \"value\"\ntopic_template = \"a/{device}/{measurement}\"\npath_prefix = \"root.x.root\"",
        ),
        "t.toml:11:15: pipeline[0].source[0].topic[0].path_prefix: path \"root.x.root\" level 2 \"root\" is a reserved word",
    );
    // `root` alone needs device levels from the topic.
    ok(&mqtt(
        "client_id = \"c\"",
        "payload = \"value\"\ntopic_template = \"a/{device}/{measurement}\"\npath_prefix = \"root\"",
    ));
    err1(
        &mqtt(
            "client_id = \"c\"",
            "payload = \"value\"\ntopic_template = \"a/{measurement}\"\npath_prefix = \"root\"",
        )
        .replace("a/#", "a/+"),
        "t.toml:11:15: pipeline[0].source[0].topic[0].path_prefix: path \"root\" needs at least one level after `root`",
    );

    // CSV.
    let csv = |extra: &str| {
        format!("[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"csv\"\ndirectories = [\"/d\"]\nformat = \"generic\"\ntime_column = 1\n{extra}\n")
    };
    ok(&csv("device_column = 2\npath_prefix = \"root.plant\""));
    err1(
        &csv("device_column = 2\npath_prefix = \"root\""),
        "t.toml:9:15: pipeline[0].source[0].path_prefix: path \"root\" needs at least one level after `root`",
    );
    err1(
        &csv("device_column = 2\npath_prefix = \"root.1e5\""),
        "t.toml:9:15: pipeline[0].source[0].path_prefix: path \"root.1e5\" level 1 \"1e5\" reads as a number with an exponent",
    );
    err1(
        &csv("device_template = \"root.root.{file_stem}\""),
        "t.toml:8:19: pipeline[0].source[0].device_template: template \"root.root.{file_stem}\": level 1 \"root\" is a reserved word",
    );
    err1(
        &csv("device_template = \"root.plant.2e2\""),
        "t.toml:8:19: pipeline[0].source[0].device_template: template \"root.plant.2e2\": level 2 \"2e2\" reads as a number with an exponent",
    );

    // Schema rules: a literal node that no written path can have.
    err1(
        &format!("{MIN}[[pipeline.schema]]\npattern = \"root.*.1e5\"\ntype = \"INT32\"\n"),
        "t.toml:6:11: pipeline[0].schema[0].pattern: in pattern \"root.*.1e5\": level 2 \"1e5\" reads as a number with an exponent",
    );
}

/// One topic-template grammar: what the MQTT source resolves (`{device+}`: one or more device
/// levels), the configuration accepts, and the errors name the key.
#[test]
fn topic_templates_have_one_grammar() {
    let c = ok(&mqtt(
        "client_id = \"c\"",
        "payload = \"value\"\ntopic_template = \"a/{device+}/{measurement}\"\npath_prefix = \"root\"",
    ));
    let m = c.pipelines[0].sources[0]
        .settings::<MqttSourceConfig>()
        .unwrap();
    let MqttPayload::Value { topic_template, .. } = &m.topics[0].payload else {
        panic!()
    };
    assert_eq!(
        topic_template.apply("a/line1/press7/temp"),
        Some((vec!["line1", "press7"], "temp"))
    );
    err1(
        &mqtt(
            "client_id = \"c\"",
            "payload = \"value\"\ntopic_template = \"a/{device+}/{measurement}/#\"",
        ),
        "t.toml:10:18: pipeline[0].source[0].topic[0].topic_template: topic template \"a/{device+}/{measurement}/#\": {device+} cannot be combined with '#'",
    );
}

#[test]
fn http_users_are_validated_and_never_shown() {
    let c = ok(&format!(
        "[[http.user]]\nname = \"root\"\npassword = \"r00tpw\"\n[[http.user]]\nname = \"ops\"\npassword = \"a:b c\"\n[http]\nuser_file = \"/etc/tsfiled/users\"\n{MIN}"
    ));
    assert_eq!(c.http.users.len(), 2);
    assert_eq!(c.http.users[1].password, "a:b c");
    assert_eq!(
        c.http.user_file.as_deref(),
        Some(Path::new("/etc/tsfiled/users"))
    );
    assert!(c.http.auth_required());
    let debug = format!("{c:?}");
    assert!(
        !debug.contains("r00tpw") && !debug.contains("a:b c"),
        "{debug}"
    );
    let shown = c.to_toml(Secrets::Redact).unwrap();
    assert!(!shown.contains("r00tpw"), "{shown}");
    assert!(shown.contains("name = \"root\""), "{shown}");
    // The effective configuration with secrets reads back equal.
    let back = ok(&c.to_toml(Secrets::Show).unwrap());
    assert_eq!(back, c);
    err1(
        &format!("[[http.user]]\nname = \"a:b\"\npassword = \"x\"\n{MIN}"),
        "t.toml:2:8: http.user[0].name: a user name must not contain ':'",
    );
    err1(
        &format!("[[http.user]]\nname = \"a\"\n{MIN}"),
        "t.toml:1:1: http.user[0].password: missing required key `password`",
    );
    err1(
        &format!("[[http.user]]\nname = \"a\"\npassword = \"\"\n{MIN}"),
        "t.toml:3:12: http.user[0].password: a password must not be empty",
    );
    err1(
        &format!("[[http.user]]\nname = \"a\"\npassword = \"x\"\n[[http.user]]\nname = \"a\"\npassword = \"y\"\n{MIN}"),
        "t.toml:5:8: http.user[1].name: user \"a\" is listed twice",
    );
    err1(
        &format!("[http]\nuser_file = \"\"\n{MIN}"),
        "t.toml:2:13: http.user_file: must not be empty",
    );
}

#[test]
fn user_file_grammar() {
    let users = parse_user_file("# users\n\nroot:root\r\n ops :p: w\n").unwrap();
    let pairs: Vec<(&str, &str)> = users
        .iter()
        .map(|u| (u.name.as_str(), u.password.as_str()))
        .collect();
    assert_eq!(pairs, [("root", "root"), ("ops", "p: w")]);
    assert_eq!(
        parse_user_file("a:1\nb\n"),
        Err((2, "expected `name:password`".to_string()))
    );
    assert_eq!(
        parse_user_file("a:\n"),
        Err((1, "a password must not be empty".to_string()))
    );
}

/// `storage.line_protocol_model`: "tree" by default, "table" only with TsFile v4; in a table
/// pipeline a line-protocol source's `path_prefix` is `root.<database>` and its
/// `device_template` is refused; the effective configuration keeps the model.
#[test]
fn line_protocol_model_table_needs_v4_and_a_database_prefix() {
    use tsfiled_core::LineProtocolModel;
    let st = |storage: &str, source: &str| {
        format!("[[pipeline]]\nname = \"p\"\n[pipeline.storage]\n{storage}\n[[pipeline.source]]\ntype = \"http\"\n{source}\n")
    };
    assert_eq!(
        ok(MIN).pipelines[0].storage.line_protocol_model,
        LineProtocolModel::Tree
    );
    err1(
        &st("line_protocol_model = \"table\"", ""),
        "t.toml:4:23: pipeline[0].storage.line_protocol_model: the table model is written in TsFile v4 only: set format_version = 4",
    );
    err1(
        &st("format_version = 4\nline_protocol_model = \"Table\"", ""),
        "t.toml:5:23: pipeline[0].storage.line_protocol_model: unknown value \"Table\"; expected \"tree\" or \"table\"",
    );
    let table = "format_version = 4\nline_protocol_model = \"table\"";
    let c = ok(&st(table, ""));
    assert_eq!(
        c.pipelines[0].storage.line_protocol_model,
        LineProtocolModel::Table
    );
    let again = ok(&c.to_toml(Secrets::Show).unwrap());
    assert_eq!(
        again.pipelines[0].storage.line_protocol_model,
        LineProtocolModel::Table
    );
    err1(
        &st(table, "device_template = \"{measurement}\""),
        "t.toml:8:1: pipeline[0].source[0].device_template: not used with storage.line_protocol_model = \"table\"",
    );
    err1(
        &st(table, "path_prefix = \"root.a.b\""),
        "t.toml:8:15: pipeline[0].source[0].path_prefix: \"root.a.b\": with storage.line_protocol_model = \"table\" the prefix is `root.<database>`",
    );
    err1(
        &st(table, "path_prefix = \"root\""),
        "t.toml:8:15: pipeline[0].source[0].path_prefix: \"root\": with storage.line_protocol_model = \"table\"",
    );
}
