//! Flushes: a memtable written into its partition's open TsFile (format 000002 or v4) as
//! chunk groups, and the open files themselves.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tsfile::basic::Column;
use tsfile::file::properties::{MeasurementSchema, WriterProperties};
use tsfile::file::v4::{AlignedColumn, SeriesChunk, TableColumn, TableSchema, TsFileWriterV4};
use tsfile::file::writer::{DeviceTimeRange, TsFileWriter};
use tsfile::{Compression, Encoding, Value};
use tsfiled_fsio::{Fs, FsFile};

use super::files::{self, FormatVersion, Space};
use super::memtable::{g_proc, len_bytes, presize, sort_dedup, MemMap, SeriesKey};
use super::schema::{Registry, SeriesType};
use super::status::FileStatus;
use super::{Engine, SealReason};
use crate::health::{FaultKind, StorageOp};

pub(super) type FileOut = BufWriter<Box<dyn FsFile>>;

/// One series of a flush: its key, type, strictly increasing times and values.
pub(super) type FlushSeries = (SeriesKey, SeriesType, Vec<i64>, Column);

/// The columns of the tables a flush writes, by owner key (see [`table`](super::table)):
/// name, whether a TAG column, and a FIELD column's type, in the table's column order.
pub(super) type FlushTables = HashMap<String, Vec<(Arc<str>, bool, Option<SeriesType>)>>;

/// The writer of an open file, in the pipeline's format.
pub(super) enum FileWriter {
    /// Format 000002.
    V2(Box<TsFileWriter<FileOut>>),
    /// TsFile v4.
    V4 {
        writer: TsFileWriterV4<FileOut>,
        /// Per device, the smallest and largest time written (for the `.resource`).
        ranges: BTreeMap<Arc<str>, (i64, i64)>,
    },
}

/// The encoding and compression a series is written with in `format`: its own where the
/// format has them (`tsfile`'s `supports` / `supports_v4`), else the nearest the format has.
/// A series keeps the type it was first given in the schema journal across a switch of
/// `storage.format_version`: GORILLA goes over as the other format's GORILLA (code 6 in
/// 000002, code 8 in v4, the encoding each format's `GORILLA` names), other encodings the
/// format lacks (BOOLEAN RLE and REGULAR in v4; ZIGZAG, CHIMP, ... in 000002) become PLAIN,
/// compressions 000002 lacks (GZIP, LZ4, ZSTD) SNAPPY.
pub(super) fn fit_to_format(ty: &SeriesType, format: FormatVersion) -> (Encoding, Compression) {
    let t = ty.data_type;
    match format {
        FormatVersion::V4 => {
            let e = match ty.encoding {
                e if e.supports_v4(t) => e,
                Encoding::GORILLA if Encoding::GORILLA_V2.supports_v4(t) => Encoding::GORILLA_V2,
                _ => Encoding::PLAIN,
            };
            let c = if ty.compression.is_supported_v4() {
                ty.compression
            } else {
                Compression::SNAPPY
            };
            (e, c)
        }
        FormatVersion::V2 => {
            let e = match ty.encoding {
                e if e.supports(t) => e,
                Encoding::GORILLA_V2 if Encoding::GORILLA.supports(t) => Encoding::GORILLA,
                _ => Encoding::PLAIN,
            };
            let c = if ty.compression.is_supported() {
                ty.compression
            } else {
                Compression::SNAPPY
            };
            (e, c)
        }
    }
}

/// The type a series is written with in a flush of `values` (`buffered`: the type its
/// memtable holds, from intake or the write-ahead log): in format 000002 the schema
/// registry's, whose encoding may be chosen now ([`Registry::settle`]); in v4, and for a
/// series the registry types otherwise, `buffered`.
fn flush_type(
    registry: &Mutex<Registry>,
    format: FormatVersion,
    (device, measurement): &SeriesKey,
    buffered: SeriesType,
    values: &Column,
) -> SeriesType {
    if format != FormatVersion::V2 {
        return buffered;
    }
    let mut reg = registry.lock().unwrap_or_else(|e| e.into_inner());
    reg.settle(device, measurement, values)
        .filter(|t| t.data_type == buffered.data_type)
        .unwrap_or(buffered)
}

/// Logs, once per file and series, that a series is written with another encoding or
/// compression than its own ([`fit_to_format`]).
fn warn_refit(
    device: &str,
    measurement: &str,
    ty: &SeriesType,
    fitted: (Encoding, Compression),
    format: FormatVersion,
) {
    if fitted != (ty.encoding, ty.compression) {
        // The series' own encoding by the names of the format it was typed in, the one it
        // is written with by the names of `format`.
        let (own, to, written, formats) = match format {
            FormatVersion::V2 => (
                ty.encoding.v4_name(),
                fitted.0.name(),
                "000002",
                "TsFile v4",
            ),
            FormatVersion::V4 => (
                ty.encoding.name(),
                fitted.0.v4_name(),
                "v4",
                "format 000002",
            ),
        };
        tracing::warn!(
            series = %format_args!("{device}.{measurement}"),
            "{} {own} {} (as {formats} names it) is not written in TsFile {written}; the series is written {to} {}",
            ty.data_type.name(),
            ty.compression.name(),
            fitted.1.name()
        );
    }
}

/// `schemas` with the encodings whose encoder can refuse values (GORILLA, CHIMP, SPRINTZ in
/// v4) replaced by PLAIN: how a chunk group those encoders refused is written again.
fn plain_fallback(schemas: &[MeasurementSchema]) -> Vec<MeasurementSchema> {
    schemas
        .iter()
        .map(|m| match m.encoding {
            Encoding::GORILLA_V2 | Encoding::CHIMP | Encoding::SPRINTZ => {
                MeasurementSchema::new(&*m.measurement, m.data_type, Encoding::PLAIN, m.compression)
            }
            _ => m.clone(),
        })
        .collect()
}

/// Notes the time range of a device's series in `ranges`.
fn record_ranges(
    ranges: &mut BTreeMap<Arc<str>, (i64, i64)>,
    device: &Arc<str>,
    group: &[FlushSeries],
) {
    for (_, _, times, _) in group {
        if let (Some(&first), Some(&last)) = (times.first(), times.last()) {
            let r = ranges.entry(device.clone()).or_insert((first, last));
            r.0 = r.0.min(first);
            r.1 = r.1.max(last);
        }
    }
}

