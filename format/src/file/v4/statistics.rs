//! v4 statistics (`Statistics.serialize` of Apache TsFile 2.x).
//!
//! A separate type from [`crate::statistics::Statistics`] because the stored form and
//! the accumulators differ from 0.10: the count is an unsigned var-int, INT32/DATE keep
//! an exact i64 sum, BOOLEAN keeps the number of `true` values, STRING keeps min/max,
//! BLOB and aligned time columns keep times only.

use super::VECTOR_TYPE;
use crate::basic::{DataType, Value};
use crate::errors::{Error, Result};
use crate::util::io::{self, ByteReader};

/// The type-specific part of [`StatisticsV4`].
#[derive(Debug, Clone, PartialEq)]
pub enum ValuesV4 {
    /// BOOLEAN: first, last and the number of `true` values.
    Boolean {
        /// First value.
        first: bool,
        /// Last value.
        last: bool,
        /// Number of `true` values.
        sum: i64,
    },
    /// INT32 and DATE: min, max, first, last and the exact sum.
    Int32 {
        /// Smallest value.
        min: i32,
        /// Largest value.
        max: i32,
        /// First value (earliest time).
        first: i32,
        /// Last value (latest time).
        last: i32,
        /// Wrapping i64 sum.
        sum: i64,
    },
    /// INT64 and TIMESTAMP: min, max, first, last, sum as f64.
    Int64 {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
        /// First value.
        first: i64,
        /// Last value.
        last: i64,
        /// Sum accumulated as f64.
        sum: f64,
    },
    /// FLOAT: min, max, first, last, sum as f64.
    Float {
        /// Smallest value.
        min: f32,
        /// Largest value.
        max: f32,
        /// First value.
        first: f32,
        /// Last value.
        last: f32,
        /// Sum accumulated as f64.
        sum: f64,
    },
    /// DOUBLE: min, max, first, last, sum.
    Double {
        /// Smallest value.
        min: f64,
        /// Largest value.
        max: f64,
        /// First value.
        first: f64,
        /// Last value.
        last: f64,
        /// Sum.
        sum: f64,
    },
    /// TEXT: first and last.
    Text {
        /// First value.
        first: Vec<u8>,
        /// Last value.
        last: Vec<u8>,
    },
    /// STRING: first, last, min and max (unsigned byte order).
    String {
        /// First value.
        first: Vec<u8>,
        /// Last value.
        last: Vec<u8>,
        /// Smallest value.
        min: Vec<u8>,
        /// Largest value.
        max: Vec<u8>,
    },
    /// BLOB: nothing beyond count and times.
    Blob,
    /// Aligned time column (`VECTOR`): nothing beyond count and times.
    Time,
}

/// Statistics of a page, chunk or series in a v4 file.
#[derive(Debug, Clone, PartialEq)]
pub struct StatisticsV4 {
    /// The series' data type code (one of [`DataType`]'s, or [`VECTOR_TYPE`]).
    pub type_code: u8,
    /// Number of points.
    pub count: u32,
    /// Smallest time (`i64::MAX` while empty).
    pub start_time: i64,
    /// Largest time (`i64::MIN` while empty).
    pub end_time: i64,
    /// Type-specific values (meaningless while `count == 0`).
    pub values: ValuesV4,
}

fn empty_values(type_code: u8) -> Result<ValuesV4> {
    if type_code == VECTOR_TYPE {
        return Ok(ValuesV4::Time);
    }
    let t = DataType::from_code(type_code as i16)
        .ok_or_else(|| Error::unsupported(format!("v4 data type code {type_code}")))?;
    Ok(match t {
        DataType::BOOLEAN => ValuesV4::Boolean {
            first: false,
            last: false,
            sum: 0,
        },
        DataType::INT32 | DataType::DATE => ValuesV4::Int32 {
            min: 0,
            max: 0,
            first: 0,
            last: 0,
            sum: 0,
        },
        DataType::INT64 | DataType::TIMESTAMP => ValuesV4::Int64 {
            min: 0,
            max: 0,
            first: 0,
            last: 0,
            sum: 0.0,
        },
        DataType::FLOAT => ValuesV4::Float {
            min: 0.0,
            max: 0.0,
            first: 0.0,
            last: 0.0,
            sum: 0.0,
        },
        DataType::DOUBLE => ValuesV4::Double {
            min: 0.0,
            max: 0.0,
            first: 0.0,
            last: 0.0,
            sum: 0.0,
        },
        DataType::TEXT => ValuesV4::Text {
            first: Vec::new(),
            last: Vec::new(),
        },
        DataType::STRING => ValuesV4::String {
            first: Vec::new(),
            last: Vec::new(),
            min: Vec::new(),
            max: Vec::new(),
        },
        DataType::BLOB => ValuesV4::Blob,
    })
}

