//! InfluxDB line protocol, as Telegraf's `influxdb` and `influxdb_v2` outputs send it.
//!
//! Syntax per line: `measurement[,tag=value...] field=value[,field=value...] [timestamp]`.
//! - Escapes: in the measurement `\,` and `\ `; in tag keys, tag values and field keys `\,`,
//!   `\=` and `\ `; everywhere `\\` is one backslash. A backslash before any other character is
//!   literal. In string field values `\"` and `\\`; string values may span lines.
//! - Field values: floats (`1`, `-1.5`, `2e3`) → [`FieldValue::Float`]; `1i` → Int; `1u` → Int
//!   when ≤ `i64::MAX`, else a TypeMismatch of that field (likewise for an `i` or float out of
//!   range); `"text"` → Text; `t T true True TRUE f F false False FALSE` → Bool.
//! - Declared types ([`DataType`]): `1i` and `1u` declare INT64, a quoted string TEXT, a
//!   boolean BOOLEAN; a plain number declares nothing (the schema defaults type it).
//! - Blank lines and lines starting with `#` (after optional spaces) are skipped; `\r\n` line
//!   ends are accepted.
//! - The optional timestamp is an integer in [`LineProtocolOptions::precision`] (InfluxDB's
//!   default: ns), converted to [`LineProtocolOptions::stored_unit`]; overflow is an
//!   InvalidTime rejection of the line. A line without a timestamp gets
//!   [`LineProtocolOptions::now`] (already in the stored unit: the caller supplies the clock).
//!
//! Mapping: the device path comes from [`LineProtocolOptions::device_template`] (see
//! [`DeviceTemplate`]; default `root.{measurement}.{tags}`), each field becomes a measurement of
//! that device. Field keys are sanitized into measurement names by
//! [`sanitize_measurement`](crate::path::sanitize_measurement) (`used-percent` → `used_percent`).
//!
//! Errors: each bad line is one Parse rejection at `line N, column C` (1-based; the column
//! counts bytes) saying what was expected; the other lines still ingest. A line whose device
//! cannot be built (missing `{tag:KEY}`) is an InvalidPath rejection.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use crate::model::{Batch, DataType, Field, FieldValue, Location, Record, RejectReason, TimeUnit};
use crate::path::{has_duplicate_keys, is_clean_measurement, sanitize_measurement, DeviceTemplate};
use crate::reject::reject;

/// Options of the line-protocol parser (borrowing the pipeline's device template).
#[derive(Debug, Clone, Copy)]
pub struct LineProtocolOptions<'t> {
    /// How devices are named.
    pub device_template: &'t DeviceTemplate,
    /// Unit of the timestamps in the payload (the `precision` request parameter).
    pub precision: TimeUnit,
    /// The pipeline's stored precision.
    pub stored_unit: TimeUnit,
    /// Time for lines without a timestamp, in `stored_unit`.
    pub now: i64,
}

impl Default for LineProtocolOptions<'static> {
    /// Default template, ns in, ms stored, `now` = 0.
    fn default() -> Self {
        static TEMPLATE: OnceLock<DeviceTemplate> = OnceLock::new();
        LineProtocolOptions {
            device_template: TEMPLATE.get_or_init(DeviceTemplate::default),
            precision: TimeUnit::Nanos,
            stored_unit: TimeUnit::Millis,
            now: 0,
        }
    }
}

/// Parses a line-protocol payload (see the module docs). Never panics.
pub fn parse_line_protocol(input: &[u8], opts: &LineProtocolOptions<'_>) -> Batch {
    let mut p = Parser {
        input,
        pos: 0,
        line: 1,
        line_start: 0,
        opts,
        batch: Batch::default(),
        devices: HashMap::new(),
        results: Vec::new(),
        last_key: None,
        field_rejects: Vec::new(),
        last_fields: 1,
        names: Vec::new(),
    };
    p.run();
    p.batch
}

