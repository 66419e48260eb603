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
/// The pool shared between threads ([`spare_fields_across_threads`]) has the same limit.
const SPARE_FIELDS_MAX: usize = 1 << 17;

/// Vectors a thread gathers before it hands them to the shared pool in one lock, and the
/// most a parser takes from it in one lock.
const HANDOVER: usize = 256;

/// Spare field vectors and the fields they hold in all.
#[derive(Default)]
struct Vectors {
    vectors: Vec<Vec<Field>>,
    fields: usize,
}

impl Vectors {
    const fn new() -> Vectors {
        Vectors {
            vectors: Vec::new(),
            fields: 0,
        }
    }

    /// Keeps `fields` if the limit ([`SPARE_FIELDS_MAX`]) allows; else hands them back.
    fn keep(&mut self, fields: Vec<Field>) -> Result<(), Vec<Field>> {
        if self.fields + fields.len() <= SPARE_FIELDS_MAX {
            self.fields += fields.len();
            self.vectors.push(fields);
            Ok(())
        } else {
            Err(fields)
        }
    }

    fn pop(&mut self) -> Option<Vec<Field>> {
        let v = self.vectors.pop()?;
        self.fields -= v.len();
        Some(v)
    }
}

/// A thread's spare field vectors.
#[derive(Default)]
struct Spare {
    kept: Vectors,
    /// A parser of this thread asked for a vector ([`spare_fields`]): only then are vectors
    /// kept for this thread, so a thread whose parsers never refill them holds none.
    wanted: bool,
    /// Vectors on their way to the shared pool (at most [`HANDOVER`]).
    outgoing: Vec<Vec<Field>>,
}

thread_local! {
    static SPARE: std::cell::RefCell<Spare> = std::cell::RefCell::new(Spare::default());
}

/// A pool of vectors shared between threads: vectors recycled on a thread whose parsers do not
/// ask for them, for a parser on another thread ([`spare_fields_across_threads`]).
struct SharedPool {
    spare: std::sync::Mutex<Vectors>,
    /// Whether a parser asked this pool for vectors: until then it keeps none.
    wanted: std::sync::atomic::AtomicBool,
}

