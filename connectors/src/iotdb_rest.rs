//! Request bodies of IoTDB's REST write API (IoTDB 1.x/2.x, `external-service-impl/rest`), and
//! the IoTDB status codes its answers carry.
//!
//! - `insertTablet` (v2 names `device`, `timestamps`, `measurements`, `data_types`, `values`,
//!   `is_aligned`; v1 names `deviceId`, `dataTypes`, `isAligned`): one device, **column-major**
//!   values: `values[j]` is the column of `measurements[j]`, one entry per timestamp, `null` =
//!   no value.
//! - `insertRecords` (v2): `timestamps`, `devices`, `measurements_list`, `data_types_list`,
//!   `values_list`, `is_aligned`; record `i` is (`devices[i]`, `timestamps[i]`,
//!   `measurements_list[i]`, `data_types_list[i]`, `values_list[i]`).
//!
//! Every field is required (`null` counts as missing), as IoTDB requires it; other keys are
//! ignored. `is_aligned` is read and has no effect: TsFile 0.10 has no aligned series.
//!
//! A request IoTDB refuses as a whole is refused as a whole here: it yields no record and one
//! Parse rejection (at the key concerned) counting every value of the request. That is a body
//! that is not JSON or has a field of the wrong JSON type; a missing field; lists whose lengths
//! disagree; a data type that is not an IoTDB type or has no TsFile 0.10 equivalent (`DATE`,
//! `TIMESTAMP`, `BLOB`…); no timestamp at all; or (insertRecords) no non-null value at all.
//!
//! Otherwise every point stands alone: each field carries its declared type as a
//! [`DataType`], and a value that does not fit it is a TypeMismatch rejection of that point,
//! an invalid device or measurement name an InvalidPath rejection of its points, and a
//! timestamp that is not an integer (or an integer in a string) an InvalidTime rejection of
//! its row. Values are read as IoTDB reads them, except that a number is never truncated or
//! wrapped into an integer type:
//!
//! | declared | insertTablet accepts | insertRecords accepts |
//! |---|---|---|
//! | BOOLEAN | `true`/`false`, `1`/`0`, `"1"`/`"0"` | `true`/`false` |
//! | INT32, INT64 | integers in range | integers in range, also written as `4.0` |
//! | FLOAT, DOUBLE | numbers, strings holding a number | numbers |
//! | TEXT (`STRING`) | strings; numbers and booleans as Java prints them (`2.0`, `1.0E10`, `true`) | the same |
//!
//! Accepted values are normalized to the declared type's kind ([`FieldValue::Float`] for
//! FLOAT/DOUBLE, [`FieldValue::Text`] for TEXT, …).

use std::fmt;
use std::sync::Arc;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::model::{
    declared_type, Batch, DataType, Field, FieldValue, Location, Record, RejectReason, Rejection,
    TimeUnit,
};
use crate::path::{validate_device, validate_measurement};
use crate::reject::reject;

/// Options of the REST parsers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestOptions {
    /// Unit of incoming timestamps (IoTDB's default precision: milliseconds).
    pub input_unit: TimeUnit,
    /// The pipeline's stored precision.
    pub stored_unit: TimeUnit,
}

impl Default for RestOptions {
    fn default() -> Self {
        RestOptions {
            input_unit: TimeUnit::Millis,
            stored_unit: TimeUnit::Millis,
        }
    }
}

/// The field names of an `insertTablet` body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TabletNames {
    /// `/rest/v1/insertTablet`: `deviceId`, `dataTypes`, `isAligned`.
    V1,
    /// `/rest/v2/insertTablet`: `device`, `data_types`, `is_aligned`.
    V2,
}

/// A request of IoTDB's REST write API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestRequest {
    /// `insertTablet` with v1 or v2 field names.
    InsertTablet(TabletNames),
    /// `insertRecords` (v2).
    InsertRecords,
}

/// Parses the body of `request` (see the module docs). Never panics.
pub fn parse_rest_request(input: &[u8], request: RestRequest, opts: &RestOptions) -> Batch {
    match request {
        RestRequest::InsertTablet(names) => parse_insert_tablet(input, names, opts),
        RestRequest::InsertRecords => parse_insert_records(input, opts),
    }
}

/// An IoTDB status (`TSStatusCode`): the `code` and, for the fixed answers, the `message` of
/// an IoTDB REST response body `{"code": …, "message": …}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// The numeric code.
    pub code: u16,
    /// IoTDB's name of the status.
    pub name: &'static str,
}

