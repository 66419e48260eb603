//! The TsFile writer (spec §7): series registration, rows and tablets, pages sealed by
//! size and point count, chunk groups streamed out when the buffer budget is reached,
//! and the metadata section written by [`TsFileWriter::close`].
//!
//! The writer replays the 0.10 Java `TsFileWriter` decision by decision, so that the
//! same calls give the same bytes (with UNCOMPRESSED pages; Snappy output depends on the
//! compressor implementation):
//!
//! * pages are sealed after a write call by the point-count equality check or the size
//!   check that starts at 1500 points (§7.2);
//! * the buffered-bytes estimate is checked every N records, N predicted as Java does,
//!   and all chunk groups are flushed once it exceeds `group_size_bytes` (§7.3);
//! * chunk groups of a flush come in Java `HashMap` order of the device ids, chunks in
//!   `HashMap` order of the measurement ids (§7.1);
//! * the metadata section follows §5 exactly (full-path order with quoted measurements,
//!   first-appearance device order, the index tree of §5.6, bloom filter, tail).
//!
//! Unlike Java the writer refuses, before changing anything: unregistered series,
//! values of the wrong type, and a time smaller than the last time written for the
//! series (equal times are kept, as Java keeps them). A refused row or tablet leaves no
//! trace. Nothing empty is ever written. After an I/O error the output is incomplete
//! and every later call fails.

mod chunk;
mod index;
mod order;

use crate::basic::{Column, DataType, Encoding, Value};
use crate::encoding;
use crate::errors::{Error, Result};
use crate::file::bloom::BloomFilter;
use crate::file::metadata::{
    java_cmp, ChunkGroupFooter, ChunkHeader, ChunkMetadata, TimeseriesMetadata, TsFileMetadata,
};
use crate::file::properties::{MeasurementSchema, WriterProperties};
use crate::file::{marker, HEADER_LEN, MAGIC, VERSION};
use crate::statistics::Statistics;
use crate::util::hash::NameHashState;
use crate::util::io;
use chunk::{ChunkWriter, Scratch};
use index::Sink;
use order::{java_string_hash, JavaHashOrder};
use std::collections::HashMap;
use std::io::Write;

/// Rows of a device buffered before their values go through the encoders. Writing
/// rows touches one series after another; staging a few rows per device (in one
/// contiguous buffer) and then encoding them series by series keeps each series'
/// encoder state in cache. Staged rows are encoded before anything looks at the
/// encoder state (page and memory checks, flushes, tablets, error reports), and every
/// staged point still gets its own page check, so the bytes are the same as with
/// immediate encoding.
const STAGE_ROWS: usize = 128;

/// `Slot::stage_col` of a value written directly (not staged).
const DIRECT: u32 = u32::MAX;

/// Records written before the first memory check (Java's initial
/// `recordCountForNextMemCheck`).
const FIRST_MEMORY_CHECK: i64 = 100;

/// Time range of one device in a written file (what a `.resource` file records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceTimeRange {
    /// Device path.
    pub device: String,
    /// Smallest timestamp written for the device.
    pub start_time: i64,
    /// Largest timestamp written for the device.
    pub end_time: i64,
}

/// What [`TsFileWriter::close`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSummary {
    /// Total bytes written.
    pub file_size: u64,
    /// Points written.
    pub points: u64,
    /// Chunks written.
    pub chunks: u64,
    /// Chunk groups written.
    pub chunk_groups: u64,
    /// Per-device time ranges, sorted by device.
    pub devices: Vec<DeviceTimeRange>,
}

/// A registered series.
struct SeriesState {
    schema: MeasurementSchema,
    /// `String.hashCode()` of the measurement id.
    hash: i32,
    /// Last time written (any flush), for the non-decreasing check.
    last_time: Option<i64>,
    /// The chunk writer of the current flush, created on first use.
    chunk: Option<Box<ChunkWriter>>,
    /// Whether the series is in its device's chunk-writer map of the current flush.
    in_flush: bool,
    /// `(offset of the chunk header, chunk statistics)` of every chunk written, in
    /// file order.
    chunks: Vec<(i64, Statistics)>,
}

/// What the row path needs to know about one position of the cached row layout,
/// kept with the device so that checking a row does not touch the series.
#[derive(Debug, Clone, Copy)]
struct Slot {
    data_type: DataType,
    /// Column in the staged rows, or [`DIRECT`].
    stage_col: u32,
    /// REGULAR: written first, directly (it can refuse a value).
    regular: bool,
    /// The value needs [`check_value`] (NaN under GORILLA, TEXT length).
    checked: bool,
}

/// A device: its series and the state of the current flush.
struct DeviceState {
    name: String,
    /// `String.hashCode()` of the device id.
    hash: i32,
    series: Vec<SeriesState>,
    index: HashMap<String, u32>,
    /// Whether the device is in the group-writer map of the current flush.
    in_flush: bool,
    /// Java `HashMap` of the device's chunk writers in the current flush (new per flush).
    order: JavaHashOrder,
    /// Series indices of the cached row layout (the last row's measurements).
    layout: Vec<u32>,
    /// The layout's measurement names, back to back, and where each ends.
    layout_names: String,
    layout_ends: Vec<u32>,
    layout_slots: Vec<Slot>,
    /// Largest last time over the layout's series, staged rows included.
    layout_last: Option<i64>,
    /// The device and every layout series are in the current flush, with chunk writers.
    layout_ready: bool,
    /// Some layout position is written directly; some is REGULAR.
    layout_direct: bool,
    layout_regular: bool,
    /// Staged rows: their times, and `stage_series.len()` value bits per row.
    stage_times: Vec<i64>,
    stage_vals: Vec<u64>,
    /// Series of each stage column.
    stage_series: Vec<u32>,
}