/// Writes the series of one table device (engine key `device`) as one aligned chunk group of
/// its table, declaring the table's schema (all its columns known so far, in order) first.
fn write_table_group(
    writer: &mut TsFileWriterV4<FileOut>,
    device: &Arc<str>,
    group: &[FlushSeries],
    tables: &FlushTables,
    registered: &mut HashSet<SeriesKey>,
) -> Result<(), Fail> {
    let bad = |why: String| (FaultKind::Io, why);
    let owner = super::table::owner(device)
        .ok_or_else(|| bad(format!("{device:?}: not a table device")))?;
    let (_, id) = super::table::device_id(device)
        .ok_or_else(|| bad(format!("{device:?}: not a table device")))?;
    let table = id.table().to_string();
    let mut cols: Vec<(Arc<str>, bool, Option<SeriesType>)> =
        tables.get(owner).cloned().unwrap_or_default();
    for ((_, m), ty, _, _) in group {
        if !cols.iter().any(|(c, _, _)| c == m) {
            cols.push((m.clone(), false, Some(*ty)));
        }
    }
    let mut columns = Vec::with_capacity(cols.len());
    for (c, tag, ty) in &cols {
        if *tag {
            columns.push(TableColumn::tag(c));
        } else if let Some(ty) = ty {
            let (e, z) = fit_to_format(ty, FormatVersion::V4);
            columns.push(TableColumn::field(MeasurementSchema::new(
                &**c,
                ty.data_type,
                e,
                z,
            )));
        }
    }
    let schema = TableSchema::new(&table, columns).map_err(ts_fail)?;
    let n_tags = schema.tags().count();
    writer.add_table(schema).map_err(ts_fail)?;
    // The rows: every time of any of the device's series; a series' value or null.
    let mut times: Vec<i64> = group.iter().flat_map(|s| s.2.iter().copied()).collect();
    times.sort_unstable();
    times.dedup();
    let values: Vec<Vec<Option<Value>>> = group
        .iter()
        .map(|(_, _, ts, vs)| {
            let mut out = vec![None; times.len()];
            let mut j = 0;
            for (k, t) in ts.iter().enumerate() {
                while times[j] < *t {
                    j += 1;
                }
                out[j] = vs.get(k);
            }
            out
        })
        .collect();
    let schemas: Vec<MeasurementSchema> = group
        .iter()
        .map(|((d, m), ty, _, _)| {
            let (e, z) = fit_to_format(ty, FormatVersion::V4);
            let key = (d.clone(), m.clone());
            if !registered.contains(&key) {
                warn_refit(d, m, ty, (e, z), FormatVersion::V4);
                registered.insert(key);
            }
            MeasurementSchema::new(&**m, ty.data_type, e, z)
        })
        .collect();
    let tags = id.tags(n_tags);
    let write = |writer: &mut TsFileWriterV4<FileOut>, schemas: &[MeasurementSchema]| {
        let columns: Vec<AlignedColumn<'_>> = schemas
            .iter()
            .zip(&values)
            .map(|(schema, values)| AlignedColumn { schema, values })
            .collect();
        writer.write_table_chunk_group(&table, &tags, &times, &columns)
    };
    match write(writer, &schemas) {
        Ok(()) => Ok(()),
        Err(tsfile::Error::InvalidInput(why)) => {
            // As for tree devices: an encoder refused the values; those columns go PLAIN.
            tracing::warn!(
                device = %id.path(),
                "{why}; this chunk group's GORILLA, CHIMP and SPRINTZ columns are written PLAIN"
            );
            write(writer, &plain_fallback(&schemas)).map_err(ts_fail)
        }
        Err(e) => Err(ts_fail(e)),
    }
}

impl FileWriter {
    pub(super) fn new(
        out: FileOut,
        props: WriterProperties,
        format: FormatVersion,
    ) -> Result<Self, Fail> {
        Ok(match format {
            FormatVersion::V2 => {
                FileWriter::V2(Box::new(TsFileWriter::new(out, props).map_err(ts_fail)?))
            }
            FormatVersion::V4 => FileWriter::V4 {
                writer: TsFileWriterV4::new(out, props).map_err(ts_fail)?,
                ranges: BTreeMap::new(),
            },
        })
    }

    /// Bytes written so far.
    pub(super) fn position(&self) -> u64 {
        match self {
            FileWriter::V2(w) => w.position(),
            FileWriter::V4 { writer, .. } => writer.position(),
        }
    }

    /// Writes one flush (`series` sorted by device, then measurement): [`Self::write_series`]
    /// then [`Self::end_flush`].
    #[cfg(test)]
    pub(super) fn write_flush(
        &mut self,
        series: &[FlushSeries],
        registered: &mut HashSet<SeriesKey>,
        version: i64,
        tables: &FlushTables,
    ) -> Result<(), Fail> {
        self.write_series(series, registered, tables)?;
        self.end_flush(version)
    }

    /// Ends a flush: format 000002 writes the version record `version`; v4 has none.
    pub(super) fn end_flush(&mut self, version: i64) -> Result<(), Fail> {
        match self {
            FileWriter::V2(w) => w.write_version(version).map_err(ts_fail),
            FileWriter::V4 { .. } => Ok(()),
        }
    }

    /// Writes a slice of a flush (`series` sorted by device, then measurement, a device's
    /// series all in one slice) to the file: format 000002 as chunk groups, v4 as one chunk
    /// group per device. The writer keeps no encoded data of it afterwards. `registered`
    /// holds the series this file has seen.
    pub(super) fn write_series(
        &mut self,
        series: &[FlushSeries],
        registered: &mut HashSet<SeriesKey>,
        tables: &FlushTables,
    ) -> Result<(), Fail> {
        match self {
            FileWriter::V2(w) => {
                for ((device, measurement), ty, times, values) in series {
                    let key = (device.clone(), measurement.clone());
                    if !registered.contains(&key) {
                        let (e, c) = fit_to_format(ty, FormatVersion::V2);
                        warn_refit(device, measurement, ty, (e, c), FormatVersion::V2);
                        w.register(
                            device,
                            MeasurementSchema::new(&**measurement, ty.data_type, e, c),
                        )
                        .map_err(ts_fail)?;
                        registered.insert(key);
                    }
                    w.write_tablet(device, times, &[(measurement, values)])
                        .map_err(ts_fail)?;
                }
                w.flush_chunk_groups().map_err(ts_fail)
            }
            FileWriter::V4 { writer, ranges } => {
                let mut i = 0;
                while i < series.len() {
                    let device = &series[i].0 .0;
                    let n = series[i..].iter().take_while(|s| &s.0 .0 == device).count();
                    let group = &series[i..i + n];
                    i += n;
                    if super::table::is_table_key(device) {
                        write_table_group(writer, device, group, tables, registered)?;
                        record_ranges(ranges, device, group);
                        continue;
                    }
                    let schemas: Vec<MeasurementSchema> = group
                        .iter()
                        .map(|((_, m), ty, _, _)| {
                            let (e, c) = fit_to_format(ty, FormatVersion::V4);
                            let key = (device.clone(), m.clone());
                            if !registered.contains(&key) {
                                warn_refit(device, m, ty, (e, c), FormatVersion::V4);
                            }
                            registered.insert(key);
                            MeasurementSchema::new(&**m, ty.data_type, e, c)
                        })
                        .collect();
                    let chunks: Vec<SeriesChunk<'_>> = group
                        .iter()
                        .zip(&schemas)
                        .map(|((_, _, times, values), schema)| SeriesChunk {
                            schema,
                            times,
                            values,
                        })
                        .collect();
                    match writer.write_chunk_group(device, &chunks) {
                        Ok(()) => {}
                        Err(tsfile::Error::InvalidInput(why)) => {
                            // An encoder refused the values (nothing was written): a
                            // SPRINTZ block of FLOAT/DOUBLE that no split into GORILLA frames
                            // makes readable, or an end marker from an older write-ahead log.
                            // The group is written with those series PLAIN, for this chunk.
                            tracing::warn!(
                                device = %device,
                                "{why}; this chunk group's GORILLA, CHIMP and SPRINTZ series are written PLAIN"
                            );
                            let plain = plain_fallback(&schemas);
                            let chunks: Vec<SeriesChunk<'_>> = group
                                .iter()
                                .zip(&plain)
                                .map(|((_, _, times, values), schema)| SeriesChunk {
                                    schema,
                                    times,
                                    values,
                                })
                                .collect();
                            writer.write_chunk_group(device, &chunks).map_err(ts_fail)?;
                        }
                        Err(e) => return Err(ts_fail(e)),
                    }
                    record_ranges(ranges, device, group);
                }
                Ok(())
            }
        }
    }

