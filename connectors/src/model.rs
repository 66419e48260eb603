//! The normalized data model every source produces.
//!
//! A parser turns a payload into [`Record`]s (one device, one timestamp, several
//! fields) plus [`Rejection`]s for the parts it could not use; good records are never
//! dropped because of bad ones. Values are untyped here ([`FieldValue`]): the daemon's
//! schema decides the series' TsFile type.

use std::fmt;

pub use tsfiled_core::{declared_type, DataType, TimeUnit};

/// An untyped field value as a payload carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    /// A boolean.
    Bool(bool),
    /// An integer (JSON integer, line-protocol `i` suffix).
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Text(String),
}

/// One measurement value of a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Measurement name (the last path component; shared by the fields of one column).
    pub measurement: std::sync::Arc<str>,
    /// Its value.
    pub value: FieldValue,
    /// The TsFile type the input declared for this series, if any: the `(INT32)` suffix of
    /// an IoTDB CSV export header (`root.sg.d1.s1(INT32)`), a line-protocol suffix (`1i`), a
    /// REST `data_types` entry (names by [`declared_type`]); `None` for inputs without
    /// declared types (IoTDB JSON, MQTT plain values, untyped CSV headers, unsuffixed
    /// line-protocol numbers).
    ///
    /// The daemon creates a new series with the declared type (instead of inferring one from
    /// the first value) and stores the value in it. A declared type that differs from the
    /// series' type (already known, or pinned by a schema rule) rejects the point
    /// ([`RejectReason::DeclaredTypeConflict`]); it is never converted.
    pub type_hint: Option<DataType>,
}

impl Field {
    /// A field without a type hint.
    pub fn new(measurement: impl Into<std::sync::Arc<str>>, value: FieldValue) -> Field {
        Field {
            measurement: measurement.into(),
            value,
            type_hint: None,
        }
    }
}

/// Fields the spare vectors of one thread may hold in all ([`recycle_fields`]): 6 MiB of them.
const SPARE_FIELDS_MAX: usize = 1 << 17;

/// A thread's spare field vectors and the fields they hold in all.
#[derive(Default)]
struct Spare {
    vectors: Vec<Vec<Field>>,
    fields: usize,
    /// A parser of this thread asked for a vector ([`spare_fields`]): only then are vectors
    /// kept, so a thread whose parsers never refill them holds none.
    wanted: bool,
}

thread_local! {
    static SPARE: std::cell::RefCell<Spare> = std::cell::RefCell::new(Spare::default());
}

/// Keeps a record's field vector, its fields included, for a parser of this thread to refill
/// ([`spare_fields`]) once the record has been used. A parser that finds a field's
/// measurement already in place (the same interned name) replaces only the value, so the
/// name's reference count is neither raised for the new field nor lowered for the old one,
/// and the vector is not allocated again. A vector holding a string value, one past the
/// thread's limit ([`SPARE_FIELDS_MAX`] fields in all), or any on a thread whose parsers have
/// not asked for one, is dropped instead.
pub fn recycle_fields(fields: Vec<Field>) {
    if fields.is_empty()
        || fields
            .iter()
            .any(|f| matches!(f.value, FieldValue::Text(_)))
    {
        return;
    }
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        if s.wanted && s.fields + fields.len() <= SPARE_FIELDS_MAX {
            s.fields += fields.len();
            s.vectors.push(fields);
        }
    });
}

/// A field vector to fill: the one this thread recycled last ([`recycle_fields`]), its old
/// fields still in it to be overwritten or truncated, or else a new one with room for
/// `room` fields.
pub fn spare_fields(room: usize) -> Vec<Field> {
    SPARE
        .with(|s| {
            let mut s = s.borrow_mut();
            s.wanted = true;
            let v = s.vectors.pop()?;
            s.fields -= v.len();
            Some(v)
        })
        .unwrap_or_else(|| Vec::with_capacity(room))
}

/// Sets field `at` of `fields` (at most its length) to `measurement` and `value` without a
/// type hint: in place when that field already names `measurement` (the same interned
/// string), else replacing it or, past the end, appended.
#[inline(always)]
pub fn put_field(
    fields: &mut Vec<Field>,
    at: usize,
    measurement: &std::sync::Arc<str>,
    value: FieldValue,
) {
    match fields.get_mut(at) {
        Some(f) if std::sync::Arc::ptr_eq(&f.measurement, measurement) => {
            f.value = value;
            f.type_hint = None;
        }
        Some(f) => *f = Field::new(measurement.clone(), value),
        None => fields.push(Field::new(measurement.clone(), value)),
    }
}

