//! Series reading: `TimeseriesMetadata` → `ChunkMetadata` → chunk → pages → points
//! (spec §8.3), with time-range pruning by statistics.

use super::source::{read_range, read_range_into};
use super::{Source, TsFileReader};
use crate::basic::{Column, Compression, DataType, Encoding, Value};
use crate::encoding::{decode_times, decode_values};
use crate::errors::{Error, Result};
use crate::file::metadata::{ChunkHeader, ChunkMetadata, PageHeader, TimeseriesMetadata};
use crate::file::HEADER_LEN;
use crate::statistics::Statistics;
use crate::util::io::ByteReader;

/// The decoded points of one page: parallel time and value columns. Reused across
/// pages to avoid per-page allocation.
#[derive(Debug, Clone, PartialEq)]
pub struct PageData {
    /// Timestamps, in stored order.
    pub times: Vec<i64>,
    /// Values, one per timestamp.
    pub values: Column,
}

impl PageData {
    /// Empty page data for `data_type`.
    pub fn new(data_type: DataType) -> Self {
        PageData {
            times: Vec::new(),
            values: Column::new(data_type),
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

    /// Point `i` as `(time, value)`.
    pub fn point(&self, i: usize) -> Option<(i64, Value)> {
        Some((*self.times.get(i)?, self.values.get(i)?))
    }

    /// Empties both columns, switching the value column to `data_type` (keeps the
    /// allocations when the type is unchanged).
    pub fn reset(&mut self, data_type: DataType) {
        self.times.clear();
        match &mut self.values {
            Column::Boolean(v) if data_type == DataType::BOOLEAN => v.clear(),
            Column::Int32(v) if data_type == DataType::INT32 => v.clear(),
            Column::Int64(v) if data_type == DataType::INT64 => v.clear(),
            Column::Float(v) if data_type == DataType::FLOAT => v.clear(),
            Column::Double(v) if data_type == DataType::DOUBLE => v.clear(),
            Column::Text(v) if data_type == DataType::TEXT => v.clear(),
            other => *other = Column::new(data_type),
        }
    }

    /// Keeps only the points with `lo <= time <= hi`, in order.
    pub fn retain_time_range(&mut self, lo: i64, hi: i64) {
        fn compact<T>(times: &[i64], vals: &mut Vec<T>, lo: i64, hi: i64) {
            let mut k = 0;
            for (i, t) in times.iter().enumerate().take(vals.len()) {
                if (lo..=hi).contains(t) {
                    vals.swap(k, i);
                    k += 1;
                }
            }
            vals.truncate(k);
        }
        if self.times.iter().all(|t| (lo..=hi).contains(t)) {
            return;
        }
        match &mut self.values {
            Column::Boolean(v) => compact(&self.times, v, lo, hi),
            Column::Int32(v) => compact(&self.times, v, lo, hi),
            Column::Int64(v) => compact(&self.times, v, lo, hi),
            Column::Float(v) => compact(&self.times, v, lo, hi),
            Column::Double(v) => compact(&self.times, v, lo, hi),
            Column::Text(v) => compact(&self.times, v, lo, hi),
        }
        self.times.retain(|t| (lo..=hi).contains(t));
    }
}

/// Turns any error from a decoder into a format error at the page's offset.
pub(crate) fn page_error(e: Error, page_offset: u64, what: &str) -> Error {
    match e {
        Error::Io(e) => Error::Io(e),
        Error::Decode { stream, at, msg } => Error::format(
            page_offset,
            format_args!("{what}: a decodable {stream} ({msg}, at byte {at} of the stream)"),
        ),
        Error::Format { offset, expected } => Error::format(
            page_offset,
            format_args!("{what}: {expected} (at byte {offset} of the page's column stream)"),
        ),
        other => Error::format(page_offset, format_args!("{what}: {other}")),
    }
}

/// Checks what a page header claims before anything relies on it: at least one
/// point, no more points than its body could encode (a TS_2DIFF time block packs at
/// most 129 timestamps into 24 header bytes; 8 per byte is a safe ceiling), and a
/// time range with `start <= end`. Keeps later statistics merges from overflowing.
pub(crate) fn check_page_header(h: &PageHeader, offset: u64) -> Result<()> {
    let s = &h.statistics;
    let max = 8 * h.uncompressed_size as i64 + 8;
    if s.count < 1 || s.count > max || s.start_time > s.end_time {
        return Err(Error::format(
            offset,
            format_args!(
                "page statistics with 1..={max} points (for a {}-byte body) and start <= end time, found count {}, times [{}, {}]",
                h.uncompressed_size, s.count, s.start_time, s.end_time
            ),
        ));
    }
    Ok(())
}

/// Largest expansion of a raw Snappy block: a 3-byte copy yields at most 64 bytes.
const SNAPPY_MAX_RATIO: u64 = 22;

/// Decompresses and decodes one page body.
///
/// `body` is the stored (compressed) body at absolute offset `body_offset`;
/// `scratch` receives the decompressed bytes; `what` describes the page for errors.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decode_page(
    compression: Compression,
    encoding: Encoding,
    data_type: DataType,
    header: &PageHeader,
    body: &[u8],
    body_offset: u64,
    scratch: &mut Vec<u8>,
    out: &mut PageData,
    what: &str,
) -> Result<()> {
    let usize_ = header.uncompressed_size as usize;
    let plain: &[u8] = match compression {
        Compression::UNCOMPRESSED => {
            if body.len() != usize_ {
                return Err(Error::format(
                    body_offset,
                    format_args!(
                        "{what}: an uncompressed body whose sizes agree, found uncompressed size {usize_} and stored size {}",
                        body.len()
                    ),
                ));
            }
            body
        }
        Compression::SNAPPY => {
            let declared = snap::raw::decompress_len(body).map_err(|e| {
                Error::format(
                    body_offset,
                    format_args!("{what}: a raw Snappy block ({e})"),
                )
            })?;
            if declared != usize_ || declared as u64 > SNAPPY_MAX_RATIO * body.len() as u64 + 8 {
                return Err(Error::format(
                    body_offset,
                    format_args!(
                        "{what}: a Snappy block of {usize_} bytes (page header) from {} stored bytes, block says {declared}",
                        body.len()
                    ),
                ));
            }
            scratch.clear();
            scratch.resize(declared, 0);
            let n = snap::raw::Decoder::new()
                .decompress(body, scratch)
                .map_err(|e| {
                    Error::format(
                        body_offset,
                        format_args!("{what}: a raw Snappy block ({e})"),
                    )
                })?;
            if n != declared {
                return Err(Error::format(
                    body_offset,
                    format_args!("{what}: {declared} decompressed bytes, got {n}"),
                ));
            }
            scratch
        }
        other => {
            return Err(Error::format(
                body_offset,
                format_args!(
                    "{what}: a supported compression (UNCOMPRESSED or SNAPPY), found {other}"
                ),
            ))
        }
    };
    let mut r = ByteReader::new(plain, 0);
    let t_len = r
        .read_uvarint("time column length")
        .map_err(|e| page_error(e, body_offset, what))?;
    let time_bytes = r
        .take(t_len as usize, "time column")
        .map_err(|e| page_error(e, body_offset, what))?;
    let value_bytes = r.rest();
    out.reset(data_type);
    decode_times(time_bytes, &mut out.times).map_err(|e| page_error(e, body_offset, what))?;
    let n = out.times.len();
    if n as i64 != header.statistics.count {
        return Err(Error::format(
            body_offset,
            format_args!(
                "{what}: as many timestamps as the page statistics count ({}), decoded {n}",
                header.statistics.count
            ),
        ));
    }
    decode_values(encoding, data_type, value_bytes, n, &mut out.values)
        .map_err(|e| page_error(e, body_offset, what))?;
    if out.values.len() != n {
        return Err(Error::format(
            body_offset,
            format_args!(
                "{what}: {n} values (one per timestamp), decoded {}",
                out.values.len()
            ),
        ));
    }
    Ok(())
}

/// Whether statistics `[start, end]` overlap the inclusive range `[lo, hi]`.
fn overlaps(s: &Statistics, lo: i64, hi: i64) -> bool {
    s.start_time <= hi && s.end_time >= lo
}

/// A chunk loaded for page iteration.
#[derive(Debug)]
struct LoadedChunk {
    header: ChunkHeader,
    offset: u64,
    data_offset: u64,
    pos: usize,
    pages: i32,
}

/// Reads one series page by page, in chunk file order; optionally restricted to an
/// inclusive time range (chunks and pages whose statistics miss it are skipped
/// without decoding).
#[derive(Debug)]
pub struct SeriesReader<'a, S> {
    file: &'a TsFileReader<S>,
    device: String,
    ts: TimeseriesMetadata,
    chunks: Vec<ChunkMetadata>,
    next_chunk: usize,
    range: Option<(i64, i64)>,
    cur: Option<LoadedChunk>,
    chunk_buf: Vec<u8>,
    scratch: Vec<u8>,
    failed: bool,
}