impl DeviceState {
    fn new(name: &str) -> Self {
        DeviceState {
            name: name.to_string(),
            hash: java_string_hash(name),
            series: Vec::new(),
            index: HashMap::new(),
            in_flush: false,
            order: JavaHashOrder::new(),
            layout: Vec::new(),
            layout_names: String::new(),
            layout_ends: Vec::new(),
            layout_slots: Vec::new(),
            layout_last: None,
            layout_ready: false,
            layout_direct: false,
            layout_regular: false,
            stage_times: Vec::new(),
            stage_vals: Vec::new(),
            stage_series: Vec::new(),
        }
    }

    /// Whether the row's measurement names are the cached layout's.
    #[inline]
    fn layout_matches(&self, values: &[(&str, Value)]) -> bool {
        if self.layout_ends.len() != values.len() {
            return false;
        }
        let names = self.layout_names.as_bytes();
        let mut start = 0usize;
        for ((m, _), &end) in values.iter().zip(&self.layout_ends) {
            let end = end as usize;
            let m = m.as_bytes();
            if end - start != m.len() || !short_eq(&names[start..end], m) {
                return false;
            }
            start = end;
        }
        true
    }

    /// Stages a row of the cached layout if its names, types and values pass (one
    /// pass, nothing kept otherwise). Only for layouts without directly written slots.
    #[inline]
    fn try_stage_row(&mut self, values: &[(&str, Value)], time: i64) -> bool {
        if values.len() != self.layout_slots.len() || values.len() != self.layout_ends.len() {
            return false;
        }
        let base = self.stage_vals.len();
        self.stage_vals.resize(base + values.len(), 0);
        let names = self.layout_names.as_bytes();
        let mut start = 0usize;
        let mut ok = true;
        for ((((m, v), slot), &end), dst) in values
            .iter()
            .zip(&self.layout_slots)
            .zip(&self.layout_ends)
            .zip(&mut self.stage_vals[base..])
        {
            let end = end as usize;
            ok &= names
                .get(start..end)
                .is_some_and(|n| short_eq(n, m.as_bytes()));
            start = end;
            let (data_type, bits, nan) = match v {
                Value::Boolean(b) => (DataType::BOOLEAN, *b as u64, false),
                Value::Int32(x) => (DataType::INT32, *x as u32 as u64, false),
                Value::Int64(x) => (DataType::INT64, *x as u64, false),
                Value::Float(x) => (DataType::FLOAT, x.to_bits() as u64, x.is_nan()),
                Value::Double(x) => (DataType::DOUBLE, x.to_bits(), x.is_nan()),
                Value::Text(_) => (DataType::TEXT, 0, false),
            };
            ok &= data_type == slot.data_type && !(nan && slot.checked);
            *dst = bits;
        }
        if ok {
            self.stage_times.push(time);
        } else {
            self.stage_vals.truncate(base);
        }
        ok
    }

    /// Forgets the cached layout (its staged rows must have been drained).
    fn invalidate_layout(&mut self) {
        self.layout.clear();
        self.layout_names.clear();
        self.layout_ends.clear();
        self.layout_slots.clear();
        self.stage_series.clear();
        self.layout_ready = false;
    }

    /// Caches the layout of a new row. The stage must be empty.
    #[cold]
    fn rebuild_layout(&mut self, values: &[(&str, Value)], time: i64) -> Result<()> {
        self.invalidate_layout();
        for (m, _) in values {
            match self.index.get(*m) {
                Some(&i) => {
                    self.layout.push(i);
                    self.layout_names.push_str(m);
                    self.layout_ends.push(self.layout_names.len() as u32);
                }
                None => {
                    let e = unknown_series(&self.name, m, time);
                    self.invalidate_layout();
                    return Err(e);
                }
            }
        }
        // A series named twice in a row is written directly (staging is per column).
        let mut sorted = self.layout.clone();
        sorted.sort_unstable();
        let dup = sorted.windows(2).any(|w| w[0] == w[1]);
        self.layout_last = None;
        self.layout_direct = false;
        self.layout_regular = false;
        let mut ready = self.in_flush;
        for &i in &self.layout {
            let s = &self.series[i as usize];
            let regular = s.schema.encoding == Encoding::REGULAR;
            let stage_col = if chunk::stageable(&s.schema) && !dup {
                self.stage_series.push(i);
                (self.stage_series.len() - 1) as u32
            } else {
                self.layout_direct = true;
                DIRECT
            };
            self.layout_regular |= regular;
            self.layout_slots.push(Slot {
                data_type: s.schema.data_type,
                stage_col,
                regular,
                checked: s.schema.data_type == DataType::TEXT
                    || (s.schema.encoding == Encoding::GORILLA
                        && matches!(s.schema.data_type, DataType::FLOAT | DataType::DOUBLE)),
            });
            self.layout_last = self.layout_last.max(s.last_time);
            ready &= s.in_flush && s.chunk.is_some();
        }
        self.layout_ready = ready;
        Ok(())
    }

    /// Encodes the staged rows, column by column.
    fn drain_stage(&mut self, scratch: &mut Scratch) -> Result<()> {
        let Some(&last) = self.stage_times.last() else {
            return Ok(());
        };
        let width = self.stage_series.len();
        let mut res = Ok(());
        for (col, &i) in self.stage_series.iter().enumerate() {
            let s = &mut self.series[i as usize];
            s.last_time = Some(last);
            let r = match s.chunk.as_mut() {
                Some(c) => c.write_staged(&self.stage_times, &self.stage_vals, width, col, scratch),
                None => Err(Error::invalid("staged points without a chunk writer")),
            };
            if let (Err(e), true) = (r, res.is_ok()) {
                res = Err(Error::invalid(format!(
                    "series {}.{} (points from time {}): {e}",
                    self.name, s.schema.measurement, self.stage_times[0]
                )));
            }
        }
        self.stage_times.clear();
        self.stage_vals.clear();
        res
    }