/// The IoTDB statuses the daemon answers with.
pub mod status {
    use super::Status;

    /// Success (`{"code":200,"message":"SUCCESS_STATUS"}`).
    pub const SUCCESS: Status = Status {
        code: 200,
        name: "SUCCESS_STATUS",
    };
    /// Several kinds of errors in one request.
    pub const MULTIPLE_ERROR: Status = Status {
        code: 302,
        name: "MULTIPLE_ERROR",
    };
    /// A malformed request (IoTDB's answer to a malformed `Authorization` header).
    pub const ILLEGAL_PARAMETER: Status = Status {
        code: 303,
        name: "ILLEGAL_PARAMETER",
    };
    /// An internal error.
    pub const INTERNAL_SERVER_ERROR: Status = Status {
        code: 305,
        name: "INTERNAL_SERVER_ERROR",
    };
    /// An invalid device or measurement path.
    pub const ILLEGAL_PATH: Status = Status {
        code: 509,
        name: "ILLEGAL_PATH",
    };
    /// A write refused for now (buffers full, shutting down): retry later.
    pub const WRITE_PROCESS_REJECT: Status = Status {
        code: 606,
        name: "WRITE_PROCESS_REJECT",
    };
    /// A value that does not fit its series' type.
    pub const DATA_TYPE_MISMATCH: Status = Status {
        code: 614,
        name: "DATA_TYPE_MISMATCH",
    };
    /// No `Authorization` header.
    pub const INIT_AUTH_ERROR: Status = Status {
        code: 800,
        name: "INIT_AUTH_ERROR",
    };
    /// Unknown user or wrong password.
    pub const WRONG_LOGIN_PASSWORD: Status = Status {
        code: 801,
        name: "WRONG_LOGIN_PASSWORD",
    };
    /// A request body over the size limit (IoTDB answers HTTP 413 with code 413).
    pub const REQUEST_TOO_LARGE: Status = Status {
        code: 413,
        name: "REQUEST_TOO_LARGE",
    };
}

/// The status of a request some of whose points were rejected: the reason's status, or
/// [`status::MULTIPLE_ERROR`] when the rejections have different statuses.
pub fn rejection_status(rejections: &[Rejection]) -> Status {
    let of = |r: &Rejection| match r.reason {
        RejectReason::Parse | RejectReason::InvalidTime => status::ILLEGAL_PARAMETER,
        RejectReason::InvalidPath => status::ILLEGAL_PATH,
        RejectReason::TypeMismatch | RejectReason::DeclaredTypeConflict => {
            status::DATA_TYPE_MISMATCH
        }
        RejectReason::TooLarge => status::REQUEST_TOO_LARGE,
    };
    let mut it = rejections.iter().map(of);
    let Some(first) = it.next() else {
        return status::SUCCESS;
    };
    if it.all(|s| s == first) {
        first
    } else {
        status::MULTIPLE_ERROR
    }
}

/// Parses an `insertTablet` body (see the module docs). Never panics.
pub fn parse_insert_tablet(input: &[u8], names: TabletNames, opts: &RestOptions) -> Batch {
    let raw = match names {
        TabletNames::V2 => from_json::<TabletV2>(input).map(RawTablet::from),
        TabletNames::V1 => from_json::<TabletV1>(input).map(RawTablet::from),
    };
    let mut batch = Batch::default();
    match raw {
        Ok(t) => {
            let points = t.values.as_ref().map_or(1, |v| count(v.iter().flatten()));
            if let Err((key, message)) = tablet(t, names, opts, &mut batch) {
                batch = refused(key, message, points);
            }
        }
        Err(e) => batch = refused(String::new(), e, 1),
    }
    batch
}

/// Parses an `insertRecords` body (see the module docs). Never panics.
pub fn parse_insert_records(input: &[u8], opts: &RestOptions) -> Batch {
    let mut batch = Batch::default();
    match from_json::<RecordsV2>(input) {
        Ok(r) => {
            let points = r
                .values_list
                .as_ref()
                .map_or(1, |v| count(v.iter().flatten()));
            if let Err((key, message)) = records(r, opts, &mut batch) {
                batch = refused(key, message, points);
            }
        }
        Err(e) => batch = refused(String::new(), e, 1),
    }
    batch
}

// ---------------------------------------------------------------------------------------------
// The bodies as serde structures.

