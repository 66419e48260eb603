//! The synchronous streaming CSV parser: a byte stream in, bounded [`Chunk`]s of records out.
//!
//! Rows are handed on in chunks of at most [`CsvParseOptions::max_batch_points`] points (or as
//! many rows); each chunk says where the input stands after it ([`ResumePoint`]), so a caller
//! that made a chunk durable can record that position and later continue from it
//! ([`CsvParser::parse`] with `resume`). Memory stays bounded by the chunk size and the longest
//! record, whatever the size of the input.
//!
//! # Rows
//! - A row must have exactly as many fields as the header (or, without a header, as the first
//!   row); otherwise it is rejected (`parse`).
//! - An empty time cell or one that does not parse rejects the row (`invalid_time`).
//! - Empty (or blank) value cells are nulls: no point. In the IoTDB formats the cell `null` is a
//!   null too (IoTDB's import skips it).
//! - A value that does not fit its declared type (`(INT32)` in the header), or an invalid device,
//!   rejects the whole row (`type_mismatch`, `invalid_path`); the row's other values are not
//!   ingested either, so a row is either in or out.
//! - A record over [`CsvParseOptions::max_record_bytes`] is rejected (`too_large`).
//! - A final line without a line break is a complete row (IoTDB exports end with one; the watch
//!   source only reads files that are complete), unless the input says otherwise
//!   ([`Input::complete_at_eof`]): then parsing stops before it and the summary is incomplete.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use super::options::{ColumnRef, CsvDevice, CsvFormat, CsvParseOptions, Template};
use super::records::{FieldsRef, Input, Next, RecordReader, RecordSpan, Sequential};
use super::time::TimeParser;
use super::value::{parse_value, show, trim};
use crate::error::Error;
use crate::model::{
    declared_type, put_field, spare_fields_across_threads, Batch, DataType, Field, Location,
    Record, RejectReason,
};
use crate::path::{sanitize_measurement, sanitize_node, validate_device, validate_measurement};
use crate::reject::reject;

/// A position in the input between two records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResumePoint {
    /// Byte offset (of the decompressed stream for gzip files).
    pub offset: u64,
    /// 1-based line number at that offset.
    pub line: u64,
}

/// A rejected row, for a file's error report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    /// 1-based line where the row starts.
    pub line: u64,
    /// Why.
    pub reason: RejectReason,
    /// What is wrong / what was expected.
    pub message: String,
    /// Points (non-null values) lost with the row.
    pub points: u64,
}

/// A bounded part of the input, parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chunk {
    /// The good records, and the rejections (itemized up to
    /// [`MAX_ITEMIZED_REJECTIONS`](crate::reject::MAX_ITEMIZED_REJECTIONS), then summed).
    pub batch: Batch,
    /// 1-based line of each record of `batch.records` (same order).
    pub record_lines: Vec<u64>,
    /// Every rejected row of this chunk (not summarized).
    pub row_errors: Vec<RowError>,
    /// Rows accepted (a row with only nulls counts, with no point).
    pub rows: u64,
    /// Points in `batch`.
    pub points: u64,
    /// Where the input stands after this chunk.
    pub end: ResumePoint,
}

impl Chunk {
    /// Rows rejected.
    pub fn rejected_rows(&self) -> u64 {
        self.row_errors.len() as u64
    }

    /// Points rejected with them.
    pub fn rejected_points(&self) -> u64 {
        self.row_errors.iter().map(|e| e.points).sum()
    }
}

/// Totals of one [`CsvParser::parse`] run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ParseSummary {
    /// Rows accepted.
    pub rows: u64,
    /// Rows rejected.
    pub rejected_rows: u64,
    /// Points accepted.
    pub points: u64,
    /// Points rejected.
    pub rejected_points: u64,
    /// Where parsing stopped.
    pub end: ResumePoint,
    /// False when the input ended in a line that it said is not complete yet
    /// ([`Input::complete_at_eof`]); `end` is then before that line.
    pub complete: bool,
}

/// The file a stream comes from, for device templates.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileContext {
    /// `{file_stem}`: the file name without `.gz` and without its last extension
    /// (`line-3.csv.gz` → `line-3`).
    pub file_stem: String,
    /// `{dir}`: the name of the file's directory.
    pub dir: String,
}

impl FileContext {
    /// The context of a file path.
    pub fn from_path(path: &Path) -> FileContext {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        let file_stem = Path::new(name)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        FileContext { file_stem, dir }
    }
}

