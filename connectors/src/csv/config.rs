//! The configuration of a `csv` source: its `[[pipeline.source]]` table, validation, and the
//! validated settings (formats, columns, time formats, file handling).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tsfiled_core::path::check_prefix;
use tsfiled_core::{
    check_strftime, check_timezone, config_table, same_path, Glob, Human, KeyPath, Template,
    Validator,
};

use crate::source::{SourceEnv, SourceTable};

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
    /// `type = "csv"`: CSV files dropped into watched directories.
    pub struct CsvTable {
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
/// A CSV column reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnRef {
    /// By header name (exact match with the header cell after trimming ASCII whitespace).
    Name(String),
    /// By 0-based position (written 1-based in the configuration).
    Index(usize),
}

/// Where the device of a generic CSV row comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsvDevice {
    /// From a column, optionally below a prefix (`prefix.cell`).
    Column {
        /// The column.
        column: ColumnRef,
        /// Prefix prepended with a `.`, e.g. `root.plant`.
        path_prefix: Option<String>,
    },
    /// A template such as `root.plc.{file_stem}` ([`Template::parse_csv_device`]):
    /// `{file_stem}` is the file name without `.gz` and its last extension, `{dir}` the name
    /// of the file's directory; both are sanitized into path nodes (`line-3.csv.gz` →
    /// `line_3`).
    Template(Template),
}

/// Options of the generic CSV format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericCsv {
    /// Header rows after the skipped rows; the first names the columns, others are ignored.
    /// With 0, value columns are named `col1`, `col2`, … (1-based position).
    pub header_rows: u32,
    /// Time column.
    pub time_column: ColumnRef,
    /// Device.
    pub device: CsvDevice,
    /// Value columns; empty = every column but the time and device columns.
    pub value_columns: Vec<ColumnRef>,
}

/// CSV file format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsvFormat {
    /// IoTDB export, aligned by time: `Time,root.sg.d1.s1,root.sg.d1.s2(INT32),...`.
    IotdbWide,
    /// IoTDB export, aligned by device: `Time,Device,s1,s2(DOUBLE),...`.
    IotdbDevice,
    /// As configured.
    Generic(GenericCsv),
}

/// Timestamp format of CSV rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeFormat {
    /// An integer is epoch milliseconds; anything else is RFC 3339, or an ISO 8601 date-time
    /// without offset (`2024-03-01 12:00:00[.fff]`, `T` or space) read in the time zone.
    Auto,
    /// Epoch seconds (an optional decimal fraction is kept exactly, down to the precision).
    EpochS,
    /// Epoch milliseconds (optional decimal fraction).
    EpochMs,
    /// Epoch microseconds (optional decimal fraction).
    EpochUs,
    /// Epoch nanoseconds.
    EpochNs,
    /// RFC 3339 (`2024-03-01T12:00:00.5+01:00`, `Z`, `T` or space).
    Rfc3339,
    /// A strftime pattern (chrono syntax; the configuration checks it with
    /// [`check_strftime`](crate::check_strftime)). Without `%z`/`%:z`/`%s` in the pattern the
    /// time is local to the time zone; a pattern without a time of day means midnight.
    Strftime(String),
}

impl TimeFormat {
    /// The configuration name.
    pub fn as_str(&self) -> &'static str {
        match self {
            TimeFormat::Auto => "auto",
            TimeFormat::EpochS => "epoch_s",
            TimeFormat::EpochMs => "epoch_ms",
            TimeFormat::EpochUs => "epoch_us",
            TimeFormat::EpochNs => "epoch_ns",
            TimeFormat::Rfc3339 => "rfc3339",
            TimeFormat::Strftime(_) => "strftime",
        }
    }
}

/// Resolution of local times that occur twice (the hour repeated when DST ends).
/// Local times that do not exist (skipped when DST starts) are always rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmbiguousTime {
    /// The first occurrence (the earlier instant, still in DST).
    Earliest,
    /// The second occurrence (the later instant).
    Latest,
    /// Reject the row.
    Reject,
}

/// What happens to a file whose rows were all ingested without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSuccess {
    /// Move it into the done directory.
    Move,
    /// Delete it.
    Delete,
}

/// `type = "csv"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvSourceConfig {
    /// Watched directories.
    pub directories: Vec<PathBuf>,
    /// Globs taken.
    pub patterns: Vec<Glob>,
    /// Globs ignored.
    pub ignore: Vec<Glob>,
    /// Watch subdirectories.
    pub recursive: bool,
    /// Stability time.
    pub settle: Duration,
    /// How rows are read (the parser's keys).
    pub rows: CsvRows,
    /// Done directory (relative: per watched directory).
    pub done_dir: PathBuf,
    /// Error directory (relative: per watched directory).
    pub error_dir: PathBuf,
    /// Move or delete.
    pub on_success: OnSuccess,
    /// Concurrency limit.
    pub max_concurrent_files: u32,
    /// Periodic rescan.
    pub rescan_interval: Duration,
}

