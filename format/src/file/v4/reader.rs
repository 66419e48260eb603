//! The v4 reader: the tail, the per-table metadata index, timeseries metadata, and the
//! points of non-aligned and aligned series. It reads a whole file held in memory.

use super::codec;
use super::metadata::{
    ChunkHeaderV4, DeviceId, FileMetadataV4, IndexKey, IndexNodeV4, TimeseriesMetadataV4,
};
use super::{is_v4, marker, HEADER_LEN, TIME_COLUMN_MASK, VALUE_COLUMN_MASK, VECTOR_TYPE};
use crate::basic::{Column, Compression, DataType, Encoding, Value};
use crate::compression;
use crate::encoding;
use crate::errors::{Error, Result};
use crate::util::io::ByteReader;

/// One device and its series, as the index lists them.
#[derive(Debug, Clone)]
pub struct DeviceSeries {
    /// The device id.
    pub device: DeviceId,
    /// Its series in index order; an aligned device's time column (`""`) first.
    pub series: Vec<TimeseriesMetadataV4>,
}

/// One decoded page of a chunk: its times and, for value chunks, one optional value per time.
#[derive(Debug, Clone)]
pub struct PageV4 {
    /// Offset of the page header.
    pub offset: u64,
    /// Times (time column pages and non-aligned pages); empty for value pages.
    pub times: Vec<i64>,
    /// Values; `None` rows are nulls (aligned value pages only).
    pub values: Vec<Option<Value>>,
    /// Page statistics, if stored (chunks of several pages).
    pub statistics: Option<super::statistics::StatisticsV4>,
    /// Whether this is an all-null page (stored as uncompressed size 0).
    pub empty: bool,
}

/// Reader of a v4 file.
pub struct TsFileReaderV4 {
    bytes: Vec<u8>,
    meta: FileMetadataV4,
    meta_pos: u64,
}

impl TsFileReaderV4 {
    /// Reads and opens a file.
    pub fn open_path(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::open(std::fs::read(path)?)
    }

    /// Opens a file held in memory: checks head and tail, parses the file metadata.
    pub fn open(bytes: Vec<u8>) -> Result<Self> {
        if !is_v4(&bytes) {
            return Err(Error::format(0, "the v4 head `TsFile` + version byte 4"));
        }
        let n = bytes.len();
        if n < HEADER_LEN as usize + 1 + 4 + 6 || &bytes[n - 6..] != crate::file::MAGIC {
            return Err(Error::format(
                n.saturating_sub(6) as u64,
                "the tail magic `TsFile` (file incomplete?)",
            ));
        }
        let size_at = n - 10;
        let size = i32::from_be_bytes(bytes[size_at..size_at + 4].try_into().expect("4 bytes"));
        if size < 0 || size as usize > size_at - HEADER_LEN as usize {
            return Err(Error::format(
                size_at as u64,
                format_args!("a file metadata size within the file, found {size}"),
            ));
        }
        let meta_pos = size_at - size as usize;
        let mut r = ByteReader::new(&bytes[meta_pos..size_at], meta_pos as u64);
        let meta = FileMetadataV4::deserialize(&mut r)?;
        if meta.meta_offset >= meta_pos as u64 || meta.meta_offset < HEADER_LEN {
            return Err(Error::format(
                meta_pos as u64,
                format_args!("a meta offset inside the data, found {}", meta.meta_offset),
            ));
        }
        Ok(TsFileReaderV4 {
            bytes,
            meta,
            meta_pos: meta_pos as u64,
        })
    }

    /// The file metadata.
    pub fn metadata(&self) -> &FileMetadataV4 {
        &self.meta
    }

    /// Offset of the file metadata.
    pub fn metadata_pos(&self) -> u64 {
        self.meta_pos
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn slice(&self, from: u64, to: u64, what: &str) -> Result<ByteReader<'_>> {
        if from > to || to > self.meta_pos.max(from) || to as usize > self.bytes.len() {
            return Err(Error::format(
                from,
                format_args!("{what}: a region inside the file, found {from}..{to}"),
            ));
        }
        Ok(ByteReader::new(
            &self.bytes[from as usize..to as usize],
            from,
        ))
    }

    /// Every device with its series, devices in index order.
    pub fn devices(&self) -> Result<Vec<DeviceSeries>> {
        let mut out = Vec::new();
        for (_, root) in &self.meta.tables {
            self.walk_device_node(root, &mut out, 0)?;
        }
        Ok(out)
    }

