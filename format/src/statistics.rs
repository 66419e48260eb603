//! Per-type statistics (spec §4): the same layout in page headers, `ChunkMetadata`
//! and `TimeseriesMetadata`, with the 0.10 writer's exact update and merge rules.

use crate::basic::{DataType, Value};
use crate::errors::{Error, Result};
use crate::util::io::{self, ByteReader};

/// min/max/first/last/sum of a numeric type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NumStats<T> {
    /// Smallest value (strict `<` replacement; NaN never replaces).
    pub min: T,
    /// Largest value (strict `>` replacement).
    pub max: T,
    /// First value written (or merged by start time).
    pub first: T,
    /// Last value written (or merged by end time).
    pub last: T,
    /// Sum accumulated as f64 in write order.
    pub sum: f64,
}

/// The type-specific part of [`Statistics`].
#[derive(Debug, Clone, PartialEq)]
pub enum ValueStats {
    /// BOOLEAN keeps first and last only.
    Boolean {
        /// First value.
        first: bool,
        /// Last value.
        last: bool,
    },
    /// INT32 statistics.
    Int32(NumStats<i32>),
    /// INT64 statistics.
    Int64(NumStats<i64>),
    /// FLOAT statistics.
    Float(NumStats<f32>),
    /// DOUBLE statistics.
    Double(NumStats<f64>),
    /// TEXT keeps first and last only.
    Text {
        /// First value.
        first: Vec<u8>,
        /// Last value.
        last: Vec<u8>,
    },
}

/// Statistics of a page, chunk or series.
#[derive(Debug, Clone, PartialEq)]
pub struct Statistics {
    /// Number of points.
    pub count: i64,
    /// Smallest timestamp (`i64::MAX` when empty).
    pub start_time: i64,
    /// Largest timestamp (`i64::MIN` when empty).
    pub end_time: i64,
    /// Type-specific values.
    pub values: ValueStats,
}

macro_rules! num_update {
    ($s:expr, $v:expr, $first:expr) => {{
        let s = $s;
        let v = $v;
        if $first {
            *s = NumStats {
                min: v,
                max: v,
                first: v,
                last: v,
                sum: v as f64,
            };
        } else {
            if v < s.min {
                s.min = v;
            }
            if v > s.max {
                s.max = v;
            }
            s.sum += v as f64;
            s.last = v;
        }
    }};
}

/// Adds a run of values to numeric stats (same rules as [`num_update!`], in order).
macro_rules! num_update_run {
    ($s:expr, $vs:expr, $first:expr) => {{
        let s = $s;
        let mut vs = $vs;
        if $first {
            if let Some((&v, rest)) = vs.split_first() {
                *s = NumStats {
                    min: v,
                    max: v,
                    first: v,
                    last: v,
                    sum: v as f64,
                };
                vs = rest;
            }
        }
        if let Some(&last) = vs.last() {
            let (mut min, mut max, mut sum) = (s.min, s.max, s.sum);
            for &v in vs {
                if v < min {
                    min = v;
                }
                if v > max {
                    max = v;
                }
                sum += v as f64;
            }
            *s = NumStats {
                min,
                max,
                first: s.first,
                last,
                sum,
            };
        }
    }};
}

/// Defines a run update of a numeric type.
macro_rules! num_run_fn {
    ($name:ident, $sorted:ident, $one:ident, $t:ty, $variant:ident) => {
        /// Adds a run of points (`ts` and `vs` of the same length), as one
        #[doc = concat!("[`Statistics::", stringify!($one), "`]")]
        /// call per point would.
        #[inline]
        pub fn $name(&mut self, ts: &[i64], vs: &[$t]) {
            let first = self.update_times(ts);
            if let ValueStats::$variant(s) = &mut self.values {
                num_update_run!(s, vs, first);
            }
        }

        /// Adds a run of points whose times do not decrease, as
        #[doc = concat!("[`Statistics::", stringify!($name), "`]")]
        /// does (their first time is the least, their last the greatest).
        #[inline]
        pub fn $sorted(&mut self, ts: &[i64], vs: &[$t]) {
            let first = self.update_sorted_times(ts);
            if let ValueStats::$variant(s) = &mut self.values {
                num_update_run!(s, vs, first);
            }
        }
    };
}

impl Statistics {
    num_run_fn!(update_i32s, update_sorted_i32s, update_i32, i32, Int32);
    num_run_fn!(update_i64s, update_sorted_i64s, update_i64, i64, Int64);
    num_run_fn!(update_f32s, update_sorted_f32s, update_f32, f32, Float);
    num_run_fn!(update_f64s, update_sorted_f64s, update_f64, f64, Double);