fn template_error(message: String) -> Error {
    Error::CsvOption {
        key: "device_template",
        message,
    }
}

/// Checks a CSV device template by the configuration's rule
/// ([`Template::parse_csv_device`]: a full path from `root.`, placeholders `{file_stem}` and
/// `{dir}`). One built with that function always passes; one built otherwise may not.
fn check_template(t: &Template) -> Result<(), Error> {
    Template::parse_csv_device(t.as_str())
        .map(|_| ())
        .map_err(template_error)
}

/// The device a checked template gives for a file.
fn render_template(t: &Template, file: &FileContext) -> Result<String, Error> {
    let stem = sanitize_node(&file.file_stem);
    let dir = sanitize_node(&file.dir);
    t.render(|p| match p {
        "file_stem" => Some(stem.as_str()),
        "dir" => Some(dir.as_str()),
        _ => None,
    })
    .ok_or_else(|| template_error(format!("{:?}: unknown placeholder", t.as_str())))
}

/// A compiled parser configuration. Cheap to share; [`CsvParser::parse`] holds all per-file
/// state.
#[derive(Debug, Clone)]
pub struct CsvParser {
    opts: CsvParseOptions,
    time: TimeParser,
}

#[derive(Debug, Clone)]
struct Col {
    idx: usize,
    /// Shared by the column's fields.
    measurement: Arc<str>,
    hint: Option<DataType>,
}

#[derive(Debug, Clone)]
struct Group {
    /// Fixed device (wide format, template); `None` = from the row.
    device: Option<Arc<str>>,
    cols: Vec<Col>,
}

#[derive(Debug, Clone)]
enum RowDevice {
    Fixed,
    Column { idx: usize, prefix: Option<String> },
}

#[derive(Debug, Clone)]
struct Layout {
    ncols: usize,
    time_col: usize,
    device: RowDevice,
    groups: Vec<Group>,
    null_literal: bool,
}

impl CsvParser {
    /// Compiles the options (time pattern, time zone, device template, prefix).
    pub fn new(opts: &CsvParseOptions) -> Result<CsvParser, Error> {
        let time = TimeParser::new(
            &opts.rows.time_format,
            &opts.rows.timezone,
            opts.rows.ambiguous_time,
            opts.precision,
        )?;
        if matches!(opts.rows.delimiter, b'"' | b'\n' | b'\r') || !opts.rows.delimiter.is_ascii() {
            return Err(Error::CsvOption {
                key: "delimiter",
                message: format!(
                    "{:?} is not one ASCII character other than a quote or line break",
                    char::from(opts.rows.delimiter)
                ),
            });
        }
        if let CsvFormat::Generic(g) = &opts.rows.format {
            match &g.device {
                CsvDevice::Template(t) => check_template(t)?,
                CsvDevice::Column {
                    path_prefix: Some(p),
                    ..
                } => validate_device(p).map_err(|e| Error::CsvOption {
                    key: "path_prefix",
                    message: format!("{p:?} {e}"),
                })?,
                CsvDevice::Column { .. } => {}
            }
        }
        Ok(CsvParser {
            opts: opts.clone(),
            time,
        })
    }

    /// The options.
    pub fn options(&self) -> &CsvParseOptions {
        &self.opts
    }