/// All fields of one device at one timestamp.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Device path, e.g. `root.sg.d1` (shared by the records of one device in a payload).
    pub device: std::sync::Arc<str>,
    /// Timestamp in the pipeline's stored precision.
    pub time: i64,
    /// Fields (at least one).
    pub fields: Vec<Field>,
}

/// Why a part of a payload was rejected. Bounded: used as a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// The payload (or a line/row of it) does not parse.
    Parse,
    /// A device or measurement name is not a valid path.
    InvalidPath,
    /// A value does not fit its series' type.
    TypeMismatch,
    /// A timestamp is missing, malformed or overflows after conversion.
    InvalidTime,
    /// The payload exceeds a size limit.
    TooLarge,
    /// The input declared a type other than the series' type.
    DeclaredTypeConflict,
}

impl RejectReason {
    /// The metric label value.
    pub fn label(self) -> &'static str {
        match self {
            RejectReason::Parse => "parse",
            RejectReason::InvalidPath => "invalid_path",
            RejectReason::TypeMismatch => "type_mismatch",
            RejectReason::InvalidTime => "invalid_time",
            RejectReason::TooLarge => "too_large",
            RejectReason::DeclaredTypeConflict => "declared_type_conflict",
        }
    }
}

/// Where a rejected part of a payload was, as data set where the rejection is made; shown as
/// `line 3, column 7`, `$[2].values[1][4]`, `record 4 (root.sg.d1.s1 at 1700000000000)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    /// Line `line` (1-based) of a text payload, and where in it the problem is when known:
    /// `at` = (line, column), 1-based (a later line when a string spans lines).
    Line {
        /// The line the rejected part starts on.
        line: u64,
        /// The line and column of the problem.
        at: Option<(u64, u64)>,
    },
    /// A JSON path into the payload: `$`, `$[2].values[1][4]`, `$.timestamps`.
    Json(String),
    /// The topic of an MQTT value payload.
    Topic,
    /// The payload of an MQTT value message: the whole (`payload`), a key of its JSON object
    /// (`payload.ts`), or a place in its text (`payload line 1, column 4`).
    Payload {
        /// The key of the JSON object.
        key: Option<&'static str>,
        /// The line and column (1-based) in the payload's text.
        at: Option<(u64, u64)>,
    },
    /// Record `index` (0-based) of a batch handed to the sink, rejected there (by the schema),
    /// with the point when one value of it was.
    Record {
        /// Index in [`Batch::records`].
        index: usize,
        /// The series and time of the rejected value, if the rejection is of one value.
        point: Option<PointAt>,
    },
    /// Rejections past the itemized limit, summed per reason
    /// ([`MAX_ITEMIZED_REJECTIONS`](crate::reject::MAX_ITEMIZED_REJECTIONS)).
    More,
}

/// One point of a record: its series and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointAt {
    /// Device path.
    pub device: std::sync::Arc<str>,
    /// Measurement name.
    pub measurement: std::sync::Arc<str>,
    /// Timestamp in the pipeline's stored precision.
    pub time: i64,
}

impl Location {
    /// A line without a column.
    pub fn line(line: u64) -> Location {
        Location::Line { line, at: None }
    }

    /// A line and the column of the problem on it.
    pub fn column(line: u64, column: u64) -> Location {
        Location::Line {
            line,
            at: Some((line, column)),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line { line, at: None } => write!(f, "line {line}"),
            Location::Line {
                line,
                at: Some((l, c)),
            } if l == line => write!(f, "line {line}, column {c}"),
            Location::Line {
                line,
                at: Some((l, c)),
            } => write!(f, "line {line} (at line {l}, column {c})"),
            Location::Json(path) => f.write_str(path),
            Location::Topic => f.write_str("topic"),
            Location::Payload { key, at } => {
                f.write_str("payload")?;
                if let Some(k) = key {
                    write!(f, ".{k}")?;
                }
                if let Some((l, c)) = at {
                    write!(f, " line {l}, column {c}")?;
                }
                Ok(())
            }
            Location::Record { index, point: None } => write!(f, "record {index}"),
            Location::Record {
                index,
                point: Some(p),
            } => write!(
                f,
                "record {index} ({}.{} at {})",
                p.device, p.measurement, p.time
            ),
            Location::More => f.write_str("(more)"),
        }
    }
}