macro_rules! num {
    ($init:expr, $new_first:expr, $new_last:expr, $v:expr, $min:ident, $max:ident, $first:ident, $last:ident, $sum:ident, $add:expr) => {{
        let v = $v;
        if $init {
            *$min = v;
            *$max = v;
            *$first = v;
            *$last = v;
            *$sum = $add(Default::default(), v);
        } else {
            if v < *$min {
                *$min = v;
            }
            if v > *$max {
                *$max = v;
            }
            if $new_first {
                *$first = v;
            }
            if $new_last {
                *$last = v;
            }
            *$sum = $add(*$sum, v);
        }
    }};
}

impl StatisticsV4 {
    /// Empty statistics of a data type code (a [`DataType`] code or [`VECTOR_TYPE`]).
    pub fn new(type_code: u8) -> Result<Self> {
        Ok(StatisticsV4 {
            type_code,
            count: 0,
            start_time: i64::MAX,
            end_time: i64::MIN,
            values: empty_values(type_code)?,
        })
    }

    /// Adds the time of an aligned time column's point.
    pub fn update_time(&mut self, t: i64) {
        self.start_time = self.start_time.min(t);
        self.end_time = self.end_time.max(t);
        self.count += 1;
    }

    /// Adds one point; the value must be of the variant of the type's storage type.
    pub fn update(&mut self, t: i64, v: &Value) -> Result<()> {
        let init = self.count == 0;
        let new_first = !init && t < self.start_time;
        let new_last = !init && t >= self.end_time;
        match (&mut self.values, v) {
            (ValuesV4::Boolean { first, last, sum }, Value::Boolean(b)) => {
                if init || new_first {
                    *first = *b;
                }
                if init || new_last {
                    *last = *b;
                }
                if init {
                    *sum = 0;
                }
                *sum += *b as i64;
            }
            (
                ValuesV4::Int32 {
                    min,
                    max,
                    first,
                    last,
                    sum,
                },
                Value::Int32(x),
            ) => num!(
                init,
                new_first,
                new_last,
                *x,
                min,
                max,
                first,
                last,
                sum,
                |s: i64, v: i32| s.wrapping_add(v as i64)
            ),
            (
                ValuesV4::Int64 {
                    min,
                    max,
                    first,
                    last,
                    sum,
                },
                Value::Int64(x),
            ) => num!(
                init,
                new_first,
                new_last,
                *x,
                min,
                max,
                first,
                last,
                sum,
                |s: f64, v: i64| s + v as f64
            ),
            (
                ValuesV4::Float {
                    min,
                    max,
                    first,
                    last,
                    sum,
                },
                Value::Float(x),
            ) => num!(
                init,
                new_first,
                new_last,
                *x,
                min,
                max,
                first,
                last,
                sum,
                |s: f64, v: f32| s + v as f64
            ),
            (
                ValuesV4::Double {
                    min,
                    max,
                    first,
                    last,
                    sum,
                },
                Value::Double(x),
            ) => num!(
                init,
                new_first,
                new_last,
                *x,
                min,
                max,
                first,
                last,
                sum,
                |s: f64, v: f64| s + v
            ),
            (ValuesV4::Text { first, last }, Value::Text(b)) => {
                if init || new_first {
                    *first = b.clone();
                }
                if init || new_last {
                    *last = b.clone();
                }
            }
            (
                ValuesV4::String {
                    first,
                    last,
                    min,
                    max,
                },
                Value::Text(b),
            ) => {
                if init || new_first {
                    *first = b.clone();
                }
                if init || new_last {
                    *last = b.clone();
                }
                if init || b < min {
                    *min = b.clone();
                }
                if init || b > max {
                    *max = b.clone();
                }
            }
            (ValuesV4::Blob, Value::Text(_)) => {}
            (vals, v) => {
                return Err(Error::invalid(format!(
                    "a {:?} value for statistics of {vals:?}",
                    v.data_type()
                )))
            }
        }
        self.start_time = self.start_time.min(t);
        self.end_time = self.end_time.max(t);
        self.count += 1;
        Ok(())
    }