    /// Bytes held by staged rows.
    fn staged_bytes(&self) -> usize {
        (self.stage_times.len() + self.stage_vals.len()) * 8
    }

    /// Creates the layout series' chunk writers (invisible), then adds the device and
    /// the series to the flush maps in row order (as Java adds them before writing).
    #[cold]
    fn prepare_layout(
        &mut self,
        d: u32,
        props: &WriterProperties,
        flush_devices: &mut JavaHashOrder,
    ) -> Result<()> {
        for &i in &self.layout {
            let s = &mut self.series[i as usize];
            if s.chunk.is_none() {
                s.chunk = Some(Box::new(new_chunk_writer(props, &self.name, &s.schema)?));
            }
        }
        if !self.in_flush {
            self.in_flush = true;
            flush_devices.insert(self.hash, d);
        }
        for &i in &self.layout {
            let s = &mut self.series[i as usize];
            if !s.in_flush {
                s.in_flush = true;
                self.order.insert(s.hash, i);
            }
        }
        self.layout_ready = true;
        Ok(())
    }

    /// The precise error for a row that failed the fast checks.
    #[cold]
    fn refusal(&mut self, values: &[(&str, Value)], time: i64, scratch: &mut Scratch) -> Error {
        if let Err(e) = self.drain_stage(scratch) {
            return e;
        }
        for ((_, v), &i) in values.iter().zip(&self.layout) {
            let s = &self.series[i as usize];
            if v.data_type() != s.schema.data_type {
                return wrong_type(&self.name, &s.schema, time, v.data_type());
            }
            if let Some(last) = s.last_time {
                if time < last {
                    return decreasing_time(&self.name, &s.schema.measurement, time, last);
                }
            }
            if let Err(e) = check_value(&self.name, &s.schema, time, v) {
                return e;
            }
        }
        Error::invalid(format!(
            "row of device {} at time {time} refused",
            self.name
        ))
    }

    /// Writes the directly written values of a row: REGULAR ones first (they may
    /// refuse a value, leaving the rest of the row unwritten), then the others.
    fn write_direct(
        &mut self,
        values: &[(&str, Value)],
        time: i64,
        scratch: &mut Scratch,
    ) -> Result<()> {
        for regular_pass in [true, false] {
            if regular_pass && !self.layout_regular {
                continue;
            }
            for (k, (_, v)) in values.iter().enumerate() {
                let slot = self.layout_slots[k];
                if slot.stage_col != DIRECT || slot.regular != regular_pass {
                    continue;
                }
                let s = &mut self.series[self.layout[k] as usize];
                if let Some(c) = s.chunk.as_mut() {
                    c.write_value(time, v, scratch).map_err(|e| {
                        Error::invalid(format!(
                            "series {}.{} at time {time}: {e} (the row's values after this \
                             series were not written)",
                            self.name, s.schema.measurement
                        ))
                    })?;
                }
                s.last_time = Some(time);
            }
        }
        Ok(())
    }
}

/// Byte equality for short names without a `memcmp` call: names of up to 16 bytes
/// are compared as two (possibly overlapping) words.
#[inline]
fn short_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    fn word<const N: usize>(s: &[u8], at: usize) -> [u8; N] {
        let mut w = [0u8; N];
        w.copy_from_slice(&s[at..at + N]);
        w
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, n - 4) == word::<4>(b, n - 4),
        8..=16 => word::<8>(a, 0) == word::<8>(b, 0) && word::<8>(a, n - 8) == word::<8>(b, n - 8),
        _ => a == b,
    }
}

fn unknown_series(device: &str, measurement: &str, time: i64) -> Error {
    Error::invalid(format!(
        "series {device}.{measurement} (time {time}) is not registered"
    ))
}

fn wrong_type(device: &str, s: &MeasurementSchema, time: i64, found: DataType) -> Error {
    Error::invalid(format!(
        "series {device}.{} at time {time}: a {found} value for a {} series",
        s.measurement, s.data_type
    ))
}

fn decreasing_time(device: &str, measurement: &str, time: i64, last: i64) -> Error {
    Error::invalid(format!(
        "series {device}.{measurement}: time {time} is before the last written time {last} \
         (times must not decrease per series)"
    ))
}

/// Whether [`check_value`] would accept `v` for a checked slot.
#[inline]
fn value_storable(v: &Value) -> bool {
    match v {
        Value::Float(x) => !x.is_nan(),
        Value::Double(x) => !x.is_nan(),
        Value::Text(b) => b.len() <= i32::MAX as usize,
        _ => true,
    }
}

/// Refuses values the encoders cannot store: NaN under GORILLA (its end marker) and
/// TEXT longer than an `i32` length.
fn check_value(device: &str, s: &MeasurementSchema, time: i64, v: &Value) -> Result<()> {
    let bad = match v {
        Value::Float(x) if x.is_nan() => s.encoding == Encoding::GORILLA,
        Value::Double(x) if x.is_nan() => s.encoding == Encoding::GORILLA,
        Value::Text(b) => b.len() > i32::MAX as usize,
        _ => false,
    };
    if bad {
        Err(value_refused(device, s, time))
    } else {
        Ok(())
    }
}

#[cold]
fn value_refused(device: &str, s: &MeasurementSchema, time: i64) -> Error {
    let why = if s.data_type == DataType::TEXT {
        "a TEXT value longer than 2^31-1 bytes cannot be stored"
    } else {
        "NaN cannot be stored with GORILLA (it is the encoding's end-of-page marker); \
         use PLAIN for series with NaN"
    };
    Error::invalid(format!(
        "series {device}.{} at time {time}: {why}",
        s.measurement
    ))
}