/// [`parse_line_protocol`] with default options: the fuzzing entry point.
pub fn parse_line_protocol_default(input: &[u8]) -> Batch {
    parse_line_protocol(input, &LineProtocolOptions::default())
}

/// A problem with a line: where (absolute byte offset), why, what.
struct LineError {
    at: usize,
    reason: RejectReason,
    message: String,
}

fn err<T>(at: usize, message: impl Into<String>) -> Result<T, LineError> {
    Err(LineError {
        at,
        reason: RejectReason::Parse,
        message: message.into(),
    })
}

/// A cached series key result: the device, or an error at an offset relative to the key.
type DeviceResult = Result<Arc<str>, (usize, RejectReason, String)>;

struct Parser<'a, 'o> {
    input: &'a [u8],
    pos: usize,
    /// 1-based number of the line at `line_start`.
    line: usize,
    line_start: usize,
    opts: &'o LineProtocolOptions<'o>,
    batch: Batch,
    devices: HashMap<&'a [u8], usize>,
    /// Rendered devices, indexed by `devices` values.
    results: Vec<DeviceResult>,
    /// The previous line's series key, with its result (most payloads repeat series).
    last_key: Option<(&'a [u8], usize)>,
    /// Field-level rejections of the current line: (offset, reason, message).
    field_rejects: Vec<(usize, RejectReason, String)>,
    /// Fields of the previous good line (capacity hint).
    last_fields: usize,
    /// Field keys by position as recent lines had them: lines that repeat their keys share
    /// one string per key.
    names: Vec<Arc<str>>,
}

#[inline]
fn is_eol(input: &[u8], i: usize) -> bool {
    match input.get(i) {
        None | Some(b'\n') => true,
        Some(b'\r') => matches!(input.get(i + 1), None | Some(b'\n')),
        _ => false,
    }
}

/// Removes line-protocol escapes: `\` + one of `specials` or `\` → that byte.
fn unescape<'a>(raw: &'a [u8], specials: &[u8]) -> Cow<'a, [u8]> {
    if !raw.contains(&b'\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'\\' {
            if let Some(&n) = raw.get(i + 1) {
                if n == b'\\' || specials.contains(&n) {
                    out.push(n);
                    i += 2;
                    continue;
                }
            }
        }
        out.push(b);
        i += 1;
    }
    Cow::Owned(out)
}

fn utf8<'b>(bytes: Cow<'b, [u8]>, at: usize, what: &str) -> Result<Cow<'b, str>, LineError> {
    match bytes {
        Cow::Borrowed(b) => match std::str::from_utf8(b) {
            Ok(s) => Ok(Cow::Borrowed(s)),
            Err(e) => err(at + e.valid_up_to(), format!("invalid UTF-8 in {what}")),
        },
        Cow::Owned(v) => match String::from_utf8(v) {
            Ok(s) => Ok(Cow::Owned(s)),
            Err(e) => err(at, format!("invalid UTF-8 in {what}: {e}")),
        },
    }
}

/// Byte classes for scanning.
const C_SPACE: u8 = 1;
const C_COMMA: u8 = 2;
const C_EQ: u8 = 4;
const C_NL: u8 = 8;
const C_BS: u8 = 16;
const C_CR: u8 = 32;

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b' ' as usize] = C_SPACE;
    t[b',' as usize] = C_COMMA;
    t[b'=' as usize] = C_EQ;
    t[b'\n' as usize] = C_NL;
    t[b'\\' as usize] = C_BS;
    t[b'\r' as usize] = C_CR;
    t
};

/// Scans from `i` to the first unescaped byte of a class in `stops` (or a newline); returns
/// its index. `C_CR` in `stops` stops at a `\r` that ends the line (see [`is_eol`]).
#[inline]
fn scan(input: &[u8], mut i: usize, stops: u8) -> usize {
    let interesting = stops | C_NL | C_BS;
    while let Some(&b) = input.get(i) {
        let c = CLASS[b as usize];
        if c & interesting != 0 {
            if c == C_BS {
                if matches!(input.get(i + 1), Some(&n) if n != b'\n') {
                    i += 2;
                    continue;
                }
            } else if c != C_CR || is_eol(input, i) {
                return i;
            }
        }
        i += 1;
    }
    i
}

