//! The v4 file writer: chunk groups of non-aligned series and of aligned devices,
//! then the metadata index, bloom filter and properties (see `docs/tsfile-v4.md`).
//!
//! The caller hands over whole chunk groups (one device's points of one flush), each
//! series' times strictly increasing. Pages are cut at `max_points_per_page` points or
//! when the encoded page reaches `page_size_bytes`.

use super::codec;
use super::metadata::{
    node_type, ChunkHeaderV4, ChunkMetadataV4, DeviceId, FileMetadataV4, IndexKey, IndexNodeV4,
    TimeseriesMetadataV4,
};
use super::statistics::StatisticsV4;
use super::{marker, TIME_COLUMN_MASK, VALUE_COLUMN_MASK, VECTOR_TYPE, VERSION_BYTE};
use crate::basic::{Column, Compression, DataType, Encoding, Value};
use crate::compression;
use crate::encoding::{self, Encoder};
use crate::errors::{Error, Result};
use crate::file::bloom::BloomFilter;
use crate::file::properties::{MeasurementSchema, WriterProperties};
use crate::file::MAGIC;
use crate::util::io;
use std::collections::BTreeMap;
use std::io::Write;

/// The points of one non-aligned series in a chunk group.
#[derive(Debug, Clone, Copy)]
pub struct SeriesChunk<'a> {
    /// Measurement schema (any v4 type).
    pub schema: &'a MeasurementSchema,
    /// Times, strictly increasing.
    pub times: &'a [i64],
    /// Values, a column of the schema type's storage type, as many as `times`.
    pub values: &'a Column,
}

/// One value column of an aligned chunk group: a value or null per row.
#[derive(Debug, Clone, Copy)]
pub struct AlignedColumn<'a> {
    /// Measurement schema (any v4 type).
    pub schema: &'a MeasurementSchema,
    /// One entry per row of the group's times; `None` is null.
    pub values: &'a [Option<Value>],
}

/// Checks a schema against what the v4 writer supports.
pub fn validate_schema(s: &MeasurementSchema) -> Result<()> {
    if s.measurement.is_empty() {
        return Err(Error::invalid("empty measurement name"));
    }
    codec::check(s.encoding, s.data_type, s.compression)
}

/// Writer of one v4 file.
pub struct TsFileWriterV4<W: Write> {
    out: W,
    pos: u64,
    props: WriterProperties,
    /// Per device, per measurement, the chunk metadata in file order.
    series: BTreeMap<DeviceId, BTreeMap<String, Vec<ChunkMetadataV4>>>,
    /// Declared tables (table model), by name.
    pub(super) tables: BTreeMap<String, super::table::TableSchema>,
    buf: Vec<u8>,
}

struct Page {
    uncompressed: usize,
    /// Compressed body; empty with `uncompressed == 0` for an all-null value page.
    body: Vec<u8>,
    stats: StatisticsV4,
}

fn encode_value(enc: &mut dyn Encoder, v: &Value, out: &mut Vec<u8>) -> Result<()> {
    match v {
        Value::Boolean(b) => enc.encode_bool(*b, out),
        Value::Int32(x) => enc.encode_i32(*x, out),
        Value::Int64(x) => enc.encode_i64(*x, out),
        Value::Float(x) => enc.encode_f32(*x, out),
        Value::Double(x) => enc.encode_f64(*x, out),
        Value::Text(b) => enc.encode_binary(b, out),
    }
}

fn check_times(what: &str, times: &[i64]) -> Result<()> {
    if let Some(i) = times.windows(2).position(|w| w[1] <= w[0]) {
        return Err(Error::invalid(format!(
            "{what}: times must be strictly increasing, found {} after {} (row {})",
            times[i + 1],
            times[i],
            i + 1
        )));
    }
    Ok(())
}

/// Appends the pages of a chunk (Java's rule: a single page has no statistics).
fn chunk_bytes(pages: &[Page], out: &mut Vec<u8>) {
    let single = pages.len() <= 1;
    for p in pages {
        io::put_uvarint(out, p.uncompressed as u32);
        if p.uncompressed == 0 {
            continue;
        }
        io::put_uvarint(out, p.body.len() as u32);
        if !single {
            p.stats.serialize(out);
        }
        out.extend_from_slice(&p.body);
    }
}