/// Checks a whole tablet column with [`check_value`]'s rules.
fn check_column(device: &str, s: &MeasurementSchema, times: &[i64], col: &Column) -> Result<()> {
    let at = |k: usize| times.get(k).copied().unwrap_or(0);
    let bad = match col {
        // A scan without an early exit first (it vectorizes), the position only on a NaN.
        Column::Float(v)
            if s.encoding == Encoding::GORILLA && v.iter().fold(false, |a, x| a | x.is_nan()) =>
        {
            v.iter().position(|x| x.is_nan())
        }
        Column::Double(v)
            if s.encoding == Encoding::GORILLA && v.iter().fold(false, |a, x| a | x.is_nan()) =>
        {
            v.iter().position(|x| x.is_nan())
        }
        Column::Text(v) => v.iter().position(|b| b.len() > i32::MAX as usize),
        _ => None,
    };
    match bad {
        Some(k) => Err(value_refused(device, s, at(k))),
        None => Ok(()),
    }
}

#[cold]
fn new_chunk_writer(
    props: &WriterProperties,
    device: &str,
    schema: &MeasurementSchema,
) -> Result<ChunkWriter> {
    ChunkWriter::new(
        schema,
        props.page_size_bytes,
        props.max_points_per_page,
        props.float_precision,
    )
    .map_err(|e| Error::invalid(format!("series {device}.{}: {e}", schema.measurement)))
}

/// The series' sort key and bloom-filter string: `device.measurement`, the
/// measurement in double quotes if it contains a `.` (Java `Path(String, String)`).
fn full_path(device: &str, measurement: &str) -> String {
    if measurement.contains('.') {
        format!("{device}.\"{measurement}\"")
    } else {
        format!("{device}.{measurement}")
    }
}

/// Writes one TsFile to `W`.
pub struct TsFileWriter<W: Write> {
    out: W,
    props: WriterProperties,
    /// Bytes written to `out`.
    pos: u64,
    /// Set after an I/O error: the output is incomplete.
    failed: bool,
    devices: Vec<DeviceState>,
    device_index: HashMap<String, u32, NameHashState>,
    /// The device of the last row (see `find_device`).
    last_device: u32,
    /// Java `HashMap` of the group writers (devices) of the current flush; its capacity
    /// survives flushes, as `clear()` keeps it.
    flush_devices: JavaHashOrder,
    /// Java's `recordCount` since the last flush.
    record_count: i64,
    /// Java's `recordCountForNextMemCheck`.
    next_memory_check: i64,
    /// Reused page-body buffer and compressor.
    scratch: Scratch,
    /// Reused buffer: chunk headers and footers.
    head: Vec<u8>,
    total_chunks: u64,
    chunk_groups: u64,
    version_info: Vec<(i64, i64)>,
}

impl<W: Write> TsFileWriter<W> {
    /// Starts a file: writes magic and version.
    pub fn new(mut out: W, props: WriterProperties) -> Result<Self> {
        props.validate()?;
        out.write_all(MAGIC)?;
        out.write_all(VERSION)?;
        Ok(TsFileWriter {
            out,
            props,
            pos: HEADER_LEN,
            failed: false,
            devices: Vec::new(),
            device_index: HashMap::default(),
            last_device: 0,
            flush_devices: JavaHashOrder::new(),
            record_count: 0,
            next_memory_check: FIRST_MEMORY_CHECK,
            scratch: Scratch::default(),
            head: Vec::new(),
            total_chunks: 0,
            chunk_groups: 0,
            version_info: Vec::new(),
        })
    }

    /// The settings this writer uses.
    pub fn properties(&self) -> &WriterProperties {
        &self.props
    }

    fn check_usable(&self) -> Result<()> {
        if self.failed {
            Err(Error::invalid(
                "an earlier I/O error left this TsFile incomplete; no more writes are possible",
            ))
        } else {
            Ok(())
        }
    }

    fn device_id(&mut self, device: &str) -> u32 {
        if let Some(&d) = self.device_index.get(device) {
            return d;
        }
        let d = self.devices.len() as u32;
        self.devices.push(DeviceState::new(device));
        self.device_index.insert(device.to_string(), d);
        d
    }

    /// Registers a series. Registering the same schema twice is a no-op; a different
    /// schema for a registered series is an error.
    pub fn register(&mut self, device: &str, schema: MeasurementSchema) -> Result<()> {
        self.check_usable()?;
        let name = |m: &str| format!("series {device}.{m}");
        if device.is_empty() {
            return Err(Error::invalid(format!(
                "{}: the device name is empty",
                name(&schema.measurement)
            )));
        }
        schema
            .validate()
            .map_err(|e| Error::invalid(format!("{}: {e}", name(&schema.measurement))))?;
        if schema.measurement.contains('"') {
            // A quote would make `device."measurement"` full paths ambiguous.
            return Err(Error::invalid(format!(
                "{}: measurement names must not contain '\"'",
                name(&schema.measurement)
            )));
        }
        if let Some(dev) = self
            .device_index
            .get(device)
            .map(|&d| &self.devices[d as usize])
        {
            if let Some(&i) = dev.index.get(&schema.measurement) {
                let old = &dev.series[i as usize].schema;
                return if *old == schema {
                    Ok(())
                } else {
                    Err(Error::invalid(format!(
                        "{} is already registered as {} {} {}, not {} {} {}",
                        name(&schema.measurement),
                        old.data_type,
                        old.encoding,
                        old.compression,
                        schema.data_type,
                        schema.encoding,
                        schema.compression
                    )))
                };
            }
        }
        // Surface encoder problems now rather than at the first write.
        encoding::get_encoder(
            schema.encoding,
            schema.data_type,
            self.props.float_precision,
        )
        .map_err(|e| Error::invalid(format!("{}: {e}", name(&schema.measurement))))?;
        let d = self.device_id(device);
        let dev = &mut self.devices[d as usize];
        let i = dev.series.len() as u32;
        dev.index.insert(schema.measurement.clone(), i);
        dev.series.push(SeriesState {
            hash: java_string_hash(&schema.measurement),
            last_time: None,
            chunk: None,
            in_flush: false,
            chunks: Vec::new(),
            schema,
        });
        Ok(())
    }