impl SharedPool {
    const fn new() -> SharedPool {
        SharedPool {
            spare: std::sync::Mutex::new(Vectors::new()),
            wanted: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn wanted(&self) -> bool {
        self.wanted.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vectors> {
        self.spare.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps the vectors of `outgoing` within the limit, in one lock, and empties it; those
    /// past the limit are dropped (after the lock is released).
    fn give(&self, outgoing: &mut Vec<Vec<Field>>) {
        let mut over = Vec::new();
        {
            let mut pool = self.lock();
            for v in outgoing.drain(..) {
                if let Err(v) = pool.keep(v) {
                    over.push(v);
                }
            }
        }
        drop(over);
    }

    /// Moves up to [`HANDOVER`] vectors, the last given first, into `into`, and marks the pool
    /// wanted.
    fn take(&self, into: &mut Vectors) {
        self.wanted
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let mut pool = self.lock();
        let from = pool.vectors.len().saturating_sub(HANDOVER);
        let taken: Vec<Vec<Field>> = pool.vectors.drain(from..).collect();
        let n: usize = taken.iter().map(Vec::len).sum();
        pool.fields -= n;
        drop(pool);
        into.fields += n;
        into.vectors.extend(taken);
    }
}

static SHARED: SharedPool = SharedPool::new();

/// Keeps a record's field vector, its fields included, for a parser to refill once the record
/// has been used: one of this thread ([`spare_fields`]) if one asked for a vector here, else
/// one on another thread ([`spare_fields_across_threads`]) if one asked there. A parser that
/// finds a field's measurement already in place (the same interned name) replaces only the
/// value, so the name's reference count is neither raised for the new field nor lowered for
/// the old one, and the vector is not allocated again. A vector holding a string value, one
/// past the limit ([`SPARE_FIELDS_MAX`] fields per thread and in the shared pool), or any no
/// parser asked for, is dropped instead.
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
        if s.wanted {
            // Past the limit the vector is dropped.
            let _ = s.kept.keep(fields);
        } else if SHARED.wanted() {
            s.outgoing.push(fields);
            if s.outgoing.len() >= HANDOVER {
                SHARED.give(&mut s.outgoing);
            }
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
            s.kept.pop()
        })
        .unwrap_or_else(|| Vec::with_capacity(room))
}

/// [`spare_fields`] for a parser whose records are used on other threads (the CSV source
/// parses on a blocking thread): a vector recycled on any thread whose own parsers do not ask
/// for them, taken from the shared pool [`HANDOVER`] at a time, or else a new one.
pub fn spare_fields_across_threads(room: usize) -> Vec<Field> {
    SPARE
        .with(|s| {
            let mut s = s.borrow_mut();
            if s.kept.vectors.is_empty() {
                SHARED.take(&mut s.kept);
            }
            s.kept.pop()
        })
        .unwrap_or_else(|| Vec::with_capacity(room))
}

/// Sets field `at` of `fields` (at most its length) to `measurement`, `value` and
/// `type_hint`: in place when that field already names `measurement` (the same interned
/// string), else replacing it or, past the end, appended.
#[inline(always)]
pub fn put_field(
    fields: &mut Vec<Field>,
    at: usize,
    measurement: &std::sync::Arc<str>,
    value: FieldValue,
    type_hint: Option<DataType>,
) {
    match fields.get_mut(at) {
        Some(f) if std::sync::Arc::ptr_eq(&f.measurement, measurement) => {
            f.value = value;
            f.type_hint = type_hint;
        }
        Some(f) => {
            *f = Field {
                measurement: measurement.clone(),
                value,
                type_hint,
            }
        }
        None => fields.push(Field {
            measurement: measurement.clone(),
            value,
            type_hint,
        }),
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
        put_field(
            &mut fields,
            0,
            &s,
            FieldValue::Float(2.5),
            Some(DataType::DOUBLE),
        );
        assert!(std::sync::Arc::ptr_eq(&fields[0].measurement, &s));
        assert_eq!(fields[0].value, FieldValue::Float(2.5));
        assert_eq!(fields[0].type_hint, Some(DataType::DOUBLE));
        put_field(&mut fields, 0, &s, FieldValue::Float(2.5), None);
        assert_eq!(fields[0].type_hint, None);
        put_field(&mut fields, 0, &equal_text, FieldValue::Bool(true), None);
        assert!(std::sync::Arc::ptr_eq(&fields[0].measurement, &equal_text));
        assert_eq!(fields[0].value, FieldValue::Bool(true));
        put_field(&mut fields, 1, &s, FieldValue::Int(3), None);
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

    /// The shared pool keeps nothing until a parser asked it for vectors; then it keeps what
    /// it is given up to `SPARE_FIELDS_MAX` fields, and hands out `HANDOVER` vectors at a
    /// time, the last given first.
    #[test]
    fn shared_pool_hands_over_within_the_limit() {
        let pool = SharedPool::new();
        let one = |i: i64| vec![Field::new("a", FieldValue::Int(i))];
        let mut local = Vectors::default();
        assert!(!pool.wanted());
        // Asked while empty: nothing moves, but the pool is now wanted.
        pool.take(&mut local);
        assert!(pool.wanted() && local.vectors.is_empty() && local.fields == 0);
        let mut out: Vec<Vec<Field>> = (0..300).map(one).collect();
        pool.give(&mut out);
        assert!(out.is_empty());
        let held = |pool: &SharedPool| {
            let p = pool.lock();
            (p.vectors.len(), p.fields)
        };
        assert_eq!(held(&pool), (300, 300));
        pool.take(&mut local);
        // 256 of them, values 44..300: the last one given is popped first.
        assert_eq!((local.vectors.len(), local.fields), (256, 256));
        assert_eq!(local.pop(), Some(one(299)));
        assert_eq!(local.fields, 255);
        assert_eq!(held(&pool), (44, 44));
        // 44 fields held: a vector of `SPARE_FIELDS_MAX - 44` fits, one field more does not.
        let mut out = vec![
            vec![Field::new("b", FieldValue::Int(0)); SPARE_FIELDS_MAX - 43],
            vec![Field::new("c", FieldValue::Int(0)); SPARE_FIELDS_MAX - 44],
        ];
        pool.give(&mut out);
        assert_eq!(held(&pool), (45, SPARE_FIELDS_MAX));
        assert_eq!(&*pool.lock().vectors[44][0].measurement, "c");
    }

    /// A thread whose parsers never asked for vectors gathers what it recycles and hands it to
    /// the shared pool `HANDOVER` at a time, once a parser asked the pool.
    #[test]
    fn recycled_vectors_go_to_the_shared_pool_in_handovers() {
        // A parser on another thread asks the shared pool (the pool stays wanted).
        std::thread::spawn(|| drop(spare_fields_across_threads(1)))
            .join()
            .unwrap();
        std::thread::spawn(|| {
            let outgoing = || SPARE.with(|s| s.borrow().outgoing.len());
            for i in 0..HANDOVER - 1 {
                recycle_fields(vec![Field::new("a", FieldValue::Int(i as i64))]);
            }
            assert_eq!(outgoing(), HANDOVER - 1);
            recycle_fields(vec![Field::new("a", FieldValue::Int(-1))]);
            assert_eq!(outgoing(), 0);
            // None was kept for this thread itself.
            assert!(SPARE.with(|s| s.borrow().kept.vectors.is_empty()));
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
