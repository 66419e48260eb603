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
use crate::util::io;
use chunk::ChunkWriter;
use index::Sink;
use order::{java_string_hash, JavaHashOrder};
use std::collections::HashMap;
use std::io::Write;

/// Points of a series buffered before they go through its encoders. Writing rows
/// touches one series after another; staging a few points per series and encoding
/// them together keeps each series' encoder state in cache. Staged points are encoded
/// before anything looks at the encoder state (page and memory checks, flushes,
/// tablets), so the bytes are the same as with immediate encoding.
const STAGE_POINTS: usize = 32;

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
    /// Points accepted but not yet encoded, as `(time, value bits)`.
    stage: Vec<(i64, u64)>,
    /// Whether this series' points may be staged.
    stageable: bool,
    /// Whether the series is in its device's chunk-writer map of the current flush.
    in_flush: bool,
    /// `(offset of the chunk header, chunk statistics)` of every chunk written, in
    /// file order.
    chunks: Vec<(i64, Statistics)>,
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
    /// Series indices of the last row, so repeated row layouts skip the hash lookups.
    layout: Vec<u32>,
    /// The last row's measurement names, back to back, and where each ends.
    layout_names: String,
    layout_ends: Vec<u32>,
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
        }
    }

    /// Resolves the measurement names of a row into `self.layout`.
    #[inline]
    fn resolve(&mut self, values: &[(&str, Value)], time: i64) -> Result<()> {
        if self.layout.len() == values.len() {
            let mut start = 0usize;
            let same = values.iter().zip(&self.layout_ends).all(|((m, _), &end)| {
                let end = end as usize;
                let hit = self.layout_names.as_bytes().get(start..end) == Some(m.as_bytes());
                start = end;
                hit
            });
            if same {
                return Ok(());
            }
        }
        self.resolve_slow(values, time)
    }

    #[cold]
    fn resolve_slow(&mut self, values: &[(&str, Value)], time: i64) -> Result<()> {
        self.layout.clear();
        self.layout_names.clear();
        self.layout_ends.clear();
        for (m, _) in values {
            match self.index.get(*m) {
                Some(&i) => {
                    self.layout.push(i);
                    self.layout_names.push_str(m);
                    self.layout_ends.push(self.layout_names.len() as u32);
                }
                None => {
                    self.layout.clear();
                    return Err(unknown_series(&self.name, m, time));
                }
            }
        }
        Ok(())
    }
}

fn unknown_series(device: &str, measurement: &str, time: i64) -> Error {
    Error::invalid(format!(
        "series {device}.{measurement} (time {time}) is not registered"
    ))
}

fn wrong_type(
    device: &str,
    s: &MeasurementSchema,
    time: i64,
    found: DataType,
) -> Error {
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
        Column::Float(v) if s.encoding == Encoding::GORILLA => v.iter().position(|x| x.is_nan()),
        Column::Double(v) if s.encoding == Encoding::GORILLA => v.iter().position(|x| x.is_nan()),
        Column::Text(v) => v.iter().position(|b| b.len() > i32::MAX as usize),
        _ => None,
    };
    match bad {
        Some(k) => Err(value_refused(device, s, at(k))),
        None => Ok(()),
    }
}

fn write_failed(device: &str, s: &MeasurementSchema, time: i64, e: Error) -> Error {
    Error::invalid(format!(
        "series {device}.{} at time {time}: {e}",
        s.measurement
    ))
}