    /// Writes the file's tail; returns the output and each device's time range.
    pub(super) fn close(self) -> Result<(FileOut, Vec<DeviceTimeRange>), Fail> {
        match self {
            FileWriter::V2(w) => {
                let (out, summary) = w.close().map_err(ts_fail)?;
                Ok((out, summary.devices))
            }
            FileWriter::V4 { writer, ranges } => {
                let (out, _) = writer.finish().map_err(ts_fail)?;
                let devices = ranges
                    .into_iter()
                    .map(|(d, (start_time, end_time))| DeviceTimeRange {
                        device: d.to_string(),
                        start_time,
                        end_time,
                    })
                    .collect();
                Ok((out, devices))
            }
        }
    }
}

pub(super) struct OpenFile {
    pub(super) writer: FileWriter,
    pub(super) format: FormatVersion,
    pub(super) final_path: PathBuf,
    pub(super) tmp_path: PathBuf,
    pub(super) version: i64,
    pub(super) registered: HashSet<SeriesKey>,
    pub(super) points: u64,
    /// Chunks written so far (the writer keeps metadata for each until close).
    pub(super) chunks: u64,
    /// Unix ms the file was created (its name's first part).
    pub(super) created_ms: i64,
    pub(super) written_reported: u64,
}

/// Memory the writer and engine keep per chunk of an open file until it is sealed
/// (chunk metadata with statistics), and per registered series.
pub(super) const CHUNK_META_BYTES: u64 = 160;
pub(super) const SERIES_META_BYTES: u64 = 400;

impl OpenFile {
    pub(super) fn metadata_bytes(&self) -> u64 {
        self.chunks * CHUNK_META_BYTES + self.registered.len() as u64 * SERIES_META_BYTES
    }
}

impl Engine {
    /// The open file of a partition's space.
    fn open_file_of(&mut self, key: &(Arc<str>, i64), space: Space) -> Result<&mut OpenFile, Fail> {
        self.groups
            .get_mut(key)
            .and_then(|g| g_proc(g, space).file.as_mut())
            .ok_or((FaultKind::Io, "no open file".to_string()))
    }

    /// The columns of the tables whose devices are in `mem` (read from the schema registry).
    fn flush_tables(&self, mem: &MemMap) -> FlushTables {
        let mut tables = FlushTables::new();
        for (device, _) in mem.keys() {
            let Some(owner) = super::table::owner(device) else {
                continue;
            };
            if tables.contains_key(owner) {
                continue;
            }
            let reg = self.registry.lock().unwrap_or_else(|e| e.into_inner());
            let cols = reg
                .table_columns(owner)
                .iter()
                .map(|(c, tag)| {
                    let ty = (!tag).then(|| reg.get(owner, c).map(|s| s.ty)).flatten();
                    (c.clone(), *tag, ty)
                })
                .collect();
            tables.insert(owner.to_string(), cols);
        }
        tables
    }

    pub(super) fn flush_seq_and_check_size(&mut self, key: &(Arc<str>, i64)) {
        // A flush for memory takes records in between its slices (a seal's flush does not:
        // the seal that follows it takes the partition's memtable as empty).
        self.flush_taking_in(key, Space::Sequence, true);
        // Seal at the size limit, and also when the open file's in-memory metadata
        // (one entry per chunk, kept until the file is closed) grows past a quarter of
        // the memtable budget: many series flushed often would otherwise grow without bound.
        // Its series' part is capped lower, at a thirty-second: the writer's state, the index
        // the sealer builds and the engine's set grow with each series, and at 100,000 series
        // a file of two flushes' series (an eighth of the default budget of metadata) took the
        // daemon's peak RSS past the budget by more than 32 MiB (BENCHMARKS.md).
        let meta_cap = (self.opts.memtable_bytes as u64 / 4).max(4 << 20);
        let series_cap = (self.opts.memtable_bytes as u64 / 32).max(2 << 20);
        let over = self
            .groups
            .get(key)
            .and_then(|g| g.seq.file.as_ref())
            .is_some_and(|f| {
                f.writer.position() >= self.opts.file_max_bytes
                    || f.metadata_bytes() >= meta_cap
                    || f.registered.len() as u64 * SERIES_META_BYTES >= series_cap
            });
        if over {
            self.seal_group(key, SealReason::Size);
        }
    }

    pub(super) fn next_version(&mut self, sg: &Arc<str>) -> i64 {
        let v = self.versions.entry(sg.clone()).or_insert(0);
        *v += 1;
        *v
    }

    pub(super) fn create_millis(&mut self) -> i64 {
        let m = self
            .opts
            .clock
            .now_millis()
            .max(self.last_create_millis + 1);
        self.last_create_millis = m;
        m
    }

    /// Flushes one memtable into its open file (creating it if needed).
    pub(super) fn flush(&mut self, key: &(Arc<str>, i64), space: Space) {
        self.flush_taking_in(key, space, false);
    }

