//! Stage one: the TOML document as serde structures, close to what was written.
//!
//! Every table refuses unknown keys. Every key is optional here (`None` = not written) so that
//! stage two ([`crate::validate`]) can apply defaults, check values and report all problems
//! with their key paths. Each field is declared with its TOML key, type, default and meaning
//! through [`config_table!`], which also records them for [`crate::reference`], so the
//! documentation cannot drift from the structures.

use serde::{Deserialize, Serialize};

use crate::reference::FieldDoc;

/// Declares a raw configuration table: a serde struct with `deny_unknown_fields`, one
/// `#[key("toml-key", "type", "default")]` line per field, and a `KEYS` table with the same
/// facts and the field's doc comment.
macro_rules! config_table {
    (
        $(#[doc = $sdoc:literal])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                #[key($key:literal, $ty:literal, $default:literal)]
                $(#[$attr:meta])*
                $field:ident : $fty:ty,
            )*
        }
    ) => {
        $(#[doc = $sdoc])*
        #[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!("Key `", $key, "`; type: ", $ty, "; default: ", $default, ".")]
                #[serde(rename = $key)]
                $(#[$attr])*
                pub $field: $fty,
            )*
        }

        impl $name {
            /// The documented keys of this table, in declaration order.
            pub(crate) const KEYS: &'static [FieldDoc] = &[
                $(FieldDoc { key: $key, ty: $ty, default: $default, doc: concat!($($doc, "\n",)*) },)*
            ];
        }
    };
}

/// A value written either as a string (`"64MiB"`, `"30s"`) or as an integer; stage two
/// decides what it means (a size in bytes; a bare integer duration is refused with a hint).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Human {
    /// An integer.
    Int(i64),
    /// A string.
    Text(String),
}