/// A JSON value where a scalar is expected: the scalars, or the kind of anything else.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer above `i64::MAX`.
    Big(u64),
    Float(f64),
    Str(String),
    /// An array or object (contents skipped).
    Nested(&'static str),
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Null)
            }
            fn visit_none<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(i64::try_from(v).map_or(Scalar::Big(v), Scalar::Int))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Nested("an array"))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Nested("an object"))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct TabletV2 {
    device: Option<String>,
    timestamps: Option<Vec<Scalar>>,
    measurements: Option<Vec<String>>,
    data_types: Option<Vec<String>>,
    values: Option<Vec<Vec<Scalar>>>,
    is_aligned: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TabletV1 {
    device_id: Option<String>,
    timestamps: Option<Vec<Scalar>>,
    measurements: Option<Vec<String>>,
    data_types: Option<Vec<String>>,
    values: Option<Vec<Vec<Scalar>>>,
    is_aligned: Option<bool>,
}

struct RawTablet {
    device: Option<String>,
    timestamps: Option<Vec<Scalar>>,
    measurements: Option<Vec<String>>,
    data_types: Option<Vec<String>>,
    values: Option<Vec<Vec<Scalar>>>,
    is_aligned: Option<bool>,
}

impl From<TabletV2> for RawTablet {
    fn from(t: TabletV2) -> RawTablet {
        RawTablet {
            device: t.device,
            timestamps: t.timestamps,
            measurements: t.measurements,
            data_types: t.data_types,
            values: t.values,
            is_aligned: t.is_aligned,
        }
    }
}

impl From<TabletV1> for RawTablet {
    fn from(t: TabletV1) -> RawTablet {
        RawTablet {
            device: t.device_id,
            timestamps: t.timestamps,
            measurements: t.measurements,
            data_types: t.data_types,
            values: t.values,
            is_aligned: t.is_aligned,
        }
    }
}

#[derive(Deserialize)]
struct RecordsV2 {
    timestamps: Option<Vec<Scalar>>,
    devices: Option<Vec<String>>,
    measurements_list: Option<Vec<Vec<String>>>,
    data_types_list: Option<Vec<Vec<String>>>,
    values_list: Option<Vec<Vec<Scalar>>>,
    is_aligned: Option<bool>,
}

fn from_json<'a, T: Deserialize<'a>>(input: &'a [u8]) -> Result<T, String> {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    serde_json::from_slice(input).map_err(|e| {
        format!(
            "line {}, column {}: not a valid request body: {e}",
            e.line(),
            e.column()
        )
    })
}

// ---------------------------------------------------------------------------------------------
// Whole-request checks.

/// A whole-request refusal: the key concerned (`""` for the body) and why.
type Refusal = (String, String);

/// The batch of a request refused as a whole.
fn refused(key: String, message: String, points: u64) -> Batch {
    let mut batch = Batch::default();
    let location = if key.is_empty() {
        "$".to_owned()
    } else {
        format!("$.{key}")
    };
    reject(
        &mut batch,
        RejectReason::Parse,
        points,
        || Location::Json(location),
        || message,
    );
    batch
}

fn count<'a>(values: impl Iterator<Item = &'a Scalar>) -> u64 {
    values.filter(|v| **v != Scalar::Null).count() as u64
}

fn required<T>(v: Option<T>, key: &str) -> Result<T, Refusal> {
    v.ok_or_else(|| (key.to_owned(), format!("missing \"{key}\" (required)")))
}

fn same_len(key: &str, len: usize, other: &str, other_len: usize) -> Result<(), Refusal> {
    if len == other_len {
        return Ok(());
    }
    Err((
        key.to_owned(),
        format!("{len} entries in \"{key}\" but {other_len} in \"{other}\""),
    ))
}

/// Declared types, or every illegal one named.
fn declared_types<'a>(
    names: impl Iterator<Item = (&'a str, String, String)>,
    key: &str,
) -> Result<Vec<DataType>, Refusal> {
    let mut types = Vec::new();
    let mut bad = Vec::new();
    for (name, device, measurement) in names {
        match declared(name) {
            Ok(t) => types.push(t),
            Err(why) => bad.push(format!("{device}.{measurement}: {name:?} {why}")),
        }
    }
    if bad.is_empty() {
        Ok(types)
    } else {
        Err((key.to_owned(), bad.join("; ")))
    }
}