impl<S: Source> TsFileReader<S> {
    /// The `ChunkMetadata` list of a series, in stored order (file order for files of
    /// the Java writer).
    pub fn chunk_metadata_list(&self, ts: &TimeseriesMetadata) -> Result<Vec<ChunkMetadata>> {
        let start = ts.chunk_metadata_offset as u64;
        let size = ts.chunk_metadata_size as u64;
        if start <= self.meta_offset() {
            return Err(Error::format(
                start,
                format_args!(
                    "chunk metadata of {:?} after the separator at {}",
                    ts.measurement,
                    self.meta_offset()
                ),
            ));
        }
        let buf = read_range(
            &self.src,
            start,
            size,
            self.metadata_pos,
            "chunk metadata list",
        )?;
        let mut r = ByteReader::new(&buf, start);
        let mut out = Vec::new();
        let mut count = 0i64;
        while !r.is_empty() {
            let at = r.offset();
            let cm = ChunkMetadata::deserialize(&mut r)?;
            if cm.measurement != ts.measurement || cm.data_type != ts.data_type {
                return Err(Error::format(
                    at,
                    format_args!(
                        "chunk metadata of {:?} ({}), found {:?} ({})",
                        ts.measurement, ts.data_type, cm.measurement, cm.data_type
                    ),
                ));
            }
            let off = cm.offset_of_chunk_header;
            if off < HEADER_LEN as i64 || off as u64 >= self.meta_offset() {
                return Err(Error::format(
                    at,
                    format_args!(
                        "a chunk header offset in the data section [12, {}), found {off}",
                        self.meta_offset()
                    ),
                ));
            }
            count = count.wrapping_add(cm.statistics.count);
            out.push(cm);
        }
        if count != ts.statistics.count {
            return Err(Error::format(
                start,
                format_args!(
                    "chunk metadata of {:?} whose point counts add up to the series count {}, found {count}",
                    ts.measurement, ts.statistics.count
                ),
            ));
        }
        Ok(out)
    }