/// Encodes the staged points of a series.
fn drain(device: &str, s: &mut SeriesState, scratch: &mut Vec<u8>) -> Result<()> {
    if s.stage.is_empty() {
        return Ok(());
    }
    let r = match s.chunk.as_mut() {
        Some(c) => c.write_staged(&s.stage, scratch),
        None => Err(Error::invalid("staged points without a chunk writer")),
    };
    let first = s.stage[0].0;
    s.stage.clear();
    r.map_err(|e| {
        Error::invalid(format!(
            "series {device}.{} (points from time {first}): {e}",
            s.schema.measurement
        ))
    })
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
    device_index: HashMap<String, u32>,
    /// Java `HashMap` of the group writers (devices) of the current flush; its capacity
    /// survives flushes, as `clear()` keeps it.
    flush_devices: JavaHashOrder,
    /// Java's `recordCount` since the last flush.
    record_count: i64,
    /// Java's `recordCountForNextMemCheck`.
    next_memory_check: i64,
    /// Reused buffer: page bodies before compression.
    scratch: Vec<u8>,
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
            device_index: HashMap::new(),
            flush_devices: JavaHashOrder::new(),
            record_count: 0,
            next_memory_check: FIRST_MEMORY_CHECK,
            scratch: Vec::new(),
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
        encoding::get_encoder(schema.encoding, schema.data_type, self.props.float_precision)
            .map_err(|e| Error::invalid(format!("{}: {e}", name(&schema.measurement))))?;
        let d = self.device_id(device);
        let dev = &mut self.devices[d as usize];
        let i = dev.series.len() as u32;
        dev.index.insert(schema.measurement.clone(), i);
        dev.series.push(SeriesState {
            hash: java_string_hash(&schema.measurement),
            last_time: None,
            chunk: None,
            stage: Vec::new(),
            stageable: chunk::stageable(&schema),
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
        let d = match self.device_index.get(device) {
            Some(&d) => d,
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
        dev.resolve(values, time)?;
        // Check the whole row (and make sure every chunk writer exists) before writing.
        let mut regular = false;
        for ((_, v), &i) in values.iter().zip(&dev.layout) {
            let s = &mut dev.series[i as usize];
            if v.data_type() != s.schema.data_type {
                return Err(wrong_type(&dev.name, &s.schema, time, v.data_type()));
            }
            if let Some(last) = s.last_time {
                if time < last {
                    return Err(decreasing_time(&dev.name, &s.schema.measurement, time, last));
                }
            }
            check_value(&dev.name, &s.schema, time, v)?;
            regular |= s.schema.encoding == Encoding::REGULAR;
            if s.chunk.is_none() {
                s.chunk = Some(Box::new(new_chunk_writer(props, &dev.name, &s.schema)?));
            }
        }
        // Java adds every chunk writer of the row to the maps before writing.
        if !dev.in_flush {
            dev.in_flush = true;
            flush_devices.insert(dev.hash, d);
        }
        for &i in &dev.layout {
            let s = &mut dev.series[i as usize];
            if !s.in_flush {
                s.in_flush = true;
                dev.order.insert(s.hash, i);
            }
        }
        if regular {
            // REGULAR refuses values it cannot round-trip (state unchanged): write those
            // first, so that a refusal leaves the rest of the row unwritten.
            for ((_, v), &i) in values.iter().zip(&dev.layout) {
                let s = &mut dev.series[i as usize];
                if s.schema.encoding != Encoding::REGULAR {
                    continue;
                }
                if let Some(c) = s.chunk.as_mut() {
                    c.write_value(time, v, scratch).map_err(|e| {
                        Error::invalid(format!(
                            "series {}.{} at time {time}: {e} (no other value of the row after                              this series was written)",
                            dev.name, s.schema.measurement
                        ))
                    })?;
                }
                s.last_time = Some(time);
            }
        }
        for ((_, v), &i) in values.iter().zip(&dev.layout) {
            let s = &mut dev.series[i as usize];
            if s.schema.encoding == Encoding::REGULAR {
                continue;
            }
            s.last_time = Some(time);
            match (s.stageable, chunk::stage_bits(v)) {
                (true, Some(bits)) => {
                    if s.stage.capacity() == 0 {
                        s.stage.reserve_exact(STAGE_POINTS);
                    }
                    s.stage.push((time, bits));
                    if s.stage.len() >= STAGE_POINTS {
                        drain(&dev.name, s, scratch)?;
                    }
                }
                _ => {
                    if let Some(c) = s.chunk.as_mut() {
                        c.write_value(time, v, scratch)
                            .map_err(|e| write_failed(&dev.name, &s.schema, time, e))?;
                    }
                }
            }
        }
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
                drain(&dev.name, s, &mut self.scratch)?;
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
            let dev = &mut self.devices[d as usize];
            for i in dev.order.ids() {
                let s = &mut dev.series[i as usize];
                if let Err(e) = drain(&dev.name, s, &mut self.scratch) {
                    first_err.get_or_insert(e);
                }
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
            for i in dev.order.ids() {
                let s = &dev.series[i as usize];
                if let Some(c) = &s.chunk {
                    total += c.memory_estimate();
                }
                // Staged points (none when called from the memory check).
                total += (s.stage.len() * std::mem::size_of::<(i64, u64)>()) as i64;
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

    /// Bytes currently buffered in memory (pages and encoders), Java's estimate.
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