impl<'de> Deserialize<'de> for Human {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Human;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string such as \"64MiB\" or \"30s\", or an integer")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Human, E> {
                Ok(Human::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Human, E> {
                i64::try_from(v)
                    .map(Human::Int)
                    .map_err(|_| E::custom("integer too large"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Human, E> {
                Ok(Human::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A CSV column: its header name (a string) or its 1-based position (an integer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RawColumn {
    /// 1-based position.
    Index(i64),
    /// Header name.
    Name(String),
}

impl<'de> Deserialize<'de> for RawColumn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RawColumn;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a column header name (string) or a 1-based column number (integer)")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RawColumn, E> {
                Ok(RawColumn::Index(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RawColumn, E> {
                i64::try_from(v)
                    .map(RawColumn::Index)
                    .map_err(|_| E::custom("column number too large"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawColumn, E> {
                Ok(RawColumn::Name(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

config_table! {
    /// The whole configuration file.
    pub struct RawConfig {
        /// Directory for sealed TsFiles, the write-ahead log and state of every pipeline that
        /// does not set its own `storage.data_dir`. Relative paths are relative to the working
        /// directory. `--data-dir` overrides it.
        #[key("data_dir", "path", "\"./data\"")]
        data_dir: Option<String>,
        /// How long a stop (SIGTERM/SIGINT) may take to make everything durable and seal open
        /// files before the daemon exits anyway. Keep systemd's `TimeoutStopSec` above it.
        #[key("shutdown_timeout", "duration", "\"30s\"")]
        shutdown_timeout: Option<Human>,
        /// The HTTP listener: push endpoints of `http` sources, `/metrics`, `/health`, `/ready`
        /// and the status page.
        #[key("http", "table", "(all keys default)")]
        http: Option<RawHttp>,
        /// The Prometheus metrics endpoint (text format, names prefixed `tsfiled_`).
        #[key("metrics", "table", "(all keys default)")]
        metrics: Option<RawMetrics>,
        /// Logging to stderr (journald under systemd): level, format and colours.
        #[key("log", "table", "(all keys default)")]
        log: Option<RawLog>,
        /// The pipelines; at least one. Each has its own storage, schema rules and sources.
        #[key("pipeline", "array of tables", "required (at least one)")]
        #[serde(skip_deserializing, skip_serializing_if = "Vec::is_empty")]
        pipeline: Vec<RawPipeline>,
    }
}

config_table! {
    /// `[http]`: the HTTP listener.
    pub struct RawHttp {
        /// Address and port to listen on, e.g. `"0.0.0.0:8080"` or `"[::]:8080"`. Port 0 picks a
        /// free port (the daemon logs the bound address). `--http-listen` overrides it.
        #[key("listen", "socket address", "\"127.0.0.1:8080\"")]
        listen: Option<String>,
        /// Bearer tokens accepted on push endpoints (`Authorization: Bearer <token>`). When no
        /// token is configured (here or in `token_file`), push needs no authentication.
        #[key("tokens", "array of strings", "[]")]
        tokens: Option<Vec<String>>,
        /// File with more bearer tokens, one per line (blank lines and `#` comments ignored);
        /// re-read on reload (SIGHUP), so tokens can be rotated.
        #[key("token_file", "path", "none")]
        token_file: Option<String>,
        /// Users for HTTP Basic authentication (`Authorization: Basic base64(name:password)`), as
        /// IoTDB's REST API and its clients use them (e.g. `root`/`root`). Accepted on every push
        /// endpoint alongside the bearer tokens; with neither users nor tokens configured, push
        /// needs no authentication.
        #[key("user", "array of tables", "[]")]
        user: Option<Vec<RawHttpUser>>,
        /// File with more users, one `name:password` per line (the password is everything after
        /// the first `:`; blank lines and `#` comments ignored); re-read on reload (SIGHUP).
        #[key("user_file", "path", "none")]
        user_file: Option<String>,
        /// Largest request body accepted as sent (possibly gzip-compressed); larger bodies get
        /// 413.
        #[key("max_body_size", "size", "\"16MiB\"")]
        max_body_size: Option<Human>,
        /// Largest request body after gzip decompression; larger bodies get 413. At least
        /// `max_body_size` (which it follows by default when that is larger than 64MiB).
        #[key("max_decompressed_size", "size", "\"64MiB\"")]
        max_decompressed_size: Option<Human>,
        /// Time limit for one request, including waiting until its points are durable; an
        /// expired request gets 503 with `Retry-After`.
        #[key("request_timeout", "duration", "\"30s\"")]
        request_timeout: Option<Human>,
    }
}

config_table! {
    /// `[[http.user]]`: one user for HTTP Basic authentication.
    pub struct RawHttpUser {
        /// User name: not empty, no `:`, no whitespace or control characters.
        #[key("name", "string", "required")]
        name: Option<String>,
        /// Password: not empty, no control characters. Never logged or printed (`check-config`
        /// shows `<redacted>`).
        #[key("password", "string", "required")]
        password: Option<String>,
    }
}

config_table! {
    /// `[metrics]`: Prometheus metrics.
    pub struct RawMetrics {
        /// Whether `/metrics` is served.
        #[key("enabled", "boolean", "true")]
        enabled: Option<bool>,
        /// URL path of the metrics endpoint; starts with `/`.
        #[key("path", "string", "\"/metrics\"")]
        path: Option<String>,
        /// A separate address for the metrics endpoint. When not set, metrics are served on the
        /// `[http]` listener.
        #[key("listen", "socket address", "none (the [http] listener)")]
        listen: Option<String>,
    }
}

config_table! {
    /// `[log]`: logging.
    pub struct RawLog {
        /// Log filter: a level (`trace`, `debug`, `info`, `warn`, `error`, `off`) or
        /// comma-separated `target=level` directives such as `"info,tsfiled=debug"`. The
        /// `RUST_LOG` environment variable, when set, takes precedence.
        #[key("level", "string", "\"info\"")]
        level: Option<String>,
        /// `"text"` (human-readable lines) or `"json"` (one JSON object per line).
        #[key("format", "\"text\" | \"json\"", "\"text\"")]
        format: Option<String>,
        /// ANSI colours in text logs: `"auto"` (only when stderr is a terminal, so never in
        /// journald), `"never"` or `"always"`.
        #[key("color", "\"auto\" | \"never\" | \"always\"", "\"auto\"")]
        color: Option<String>,
    }
}

config_table! {
    /// `[[pipeline]]`: one pipeline.
    pub struct RawPipeline {
        /// Unique name of the pipeline: letters, digits, `_` and `-`. Used in metric labels and
        /// log lines.
        #[key("name", "string", "required")]
        name: Option<String>,
        /// Where and how this pipeline stores data.
        #[key("storage", "table", "(all keys default)")]
        storage: Option<RawStorage>,
        /// Schema rules, tried in order; the first whose pattern matches a series pins its type,
        /// encoding and compression.
        #[key("schema", "array of tables", "[]")]
        schema: Option<Vec<RawSchemaRule>>,
        /// Encodings and compression for series no rule matches, and the types given to
        /// untyped numbers.
        #[key("schema_defaults", "table", "(all keys default)")]
        schema_defaults: Option<RawSchemaDefaults>,
        /// The sources feeding this pipeline; at least one. Each has a `type`.
        #[key("source", "array of tables", "required (at least one)")]
        #[serde(skip_deserializing, skip_serializing_if = "Vec::is_empty")]
        source: Vec<RawSource>,
    }
}

config_table! {
    /// `[pipeline.storage]`: storage of one pipeline.
    pub struct RawStorage {
        /// IoTDB data directory of this pipeline: sealed files go to
        /// `<data_dir>/sequence/<storage group>/<partition>/` and `unsequence/`. No two
        /// pipelines may share one.
        #[key("data_dir", "path", "the top-level `data_dir`")]
        data_dir: Option<String>,
        /// IoTDB's storage-group path level: the storage group of `root.sg.d1.s1` is `root.sg`
        /// at level 1, `root.sg.d1` at level 2. One open file per storage group.
        #[key("storage_group_level", "integer", "1")]
        storage_group_level: Option<i64>,
        /// Unit of stored timestamps: `"ms"` (as IoTDB by default), `"us"`, `"ns"` or `"s"`.
        /// Incoming times in other units are converted; one that overflows is rejected.
        #[key("time_precision", "\"ms\" | \"us\" | \"ns\" | \"s\"", "\"ms\"")]
        time_precision: Option<String>,
        /// Memory for all in-memory tables of the pipeline together; when reached, the largest
        /// tables are flushed to their open files as chunk groups.
        #[key("memtable_budget", "size", "\"64MiB\"")]
        memtable_budget: Option<Human>,
        /// Size at which one storage group's in-memory table is flushed as chunk groups (IoTDB's
        /// `group_size_in_byte`); at most `memtable_budget` (which it follows by default when
        /// that is smaller than 16MiB).
        #[key("chunk_group_size", "size", "\"16MiB\"")]
        chunk_group_size: Option<Human>,
        /// Seal an open TsFile when it reaches this size.
        #[key("seal_size", "size", "\"256MiB\"")]
        seal_size: Option<Human>,
        /// Seal an open TsFile this long after it was created.
        #[key("seal_age", "duration", "\"1h\"")]
        seal_age: Option<Human>,
        /// Seal an open TsFile that has received no point for this long.
        #[key("seal_idle", "duration", "\"10m\"")]
        seal_idle: Option<Human>,
        /// IoTDB time partitioning: files are split at multiples of `time_partition_interval`
        /// and placed in the partition's directory. Off by default, as in IoTDB 0.10 (all data
        /// in partition 0).
        #[key("time_partitioning", "boolean", "false")]
        time_partitioning: Option<bool>,
        /// Length of a time partition (IoTDB's `partition_interval`); a whole number of
        /// `time_precision` units.
        #[key("time_partition_interval", "duration", "\"7d\"")]
        time_partition_interval: Option<Human>,
        /// Directory of the write-ahead log; no two pipelines may share one.
        #[key("wal_dir", "path", "<data_dir>/wal")]
        wal_dir: Option<String>,
        /// Group commit: the WAL is fsynced at most this long after the first point of a batch
        /// arrived (sources acknowledge only after that fsync). 0 = fsync every batch at once.
        #[key("wal_commit_interval", "duration", "\"10ms\"")]
        wal_commit_interval: Option<Human>,
        /// Group commit: fsync earlier once this many bytes wait for it.
        #[key("wal_commit_size", "size", "\"1MiB\"")]
        wal_commit_size: Option<Human>,
        /// Largest WAL (records not yet in sealed files). Near it, open files are sealed to trim
        /// the WAL; at it, sources are refused new points (HTTP 429/503, MQTT stops reading)
        /// until space is free again. At least `memtable_budget`; by default twice
        /// `memtable_budget` when that is larger than 512MiB.
        #[key("wal_max_size", "size", "\"1GiB\"")]
        wal_max_size: Option<Human>,
        /// Target size of one page in a chunk (TsFile `page_size_in_byte`).
        #[key("page_size", "size", "\"64KiB\"")]
        page_size: Option<Human>,
        /// Most points in one page (TsFile `max_number_of_points_in_page`).
        #[key("max_points_per_page", "integer", "1048576")]
        max_points_per_page: Option<i64>,
        /// Most children of one node of the file's metadata index (TsFile
        /// `max_degree_of_index_node`); at least 2.
        #[key("max_index_degree", "integer", "1024")]
        max_index_degree: Option<i64>,
        /// False-positive rate of the file's bloom filter over series paths (TsFile
        /// `bloom_filter_error_rate`), from 0.01 to 0.1.
        #[key("bloom_filter_error_rate", "float", "0.05")]
        bloom_filter_error_rate: Option<f64>,
        /// TsFile format of sealed files: `2` (format 000002, read by IoTDB 0.10; names
        /// `<time>-<version>-0.tsfile`) or `4` (TsFile v4 as Apache TsFile 2.x writes it, for
        /// IoTDB 2.x's `LOAD`; names `<time>-<version>-0-0.tsfile`, `.resource` in IoTDB 2.x's
        /// layout). With `4`, encodings are limited to those verified to round-trip (BOOLEAN,
        /// FLOAT, DOUBLE, TEXT: PLAIN; INT32, INT64: PLAIN, RLE, TS_2DIFF) and the
        /// `schema_defaults` not written become PLAIN for BOOLEAN, FLOAT and DOUBLE. The
        /// default stays 2 until v4 files are verified by loading them into an IoTDB 2.x server.
        #[key("format_version", "2 | 4", "2")]
        format_version: Option<i64>,
    }
}

config_table! {
    /// `[[pipeline.schema]]`: one schema rule.
    pub struct RawSchemaRule {
        /// IoTDB path pattern over full series paths: `*` is one node, `**` one or more, e.g.
        /// `"root.plant.*.temperature"`, `"root.**.status"`.
        #[key("pattern", "string", "required")]
        pattern: Option<String>,
        /// Data type of matching series: `"BOOLEAN"`, `"INT32"`, `"INT64"`, `"FLOAT"`,
        /// `"DOUBLE"` or `"TEXT"` (any case). A point whose value does not fit is rejected.
        #[key("type", "string", "required")]
        data_type: Option<String>,
        /// Encoding: `"PLAIN"`, `"RLE"`, `"TS_2DIFF"`, `"GORILLA"` or `"REGULAR"`, as TsFile 0.10
        /// allows for the type (TEXT: PLAIN; BOOLEAN: PLAIN, RLE; INT32/INT64: PLAIN, RLE,
        /// TS_2DIFF, REGULAR; FLOAT/DOUBLE: PLAIN, RLE, TS_2DIFF, GORILLA).
        #[key("encoding", "string", "the type's encoding in `schema_defaults`")]
        encoding: Option<String>,
        /// Compression: `"UNCOMPRESSED"` or `"SNAPPY"`.
        #[key("compression", "string", "`schema_defaults.compression`")]
        compression: Option<String>,
    }
}

config_table! {
    /// `[pipeline.schema_defaults]`: how series that no rule matches are typed and encoded.
    /// A series is typed on first sight and then frozen.
    pub struct RawSchemaDefaults {
        /// Encoding of BOOLEAN series.
        #[key("boolean", "encoding", "\"RLE\"")]
        boolean: Option<String>,
        /// Encoding of INT32 series.
        #[key("int32", "encoding", "\"TS_2DIFF\"")]
        int32: Option<String>,
        /// Encoding of INT64 series.
        #[key("int64", "encoding", "\"TS_2DIFF\"")]
        int64: Option<String>,
        /// Encoding of FLOAT series.
        #[key("float", "encoding", "\"GORILLA\"")]
        float: Option<String>,
        /// Encoding of DOUBLE series.
        #[key("double", "encoding", "\"GORILLA\"")]
        double: Option<String>,
        /// Encoding of TEXT series.
        #[key("text", "encoding", "\"PLAIN\"")]
        text: Option<String>,
        /// Compression of series no rule matches.
        #[key("compression", "compression", "\"SNAPPY\"")]
        compression: Option<String>,
        /// Type of a new series whose first value is an integer without a type suffix (JSON
        /// `12`, CSV `12`): `"INT64"`, `"INT32"`, `"DOUBLE"` or `"FLOAT"`.
        #[key("integer_type", "data type", "\"INT64\"")]
        integer_type: Option<String>,
        /// Type of a new series whose first value is a decimal number: `"DOUBLE"` or `"FLOAT"`.
        #[key("float_type", "data type", "\"DOUBLE\"")]
        float_type: Option<String>,
    }
}

/// `[[pipeline.source]]`: a source, by its `type`. Deserialized by dispatching on `type`
/// (see [`crate::validate`]); serialized as an internally tagged table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum RawSource {
    /// `type = "http"`
    Http(RawHttpSource),
    /// `type = "mqtt"`
    Mqtt(RawMqttSource),
    /// `type = "csv"`
    Csv(RawCsvSource),
}

config_table! {
    /// `type = "http"`: points pushed over the `[http]` listener.
    pub struct RawHttpSource {
        /// Name of the source, unique in its pipeline: letters, digits, `_` and `-`. Used in
        /// metric labels.
        #[key("name", "string", "the source type (\"http\")")]
        name: Option<String>,
        /// URL path prefix of this source's endpoints, e.g. `"/plant"` serves
        /// `/plant/ingest/iotdb-json`; empty serves them at the root. Two sources may not serve
        /// the same URL.
        #[key("base_path", "string", "\"\"")]
        base_path: Option<String>,
        /// Which endpoints to serve: `"iotdb-json"` (`POST /ingest/iotdb-json`, IoTDB's JSON
        /// records), `"line-protocol"` (`POST /write` and `POST /api/v2/write`, InfluxDB line
        /// protocol, as Telegraf's influxdb outputs send) and `"iotdb-rest"` (IoTDB's REST write
        /// API: `POST /rest/v2/insertTablet`, `/rest/v2/insertRecords`, `/rest/v1/insertTablet`;
        /// `GET /ping` then answers as IoTDB does).
        #[key("endpoints", "array of \"iotdb-json\" | \"line-protocol\" | \"iotdb-rest\"", "[\"iotdb-json\", \"line-protocol\", \"iotdb-rest\"]")]
        endpoints: Option<Vec<String>>,
        /// Line protocol: device path = `path_prefix` + `.` + `device_template`, the fields
        /// become measurements. May be `"root"` itself.
        #[key("path_prefix", "IoTDB path", "\"root.lp\"")]
        path_prefix: Option<String>,
        /// Line protocol: the device path below `path_prefix`. `{measurement}` is the line's
        /// measurement, `{<tag key>}` a tag's value (a line without that tag is rejected), and
        /// `{tags}` (a whole node) the values of all other tags in tag-key order, one node each.
        #[key("device_template", "template", "\"{measurement}.{tags}\"")]
        device_template: Option<String>,
        /// Line protocol: unit of timestamps when a request has no `precision` parameter:
        /// `"ns"`, `"us"`, `"ms"` or `"s"`.
        #[key("precision", "\"ns\" | \"us\" | \"ms\" | \"s\"", "\"ns\"")]
        precision: Option<String>,
    }
}

config_table! {
    /// `type = "mqtt"`: subscription to an MQTT broker.
    pub struct RawMqttSource {
        /// Name of the source, unique in its pipeline.
        #[key("name", "string", "the source type (\"mqtt\")")]
        name: Option<String>,
        /// Broker URL: `mqtt://host[:port]` (default port 1883) or `mqtts://host[:port]` (TLS,
        /// default port 8883).
        #[key("url", "URL", "required")]
        url: Option<String>,
        /// MQTT protocol version: `"v3"` (3.1.1) or `"v5"`.
        #[key("protocol", "\"v3\" | \"v5\"", "\"v3\"")]
        protocol: Option<String>,
        /// Client identifier. Required with a persistent session (`clean_session = false`,
        /// needed for QoS 1 and 2): it must be stable across restarts and unique per daemon, or
        /// the broker cannot redeliver what was not acknowledged.
        #[key("client_id", "string", "none")]
        client_id: Option<String>,
        /// User name for the broker.
        #[key("username", "string", "none")]
        username: Option<String>,
        /// Password (prefer `password_file`).
        #[key("password", "string", "none")]
        password: Option<String>,
        /// File holding the password (trailing newline ignored), e.g. a systemd credential under
        /// `$CREDENTIALS_DIRECTORY`.
        #[key("password_file", "path", "none")]
        password_file: Option<String>,
        /// PEM file of CA certificates to trust for `mqtts://` (default: the system's roots).
        #[key("ca_file", "path", "none")]
        ca_file: Option<String>,
        /// PEM client certificate for TLS client authentication; needs `client_key_file`.
        #[key("client_cert_file", "path", "none")]
        client_cert_file: Option<String>,
        /// PEM private key of `client_cert_file`.
        #[key("client_key_file", "path", "none")]
        client_key_file: Option<String>,
        /// MQTT keep-alive interval, whole seconds from 1s to 65535s.
        #[key("keep_alive", "duration", "\"60s\"")]
        keep_alive: Option<Human>,
        /// `false` keeps a persistent session at the broker (MQTT 5: clean start off), so
        /// messages published while the daemon is away are kept for it. Must be `false` when a
        /// topic has QoS 1 or 2.
        #[key("clean_session", "boolean", "false")]
        clean_session: Option<bool>,
        /// MQTT 5 only: how long the broker keeps the session after a disconnect; must be more
        /// than 0 for QoS 1 and 2. Whole seconds.
        #[key("session_expiry", "duration", "\"1d\"")]
        session_expiry: Option<Human>,
        /// Shared-subscription group: subscribe as `$share/<group>/<filter>` so several daemons
        /// with the same group split one stream (each with its own `client_id`). An MQTT 5
        /// feature; Mosquitto and EMQX also accept it from 3.1.1 clients.
        #[key("shared_group", "string", "none")]
        shared_group: Option<String>,
        /// Largest message payload accepted; a larger one is dead-lettered and acknowledged.
        #[key("max_payload_size", "size", "\"1MiB\"")]
        max_payload_size: Option<Human>,
        /// Most messages received but not yet durable and acknowledged; beyond it the source
        /// stops reading from the socket (backpressure).
        #[key("max_inflight", "integer", "1000")]
        max_inflight: Option<i64>,
        /// Reconnect backoff: doubles from 1s with jitter, capped at this.
        #[key("reconnect_max_backoff", "duration", "\"30s\"")]
        reconnect_max_backoff: Option<Human>,
        /// File receiving messages that cannot be parsed (one JSON line each: time, topic,
        /// reason, payload), which are then acknowledged so they never stall the stream.
        #[key("dead_letter_file", "path", "<storage data_dir>/dead-letter/<source name>.jsonl")]
        dead_letter_file: Option<String>,
        /// The subscriptions; at least one.
        #[key("topic", "array of tables", "required (at least one)")]
        topic: Option<Vec<RawTopic>>,
    }
}

config_table! {
    /// `[[pipeline.source.topic]]`: one topic filter of an MQTT source.
    pub struct RawTopic {
        /// MQTT topic filter, e.g. `"plant/#"` or `"sensors/+/data"`.
        #[key("filter", "string", "required")]
        filter: Option<String>,
        /// Subscription QoS: 0, 1 or 2. QoS 1 and 2 are acknowledged to the broker only once
        /// the points are durable, and need a persistent session.
        #[key("qos", "integer", "1")]
        qos: Option<i64>,
        /// Payload format: `"iotdb-json"` (IoTDB's JSON records), `"line"` (InfluxDB line
        /// protocol) or `"value"` (one plain value; device and measurement come from the topic
        /// through `topic_template`, the time is the arrival time).
        #[key("payload", "\"iotdb-json\" | \"line\" | \"value\"", "\"iotdb-json\"")]
        payload: Option<String>,
        /// For `payload = "value"` (required there): how the topic names the series, e.g.
        /// `"plant/{device}/{measurement}"`: `{device}` levels (one or more) form the device
        /// path below `path_prefix`, `{measurement}` (once) is the measurement, `+` skips a
        /// level, a final `#` skips the rest.
        #[key("topic_template", "string", "none")]
        topic_template: Option<String>,
        /// For `payload = "value"` and `"line"`: path prefix of the device paths. It may be
        /// `"root"` itself for `"line"`, and for `"value"` when the topic template has
        /// `{device}` levels.
        #[key("path_prefix", "IoTDB path", "\"root.mqtt\"")]
        path_prefix: Option<String>,
        /// For `payload = "line"`: device path below `path_prefix`, as in the http source.
        #[key("device_template", "template", "\"{measurement}.{tags}\"")]
        device_template: Option<String>,
        /// For `payload = "line"`: unit of line-protocol timestamps.
        #[key("precision", "\"ns\" | \"us\" | \"ms\" | \"s\"", "\"ns\"")]
        precision: Option<String>,
    }
}

config_table! {
    /// `type = "csv"`: CSV files dropped into watched directories.
    pub struct RawCsvSource {
        /// Name of the source, unique in its pipeline.
        #[key("name", "string", "the source type (\"csv\")")]
        name: Option<String>,
        /// Directories to watch; at least one. Files are moved out of them, so the daemon needs
        /// write access.
        #[key("directories", "array of paths", "required")]
        directories: Option<Vec<String>>,
        /// File-name globs to take (`*`, `?`, `[a-z]`); `.gz` files are decompressed.
        #[key("patterns", "array of globs", "[\"*.csv\", \"*.csv.gz\"]")]
        patterns: Option<Vec<String>>,
        /// File-name globs never taken, even if they match `patterns` (files still being
        /// written, hidden files).
        #[key("ignore", "array of globs", "[\"*.tmp\", \"*.part\", \".*\"]")]
        ignore: Option<Vec<String>>,
        /// Watch subdirectories too (never `done_dir` and `error_dir`).
        #[key("recursive", "boolean", "false")]
        recursive: Option<bool>,
        /// A file is complete once its size and mtime have not changed for this long (or when
        /// it was closed after writing, or renamed into the directory).
        #[key("settle", "duration", "\"2s\"")]
        settle: Option<Human>,
        /// `"iotdb-wide"` (IoTDB export: `Time,root.sg.d1.s1,...`), `"iotdb-device"`
        /// (`Time,Device,s1,s2,...`) — both with optional `(TYPE)` suffixes such as `s1(INT32)`,
        /// which declare the series' type — or `"generic"` (columns as configured).
        #[key("format", "\"iotdb-wide\" | \"iotdb-device\" | \"generic\"", "\"iotdb-wide\"")]
        format: Option<String>,
        /// Timestamp format: `"auto"` (integers are epoch milliseconds, otherwise RFC 3339),
        /// `"epoch_s"`, `"epoch_ms"`, `"epoch_us"`, `"epoch_ns"`, `"rfc3339"` or `"strftime"`
        /// (with `time_pattern`).
        #[key("time_format", "string", "\"auto\"")]
        time_format: Option<String>,
        /// strftime pattern for `time_format = "strftime"`, e.g. `"%Y-%m-%d %H:%M:%S%.f"`.
        #[key("time_pattern", "string", "none (required for strftime)")]
        time_pattern: Option<String>,
        /// IANA time zone for times without an offset, e.g. `"Europe/Berlin"`.
        #[key("timezone", "string", "\"UTC\"")]
        timezone: Option<String>,
        /// A local time that occurs twice (DST ends): `"earliest"`, `"latest"` or `"reject"`
        /// (the row goes to the error report). Times in a DST gap are always rejected.
        #[key("ambiguous_time", "\"earliest\" | \"latest\" | \"reject\"", "\"earliest\"")]
        ambiguous_time: Option<String>,
        /// Field delimiter: one ASCII character, e.g. `","`, `";"`, `"\t"`.
        #[key("delimiter", "string", "\",\"")]
        delimiter: Option<String>,
        /// Lines skipped at the start of each file, before the header.
        #[key("skip_rows", "integer", "0")]
        skip_rows: Option<i64>,
        /// Generic format: header rows after the skipped rows; the first names the columns,
        /// the others are ignored. 0 = no header (columns by number only).
        #[key("header_rows", "integer", "1")]
        header_rows: Option<i64>,
        /// Generic format: the time column, by header name or 1-based number.
        #[key("time_column", "string | integer", "1")]
        time_column: Option<RawColumn>,
        /// Generic format: the column holding the device (appended to `path_prefix` when set,
        /// else a full path). Give this or `device_template`.
        #[key("device_column", "string | integer", "none")]
        device_column: Option<RawColumn>,
        /// Generic format: the device path for every row, with `{file_stem}` (file name without
        /// extensions) and `{dir}` (name of the file's directory). Give this or `device_column`.
        #[key("device_template", "template", "none")]
        device_template: Option<String>,
        /// Generic format with `device_column`: path prefix of the device column's values, a
        /// device path such as `"root.plant"` (not `"root"` alone).
        #[key("path_prefix", "IoTDB path", "none")]
        path_prefix: Option<String>,
        /// Generic format: the value columns (names or numbers); each header name becomes a
        /// measurement. Empty = every column except the time and device columns.
        #[key("value_columns", "array of strings | integers", "[]")]
        value_columns: Option<Vec<RawColumn>>,
        /// Where fully ingested files are moved; a relative path is relative to the watched
        /// directory. Must be on the same filesystem.
        #[key("done_dir", "path", "\"done\"")]
        done_dir: Option<String>,
        /// Where files with bad rows are moved, with a report listing each bad line; relative
        /// to the watched directory when relative.
        #[key("error_dir", "path", "\"error\"")]
        error_dir: Option<String>,
        /// What happens to a fully ingested file: `"move"` (to `done_dir`) or `"delete"`.
        #[key("on_success", "\"move\" | \"delete\"", "\"move\"")]
        on_success: Option<String>,
        /// Most files read at the same time.
        #[key("max_concurrent_files", "integer", "2")]
        max_concurrent_files: Option<i64>,
        /// Full rescan of the directories at this interval (file events can be lost).
        #[key("rescan_interval", "duration", "\"30s\"")]
        rescan_interval: Option<Human>,
    }
}