    /// Parses `input` from the start, or continues after `resume` (a chunk's `end` from an
    /// earlier run over the same bytes: the skipped and header rows are read again, then the
    /// input moves to that offset). `on_chunk` receives every chunk in order; its error stops
    /// parsing and is returned. File-level problems (no or bad header, I/O errors) are
    /// [`Error`]s converted into `E`.
    pub fn parse<I, E, F>(
        &self,
        input: I,
        file: &FileContext,
        resume: Option<ResumePoint>,
        mut on_chunk: F,
    ) -> Result<ParseSummary, E>
    where
        I: Input,
        E: From<Error>,
        F: FnMut(Chunk) -> Result<(), E>,
    {
        let mut r = RecordReader::new(input, self.opts.rows.delimiter, self.opts.max_record_bytes);
        let io_err = |r: &RecordReader<I>, e: io::Error| {
            Error::io(
                format!("reading line {} (byte {})", r.line(), r.offset()),
                &e,
            )
        };
        let skipped = r
            .skip_lines(u64::from(self.opts.rows.skip_rows))
            .map_err(|e| io_err(&r, e))?;
        if skipped < u64::from(self.opts.rows.skip_rows) {
            return Err(Error::CsvFile {
                line: r.line(),
                message: format!(
                    "the file has {skipped} lines, fewer than the {} skip_rows",
                    self.opts.rows.skip_rows
                ),
            }
            .into());
        }
        let header_rows = match &self.opts.rows.format {
            CsvFormat::Generic(g) => g.header_rows,
            _ => 1,
        };
        let mut header: Option<Vec<String>> = None;
        let mut header_line = r.line();
        for i in 0..header_rows {
            match r.next_record().map_err(|e| io_err(&r, e))? {
                Next::Record(span) => {
                    if i == 0 {
                        header_line = span.line;
                        header = Some(
                            r.fields()
                                .iter()
                                .map(|f| String::from_utf8_lossy(trim(f)).into_owned())
                                .collect(),
                        );
                    }
                }
                Next::TooLarge(span) | Next::Unterminated(span) => {
                    return Err(Error::CsvFile {
                        line: span.line,
                        message: "the header row is too long or has an unclosed quote".into(),
                    }
                    .into())
                }
                Next::End | Next::Incomplete => {
                    return Err(Error::CsvFile {
                        line: r.line(),
                        message: if i == 0 {
                            "no header line (the file is empty)".into()
                        } else {
                            format!("expected {header_rows} header rows, found {i}")
                        },
                    }
                    .into())
                }
            }
        }
        let mut layout = match &header {
            Some(h) => Some(self.layout(h, header_line, file)?),
            None => None,
        };
        if let Some(p) = resume {
            if p.offset < r.offset() {
                return Err(Error::CsvFile {
                    line: p.line,
                    message: format!(
                        "resume offset {} lies inside the header (which ends at byte {})",
                        p.offset,
                        r.offset()
                    ),
                }
                .into());
            }
            r.skip_to(p.offset, p.line).map_err(|e| io_err(&r, e))?;
        }

        let mut sum = ParseSummary {
            complete: true,
            ..ParseSummary::default()
        };
        let max = self.opts.max_batch_points.max(1);
        let mut chunk = Chunk::default();
        let mut chunk_rows = 0usize;
        let mut device_cache = DeviceCache::default();
        loop {
            let next = r.next_record().map_err(|e| io_err(&r, e))?;
            let span = match next {
                Next::End => break,
                Next::Incomplete => {
                    sum.complete = false;
                    break;
                }
                Next::TooLarge(span) => {
                    let n = self.opts.max_record_bytes;
                    row_error(&mut chunk, span.line, RejectReason::TooLarge, 0, || {
                        format!("the record is longer than {n} bytes")
                    });
                    span
                }
                Next::Unterminated(span) => {
                    row_error(&mut chunk, span.line, RejectReason::Parse, 0, || {
                        "a quoted field is not closed before the end of the file".into()
                    });
                    span
                }
                Next::Record(span) => {
                    if layout.is_none() {
                        let n = r.fields().len();
                        let names: Vec<String> = (1..=n).map(|i| format!("col{i}")).collect();
                        layout = Some(self.layout(&names, 0, file)?);
                    }
                    if let Some(l) = &layout {
                        self.row(l, r.fields(), span, &mut chunk, &mut device_cache);
                    }
                    span
                }
            };
            chunk_rows += 1;
            chunk.end = ResumePoint {
                offset: span.end,
                line: span.next_line,
            };
            if chunk.points as usize >= max || chunk_rows >= max {
                emit(&mut chunk, &mut sum, &mut on_chunk)?;
                chunk_rows = 0;
            }
        }
        if chunk_rows > 0 {
            emit(&mut chunk, &mut sum, &mut on_chunk)?;
        }
        sum.end = ResumePoint {
            offset: r.offset(),
            line: r.line(),
        };
        Ok(sum)
    }