    /// [`Engine::flush`]; `take_in`: between its slices the engine applies the records
    /// waiting for it (into fresh memtables), so a flush of many series does not hold
    /// intake for its whole length.
    fn flush_taking_in(&mut self, key: &(Arc<str>, i64), space: Space, take_in: bool) {
        let started = Instant::now();
        let limit = self.opts.chunk_group_bytes.min(self.opts.memtable_bytes);
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        let proc_ = match space {
            Space::Sequence => &mut g.seq,
            Space::Unsequence => &mut g.unseq,
        };
        if proc_.mem.is_empty() {
            return;
        }
        // The next memtable's series start with room for as many points as these had.
        let (mut held, mut held_bytes) = (0, 0);
        for (_, b) in proc_.mem.iter() {
            held += b.times.len();
            held_bytes += len_bytes(b);
        }
        let room = presize(proc_.mem.len(), held, held_bytes, limit);
        let mem = std::mem::replace(&mut proc_.mem, MemMap::presized(room));
        let bytes = std::mem::take(&mut proc_.mem_bytes);
        self.mem_total = self.mem_total.saturating_sub(bytes);
        let sg = g.sg.clone();
        let partition = g.partition;
        let oldest = g.oldest_receive.take();
        let need_file = g_proc(g, space).file.is_none();
        let (version_for_file, millis) = if need_file {
            (Some(self.next_version(&sg)), self.create_millis())
        } else {
            (None, 0)
        };
        let flush_version = self.next_version(&sg);
        let tables = self.flush_tables(&mem);
        let data_dir = self.opts.data_dir.clone();
        let props = self.opts.writer.clone();
        let format = self.opts.format;
        let fs = self.opts.fs.clone();
        let registry = self.registry.clone();
        let mut trim = false;
        let result = (|| -> Result<u64, Fail> {
            let g = self
                .groups
                .get_mut(key)
                .ok_or((FaultKind::Io, "no partition".to_string()))?;
            let proc_ = g_proc(g, space);
            if let Some(v) = version_for_file {
                proc_.file = Some(open_file(
                    &*fs, &data_dir, space, &sg, partition, millis, v, props, format,
                )?);
            }
            if proc_.file.is_none() {
                return Err((FaultKind::Io, "no open file".to_string()));
            }
            if space == Space::Sequence {
                // Each device's latest time, known before any record is taken in: a later
                // point of the device goes to the sequence space only if it is newer.
                for (k, buf) in mem.iter() {
                    let last = if buf.sorted {
                        buf.times.last().copied()
                    } else {
                        buf.times.iter().copied().max()
                    };
                    if let Some(t) = last {
                        let e = g.latest_flushed.entry(k.0.clone()).or_insert(t);
                        *e = (*e).max(t);
                    }
                }
            }
            // The series in key order: the memtable's entries moved out (their buffers are
            // not copied) and each freed with its slice.
            let mut order: Vec<_> = mem.into_iter().collect();
            order.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            trim = order.len() > TRIM_AFTER_SERIES;
            let mut points = 0u64;
            let mut flushed: Vec<FlushSeries> = Vec::with_capacity(order.len().min(FLUSH_SLICE));
            let mut rest = order.into_iter().peekable();
            loop {
                // A slice: FLUSH_SLICE series, or more to complete the last one's device.
                while let Some((key, buf)) = rest.next() {
                    let next_device = rest.peek().map(|(k, _)| &k.0);
                    let slice_full =
                        flushed.len() + 1 >= FLUSH_SLICE && next_device.is_none_or(|d| *d != key.0);
                    let (times, values) = if buf.sorted {
                        (buf.times, buf.values)
                    } else {
                        sort_dedup(buf.times, buf.values)
                    };
                    if !times.is_empty() {
                        points += times.len() as u64;
                        let ty = flush_type(&registry, format, &key, buf.ty, &values);
                        flushed.push((key, ty, times, values));
                    }
                    if slice_full {
                        break;
                    }
                }
                if flushed.is_empty() {
                    break;
                }
                let file = self.open_file_of(key, space)?;
                file.writer
                    .write_series(&flushed, &mut file.registered, &tables)?;
                file.chunks += flushed.len() as u64;
                // The slice's buffers are freed before the next slice is taken.
                flushed.clear();
                if take_in && rest.peek().is_some() {
                    self.take_in();
                }
            }
            let file = self.open_file_of(key, space)?;
            file.writer.end_flush(flush_version)?;
            file.points += points;
            Ok(points)
        })();
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        match result {
            Ok(points) => {
                let pl = [self.opts.pipeline.as_str()];
                self.metrics
                    .points_written
                    .with_label_values(&pl)
                    .inc_by(points);
                self.metrics
                    .flush_seconds
                    .with_label_values(&pl)
                    .observe(started.elapsed().as_secs_f64());
                if let Some(o) = oldest {
                    self.metrics
                        .end_to_end_seconds
                        .with_label_values(&pl)
                        .observe(o.elapsed().as_secs_f64());
                }
                if let Some(f) = g_proc(g, space).file.as_mut() {
                    let pos = f.writer.position();
                    self.metrics
                        .bytes_written
                        .with_label_values(&pl)
                        .inc_by(pos.saturating_sub(f.written_reported));
                    f.written_reported = pos;
                    let path = f
                        .final_path
                        .strip_prefix(&self.opts.data_dir)
                        .unwrap_or(&f.final_path)
                        .to_string_lossy()
                        .to_string();
                    let (points, created) = (f.points, f.created_ms);
                    if let Ok(mut st) = self.status.lock() {
                        st.open.insert(
                            path.clone(),
                            FileStatus {
                                path,
                                storage_group: sg.to_string(),
                                bytes: pos,
                                points,
                                time_ms: created,
                                reason: None,
                            },
                        );
                    }
                }
            }
            Err((kind, e)) => {
                self.fail_group(key, StorageOp::Flush, kind, e, None, None);
            }
        }
        if trim {
            release_free_memory();
        }
        self.update_open_files();
    }
}

/// Series a flush hands the file writer at a time: the writer's encoded chunks and encoders
/// and the memtable's buffers of one slice are freed before the next slice is taken, so a
/// flush of many short series needs little working memory beyond the memtable itself; a
/// flush for memory takes in the waiting records between two slices.
pub(super) const FLUSH_SLICE: usize = 512;

/// A flush of more series than this returns the heap's free memory to the system after it.
const TRIM_AFTER_SERIES: usize = 2048;

/// Returns the heap's free memory to the system. A flush of many short series (more than
/// [`TRIM_AFTER_SERIES`]) frees its buffers scattered over the heap, where glibc would keep them resident;
/// a flush of a few long series frees large blocks that go back by themselves, so it does
/// not call this (the call walks the heap).
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only releases memory that is free.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn open_file(
    fs: &dyn Fs,
    data: &Path,
    space: Space,
    sg: &str,
    partition: i64,
    millis: i64,
    version: i64,
    props: WriterProperties,
    format: FormatVersion,
) -> Result<OpenFile, Fail> {
    let final_path = files::tsfile_path(data, space, sg, partition, millis, version, format);
    let tmp_path = files::with_suffix(&final_path, ".tmp");
    if let Some(dir) = final_path.parent() {
        tsfiled_fsio::create_dir_all_synced(fs, dir).map_err(|e| io_fail("creating", dir, e))?;
    }
    let f = fs
        .create(&tmp_path)
        .map_err(|e| io_fail("creating", &tmp_path, e))?;
    let writer = FileWriter::new(BufWriter::with_capacity(256 * 1024, f), props, format)?;
    Ok(OpenFile {
        writer,
        format,
        final_path,
        tmp_path,
        version,
        registered: HashSet::new(),
        points: 0,
        chunks: 0,
        created_ms: millis,
        written_reported: 0,
    })
}

/// A storage failure: its kind and a message naming the file.
pub(super) type Fail = (FaultKind, String);

pub(super) fn io_fail(what: &str, path: &Path, e: io::Error) -> Fail {
    (FaultKind::of(&e), format!("{what} {}: {e}", path.display()))
}

pub(super) fn ts_fail(e: tsfile::Error) -> Fail {
    match &e {
        tsfile::Error::Io(io) => (FaultKind::of(io), e.to_string()),
        _ => (FaultKind::Io, e.to_string()),
    }
}

