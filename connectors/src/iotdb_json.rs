//! IoTDB's JSON payloads, read as IoTDB's MQTT service reads them (its `JSONPayloadFormatter`).
//!
//! Accepted forms (and a JSON array of any mix of the two):
//! - one record: `{"device":"root.sg.d1","timestamp":1,"measurements":["s1","s2"],"values":[1,2.5]}`
//!   — `values[k]` is the value of `measurements[k]` at `timestamp`.
//! - batch form: `{"device":"root.sg.d1","timestamps":[1,2],"measurements":["s1","s2"],
//!   "values":[[1,2.5],[3,4.5]]}` — rows: `values[i]` is the row of `timestamps[i]`, one value
//!   per measurement in measurement order (here s1@1=1, s2@1=2.5, s1@2=3, s2@2=4.5).
//!
//! Values: JSON `true`/`false` → [`FieldValue::Bool`], integers → [`FieldValue::Int`] (an
//! integer above `i64::MAX` is a TypeMismatch), other numbers → [`FieldValue::Float`], strings →
//! [`FieldValue::Text`], `null` → no point. Timestamps are JSON integers (or, as IoTDB's MQTT
//! service also takes them, strings holding an integer) in
//! [`JsonOptions::input_unit`], converted to [`JsonOptions::stored_unit`]; a non-integer or
//! overflowing timestamp is an InvalidTime rejection. Other keys are ignored.
//!
//! Errors: a payload that is not JSON is one Parse rejection at `line L, column C` (and nothing
//! of it is accepted). A record of the wrong shape is rejected alone, at its JSON path (`$[3]`,
//! `$[3].values`); the other records still parse. In batch form, as many rows as timestamps
//! are required (else the record is rejected at `.values`), and a row whose length differs from
//! `measurements` is rejected alone at `.values[i]`. A bad value rejects only its point
//! (`$[3].values[1][7]`: row 1, measurement 7); a bad measurement name only its column; a bad
//! timestamp only the points at that timestamp. Device and measurement names must pass
//! [`validate_device`](crate::path::validate_device) /
//! [`validate_measurement`](crate::path::validate_measurement) (InvalidPath otherwise; names
//! are not sanitized). [`parse_iotdb_json_with`] takes known names from a [`Names`] cache.
//!
//! Parsing is a single pass of typed serde deserialization (no `serde_json::Value` tree;
//! strings are borrowed from the payload when they have no escapes). A plain single record
//! without anything to reject is read by a direct reader first (`single`), with the same
//! result.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::model::{Batch, Field, FieldValue, Location, Record, RejectReason, Rejection, TimeUnit};
use crate::names::Names;
use crate::reject::reject;

/// Options of the IoTDB JSON parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonOptions {
    /// Unit of incoming timestamps (IoTDB: milliseconds).
    pub input_unit: TimeUnit,
    /// The pipeline's stored precision.
    pub stored_unit: TimeUnit,
}

impl Default for JsonOptions {
    fn default() -> Self {
        JsonOptions {
            input_unit: TimeUnit::Millis,
            stored_unit: TimeUnit::Millis,
        }
    }
}

/// Parses an IoTDB JSON payload (see the module docs). Never panics.
pub fn parse_iotdb_json(input: &[u8], opts: &JsonOptions) -> Batch {
    parse_iotdb_json_with(input, opts, &mut Names::default())
}

/// [`parse_iotdb_json`] taking device and measurement names from `names` (and adding the new
/// valid ones): a stream of payloads shares one string per name.
pub fn parse_iotdb_json_with(input: &[u8], opts: &JsonOptions, names: &mut Names) -> Batch {
    let mut batch = Batch::default();
    batch.rejections = parse_iotdb_json_into(input, opts, names, &mut batch.records);
    batch
}

/// [`parse_iotdb_json_with`] appending the payload's records to `records` (a batch of many
/// payloads then takes no vector of its own per payload); returns its rejections.
pub fn parse_iotdb_json_into(
    input: &[u8],
    opts: &JsonOptions,
    names: &mut Names,
    records: &mut Vec<Record>,
) -> Vec<Rejection> {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    if single::parse_into(input, opts, names, records).is_some() {
        return Vec::new();
    }
    let mut batch = parse_general(input, opts, names);
    if records.is_empty() {
        std::mem::swap(records, &mut batch.records);
    } else {
        records.append(&mut batch.records);
    }
    batch.rejections
}