    /// The schema of a registered series.
    pub fn schema(&self, device: &str, measurement: &str) -> Option<&MeasurementSchema> {
        let dev = &self.devices[*self.device_index.get(device)? as usize];
        Some(&dev.series[*dev.index.get(measurement)? as usize].schema)
    }

    /// Makes sure every series in `ids` has a chunk writer (no visible change).
    fn prepare_chunks(&mut self, d: u32, ids: impl Iterator<Item = u32>) -> Result<()> {
        let props = &self.props;
        let dev = &mut self.devices[d as usize];
        for i in ids {
            let s = &mut dev.series[i as usize];
            if s.chunk.is_none() {
                s.chunk = Some(Box::new(new_chunk_writer(props, &dev.name, &s.schema)?));
            }
        }
        Ok(())
    }

    /// Puts the device and the given series into the current flush's maps, in order.
    fn enter_flush(&mut self, d: u32, ids: impl Iterator<Item = u32>) {
        let dev = &mut self.devices[d as usize];
        if !dev.in_flush {
            dev.in_flush = true;
            self.flush_devices.insert(dev.hash, d);
        }
        for i in ids {
            let s = &mut dev.series[i as usize];
            if !s.in_flush {
                s.in_flush = true;
                dev.order.insert(s.hash, i);
            }
        }
    }

    /// The index of a known device. Rows usually repeat a device or go through the
    /// devices in a fixed order, so the last row's device and the one registered after
    /// it are tried before the map.
    #[inline]
    fn find_device(&mut self, device: &str) -> Option<u32> {
        let last = self.last_device as usize;
        for d in [last, last + 1] {
            if let Some(dev) = self.devices.get(d) {
                if short_eq(dev.name.as_bytes(), device.as_bytes()) {
                    self.last_device = d as u32;
                    return Some(d as u32);
                }
            }
        }
        let d = *self.device_index.get(device)?;
        self.last_device = d;
        Some(d)
    }

    /// Writes one row: `values` of registered measurements of `device` at `time`.
    ///
    /// The row is checked as a whole first (registered series, value types, times not
    /// decreasing); a refused row changes nothing. A row without values is accepted and
    /// writes nothing, as in Java.
    pub fn write_record(
        &mut self,
        device: &str,
        time: i64,
        values: &[(&str, Value)],
    ) -> Result<()> {
        self.check_usable()?;
        let d = match self.find_device(device) {
            Some(d) => d,
            None if values.is_empty() => self.device_id(device),
            None => {
                return Err(unknown_series(device, values[0].0, time));
            }
        };
        let Self {
            devices,
            props,
            flush_devices,
            scratch,
            ..
        } = self;
        let dev = &mut devices[d as usize];
        // Fast path: the cached layout, every value staged, all checks in one pass.
        if dev.layout_ready
            && !dev.layout_direct
            && dev.layout_last.is_none_or(|last| time >= last)
            && dev.try_stage_row(values, time)
        {
            dev.layout_last = Some(time);
            if dev.stage_times.len() >= STAGE_ROWS {
                dev.drain_stage(scratch)?;
            }
            self.record_count += 1;
            return self.check_memory();
        }
        if !dev.layout_matches(values) {
            dev.drain_stage(scratch)?;
            dev.rebuild_layout(values, time)?;
        }
        // Check the whole row before anything visible happens.
        let mut ok = dev.layout_last.is_none_or(|last| time >= last);
        for ((_, v), slot) in values.iter().zip(&dev.layout_slots) {
            ok &= v.data_type() == slot.data_type && (!slot.checked || value_storable(v));
        }
        if !ok {
            return Err(dev.refusal(values, time, scratch));
        }
        if !dev.layout_ready {
            dev.prepare_layout(d, props, flush_devices)?;
        }
        if dev.layout_direct {
            if let Err(e) = dev.write_direct(values, time, scratch) {
                // Part of the row may be written: re-derive the layout's last time from
                // the series before the next row is checked.
                let _ = dev.drain_stage(scratch);
                dev.invalidate_layout();
                return Err(e);
            }
        }
        if !dev.stage_series.is_empty() {
            dev.stage_times.push(time);
            for ((_, v), slot) in values.iter().zip(&dev.layout_slots) {
                if slot.stage_col != DIRECT {
                    dev.stage_vals.push(chunk::stage_bits(v).unwrap_or(0));
                }
            }
            if dev.stage_times.len() >= STAGE_ROWS {
                dev.drain_stage(scratch)?;
            }
        }
        dev.layout_last = Some(time);
        self.record_count += 1;
        self.check_memory()
    }