    /// Empty statistics for `data_type`.
    pub fn new(data_type: DataType) -> Self {
        let values = match data_type.storage_type() {
            DataType::BOOLEAN => ValueStats::Boolean {
                first: false,
                last: false,
            },
            DataType::INT32 => ValueStats::Int32(NumStats {
                min: 0,
                max: 0,
                first: 0,
                last: 0,
                sum: 0.0,
            }),
            DataType::INT64 => ValueStats::Int64(NumStats {
                min: 0,
                max: 0,
                first: 0,
                last: 0,
                sum: 0.0,
            }),
            DataType::FLOAT => ValueStats::Float(NumStats {
                min: 0.0,
                max: 0.0,
                first: 0.0,
                last: 0.0,
                sum: 0.0,
            }),
            DataType::DOUBLE => ValueStats::Double(NumStats {
                min: 0.0,
                max: 0.0,
                first: 0.0,
                last: 0.0,
                sum: 0.0,
            }),
            _ => ValueStats::Text {
                first: Vec::new(),
                last: Vec::new(),
            },
        };
        Statistics {
            count: 0,
            start_time: i64::MAX,
            end_time: i64::MIN,
            values,
        }
    }

    /// The data type these statistics describe.
    pub fn data_type(&self) -> DataType {
        match self.values {
            ValueStats::Boolean { .. } => DataType::BOOLEAN,
            ValueStats::Int32(_) => DataType::INT32,
            ValueStats::Int64(_) => DataType::INT64,
            ValueStats::Float(_) => DataType::FLOAT,
            ValueStats::Double(_) => DataType::DOUBLE,
            ValueStats::Text { .. } => DataType::TEXT,
        }
    }

    /// Whether no point was ever added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    #[inline]
    fn update_time(&mut self, t: i64) -> bool {
        let first = self.count == 0;
        if t < self.start_time {
            self.start_time = t;
        }
        if t > self.end_time {
            self.end_time = t;
        }
        self.count = self.count.wrapping_add(1);
        first
    }

    /// Adds a BOOLEAN point.
    #[inline]
    pub fn update_bool(&mut self, t: i64, v: bool) {
        let first = self.update_time(t);
        if let ValueStats::Boolean { first: f, last } = &mut self.values {
            if first {
                *f = v;
            }
            *last = v;
        }
    }

    /// Adds an INT32 point.
    #[inline]
    pub fn update_i32(&mut self, t: i64, v: i32) {
        let first = self.update_time(t);
        if let ValueStats::Int32(s) = &mut self.values {
            num_update!(s, v, first);
        }
    }

    /// Adds an INT64 point.
    #[inline]
    pub fn update_i64(&mut self, t: i64, v: i64) {
        let first = self.update_time(t);
        if let ValueStats::Int64(s) = &mut self.values {
            num_update!(s, v, first);
        }
    }

    /// Adds a FLOAT point.
    #[inline]
    pub fn update_f32(&mut self, t: i64, v: f32) {
        let first = self.update_time(t);
        if let ValueStats::Float(s) = &mut self.values {
            num_update!(s, v, first);
        }
    }

    /// Adds a DOUBLE point.
    #[inline]
    pub fn update_f64(&mut self, t: i64, v: f64) {
        let first = self.update_time(t);
        if let ValueStats::Double(s) = &mut self.values {
            num_update!(s, v, first);
        }
    }

    /// Adds a TEXT point.
    #[inline]
    pub fn update_text(&mut self, t: i64, v: &[u8]) {
        let first = self.update_time(t);
        if let ValueStats::Text { first: f, last } = &mut self.values {
            if first {
                *f = v.to_vec();
            }
            last.clear();
            last.extend_from_slice(v);
        }
    }

    /// [`Self::update_times`] of times that do not decrease: only the first and the last
    /// can widen the range.
    #[inline]
    fn update_sorted_times(&mut self, ts: &[i64]) -> bool {
        let first = self.count == 0;
        if let (Some(&lo), Some(&hi)) = (ts.first(), ts.last()) {
            self.start_time = self.start_time.min(lo);
            self.end_time = self.end_time.max(hi);
        }
        self.count = self.count.wrapping_add(ts.len() as i64);
        first
    }

    /// Adds the times of a run of points; true if there were none before.
    #[inline]
    fn update_times(&mut self, ts: &[i64]) -> bool {
        let first = self.count == 0;
        let (mut lo, mut hi) = (self.start_time, self.end_time);
        for &t in ts {
            lo = lo.min(t);
            hi = hi.max(t);
        }
        self.start_time = lo;
        self.end_time = hi;
        self.count = self.count.wrapping_add(ts.len() as i64);
        first
    }