/// The general parser (serde), for every form; `input` without its byte-order mark.
fn parse_general(input: &[u8], opts: &JsonOptions, names: &mut Names) -> Batch {
    let mut ctx = Ctx {
        opts: *opts,
        batch: Batch::default(),
        arena: Arena::for_payload(input.len()),
        names: std::mem::take(names),
    };
    let mut de = serde_json::Deserializer::from_slice(input);
    let result = TopSeed { ctx: &mut ctx }
        .deserialize(&mut de)
        .and_then(|()| de.end());
    *names = std::mem::take(&mut ctx.names);
    match result {
        Ok(()) => ctx.batch,
        Err(e) => {
            let seen = ctx.batch.point_count() + ctx.batch.rejected_points();
            let mut batch = Batch::default();
            let (line, column) = (e.line(), e.column());
            reject(
                &mut batch,
                RejectReason::Parse,
                seen,
                || Location::column(line as u64, column as u64),
                || format!("not valid JSON: {e}"),
            );
            batch
        }
    }
}

/// [`parse_iotdb_json`] with default options (ms in, ms stored): the fuzzing entry point.
pub fn parse_iotdb_json_default(input: &[u8]) -> Batch {
    parse_iotdb_json(input, &JsonOptions::default())
}

// ---------------------------------------------------------------------------------------------
// A small typed JSON tree: scalars, arrays up to a fixed depth, objects skipped. The entries of
// arrays live in one flat buffer (the [`Arena`]), so the rows of a batch cost no allocation
// each.

#[derive(Debug)]
enum J<'a> {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer above `i64::MAX`.
    Big(u64),
    Float(f64),
    Str(Cow<'a, str>),
    /// An array: its entries in the [`Arena`].
    Arr(Span),
    /// An array nested deeper than the forms need (contents skipped).
    DeepArr,
    Obj,
}

impl J<'_> {
    fn kind(&self) -> &'static str {
        match self {
            J::Null => "null",
            J::Bool(_) => "a boolean",
            J::Int(_) | J::Big(_) => "an integer",
            J::Float(_) => "a number",
            J::Str(_) => "a string",
            J::Arr(_) | J::DeepArr => "an array",
            J::Obj => "an object",
        }
    }
}

/// The entries of an array: `len` entries of the arena from `start`.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    len: usize,
}

/// The entries of the arrays of one record, flat (cleared after each record, so its memory is
/// reused by the next record of the payload).
#[derive(Default)]
struct Arena<'a> {
    items: Vec<J<'a>>,
    /// Spare buffers for the entries of an array of arrays while its inner arrays fill `items`.
    spare: Vec<Vec<J<'a>>>,
}

impl<'a> Arena<'a> {
    /// An arena sized for a payload of `bytes` bytes (at least 4 bytes per JSON value, such as
    /// `1.5,`; capped so that a large payload grows it as needed instead).
    fn for_payload(bytes: usize) -> Arena<'a> {
        Arena {
            items: Vec::with_capacity((bytes / 4).min(1 << 16)),
            spare: Vec::new(),
        }
    }

    /// The entries of an array.
    fn get(&self, s: Span) -> &[J<'a>] {
        &self.items[s.start..s.start + s.len]
    }

    /// Points a value or array stands for (non-null entries), for rejection counts.
    fn points(&self, j: &J<'_>) -> u64 {
        match j {
            J::Null => 0,
            J::Arr(s) => self.get(*s).iter().map(|j| self.points(j)).sum(),
            _ => 1,
        }
    }

    /// Points of a value that may be missing (a missing one counts as one).
    fn points_of(&self, j: &Option<J<'_>>) -> u64 {
        j.as_ref().map_or(1, |j| self.points(j))
    }
}

/// Deserializes a [`J`] allowing `depth` levels of arrays.
struct JSeed<'p, 'de> {
    depth: u8,
    arena: &'p mut Arena<'de>,
}

