//! Stage one: the TOML document as serde structures, close to what was written.
//!
//! Every table refuses unknown keys. Every key is optional here (`None` = not written) so that
//! stage two ([`crate::validate`]) can apply defaults, check values and report all problems
//! with their key paths. Each field is declared with its TOML key, type, default and meaning
//! through [`config_table!`], which also records them for [`crate::reference`], so the
//! documentation cannot drift from the structures.

use serde::Serialize;

pub use tsfiled_core::Human;
use tsfiled_core::{config_table, Compression, DataType, EncodingName, Named};

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
        /// tables are flushed to their open files as chunk groups. A quarter of it (at least
        /// 1MiB) bounds the batches waiting for the engine (intake waits past it); an open file
        /// is sealed once the metadata it keeps in memory reaches a quarter (at least 4MiB), or
        /// that of its series a thirty-second (at least 2MiB; 5,242 series by default).
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
        /// `memtable_budget` when that is larger than 512MiB. Segment files count in full
        /// (64MiB each, or an eighth of this limit if smaller) from the moment the log opens
        /// one. Besides, up to two emptied segments are kept in the directory for reuse
        /// (`wal-*.spare`, not counted in this limit): the log overwrites them instead of
        /// growing new files, so that its fsyncs have no block allocation to make durable.
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
        /// layout). The format decides the encodings and compressions allowed (see
        /// `schema.encoding`) and what `GORILLA` means: TsFile 0.10's GORILLA in `2`, TsFile
        /// 2.x's GORILLA in `4` (as IoTDB 2.x names it). With `4`, the `boolean` default of
        /// `schema_defaults` (RLE, not written in v4) becomes PLAIN when not written.
        #[key("format_version", "2 | 4", "2")]
        format_version: Option<i64>,
        /// How line protocol (every source's line-protocol input) is stored: `"tree"` (a
        /// device path per line from the source's `path_prefix` and `device_template`, fields
        /// as measurements) or `"table"` (IoTDB 2.x's table model, as IoTDB 2.x's MQTT line
        /// format stores it: the source's `path_prefix` `root.<database>` names the database,
        /// a line's measurement is a table, its tags TAG columns (STRING; the TAG order is the
        /// order tags were first seen, kept across restarts; a missing tag is null; a tag value
        /// `null` is null), its fields FIELD columns (`"..."` TEXT, `t`/`false`... BOOLEAN,
        /// `1i`/`1u` INT64, other numbers `schema_defaults.float_type`); table and column
        /// names are stored lower case. Needs `format_version = 4`; the source's
        /// `device_template` is not taken. See the README, "Loading into IoTDB 2.x".
        #[key("line_protocol_model", "\"tree\" | \"table\"", "\"tree\"")]
        line_protocol_model: Option<String>,
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
        data_type: Option<Named<DataType>>,
        /// Encoding, as the pipeline's `storage.format_version` allows for the type. Format
        /// 2 (TsFile 0.10): TEXT: PLAIN; BOOLEAN: PLAIN, RLE; INT32/INT64: PLAIN, RLE,
        /// TS_2DIFF, REGULAR; FLOAT/DOUBLE: PLAIN, RLE, TS_2DIFF, GORILLA. Format 4 (TsFile
        /// 2.x names; `GORILLA` is TsFile 2.x's GORILLA, its code 8, not 0.10's, which TsFile
        /// 2.x calls `GORILLA_V1`): TEXT: PLAIN, DICTIONARY; BOOLEAN: PLAIN; INT32/INT64:
        /// PLAIN, RLE, TS_2DIFF, GORILLA, ZIGZAG, CHIMP, SPRINTZ, RLBE; FLOAT/DOUBLE: PLAIN,
        /// TS_2DIFF, GORILLA, CHIMP, SPRINTZ, RLBE. FLOAT/DOUBLE under RLE or TS_2DIFF keep
        /// 2 decimal places (as in TsFile); GORILLA, CHIMP and SPRINTZ cannot store NaN (nor
        /// the INT32/INT64 minimum, their end marker): such a point is rejected.
        #[key("encoding", "string", "the type's encoding in `schema_defaults`")]
        encoding: Option<Named<EncodingName>>,
        /// Compression: `"UNCOMPRESSED"` or `"SNAPPY"`; with `storage.format_version = 4` also
        /// `"GZIP"`, `"LZ4"` or `"ZSTD"`.
        #[key("compression", "string", "`schema_defaults.compression`")]
        compression: Option<Named<Compression>>,
    }
}

config_table! {
    /// `[pipeline.schema_defaults]`: how series that no rule matches are typed and encoded.
    /// A series is typed on first sight and then frozen.
    pub struct RawSchemaDefaults {
        /// Encoding of BOOLEAN series.
        #[key("boolean", "encoding", "\"RLE\"")]
        boolean: Option<Named<EncodingName>>,
        /// Encoding of INT32 series.
        #[key("int32", "encoding", "\"TS_2DIFF\"")]
        int32: Option<Named<EncodingName>>,
        /// Encoding of INT64 series.
        #[key("int64", "encoding", "\"TS_2DIFF\"")]
        int64: Option<Named<EncodingName>>,
        /// Encoding of FLOAT series.
        #[key("float", "encoding", "\"GORILLA\"")]
        float: Option<Named<EncodingName>>,
        /// Encoding of DOUBLE series.
        #[key("double", "encoding", "\"GORILLA\"")]
        double: Option<Named<EncodingName>>,
        /// Encoding of TEXT series.
        #[key("text", "encoding", "\"PLAIN\"")]
        text: Option<Named<EncodingName>>,
        /// Compression of series no rule matches.
        #[key("compression", "compression", "\"SNAPPY\"")]
        compression: Option<Named<Compression>>,
        /// With `storage.format_version = 2`: a new series no rule matches starts with the
        /// encoding and compression above and, at its first flush of at least 256 points,
        /// gets whichever of its type's lossless format-2 encodings (INT32/INT64: TS_2DIFF,
        /// RLE, PLAIN; FLOAT/DOUBLE: GORILLA, PLAIN; BOOLEAN: RLE, PLAIN), each SNAPPY or
        /// UNCOMPRESSED, stores those points (up to 16384) in the fewest bytes; the choice is
        /// kept in the schema journal. `false` keeps the encodings and compression above.
        #[key("choose_encoding", "boolean", "true")]
        choose_encoding: Option<bool>,
        /// Type of a new series whose first value is an integer without a type suffix (JSON
        /// `12`, CSV `12`): `"INT64"`, `"INT32"`, `"DOUBLE"` or `"FLOAT"`.
        #[key("integer_type", "data type", "\"INT64\"")]
        integer_type: Option<Named<DataType>>,
        /// Type of a new series whose first value is a decimal number: `"DOUBLE"` or `"FLOAT"`.
        #[key("float_type", "data type", "\"DOUBLE\"")]
        float_type: Option<Named<DataType>>,
    }
}

/// `[[pipeline.source]]`: a source table as written, of the type its `type` key names (see
/// [`tsfiled_connectors::registry`]); serialized as a table whose first key is `type`.
#[derive(Debug, Clone)]
pub struct RawSource(pub Box<dyn tsfiled_connectors::source::RawSource>);

impl PartialEq for RawSource {
    fn eq(&self, other: &Self) -> bool {
        self.0.same(other.0.as_ref())
    }
}

impl Serialize for RawSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let table = self.0.to_toml().map_err(S::Error::custom)?;
        let mut map = s.serialize_map(Some(table.len() + 1))?;
        map.serialize_entry("type", self.0.type_name())?;
        for (k, v) in &table {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