/// The flush and seal rules of [`EngineOptions`] checked through a pipeline, with expected
/// counts worked out by hand from the documented limits: a file is sealed for size once the
/// metadata the writer keeps for it (160 bytes a chunk, 400 a series: [`CHUNK_META_BYTES`],
/// [`SERIES_META_BYTES`]) reaches a quarter of the memtable budget, but no less than 4 MiB,
/// or its series' part a thirty-second, but no less than 2 MiB, or once it reaches
/// `file_max_bytes`; every flush writes one chunk per series.
#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use tsfiled_connectors::{Batch, Field, FieldValue, Record};

    use super::{CHUNK_META_BYTES, SERIES_META_BYTES};
    use crate::metrics::Metrics;
    use crate::pipeline::{Pipeline, PipelineOptions};

    /// One record of `root.sg.d1` at `time` with `series` measurements `m0..`.
    fn wide(time: i64, series: usize) -> Batch {
        Batch {
            records: vec![Record {
                device: "root.sg.d1".into(),
                time,
                fields: (0..series)
                    .map(|k| Field::new(format!("m{k}"), FieldValue::Int(time)))
                    .collect(),
            }],
            rejections: vec![],
        }
    }

    fn sealed(metrics: &Metrics, reason: &str) -> u64 {
        let text = metrics.render();
        let key = format!("tsfiled_files_sealed_total{{pipeline=\"t\",reason=\"{reason}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&key))
            .map_or(0, |v| v.parse().unwrap())
    }

    /// Submits `batches` wide batches of 5000 series, then shuts down; the metrics.
    fn run(memtable_bytes: usize, chunk_group_bytes: usize, batches: i64) -> Arc<Metrics> {
        run_series(memtable_bytes, chunk_group_bytes, batches, 5000)
    }

    /// [`run`] with batches of `series` series.
    fn run_series(
        memtable_bytes: usize,
        chunk_group_bytes: usize,
        batches: i64,
        series: usize,
    ) -> Arc<Metrics> {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.engine.memtable_bytes = memtable_bytes;
        opts.engine.chunk_group_bytes = chunk_group_bytes;
        let metrics = Metrics::new();
        let p = Pipeline::open(opts, metrics.clone()).unwrap();
        for t in 1..=batches {
            let out = p
                .submit_blocking("test", wide(t, series), Instant::now())
                .unwrap();
            assert_eq!(out.accepted, series as u64);
        }
        p.shutdown_blocking();
        metrics
    }

    /// The chunks of the sealed files under `dir`: (measurement, encoding, compression), and
    /// every point read back (measurement, time, value).
    #[allow(clippy::type_complexity)]
    fn chunks_and_points(
        dir: &std::path::Path,
    ) -> (
        Vec<(String, tsfile::Encoding, tsfile::Compression)>,
        Vec<(String, i64, tsfile::Value)>,
    ) {
        use tsfile::file::reader::{TsFileReader, WalkEvent};
        let files = super::table_tests::sealed(dir);
        let (mut chunks, mut points) = (Vec::new(), Vec::new());
        for f in files {
            let r = TsFileReader::open_path(&f).unwrap();
            for ev in r.walk() {
                if let WalkEvent::ChunkHeader { header, .. } = ev.unwrap() {
                    chunks.push((header.measurement, header.encoding, header.compression));
                }
            }
            for (dev, ts) in r.all_series().unwrap() {
                for p in r.series_reader_for(&dev, &ts).unwrap().points() {
                    let (t, v) = p.unwrap();
                    points.push((ts.measurement.clone(), t, v));
                }
            }
        }
        (chunks, points)
    }

    /// With the defaults choosing (format 000002), a flush of 300 constant INT64 points writes
    /// them RLE UNCOMPRESSED (one run: 5 bytes, see `schema::choice_tests`), and 300 constant
    /// DOUBLE points GORILLA SNAPPY (GORILLA: the first value, 299 zero bits and the 15-bit
    /// NaN end marker, 48 bytes, of which SNAPPY copies the 37 zero bytes; PLAIN: 2400
    /// bytes); a series flushed with fewer than 256 points keeps its starting
    /// TS_2DIFF SNAPPY; every point reads back as written. In v4 nothing is chosen (the
    /// schema journal keeps the starting types).
    #[test]
    fn a_first_flush_chooses_the_encoding_in_format_2_only() {
        use tsfile::{Compression as C, Encoding as E, Value};

        use crate::engine::files::FormatVersion;
        use crate::engine::schema::TypeDefaults;

        for format in [FormatVersion::V2, FormatVersion::V4] {
            let tmp = tempfile::tempdir().unwrap();
            let mut opts = PipelineOptions::new("t", tmp.path());
            opts.engine.format = format;
            opts.defaults = TypeDefaults {
                choose: true,
                ..TypeDefaults::default()
            };
            let p = Pipeline::open(opts, Metrics::new()).unwrap();
            let records = (0..300)
                .map(|t| Record {
                    device: "root.sg.d1".into(),
                    time: t,
                    fields: [
                        Some(Field::new("c", FieldValue::Int(5))),
                        Some(Field::new("f", FieldValue::Float(1.5))),
                        (t < 10).then(|| Field::new("few", FieldValue::Int(5))),
                    ]
                    .into_iter()
                    .flatten()
                    .collect(),
                })
                .collect();
            let batch = Batch {
                records,
                rejections: vec![],
            };
            let out = p.submit_blocking("test", batch, Instant::now()).unwrap();
            assert_eq!(out.accepted, 610);
            p.shutdown_blocking();
            let journal =
                std::fs::read_to_string(tmp.path().join("state/schema.tsv")).unwrap_or_default();
            if format == FormatVersion::V4 {
                assert!(!journal.contains("RLE"), "{journal}");
                assert!(!journal.contains("UNCOMPRESSED"), "{journal}");
                continue;
            }
            let (mut chunks, points) = chunks_and_points(tmp.path());
            chunks.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(
                chunks,
                vec![
                    ("c".to_string(), E::RLE, C::UNCOMPRESSED),
                    ("f".to_string(), E::GORILLA, C::SNAPPY),
                    ("few".to_string(), E::TS_2DIFF, C::SNAPPY),
                ]
            );
            let mut want: Vec<(String, i64, Value)> = (0..300)
                .flat_map(|t| {
                    [
                        Some(("c".to_string(), t, Value::Int64(5))),
                        Some(("f".to_string(), t, Value::Double(1.5))),
                        (t < 10).then(|| ("few".to_string(), t, Value::Int64(5))),
                    ]
                })
                .flatten()
                .collect();
            let mut got = points;
            got.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            want.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            assert_eq!(got, want);
            assert!(
                journal.contains("root.sg.d1\tc\tINT64\tRLE\tUNCOMPRESSED\n"),
                "{journal}"
            );
        }
    }

    #[test]
    fn the_documented_metadata_sizes() {
        assert_eq!((CHUNK_META_BYTES, SERIES_META_BYTES), (160, 400));
    }

    /// A 1-byte memtable budget flushes every batch; a quarter of it is below the 4 MiB floor.
    /// With 5000 series a file's metadata after `k` flushes is 800000 k + 2000000 bytes: it
    /// reaches 4194304 at the third flush. Four batches: one file sealed for size, one at shutdown.
    #[test]
    fn metadata_past_4_mib_seals_a_file_when_the_budget_is_small() {
        let metrics = run(1, 16 * 1024 * 1024, 4);
        assert_eq!(sealed(&metrics, "size"), 1);
        assert_eq!(sealed(&metrics, "shutdown"), 1);
    }

    /// The series' part of the metadata is capped at a thirty-second of the budget, but no
    /// less than 2 MiB (2097152 bytes): 5300 series make 2120000 bytes, past it from the first
    /// flush (a 1-byte budget flushes every batch), so each of three batches seals its file for
    /// size and none is left for shutdown. (5000 series, 2000000 bytes, stay below it: above.)
    #[test]
    fn the_metadata_of_many_series_seals_a_file_at_each_flush() {
        let metrics = run_series(1, 16 * 1024 * 1024, 3, 5300);
        assert_eq!(sealed(&metrics, "size"), 3);
        assert_eq!(sealed(&metrics, "shutdown"), 0);
    }

    /// A 32 MiB budget: the cap is a quarter, 8388608 bytes, reached at the eighth flush
    /// (8400000 bytes; a 1-byte chunk group flushes every batch). Ten batches: one file sealed
    /// for size, one at shutdown.
    #[test]
    fn metadata_past_a_quarter_of_the_budget_seals_a_file() {
        let metrics = run(32 * 1024 * 1024, 1, 10);
        assert_eq!(sealed(&metrics, "size"), 1);
        assert_eq!(sealed(&metrics, "shutdown"), 1);
    }

    /// A few small flushes stay in one file, sealed at shutdown; every point is counted once,
    /// in the metrics and in the sealed file's status.
    #[test]
    fn small_flushes_share_one_file_and_count_their_points() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.engine.memtable_bytes = 1;
        let metrics = Metrics::new();
        let p = Pipeline::open(opts, metrics.clone()).unwrap();
        for t in [1, 2, 3] {
            p.submit_blocking("test", wide(t, 2), Instant::now())
                .unwrap();
        }
        p.shutdown_blocking();
        assert_eq!(sealed(&metrics, "size"), 0);
        assert_eq!(sealed(&metrics, "shutdown"), 1);
        assert!(
            metrics
                .render()
                .contains("tsfiled_points_written_total{pipeline=\"t\"} 6\n"),
            "{}",
            metrics.render()
        );
        let status = p.status_json(&[]);
        let files = status["recent_sealed"].as_array().unwrap();
        assert_eq!(files.len(), 1, "{status}");
        assert_eq!(files[0]["points"], 6);
        assert_eq!(files[0]["reason"], "shutdown");
    }

    /// A series typed with format 000002's DOUBLE GORILLA (code 6, which TsFile v4 does not
    /// write) is written with TsFile 2.x's GORILLA (code 8: docs/configuration.md,
    /// `storage.format_version`), with one warning when the file first sees it; a series
    /// written with its own encoding (INT64 TS_2DIFF) warns nothing.
    #[test]
    fn v4_warns_once_per_file_for_a_series_written_with_another_encoding() {
        use std::collections::HashSet;
        use std::io::BufWriter;

        use tsfile::basic::Column;
        use tsfile::DataType;

        use super::{FileWriter, FlushSeries};
        use crate::engine::files::FormatVersion;
        use crate::engine::schema::SeriesType;
        use crate::engine::testing::logs;

        let tmp = tempfile::tempdir().unwrap();
        let out = tsfiled_fsio::std_fs()
            .create(&tmp.path().join("1-1-0-0.tsfile"))
            .unwrap();
        let mut w =
            FileWriter::new(BufWriter::new(out), Default::default(), FormatVersion::V4).unwrap();
        let mut registered = HashSet::new();
        let flush = |t: i64| -> Vec<FlushSeries> {
            let key = |m: &str| (Arc::from("root.sg.d1"), Arc::from(m));
            vec![
                (
                    key("f"),
                    SeriesType::default_for(DataType::DOUBLE),
                    vec![t],
                    Column::Double(vec![0.5]),
                ),
                (
                    key("i"),
                    SeriesType::default_for(DataType::INT64),
                    vec![t],
                    Column::Int64(vec![7]),
                ),
            ]
        };
        let warnings = |log: &str| log.lines().filter(|l| l.contains("WARN")).count();
        let first = logs(|| {
            w.write_flush(&flush(1), &mut registered, 2, &Default::default())
                .unwrap()
        });
        assert_eq!(warnings(&first), 1, "{first}");
        assert!(
            first.contains("root.sg.d1.f")
                && first.contains("is not written in TsFile v4")
                && first.contains("the series is written GORILLA SNAPPY"),
            "{first}"
        );
        let later = logs(|| {
            w.write_flush(&flush(2), &mut registered, 3, &Default::default())
                .unwrap();
            w.write_flush(&flush(3), &mut registered, 4, &Default::default())
                .unwrap();
        });
        assert_eq!(warnings(&later), 0, "{later}");
    }

    /// A flush that fails while writing because the device is full is reported as a full
    /// device (`ENOSPC`: the daemon's health reason "no space") for the flush, and the
    /// partition waits for a retry from the write-ahead log.
    #[test]
    fn a_flush_on_a_full_device_is_reported_as_no_space() {
        use tsfile::basic::Column;
        use tsfile::DataType;

        use crate::engine::batch::{SeriesData, WriteBatch};
        use crate::engine::files::Space;
        use crate::engine::schema::SeriesType;
        use crate::engine::testing::{engine, FaultFs, FaultOp};
        use crate::health::{FaultKind, StorageOp};

        let tmp = tempfile::tempdir().unwrap();
        let faults = FaultFs::default();
        let mut e = engine(tmp.path(), &faults);
        faults.fail(FaultOp::Write, "1000-1-0.tsfile.tmp");
        // 60000 TEXT points of 32 hex digits: far more than the file's 256 KiB write buffer,
        // so the TsFile writer itself meets the full device.
        let times: Vec<i64> = (0..60_000).collect();
        let text = |t: i64| {
            format!(
                "{:032x}",
                (t as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)
            )
        };
        let batch = WriteBatch {
            series: vec![SeriesData {
                device: "root.sg.d1".into(),
                measurement: "s".into(),
                ty: SeriesType::default_for(DataType::TEXT),
                values: Column::Text(times.iter().map(|&t| text(t).into_bytes()).collect()),
                times,
            }],
        };
        let key: (Arc<str>, i64) = (Arc::from("root.sg"), 0);
        e.apply(0, batch, Instant::now(), false);
        e.flush(&key, Space::Sequence);
        let seen: Vec<(StorageOp, FaultKind)> = e
            .health_handle()
            .faults()
            .into_iter()
            .map(|f| (f.op, f.kind))
            .collect();
        assert_eq!(seen, vec![(StorageOp::Flush, FaultKind::NoSpace)]);
        assert!(e.groups[&key].failed.is_some());
    }
}