    fn walk_device_node(
        &self,
        node: &IndexNodeV4,
        out: &mut Vec<DeviceSeries>,
        depth: u32,
    ) -> Result<()> {
        if depth > 64 {
            return Err(Error::format(
                node.end_offset,
                "an index of at most 64 levels",
            ));
        }
        for (i, (key, off)) in node.entries.iter().enumerate() {
            let end = node.entries.get(i + 1).map_or(node.end_offset, |e| e.1);
            let mut r = self.slice(*off, end, "index node")?;
            if node.node_type == super::metadata::node_type::LEAF_DEVICE {
                let IndexKey::Device(dev) = key else {
                    return Err(Error::format(*off, "a device key"));
                };
                let mnode = IndexNodeV4::deserialize(&mut r, false)?;
                let mut series = Vec::new();
                self.walk_measurement_node(&mnode, &mut series, depth + 1)?;
                out.push(DeviceSeries {
                    device: dev.clone(),
                    series,
                });
            } else {
                let child = IndexNodeV4::deserialize(&mut r, true)?;
                self.walk_device_node(&child, out, depth + 1)?;
            }
        }
        Ok(())
    }

    fn walk_measurement_node(
        &self,
        node: &IndexNodeV4,
        out: &mut Vec<TimeseriesMetadataV4>,
        depth: u32,
    ) -> Result<()> {
        if depth > 64 {
            return Err(Error::format(
                node.end_offset,
                "an index of at most 64 levels",
            ));
        }
        for (i, (_, off)) in node.entries.iter().enumerate() {
            let end = node.entries.get(i + 1).map_or(node.end_offset, |e| e.1);
            let mut r = self.slice(*off, end, "index region")?;
            if node.node_type == super::metadata::node_type::LEAF_MEASUREMENT {
                while !r.is_empty() {
                    out.push(TimeseriesMetadataV4::deserialize(&mut r)?);
                }
            } else {
                let child = IndexNodeV4::deserialize(&mut r, false)?;
                self.walk_measurement_node(&child, out, depth + 1)?;
            }
        }
        Ok(())
    }

    /// Reads the chunk header at `offset`; returns it and the offset of its data.
    pub fn chunk_header(&self, offset: u64) -> Result<(ChunkHeaderV4, u64)> {
        let mut r = self.slice(offset, self.meta_pos, "chunk")?;
        let m = r.read_u8("chunk marker")?;
        let low = m & 0x3F;
        if low != marker::CHUNK_HEADER && low != marker::ONLY_ONE_PAGE_CHUNK_HEADER {
            return Err(Error::format(
                offset,
                format_args!("a chunk header marker, found {m:#04x}"),
            ));
        }
        let h = ChunkHeaderV4::deserialize(&mut r, m)?;
        Ok((h, r.offset()))
    }