/// Most distinct series keys cached per payload.
const MAX_CACHED_SERIES: usize = 65_536;

const MEASUREMENT_ESCAPES: &[u8] = b", ";
const KEY_ESCAPES: &[u8] = b",= ";

impl<'a> Parser<'a, '_> {
    fn run(&mut self) {
        let input = self.input;
        loop {
            while matches!(input.get(self.pos), Some(b' ' | b'\t')) {
                self.pos += 1;
            }
            match input.get(self.pos) {
                None => break,
                Some(b'\n') => {
                    self.newline(self.pos);
                    continue;
                }
                Some(b'\r') if is_eol(input, self.pos) => {
                    self.pos += 1;
                    continue;
                }
                Some(b'#') => {
                    self.skip_line();
                    continue;
                }
                Some(_) => {}
            }
            let (line, line_start) = (self.line, self.line_start);
            self.field_rejects.clear();
            match self.parse_line() {
                Ok((fields_seen, record)) => {
                    let Self {
                        field_rejects,
                        batch,
                        ..
                    } = self;
                    for (at, reason, message) in field_rejects.drain(..) {
                        let col = at.saturating_sub(line_start) + 1;
                        reject(
                            batch,
                            reason,
                            1,
                            || Location::column(line as u64, col as u64),
                            || message,
                        );
                    }
                    match record {
                        Ok(Some(r)) => batch.records.push(r),
                        Ok(None) => {}
                        Err(e) => {
                            let col = e.at.saturating_sub(line_start) + 1;
                            reject(
                                batch,
                                e.reason,
                                fields_seen,
                                || Location::column(line as u64, col as u64),
                                || e.message,
                            );
                        }
                    }
                }
                Err((fields_seen, e)) => {
                    // Column relative to the line the error is on (strings may span lines).
                    let (eline, estart) = self.line_of(e.at, line, line_start);
                    let col = e.at.saturating_sub(estart) + 1;
                    let where_ = Location::Line {
                        line: line as u64,
                        at: Some((eline as u64, col as u64)),
                    };
                    reject(
                        &mut self.batch,
                        e.reason,
                        fields_seen,
                        || where_,
                        || e.message,
                    );
                    (self.line, self.line_start) = (eline, estart);
                    self.pos = e.at.max(self.pos);
                    self.skip_line();
                }
            }
        }
    }

    /// Line number and start of the line of byte `at`, counting from a known line start.
    fn line_of(&self, at: usize, mut line: usize, start: usize) -> (usize, usize) {
        let end = at.min(self.input.len());
        let mut line_start = start;
        for i in start..end {
            if self.input[i] == b'\n' {
                line += 1;
                line_start = i + 1;
            }
        }
        (line, line_start)
    }

    fn newline(&mut self, at: usize) {
        self.line += 1;
        self.pos = at + 1;
        self.line_start = at + 1;
    }

    /// Skips to the start of the next line.
    fn skip_line(&mut self) {
        let rest = self.input.get(self.pos..).unwrap_or(&[]);
        match rest.iter().position(|&b| b == b'\n') {
            Some(i) => self.newline(self.pos + i),
            None => self.pos = self.input.len(),
        }
    }

    /// Counts newlines in `input[from..to]` (inside string values) into the line number.
    /// (`line_start` is set by the newline that ends the line: `run` takes a line's start
    /// before parsing it, and `line_of` finds an error's line from there.)
    fn count_lines(&mut self, from: usize, to: usize) {
        self.line += self.input[from..to].iter().filter(|&&b| b == b'\n').count();
    }

    /// Parses one line starting at `self.pos`. Ok holds a record (or a non-syntax rejection of
    /// the whole line); Err a syntax error. Both carry the number of fields seen.
    #[allow(clippy::type_complexity)]
    fn parse_line(&mut self) -> Result<(u64, Result<Option<Record>, LineError>), (u64, LineError)> {
        let input = self.input;
        let key_start = self.pos;
        let key_end = scan(input, key_start, C_SPACE | C_CR);
        if is_eol(input, key_end) {
            return Err((
                0,
                LineError {
                    at: key_end,
                    reason: RejectReason::Parse,
                    message: "expected a space and a field set after the measurement and tags"
                        .into(),
                },
            ));
        }
        let key = &input[key_start..key_end];
        let device = self.device(key);

        // Field set.
        let mut i = key_end;
        while input.get(i) == Some(&b' ') {
            i += 1;
        }
        let mut fields: Vec<Field> = Vec::with_capacity(self.last_fields);
        let mut seen = 0u64;
        loop {
            match self.field(i, &mut fields) {
                Ok(next) => {
                    seen += 1;
                    i = next;
                }
                Err(e) => return Err((seen + 1, e)),
            }
            match input.get(i) {
                Some(b',') => i += 1,
                _ => break,
            }
        }

        // Optional timestamp.
        let mut time = None;
        if input.get(i) == Some(&b' ') {
            while input.get(i) == Some(&b' ') {
                i += 1;
            }
            if !is_eol(input, i) {
                let ts_start = i;
                let end = scan_token(input, i);
                let tok = &input[ts_start..end];
                let Some(t) = parse_int(tok) else {
                    return Err((
                        seen,
                        LineError {
                            at: ts_start,
                            reason: if is_int_shaped(tok) {
                                RejectReason::InvalidTime
                            } else {
                                RejectReason::Parse
                            },
                            message: if is_int_shaped(tok) {
                                "timestamp is out of the INT64 range".into()
                            } else {
                                "expected an integer timestamp".into()
                            },
                        },
                    ));
                };
                i = end;
                while input.get(i) == Some(&b' ') {
                    i += 1;
                }
                time = Some((ts_start, t));
            }
        }
        if !is_eol(input, i) {
            let what = if time.is_some() {
                "expected the end of the line after the timestamp"
            } else {
                "expected ',' and a field, a space and a timestamp, or the end of the line"
            };
            return Err((
                seen,
                LineError {
                    at: i,
                    reason: RejectReason::Parse,
                    message: what.into(),
                },
            ));
        }
        // At the line's end: `run` steps over its `\r` and `\n`.
        self.pos = i;

        let device = match device {
            Ok(d) => d,
            Err((off, reason, message)) => {
                let e = LineError {
                    at: key_start + off,
                    reason,
                    message,
                };
                return Ok((fields.len().max(1) as u64, Err(e)));
            }
        };
        let time = match time {
            None => self.opts.now,
            Some((at, t)) => match self.opts.precision.convert(t, self.opts.stored_unit) {
                Some(t) => t,
                None => {
                    let e = LineError {
                        at,
                        reason: RejectReason::InvalidTime,
                        message: format!(
                            "timestamp {t} {} overflows when converted to {}",
                            self.opts.precision, self.opts.stored_unit
                        ),
                    };
                    return Ok((fields.len().max(1) as u64, Err(e)));
                }
            },
        };
        if fields.is_empty() {
            return Ok((0, Ok(None)));
        }
        self.last_fields = fields.len();
        Ok((
            fields.len() as u64,
            Ok(Some(Record {
                device,
                time,
                fields,
            })),
        ))
    }

    /// The shared string of field key `s` at position `k` of a line.
    fn name(&mut self, k: usize, s: &str) -> Arc<str> {
        if let Some(n) = self.names.get(k).filter(|n| ***n == *s) {
            return n.clone();
        }
        let n: Arc<str> = Arc::from(s);
        if k < self.names.len() {
            self.names[k] = n.clone();
        } else if k == self.names.len() {
            self.names.push(n.clone());
        }
        n
    }

    /// The device for a series key (cached per payload).
    fn device(&mut self, key: &'a [u8]) -> DeviceResult {
        if let Some((k, idx)) = self.last_key {
            if k == key {
                return self.results[idx].clone();
            }
        }
        let idx = match self.devices.get(key) {
            Some(&idx) => idx,
            None => {
                let d = self.render_device(key);
                if self.results.len() >= MAX_CACHED_SERIES {
                    return d;
                }
                self.results.push(d);
                self.devices.insert(key, self.results.len() - 1);
                self.results.len() - 1
            }
        };
        self.last_key = Some((key, idx));
        self.results[idx].clone()
    }

    fn render_device(&self, key: &[u8]) -> DeviceResult {
        let as_err = |e: LineError| (e.at, e.reason, e.message);
        let m_end = scan(key, 0, C_COMMA);
        if m_end == 0 {
            return Err((0, RejectReason::Parse, "expected a measurement name".into()));
        }
        let measurement = utf8(
            unescape(&key[..m_end], MEASUREMENT_ESCAPES),
            0,
            "the measurement",
        )
        .map_err(as_err)?;
        let mut tags: Vec<(Cow<'_, str>, Cow<'_, str>)> = Vec::new();
        let mut i = m_end;
        while i < key.len() {
            // key[i] == b','
            let k_start = i + 1;
            let k_end = scan(key, k_start, C_COMMA | C_EQ);
            if key.get(k_end) != Some(&b'=') {
                return Err((
                    k_end,
                    RejectReason::Parse,
                    "expected '=' after the tag key".into(),
                ));
            }
            if k_end == k_start {
                return Err((k_start, RejectReason::Parse, "expected a tag key".into()));
            }
            let v_start = k_end + 1;
            let v_end = scan(key, v_start, C_COMMA | C_EQ);
            if key.get(v_end) == Some(&b'=') {
                return Err((
                    v_end,
                    RejectReason::Parse,
                    "unescaped '=' in a tag value (write \\=)".into(),
                ));
            }
            if v_end == v_start {
                return Err((v_start, RejectReason::Parse, "expected a tag value".into()));
            }
            let k = utf8(
                unescape(&key[k_start..k_end], KEY_ESCAPES),
                k_start,
                "a tag key",
            )
            .map_err(as_err)?;
            let v = utf8(
                unescape(&key[v_start..v_end], KEY_ESCAPES),
                v_start,
                "a tag value",
            )
            .map_err(as_err)?;
            tags.push((k, v));
            i = v_end;
        }
        if has_duplicate_keys(&tags) {
            return Err((m_end, RejectReason::Parse, "duplicate tag key".into()));
        }
        let mut out = String::new();
        self.opts
            .device_template
            .render_with(&measurement, &tags, &mut out)
            .map_err(|m| (0, RejectReason::InvalidPath, m))?;
        Ok(out.into())
    }

    /// Parses `key=value` at `i`, pushing the field (or noting a field-level rejection);
    /// returns the index after the value.
    fn field(&mut self, i: usize, fields: &mut Vec<Field>) -> Result<usize, LineError> {
        let input = self.input;
        let k_end = scan(input, i, C_COMMA | C_EQ | C_SPACE | C_CR);
        if k_end == i {
            if is_eol(input, i) {
                return err(i, "expected a field set");
            }
            return err(i, "expected a field key");
        }
        if input.get(k_end) != Some(&b'=') {
            return err(k_end, "expected '=' after the field key");
        }
        let raw_key = &input[i..k_end];
        let v_start = k_end + 1;
        let (value, next) = match input.get(v_start) {
            Some(b'"') => {
                let (s, next) = self.string(v_start)?;
                (Ok(FieldValue::Text(s)), next)
            }
            _ => {
                let end = scan_token(input, v_start);
                let tok = &input[v_start..end];
                (parse_value(tok, v_start)?, end)
            }
        };
        let measurement = if !raw_key.contains(&b'\\') {
            match std::str::from_utf8(raw_key) {
                Ok(s) if is_clean_measurement(s) => self.name(fields.len(), s),
                Ok(s) => sanitize_measurement(s).into(),
                Err(e) => return err(i + e.valid_up_to(), "invalid UTF-8 in a field key"),
            }
        } else {
            sanitize_measurement(&utf8(unescape(raw_key, KEY_ESCAPES), i, "a field key")?).into()
        };
        match value {
            Ok(value) => {
                // Suffixed integers, quoted strings and booleans declare their type; a plain
                // number is typed by the schema defaults (DOUBLE unless configured).
                let type_hint = match value {
                    FieldValue::Int(_) => Some(DataType::INT64),
                    FieldValue::Text(_) => Some(DataType::TEXT),
                    FieldValue::Bool(_) => Some(DataType::BOOLEAN),
                    FieldValue::Float(_) => None,
                };
                fields.push(Field {
                    measurement,
                    value,
                    type_hint,
                });
            }
            Err((reason, message)) => self.field_rejects.push((
                v_start,
                reason,
                format!("field {measurement:?}: {message}"),
            )),
        }
        Ok(next)
    }

    /// A quoted string value starting at the `"` at `q`; returns it and the index after it.
    fn string(&mut self, q: usize) -> Result<(String, usize), LineError> {
        let input = self.input;
        let start = q + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            match input.get(i) {
                None => return err(q, "unterminated string value (missing '\"')"),
                Some(b'\\') => {
                    if matches!(input.get(i + 1), Some(b'"' | b'\\')) {
                        escaped = true;
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
                Some(b'"') => break,
                Some(_) => i += 1,
            }
        }
        let raw = &input[start..i];
        let bytes = if escaped {
            unescape(raw, b"\"")
        } else {
            Cow::Borrowed(raw)
        };
        let s = utf8(bytes, start, "a string value")?.into_owned();
        self.count_lines(start, i);
        Ok((s, i + 1))
    }
}

