//! Normalized, typed points grouped by series, and their write-ahead-log encoding.
//!
//! Record payload (big-endian, via the format crate's primitives):
//! `u8 kind = 1`, `i32 series count`, then per series: `String device`,
//! `String measurement`, `u8 type`, `u8 encoding`, `u8 compression`, `i32 n`,
//! `n × i64 time`, then the `n` values (BOOLEAN u8, INT32 i32, INT64 i64, FLOAT f32,
//! DOUBLE f64, TEXT i32 length + bytes).

use std::sync::Arc;

use tsfile::basic::Column;
use tsfile::util::io::{put_binary, put_f32, put_f64, put_i32, put_i64, ByteReader};
use tsfile::{Compression, DataType, Encoding};

use super::schema::SeriesType;

/// Points of one series.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesData {
    /// Device path.
    pub device: Arc<str>,
    /// Measurement.
    pub measurement: Arc<str>,
    /// Frozen type of the series.
    pub ty: SeriesType,
    /// Timestamps, in arrival order.
    pub times: Vec<i64>,
    /// Values, same length, of `ty.data_type`.
    pub values: Column,
}

impl SeriesData {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }
}

/// A durable unit: the accepted points of one payload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteBatch {
    /// Series with their points.
    pub series: Vec<SeriesData>,
}

impl WriteBatch {
    /// Number of points.
    pub fn points(&self) -> u64 {
        self.series.iter().map(|s| s.len() as u64).sum()
    }