#[cfg(test)]
mod fit_tests {
    use super::*;
    use tsfile::DataType;

    fn ty(t: DataType, e: Encoding, c: Compression) -> SeriesType {
        SeriesType {
            data_type: t,
            encoding: e,
            compression: c,
        }
    }

    /// What the README says a format switch does to a journalled series.
    #[test]
    fn a_series_typed_in_one_format_is_written_in_the_other() {
        use Compression as C;
        use DataType as T;
        use Encoding as E;
        let v4 = |t, e, c| fit_to_format(&ty(t, e, c), FormatVersion::V4);
        let v2 = |t, e, c| fit_to_format(&ty(t, e, c), FormatVersion::V2);
        assert_eq!(
            v4(T::DOUBLE, E::GORILLA, C::SNAPPY),
            (E::GORILLA_V2, C::SNAPPY)
        );
        assert_eq!(
            v4(T::FLOAT, E::GORILLA, C::UNCOMPRESSED),
            (E::GORILLA_V2, C::UNCOMPRESSED)
        );
        assert_eq!(v4(T::BOOLEAN, E::RLE, C::SNAPPY), (E::PLAIN, C::SNAPPY));
        assert_eq!(v4(T::INT64, E::REGULAR, C::SNAPPY), (E::PLAIN, C::SNAPPY));
        assert_eq!(v4(T::INT64, E::TS_2DIFF, C::ZSTD), (E::TS_2DIFF, C::ZSTD));
        assert_eq!(v4(T::DOUBLE, E::RLE, C::SNAPPY), (E::PLAIN, C::SNAPPY));
        assert_eq!(
            v2(T::DOUBLE, E::GORILLA_V2, C::LZ4),
            (E::GORILLA, C::SNAPPY)
        );
        assert_eq!(v2(T::INT32, E::GORILLA_V2, C::GZIP), (E::PLAIN, C::SNAPPY));
        assert_eq!(v2(T::INT64, E::ZIGZAG, C::SNAPPY), (E::PLAIN, C::SNAPPY));
        assert_eq!(
            v2(T::TEXT, E::PLAIN_DICTIONARY, C::ZSTD),
            (E::PLAIN, C::SNAPPY)
        );
        assert_eq!(
            v2(T::BOOLEAN, E::RLE, C::UNCOMPRESSED),
            (E::RLE, C::UNCOMPRESSED)
        );
    }
}