/// How the rows of a CSV file are read: the keys of a `csv` source that the row parser takes
/// (also for offline imports, through [`CsvParseOptions`](super::CsvParseOptions)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvRows {
    /// File format.
    pub format: CsvFormat,
    /// Timestamp format.
    pub time_format: TimeFormat,
    /// IANA time zone for times without an offset (`UTC`, `Europe/Berlin`; form checked by
    /// validation, existence by `check`).
    pub timezone: String,
    /// DST ambiguity rule.
    pub ambiguous_time: AmbiguousTime,
    /// Field delimiter (one ASCII byte, not `"`, CR or LF).
    pub delimiter: u8,
    /// Lines skipped before the header (physical lines; quotes are not interpreted).
    pub skip_rows: u32,
}

impl Default for CsvRows {
    /// The keys' defaults.
    fn default() -> Self {
        CsvRows {
            format: CsvFormat::IotdbWide,
            time_format: TimeFormat::Auto,
            timezone: "UTC".to_owned(),
            ambiguous_time: AmbiguousTime::Earliest,
            delimiter: b',',
            skip_rows: 0,
        }
    }
}

impl CsvSourceConfig {
    /// The default of `patterns`.
    pub const DEFAULT_PATTERNS: &'static [&'static str] = &["*.csv", "*.csv.gz"];
    /// The default of `ignore`.
    pub const DEFAULT_IGNORE: &'static [&'static str] = &["*.tmp", "*.part", ".*"];

    /// Whether a file name is taken: matches a pattern and no ignore glob.
    pub fn accepts(&self, file_name: &str) -> bool {
        self.patterns.iter().any(|g| g.matches(file_name))
            && !self.ignore.iter().any(|g| g.matches(file_name))
    }

    /// The done directory for a watched directory.
    pub fn done_dir_for(&self, watched: &std::path::Path) -> PathBuf {
        watched.join(&self.done_dir)
    }

    /// The error directory for a watched directory.
    pub fn error_dir_for(&self, watched: &std::path::Path) -> PathBuf {
        watched.join(&self.error_dir)
    }
}

impl SourceTable for CsvTable {
    const TYPE: &'static str = "csv";
    const SUMMARY: &'static str = "CSV files dropped into watched directories";
    const EXAMPLE: &'static str = "directories = [\"/srv/drop\"]\n";
    type Settings = CsvSourceConfig;

    fn validate(
        &self,
        v: &mut Validator<'_>,
        at: &KeyPath,
        _env: &SourceEnv<'_>,
    ) -> Option<CsvSourceConfig> {
        validate_csv(v, self, at)
    }
}

fn column(
    v: &mut Validator<'_>,
    c: &RawColumn,
    path: &KeyPath,
    header_rows: u32,
) -> Option<ColumnRef> {
    match c {
        RawColumn::Index(n) if *n >= 1 => usize::try_from(*n - 1).ok().map(ColumnRef::Index),
        RawColumn::Index(n) => {
            v.err(path, format!("column numbers start at 1, found {n}"));
            None
        }
        RawColumn::Name(s) if s.is_empty() => {
            v.err(path, "empty column name");
            None
        }
        RawColumn::Name(s) if header_rows == 0 => {
            v.err(
                path,
                format!("column \"{s}\" is named but header_rows = 0; use a column number or a header row"),
            );
            None
        }
        RawColumn::Name(s) => Some(ColumnRef::Name(s.clone())),
    }
}