    /// Writes a tablet: `times` and one column per registered measurement, all of the
    /// same length.
    ///
    /// Each column is one batch write, followed by one page check (so a tablet can
    /// overshoot `max_points_per_page`, exactly as in Java). Times must not decrease,
    /// within the tablet and relative to what each series already holds. A refused
    /// tablet changes nothing.
    pub fn write_tablet(
        &mut self,
        device: &str,
        times: &[i64],
        columns: &[(&str, &Column)],
    ) -> Result<()> {
        self.check_usable()?;
        let first_time = times.first().copied().unwrap_or(0);
        let d = match self.device_index.get(device) {
            Some(&d) => d,
            None => {
                let m = columns.first().map_or("", |c| c.0);
                return Err(unknown_series(device, m, first_time));
            }
        };
        if let Some(w) = times.windows(2).find(|w| w[1] < w[0]) {
            return Err(Error::invalid(format!(
                "tablet of device {device}: time {} follows {} (times must not decrease)",
                w[1], w[0]
            )));
        }
        // Staged rows first, so that the series' last times are exact; the cached row
        // layout is stale after the tablet.
        {
            let dev = &mut self.devices[d as usize];
            dev.drain_stage(&mut self.scratch)?;
            dev.invalidate_layout();
        }
        let mut ids = Vec::with_capacity(columns.len());
        {
            let dev = &self.devices[d as usize];
            for (m, col) in columns {
                let i = *dev
                    .index
                    .get(*m)
                    .ok_or_else(|| unknown_series(device, m, first_time))?;
                let s = &dev.series[i as usize];
                if col.len() != times.len() {
                    return Err(Error::invalid(format!(
                        "tablet of device {device}: column {m} has {} values for {} times",
                        col.len(),
                        times.len()
                    )));
                }
                if col.data_type() != s.schema.data_type {
                    return Err(wrong_type(device, &s.schema, first_time, col.data_type()));
                }
                if let (Some(last), Some(&t0)) = (s.last_time, times.first()) {
                    if t0 < last {
                        return Err(decreasing_time(device, m, t0, last));
                    }
                }
                check_column(device, &s.schema, times, col)?;
                ids.push(i);
            }
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                return Err(Error::invalid(format!(
                    "tablet of device {device}: column {} appears twice",
                    dev.series[w[0] as usize].schema.measurement
                )));
            }
        }
        self.prepare_chunks(d, ids.iter().copied())?;
        self.enter_flush(d, ids.iter().copied());
        let dev = &mut self.devices[d as usize];
        // REGULAR columns first: they can refuse a value (see `write_record`).
        for regular_pass in [true, false] {
            for ((_, col), &i) in columns.iter().zip(&ids) {
                let s = &mut dev.series[i as usize];
                if (s.schema.encoding == Encoding::REGULAR) != regular_pass {
                    continue;
                }
                let Some(c) = s.chunk.as_mut() else {
                    continue;
                };
                if let Err((written, e)) = c.write_batch(times, col, &mut self.scratch) {
                    if written > 0 {
                        s.last_time = Some(times[written - 1]);
                    }
                    return Err(Error::invalid(format!(
                        "series {}.{} (tablet from time {first_time}): {e} ({written} values of \
                         this column were written, none of the columns after it)",
                        dev.name, s.schema.measurement
                    )));
                }
                if let Some(&last) = times.last() {
                    s.last_time = Some(last);
                }
            }
        }
        self.record_count += times.len() as i64;
        self.check_memory()
    }

    /// Java's `checkMemorySizeAndMayFlushChunks` (spec §7.3).
    fn check_memory(&mut self) -> Result<()> {
        if self.record_count < self.next_memory_check {
            return Ok(());
        }
        self.drain_all()?;
        let mem = self.estimate();
        if mem <= 0 {
            // Only rows without values so far (Java would divide by zero here).
            return Ok(());
        }
        let group = self.props.group_size_bytes as i64;
        self.next_memory_check = self.record_count.saturating_mul(group) / mem;
        if mem > group {
            self.flush_chunk_groups()?;
        }
        Ok(())
    }

    /// Encodes every staged point of the current flush.
    fn drain_all(&mut self) -> Result<()> {
        let mut first_err = None;
        for d in self.flush_devices.ids() {
            if let Err(e) = self.devices[d as usize].drain_stage(&mut self.scratch) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Sum of the chunk writers' memory estimates (Java's `calculateMemSizeForAllGroup`,
    /// without its 32-bit wrap-around).
    fn estimate(&self) -> i64 {
        let mut total = 0i64;
        for d in self.flush_devices.ids() {
            let dev = &self.devices[d as usize];
            // Staged rows (none when called from the memory check).
            total += dev.staged_bytes() as i64;
            for i in dev.order.ids() {
                if let Some(c) = &dev.series[i as usize].chunk {
                    total += c.memory_estimate();
                }
            }
        }
        total
    }

    /// Writes every buffered chunk group to the output.
    ///
    /// Does nothing when no row was written since the last flush (as Java). Pages are
    /// sealed first, all in memory; if a page cannot be sealed (its points are dropped
    /// and named in the error) nothing is written and the other data stays buffered.
    pub fn flush_chunk_groups(&mut self) -> Result<()> {
        self.check_usable()?;
        if self.record_count == 0 {
            return Ok(());
        }
        self.drain_all()?;
        let device_order = self.flush_devices.iteration_order();
        let mut first_err = None;
        for &d in &device_order {
            let dev = &mut self.devices[d as usize];
            for i in dev.order.iteration_order() {
                let s = &mut dev.series[i as usize];
                if let Some(c) = s.chunk.as_mut() {
                    if let Err(e) = c.seal_current_page(&mut self.scratch) {
                        first_err.get_or_insert_with(|| {
                            Error::invalid(format!(
                                "series {}.{}: {e}",
                                dev.name, s.schema.measurement
                            ))
                        });
                    }
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        if let Err(e) = self.write_chunk_groups(&device_order) {
            self.failed = true;
            return Err(e);
        }
        self.flush_devices.clear();
        self.record_count = 0;
        Ok(())
    }

    fn write_chunk_groups(&mut self, device_order: &[u32]) -> Result<()> {
        for &d in device_order {
            let dev = &mut self.devices[d as usize];
            let group_start = self.pos;
            let mut n = 0i32;
            for i in dev.order.iteration_order() {
                let s = &mut dev.series[i as usize];
                s.in_flush = false;
                let Some(mut c) = s.chunk.take() else {
                    continue;
                };
                if c.chunk_stats().is_empty() {
                    continue;
                }
                let offset = self.pos;
                self.head.clear();
                ChunkHeader {
                    measurement: s.schema.measurement.clone(),
                    data_size: c.pages_len() as i32,
                    data_type: s.schema.data_type,
                    num_pages: c.num_pages() as i32,
                    compression: c.compression(),
                    encoding: c.encoding(),
                }
                .serialize(&mut self.head);
                self.out.write_all(&self.head)?;
                for part in c.page_parts() {
                    self.out.write_all(part)?;
                }
                self.pos += (self.head.len() + c.pages_len()) as u64;
                s.chunks.push((offset as i64, c.take_chunk_stats()));
                self.total_chunks += 1;
                n += 1;
            }
            dev.in_flush = false;
            dev.layout_ready = false;
            dev.order = JavaHashOrder::new();
            if n > 0 {
                self.head.clear();
                ChunkGroupFooter {
                    device: dev.name.clone(),
                    data_size: (self.pos - group_start) as i64,
                    num_chunks: n,
                }
                .serialize(&mut self.head);
                self.out.write_all(&self.head)?;
                self.pos += self.head.len() as u64;
                self.chunk_groups += 1;
            }
        }
        Ok(())
    }

    /// Flushes buffered chunk groups, then writes a version record.
    pub fn write_version(&mut self, version: i64) -> Result<()> {
        self.flush_chunk_groups()?;
        self.head.clear();
        self.head.push(marker::VERSION);
        io::put_i64(&mut self.head, version);
        if let Err(e) = self.out.write_all(&self.head) {
            self.failed = true;
            return Err(e.into());
        }
        self.pos += self.head.len() as u64;
        self.version_info.push((self.pos as i64, version));
        Ok(())
    }

    /// Bytes currently buffered in memory (pages and encoders), Java's estimate, plus
    /// 8 bytes per value of the rows staged for encoding.
    pub fn buffered_bytes(&self) -> usize {
        self.estimate().max(0) as usize
    }

    /// Bytes written to the output so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Flushes, writes the metadata section and the tail; returns the output and a summary.
    pub fn close(mut self) -> Result<(W, FileSummary)> {
        self.flush_chunk_groups()?;
        if self.version_info.is_empty() {
            self.version_info.push((i64::MAX, 0));
        }
        match self.write_metadata() {
            Ok(summary) => Ok((self.out, summary)),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    fn write_metadata(&mut self) -> Result<FileSummary> {
        let meta_offset = self.pos;
        // Phase A order: series with chunks, by full path as Java strings.
        let mut series: Vec<(String, u32, u32)> = Vec::new();
        for (d, dev) in self.devices.iter().enumerate() {
            for (i, s) in dev.series.iter().enumerate() {
                if !s.chunks.is_empty() {
                    series.push((
                        full_path(&dev.name, &s.schema.measurement),
                        d as u32,
                        i as u32,
                    ));
                }
            }
        }
        series.sort_by(|a, b| java_cmp(&a.0, &b.0));

        let mut bloom = BloomFilter::with_capacity(series.len(), self.props.bloom_error_rate);
        let mut points = 0u64;
        let mut ranges: Vec<Option<(i64, i64)>> = vec![None; self.devices.len()];
        // deviceMap: LinkedHashMap in first-appearance order.
        let mut slot: Vec<Option<usize>> = vec![None; self.devices.len()];
        let mut device_map: Vec<(String, Vec<TimeseriesMetadata>)> = Vec::new();

        let mut sink = Sink::new(&mut self.out, self.pos);
        sink.buf.push(marker::SEPARATOR);
        for (path, d, i) in &series {
            bloom.add(path);
            let dev = &mut self.devices[*d as usize];
            let s = &mut dev.series[*i as usize];
            let dt = s.schema.data_type;
            let offset = sink.pos();
            let mut len = 0usize;
            let mut stats = Statistics::new(dt);
            for (chunk_offset, chunk_stats) in std::mem::take(&mut s.chunks) {
                let cm = ChunkMetadata {
                    measurement: s.schema.measurement.clone(),
                    offset_of_chunk_header: chunk_offset,
                    data_type: dt,
                    statistics: chunk_stats,
                };
                len += cm.serialized_size();
                cm.serialize(&mut sink.buf);
                stats.merge(&cm.statistics)?;
                sink.maybe_flush()?;
            }
            points += stats.count as u64;
            let r = &mut ranges[*d as usize];
            *r = Some(match *r {
                None => (stats.start_time, stats.end_time),
                Some((a, b)) => (a.min(stats.start_time), b.max(stats.end_time)),
            });
            let ts = TimeseriesMetadata {
                measurement: s.schema.measurement.clone(),
                data_type: dt,
                chunk_metadata_offset: offset as i64,
                chunk_metadata_size: i32::try_from(len).map_err(|_| {
                    Error::invalid(format!("series {path}: chunk metadata exceeds 2 GiB"))
                })?,
                statistics: stats,
            };
            let k = *slot[*d as usize].get_or_insert_with(|| {
                device_map.push((dev.name.clone(), Vec::new()));
                device_map.len() - 1
            });
            device_map[k].1.push(ts);
        }
        let root = index::write_index(device_map, self.props.max_degree, &mut sink)?;
        let meta = TsFileMetadata {
            metadata_index: root,
            total_chunk_num: self.total_chunks as i32,
            invalid_chunk_num: 0,
            version_info: std::mem::take(&mut self.version_info),
            meta_offset: meta_offset as i64,
            bloom_filter: Some(bloom),
        };
        let start = sink.buf.len();
        meta.serialize(&mut sink.buf);
        let size = (sink.buf.len() - start) as i32;
        io::put_i32(&mut sink.buf, size);
        sink.buf.extend_from_slice(MAGIC);
        sink.flush()?;
        self.pos = sink.pos();
        self.out.flush()?;

        let mut devices: Vec<DeviceTimeRange> = self
            .devices
            .iter()
            .zip(&ranges)
            .filter_map(|(dev, r)| {
                r.map(|(start_time, end_time)| DeviceTimeRange {
                    device: dev.name.clone(),
                    start_time,
                    end_time,
                })
            })
            .collect();
        devices.sort_by(|a, b| a.device.cmp(&b.device));
        Ok(FileSummary {
            file_size: self.pos,
            points,
            chunks: self.total_chunks,
            chunk_groups: self.chunk_groups,
            devices,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::basic::{Compression, Encoding};

    /// Names of every short length, equal and differing in each byte, and long names.
    #[test]
    fn short_eq_compares_every_byte() {
        for n in 0..=24usize {
            let a: Vec<u8> = (0..n as u8).map(|i| b'a' + i).collect();
            assert!(short_eq(&a, &a.clone()), "{n}");
            for i in 0..n {
                let mut b = a.clone();
                b[i] = b'#';
                assert!(!short_eq(&a, &b), "{n} {i}");
            }
            let mut longer = a.clone();
            longer.push(b'z');
            assert!(!short_eq(&a, &longer), "{n}");
        }
    }

    /// Rows cycling through devices, repeating one, or skipping around all reach their
    /// own device (the last-device guess is only a shortcut).
    #[test]
    fn rows_find_their_device_in_any_order() {
        let mut w = TsFileWriter::new(Vec::new(), WriterProperties::default()).unwrap();
        let devs = ["root.a", "root.b", "root.c"];
        for d in devs {
            w.register(
                d,
                MeasurementSchema::new(
                    "s",
                    DataType::INT64,
                    Encoding::PLAIN,
                    Compression::UNCOMPRESSED,
                ),
            )
            .unwrap();
        }
        let order = [0usize, 1, 2, 0, 0, 2, 1, 1, 0, 2];
        for (t, &d) in order.iter().enumerate() {
            let v = (t * 10 + d) as i64;
            w.write_record(devs[d], t as i64, &[("s", Value::Int64(v))])
                .unwrap();
        }
        assert!(w
            .write_record("root.x", 99, &[("s", Value::Int64(0))])
            .is_err());
        let (bytes, summary) = w.close().unwrap();
        assert_eq!(summary.points, 10);
        let r = crate::file::reader::TsFileReader::open(&bytes[..]).unwrap();
        for (d, dev) in devs.iter().enumerate() {
            let pts: Vec<(i64, Value)> = r
                .series_reader(dev, "s")
                .unwrap()
                .unwrap()
                .points()
                .collect::<Result<_>>()
                .unwrap();
            let want: Vec<(i64, i64)> = order
                .iter()
                .enumerate()
                .filter(|(_, &x)| x == d)
                .map(|(t, _)| (t as i64, (t * 10 + d) as i64))
                .collect();
            let got: Vec<(i64, i64)> = pts
                .iter()
                .map(|(t, v)| match v {
                    Value::Int64(x) => (*t, *x),
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(got, want, "{dev}");
        }
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn empty_file_is_the_spec_vector() {
        let w = TsFileWriter::new(Vec::new(), WriterProperties::default()).unwrap();
        let (out, s) = w.close().unwrap();
        let expected = "547346696c653030303030320200000000000000000000000d02000000000000\
                        0000000000017fffffffffffffff0000000000000000000000000000000c0000\
                        000000000100000000050000003d547346696c65";
        assert_eq!(hex(&out), expected);
        assert_eq!(s.file_size, 84);
        assert_eq!((s.points, s.chunks, s.chunk_groups), (0, 0, 0));
    }

    #[test]
    fn minimal_file_is_the_spec_vector() {
        let mut w = TsFileWriter::new(Vec::new(), WriterProperties::default()).unwrap();
        let schema = MeasurementSchema::new(
            "s1",
            DataType::INT64,
            Encoding::PLAIN,
            Compression::UNCOMPRESSED,
        );
        w.register("d1", schema).unwrap();
        for (t, v) in [(1, 10), (2, 20), (3, 30)] {
            w.write_record("d1", t, &[("s1", Value::Int64(v))]).unwrap();
        }
        let (out, s) = w.close().unwrap();
        let expected = concat!(
            "547346696c653030303030320100000002733100000079000200000001000000",
            "0000000031000000310000000000000003000000000000000100000000000000",
            "03000000000000000a000000000000001e000000000000000a00000000000000",
            "1e404e0000000000001800000002000000000000000000000001000000000000",
            "0001000000000000000a0000000000000014000000000000001e000000000264",
            "31000000000000008e0000000102000000027331000000000000000c00020000",
            "00000000000300000000000000010000000000000003000000000000000a0000",
            "00000000001e000000000000000a000000000000001e404e0000000000000000",
            "00027331000200000000000000ae000000500000000000000003000000000000",
            "00010000000000000003000000000000000a000000000000001e000000000000",
            "000a000000000000001e404e0000000000000000000100000002733100000000",
            "000000fe00000000000001520300000001000000026431000000000000015200",
            "0000000000016d020000000100000000000000017fffffffffffffff00000000",
            "0000000000000000000000ad0000001f04000000000000000000000000000100",
            "01000008000000000000000000000200000100000000050000006a547346696c",
            "65"
        );
        assert_eq!(hex(&out), expected);
        assert_eq!(s.file_size, 481);
        assert_eq!(
            s.devices,
            [DeviceTimeRange {
                device: "d1".into(),
                start_time: 1,
                end_time: 3
            }]
        );
    }

    #[test]
    fn full_path_quotes_dotted_measurements() {
        assert_eq!(full_path("root.d1", "s1"), "root.d1.s1");
        assert_eq!(full_path("root.d1", "m.n"), "root.d1.\"m.n\"");
    }
}