/// An IoTDB data type name (any case) as a declared [`DataType`].
fn declared(name: &str) -> Result<DataType, &'static str> {
    if let Some(t) = declared_type(name) {
        return Ok(t);
    }
    const NO_EQUIVALENT: [&str; 6] = ["DATE", "TIMESTAMP", "BLOB", "OBJECT", "VECTOR", "UNKNOWN"];
    if NO_EQUIVALENT.iter().any(|n| n.eq_ignore_ascii_case(name)) {
        Err("has no equivalent in TsFile format 0.10 (BOOLEAN, INT32, INT64, FLOAT, DOUBLE, TEXT)")
    } else {
        Err("is not an IoTDB data type")
    }
}

// ---------------------------------------------------------------------------------------------
// Building records.

/// Which of IoTDB's two sets of value rules applies (see the module docs' table).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rules {
    Tablet,
    Records,
}

/// The stored time of a timestamp entry.
fn time(v: &Scalar, opts: &RestOptions) -> Result<i64, String> {
    let t = match v {
        Scalar::Int(t) => *t,
        Scalar::Str(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| format!("timestamp {s:?} is not an integer"))?,
        Scalar::Big(t) => return Err(format!("timestamp {t} is out of the INT64 range")),
        Scalar::Null => return Err("timestamp is null".to_owned()),
        Scalar::Bool(_) => return Err("expected an integer timestamp, found a boolean".into()),
        Scalar::Float(f) => return Err(format!("timestamp {f} is not an integer")),
        Scalar::Nested(kind) => return Err(format!("expected an integer timestamp, found {kind}")),
    };
    let (from, to) = (opts.input_unit, opts.stored_unit);
    from.convert(t, to)
        .ok_or_else(|| format!("timestamp {t} {from} overflows when converted to {to}"))
}

/// A value read as `ty` under `rules`: `Ok(None)` for `null`.
fn value(v: Scalar, ty: DataType, rules: Rules) -> Result<Option<FieldValue>, String> {
    use FieldValue as F;
    let found = |v: &Scalar| match v {
        Scalar::Null => "null".to_owned(),
        Scalar::Bool(b) => format!("boolean {b}"),
        Scalar::Int(i) => format!("integer {i}"),
        Scalar::Big(u) => format!("integer {u}"),
        Scalar::Float(f) => format!("number {f}"),
        Scalar::Str(s) => format!("string {s:?}"),
        Scalar::Nested(kind) => kind.to_string(),
    };
    let mismatch = |v: &Scalar| Err(format!("{} does not fit declared type {ty}", found(v)));
    let tablet = rules == Rules::Tablet;
    let integral = |f: f64, lo: f64, hi: f64| f.fract() == 0.0 && f >= lo && f <= hi;
    let v = match (ty, v) {
        (DataType::TEXT, Scalar::Str(s)) => return Ok(Some(F::Text(s))),
        (_, v) => v,
    };
    let out = match (ty, &v) {
        (_, Scalar::Null) => return Ok(None),
        (DataType::BOOLEAN, Scalar::Bool(b)) => F::Bool(*b),
        (DataType::BOOLEAN, Scalar::Int(i @ (0 | 1))) if tablet => F::Bool(*i == 1),
        (DataType::BOOLEAN, Scalar::Str(s)) if tablet && (s == "0" || s == "1") => {
            F::Bool(s == "1")
        }
        (DataType::INT32, Scalar::Int(i)) if i32::try_from(*i).is_ok() => F::Int(*i),
        (DataType::INT32, Scalar::Float(f))
            if !tablet && integral(*f, i32::MIN as f64, i32::MAX as f64) =>
        {
            F::Int(*f as i64)
        }
        (DataType::INT64, Scalar::Int(i)) => F::Int(*i),
        // 2^63 itself is out of range; every smaller integral f64 fits.
        (DataType::INT64, Scalar::Float(f))
            if !tablet && integral(*f, i64::MIN as f64, 9.223372036854775e18) =>
        {
            F::Int(*f as i64)
        }
        (DataType::FLOAT | DataType::DOUBLE, Scalar::Int(i)) => F::Float(*i as f64),
        (DataType::FLOAT | DataType::DOUBLE, Scalar::Big(u)) => F::Float(*u as f64),
        (DataType::FLOAT | DataType::DOUBLE, Scalar::Float(f)) => F::Float(*f),
        (DataType::FLOAT | DataType::DOUBLE, Scalar::Str(s)) if tablet => {
            match s.trim().parse::<f64>() {
                Ok(f) => F::Float(f),
                Err(_) => return mismatch(&v),
            }
        }
        (DataType::TEXT, Scalar::Int(i)) => F::Text(i.to_string()),
        (DataType::TEXT, Scalar::Big(u)) => F::Text(u.to_string()),
        (DataType::TEXT, Scalar::Float(f)) => F::Text(java_double(*f)),
        (DataType::TEXT, Scalar::Bool(b)) => F::Text(b.to_string()),
        _ => return mismatch(&v),
    };
    Ok(Some(out))
}