fn validate_csv(v: &mut Validator<'_>, c: &CsvTable, sp: &KeyPath) -> Option<CsvSourceConfig> {
    let before = v.diags.len();
    let mut directories: Vec<PathBuf> = Vec::new();
    let need = "at least one directory is required";
    let listed = v.nonempty_list(&c.directories, sp, "directories", need);
    for (i, d) in listed.unwrap_or_default().iter().enumerate() {
        let p = sp.key("directories").index(i);
        if d.trim().is_empty() {
            v.err(&p, "must not be empty");
        } else if directories.iter().any(|x| same_path(x, Path::new(d))) {
            v.err(&p, format!("directory {d} is listed twice"));
        } else {
            directories.push(PathBuf::from(d));
        }
    }
    let globs = |v: &mut Validator<'_>,
                 list: &Option<Vec<String>>,
                 key: &str,
                 default: &[&str],
                 nonempty: bool| {
        let list: Vec<String> = list
            .clone()
            .unwrap_or_else(|| default.iter().map(|s| s.to_string()).collect());
        if nonempty && list.is_empty() {
            v.err(&sp.key(key), "at least one file pattern is required");
        }
        list.iter()
            .enumerate()
            .filter_map(|(i, g)| {
                Glob::parse(g)
                    .map_err(|e| v.err(&sp.key(key).index(i), e))
                    .ok()
            })
            .collect::<Vec<_>>()
    };
    let patterns = globs(
        v,
        &c.patterns,
        "patterns",
        CsvSourceConfig::DEFAULT_PATTERNS,
        true,
    );
    let ignore = globs(
        v,
        &c.ignore,
        "ignore",
        CsvSourceConfig::DEFAULT_IGNORE,
        false,
    );
    let recursive = c.recursive.unwrap_or(false);
    let settle = v.positive_duration(&c.settle, &sp.key("settle"), Duration::from_secs(2));

    #[derive(Clone, Copy, PartialEq)]
    enum F {
        Wide,
        Device,
        Generic,
    }
    let f = v.choice(
        &c.format,
        &sp.key("format"),
        F::Wide,
        &[
            ("iotdb-wide", F::Wide),
            ("iotdb-device", F::Device),
            ("generic", F::Generic),
        ],
    );
    let format = if f == F::Generic {
        let header_rows = v.int(&c.header_rows, &sp.key("header_rows"), 1, 0, 1000) as u32;
        let time_column = match &c.time_column {
            None => Some(ColumnRef::Index(0)),
            Some(col) => column(v, col, &sp.key("time_column"), header_rows),
        };
        let device = match (&c.device_column, &c.device_template) {
            (Some(_), Some(_)) => {
                v.err_key(
                    &sp.key("device_template"),
                    "give either device_column or device_template, not both",
                );
                None
            }
            (None, None) => {
                v.err(
                    &sp.key("device_column"),
                    "the generic format needs device_column or device_template",
                );
                None
            }
            (Some(col), None) => {
                let path_prefix = c.path_prefix.clone();
                if let Some(p) = &path_prefix {
                    if let Err(e) = check_prefix(p, false) {
                        v.err(&sp.key("path_prefix"), e);
                    }
                }
                column(v, col, &sp.key("device_column"), header_rows).map(|column| {
                    CsvDevice::Column {
                        column,
                        path_prefix,
                    }
                })
            }
            (None, Some(t)) => {
                v.not_with(
                    c.path_prefix.is_some(),
                    &sp.key("path_prefix"),
                    "with device_template (write the full path in the template)",
                );
                match Template::parse_csv_device(t) {
                    Ok(tpl) => Some(CsvDevice::Template(tpl)),
                    Err(e) => {
                        v.err(&sp.key("device_template"), e);
                        None
                    }
                }
            }
        };
        let mut value_columns: Vec<ColumnRef> = Vec::new();
        for (i, col) in c
            .value_columns
            .clone()
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let p = sp.key("value_columns").index(i);
            if let Some(cr) = column(v, col, &p, header_rows) {
                if value_columns.contains(&cr) {
                    v.err(&p, "column listed twice");
                } else if Some(&cr) == time_column.as_ref() {
                    v.err(&p, "this is the time column");
                } else if matches!(&device, Some(CsvDevice::Column { column, .. }) if *column == cr)
                {
                    v.err(&p, "this is the device column");
                } else {
                    value_columns.push(cr);
                }
            }
        }
        if let (
            Some(ColumnRef::Index(a)),
            Some(CsvDevice::Column {
                column: ColumnRef::Index(b),
                ..
            }),
        ) = (&time_column, &device)
        {
            if a == b {
                v.err(
                    &sp.key("device_column"),
                    "the device column is also the time column",
                );
            }
        }
        match (time_column, device) {
            (Some(time_column), Some(device)) => CsvFormat::Generic(GenericCsv {
                header_rows,
                time_column,
                device,
                value_columns,
            }),
            _ => CsvFormat::IotdbWide,
        }
    } else {
        let why = "unless format = \"generic\"";
        v.not_with(c.header_rows.is_some(), &sp.key("header_rows"), why);
        v.not_with(c.time_column.is_some(), &sp.key("time_column"), why);
        v.not_with(c.device_column.is_some(), &sp.key("device_column"), why);
        v.not_with(c.device_template.is_some(), &sp.key("device_template"), why);
        v.not_with(c.path_prefix.is_some(), &sp.key("path_prefix"), why);
        v.not_with(c.value_columns.is_some(), &sp.key("value_columns"), why);
        if f == F::Wide {
            CsvFormat::IotdbWide
        } else {
            CsvFormat::IotdbDevice
        }
    };

    #[derive(Clone, Copy, PartialEq)]
    enum Tf {
        Auto,
        S,
        Ms,
        Us,
        Ns,
        Rfc,
        Strf,
    }
    let tf = v.choice(
        &c.time_format,
        &sp.key("time_format"),
        Tf::Auto,
        &[
            ("auto", Tf::Auto),
            ("epoch_s", Tf::S),
            ("epoch_ms", Tf::Ms),
            ("epoch_us", Tf::Us),
            ("epoch_ns", Tf::Ns),
            ("rfc3339", Tf::Rfc),
            ("strftime", Tf::Strf),
        ],
    );
    let time_format = match tf {
        Tf::Auto => TimeFormat::Auto,
        Tf::S => TimeFormat::EpochS,
        Tf::Ms => TimeFormat::EpochMs,
        Tf::Us => TimeFormat::EpochUs,
        Tf::Ns => TimeFormat::EpochNs,
        Tf::Rfc => TimeFormat::Rfc3339,
        Tf::Strf => match &c.time_pattern {
            None => {
                v.err(
                    &sp.key("time_pattern"),
                    "time_format = \"strftime\" needs time_pattern, e.g. \"%Y-%m-%d %H:%M:%S\"",
                );
                TimeFormat::Auto
            }
            Some(p) => match check_strftime(p) {
                Ok(()) => TimeFormat::Strftime(p.clone()),
                Err(e) => {
                    v.err(&sp.key("time_pattern"), e);
                    TimeFormat::Auto
                }
            },
        },
    };
    v.not_with(
        tf != Tf::Strf && c.time_pattern.is_some(),
        &sp.key("time_pattern"),
        "unless time_format = \"strftime\"",
    );
    let defaults = CsvRows::default();
    let timezone = c.timezone.clone().unwrap_or(defaults.timezone);
    if let Err(e) = check_timezone(&timezone) {
        v.err(&sp.key("timezone"), e);
    }
    let ambiguous_time = v.choice(
        &c.ambiguous_time,
        &sp.key("ambiguous_time"),
        defaults.ambiguous_time,
        &[
            ("earliest", AmbiguousTime::Earliest),
            ("latest", AmbiguousTime::Latest),
            ("reject", AmbiguousTime::Reject),
        ],
    );
    let delimiter = match c.delimiter.as_deref() {
        None => defaults.delimiter,
        Some(d) => {
            let b = d.as_bytes();
            if b.len() == 1 && b[0].is_ascii() && !matches!(b[0], b'"' | b'\n' | b'\r') {
                b[0]
            } else {
                v.err(
                    &sp.key("delimiter"),
                    format!("{d:?} is not one ASCII character other than a quote or line break"),
                );
                defaults.delimiter
            }
        }
    };
    let skip_rows = v.int(
        &c.skip_rows,
        &sp.key("skip_rows"),
        i64::from(defaults.skip_rows),
        0,
        i64::from(u32::MAX),
    ) as u32;
    let on_success = v.choice(
        &c.on_success,
        &sp.key("on_success"),
        OnSuccess::Move,
        &[("move", OnSuccess::Move), ("delete", OnSuccess::Delete)],
    );
    v.not_with(
        on_success == OnSuccess::Delete && c.done_dir.is_some(),
        &sp.key("done_dir"),
        "with on_success = \"delete\"",
    );
    let done_dir = v.path_or(&c.done_dir, &sp.key("done_dir"), PathBuf::from("done"));
    let error_dir = v.path_or(&c.error_dir, &sp.key("error_dir"), PathBuf::from("error"));
    if on_success == OnSuccess::Move && same_path(&done_dir, &error_dir) {
        v.err(&sp.key("error_dir"), "error_dir must differ from done_dir");
    }
    let max_concurrent_files = v.int(
        &c.max_concurrent_files,
        &sp.key("max_concurrent_files"),
        2,
        1,
        1024,
    ) as u32;
    let rescan_interval = v.positive_duration(
        &c.rescan_interval,
        &sp.key("rescan_interval"),
        Duration::from_secs(30),
    );
    if v.diags.len() != before {
        return None;
    }
    Some(CsvSourceConfig {
        directories,
        patterns,
        ignore,
        recursive,
        settle,
        rows: CsvRows {
            format,
            time_format,
            timezone,
            ambiguous_time,
            delimiter,
            skip_rows,
        },
        done_dir,
        error_dir,
        on_success,
        max_concurrent_files,
        rescan_interval,
    })
}