#[cfg(test)]
mod refused_tests {
    use super::*;
    use tsfile::file::v4::TsFileReaderV4;
    use tsfile::{DataType, Value};

    /// Values a v4 encoder refuses (here NaN under GORILLA, as an older write-ahead log may
    /// hold) do not fail the flush: that chunk group is written with the series PLAIN, and
    /// every point reads back.
    #[test]
    fn a_chunk_group_an_encoder_refuses_is_written_plain() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f.tsfile");
        let out = BufWriter::new(tsfiled_fsio::std_fs().create(&path).unwrap());
        let mut w = FileWriter::new(out, WriterProperties::default(), FormatVersion::V4).unwrap();
        let key = |m: &str| -> SeriesKey { (Arc::from("root.sg.d1"), Arc::from(m)) };
        let ty = |e| SeriesType {
            data_type: DataType::DOUBLE,
            encoding: e,
            compression: Compression::SNAPPY,
        };
        let series: Vec<FlushSeries> = vec![
            (
                key("g"),
                ty(Encoding::GORILLA),
                vec![1, 2, 3],
                Column::Double(vec![1.5, f64::NAN, 2.5]),
            ),
            (
                key("p"),
                ty(Encoding::TS_2DIFF),
                vec![1, 2, 3],
                Column::Double(vec![0.25, 0.5, 0.75]),
            ),
        ];
        let mut registered = HashSet::new();
        w.write_flush(&series, &mut registered, 1, &Default::default())
            .unwrap();
        // A later flush of the same series is encoded as configured again.
        let later: Vec<FlushSeries> = vec![(
            key("g"),
            ty(Encoding::GORILLA),
            vec![4],
            Column::Double(vec![3.5]),
        )];
        w.write_flush(&later, &mut registered, 2, &Default::default())
            .unwrap();
        let (mut out, _) = w.close().unwrap();
        std::io::Write::flush(&mut out).unwrap();
        drop(out);
        let r = TsFileReaderV4::open_path(&path).unwrap();
        let mut got = Vec::new();
        for d in r.devices().unwrap() {
            for ts in &d.series {
                let encodings: Vec<u8> = ts
                    .chunks
                    .iter()
                    .map(|(o, _)| r.chunk_header(*o).unwrap().0.encoding)
                    .collect();
                let points: Vec<String> = r
                    .series_points(ts, None)
                    .unwrap()
                    .into_iter()
                    .map(|(t, v)| match v {
                        Value::Double(x) => format!("{t}={x}"),
                        v => panic!("{v:?}"),
                    })
                    .collect();
                got.push((ts.measurement.clone(), encodings, points.join(" ")));
            }
        }
        // TsFile 2.x codes: PLAIN 0, TS_2DIFF 4, GORILLA 8.
        assert_eq!(
            got,
            vec![
                (
                    "g".to_string(),
                    vec![0, 8],
                    "1=1.5 2=NaN 3=2.5 4=3.5".to_string()
                ),
                ("p".to_string(), vec![4], "1=0.25 2=0.5 3=0.75".to_string()),
            ]
        );
    }
}

/// The table-model flush ([`write_table_group`], [`Engine::flush_tables`]) read back with the
/// format crate's table reader. The input is the oracle: each line-protocol line is a row of
/// the table its measurement names, its tags the TAG values, its fields the FIELD values; a
/// table's columns are in first-seen order (IoTDB 2.x's table model, see
/// [`table`](super::table)).
#[cfg(test)]
mod table_tests {
    use std::path::{Path, PathBuf};
    use std::time::Instant;

    use tsfile::file::v4::{ColumnCategory, DeviceId, TableRow, TsFileReaderV4};
    use tsfile::resource::ResourceV4;
    use tsfile::{DataType, Value};
    use tsfiled_connectors::model::TimeUnit;
    use tsfiled_connectors::{parse_line_protocol, Batch, DeviceTemplate, LineProtocolOptions};

    use super::*;
    use crate::metrics::Metrics;
    use crate::pipeline::{Pipeline, PipelineOptions};

    /// The lines of `text` as a table-model source hands them over (database `lp`, ms).
    fn lines(text: &str) -> Batch {
        let t = DeviceTemplate::table("root.lp", "lp");
        let b = parse_line_protocol(
            text.as_bytes(),
            &LineProtocolOptions {
                device_template: &t,
                precision: TimeUnit::Millis,
                stored_unit: TimeUnit::Millis,
                now: 0,
            },
        );
        assert!(b.rejections.is_empty(), "{:?}", b.rejections);
        b
    }