/// A rejected part of a payload, with where it was and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// Where.
    pub location: Location,
    /// The bounded reason.
    pub reason: RejectReason,
    /// A human-readable explanation.
    pub message: String,
    /// Points lost with it (at least 1 for a value; the whole line's fields for a line).
    pub points: u64,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} ({})",
            self.location,
            self.message,
            self.reason.label()
        )
    }
}

/// What a parser produced from one payload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// Good records.
    pub records: Vec<Record>,
    /// Rejected parts.
    pub rejections: Vec<Rejection>,
}

impl Batch {
    /// Number of accepted points (fields over all records).
    pub fn point_count(&self) -> u64 {
        self.records.iter().map(|r| r.fields.len() as u64).sum()
    }

    /// Number of rejected points.
    pub fn rejected_points(&self) -> u64 {
        self.rejections.iter().map(|r| r.points).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `put_field` keeps a field naming the same interned string (only its value and type
    /// hint change), replaces one naming another string (even of equal text) and appends
    /// past the end.
    #[test]
    fn put_field_in_place_replaced_or_appended() {
        let s: std::sync::Arc<str> = "s".into();
        let equal_text: std::sync::Arc<str> = "s".into();
        let mut fields = vec![Field {
            measurement: s.clone(),
            value: FieldValue::Int(1),
            type_hint: Some(DataType::INT32),
        }];
        put_field(&mut fields, 0, &s, FieldValue::Float(2.5));
        assert!(std::sync::Arc::ptr_eq(&fields[0].measurement, &s));
        assert_eq!(fields[0].value, FieldValue::Float(2.5));
        assert_eq!(fields[0].type_hint, None);
        put_field(&mut fields, 0, &equal_text, FieldValue::Bool(true));
        assert!(std::sync::Arc::ptr_eq(&fields[0].measurement, &equal_text));
        assert_eq!(fields[0].value, FieldValue::Bool(true));
        put_field(&mut fields, 1, &s, FieldValue::Int(3));
        assert_eq!(
            fields,
            [
                Field::new("s", FieldValue::Bool(true)),
                Field::new("s", FieldValue::Int(3))
            ]
        );
    }

    /// A recycled vector is the next one handed out on its thread once a parser there asked
    /// for one; one holding a string value is not kept (nor an empty one), and the thread
    /// keeps at most `SPARE_FIELDS_MAX` fields.
    #[test]
    fn spare_fields_come_back_within_the_limit() {
        // A thread of its own: the pool is per thread.
        std::thread::spawn(|| {
            // Nothing is kept before a parser of the thread asked for a vector.
            recycle_fields(vec![Field::new("a", FieldValue::Int(1))]);
            let fresh = spare_fields(3);
            assert!(fresh.is_empty() && fresh.capacity() >= 3);
            let v = vec![Field::new("a", FieldValue::Int(1)); 2];
            let at = v.as_ptr();
            recycle_fields(v);
            let back = spare_fields(3);
            assert_eq!(back.as_ptr(), at);
            assert_eq!(back, vec![Field::new("a", FieldValue::Int(1)); 2]);
            recycle_fields(vec![
                Field::new("a", FieldValue::Int(1)),
                Field::new("t", FieldValue::Text("x".into())),
            ]);
            assert!(spare_fields(1).is_empty());
            // Filled to the limit, one more field is one too many.
            let half = SPARE_FIELDS_MAX / 2;
            recycle_fields(vec![Field::new("a", FieldValue::Int(1)); half]);
            recycle_fields(vec![Field::new("a", FieldValue::Int(1)); half]);
            recycle_fields(vec![Field::new("a", FieldValue::Int(1))]);
            assert_eq!(spare_fields(0).len(), half);
            assert_eq!(spare_fields(0).len(), half);
            assert!(spare_fields(0).is_empty());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn time_conversion() {
        assert_eq!(TimeUnit::Seconds.convert(2, TimeUnit::Millis), Some(2000));
        assert_eq!(
            TimeUnit::Nanos.convert(1_999_999, TimeUnit::Millis),
            Some(1)
        );
        assert_eq!(TimeUnit::Nanos.convert(-1, TimeUnit::Millis), Some(-1));
        assert_eq!(
            TimeUnit::Seconds.convert(i64::MAX / 10, TimeUnit::Millis),
            None
        );
    }
}