impl<'de> DeserializeSeed<'de> for JSeed<'_, 'de> {
    type Value = J<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<J<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for JSeed<'_, 'de> {
    type Value = J<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<J<'de>, E> {
        Ok(J::Null)
    }
    fn visit_none<E>(self) -> Result<J<'de>, E> {
        Ok(J::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<J<'de>, E> {
        Ok(J::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<J<'de>, E> {
        Ok(J::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<J<'de>, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => J::Int(i),
            Err(_) => J::Big(v),
        })
    }
    fn visit_f64<E>(self, v: f64) -> Result<J<'de>, E> {
        Ok(J::Float(v))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<J<'de>, E> {
        Ok(J::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<J<'de>, E> {
        Ok(J::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<J<'de>, E> {
        Ok(J::Str(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<J<'de>, A::Error> {
        let arena = self.arena;
        match self.depth {
            0 => {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(J::DeepArr)
            }
            // Entries that hold no array: straight into the arena.
            1 => {
                let start = arena.items.len();
                while let Some(item) = seq.next_element_seed(JSeed {
                    depth: 0,
                    arena: &mut *arena,
                })? {
                    arena.items.push(item);
                }
                let len = arena.items.len() - start;
                Ok(J::Arr(Span { start, len }))
            }
            // Entries that may be arrays (whose entries fill the arena meanwhile): gathered
            // aside, then appended.
            depth => {
                let mut items = arena.spare.pop().unwrap_or_default();
                while let Some(item) = seq.next_element_seed(JSeed {
                    depth: depth - 1,
                    arena: &mut *arena,
                })? {
                    items.push(item);
                }
                let (start, len) = (arena.items.len(), items.len());
                arena.items.append(&mut items);
                arena.spare.push(items);
                Ok(J::Arr(Span { start, len }))
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<J<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(J::Obj)
    }
}

/// The keys of a record we look at.
enum Key {
    Device,
    Timestamp,
    Timestamps,
    Measurements,
    Values,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "device" => Key::Device,
                    "timestamp" => Key::Timestamp,
                    "timestamps" => Key::Timestamps,
                    "measurements" => Key::Measurements,
                    "values" => Key::Values,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// A record's parts as found (shape not yet checked); arrays are in the arena.
#[derive(Default)]
struct RawRecord<'a> {
    device: Option<J<'a>>,
    timestamp: Option<J<'a>>,
    timestamps: Option<J<'a>>,
    measurements: Option<J<'a>>,
    values: Option<J<'a>>,
}

fn read_record<'de, A: MapAccess<'de>>(
    mut map: A,
    arena: &mut Arena<'de>,
) -> Result<RawRecord<'de>, A::Error> {
    let mut rec = RawRecord::default();
    while let Some(key) = map.next_key::<Key>()? {
        let slot = match key {
            Key::Device => &mut rec.device,
            Key::Timestamp => &mut rec.timestamp,
            Key::Timestamps => &mut rec.timestamps,
            Key::Measurements => &mut rec.measurements,
            Key::Values => &mut rec.values,
            Key::Other => {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
        };
        // A repeated key: the last one counts (the earlier one's entries stay unused in the
        // arena until the record is done).
        *slot = Some(map.next_value_seed(JSeed {
            depth: 2,
            arena: &mut *arena,
        })?);
    }
    Ok(rec)
}

// ---------------------------------------------------------------------------------------------
// Top level: an object or an array of objects.

struct Ctx<'de> {
    opts: JsonOptions,
    batch: Batch,
    arena: Arena<'de>,
    names: Names,
}

struct TopSeed<'c, 'de> {
    ctx: &'c mut Ctx<'de>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl TopSeed<'_, '_> {
    fn wrong(self, found: &str) {
        reject(
            &mut self.ctx.batch,
            RejectReason::Parse,
            1,
            || Location::Json("$".to_owned()),
            || format!("expected an object or an array of objects, found {found}"),
        );
    }
}

impl<'de> Visitor<'de> for TopSeed<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or an array of objects")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.wrong("null");
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        self.wrong("a boolean");
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        self.wrong("a number");
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        self.wrong("a number");
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        self.wrong("a number");
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        self.wrong("a string");
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let rec = read_record(map, &mut self.ctx.arena)?;
        self.ctx.process(rec, None);
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while seq
            .next_element_seed(ElemSeed {
                ctx: &mut *self.ctx,
                index,
            })?
            .is_some()
        {
            index += 1;
        }
        Ok(())
    }
}

/// One element of a top-level array.
struct ElemSeed<'c, 'de> {
    ctx: &'c mut Ctx<'de>,
    index: usize,
}

impl<'de> DeserializeSeed<'de> for ElemSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl ElemSeed<'_, '_> {
    fn wrong(self, found: &str, points: u64) {
        let index = self.index;
        reject(
            &mut self.ctx.batch,
            RejectReason::Parse,
            points,
            || Location::Json(format!("$[{index}]")),
            || format!("expected an object, found {found}"),
        );
    }
}

impl<'de> Visitor<'de> for ElemSeed<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.wrong("null", 1);
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        self.wrong("a boolean", 1);
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        self.wrong("a number", 1);
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        self.wrong("a number", 1);
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        self.wrong("a number", 1);
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        self.wrong("a string", 1);
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut n = 0u64;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        self.wrong("an array", n);
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let rec = read_record(map, &mut self.ctx.arena)?;
        self.ctx.process(rec, Some(self.index));
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Turning a raw record into records and rejections.

/// JSON path of a record: `$` or `$[i]`.
#[derive(Clone, Copy)]
struct Base(Option<usize>);

impl fmt::Display for Base {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("$"),
            Some(i) => write!(f, "$[{i}]"),
        }
    }
}

enum Value {
    Point(FieldValue),
    Absent,
    Bad(String),
}

/// The value `j` stands for.
fn value_of(j: &J<'_>) -> Value {
    match j {
        J::Null => Value::Absent,
        J::Bool(b) => Value::Point(FieldValue::Bool(*b)),
        J::Int(i) => Value::Point(FieldValue::Int(*i)),
        J::Float(f) => Value::Point(FieldValue::Float(*f)),
        J::Str(s) => Value::Point(FieldValue::Text(s.as_ref().to_owned())),
        J::Big(u) => Value::Bad(format!("integer {u} is out of the INT64 range")),
        other => Value::Bad(format!(
            "expected a number, boolean, string or null, found {}",
            other.kind()
        )),
    }
}

impl Ctx<'_> {
    fn shape(&mut self, base: Base, suffix: &str, points: u64, message: String) {
        reject(
            &mut self.batch,
            RejectReason::Parse,
            points,
            || Location::Json(format!("{base}{suffix}")),
            || message,
        );
    }

