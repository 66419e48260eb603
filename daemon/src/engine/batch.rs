//! Normalized, typed points grouped by series, and their write-ahead-log encoding.
//!
//! Record payload, kind 2 (written): `u8 kind = 2`, `var series count`, then per series:
//! `var device` (0: the device of the series before; else its byte length + 1, then the bytes),
//! `var length` + measurement bytes, `u8 type`, `u8 encoding`, `u8 compression`, `var n`,
//! `u8 times` (0: the times of the series before, which has `n` points; 1: `n` times follow,
//! each a zigzag var-int of its difference from the time before, the first from 0), then the
//! `n` values: BOOLEAN u8, INT32/INT64 zigzag var-int differences like the times, FLOAT/DOUBLE
//! IEEE bits little-endian (4/8 bytes), TEXT var-int length + bytes. `var` is an unsigned
//! LEB128 var-int of up to 64 bits. The rows of a CSV file or a multi-field record share
//! their device and times, so their times are written once per device, not once per point.
//!
//! Kind 1 (read, as older versions wrote it; big-endian, via the format crate's primitives):
//! `u8 kind = 1`, `i32 series count`, then per series: `String device`,
//! `String measurement`, `u8 type`, `u8 encoding`, `u8 compression`, `i32 n`,
//! `n × i64 time`, then the `n` values (BOOLEAN u8, INT32 i32, INT64 i64, FLOAT f32,
//! DOUBLE f64, TEXT i32 length + bytes).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tsfile::basic::Column;
use tsfile::util::io::ByteReader;
use tsfile::{Compression, DataType, Encoding};

use super::schema::SeriesType;
use crate::hasher::FxBuild;

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
    /// A decoded series whose `(device, measurement)` names `intern` maps to shared strings.
    fn interned(
        intern: &mut impl FnMut(&str, &str, SeriesType) -> (Arc<str>, Arc<str>),
        (device, measurement): (&str, &str),
        ty: SeriesType,
        times: Vec<i64>,
        values: Column,
    ) -> SeriesData {
        let (device, measurement) = intern(device, measurement, ty);
        SeriesData {
            device,
            measurement,
            ty,
            times,
            values,
        }
    }

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

    /// Encodes the batch as a WAL record payload (kind 2, see the module documentation).
    pub fn encode(&self) -> Vec<u8> {
        let mut cap = 1 + MAX_VARINT;
        for s in &self.series {
            let value = match &s.values {
                Column::Text(v) => v.iter().map(|x| x.len() + MAX_VARINT).sum(),
                c => c.len() * 9,
            };
            cap += 4 + 3 * MAX_VARINT + s.device.len() + s.measurement.len() + value;
            cap += s.len() * MAX_VARINT;
        }
        let mut out = Vec::with_capacity(cap);
        out.push(2u8);
        put_var(&mut out, self.series.len() as u64);
        let mut prev: Option<&SeriesData> = None;
        for s in &self.series {
            match prev {
                Some(p) if p.device == s.device => put_var(&mut out, 0),
                _ => {
                    put_var(&mut out, s.device.len() as u64 + 1);
                    out.extend_from_slice(s.device.as_bytes());
                }
            }
            put_var(&mut out, s.measurement.len() as u64);
            out.extend_from_slice(s.measurement.as_bytes());
            out.push(s.ty.data_type.code() as u8);
            out.push(s.ty.encoding.code() as u8);
            out.push(s.ty.compression.code() as u8);
            put_var(&mut out, s.times.len() as u64);
            if prev.is_some_and(|p| p.times == s.times) {
                out.push(TIMES_SHARED);
            } else {
                out.push(TIMES_OWN);
                put_deltas(&mut out, s.times.iter().copied());
            }
            match &s.values {
                Column::Boolean(v) => out.extend(v.iter().map(|b| *b as u8)),
                Column::Int32(v) => put_deltas(&mut out, v.iter().map(|x| *x as i64)),
                Column::Int64(v) => put_deltas(&mut out, v.iter().copied()),
                Column::Float(v) => put_le(&mut out, v.iter().map(|x| x.to_bits().to_le_bytes())),
                Column::Double(v) => put_le(&mut out, v.iter().map(|x| x.to_bits().to_le_bytes())),
                Column::Text(v) => v.iter().for_each(|x| {
                    put_var(&mut out, x.len() as u64);
                    out.extend_from_slice(x);
                }),
            }
            prev = Some(s);
        }
        out
    }

    /// Decodes a WAL record payload of kind 1 or 2; `intern` maps names to shared strings.
    pub fn decode(
        payload: &[u8],
        intern: impl FnMut(&str, &str, SeriesType) -> (Arc<str>, Arc<str>),
    ) -> tsfile::Result<WriteBatch> {
        let mut batch = WriteBatch { series: Vec::new() };
        batch.decode_from(payload, intern)?;
        Ok(batch)
    }

    /// [`WriteBatch::decode`] into this batch, reusing its series' vectors. On an error the
    /// batch holds a part of the record and is to be discarded.
    pub fn decode_from(
        &mut self,
        payload: &[u8],
        intern: impl FnMut(&str, &str, SeriesType) -> (Arc<str>, Arc<str>),
    ) -> tsfile::Result<()> {
        let mut r = ByteReader::new(payload, 0);
        match r.read_u8("record kind")? {
            1 => self.series = decode_v1(&mut r, intern)?,
            2 => decode_v2_into(&mut r, intern, &mut self.series)?,
            kind => {
                return Err(ByteReader::new(payload, 0)
                    .error(format_args!("record kind 1 or 2, found {kind}")))
            }
        }
        if !r.is_empty() {
            return Err(r.error("the end of the record"));
        }
        Ok(())
    }

    /// [`WriteBatch::decode_from`] with the shared names of `names`. A kind-2 record is read
    /// by a decoder that takes each device's series headers from the layout [`Names`] kept of
    /// the device's record before when they are the same bytes; anything it does not read
    /// whole is decoded again by [`WriteBatch::decode_from`], which gives the same batch or
    /// the error.
    pub fn decode_named(&mut self, payload: &[u8], names: &mut Names) -> tsfile::Result<()> {
        if let Some((&2, body)) = payload.split_first() {
            if decode_v2_layouts(body, names, &mut self.series).is_some() {
                return Ok(());
            }
        }
        self.decode_from(payload, |d, m, _| names.series(d, m))
    }
}