    /// Decodes every page of the chunk at `offset`.
    pub fn chunk_pages(&self, offset: u64) -> Result<(ChunkHeaderV4, Vec<PageV4>)> {
        let (h, data_at) = self.chunk_header(offset)?;
        let mut r = self.slice(data_at, data_at + h.data_size as u64, "chunk data")?;
        let compression = Compression::from_code(h.compression as i16)
            .filter(|c| codec::supports_compression(*c))
            .ok_or_else(|| {
                Error::unsupported(format!(
                    "v4 reader: compression code {} (chunk at {offset})",
                    h.compression
                ))
            })?;
        let is_time = h.chunk_type & TIME_COLUMN_MASK != 0;
        let is_value = h.chunk_type & VALUE_COLUMN_MASK != 0;
        let data_type = if is_time {
            None
        } else {
            Some(DataType::from_code(h.type_code as i16).ok_or_else(|| {
                Error::format(
                    offset,
                    format_args!("a known data type, found code {}", h.type_code),
                )
            })?)
        };
        if is_time && h.type_code != VECTOR_TYPE {
            return Err(Error::format(offset, "a time chunk of type VECTOR"));
        }
        let encoding = Encoding::from_code(h.encoding as i16).ok_or_else(|| {
            Error::unsupported(format!(
                "v4 reader: encoding code {} (chunk at {offset})",
                h.encoding
            ))
        })?;
        let mut pages = Vec::new();
        while !r.is_empty() {
            let page_at = r.offset();
            let unc = r.read_uvarint("page uncompressed size")? as usize;
            if unc == 0 {
                if !is_value {
                    return Err(Error::format(
                        page_at,
                        "an empty page only in a value chunk",
                    ));
                }
                pages.push(PageV4 {
                    offset: page_at,
                    times: Vec::new(),
                    values: Vec::new(),
                    statistics: None,
                    empty: true,
                });
                continue;
            }
            let comp = r.read_uvarint("page compressed size")? as usize;
            let statistics = if h.single_page() {
                None
            } else {
                Some(super::statistics::StatisticsV4::deserialize(
                    &mut r,
                    h.type_code,
                )?)
            };
            let body_at = r.offset();
            let raw = r.take(comp, "page body")?;
            let body = compression::decompress_v4(compression, raw, unc, body_at)?;
            let ctx = |e: Error| Error::format(page_at, format_args!("a decodable page: {e}"));
            let mut page = PageV4 {
                offset: page_at,
                times: Vec::new(),
                values: Vec::new(),
                statistics,
                empty: false,
            };
            if is_time {
                encoding::decode_times(&body, &mut page.times).map_err(ctx)?;
            } else if is_value {
                let dt = data_type.expect("value chunk type");
                let mut br = ByteReader::new(&body, 0);
                let rows = br.read_i32("value page row count").map_err(ctx)?;
                if rows < 0 || rows as usize > body.len() * 8 {
                    return Err(Error::format(
                        page_at,
                        format_args!("a value page row count, found {rows}"),
                    ));
                }
                let rows = rows as usize;
                let bitmap = br
                    .take(rows.div_ceil(8), "value page bitmap")
                    .map_err(ctx)?;
                let present = (0..rows)
                    .filter(|i| bitmap[i / 8] & (0x80 >> (i % 8)) != 0)
                    .count();
                let mut col = Column::new(dt);
                codec::decode_values(encoding, dt, br.rest(), present, &mut col).map_err(ctx)?;
                let mut k = 0;
                for i in 0..rows {
                    if bitmap[i / 8] & (0x80 >> (i % 8)) != 0 {
                        page.values.push(col.get(k));
                        k += 1;
                    } else {
                        page.values.push(None);
                    }
                }
            } else {
                let dt = data_type.expect("chunk type");
                let mut br = ByteReader::new(&body, 0);
                let tlen = br.read_uvarint("page time column size").map_err(ctx)? as usize;
                let tbytes = br.take(tlen, "page time column").map_err(ctx)?;
                encoding::decode_times(tbytes, &mut page.times).map_err(ctx)?;
                let mut col = Column::new(dt);
                codec::decode_values(encoding, dt, br.rest(), page.times.len(), &mut col)
                    .map_err(ctx)?;
                page.values = (0..page.times.len()).map(|i| col.get(i)).collect();
            }
            pages.push(page);
        }
        Ok((h, pages))
    }

    /// The points of one series of `device` (nulls of aligned series left out), in
    /// file order. `time_series` is the device's aligned time column, needed for
    /// aligned value series.
    pub fn series_points(
        &self,
        ts: &TimeseriesMetadataV4,
        time_series: Option<&TimeseriesMetadataV4>,
    ) -> Result<Vec<(i64, Value)>> {
        let mut out = Vec::new();
        if ts.mask() & VALUE_COLUMN_MASK == 0 {
            for (off, _) in &ts.chunks {
                let (_, pages) = self.chunk_pages(*off)?;
                for p in pages {
                    for (t, v) in p.times.into_iter().zip(p.values) {
                        out.push((t, v.expect("non-aligned values are present")));
                    }
                }
            }
            return Ok(out);
        }
        let tts = time_series.ok_or_else(|| {
            Error::format(
                ts.offset,
                format_args!("the aligned time column of value series {}", ts.measurement),
            )
        })?;
        for (off, _) in &ts.chunks {
            // The time chunk of this value chunk's chunk group: the last one before it.
            let toff = tts
                .chunks
                .iter()
                .map(|c| c.0)
                .filter(|o| o < off)
                .max()
                .ok_or_else(|| Error::format(*off, "a time chunk before this value chunk"))?;
            let (_, tpages) = self.chunk_pages(toff)?;
            let (_, vpages) = self.chunk_pages(*off)?;
            if vpages.is_empty() {
                continue; // an empty value chunk: all null
            }
            if vpages.len() != tpages.len() {
                return Err(Error::format(
                    *off,
                    format_args!(
                        "{} value pages as in the time chunk, found {}",
                        tpages.len(),
                        vpages.len()
                    ),
                ));
            }
            for (tp, vp) in tpages.iter().zip(vpages) {
                if vp.empty {
                    continue;
                }
                if vp.values.len() != tp.times.len() {
                    return Err(Error::format(
                        vp.offset,
                        format_args!(
                            "{} rows as the time page, found {}",
                            tp.times.len(),
                            vp.values.len()
                        ),
                    ));
                }
                for (t, v) in tp.times.iter().zip(vp.values) {
                    if let Some(v) = v {
                        out.push((*t, v));
                    }
                }
            }
        }
        Ok(out)
    }
}