    /// Merges the statistics of a later page or chunk of the same series.
    pub fn merge(&mut self, o: &StatisticsV4) -> Result<()> {
        if o.count == 0 {
            return Ok(());
        }
        if self.count == 0 {
            *self = o.clone();
            return Ok(());
        }
        let new_first = o.start_time < self.start_time;
        let new_last = o.end_time >= self.end_time;
        match (&mut self.values, &o.values) {
            (
                ValuesV4::Boolean { first, last, sum },
                ValuesV4::Boolean {
                    first: f,
                    last: l,
                    sum: s,
                },
            ) => {
                if new_first {
                    *first = *f;
                }
                if new_last {
                    *last = *l;
                }
                *sum += s;
            }
            (
                ValuesV4::Int32 {
                    min,
                    max,
                    first,
                    last,
                    sum,
                },
                ValuesV4::Int32 {
                    min: a,
                    max: b,
                    first: f,
                    last: l,
                    sum: s,
                },
            ) => {
                *min = (*min).min(*a);
                *max = (*max).max(*b);
                if new_first {
                    *first = *f;
                }
                if new_last {
                    *last = *l;
                }
                *sum = sum.wrapping_add(*s);
            }
            (
                ValuesV4::Int64 {
                    min,
                    max,
                    first,
                    last,
                    sum,
                },
                ValuesV4::Int64 {
                    min: a,
                    max: b,
                    first: f,
                    last: l,
                    sum: s,
                },
            ) => {
                *min = (*min).min(*a);
                *max = (*max).max(*b);
                if new_first {
                    *first = *f;
                }
                if new_last {
                    *last = *l;
                }
                *sum += s;
            }
            (
                ValuesV4::Float {
                    min,
                    max,
                    first,
                    last,
                    sum,
                },
                ValuesV4::Float {
                    min: a,
                    max: b,
                    first: f,
                    last: l,
                    sum: s,
                },
            ) => {
                if a < min {
                    *min = *a;
                }
                if b > max {
                    *max = *b;
                }
                if new_first {
                    *first = *f;
                }
                if new_last {
                    *last = *l;
                }
                *sum += s;
            }
            (
                ValuesV4::Double {
                    min,
                    max,
                    first,
                    last,
                    sum,
                },
                ValuesV4::Double {
                    min: a,
                    max: b,
                    first: f,
                    last: l,
                    sum: s,
                },
            ) => {
                if a < min {
                    *min = *a;
                }
                if b > max {
                    *max = *b;
                }
                if new_first {
                    *first = *f;
                }
                if new_last {
                    *last = *l;
                }
                *sum += s;
            }
            (ValuesV4::Text { first, last }, ValuesV4::Text { first: f, last: l }) => {
                if new_first {
                    *first = f.clone();
                }
                if new_last {
                    *last = l.clone();
                }
            }
            (
                ValuesV4::String {
                    first,
                    last,
                    min,
                    max,
                },
                ValuesV4::String {
                    first: f,
                    last: l,
                    min: a,
                    max: b,
                },
            ) => {
                if new_first {
                    *first = f.clone();
                }
                if new_last {
                    *last = l.clone();
                }
                if a < min {
                    *min = a.clone();
                }
                if b > max {
                    *max = b.clone();
                }
            }
            (ValuesV4::Blob, ValuesV4::Blob) | (ValuesV4::Time, ValuesV4::Time) => {}
            (a, b) => {
                return Err(Error::invalid(format!(
                    "merging statistics of different types ({a:?} and {b:?})"
                )))
            }
        }
        self.start_time = self.start_time.min(o.start_time);
        self.end_time = self.end_time.max(o.end_time);
        self.count += o.count;
        Ok(())
    }