/// End of an unquoted value token (at `,`, ` `, or the line end).
#[inline]
fn scan_token(input: &[u8], mut i: usize) -> usize {
    while let Some(&b) = input.get(i) {
        let c = CLASS[b as usize];
        if c & (C_COMMA | C_SPACE | C_NL) != 0 || (c == C_CR && is_eol(input, i)) {
            break;
        }
        i += 1;
    }
    i
}

fn is_int_shaped(tok: &[u8]) -> bool {
    let digits = tok.strip_prefix(b"-").unwrap_or(tok);
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

/// Parses `-?[0-9]+` into an i64 (None when malformed or out of range).
fn parse_int(tok: &[u8]) -> Option<i64> {
    let (neg, digits) = match tok.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, tok),
    };
    if digits.is_empty() {
        return None;
    }
    if digits.len() <= 18 {
        // Cannot overflow: 10^18 - 1 < i64::MAX.
        let mut v: i64 = 0;
        for &d in digits {
            let d = d.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + i64::from(d);
        }
        return Some(if neg { -v } else { v });
    }
    // Accumulate negatively so i64::MIN fits.
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
    }
    if neg {
        Some(v)
    } else {
        v.checked_neg()
    }
}

type FieldResult = Result<FieldValue, (RejectReason, String)>;