    /// Adds a run of BOOLEAN points (`ts` and `vs` of the same length), as one
    /// [`Statistics::update_bool`] call per point would.
    pub fn update_bools(&mut self, ts: &[i64], vs: &[bool]) {
        let first = self.update_times(ts);
        if let (ValueStats::Boolean { first: f, last }, Some(&l)) = (&mut self.values, vs.last()) {
            if first {
                *f = vs[0];
            }
            *last = l;
        }
    }

    /// Adds a run of TEXT points, as one [`Statistics::update_text`] call per point would.
    pub fn update_texts(&mut self, ts: &[i64], vs: &[Vec<u8>]) {
        for (t, v) in ts.iter().zip(vs) {
            self.update_text(*t, v);
        }
    }

    /// Adds a point of any type; errors if the value's type differs.
    pub fn update(&mut self, t: i64, v: &Value) -> Result<()> {
        match (v, self.data_type()) {
            (Value::Boolean(b), DataType::BOOLEAN) => self.update_bool(t, *b),
            (Value::Int32(x), DataType::INT32) => self.update_i32(t, *x),
            (Value::Int64(x), DataType::INT64) => self.update_i64(t, *x),
            (Value::Float(x), DataType::FLOAT) => self.update_f32(t, *x),
            (Value::Double(x), DataType::DOUBLE) => self.update_f64(t, *x),
            (Value::Text(x), DataType::TEXT) => self.update_text(t, x),
            (v, dt) => {
                return Err(Error::invalid(format!(
                    "a {} value cannot update {dt} statistics",
                    v.data_type()
                )))
            }
        }
        Ok(())
    }

    /// Merges the statistics of a later page/chunk (spec §4.3).
    pub fn merge(&mut self, other: &Statistics) -> Result<()> {
        if self.data_type() != other.data_type() {
            return Err(Error::invalid(format!(
                "cannot merge {} statistics into {}",
                other.data_type(),
                self.data_type()
            )));
        }
        if other.is_empty() {
            return Ok(());
        }
        let was_empty = self.is_empty();
        let old_start = self.start_time;
        let old_end = self.end_time;
        self.start_time = self.start_time.min(other.start_time);
        self.end_time = self.end_time.max(other.end_time);
        self.count = self.count.wrapping_add(other.count);
        if was_empty {
            self.values = other.values.clone();
            return Ok(());
        }
        let take_first = other.start_time <= old_start;
        let take_last = other.end_time >= old_end;
        macro_rules! merge_num {
            ($a:expr, $b:expr) => {{
                if $b.min < $a.min {
                    $a.min = $b.min;
                }
                if $b.max > $a.max {
                    $a.max = $b.max;
                }
                $a.sum += $b.sum;
                if take_first {
                    $a.first = $b.first;
                }
                if take_last {
                    $a.last = $b.last;
                }
            }};
        }
        match (&mut self.values, &other.values) {
            (ValueStats::Boolean { first, last }, ValueStats::Boolean { first: f, last: l }) => {
                if take_first {
                    *first = *f;
                }
                if take_last {
                    *last = *l;
                }
            }
            (ValueStats::Text { first, last }, ValueStats::Text { first: f, last: l }) => {
                if take_first {
                    *first = f.clone();
                }
                if take_last {
                    *last = l.clone();
                }
            }
            (ValueStats::Int32(a), ValueStats::Int32(b)) => merge_num!(a, b),
            (ValueStats::Int64(a), ValueStats::Int64(b)) => merge_num!(a, b),
            (ValueStats::Float(a), ValueStats::Float(b)) => merge_num!(a, b),
            (ValueStats::Double(a), ValueStats::Double(b)) => merge_num!(a, b),
            _ => unreachable!("types checked above"),
        }
        Ok(())
    }

    /// Serialized size in bytes.
    pub fn serialized_size(&self) -> usize {
        match &self.values {
            ValueStats::Text { first, last } => 32 + first.len() + last.len(),
            _ => self.data_type().fixed_statistics_size(),
        }
    }