    pub(super) fn sealed(dir: &Path) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "tsfile") {
                    files.push(p);
                }
            }
        }
        files.sort();
        files
    }

    fn row(tags: &[Option<&str>], time: i64, fields: Vec<Option<Value>>) -> TableRow {
        TableRow {
            tags: tags.iter().map(|t| t.map(str::to_string)).collect(),
            time,
            fields,
        }
    }

    /// The columns of a table in a file: name, whether TAG, type.
    fn columns(r: &TsFileReaderV4, table: &str) -> Vec<(String, bool, DataType)> {
        let s = r.table_schemas().iter().find(|s| s.name == table).unwrap();
        s.columns
            .iter()
            .map(|c| {
                (
                    c.schema.measurement.to_string(),
                    c.category == ColumnCategory::Tag,
                    c.schema.data_type,
                )
            })
            .collect()
    }

    /// Two flushes into one file: device `gw1`'s series have different time sets (rows are
    /// the union of their times, a series' missing time null); the second flush brings a new
    /// FIELD column, which the file's schema has after the earlier ones; a table without tags
    /// and with a single FIELD column; every row reads back as put in, and the `.resource`
    /// lists each device id (table name, tag values) with its time range.
    #[test]
    fn table_rows_of_two_flushes_read_back_as_put_in() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = PipelineOptions::new("t", tmp.path());
        opts.engine.format = FormatVersion::V4;
        opts.engine.memtable_bytes = 1; // flush after every batch
        let p = Pipeline::open(opts, Metrics::new()).unwrap();
        let first = "cpu,host=gw1 usage=1.5,n=2i 10\n\
                     cpu,host=gw1 usage=2.5 11\n\
                     cpu,host=gw1 n=3i 12\n\
                     cpu,host=gw2 usage=0.5 10\n\
                     solo v=4.5 9\n";
        let second = "cpu,host=gw1 usage=3.5,temp=20i 13\n\
                      cpu,host=gw1 temp=21i 14\n\
                      cpu,host=gw2 n=7i 15\n";
        for (text, points) in [(first, 6), (second, 4)] {
            let out = p
                .submit_blocking("test", lines(text), Instant::now())
                .unwrap();
            assert_eq!(out.accepted, points);
        }
        p.shutdown_blocking();
        let files = sealed(&tmp.path().join("sequence"));
        assert_eq!(files.len(), 1, "{files:?}");
        let r = TsFileReaderV4::open_path(&files[0]).unwrap();
        assert_eq!(
            columns(&r, "cpu"),
            vec![
                ("host".to_string(), true, DataType::STRING),
                ("usage".to_string(), false, DataType::DOUBLE),
                ("n".to_string(), false, DataType::INT64),
                ("temp".to_string(), false, DataType::INT64),
            ]
        );
        assert_eq!(
            columns(&r, "solo"),
            vec![("v".to_string(), false, DataType::DOUBLE)]
        );
        let (d, i) = (|x| Some(Value::Double(x)), |x| Some(Value::Int64(x)));
        let mut got = r.table_rows("cpu").unwrap();
        got.sort_by(|a, b| (&a.tags, a.time).cmp(&(&b.tags, b.time)));
        let gw1 = [Some("gw1")];
        let gw2 = [Some("gw2")];
        assert_eq!(
            got,
            vec![
                row(&gw1, 10, vec![d(1.5), i(2), None]),
                row(&gw1, 11, vec![d(2.5), None, None]),
                row(&gw1, 12, vec![None, i(3), None]),
                row(&gw1, 13, vec![d(3.5), None, i(20)]),
                row(&gw1, 14, vec![None, None, i(21)]),
                row(&gw2, 10, vec![d(0.5), None, None]),
                row(&gw2, 15, vec![None, i(7), None]),
            ]
        );
        assert_eq!(
            r.table_rows("solo").unwrap(),
            vec![row(&[], 9, vec![d(4.5)])]
        );
        let res = std::fs::read(files::with_suffix(&files[0], ".resource")).unwrap();
        let mut devices: Vec<(String, i64, i64)> = ResourceV4::deserialize(&res)
            .unwrap()
            .devices
            .into_iter()
            .map(|d| (d.device, d.start_time, d.end_time))
            .collect();
        devices.sort();
        let id = |table: &str, tags: &[Option<&str>]| DeviceId::from_table(table, tags).key();
        let mut want = vec![
            (id("cpu", &gw1), 10, 14),
            (id("cpu", &gw2), 10, 15),
            (id("solo", &[]), 9, 9),
        ];
        want.sort();
        assert_eq!(devices, want);
    }

    /// A table device's chunk group a v4 encoder refuses (NaN under GORILLA, as an older
    /// write-ahead log may hold) is written with that column PLAIN and reads back whole; a
    /// later flush of the column is GORILLA again. A column typed with format 000002's
    /// GORILLA is noted as written with TsFile 2.x's GORILLA once per file (one warning, the
    /// file counts the series once), as for tree devices.
    #[test]
    fn a_table_chunk_group_an_encoder_refuses_is_written_plain() {
        use crate::engine::testing::logs;

        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f.tsfile");
        let out = BufWriter::new(tsfiled_fsio::std_fs().create(&path).unwrap());
        let mut w = FileWriter::new(out, WriterProperties::default(), FormatVersion::V4).unwrap();
        let device: Arc<str> = Arc::from("lp\u{1f}cpu\u{1e}gw1");
        let key = |m: &str| -> SeriesKey { (device.clone(), Arc::from(m)) };
        let ty = |e| SeriesType {
            data_type: DataType::DOUBLE,
            encoding: e,
            compression: Compression::SNAPPY,
        };
        let tables: FlushTables = HashMap::from([(
            "lp\u{1f}cpu".to_string(),
            vec![
                (Arc::from("host"), true, None),
                (Arc::from("g"), false, Some(ty(Encoding::GORILLA))),
                (Arc::from("p"), false, Some(ty(Encoding::TS_2DIFF))),
            ],
        )]);
        let series: Vec<FlushSeries> = vec![
            (
                key("g"),
                ty(Encoding::GORILLA),
                vec![1, 2, 3],
                Column::Double(vec![1.5, f64::NAN, 2.5]),
            ),
            (
                key("p"),
                ty(Encoding::TS_2DIFF),
                vec![1, 3],
                Column::Double(vec![0.25, 0.75]),
            ),
        ];
        let mut registered = HashSet::new();
        let log = logs(|| w.write_flush(&series, &mut registered, 1, &tables).unwrap());
        let refits = |log: &str| log.matches("is not written in TsFile v4").count();
        assert_eq!(refits(&log), 1, "{log}");
        assert!(log.contains("lp\u{1f}cpu\u{1e}gw1.g"), "{log}");
        assert_eq!(registered, HashSet::from([key("g"), key("p")]));
        let later: Vec<FlushSeries> = vec![(
            key("g"),
            ty(Encoding::GORILLA),
            vec![4],
            Column::Double(vec![3.5]),
        )];
        let log = logs(|| w.write_flush(&later, &mut registered, 2, &tables).unwrap());
        assert_eq!(refits(&log), 0, "{log}");
        assert_eq!(registered.len(), 2);
        let (mut out, ranges) = w.close().unwrap();
        std::io::Write::flush(&mut out).unwrap();
        drop(out);
        let ranges: Vec<(String, i64, i64)> = ranges
            .into_iter()
            .map(|d| (d.device, d.start_time, d.end_time))
            .collect();
        assert_eq!(ranges, vec![(device.to_string(), 1, 4)]);
        let r = TsFileReaderV4::open_path(&path).unwrap();
        // NaN is not equal to itself: the rows as text.
        let rows: Vec<String> = r
            .table_rows("cpu")
            .unwrap()
            .into_iter()
            .map(|row| format!("{:?} {} {:?}", row.tags, row.time, row.fields))
            .collect();
        let gw1 = r#"[Some("gw1")]"#;
        assert_eq!(
            rows,
            vec![
                format!("{gw1} 1 [Some(Double(1.5)), Some(Double(0.25))]"),
                format!("{gw1} 2 [Some(Double(NaN)), None]"),
                format!("{gw1} 3 [Some(Double(2.5)), Some(Double(0.75))]"),
                format!("{gw1} 4 [Some(Double(3.5)), None]"),
            ]
        );
        // The chunk headers' encodings (TsFile 2.x codes: PLAIN 0, TS_2DIFF 4, GORILLA 8).
        let mut encodings = Vec::new();
        for d in r.devices().unwrap() {
            for ts in d.series.iter().filter(|s| !s.measurement.is_empty()) {
                let codes: Vec<u8> = ts
                    .chunks
                    .iter()
                    .map(|(o, _)| r.chunk_header(*o).unwrap().0.encoding)
                    .collect();
                encodings.push((ts.measurement.clone(), codes));
            }
        }
        assert_eq!(
            encodings,
            vec![("g".to_string(), vec![0, 8]), ("p".to_string(), vec![4])]
        );
    }
}