    fn time(&self, j: &J<'_>) -> Result<i64, String> {
        let t = match j {
            J::Int(t) => *t,
            // IoTDB's own MQTT service also takes a quoted integer.
            J::Str(s) if is_integer_text(s) => s
                .parse::<i64>()
                .map_err(|_| format!("timestamp {s} is out of the INT64 range"))?,
            J::Big(t) => return Err(format!("timestamp {t} is out of the INT64 range")),
            other => {
                return Err(format!(
                    "expected an integer timestamp, found {}",
                    other.kind()
                ))
            }
        };
        let (from, to) = (self.opts.input_unit, self.opts.stored_unit);
        from.convert(t, to)
            .ok_or_else(|| format!("timestamp {t} {from} overflows when converted to {to}"))
    }
}

/// A quoted timestamp IoTDB would accept: `-?[0-9]+`.
fn is_integer_text(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty() && digits.len() <= 20 && digits.bytes().all(|b| b.is_ascii_digit())
}

impl<'de> Ctx<'de> {
    fn process(&mut self, rec: RawRecord<'de>, index: Option<usize>) {
        let arena = std::mem::take(&mut self.arena);
        self.check(&rec, Base(index), &arena);
        self.arena = arena;
        self.arena.items.clear();
    }

    fn check(&mut self, rec: &RawRecord<'de>, base: Base, arena: &Arena<'de>) {
        // Shape of the record as a whole.
        let Some(device) = &rec.device else {
            let points = arena.points_of(&rec.values);
            return self.shape(base, "", points, "missing key \"device\"".into());
        };
        let J::Str(device) = device else {
            let m = format!("expected a string, found {}", device.kind());
            return self.shape(base, ".device", arena.points_of(&rec.values), m);
        };
        let Some(measurements) = &rec.measurements else {
            let points = arena.points_of(&rec.values);
            return self.shape(base, "", points, "missing key \"measurements\"".into());
        };
        let J::Arr(measurements) = measurements else {
            let m = format!("expected an array, found {}", measurements.kind());
            return self.shape(base, ".measurements", arena.points_of(&rec.values), m);
        };
        let measurements = arena.get(*measurements);
        let Some(values) = &rec.values else {
            return self.shape(base, "", 1, "missing key \"values\"".into());
        };
        let J::Arr(values) = values else {
            let m = format!("expected an array, found {}", values.kind());
            return self.shape(base, ".values", 1, m);
        };
        let values = arena.get(*values);
        let points = |values: &[J<'_>]| values.iter().map(|j| arena.points(j)).sum::<u64>();
        let timestamps = match (&rec.timestamp, &rec.timestamps) {
            (Some(_), Some(_)) => {
                let m = "has both \"timestamp\" and \"timestamps\"".to_owned();
                return self.shape(base, "", points(values), m);
            }
            (None, None) => {
                let m = "missing key \"timestamp\"".into();
                return self.shape(base, "", points(values), m);
            }
            (Some(t), None) => Err(t),
            (None, Some(J::Arr(ts))) => Ok(arena.get(*ts)),
            (None, Some(other)) => {
                let m = format!("expected an array, found {}", other.kind());
                return self.shape(base, ".timestamps", points(values), m);
            }
        };
        match timestamps {
            Err(_) if values.len() != measurements.len() => {
                let m = format!(
                    "{} values for {} measurements",
                    values.len(),
                    measurements.len()
                );
                return self.shape(base, ".values", points(values), m);
            }
            Ok(ts) if values.len() != ts.len() => {
                let m = format!("{} rows for {} timestamps", values.len(), ts.len());
                return self.shape(base, ".values", points(values), m);
            }
            _ => {}
        }
        // Shared by the record's rows (and by the payloads of one stream).
        let device: Arc<str> = match self.names.device(device) {
            Ok(d) => d,
            Err(e) => {
                reject(
                    &mut self.batch,
                    RejectReason::InvalidPath,
                    points(values),
                    || Location::Json(format!("{base}.device")),
                    || format!("device {device:?} {e}"),
                );
                return;
            }
        };

        // Points of measurement `k`: its value (one record) or its value in every row of the
        // right length (batch form; other rows are rejected whole).
        let width = measurements.len();
        let column_points = |k: usize| -> u64 {
            match timestamps {
                Err(_) => values.get(k).map_or(1, |j| arena.points(j)),
                Ok(_) => values
                    .iter()
                    .filter_map(|row| match row {
                        J::Arr(row) if row.len == width => Some(arena.points(&arena.get(*row)[k])),
                        _ => None,
                    })
                    .sum(),
            }
        };
        // Columns: a valid measurement name (else the column is rejected), shared by the
        // column's fields.
        let mut names: Vec<Option<Arc<str>>> = Vec::with_capacity(width);
        for (k, m) in measurements.iter().enumerate() {
            match m {
                J::Str(name) => match self.names.measurement_at(k, name) {
                    Ok(name) => names.push(Some(name)),
                    Err(e) => {
                        names.push(None);
                        reject(
                            &mut self.batch,
                            RejectReason::InvalidPath,
                            column_points(k),
                            || Location::Json(format!("{base}.measurements[{k}]")),
                            || format!("measurement {name:?} {e}"),
                        );
                    }
                },
                other => {
                    names.push(None);
                    let msg = format!("expected a string, found {}", other.kind());
                    let points = column_points(k);
                    self.shape(base, &format!(".measurements[{k}]"), points, msg);
                }
            }
        }

        match timestamps {
            Err(t) => self.row(base, None, &device, t, &names, values, arena),
            Ok(ts) => {
                self.batch.records.reserve(ts.len());
                for (i, (t, row)) in ts.iter().zip(values).enumerate() {
                    match row {
                        J::Arr(row) if row.len == width => {
                            let row = arena.get(*row);
                            self.row(base, Some(i), &device, t, &names, row, arena);
                        }
                        J::Arr(row) => {
                            let row = arena.get(*row);
                            let m = format!(
                                "row {i} has {} values for {width} measurements",
                                row.len()
                            );
                            let points = points(row);
                            self.shape(base, &format!(".values[{i}]"), points, m);
                        }
                        other => {
                            let m = format!(
                                "expected a row (an array of one value per measurement), found {}",
                                other.kind()
                            );
                            let points = arena.points(other);
                            self.shape(base, &format!(".values[{i}]"), points, m);
                        }
                    }
                }
            }
        }
    }

    /// One record: the values `row` of the measurements `names` at timestamp `t`; `index` is
    /// the row's index in batch form (`None` for a single record).
    #[allow(clippy::too_many_arguments)]
    fn row(
        &mut self,
        base: Base,
        index: Option<usize>,
        device: &Arc<str>,
        t: &J<'_>,
        names: &[Option<Arc<str>>],
        row: &[J<'_>],
        arena: &Arena<'_>,
    ) {
        let time = match self.time(t) {
            Ok(t) => t,
            Err(m) => {
                let points: u64 = names
                    .iter()
                    .zip(row.iter())
                    .filter(|(n, _)| n.is_some())
                    .map(|(_, v)| arena.points(v))
                    .sum();
                // A batch row with no value at a bad timestamp loses nothing.
                if points > 0 || index.is_none() {
                    reject(
                        &mut self.batch,
                        RejectReason::InvalidTime,
                        points,
                        || {
                            Location::Json(match index {
                                None => format!("{base}.timestamp"),
                                Some(i) => format!("{base}.timestamps[{i}]"),
                            })
                        },
                        || m,
                    );
                }
                return;
            }
        };
        let mut fields = Vec::with_capacity(names.len());
        for (k, (name, v)) in names.iter().zip(row.iter()).enumerate() {
            let Some(name) = name else { continue };
            match value_of(v) {
                Value::Point(value) => fields.push(Field::new(name.clone(), value)),
                Value::Absent => {}
                Value::Bad(m) => reject(
                    &mut self.batch,
                    RejectReason::TypeMismatch,
                    1,
                    || {
                        Location::Json(match index {
                            None => format!("{base}.values[{k}]"),
                            Some(i) => format!("{base}.values[{i}][{k}]"),
                        })
                    },
                    || m,
                ),
            }
        }
        if !fields.is_empty() {
            self.batch.records.push(Record {
                device: device.clone(),
                time,
                fields,
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering (for load generators and round-trip tests).

fn write_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                use fmt::Write;
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `v` as JSON. Floats always carry a `.` or exponent so they read back as floats;
/// non-finite floats (not representable in JSON) are written as `null`.
pub fn write_json_value(out: &mut String, v: Option<&FieldValue>) {
    use fmt::Write;
    match v {
        None => out.push_str("null"),
        Some(FieldValue::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
        Some(FieldValue::Int(i)) => {
            let _ = write!(out, "{i}");
        }
        Some(FieldValue::Float(f)) if f.is_finite() => {
            let _ = write!(out, "{f:?}");
        }
        Some(FieldValue::Float(_)) => out.push_str("null"),
        Some(FieldValue::Text(s)) => write_json_str(out, s),
    }
}

/// Appends a record in IoTDB's single-record form (timestamp as stored).
pub fn write_record(out: &mut String, record: &Record) {
    use fmt::Write;
    out.push_str("{\"device\":");
    write_json_str(out, &record.device);
    let _ = write!(out, ",\"timestamp\":{},\"measurements\":[", record.time);
    for (i, f) in record.fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_json_str(out, &f.measurement);
    }
    out.push_str("],\"values\":[");
    for (i, f) in record.fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_json_value(out, Some(&f.value));
    }
    out.push_str("]}");
}

/// Appends one device's points in IoTDB's batch form: `rows[i]` holds the values at
/// `timestamps[i]`, one per measurement in `measurements` order (`None` → `null`). Missing rows
/// and short rows are padded with `null`.
pub fn write_tablet(
    out: &mut String,
    device: &str,
    timestamps: &[i64],
    measurements: &[&str],
    rows: &[Vec<Option<FieldValue>>],
) {
    use fmt::Write;
    out.push_str("{\"device\":");
    write_json_str(out, device);
    out.push_str(",\"timestamps\":[");
    for (i, t) in timestamps.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{t}");
    }
    out.push_str("],\"measurements\":[");
    for (i, m) in measurements.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_json_str(out, m);
    }
    out.push_str("],\"values\":[");
    for i in 0..timestamps.len() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        let row = rows.get(i).map_or(&[][..], Vec::as_slice);
        for k in 0..measurements.len() {
            if k > 0 {
                out.push(',');
            }
            write_json_value(out, row.get(k).and_then(Option::as_ref));
        }
        out.push(']');
    }
    out.push_str("]}");
}

mod single;

#[cfg(test)]
mod tests;