    /// Interprets the header (column names) for the format.
    fn layout(&self, names: &[String], line: u64, file: &FileContext) -> Result<Layout, Error> {
        let bad = |message: String| Error::CsvFile { line, message };
        let find = |c: &ColumnRef, what: &str| -> Result<usize, Error> {
            match c {
                ColumnRef::Index(i) if *i < names.len() => Ok(*i),
                ColumnRef::Index(i) => Err(bad(format!(
                    "the {what} column {} does not exist (the file has {} columns)",
                    i + 1,
                    names.len()
                ))),
                ColumnRef::Name(n) => names
                    .iter()
                    .position(|h| h == n)
                    .ok_or_else(|| bad(format!("no {what} column named {n:?} in the header"))),
            }
        };
        match &self.opts.rows.format {
            CsvFormat::IotdbWide => {
                check_time_header(names, line)?;
                let mut groups: Vec<Group> = Vec::new();
                for (idx, name) in names.iter().enumerate().skip(1) {
                    let (path, hint) = split_type(name, idx, line)?;
                    let (device, measurement) = path.rsplit_once('.').ok_or_else(|| {
                        bad(format!(
                            "column {}: {name:?} is not a series path such as root.sg.d1.s1",
                            idx + 1
                        ))
                    })?;
                    validate_device(device)
                        .map_err(|e| bad(format!("column {}: device {device:?} {e}", idx + 1)))?;
                    validate_measurement(measurement).map_err(|e| {
                        bad(format!(
                            "column {}: measurement {measurement:?} {e}",
                            idx + 1
                        ))
                    })?;
                    let col = Col {
                        idx,
                        measurement: measurement.into(),
                        hint,
                    };
                    match groups
                        .iter_mut()
                        .find(|g| g.device.as_deref() == Some(device))
                    {
                        Some(g) => {
                            if g.cols.iter().any(|c| &*c.measurement == measurement) {
                                return Err(bad(format!(
                                    "column {}: series {path} appears twice",
                                    idx + 1
                                )));
                            }
                            g.cols.push(col);
                        }
                        None => groups.push(Group {
                            device: Some(device.into()),
                            cols: vec![col],
                        }),
                    }
                }
                Ok(Layout {
                    ncols: names.len(),
                    time_col: 0,
                    device: RowDevice::Fixed,
                    groups,
                    null_literal: true,
                })
            }
            CsvFormat::IotdbDevice => {
                check_time_header(names, line)?;
                if !names
                    .get(1)
                    .is_some_and(|n| n.eq_ignore_ascii_case("device"))
                {
                    return Err(bad(format!(
                        "expected the second column to be \"Device\", found {:?}",
                        names.get(1).map(String::as_str).unwrap_or("")
                    )));
                }
                let mut cols: Vec<Col> = Vec::new();
                for (idx, name) in names.iter().enumerate().skip(2) {
                    let (m, hint) = split_type(name, idx, line)?;
                    validate_measurement(m)
                        .map_err(|e| bad(format!("column {}: measurement {m:?} {e}", idx + 1)))?;
                    if cols.iter().any(|c| &*c.measurement == m) {
                        return Err(bad(format!("column {}: {m:?} appears twice", idx + 1)));
                    }
                    cols.push(Col {
                        idx,
                        measurement: m.into(),
                        hint,
                    });
                }
                Ok(Layout {
                    ncols: names.len(),
                    time_col: 0,
                    device: RowDevice::Column {
                        idx: 1,
                        prefix: None,
                    },
                    groups: vec![Group { device: None, cols }],
                    null_literal: true,
                })
            }
            CsvFormat::Generic(g) => {
                let time_col = find(&g.time_column, "time")?;
                let (device, fixed, device_col) = match &g.device {
                    CsvDevice::Column {
                        column,
                        path_prefix,
                    } => {
                        let idx = find(column, "device")?;
                        if idx == time_col {
                            return Err(bad("the device column is the time column".into()));
                        }
                        (
                            RowDevice::Column {
                                idx,
                                prefix: path_prefix.clone(),
                            },
                            None,
                            Some(idx),
                        )
                    }
                    CsvDevice::Template(t) => {
                        let d = render_template(t, file)?;
                        validate_device(&d).map_err(|e| Error::CsvFile {
                            line: 0,
                            message: format!(
                                "device_template gives {d:?} for this file, which {e}"
                            ),
                        })?;
                        (RowDevice::Fixed, Some(d), None)
                    }
                };
                let idxs: Vec<usize> = if g.value_columns.is_empty() {
                    (0..names.len())
                        .filter(|&i| i != time_col && Some(i) != device_col)
                        .collect()
                } else {
                    let mut v = Vec::with_capacity(g.value_columns.len());
                    for c in &g.value_columns {
                        let i = find(c, "value")?;
                        if i == time_col || Some(i) == device_col {
                            return Err(bad(format!(
                                "value column {} is the time or device column",
                                i + 1
                            )));
                        }
                        v.push(i);
                    }
                    v
                };
                let mut cols: Vec<Col> = Vec::with_capacity(idxs.len());
                for idx in idxs {
                    let name = names.get(idx).map(String::as_str).unwrap_or("");
                    let m = sanitize_measurement(name);
                    if let Some(other) = cols.iter().find(|c| *c.measurement == *m) {
                        return Err(bad(format!(
                            "columns {} and {} both give the measurement {m:?}",
                            other.idx + 1,
                            idx + 1
                        )));
                    }
                    cols.push(Col {
                        idx,
                        measurement: m.into(),
                        hint: None,
                    });
                }
                Ok(Layout {
                    ncols: names.len(),
                    time_col,
                    device,
                    groups: vec![Group {
                        device: fixed.map(Arc::from),
                        cols,
                    }],
                    null_literal: false,
                })
            }
        }
    }