/// `f` as Java's `Double.toString` prints it (how IoTDB turns a JSON number into TEXT): plain
/// decimals from 10^-3 up to 10^7 with at least one fractional digit, `d.dddE±n` outside.
fn java_double(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let a = f.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        let s = format!("{f}");
        return if s.contains('.') { s } else { s + ".0" };
    }
    // Shortest round-trip digits, e.g. "1.5e20" or "1e-5".
    let s = format!("{f:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let mantissa = if mantissa.contains('.') {
        mantissa.to_owned()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}E{exp}")
}

/// A field builder shared by both requests: rejects what does not fit, returns the rest.
struct Points<'b> {
    batch: &'b mut Batch,
    rules: Rules,
}

impl Points<'_> {
    fn field(
        &mut self,
        name: impl Into<Arc<str>>,
        v: Scalar,
        ty: DataType,
        at: impl FnOnce() -> String,
    ) -> Option<Field> {
        match value(v, ty, self.rules) {
            Ok(Some(value)) => Some(Field {
                measurement: name.into(),
                value,
                type_hint: Some(ty),
            }),
            Ok(None) => None,
            Err(m) => {
                reject(
                    self.batch,
                    RejectReason::TypeMismatch,
                    1,
                    || Location::Json(at()),
                    || m,
                );
                None
            }
        }
    }

    fn invalid(&mut self, reason: RejectReason, points: u64, at: String, message: String) {
        if points > 0 {
            reject(
                self.batch,
                reason,
                points,
                || Location::Json(at),
                || message,
            );
        }
    }
}

fn tablet(
    t: RawTablet,
    names: TabletNames,
    opts: &RestOptions,
    batch: &mut Batch,
) -> Result<(), Refusal> {
    let (k_device, k_types, k_aligned) = match names {
        TabletNames::V2 => ("device", "data_types", "is_aligned"),
        TabletNames::V1 => ("deviceId", "dataTypes", "isAligned"),
    };
    let timestamps = required(t.timestamps, "timestamps")?;
    required(t.is_aligned, k_aligned)?;
    let device = required(t.device, k_device)?;
    let types = required(t.data_types, k_types)?;
    let measurements = required(t.measurements, "measurements")?;
    let values = required(t.values, "values")?;
    same_len("measurements", measurements.len(), k_types, types.len())?;
    same_len("values", values.len(), k_types, types.len())?;
    for (j, column) in values.iter().enumerate() {
        same_len(
            &format!("values[{j}]"),
            column.len(),
            "timestamps",
            timestamps.len(),
        )?;
    }
    if timestamps.is_empty() {
        return Err((
            "timestamps".into(),
            "no timestamp: nothing to insert".into(),
        ));
    }
    let types = declared_types(
        types
            .iter()
            .zip(&measurements)
            .map(|(t, m)| (t.as_str(), device.clone(), m.clone())),
        k_types,
    )?;

    let mut p = Points {
        batch,
        rules: Rules::Tablet,
    };
    if let Err(e) = validate_device(&device) {
        let points = count(values.iter().flatten());
        p.invalid(
            RejectReason::InvalidPath,
            points,
            format!("$.{k_device}"),
            format!("device {device:?} {e}"),
        );
        return Ok(());
    }
    // Usable columns: a valid measurement name (shared by the column's fields).
    let mut columns: Vec<(usize, Arc<str>, DataType, std::vec::IntoIter<Scalar>)> = Vec::new();
    for (j, ((m, ty), column)) in measurements.iter().zip(&types).zip(values).enumerate() {
        match validate_measurement(m) {
            Ok(()) => columns.push((j, Arc::from(m.as_str()), *ty, column.into_iter())),
            Err(e) => {
                let points = count(column.iter());
                p.invalid(
                    RejectReason::InvalidPath,
                    points,
                    format!("$.measurements[{j}]"),
                    format!("measurement {m:?} {e}"),
                );
            }
        }
    }
    // Shared by the tablet's records.
    let device: Arc<str> = device.into();
    for (i, ts) in timestamps.iter().enumerate() {
        let time = time(ts, opts);
        let mut fields = Vec::with_capacity(columns.len());
        let mut lost = 0u64;
        for (j, m, ty, column) in columns.iter_mut() {
            let v = column.next().unwrap_or(Scalar::Null);
            if time.is_err() {
                lost += u64::from(v != Scalar::Null);
                continue;
            }
            let j = *j;
            if let Some(f) = p.field(m.clone(), v, *ty, || format!("$.values[{j}][{i}]")) {
                fields.push(f);
            }
        }
        match time {
            Err(message) => p.invalid(
                RejectReason::InvalidTime,
                lost,
                format!("$.timestamps[{i}]"),
                message,
            ),
            Ok(time) if !fields.is_empty() => p.batch.records.push(Record {
                device: device.clone(),
                time,
                fields,
            }),
            Ok(_) => {}
        }
    }
    Ok(())
}