/// Parses an unquoted field value. Err is a syntax error of the line; Ok(Err) a value that
/// is well-formed but does not fit (field-level rejection).
fn parse_value(tok: &[u8], at: usize) -> Result<FieldResult, LineError> {
    const EXPECTED: &str = "invalid field value; expected a float, an integer (1i), an \
                            unsigned (1u), a string in quotes or a boolean";
    let Some(&last) = tok.last() else {
        return err(at, "expected a field value");
    };
    match tok {
        b"t" | b"T" | b"true" | b"True" | b"TRUE" => return Ok(Ok(FieldValue::Bool(true))),
        b"f" | b"F" | b"false" | b"False" | b"FALSE" => return Ok(Ok(FieldValue::Bool(false))),
        _ => {}
    }
    let body = &tok[..tok.len() - 1];
    match last {
        b'i' => {
            if !is_int_shaped(body) {
                return err(at, EXPECTED);
            }
            Ok(match parse_int(body) {
                Some(v) => Ok(FieldValue::Int(v)),
                None => Err((
                    RejectReason::TypeMismatch,
                    "integer is out of the INT64 range".into(),
                )),
            })
        }
        b'u' => {
            if body.is_empty() || !body.iter().all(u8::is_ascii_digit) {
                return err(at, EXPECTED);
            }
            let v = std::str::from_utf8(body)
                .ok()
                .and_then(|s| s.parse::<u64>().ok());
            Ok(match v.and_then(|v| i64::try_from(v).ok()) {
                Some(v) => Ok(FieldValue::Int(v)),
                None => Err((
                    RejectReason::TypeMismatch,
                    "unsigned integer is above the INT64 maximum".into(),
                )),
            })
        }
        _ => {
            // Rust's float syntax is InfluxDB's (`[+-]`, digits, `.`, an exponent) plus
            // `inf`, `infinity` and `nan`, the only accepted forms without a digit.
            if !tok.iter().any(u8::is_ascii_digit) {
                return err(at, EXPECTED);
            }
            let parsed = std::str::from_utf8(tok)
                .ok()
                .and_then(|s| s.parse::<f64>().ok());
            match parsed {
                None => err(at, EXPECTED),
                Some(f) if f.is_finite() => Ok(Ok(FieldValue::Float(f))),
                Some(_) => Ok(Err((
                    RejectReason::TypeMismatch,
                    "float is out of the DOUBLE range".into(),
                ))),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering (for load generators and round-trip tests).

fn push_escaped(out: &mut String, s: &str, specials: &[u8]) {
    for c in s.chars() {
        if c == '\\' || (c.is_ascii() && specials.contains(&(c as u8))) {
            out.push('\\');
        }
        out.push(c);
    }
}

/// Appends one line of line protocol (with its `\n`). Non-finite floats are skipped (line
/// protocol cannot carry them); a line whose fields are all skipped is not written.
/// Measurement, keys and values must not contain newlines (line protocol cannot escape them
/// outside string values).
pub fn write_line(
    out: &mut String,
    measurement: &str,
    tags: &[(&str, &str)],
    fields: &[(&str, &FieldValue)],
    timestamp: Option<i64>,
) {
    let start = out.len();
    push_escaped(out, measurement, MEASUREMENT_ESCAPES);
    for (k, v) in tags {
        out.push(',');
        push_escaped(out, k, KEY_ESCAPES);
        out.push('=');
        push_escaped(out, v, KEY_ESCAPES);
    }
    let mut sep = ' ';
    for (k, v) in fields {
        if matches!(v, FieldValue::Float(f) if !f.is_finite()) {
            continue;
        }
        out.push(sep);
        sep = ',';
        push_escaped(out, k, KEY_ESCAPES);
        out.push('=');
        match v {
            FieldValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            FieldValue::Int(i) => {
                let _ = write!(out, "{i}i");
            }
            FieldValue::Float(f) => {
                let _ = write!(out, "{f:?}");
            }
            FieldValue::Text(s) => {
                out.push('"');
                for c in s.chars() {
                    if c == '"' || c == '\\' {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push('"');
            }
        }
    }
    if sep == ' ' {
        out.truncate(start);
        return;
    }
    if let Some(t) = timestamp {
        let _ = write!(out, " {t}");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod corpus_tests;