    /// Encodes the batch as a WAL record payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut cap = 5;
        for s in &self.series {
            cap += 8 + s.device.len() + s.measurement.len() + 7 + s.len() * 16;
        }
        let mut out = Vec::with_capacity(cap);
        out.push(1u8);
        put_i32(&mut out, self.series.len() as i32);
        for s in &self.series {
            put_binary(&mut out, s.device.as_bytes());
            put_binary(&mut out, s.measurement.as_bytes());
            out.push(s.ty.data_type.code() as u8);
            out.push(s.ty.encoding.code() as u8);
            out.push(s.ty.compression.code() as u8);
            put_i32(&mut out, s.times.len() as i32);
            for t in &s.times {
                put_i64(&mut out, *t);
            }
            match &s.values {
                Column::Boolean(v) => out.extend(v.iter().map(|b| *b as u8)),
                Column::Int32(v) => v.iter().for_each(|x| put_i32(&mut out, *x)),
                Column::Int64(v) => v.iter().for_each(|x| put_i64(&mut out, *x)),
                Column::Float(v) => v.iter().for_each(|x| put_f32(&mut out, *x)),
                Column::Double(v) => v.iter().for_each(|x| put_f64(&mut out, *x)),
                Column::Text(v) => v.iter().for_each(|x| put_binary(&mut out, x)),
            }
        }
        out
    }

    /// Decodes a WAL record payload; `intern` maps names to shared strings.
    pub fn decode(
        payload: &[u8],
        mut intern: impl FnMut(&str, &str, SeriesType) -> (Arc<str>, Arc<str>),
    ) -> tsfile::Result<WriteBatch> {
        let mut r = ByteReader::new(payload, 0);
        let kind = r.read_u8("record kind")?;
        if kind != 1 {
            return Err(r.error(format_args!("record kind 1, found {kind}")));
        }
        let n = r.read_i32("series count")?;
        if n < 0 {
            return Err(r.error("a non-negative series count"));
        }
        let mut series = Vec::new();
        for _ in 0..n {
            let device = std::str::from_utf8(r.read_binary("device")?)
                .map_err(|_| r.error("a UTF-8 device"))?;
            let measurement = std::str::from_utf8(r.read_binary("measurement")?)
                .map_err(|_| r.error("a UTF-8 measurement"))?;
            let dt = r.read_u8("data type")?;
            let en = r.read_u8("encoding")?;
            let co = r.read_u8("compression")?;
            let ty = SeriesType {
                data_type: DataType::from_code(dt as i16)
                    .ok_or_else(|| r.error("a data type code"))?,
                encoding: Encoding::from_code(en as i16)
                    .ok_or_else(|| r.error("an encoding code"))?,
                compression: Compression::from_code(co as i16)
                    .ok_or_else(|| r.error("a compression code"))?,
            };
            let count = r.read_i32("point count")?;
            if count < 0 || count as usize > r.remaining() / 8 {
                return Err(r.error("a point count that fits the record"));
            }
            let count = count as usize;
            let mut times = Vec::with_capacity(count);
            for _ in 0..count {
                times.push(r.read_i64("time")?);
            }
            let values = match ty.data_type.storage_type() {
                DataType::BOOLEAN => Column::Boolean(
                    (0..count)
                        .map(|_| r.read_u8("value").map(|b| b != 0))
                        .collect::<tsfile::Result<_>>()?,
                ),
                DataType::INT32 => Column::Int32(
                    (0..count)
                        .map(|_| r.read_i32("value"))
                        .collect::<tsfile::Result<_>>()?,
                ),
                DataType::INT64 => Column::Int64(
                    (0..count)
                        .map(|_| r.read_i64("value"))
                        .collect::<tsfile::Result<_>>()?,
                ),
                DataType::FLOAT => Column::Float(
                    (0..count)
                        .map(|_| r.read_f32("value"))
                        .collect::<tsfile::Result<_>>()?,
                ),
                DataType::DOUBLE => Column::Double(
                    (0..count)
                        .map(|_| r.read_f64("value"))
                        .collect::<tsfile::Result<_>>()?,
                ),
                _ => Column::Text(
                    (0..count)
                        .map(|_| r.read_binary("value").map(<[u8]>::to_vec))
                        .collect::<tsfile::Result<_>>()?,
                ),
            };
            let (device, measurement) = intern(device, measurement, ty);
            series.push(SeriesData {
                device,
                measurement,
                ty,
                times,
                values,
            });
        }
        if !r.is_empty() {
            return Err(r.error("the end of the record"));
        }
        Ok(WriteBatch { series })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_type() {
        let mk = |m: &str, dt: DataType, values: Column| SeriesData {
            device: Arc::from("root.sg.d1"),
            measurement: Arc::from(m),
            ty: SeriesType::default_for(dt),
            times: (0..values.len() as i64).map(|i| i * 10 - 5).collect(),
            values,
        };
        let b = WriteBatch {
            series: vec![
                mk("b", DataType::BOOLEAN, Column::Boolean(vec![true, false])),
                mk("i", DataType::INT32, Column::Int32(vec![i32::MIN, 7])),
                mk("l", DataType::INT64, Column::Int64(vec![i64::MAX])),
                mk("f", DataType::FLOAT, Column::Float(vec![1.5, f32::NAN])),
                mk("d", DataType::DOUBLE, Column::Double(vec![-0.0, 2.25])),
                mk(
                    "t",
                    DataType::TEXT,
                    Column::Text(vec![b"x".to_vec(), vec![]]),
                ),
            ],
        };
        let bytes = b.encode();
        let back = WriteBatch::decode(&bytes, |d, m, _| (Arc::from(d), Arc::from(m))).unwrap();
        assert_eq!(back.series.len(), 6);
        assert_eq!(back.points(), 11);
        assert_eq!(back.series[0], b.series[0]);
        assert_eq!(back.series[5], b.series[5]);
        match &back.series[3].values {
            Column::Float(v) => assert!(v[1].is_nan()),
            _ => panic!(),
        }
        // Every truncation is an error, never a panic.
        for cut in 0..bytes.len() {
            assert!(
                WriteBatch::decode(&bytes[..cut], |d, m, _| (Arc::from(d), Arc::from(m))).is_err()
            );
        }
    }
}