impl<W: Write> TsFileWriterV4<W> {
    /// Starts a file: writes `TsFile` and the version byte 4.
    pub fn new(mut out: W, props: WriterProperties) -> Result<Self> {
        props.validate()?;
        out.write_all(MAGIC)?;
        out.write_all(&[VERSION_BYTE])?;
        Ok(TsFileWriterV4 {
            out,
            pos: super::HEADER_LEN,
            props,
            series: BTreeMap::new(),
            tables: BTreeMap::new(),
            buf: Vec::new(),
        })
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    fn emit(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn compress_body(c: Compression, body: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        compression::compress_v4(c, body, &mut out)?;
        Ok(out)
    }

    fn page_full(&self, points: usize, bytes: usize) -> bool {
        points >= self.props.max_points_per_page || bytes >= self.props.page_size_bytes
    }

    /// Writes one chunk group of non-aligned series of `device` (a tree path such as
    /// `root.sg.d1`). Series with no points are skipped; a measurement may appear once. A
    /// value an encoder refuses (an end-of-page marker) fails the call before anything is
    /// written.
    pub fn write_chunk_group(&mut self, device: &str, series: &[SeriesChunk<'_>]) -> Result<()> {
        let dev = DeviceId::from_path(device);
        for (i, s) in series.iter().enumerate() {
            validate_schema(s.schema)?;
            if s.values.len() != s.times.len() {
                return Err(Error::invalid(format!(
                    "{device}.{}: {} times but {} values",
                    s.schema.measurement,
                    s.times.len(),
                    s.values.len()
                )));
            }
            if s.values.data_type() != s.schema.data_type.storage_type() {
                return Err(Error::invalid(format!(
                    "{device}.{}: a {} column for a {} series",
                    s.schema.measurement,
                    s.values.data_type(),
                    s.schema.data_type
                )));
            }
            check_times(&format!("{device}.{}", s.schema.measurement), s.times)?;
            if series[..i]
                .iter()
                .any(|o| o.schema.measurement == s.schema.measurement)
            {
                return Err(Error::invalid(format!(
                    "{device}.{} appears twice in one chunk group",
                    s.schema.measurement
                )));
            }
        }
        if series.iter().all(|s| s.times.is_empty()) {
            return Ok(());
        }
        // Every series is encoded before anything is written: a value an encoder refuses
        // leaves the file as it was, so the caller can write the group otherwise.
        let encoded = series
            .iter()
            .filter(|s| !s.times.is_empty())
            .map(|s| Ok((s, self.series_pages(s)?)))
            .collect::<Result<Vec<_>>>()?;
        let mut group = vec![marker::CHUNK_GROUP_HEADER];
        dev.serialize(&mut group);
        self.emit(&group)?;
        let mut metas = Vec::new();
        for (s, pages) in encoded {
            let mut stats = StatisticsV4::new(s.schema.data_type.code() as u8)?;
            for p in &pages {
                stats.merge(&p.stats)?;
            }
            metas.push(self.write_chunk(
                s.schema,
                0,
                s.schema.data_type.code() as u8,
                s.schema.encoding,
                &pages,
                stats,
            )?);
        }
        self.register(dev, metas);
        Ok(())
    }

    fn register(&mut self, dev: DeviceId, metas: Vec<ChunkMetadataV4>) {
        let d = self.series.entry(dev).or_default();
        for m in metas {
            d.entry(m.measurement.clone()).or_default().push(m);
        }
    }

    fn write_chunk(
        &mut self,
        schema: &MeasurementSchema,
        mask: u8,
        type_code: u8,
        encoding: Encoding,
        pages: &[Page],
        stats: StatisticsV4,
    ) -> Result<ChunkMetadataV4> {
        let mut data = std::mem::take(&mut self.buf);
        data.clear();
        chunk_bytes(pages, &mut data);
        let single = pages.len() <= 1;
        let header = ChunkHeaderV4 {
            chunk_type: if single {
                marker::ONLY_ONE_PAGE_CHUNK_HEADER
            } else {
                marker::CHUNK_HEADER
            } | mask,
            measurement: if mask == TIME_COLUMN_MASK {
                String::new()
            } else {
                schema.measurement.clone()
            },
            data_size: data.len() as u32,
            type_code,
            compression: schema.compression.code() as u8,
            encoding: encoding.code() as u8,
        };
        let offset = self.pos;
        let mut h = Vec::new();
        header.serialize(&mut h);
        self.emit(&h)?;
        self.emit(&data)?;
        self.buf = data;
        Ok(ChunkMetadataV4 {
            measurement: header.measurement,
            type_code,
            mask,
            offset,
            statistics: stats,
        })
    }

    fn series_pages(&self, s: &SeriesChunk<'_>) -> Result<Vec<Page>> {
        let dt = s.schema.data_type;
        let mut tenc = encoding::time_encoder();
        let mut venc = codec::encoder(s.schema.encoding, dt)?;
        let (mut tout, mut vout) = (Vec::new(), Vec::new());
        let mut stats = StatisticsV4::new(dt.code() as u8)?;
        let mut pages = Vec::new();
        let n = s.times.len();
        for i in 0..n {
            let t = s.times[i];
            let v = s.values.get(i).expect("length checked");
            tenc.encode_i64(t, &mut tout)?;
            encode_value(venc.as_mut(), &v, &mut vout).map_err(|e| {
                Error::invalid(format!("{} at time {t}: {e}", s.schema.measurement))
            })?;
            stats.update(t, &v)?;
            let bytes = tout.len() + vout.len() + tenc.max_byte_size() + venc.max_byte_size();
            if i + 1 == n || self.page_full(stats.count as usize, bytes) {
                tenc.flush(&mut tout)?;
                venc.flush(&mut vout)?;
                let mut body = Vec::with_capacity(5 + tout.len() + vout.len());
                io::put_uvarint(&mut body, tout.len() as u32);
                body.extend_from_slice(&tout);
                body.extend_from_slice(&vout);
                pages.push(Page {
                    uncompressed: body.len(),
                    body: Self::compress_body(s.schema.compression, &body)?,
                    stats: std::mem::replace(&mut stats, StatisticsV4::new(dt.code() as u8)?),
                });
                tout.clear();
                vout.clear();
            }
        }
        Ok(pages)
    }

    /// Writes one chunk group of an aligned device: a time chunk and one value chunk
    /// per column, pages cut at the same rows. The time column uses TS_2DIFF and the
    /// first column's compression. A column null in every row gets an empty chunk.
    pub fn write_aligned_chunk_group(
        &mut self,
        device: &str,
        times: &[i64],
        columns: &[AlignedColumn<'_>],
    ) -> Result<()> {
        self.write_aligned_device(DeviceId::from_path(device), times, columns)
    }

    /// [`Self::write_aligned_chunk_group`] of a device id (tree or table model).
    pub(super) fn write_aligned_device(
        &mut self,
        dev: DeviceId,
        times: &[i64],
        columns: &[AlignedColumn<'_>],
    ) -> Result<()> {
        let device = &dev.path();
        if times.is_empty() {
            return Ok(());
        }
        if columns.is_empty() {
            return Err(Error::invalid(format!(
                "{device}: an aligned chunk group needs a column"
            )));
        }
        check_times(device, times)?;
        for (i, c) in columns.iter().enumerate() {
            validate_schema(c.schema)?;
            if c.values.len() != times.len() {
                return Err(Error::invalid(format!(
                    "{device}.{}: {} rows but {} values",
                    c.schema.measurement,
                    times.len(),
                    c.values.len()
                )));
            }
            let st = c.schema.data_type.storage_type();
            if let Some(v) = c.values.iter().flatten().find(|v| v.data_type() != st) {
                return Err(Error::invalid(format!(
                    "{device}.{}: a {} value in a {} column",
                    c.schema.measurement,
                    v.data_type(),
                    c.schema.data_type
                )));
            }
            if columns[..i]
                .iter()
                .any(|o| o.schema.measurement == c.schema.measurement)
            {
                return Err(Error::invalid(format!(
                    "{device}.{} appears twice in one chunk group",
                    c.schema.measurement
                )));
            }
        }
        // Cut pages: by rows and by the time column's encoded size.
        let mut cuts = Vec::new(); // exclusive row ends
        let mut time_pages = Vec::new();
        let mut tenc = encoding::time_encoder();
        let mut tout = Vec::new();
        let mut tstats = StatisticsV4::new(VECTOR_TYPE)?;
        let time_compression = columns[0].schema.compression;
        for (i, t) in times.iter().enumerate() {
            tenc.encode_i64(*t, &mut tout)?;
            tstats.update_time(*t);
            let bytes = tout.len() + tenc.max_byte_size();
            if i + 1 == times.len() || self.page_full(tstats.count as usize, bytes) {
                tenc.flush(&mut tout)?;
                time_pages.push(Page {
                    uncompressed: tout.len(),
                    body: Self::compress_body(time_compression, &tout)?,
                    stats: std::mem::replace(&mut tstats, StatisticsV4::new(VECTOR_TYPE)?),
                });
                tout.clear();
                cuts.push(i + 1);
            }
        }
        let mut group = vec![marker::CHUNK_GROUP_HEADER];
        dev.serialize(&mut group);
        self.emit(&group)?;
        let mut tchunk = StatisticsV4::new(VECTOR_TYPE)?;
        for p in &time_pages {
            tchunk.merge(&p.stats)?;
        }
        let time_schema =
            MeasurementSchema::new("", DataType::INT64, Encoding::TS_2DIFF, time_compression);
        let mut metas = vec![self.write_chunk(
            &time_schema,
            TIME_COLUMN_MASK,
            VECTOR_TYPE,
            Encoding::TS_2DIFF,
            &time_pages,
            tchunk,
        )?];
        for c in columns {
            let code = c.schema.data_type.code() as u8;
            let mut venc = codec::encoder(c.schema.encoding, c.schema.data_type)?;
            let mut pages = Vec::new();
            let mut start = 0;
            let mut chunk_stats = StatisticsV4::new(code)?;
            for &end in &cuts {
                let mut stats = StatisticsV4::new(code)?;
                let mut bitmap = Vec::with_capacity((end - start).div_ceil(8));
                let mut vout = Vec::new();
                for (k, (t, v)) in times[start..end]
                    .iter()
                    .zip(&c.values[start..end])
                    .enumerate()
                {
                    if k % 8 == 0 {
                        bitmap.push(0u8);
                    }
                    if let Some(v) = v {
                        *bitmap.last_mut().expect("pushed") |= 0x80 >> (k % 8);
                        encode_value(venc.as_mut(), v, &mut vout).map_err(|e| {
                            Error::invalid(format!(
                                "{}.{} at time {t}: {e}",
                                device, c.schema.measurement
                            ))
                        })?;
                        stats.update(*t, v)?;
                    }
                }
                if stats.count == 0 {
                    pages.push(Page {
                        uncompressed: 0,
                        body: Vec::new(),
                        stats,
                    });
                } else {
                    venc.flush(&mut vout)?;
                    let mut body = Vec::with_capacity(4 + bitmap.len() + vout.len());
                    io::put_i32(&mut body, (end - start) as i32);
                    body.extend_from_slice(&bitmap);
                    body.extend_from_slice(&vout);
                    chunk_stats.merge(&stats)?;
                    pages.push(Page {
                        uncompressed: body.len(),
                        body: Self::compress_body(c.schema.compression, &body)?,
                        stats,
                    });
                }
                start = end;
            }
            if chunk_stats.count == 0 {
                // Java `writeEmptyValueChunk`: a header with no data, kept so the value
                // chunks of every chunk group line up with its time chunk.
                pages.clear();
            }
            metas.push(self.write_chunk(
                c.schema,
                VALUE_COLUMN_MASK,
                code,
                c.schema.encoding,
                &pages,
                chunk_stats,
            )?);
        }
        self.register(dev, metas);
        Ok(())
    }

    /// Writes the metadata section and the tail; returns the output and the file size.
    pub fn finish(mut self) -> Result<(W, u64)> {
        let meta_offset = self.pos;
        self.emit(&[marker::SEPARATOR])?;
        let max_degree = self.props.max_degree;
        let path_count: usize = self.series.values().map(|m| m.len()).sum();
        let mut bloom = BloomFilter::with_capacity(path_count, self.props.bloom_error_rate);
        let series = std::mem::take(&mut self.series);
        // Per table, per device: the root of the device's measurement index.
        let mut tables: BTreeMap<String, Vec<(DeviceId, IndexNodeV4)>> = BTreeMap::new();
        for (dev, measurements) in &series {
            let path = dev.path();
            let mut leaves: Vec<IndexNodeV4> = Vec::new();
            let mut cur = IndexNodeV4 {
                entries: Vec::new(),
                end_offset: 0,
                node_type: node_type::LEAF_MEASUREMENT,
            };
            for (i, (name, chunks)) in measurements.iter().enumerate() {
                bloom.add_both(&format!("{path}.{name}"));
                if i % max_degree == 0 {
                    if cur.entries.len() >= max_degree {
                        cur.end_offset = self.pos;
                        leaves.push(std::mem::replace(
                            &mut cur,
                            IndexNodeV4 {
                                entries: Vec::new(),
                                end_offset: 0,
                                node_type: node_type::LEAF_MEASUREMENT,
                            },
                        ));
                    }
                    cur.entries
                        .push((IndexKey::Measurement(name.clone()), self.pos));
                }
                let refs: Vec<&ChunkMetadataV4> = chunks.iter().collect();
                let mut b = std::mem::take(&mut self.buf);
                b.clear();
                TimeseriesMetadataV4::write_from_chunks(&refs, &mut b)?;
                self.emit(&b)?;
                self.buf = b;
            }
            cur.end_offset = self.pos;
            leaves.push(cur);
            let root = self.root_node(leaves, node_type::INTERNAL_MEASUREMENT)?;
            tables
                .entry(dev.table().to_string())
                .or_default()
                .push((dev.clone(), root));
        }
        let mut roots = Vec::new();
        for (table, devices) in tables {
            let mut leaves = Vec::new();
            let mut cur = IndexNodeV4 {
                entries: Vec::new(),
                end_offset: 0,
                node_type: node_type::LEAF_DEVICE,
            };
            let few = devices.len() <= max_degree;
            for (dev, node) in devices {
                if cur.entries.len() >= max_degree {
                    cur.end_offset = self.pos;
                    leaves.push(std::mem::replace(
                        &mut cur,
                        IndexNodeV4 {
                            entries: Vec::new(),
                            end_offset: 0,
                            node_type: node_type::LEAF_DEVICE,
                        },
                    ));
                }
                cur.entries.push((IndexKey::Device(dev), self.pos));
                let mut b = Vec::new();
                node.serialize(&mut b);
                self.emit(&b)?;
            }
            cur.end_offset = self.pos;
            let root = if few {
                cur
            } else {
                leaves.push(cur);
                let mut r = self.root_node(leaves, node_type::INTERNAL_DEVICE)?;
                r.end_offset = self.pos;
                r
            };
            roots.push((table, root));
        }
        let meta = FileMetadataV4 {
            tables: roots,
            table_schemas: std::mem::take(&mut self.tables).into_values().collect(),
            meta_offset,
            bloom: Some(bloom),
            properties: vec![
                ("encryptLevel".into(), Some("0".into())),
                (
                    "encryptType".into(),
                    Some("org.apache.tsfile.encrypt.UNENCRYPTED".into()),
                ),
                ("encryptKey".into(), None),
            ],
        };
        let mut b = Vec::new();
        meta.serialize(&mut b);
        let size = b.len() as i32;
        io::put_i32(&mut b, size);
        b.extend_from_slice(MAGIC);
        self.emit(&b)?;
        self.out.flush()?;
        Ok((self.out, self.pos))
    }

    /// Java `generateRootNode`: levels of `kind` nodes over `queue` until one remains;
    /// each non-root node is written, its entry keyed by its first key.
    fn root_node(&mut self, mut queue: Vec<IndexNodeV4>, kind: u8) -> Result<IndexNodeV4> {
        let max_degree = self.props.max_degree;
        while queue.len() > 1 {
            let mut next = Vec::new();
            let mut cur = IndexNodeV4 {
                entries: Vec::new(),
                end_offset: 0,
                node_type: kind,
            };
            for node in queue {
                if cur.entries.len() >= max_degree {
                    cur.end_offset = self.pos;
                    next.push(std::mem::replace(
                        &mut cur,
                        IndexNodeV4 {
                            entries: Vec::new(),
                            end_offset: 0,
                            node_type: kind,
                        },
                    ));
                }
                let key = node.entries[0].0.clone();
                cur.entries.push((key, self.pos));
                let mut b = Vec::new();
                node.serialize(&mut b);
                self.emit(&b)?;
            }
            cur.end_offset = self.pos;
            next.push(cur);
            queue = next;
        }
        queue
            .pop()
            .ok_or_else(|| Error::invalid("an index level without nodes"))
    }
}