    /// Reads and checks the chunk header of `cm` into a [`ChunkHeader`]; returns it
    /// with the offset of its first page.
    pub fn read_chunk_header(&self, cm: &ChunkMetadata) -> Result<(ChunkHeader, u64)> {
        let off = cm.offset_of_chunk_header as u64;
        let hlen = ChunkHeader::serialized_size(&cm.measurement) as u64;
        let buf = read_range(&self.src, off, hlen, self.meta_offset(), "chunk header")?;
        let mut r = ByteReader::new(&buf, off);
        let header = ChunkHeader::deserialize(&mut r)?;
        if header.measurement != cm.measurement || header.data_type != cm.data_type {
            return Err(Error::format(
                off,
                format_args!(
                    "the chunk header of {:?} ({}) that the chunk metadata points to, found {:?} ({})",
                    cm.measurement, cm.data_type, header.measurement, header.data_type
                ),
            ));
        }
        let data_offset = off + hlen;
        if data_offset + header.data_size as u64 > self.meta_offset() {
            return Err(Error::format(
                off,
                format_args!(
                    "a chunk whose {} data bytes end before the separator at {}",
                    header.data_size,
                    self.meta_offset()
                ),
            ));
        }
        Ok((header, data_offset))
    }

    /// A reader over every point of a series given its metadata.
    pub fn series_reader_for(
        &self,
        device: &str,
        ts: &TimeseriesMetadata,
    ) -> Result<SeriesReader<'_, S>> {
        let mut chunks = self.chunk_metadata_list(ts)?;
        chunks.sort_by_key(|c| c.offset_of_chunk_header);
        Ok(SeriesReader {
            file: self,
            device: device.to_string(),
            ts: ts.clone(),
            chunks,
            next_chunk: 0,
            range: None,
            cur: None,
            chunk_buf: Vec::new(),
            scratch: Vec::new(),
            failed: false,
        })
    }

    /// A reader over every point of `device.measurement` (`None` if not in the file).
    pub fn series_reader(
        &self,
        device: &str,
        measurement: &str,
    ) -> Result<Option<SeriesReader<'_, S>>> {
        match self.timeseries_metadata(device, measurement)? {
            Some(ts) => Ok(Some(self.series_reader_for(device, &ts)?)),
            None => Ok(None),
        }
    }

    /// A reader over the points of `device.measurement` with `lo <= time <= hi`.
    /// Chunks and pages whose statistics do not overlap the range are not decoded.
    pub fn query(
        &self,
        device: &str,
        measurement: &str,
        lo: i64,
        hi: i64,
    ) -> Result<Option<SeriesReader<'_, S>>> {
        Ok(self
            .series_reader(device, measurement)?
            .map(|r| r.with_time_range(lo, hi)))
    }
}