/// One shared string per distinct name of the records the engine decodes, so that a record's
/// series do not each allocate their names. Bounded: past [`Names::LIMIT`] names it starts
/// afresh (the strings live on in the memtables that hold them).
///
/// It also keeps, per device, the layout of its last run of series in a record (see
/// [`WriteBatch::decode_named`]): a record whose series headers are byte for byte those of the
/// device's record before takes their names and types from there, without reading or
/// looking them up again.
#[derive(Default)]
pub struct Names {
    set: HashSet<Arc<str>, FxBuild>,
    /// The device of the series before (a record's series are grouped by device).
    device: Option<Arc<str>>,
    /// The layout of each device (its bytes) in `layouts`.
    index: HashMap<Box<[u8]>, usize, FxBuild>,
    layouts: Vec<Layout>,
    /// Bytes (about) that `index` and `layouts` took since they were last emptied.
    layout_bytes: usize,
}

/// Bytes a layout or a header in it takes besides its bytes (map slot, vector headers, name).
const LAYOUT_OVERHEAD: usize = 64;

/// The series headers of a device's last run of series in a record.
struct Layout {
    device: Arc<str>,
    /// The headers as the record holds them (measurement length and bytes, data type,
    /// encoding, compression), one after another.
    bytes: Vec<u8>,
    /// Per header: where it ends in `bytes`, its measurement and its type.
    series: Vec<(usize, Arc<str>, SeriesType)>,
}

impl Names {
    /// Most names kept.
    pub const LIMIT: usize = 1 << 16;

    /// Most bytes (about) kept in layouts; past it they start afresh.
    pub const LAYOUT_LIMIT: usize = 1 << 21;

    /// The shared string for `name`.
    pub fn intern(&mut self, name: &str) -> Arc<str> {
        intern_in(&mut self.set, name)
    }

    /// The shared strings for a series' device and measurement.
    pub fn series(&mut self, device: &str, measurement: &str) -> (Arc<str>, Arc<str>) {
        let device = match &self.device {
            Some(d) if **d == *device => d.clone(),
            _ => {
                let d = self.intern(device);
                self.device = Some(d.clone());
                d
            }
        };
        (device, self.intern(measurement))
    }
}

/// [`Names::intern`] in the set of names `set`.
fn intern_in(set: &mut HashSet<Arc<str>, FxBuild>, name: &str) -> Arc<str> {
    if let Some(a) = set.get(name) {
        return a.clone();
    }
    if set.len() >= Names::LIMIT {
        set.clear();
    }
    let a: Arc<str> = Arc::from(name);
    set.insert(a.clone());
    a
}

/// Most bytes of one [`put_var`].
const MAX_VARINT: usize = 10;
/// Kind 2: a series' times are those of the series before it.
const TIMES_SHARED: u8 = 0;
/// Kind 2: a series' times follow.
const TIMES_OWN: u8 = 1;