    /// Appends the stored form: var-int count, start and end time, then the values.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        io::put_uvarint(out, self.count);
        io::put_i64(out, self.start_time);
        io::put_i64(out, self.end_time);
        match &self.values {
            ValuesV4::Boolean { first, last, sum } => {
                io::put_bool(out, *first);
                io::put_bool(out, *last);
                io::put_i64(out, *sum);
            }
            ValuesV4::Int32 {
                min,
                max,
                first,
                last,
                sum,
            } => {
                for v in [min, max, first, last] {
                    io::put_i32(out, *v);
                }
                io::put_i64(out, *sum);
            }
            ValuesV4::Int64 {
                min,
                max,
                first,
                last,
                sum,
            } => {
                for v in [min, max, first, last] {
                    io::put_i64(out, *v);
                }
                io::put_f64(out, *sum);
            }
            ValuesV4::Float {
                min,
                max,
                first,
                last,
                sum,
            } => {
                for v in [min, max, first, last] {
                    io::put_f32(out, *v);
                }
                io::put_f64(out, *sum);
            }
            ValuesV4::Double {
                min,
                max,
                first,
                last,
                sum,
            } => {
                for v in [min, max, first, last, sum] {
                    io::put_f64(out, *v);
                }
            }
            ValuesV4::Text { first, last } => {
                io::put_binary(out, first);
                io::put_binary(out, last);
            }
            ValuesV4::String {
                first,
                last,
                min,
                max,
            } => {
                for v in [first, last, min, max] {
                    io::put_binary(out, v);
                }
            }
            ValuesV4::Blob | ValuesV4::Time => {}
        }
    }

    /// Reads statistics of a data type code.
    pub fn deserialize(r: &mut ByteReader<'_>, type_code: u8) -> Result<Self> {
        let count = r.read_uvarint("statistics count")?;
        let start_time = r.read_i64("statistics start time")?;
        let end_time = r.read_i64("statistics end time")?;
        let values = match empty_values(type_code).map_err(|_| {
            Error::format(
                r.offset(),
                format_args!("statistics of a known data type, code {type_code}"),
            )
        })? {
            ValuesV4::Boolean { .. } => ValuesV4::Boolean {
                first: r.read_bool("first")?,
                last: r.read_bool("last")?,
                sum: r.read_i64("sum")?,
            },
            ValuesV4::Int32 { .. } => ValuesV4::Int32 {
                min: r.read_i32("min")?,
                max: r.read_i32("max")?,
                first: r.read_i32("first")?,
                last: r.read_i32("last")?,
                sum: r.read_i64("sum")?,
            },
            ValuesV4::Int64 { .. } => ValuesV4::Int64 {
                min: r.read_i64("min")?,
                max: r.read_i64("max")?,
                first: r.read_i64("first")?,
                last: r.read_i64("last")?,
                sum: r.read_f64("sum")?,
            },
            ValuesV4::Float { .. } => ValuesV4::Float {
                min: r.read_f32("min")?,
                max: r.read_f32("max")?,
                first: r.read_f32("first")?,
                last: r.read_f32("last")?,
                sum: r.read_f64("sum")?,
            },
            ValuesV4::Double { .. } => ValuesV4::Double {
                min: r.read_f64("min")?,
                max: r.read_f64("max")?,
                first: r.read_f64("first")?,
                last: r.read_f64("last")?,
                sum: r.read_f64("sum")?,
            },
            ValuesV4::Text { .. } => ValuesV4::Text {
                first: r.read_binary("first")?.to_vec(),
                last: r.read_binary("last")?.to_vec(),
            },
            ValuesV4::String { .. } => ValuesV4::String {
                first: r.read_binary("first")?.to_vec(),
                last: r.read_binary("last")?.to_vec(),
                min: r.read_binary("min")?.to_vec(),
                max: r.read_binary("max")?.to_vec(),
            },
            v => v,
        };
        Ok(StatisticsV4 {
            type_code,
            count,
            start_time,
            end_time,
            values,
        })
    }
}