fn records(r: RecordsV2, opts: &RestOptions, batch: &mut Batch) -> Result<(), Refusal> {
    let timestamps = required(r.timestamps, "timestamps")?;
    required(r.is_aligned, "is_aligned")?;
    let devices = required(r.devices, "devices")?;
    let types_list = required(r.data_types_list, "data_types_list")?;
    let values_list = required(r.values_list, "values_list")?;
    let measurements_list = required(r.measurements_list, "measurements_list")?;
    let n = devices.len();
    same_len("timestamps", timestamps.len(), "devices", n)?;
    same_len("measurements_list", measurements_list.len(), "devices", n)?;
    same_len("data_types_list", types_list.len(), "devices", n)?;
    same_len("values_list", values_list.len(), "devices", n)?;
    for i in 0..n {
        let m = measurements_list[i].len();
        same_len(
            &format!("data_types_list[{i}]"),
            types_list[i].len(),
            &format!("measurements_list[{i}]"),
            m,
        )?;
        same_len(
            &format!("values_list[{i}]"),
            values_list[i].len(),
            &format!("measurements_list[{i}]"),
            m,
        )?;
    }
    let types_list: Vec<Vec<DataType>> = {
        let (devices, measurements_list) = (&devices, &measurements_list);
        let all = declared_types(
            (0..n).flat_map(|i| {
                types_list[i]
                    .iter()
                    .zip(&measurements_list[i])
                    .map(move |(t, m)| (t.as_str(), devices[i].clone(), m.clone()))
            }),
            "data_types_list",
        )?;
        let mut it = all.into_iter();
        (0..n)
            .map(|i| it.by_ref().take(types_list[i].len()).collect())
            .collect()
    };
    if count(values_list.iter().flatten()) == 0 {
        return Err((
            "values_list".into(),
            "every value is null: nothing to insert".into(),
        ));
    }

    let mut p = Points {
        batch,
        rules: Rules::Records,
    };
    let rows = devices
        .into_iter()
        .zip(timestamps)
        .zip(measurements_list)
        .zip(types_list)
        .zip(values_list);
    // The previous record's device: consecutive records of a device share it.
    let mut last: Option<Arc<str>> = None;
    for (i, ((((device, ts), measurements), types), values)) in rows.enumerate() {
        let live = count(values.iter());
        if let Err(e) = validate_device(&device) {
            p.invalid(
                RejectReason::InvalidPath,
                live,
                format!("$.devices[{i}]"),
                format!("device {device:?} {e}"),
            );
            continue;
        }
        let time = match time(&ts, opts) {
            Ok(t) => t,
            Err(message) => {
                p.invalid(
                    RejectReason::InvalidTime,
                    live,
                    format!("$.timestamps[{i}]"),
                    message,
                );
                continue;
            }
        };
        let mut fields = Vec::with_capacity(measurements.len());
        for (j, ((m, ty), v)) in measurements.iter().zip(types).zip(values).enumerate() {
            if let Err(e) = validate_measurement(m) {
                let points = u64::from(v != Scalar::Null);
                p.invalid(
                    RejectReason::InvalidPath,
                    points,
                    format!("$.measurements_list[{i}][{j}]"),
                    format!("measurement {m:?} {e}"),
                );
                continue;
            }
            if let Some(f) = p.field(m.as_str(), v, ty, || format!("$.values_list[{i}][{j}]")) {
                fields.push(f);
            }
        }
        if !fields.is_empty() {
            let device = match last.take() {
                Some(d) if *d == *device => d,
                _ => Arc::from(device),
            };
            last = Some(device.clone());
            p.batch.records.push(Record {
                device,
                time,
                fields,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