impl<'a, S: Source> SeriesReader<'a, S> {
    /// Restricts the reader to `lo <= time <= hi`.
    pub fn with_time_range(mut self, lo: i64, hi: i64) -> Self {
        self.range = Some((lo, hi));
        self
    }

    /// The series' metadata.
    pub fn metadata(&self) -> &TimeseriesMetadata {
        &self.ts
    }

    /// The device.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// The series' chunk metadata, in file order.
    pub fn chunks(&self) -> &[ChunkMetadata] {
        &self.chunks
    }

    /// Decodes the next page (restricted to the time range) into `out`. Returns
    /// `false` when the series is exhausted. A page may come back empty after range
    /// filtering.
    pub fn next_page(&mut self, out: &mut PageData) -> Result<bool> {
        if self.failed {
            return Ok(false);
        }
        let r = self.next_page_inner(out);
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn next_page_inner(&mut self, out: &mut PageData) -> Result<bool> {
        let (lo, hi) = self.range.unwrap_or((i64::MIN, i64::MAX));
        loop {
            if self.cur.is_none() {
                let Some(cm) = self.chunks.get(self.next_chunk) else {
                    return Ok(false);
                };
                self.next_chunk += 1;
                if !overlaps(&cm.statistics, lo, hi) {
                    continue;
                }
                let (header, data_offset) = self.file.read_chunk_header(cm)?;
                read_range_into(
                    &self.file.src,
                    data_offset,
                    header.data_size as u64,
                    self.file.meta_offset(),
                    "chunk data",
                    &mut self.chunk_buf,
                )?;
                self.cur = Some(LoadedChunk {
                    header,
                    offset: cm.offset_of_chunk_header as u64,
                    data_offset,
                    pos: 0,
                    pages: 0,
                });
            }
            let Some(ch) = self.cur.as_mut() else {
                continue;
            };
            if ch.pos >= self.chunk_buf.len() {
                if ch.pages != ch.header.num_pages {
                    return Err(Error::format(
                        ch.offset,
                        format_args!(
                            "a chunk of {} pages (chunk header), found {} in its {} data bytes",
                            ch.header.num_pages,
                            ch.pages,
                            self.chunk_buf.len()
                        ),
                    ));
                }
                self.cur = None;
                continue;
            }
            let page_off = ch.data_offset + ch.pos as u64;
            let mut r = ByteReader::new(&self.chunk_buf[ch.pos..], page_off);
            let header = PageHeader::deserialize(&mut r, ch.header.data_type)?;
            check_page_header(&header, page_off)?;
            let body_offset = r.offset();
            let body = r.take(
                header.compressed_size as usize,
                "page body (within the chunk's data size)",
            )?;
            ch.pos += r.position();
            ch.pages += 1;
            if ch.pages > ch.header.num_pages {
                return Err(Error::format(
                    page_off,
                    format_args!(
                        "at most {} pages in the chunk at {} (chunk header)",
                        ch.header.num_pages, ch.offset
                    ),
                ));
            }
            if !overlaps(&header.statistics, lo, hi) {
                continue;
            }
            let what = format!(
                "page {} of chunk {}.{} at {}",
                ch.pages - 1,
                self.device,
                ch.header.measurement,
                ch.offset
            );
            decode_page(
                ch.header.compression,
                ch.header.encoding,
                ch.header.data_type,
                &header,
                body,
                body_offset,
                &mut self.scratch,
                out,
                &what,
            )?;
            if self.range.is_some() {
                out.retain_time_range(lo, hi);
            }
            return Ok(true);
        }
    }

    /// Point-by-point iteration.
    pub fn points(self) -> SeriesPoints<'a, S> {
        let dt = self.ts.data_type;
        SeriesPoints {
            reader: self,
            page: PageData::new(dt),
            idx: 0,
        }
    }
}

/// Iterator over the `(time, value)` points of a series; yields at most one error,
/// then ends.
#[derive(Debug)]
pub struct SeriesPoints<'a, S> {
    reader: SeriesReader<'a, S>,
    page: PageData,
    idx: usize,
}

impl<S: Source> Iterator for SeriesPoints<'_, S> {
    type Item = Result<(i64, Value)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(p) = self.page.point(self.idx) {
                self.idx += 1;
                return Some(Ok(p));
            }
            self.idx = 0;
            match self.reader.next_page(&mut self.page) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