/// Appends an unsigned LEB128 var-int of 64 bits.
#[inline]
fn put_var(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends the fixed-size encodings `values` one after the other (the room for them made
/// once, then filled in place).
#[inline]
fn put_le<const N: usize>(out: &mut Vec<u8>, values: impl ExactSizeIterator<Item = [u8; N]>) {
    let start = out.len();
    out.resize(start + values.len() * N, 0);
    for (room, bytes) in out[start..].chunks_exact_mut(N).zip(values) {
        room.copy_from_slice(&bytes);
    }
}

/// Appends each value's difference from the one before it (the first from 0), zigzag var-ints.
#[inline]
fn put_deltas(out: &mut Vec<u8>, values: impl Iterator<Item = i64>) {
    let mut prev = 0i64;
    for v in values {
        let d = v.wrapping_sub(prev);
        put_var(out, ((d << 1) ^ (d >> 63)) as u64);
        prev = v;
    }
}

/// Reads a [`put_var`] var-int.
fn read_var(r: &mut ByteReader<'_>, what: &str) -> tsfile::Result<u64> {
    let mut v = 0u64;
    for i in 0..MAX_VARINT {
        let b = r.read_u8(what)?;
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(r.error(format_args!(
        "{what}: a var-int of at most {MAX_VARINT} bytes"
    )))
}

/// Reads a var-int count or length that must fit in the bytes left (each item takes at least
/// `min` bytes).
fn read_count(r: &mut ByteReader<'_>, what: &str, min: usize) -> tsfile::Result<usize> {
    let n = read_var(r, what)?;
    match usize::try_from(n) {
        Ok(n) if n.saturating_mul(min) <= r.remaining() => Ok(n),
        _ => Err(r.error(format_args!("{what} that fits the record"))),
    }
}

/// Reads `n` [`put_deltas`] values into `out`, each converted by `conv` (its error names
/// what was expected). The var-ints are read from the record's bytes directly; a malformed
/// one is read again by [`read_var`] for its error.
fn read_deltas_into<T>(
    r: &mut ByteReader<'_>,
    n: usize,
    what: &str,
    out: &mut Vec<T>,
    conv: impl Fn(i64) -> Result<T, &'static str>,
) -> tsfile::Result<()> {
    out.reserve(n);
    let buf = r.rest();
    let mut pos = 0usize;
    let mut prev = 0i64;
    for _ in 0..n {
        let start = pos;
        let mut z = 0u64;
        let mut i = 0;
        loop {
            match buf.get(pos) {
                Some(&b) if i < MAX_VARINT => {
                    z |= ((b & 0x7f) as u64) << (7 * i);
                    pos += 1;
                    i += 1;
                    if b & 0x80 == 0 {
                        break;
                    }
                }
                _ => {
                    r.take(start, what)?;
                    return Err(match read_var(r, what) {
                        Err(e) => e,
                        Ok(_) => r.error(format_args!("{what}: a var-int")),
                    });
                }
            }
        }
        let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
        prev = prev.wrapping_add(d);
        match conv(prev) {
            Ok(v) => out.push(v),
            Err(e) => {
                r.take(pos, what)?;
                return Err(r.error(e));
            }
        }
    }
    r.take(pos, what)?;
    Ok(())
}

fn read_type(r: &mut ByteReader<'_>) -> tsfile::Result<SeriesType> {
    let b = r.take(3, "data type, encoding and compression")?;
    let (dt, en, co) = (b[0], b[1], b[2]);
    Ok(SeriesType {
        data_type: DataType::from_code(dt as i16).ok_or_else(|| r.error("a data type code"))?,
        encoding: Encoding::from_code(en as i16).ok_or_else(|| r.error("an encoding code"))?,
        compression: Compression::from_code(co as i16)
            .ok_or_else(|| r.error("a compression code"))?,
    })
}

fn utf8<'a>(r: &ByteReader<'_>, b: &'a [u8], what: &str) -> tsfile::Result<&'a str> {
    std::str::from_utf8(b).map_err(|_| r.error(format_args!("a UTF-8 {what}")))
}

/// The body of a kind-2 record (after its kind byte) into `out`, whose series' vectors are
/// reused: `out` ends with the record's series, in order. On an error `out` holds a part of
/// the record and is to be discarded.
fn decode_v2_into(
    r: &mut ByteReader<'_>,
    mut intern: impl FnMut(&str, &str, SeriesType) -> (Arc<str>, Arc<str>),
    out: &mut Vec<SeriesData>,
) -> tsfile::Result<()> {
    let n = read_count(r, "series count", 6)?;
    out.truncate(n);
    // The device of the series before, checked when it was read.
    let mut device: Option<&str> = None;
    for i in 0..n {
        let d = read_var(r, "device length")?;
        if d > 0 {
            let len = usize::try_from(d - 1).unwrap_or(usize::MAX);
            let bytes = r.take(len, "device")?;
            device = Some(utf8(r, bytes, "device")?);
        }
        let Some(dev) = device else {
            return Err(r.error("a device (the first series names one)"));
        };
        let len = read_count(r, "measurement length", 1)?;
        let m = r.take(len, "measurement")?;
        let m = utf8(r, m, "measurement")?;
        let ty = read_type(r)?;
        let count = read_count(r, "point count", 1)?;
        let (device, measurement) = intern(dev, m, ty);
        if i == out.len() {
            out.push(SeriesData {
                device,
                measurement,
                ty,
                times: Vec::new(),
                values: Column::new(ty.data_type),
            });
        } else {
            let s = &mut out[i];
            s.device = device;
            s.measurement = measurement;
            s.ty = ty;
            s.times.clear();
            clear_for(&mut s.values, ty.data_type);
        }
        let (before, rest) = out.split_at_mut(i);
        let s = &mut rest[0];
        match r.read_u8("times tag")? {
            TIMES_SHARED => match before.last() {
                Some(p) if p.times.len() == count => s.times.extend_from_slice(&p.times),
                _ => return Err(r.error("shared times of the series before, of the same count")),
            },
            TIMES_OWN => read_deltas_into(r, count, "time", &mut s.times, Ok)?,
            t => return Err(r.error(format_args!("a times tag 0 or 1, found {t}"))),
        }
        match &mut s.values {
            Column::Boolean(v) => v.extend(r.take(count, "values")?.iter().map(|b| *b != 0)),
            Column::Int32(v) => read_deltas_into(r, count, "value", v, |x| {
                i32::try_from(x).map_err(|_| "an INT32 value")
            })?,
            Column::Int64(v) => read_deltas_into(r, count, "value", v, Ok)?,
            Column::Float(v) => v.extend(
                r.take(count.saturating_mul(4), "values")?
                    .chunks_exact(4)
                    .map(|b| f32::from_bits(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
            ),
            Column::Double(v) => v.extend(
                r.take(count.saturating_mul(8), "values")?
                    .chunks_exact(8)
                    .map(|b| {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(b);
                        f64::from_bits(u64::from_le_bytes(a))
                    }),
            ),
            Column::Text(v) => {
                v.reserve(count);
                for _ in 0..count {
                    let len = read_count(r, "value length", 1)?;
                    v.push(r.take(len, "value")?.to_vec());
                }
            }
        }
    }
    Ok(())
}

/// Empties `c` for values of `data_type`, keeping its allocation when its type is that.
#[inline]
fn clear_for(c: &mut Column, data_type: DataType) {
    if c.data_type().storage_type() != data_type.storage_type() {
        *c = Column::new(data_type);
        return;
    }
    match c {
        Column::Boolean(v) => v.clear(),
        Column::Int32(v) => v.clear(),
        Column::Int64(v) => v.clear(),
        Column::Float(v) => v.clear(),
        Column::Double(v) => v.clear(),
        Column::Text(v) => v.clear(),
    }
}

/// A cursor over a record's bytes for [`decode_v2_layouts`]: `None` for anything malformed
/// (the checks of [`read_var`], [`read_count`] and [`ByteReader::take`]).
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    #[inline]
    fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    #[inline]
    fn var(&mut self) -> Option<u64> {
        let first = self.u8()?;
        if first & 0x80 == 0 {
            return Some(first as u64);
        }
        let mut v = (first & 0x7f) as u64;
        for i in 1..MAX_VARINT {
            let b = self.u8()?;
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    #[inline]
    fn count(&mut self, min: usize) -> Option<usize> {
        let n = usize::try_from(self.var()?).ok()?;
        (n.saturating_mul(min) <= self.buf.len() - self.pos).then_some(n)
    }

    #[inline]
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    /// `n` [`put_deltas`] values into `out`, each converted by `conv`.
    #[inline]
    fn deltas<T>(
        &mut self,
        n: usize,
        out: &mut Vec<T>,
        conv: impl Fn(i64) -> Option<T>,
    ) -> Option<()> {
        out.reserve(n);
        let mut prev = 0i64;
        for _ in 0..n {
            let z = self.var()?;
            prev = prev.wrapping_add(((z >> 1) as i64) ^ -((z & 1) as i64));
            out.push(conv(prev)?);
        }
        Some(())
    }
}

/// The series type of three bytes (data type, encoding, compression codes).
fn type_of(b: &[u8]) -> Option<SeriesType> {
    Some(SeriesType {
        data_type: DataType::from_code(b[0] as i16)?,
        encoding: Encoding::from_code(b[1] as i16)?,
        compression: Compression::from_code(b[2] as i16)?,
    })
}

/// The body of a kind-2 record (after its kind byte) into `out` as [`decode_v2_into`] reads
/// it, the names shared through `names`: a series header (measurement, type) that is the
/// same bytes as the header at its place in the layout of the device's run of series before
/// takes its name and type from there. `None` when the record does not decode (`out` is
/// then to be decoded again).
fn decode_v2_layouts(body: &[u8], names: &mut Names, out: &mut Vec<SeriesData>) -> Option<()> {
    let mut r = Cursor { buf: body, pos: 0 };
    let n = r.count(6)?;
    out.truncate(n);
    if names.layout_bytes > Names::LAYOUT_LIMIT {
        names.index.clear();
        names.layouts.clear();
        names.layout_bytes = 0;
    }
    // The layout of the device of the series before, and the place in it of the next header.
    let mut run: Option<(usize, usize)> = None;
    for i in 0..n {
        let d = r.var()?;
        let (li, k) = if d > 0 {
            let dev = r.take(usize::try_from(d - 1).ok()?)?;
            let li = match names.index.get(dev) {
                Some(&li) => li,
                None => {
                    let device = intern_in(&mut names.set, std::str::from_utf8(dev).ok()?);
                    names.index.insert(dev.into(), names.layouts.len());
                    names.layout_bytes += dev.len() + LAYOUT_OVERHEAD;
                    names.layouts.push(Layout {
                        device,
                        bytes: Vec::new(),
                        series: Vec::new(),
                    });
                    names.layouts.len() - 1
                }
            };
            (li, 0)
        } else {
            run?
        };
        run = Some((li, k + 1));
        let layout = &mut names.layouts[li];
        let start = match k {
            0 => 0,
            _ => layout.series[k - 1].0,
        };
        let known = layout.series.get(k).and_then(|&(end, _, _)| {
            let h = &layout.bytes[start..end];
            r.buf[r.pos..].starts_with(h).then_some(h.len())
        });
        match known {
            Some(len) => r.pos += len,
            None => {
                let from = r.pos;
                let len = r.count(1)?;
                let m = std::str::from_utf8(r.take(len)?).ok()?;
                let ty = type_of(r.take(3)?)?;
                let m = intern_in(&mut names.set, m);
                layout.series.truncate(k);
                layout.bytes.truncate(start);
                layout.bytes.extend_from_slice(&r.buf[from..r.pos]);
                layout.series.push((layout.bytes.len(), m, ty));
                names.layout_bytes += (r.pos - from) + LAYOUT_OVERHEAD;
            }
        }
        let (_, m, ty) = &layout.series[k];
        let ty = *ty;
        let count = r.count(1)?;
        if i == out.len() {
            out.push(SeriesData {
                device: layout.device.clone(),
                measurement: m.clone(),
                ty,
                times: Vec::new(),
                values: Column::new(ty.data_type),
            });
        } else {
            let s = &mut out[i];
            if !Arc::ptr_eq(&s.device, &layout.device) {
                s.device = layout.device.clone();
            }
            if !Arc::ptr_eq(&s.measurement, m) {
                s.measurement = m.clone();
            }
            s.ty = ty;
            s.times.clear();
            clear_for(&mut s.values, ty.data_type);
        }
        let (before, rest) = out.split_at_mut(i);
        let s = &mut rest[0];
        match r.u8()? {
            TIMES_SHARED => match before.last() {
                Some(p) if p.times.len() == count => s.times.extend_from_slice(&p.times),
                _ => return None,
            },
            TIMES_OWN => r.deltas(count, &mut s.times, Some)?,
            _ => return None,
        }
        match &mut s.values {
            Column::Boolean(v) => v.extend(r.take(count)?.iter().map(|b| *b != 0)),
            Column::Int32(v) => r.deltas(count, v, |x| i32::try_from(x).ok())?,
            Column::Int64(v) => r.deltas(count, v, Some)?,
            Column::Float(v) => v.extend(
                r.take(count.checked_mul(4)?)?
                    .chunks_exact(4)
                    .map(|b| f32::from_bits(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
            ),
            Column::Double(v) => {
                v.extend(r.take(count.checked_mul(8)?)?.chunks_exact(8).map(|b| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    f64::from_bits(u64::from_le_bytes(a))
                }))
            }
            Column::Text(v) => {
                v.reserve(count);
                for _ in 0..count {
                    let len = r.count(1)?;
                    v.push(r.take(len)?.to_vec());
                }
            }
        }
    }
    (r.pos == body.len()).then_some(())
}

/// The body of a kind-1 record (after its kind byte), as versions before kind 2 wrote it.
fn decode_v1(
    r: &mut ByteReader<'_>,
    mut intern: impl FnMut(&str, &str, SeriesType) -> (Arc<str>, Arc<str>),
) -> tsfile::Result<Vec<SeriesData>> {
    let n = r.read_i32("series count")?;
    if n < 0 {
        return Err(r.error("a non-negative series count"));
    }
    let mut series = Vec::new();
    for _ in 0..n {
        let device =
            std::str::from_utf8(r.read_binary("device")?).map_err(|_| r.error("a UTF-8 device"))?;
        let measurement = std::str::from_utf8(r.read_binary("measurement")?)
            .map_err(|_| r.error("a UTF-8 measurement"))?;
        let dt = r.read_u8("data type")?;
        let en = r.read_u8("encoding")?;
        let co = r.read_u8("compression")?;
        let ty = SeriesType {
            data_type: DataType::from_code(dt as i16).ok_or_else(|| r.error("a data type code"))?,
            encoding: Encoding::from_code(en as i16).ok_or_else(|| r.error("an encoding code"))?,
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
        series.push(SeriesData::interned(
            &mut intern,
            (device, measurement),
            ty,
            times,
            values,
        ));
    }
    Ok(series)
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
        for i in [0, 1, 2, 4, 5] {
            assert_eq!(back.series[i], b.series[i]);
        }
        match &back.series[3].values {
            Column::Float(v) => {
                assert_eq!(v[0], 1.5);
                assert!(v[1].is_nan());
            }
            _ => panic!(),
        }
        // Every truncation is an error, never a panic.
        for cut in 0..bytes.len() {
            assert!(
                WriteBatch::decode(&bytes[..cut], |d, m, _| (Arc::from(d), Arc::from(m))).is_err()
            );
        }
    }

    /// One shared string per name: equal names give the same allocation, a record's series
    /// share their device, and past the limit the set starts afresh without losing a name.
    #[test]
    fn names_are_shared_and_bounded() {
        let mut n = Names::default();
        let (d1, a) = n.series("root.sg.d1", "a");
        let (d2, b) = n.series("root.sg.d1", "b");
        assert!(Arc::ptr_eq(&d1, &d2));
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!((&*d1, &*a, &*b), ("root.sg.d1", "a", "b"));
        let (d3, a2) = n.series("root.sg.d2", "a");
        assert_eq!(&*d3, "root.sg.d2");
        assert!(Arc::ptr_eq(&a, &a2));
        // Back to the first device: found in the set, not made again.
        let (d4, _) = n.series("root.sg.d1", "c");
        assert!(Arc::ptr_eq(&d1, &d4));
        for i in 0..Names::LIMIT {
            n.intern(&format!("m{i}"));
        }
        assert!(n.set.len() <= Names::LIMIT);
        let again = n.intern("a");
        assert_eq!(&*again, "a");
        assert!(n.set.len() < Names::LIMIT);
    }

    fn names(d: &str, m: &str, _: SeriesType) -> (Arc<str>, Arc<str>) {
        (Arc::from(d), Arc::from(m))
    }

    fn plain(dt: DataType) -> SeriesType {
        SeriesType {
            data_type: dt,
            encoding: Encoding::PLAIN,
            compression: Compression::UNCOMPRESSED,
        }
    }

    fn series(d: &str, m: &str, dt: DataType, times: Vec<i64>, values: Column) -> SeriesData {
        SeriesData {
            device: Arc::from(d),
            measurement: Arc::from(m),
            ty: plain(dt),
            times,
            values,
        }
    }

    /// FLOAT and DOUBLE values as the module documentation lays them out: IEEE 754 bits,
    /// little-endian, 4 and 8 bytes (1.5f32 is 0x3FC00000, -0.0 has only the sign bit; FLOAT
    /// is type code 3), after a series of none.
    #[test]
    fn kind_2_float_and_double_bytes() {
        let b = WriteBatch {
            series: vec![
                series("d", "e", DataType::DOUBLE, vec![], Column::Double(vec![])),
                series(
                    "d",
                    "f",
                    DataType::FLOAT,
                    vec![1, 2, 3],
                    Column::Float(vec![1.5, -0.0, f32::from_bits(0x0102_0304)]),
                ),
                series(
                    "d",
                    "g",
                    DataType::DOUBLE,
                    vec![1, 2, 3],
                    Column::Double(vec![-0.0, 1.5, f64::from_bits(0x0102_0304_0506_0708)]),
                ),
            ],
        };
        let expected: Vec<u8> = [
            &[2u8, 3][..],
            &[2, b'd', 1, b'e', 4, 0, 0, 0, 1],
            &[0, 1, b'f', 3, 0, 0, 3, 1, 2, 2, 2],
            &[0, 0, 0xc0, 0x3f, 0, 0, 0, 0x80, 4, 3, 2, 1],
            &[0, 1, b'g', 4, 0, 0, 3, 0],
            &[0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f],
            &[8, 7, 6, 5, 4, 3, 2, 1],
        ]
        .concat();
        assert_eq!(b.encode(), expected);
    }

    /// The bytes of kind 2 as the module documentation lays them out: type codes from the
    /// TsFile spec (INT64 2, DOUBLE 4, PLAIN 0, UNCOMPRESSED 0), zigzag LEB128 differences,
    /// IEEE 754 bits of 1.5 (0x3FF8000000000000) and -2.0 (0xC000000000000000).
    #[test]
    fn kind_2_bytes_share_device_and_times() {
        let b = WriteBatch {
            series: vec![
                series(
                    "d",
                    "a",
                    DataType::INT64,
                    vec![10, 20],
                    Column::Int64(vec![5, 3]),
                ),
                series(
                    "d",
                    "b",
                    DataType::DOUBLE,
                    vec![10, 20],
                    Column::Double(vec![1.5, -2.0]),
                ),
                series(
                    "e",
                    "c",
                    DataType::INT64,
                    vec![10, 30],
                    Column::Int64(vec![-1, 200]),
                ),
            ],
        };
        let expected: Vec<u8> = [
            &[2u8, 3][..],
            &[2, b'd', 1, b'a', 2, 0, 0, 2, 1, 20, 20, 10, 3],
            &[0, 1, b'b', 4, 0, 0, 2, 0],
            &[0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0xc0],
            // Another device: its own times even though the counts match.
            &[2, b'e', 1, b'c', 2, 0, 0, 2, 1, 20, 40, 1, 0x92, 0x03],
        ]
        .concat();
        assert_eq!(b.encode(), expected);
        assert_eq!(WriteBatch::decode(&expected, names).unwrap(), b);
    }

    #[test]
    fn kind_2_extremes_round_trip() {
        let times = vec![i64::MIN, i64::MAX, 0, -1, i64::MIN];
        let b = WriteBatch {
            series: vec![
                series(
                    "d",
                    "l",
                    DataType::INT64,
                    times.clone(),
                    Column::Int64(times.clone()),
                ),
                series(
                    "d",
                    "i",
                    DataType::INT32,
                    times.clone(),
                    Column::Int32(vec![i32::MIN, i32::MAX, 0, -1, i32::MIN]),
                ),
                // Same device, other times: written again.
                series(
                    "d",
                    "t",
                    DataType::TEXT,
                    vec![1],
                    Column::Text(vec![vec![0xff; 200]]),
                ),
                series(
                    "d",
                    "s",
                    DataType::STRING,
                    vec![2],
                    Column::Text(vec![b"x".to_vec()]),
                ),
            ],
        };
        let back = WriteBatch::decode(&b.encode(), names).unwrap();
        assert_eq!(back, b);
        // A series may be empty; a batch may have no series.
        let empty = WriteBatch {
            series: vec![series(
                "d",
                "e",
                DataType::INT64,
                vec![],
                Column::Int64(vec![]),
            )],
        };
        assert_eq!(WriteBatch::decode(&empty.encode(), names).unwrap(), empty);
        assert_eq!(
            WriteBatch::decode(&WriteBatch::default().encode(), names).unwrap(),
            WriteBatch::default()
        );
    }

    /// A kind-1 record as the previous version wrote it (big-endian, i32 lengths) still reads.
    #[test]
    fn kind_1_still_decodes() {
        let bytes: Vec<u8> = [
            &[1u8, 0, 0, 0, 1][..],
            &[0, 0, 0, 1, b'd', 0, 0, 0, 1, b'a', 2, 0, 0, 0, 0, 0, 2],
            &[0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 20],
            &[
                0, 0, 0, 0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd,
            ],
        ]
        .concat();
        let b = WriteBatch::decode(&bytes, names).unwrap();
        assert_eq!(
            b,
            WriteBatch {
                series: vec![series(
                    "d",
                    "a",
                    DataType::INT64,
                    vec![10, 20],
                    Column::Int64(vec![5, -3])
                )]
            }
        );
        assert!(WriteBatch::decode(&bytes[..bytes.len() - 1], names).is_err());
    }

    #[test]
    fn bad_kind_2_records_are_errors() {
        let bad: [&[u8]; 11] = [
            // A time var-int cut by the end of the record.
            &[2, 1, 2, b'd', 1, b'a', 2, 0, 0, 1, 1, 0x80],
            // A value var-int longer than ten bytes.
            &[
                2, 1, 2, b'd', 1, b'a', 2, 0, 0, 1, 1, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                0x80, 0x80, 0x80, 0x01,
            ],
            // Unknown kind.
            &[3, 0],
            // The first series refers to the device before it.
            &[2, 1, 0, 1, b'a', 2, 0, 0, 0, 1],
            // The first series shares the times before it.
            &[2, 1, 2, b'd', 1, b'a', 2, 0, 0, 1, 0, 0],
            // Shared times of another count.
            &[
                2, 2, 2, b'd', 1, b'a', 2, 0, 0, 1, 1, 2, 2, 0, 1, b'b', 2, 0, 0, 2, 0, 2, 2,
            ],
            // An INT32 value out of range (2^31).
            &[
                2, 1, 2, b'd', 1, b'a', 1, 0, 0, 1, 1, 2, 0x80, 0x80, 0x80, 0x80, 0x10,
            ],
            // A times tag that is neither 0 nor 1.
            &[2, 1, 2, b'd', 1, b'a', 2, 0, 0, 1, 2, 2, 2],
            // A point count far past the record.
            &[
                2, 1, 2, b'd', 1, b'a', 2, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 1,
            ],
            // Bytes after the last series.
            &[2, 0, 0],
            // A var-int longer than ten bytes.
            &[
                2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
            ],
        ];
        for b in bad {
            assert!(WriteBatch::decode(b, names).is_err(), "{b:?}");
        }
        // The well-formed twin of the INT32 case reads.
        let ok = [
            2, 1, 2, b'd', 1, b'a', 1, 0, 0, 1, 1, 2, 0xfe, 0xff, 0xff, 0xff, 0x0f,
        ];
        let b = WriteBatch::decode(&ok, names).unwrap();
        assert_eq!(b.series[0].values, Column::Int32(vec![i32::MAX]));
        // Ten bytes is the longest var-int: zigzag 2^64 - 1 (nine 0xff bytes, then 0x01) is
        // the difference -2^63, so the value i64::MIN.
        let longest = [
            2, 1, 2, b'd', 1, b'a', 2, 0, 0, 1, 1, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0x01,
        ];
        let b = WriteBatch::decode(&longest, names).unwrap();
        assert_eq!(b.series[0].values, Column::Int64(vec![i64::MIN]));
    }

    /// Decoding into a batch that held another record gives what a fresh decode gives:
    /// fewer series, a slot whose type changes, shared times, names of the new record.
    #[test]
    fn decode_from_reuses_a_batch_without_keeping_the_record_before() {
        let first = WriteBatch {
            series: vec![
                series(
                    "root.a.d1",
                    "x",
                    DataType::INT64,
                    vec![1, 2, 3],
                    Column::Int64(vec![7, 8, 9]),
                ),
                series(
                    "root.a.d1",
                    "y",
                    DataType::INT64,
                    vec![1, 2, 3],
                    Column::Int64(vec![1, 1, 1]),
                ),
                series(
                    "root.a.d2",
                    "z",
                    DataType::TEXT,
                    vec![5],
                    Column::Text(vec![b"q".to_vec()]),
                ),
            ],
        };
        let second = WriteBatch {
            series: vec![
                series(
                    "root.b.d9",
                    "x",
                    DataType::DOUBLE,
                    vec![10, 20],
                    Column::Double(vec![0.5, -2.0]),
                ),
                series(
                    "root.b.d9",
                    "w",
                    DataType::INT64,
                    vec![10, 20],
                    Column::Int64(vec![-4, 6]),
                ),
            ],
        };
        let mut b = WriteBatch::default();
        b.decode_from(&first.encode(), names).unwrap();
        assert_eq!(b, first);
        b.decode_from(&second.encode(), names).unwrap();
        assert_eq!(b, second);
        // A bad record leaves the batch to be discarded; the next good one reads whole.
        assert!(b
            .decode_from(&[2, 1, 2, b'd', 1, b'a', 2, 0, 0, 1, 1, 0x80], names)
            .is_err());
        b.decode_from(&first.encode(), names).unwrap();
        assert_eq!(b, first);
    }

    fn one(d: &str, m: &str, dt: DataType, t: i64, values: Column) -> SeriesData {
        series(d, m, dt, vec![t], values)
    }

    /// Records read through one [`Names`] give the batches they were made of, whether their
    /// headers are those of the device's layout or not: the same names with another type, one
    /// more measurement, other devices in between, a device named twice in a record, names
    /// in another order, more points per series.
    #[test]
    fn decode_named_reads_each_record_as_written() {
        let i64s = |v: Vec<i64>| Column::Int64(v);
        let d1 = |m: &str, t: i64, x: i64| one("root.sg.d1", m, DataType::INT64, t, i64s(vec![x]));
        let records = vec![
            vec![d1("a", 1, 10), d1("b", 1, 20)],
            vec![d1("a", 2, 11), d1("b", 2, 21)],
            // The same names, b now DOUBLE.
            vec![
                d1("a", 3, 12),
                one(
                    "root.sg.d1",
                    "b",
                    DataType::DOUBLE,
                    3,
                    Column::Double(vec![0.5]),
                ),
            ],
            // Back to INT64, and one more measurement.
            vec![d1("a", 4, 13), d1("b", 4, 23), d1("c", 4, 33)],
            vec![
                one("root.sg.d2", "a", DataType::INT64, 4, i64s(vec![-1])),
                one("root.sg.d2", "b", DataType::INT64, 4, i64s(vec![-2])),
            ],
            vec![d1("a", 5, 14), d1("b", 5, 24), d1("c", 5, 34)],
            // One measurement fewer, then the device twice in one record.
            vec![d1("a", 6, 15)],
            vec![
                d1("b", 7, 26),
                one("root.sg.d2", "a", DataType::INT64, 7, i64s(vec![-3])),
                d1("a", 7, 16),
            ],
            // Other order, several points, a TEXT series.
            vec![
                series(
                    "root.sg.d1",
                    "b",
                    DataType::INT64,
                    vec![8, 9],
                    i64s(vec![27, 28]),
                ),
                series(
                    "root.sg.d1",
                    "a",
                    DataType::INT64,
                    vec![8, 9],
                    i64s(vec![17, 18]),
                ),
                one(
                    "root.sg.d1",
                    "t",
                    DataType::TEXT,
                    9,
                    Column::Text(vec![b"x".to_vec()]),
                ),
                series(
                    "root.sg.d1",
                    "f",
                    DataType::BOOLEAN,
                    vec![8, 9],
                    Column::Boolean(vec![true, false]),
                ),
            ],
            vec![d1("a", 10, 19), d1("b", 10, 29), d1("c", 10, 39)],
        ];
        let mut n = Names::default();
        let mut b = WriteBatch::default();
        for r in records {
            let want = WriteBatch { series: r };
            b.decode_named(&want.encode(), &mut n).unwrap();
            assert_eq!(b, want);
            // Each record again: now with the headers of its own layout.
            b.decode_named(&want.encode(), &mut n).unwrap();
            assert_eq!(b, want);
        }
    }

    /// Past the limits of names and of layouts the records still read as written.
    #[test]
    fn decode_named_past_its_limits() {
        let mut n = Names::default();
        let mut b = WriteBatch::default();
        let rec = |x: i64| WriteBatch {
            series: vec![
                one(
                    "root.sg.d1",
                    "a",
                    DataType::INT64,
                    x,
                    Column::Int64(vec![x]),
                ),
                one(
                    "root.sg.d1",
                    "b",
                    DataType::INT64,
                    x,
                    Column::Int64(vec![-x]),
                ),
            ],
        };
        b.decode_named(&rec(1).encode(), &mut n).unwrap();
        for i in 0..Names::LIMIT {
            n.intern(&format!("m{i}"));
        }
        b.decode_named(&rec(2).encode(), &mut n).unwrap();
        assert_eq!(b, rec(2));
        // One record of 300 series with names of 8 KiB: more than the layouts keep.
        let long: Vec<SeriesData> = (0..300)
            .map(|i| {
                let m = format!("{i:08192}");
                one("root.sg.d2", &m, DataType::INT64, 1, Column::Int64(vec![i]))
            })
            .collect();
        let long = WriteBatch { series: long };
        b.decode_named(&long.encode(), &mut n).unwrap();
        assert_eq!(b, long);
        assert!(n.layout_bytes > Names::LAYOUT_LIMIT);
        b.decode_named(&rec(3).encode(), &mut n).unwrap();
        assert_eq!(b, rec(3));
        assert!(n.layout_bytes < Names::LAYOUT_LIMIT);
        b.decode_named(&long.encode(), &mut n).unwrap();
        assert_eq!(b, long);
    }

    /// A record that does not decode is the error [`WriteBatch::decode`] gives, also when
    /// its headers are those of a layout kept; a good record after it reads whole.
    #[test]
    fn decode_named_errors_are_decodes_errors() {
        let good = WriteBatch {
            series: vec![
                one("d", "a", DataType::INT64, 5, Column::Int64(vec![1])),
                one("d", "b", DataType::INT32, 5, Column::Int32(vec![2])),
                one(
                    "d",
                    "c",
                    DataType::TEXT,
                    5,
                    Column::Text(vec![b"xy".to_vec()]),
                ),
            ],
        };
        let bytes = good.encode();
        let mut n = Names::default();
        let mut b = WriteBatch::default();
        let mut bad: Vec<Vec<u8>> = (0..bytes.len()).map(|cut| bytes[..cut].to_vec()).collect();
        // A byte more, an unknown type code in the second header, an INT32 out of range.
        bad.push([&bytes[..], &[0]].concat());
        let mut ty = bytes.clone();
        let at = bytes.windows(2).position(|w| w == [1, b'b']).unwrap() + 2;
        assert_eq!(ty[at], 1);
        ty[at] = 99;
        bad.push(ty);
        for r in &bad {
            b.decode_named(&bytes, &mut n).unwrap();
            assert_eq!(b, good);
            let got = b.decode_named(r, &mut n).unwrap_err().to_string();
            assert_eq!(got, WriteBatch::decode(r, names).unwrap_err().to_string());
        }
        let out_of_range = [
            2, 1, 2, b'd', 1, b'b', 1, 0, 0, 1, 1, 10, 0x80, 0x80, 0x80, 0x80, 0x10,
        ];
        assert!(b.decode_named(&out_of_range, &mut n).is_err());
        // Shared times of another count (the series before has one time, this one two).
        let shared = [
            2, 2, 2, b'd', 1, b'a', 2, 0, 0, 1, 1, 2, 2, 0, 1, b'b', 2, 0, 0, 2, 0, 2, 2,
        ];
        assert!(WriteBatch::decode(&shared, names).is_err());
        assert!(b.decode_named(&shared, &mut n).is_err());
        b.decode_named(&bytes, &mut n).unwrap();
        assert_eq!(b, good);
    }
}