    /// Parses one row into `chunk`.
    #[inline]
    fn row(
        &self,
        l: &Layout,
        fields: FieldsRef<'_>,
        span: RecordSpan,
        chunk: &mut Chunk,
        cache: &mut DeviceCache,
    ) {
        let line = span.line;
        let non_null = |fields: &FieldsRef<'_>| -> u64 {
            l.groups
                .iter()
                .flat_map(|g| g.cols.iter())
                .filter(|c| {
                    fields
                        .get(c.idx)
                        .is_some_and(|f| !is_null(trim(f), l.null_literal))
                })
                .count() as u64
        };
        if fields.len() != l.ncols {
            let n = fields.len();
            row_error(chunk, line, RejectReason::Parse, non_null(&fields), || {
                format!("expected {} fields, found {n}", l.ncols)
            });
            return;
        }
        let tcell = trim(fields.get(l.time_col).unwrap_or(&[]));
        if tcell.is_empty() {
            row_error(
                chunk,
                line,
                RejectReason::InvalidTime,
                non_null(&fields),
                || "the time is empty".into(),
            );
            return;
        }
        let time = match self.time.parse(tcell) {
            Ok(t) => t,
            Err(m) => {
                row_error(
                    chunk,
                    line,
                    RejectReason::InvalidTime,
                    non_null(&fields),
                    || m,
                );
                return;
            }
        };
        let row_device: Option<&str> = match &l.device {
            RowDevice::Fixed => None,
            RowDevice::Column { idx, prefix } => {
                let cell = trim(fields.get(*idx).unwrap_or(&[]));
                match cache.get(cell, prefix.as_deref()) {
                    Ok(d) => Some(d),
                    Err(m) => {
                        row_error(
                            chunk,
                            line,
                            RejectReason::InvalidPath,
                            non_null(&fields),
                            || m,
                        );
                        return;
                    }
                }
            }
        };
        let first_record = chunk.batch.records.len();
        let mut points = 0u64;
        for g in &l.groups {
            // At the first value, a vector recycled after an earlier chunk was written when
            // there is one (the pipeline runs on other threads); `w` fields of it are this
            // record's.
            let mut out: Vec<Field> = Vec::new();
            let mut w = 0;
            for c in &g.cols {
                let raw = fields.get(c.idx).unwrap_or(&[]);
                let cell = trim(raw);
                if is_null(cell, l.null_literal) {
                    continue;
                }
                match parse_value(cell, raw, c.hint) {
                    Ok(value) => {
                        if w == 0 {
                            out = spare_fields_across_threads(g.cols.len());
                        }
                        put_field(&mut out, w, &c.measurement, value, c.hint);
                        w += 1;
                    }
                    Err((reason, m)) => {
                        chunk.batch.records.truncate(first_record);
                        chunk.record_lines.truncate(first_record);
                        let col = c.idx + 1;
                        row_error(chunk, line, reason, non_null(&fields), || {
                            format!("column {col}: {m}")
                        });
                        return;
                    }
                }
            }
            out.truncate(w);
            if out.is_empty() {
                continue;
            }
            points += out.len() as u64;
            let device = match (&g.device, row_device) {
                (Some(d), _) => d.clone(),
                (None, Some(d)) => d.into(),
                (None, None) => "".into(),
            };
            chunk.batch.records.push(Record {
                device,
                time,
                fields: out,
            });
            chunk.record_lines.push(line);
        }
        chunk.rows += 1;
        chunk.points += points;
    }
}

#[inline]
fn is_null(cell: &[u8], null_literal: bool) -> bool {
    cell.is_empty() || (null_literal && cell == b"null")
}

fn row_error(
    chunk: &mut Chunk,
    line: u64,
    reason: RejectReason,
    points: u64,
    message: impl FnOnce() -> String,
) {
    let message = message();
    reject(
        &mut chunk.batch,
        reason,
        points,
        || Location::line(line),
        || message.clone(),
    );
    chunk.row_errors.push(RowError {
        line,
        reason,
        message,
        points,
    });
}