    /// Appends the serialized form.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        io::put_i64(out, self.count);
        io::put_i64(out, self.start_time);
        io::put_i64(out, self.end_time);
        match &self.values {
            ValueStats::Boolean { first, last } => {
                io::put_bool(out, *first);
                io::put_bool(out, *last);
            }
            ValueStats::Int32(s) => {
                for v in [s.min, s.max, s.first, s.last] {
                    io::put_i32(out, v);
                }
                io::put_f64(out, s.sum);
            }
            ValueStats::Int64(s) => {
                for v in [s.min, s.max, s.first, s.last] {
                    io::put_i64(out, v);
                }
                io::put_f64(out, s.sum);
            }
            ValueStats::Float(s) => {
                for v in [s.min, s.max, s.first, s.last] {
                    io::put_f32(out, v);
                }
                io::put_f64(out, s.sum);
            }
            ValueStats::Double(s) => {
                for v in [s.min, s.max, s.first, s.last] {
                    io::put_f64(out, v);
                }
                io::put_f64(out, s.sum);
            }
            ValueStats::Text { first, last } => {
                io::put_binary(out, first);
                io::put_binary(out, last);
            }
        }
    }

    /// Reads statistics of `data_type`.
    pub fn deserialize(r: &mut ByteReader<'_>, data_type: DataType) -> Result<Self> {
        let count = r.read_i64("statistics count")?;
        let start_time = r.read_i64("statistics start time")?;
        let end_time = r.read_i64("statistics end time")?;
        let values = match data_type.storage_type() {
            DataType::BOOLEAN => ValueStats::Boolean {
                first: r.read_bool("statistics first")?,
                last: r.read_bool("statistics last")?,
            },
            DataType::INT32 => ValueStats::Int32(NumStats {
                min: r.read_i32("statistics min")?,
                max: r.read_i32("statistics max")?,
                first: r.read_i32("statistics first")?,
                last: r.read_i32("statistics last")?,
                sum: r.read_f64("statistics sum")?,
            }),
            DataType::INT64 => ValueStats::Int64(NumStats {
                min: r.read_i64("statistics min")?,
                max: r.read_i64("statistics max")?,
                first: r.read_i64("statistics first")?,
                last: r.read_i64("statistics last")?,
                sum: r.read_f64("statistics sum")?,
            }),
            DataType::FLOAT => ValueStats::Float(NumStats {
                min: r.read_f32("statistics min")?,
                max: r.read_f32("statistics max")?,
                first: r.read_f32("statistics first")?,
                last: r.read_f32("statistics last")?,
                sum: r.read_f64("statistics sum")?,
            }),
            DataType::DOUBLE => ValueStats::Double(NumStats {
                min: r.read_f64("statistics min")?,
                max: r.read_f64("statistics max")?,
                first: r.read_f64("statistics first")?,
                last: r.read_f64("statistics last")?,
                sum: r.read_f64("statistics sum")?,
            }),
            _ => ValueStats::Text {
                first: r.read_binary("statistics first")?.to_vec(),
                last: r.read_binary("statistics last")?.to_vec(),
            },
        };
        Ok(Statistics {
            count,
            start_time,
            end_time,
            values,
        })
    }

    /// `(min, max, first, last, sum)` as [`Value`]s; min/max/sum are `None` for
    /// BOOLEAN and TEXT.
    pub fn summary(&self) -> (Option<Value>, Option<Value>, Value, Value, Option<f64>) {
        match &self.values {
            ValueStats::Boolean { first, last } => (
                None,
                None,
                Value::Boolean(*first),
                Value::Boolean(*last),
                None,
            ),
            ValueStats::Text { first, last } => (
                None,
                None,
                Value::Text(first.clone()),
                Value::Text(last.clone()),
                None,
            ),
            ValueStats::Int32(s) => (
                Some(Value::Int32(s.min)),
                Some(Value::Int32(s.max)),
                Value::Int32(s.first),
                Value::Int32(s.last),
                Some(s.sum),
            ),
            ValueStats::Int64(s) => (
                Some(Value::Int64(s.min)),
                Some(Value::Int64(s.max)),
                Value::Int64(s.first),
                Value::Int64(s.last),
                Some(s.sum),
            ),
            ValueStats::Float(s) => (
                Some(Value::Float(s.min)),
                Some(Value::Float(s.max)),
                Value::Float(s.first),
                Value::Float(s.last),
                Some(s.sum),
            ),
            ValueStats::Double(s) => (
                Some(Value::Double(s.min)),
                Some(Value::Double(s.max)),
                Value::Double(s.first),
                Value::Double(s.last),
                Some(s.sum),
            ),
        }
    }

    /// Bitwise equality (floats compared by their Java bit patterns).
    pub fn bit_eq(&self, other: &Statistics) -> bool {
        let mut a = Vec::new();
        let mut b = Vec::new();
        self.serialize(&mut a);
        other.serialize(&mut b);
        a == b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of non-decreasing times, worked by hand: times 3, 5, 5, 9 with values 2.5,
    /// -1.0, 4.0, 0.5 give the range 3..=9, 4 points, min -1.0, max 4.0, first 2.5, last
    /// 0.5, sum 6.0; a second run 12, 20 of 1.0, 1.0 widens the end to 20 and the sum to
    /// 8.0; an empty run changes nothing. INT64 1, 2 at times 7, 7: the range 7..=7.
    #[test]
    fn sorted_runs_take_the_range_from_their_ends() {
        let mut s = Statistics::new(DataType::DOUBLE);
        s.update_sorted_f64s(&[3, 5, 5, 9], &[2.5, -1.0, 4.0, 0.5]);
        s.update_sorted_f64s(&[], &[]);
        assert_eq!((s.count, s.start_time, s.end_time), (4, 3, 9));
        let want = NumStats {
            min: -1.0,
            max: 4.0,
            first: 2.5,
            last: 0.5,
            sum: 6.0,
        };
        assert_eq!(s.values, ValueStats::Double(want));
        s.update_sorted_f64s(&[12, 20], &[1.0, 1.0]);
        assert_eq!((s.count, s.start_time, s.end_time), (6, 3, 20));
        let want = NumStats {
            min: -1.0,
            max: 4.0,
            first: 2.5,
            last: 1.0,
            sum: 8.0,
        };
        assert_eq!(s.values, ValueStats::Double(want));
        let mut i = Statistics::new(DataType::INT64);
        i.update_sorted_i64s(&[7, 7], &[1, 2]);
        assert_eq!((i.count, i.start_time, i.end_time), (2, 7, 7));
        let mut e = Statistics::new(DataType::INT32);
        e.update_sorted_i32s(&[], &[]);
        assert!(e.is_empty());
        assert_eq!((e.start_time, e.end_time), (i64::MAX, i64::MIN));
    }

    fn hex(s: &Statistics) -> String {
        let mut v = Vec::new();
        s.serialize(&mut v);
        assert_eq!(v.len(), s.serialized_size());
        v.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn spec_vectors() {
        let mut s = Statistics::new(DataType::INT32);
        s.update_i32(1, 5);
        s.update_i32(2, -3);
        s.update_i32(3, 10);
        assert_eq!(hex(&s), "000000000000000300000000000000010000000000000003fffffffd0000000a000000050000000a4028000000000000");
        let mut s = Statistics::new(DataType::FLOAT);
        s.update_f32(1, 1.5);
        s.update_f32(2, 0.1);
        assert_eq!(hex(&s), "0000000000000002000000000000000100000000000000023dcccccd3fc000003fc000003dcccccd3ff999999a000000");
        let mut s = Statistics::new(DataType::BOOLEAN);
        s.update_bool(1, true);
        s.update_bool(2, false);
        assert_eq!(
            hex(&s),
            "00000000000000020000000000000001000000000000000201".to_string() + "00"
        );
        let mut s = Statistics::new(DataType::TEXT);
        s.update_text(1, b"a");
        s.update_text(2, b"bc");
        assert_eq!(
            hex(&s),
            "000000000000000200000000000000010000000000000002000000016100000002626".to_string()
                + "3"
        );
        let s = Statistics::new(DataType::INT64);
        // The spec's §12.2 vector shows 32 zero bytes here; INT64 statistics carry 40
        // (four i64 and the f64 sum), which is what Java serializes.
        assert_eq!(
            hex(&s),
            format!(
                "00000000000000007fffffffffffffff8000000000000000{}",
                "0".repeat(80)
            )
        );
    }

    #[test]
    fn merge_rules() {
        let mut a = Statistics::new(DataType::INT64);
        a.update_i64(10, 1);
        a.update_i64(20, 2);
        let mut b = Statistics::new(DataType::INT64);
        b.update_i64(5, 7);
        b.update_i64(20, 9);
        let mut m = Statistics::new(DataType::INT64);
        m.merge(&a).unwrap();
        m.merge(&b).unwrap();
        assert_eq!((m.count, m.start_time, m.end_time), (4, 5, 20));
        match m.values {
            ValueStats::Int64(s) => {
                assert_eq!((s.min, s.max, s.first, s.last, s.sum), (1, 9, 7, 9, 19.0));
            }
            _ => unreachable!(),
        }
        let mut nan = Statistics::new(DataType::DOUBLE);
        nan.update_f64(1, f64::NAN);
        nan.update_f64(2, 3.0);
        match nan.values {
            ValueStats::Double(s) => assert!(s.min.is_nan() && s.max.is_nan()),
            _ => unreachable!(),
        }
        let mut r = ByteReader::new(&[0u8; 3], 0);
        assert!(Statistics::deserialize(&mut r, DataType::INT32).is_err());
    }
}