fn emit<E, F>(chunk: &mut Chunk, sum: &mut ParseSummary, on_chunk: &mut F) -> Result<(), E>
where
    F: FnMut(Chunk) -> Result<(), E>,
{
    let end = chunk.end;
    let c = std::mem::take(chunk);
    chunk.end = end;
    // The next chunk is likely the same size: one allocation instead of repeated doubling.
    chunk.batch.records.reserve_exact(c.batch.records.len());
    chunk.record_lines.reserve_exact(c.record_lines.len());
    sum.rows += c.rows;
    sum.points += c.points;
    sum.rejected_rows += c.rejected_rows();
    sum.rejected_points += c.rejected_points();
    on_chunk(c)
}

fn check_time_header(names: &[String], line: u64) -> Result<(), Error> {
    match names.first() {
        Some(n) if n.eq_ignore_ascii_case("time") || n.eq_ignore_ascii_case("timestamp") => Ok(()),
        other => Err(Error::CsvFile {
            line,
            message: format!(
                "expected the first column to be \"Time\", found {:?}",
                other.map(String::as_str).unwrap_or("")
            ),
        }),
    }
}

/// Splits `name(TYPE)` into the name and the type.
fn split_type(name: &str, idx: usize, line: u64) -> Result<(&str, Option<DataType>), Error> {
    let Some(open) = name.strip_suffix(')').and_then(|n| n.rfind('(')) else {
        return Ok((name.trim(), None));
    };
    let ty = &name[open + 1..name.len() - 1];
    match declared_type(ty.trim()) {
        Some(h) => Ok((name[..open].trim(), Some(h))),
        None => Err(Error::CsvFile {
            line,
            message: format!(
                "column {}: unknown data type {ty:?} in {name:?}; expected BOOLEAN, INT32, INT64, FLOAT, DOUBLE or TEXT",
                idx + 1
            ),
        }),
    }
}

/// Validated device paths from a device column; the last one is kept, since rows of one
/// device tend to come together.
#[derive(Debug, Default)]
struct DeviceCache {
    cell: Vec<u8>,
    device: String,
    valid: bool,
}

impl DeviceCache {
    fn get(&mut self, cell: &[u8], prefix: Option<&str>) -> Result<&str, String> {
        if !(self.valid && self.cell == cell) {
            self.valid = false;
            let s = std::str::from_utf8(cell)
                .map_err(|_| format!("device {} is not valid UTF-8", show(cell)))?;
            if s.is_empty() {
                return Err("the device is empty".into());
            }
            let device = match prefix {
                Some(p) => format!("{p}.{s}"),
                None => s.to_owned(),
            };
            validate_device(&device).map_err(|e| format!("device {device:?} {e}"))?;
            self.cell.clear();
            self.cell.extend_from_slice(cell);
            self.device = device;
            self.valid = true;
        }
        Ok(&self.device)
    }
}

/// Parses a whole stream (no resume) with `opts`: the offline entry point, e.g. for
/// `tsfiled import`. See [`CsvParser::parse`].
pub fn parse_reader<R, E, F>(
    reader: R,
    opts: &CsvParseOptions,
    file: &FileContext,
    on_chunk: F,
) -> Result<ParseSummary, E>
where
    R: Read,
    E: From<Error>,
    F: FnMut(Chunk) -> Result<(), E>,
{
    CsvParser::new(opts)?.parse(Sequential(reader), file, None, on_chunk)
}

/// Parses a file (gzip-compressed when its name ends in `.gz`) with `opts`; the file's name
/// and directory fill the device template. See [`CsvParser::parse`].
pub fn parse_path<E, F>(path: &Path, opts: &CsvParseOptions, on_chunk: F) -> Result<ParseSummary, E>
where
    E: From<Error>,
    F: FnMut(Chunk) -> Result<(), E>,
{
    let parser = CsvParser::new(opts)?;
    let file =
        File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), &e))?;
    let ctx = FileContext::from_path(path);
    if is_gzip(path) {
        let gz = flate2::bufread::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, file));
        parser.parse(Sequential(gz), &ctx, None, on_chunk)
    } else {
        parser.parse(file, &ctx, None, on_chunk)
    }
}

/// Whether a path names a gzip file (`.gz`).
pub fn is_gzip(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

#[cfg(test)]
#[path = "parser_tests.rs"]
mod tests;
