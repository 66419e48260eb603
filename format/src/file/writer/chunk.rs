//! The chunk and page writer of one series (Java `ChunkWriterImpl` + `PageWriter`).
//!
//! Points go straight into the page's two column streams (time: TS_2DIFF INT64, value:
//! the schema's encoding); the page statistics are updated per point. After every write
//! call the page is sealed by Java's rule (spec §7.2). A sealed page (header + body,
//! compressed as a whole) is appended to the chunk's page buffer, which the file writer
//! copies to the output when the chunk group is flushed.

use crate::basic::{Column, Compression, DataType, Encoding, Value};
use crate::compression;
use crate::encoding::ts2diff::LongDeltaEncoder;
use crate::encoding::{self, BatchResult, Encoder};
use crate::errors::{Error, Result};
use crate::file::properties::MeasurementSchema;
use crate::statistics::Statistics;
use crate::util::io;

/// Java's `MINIMUM_RECORD_COUNT_FOR_CHECK`: the first page-size check happens here.
const MIN_POINTS_FOR_SIZE_CHECK: i64 = 1500;
/// Uncompressed column streams at least this large are moved into the page list
/// rather than copied.
const MOVE_THRESHOLD: usize = 4096;
/// `PageHeader.calculatePageHeaderSizeWithoutStatistics()`: the two `i32` sizes.
const PAGE_HEADER_SIZES: usize = 8;

/// Whether points of this schema may be staged: fixed-width values whose encoder
/// cannot fail (REGULAR can, when its data is no progression).
pub(crate) fn stageable(schema: &MeasurementSchema) -> bool {
    schema.data_type != DataType::TEXT && schema.encoding != Encoding::REGULAR
}

/// The bits a fixed-width value is staged as (`None` for TEXT).
#[inline]
pub(crate) fn stage_bits(v: &Value) -> Option<u64> {
    Some(match v {
        Value::Boolean(b) => *b as u64,
        Value::Int32(x) => *x as u32 as u64,
        Value::Int64(x) => *x as u64,
        Value::Float(x) => x.to_bits() as u64,
        Value::Double(x) => x.to_bits(),
        Value::Text(_) => return None,
    })
}

/// Buffers shared by the chunk writers of one file writer.
pub(crate) struct Scratch {
    /// A page body before compression.
    body: Vec<u8>,
    /// The Snappy compressor, reused across pages.
    snappy: snap::raw::Encoder,
    /// A compressed page body before it is appended to the chunk. Snappy's output room:
    /// its length only grows, so it is not zeroed again for every page.
    compressed: Vec<u8>,
    /// One staged column, gathered into its value type.
    col: Gathered,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            body: Vec::new(),
            snappy: snap::raw::Encoder::new(),
            compressed: Vec::new(),
            col: Gathered::default(),
        }
    }
}

/// A staged column's values, by type (see [`ChunkWriter::write_staged`]).
#[derive(Default)]
struct Gathered {
    bools: Vec<bool>,
    i32s: Vec<i32>,
    i64s: Vec<i64>,
    f32s: Vec<f32>,
    f64s: Vec<f64>,
}

/// A value type written in runs: its encoder and statistics calls.
trait RunValue: Sized {
    fn encode(enc: &mut dyn Encoder, v: &[Self], out: &mut Vec<u8>) -> BatchResult;
    fn update(stats: &mut Statistics, ts: &[i64], v: &[Self]);
    /// [`RunValue::update`] of points whose times do not decrease.
    fn update_sorted(stats: &mut Statistics, ts: &[i64], v: &[Self]) {
        Self::update(stats, ts, v)
    }
}

macro_rules! run_value {
    ($t:ty, $enc:ident, $upd:ident $(, $sorted:ident)?) => {
        impl RunValue for $t {
            #[inline]
            fn encode(enc: &mut dyn Encoder, v: &[Self], out: &mut Vec<u8>) -> BatchResult {
                enc.$enc(v, out)
            }
            #[inline]
            fn update(stats: &mut Statistics, ts: &[i64], v: &[Self]) {
                stats.$upd(ts, v)
            }
            $(
            #[inline]
            fn update_sorted(stats: &mut Statistics, ts: &[i64], v: &[Self]) {
                stats.$sorted(ts, v)
            }
            )?
        }
    };
}

run_value!(bool, encode_bools, update_bools);
run_value!(i32, encode_i32s, update_i32s, update_sorted_i32s);
run_value!(i64, encode_i64s, update_i64s, update_sorted_i64s);
run_value!(f32, encode_f32s, update_f32s, update_sorted_f32s);
run_value!(f64, encode_f64s, update_f64s, update_sorted_f64s);

impl RunValue for Vec<u8> {
    fn encode(enc: &mut dyn Encoder, v: &[Self], out: &mut Vec<u8>) -> BatchResult {
        for (k, x) in v.iter().enumerate() {
            enc.encode_binary(x, out).map_err(|e| (k, e))?;
        }
        Ok(())
    }
    fn update(stats: &mut Statistics, ts: &[i64], v: &[Self]) {
        stats.update_texts(ts, v)
    }
}

/// Writer of one chunk: the open page and the sealed pages of the chunk.
pub(crate) struct ChunkWriter {
    data_type: DataType,
    encoding: Encoding,
    compression: Compression,
    float_precision: u32,
    /// The time column is always TS_2DIFF INT64 (`encoding::time_encoder`); held by
    /// value so the per-point call is static and inlined.
    time_enc: LongDeltaEncoder,
    value_enc: Box<dyn Encoder>,
    time_out: Vec<u8>,
    value_out: Vec<u8>,
    page_stats: Statistics,
    chunk_stats: Statistics,
    /// Bytes of the sealed pages (headers and bodies, back to back) are `parts` in
    /// order followed by `pages`. Large uncompressed column streams are moved into
    /// `parts` instead of being copied.
    parts: Vec<Vec<u8>>,
    pages: Vec<u8>,
    /// Total bytes of the sealed pages.
    pages_len: usize,
    num_pages: u32,
    /// Point count at which the page size is checked next (Java `int`).
    next_check: i64,
    max_points: i64,
    page_size: i64,
}

impl ChunkWriter {
    /// A fresh writer with fresh encoders, as Java creates one per series per flush.
    pub(crate) fn new(
        schema: &MeasurementSchema,
        page_size: usize,
        max_points: usize,
        float_precision: u32,
    ) -> Result<Self> {
        let value_enc = encoding::get_encoder(schema.encoding, schema.data_type, float_precision)?;
        schema.compression.check()?;
        Ok(ChunkWriter {
            data_type: schema.data_type,
            encoding: schema.encoding,
            compression: schema.compression,
            float_precision,
            time_enc: LongDeltaEncoder::new(),
            value_enc,
            time_out: Vec::new(),
            value_out: Vec::new(),
            page_stats: Statistics::new(schema.data_type),
            chunk_stats: Statistics::new(schema.data_type),
            parts: Vec::new(),
            pages: Vec::new(),
            pages_len: 0,
            num_pages: 0,
            next_check: MIN_POINTS_FOR_SIZE_CHECK,
            max_points: i64::try_from(max_points).unwrap_or(i64::MAX),
            page_size: i64::try_from(page_size).unwrap_or(i64::MAX),
        })
    }

    /// Points in the open page.
    #[cfg(test)]
    pub(crate) fn page_points(&self) -> i64 {
        self.page_stats.count
    }

    /// Statistics of the sealed pages (the chunk's statistics once the last page is sealed).
    pub(crate) fn chunk_stats(&self) -> &Statistics {
        &self.chunk_stats
    }

    /// Takes the chunk statistics, leaving empty ones.
    pub(crate) fn take_chunk_stats(&mut self) -> Statistics {
        std::mem::replace(&mut self.chunk_stats, Statistics::new(self.data_type))
    }

    /// The sealed pages' bytes, in pieces to be written in order.
    pub(crate) fn page_parts(&self) -> impl Iterator<Item = &[u8]> {
        self.parts
            .iter()
            .map(|p| p.as_slice())
            .chain(std::iter::once(self.pages.as_slice()))
    }

    /// Total bytes of the sealed pages (`ChunkHeader.dataSize`).
    pub(crate) fn pages_len(&self) -> usize {
        self.pages_len
    }

    /// Number of sealed pages.
    pub(crate) fn num_pages(&self) -> u32 {
        self.num_pages
    }

    /// Value encoding of the chunk.
    pub(crate) fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Compression of the chunk's pages.
    pub(crate) fn compression(&self) -> Compression {
        self.compression
    }

    /// `PageWriter.estimateMaxMemSize()`: stream bytes plus the encoders' estimates.
    fn page_estimate(&self) -> i64 {
        (self.time_out.len()
            + self.value_out.len()
            + self.time_enc.max_byte_size()
            + self.value_enc.max_byte_size()) as i64
    }

    /// `ChunkWriterImpl.estimateMaxSeriesMemSize()` (spec §7.3).
    pub(crate) fn memory_estimate(&self) -> i64 {
        self.page_estimate()
            + (self.pages_len + PAGE_HEADER_SIZES + self.page_stats.serialized_size()) as i64
    }

    /// Bytes held by the buffers (capacity), for diagnostics.
    #[cfg(test)]
    pub(crate) fn allocated(&self) -> usize {
        self.time_out.capacity()
            + self.value_out.capacity()
            + self.pages.capacity()
            + self.parts.iter().map(|p| p.capacity()).sum::<usize>()
    }

    /// Writes one point. The value's type was checked by the caller.
    #[inline]
    pub(crate) fn write_value(&mut self, t: i64, v: &Value, scratch: &mut Scratch) -> Result<()> {
        match v {
            Value::Boolean(x) => {
                self.value_enc.encode_bool(*x, &mut self.value_out)?;
                self.page_stats.update_bool(t, *x);
            }
            Value::Int32(x) => {
                self.value_enc.encode_i32(*x, &mut self.value_out)?;
                self.page_stats.update_i32(t, *x);
            }
            Value::Int64(x) => {
                self.value_enc.encode_i64(*x, &mut self.value_out)?;
                self.page_stats.update_i64(t, *x);
            }
            Value::Float(x) => {
                self.value_enc.encode_f32(*x, &mut self.value_out)?;
                self.page_stats.update_f32(t, *x);
            }
            Value::Double(x) => {
                self.value_enc.encode_f64(*x, &mut self.value_out)?;
                self.page_stats.update_f64(t, *x);
            }
            Value::Text(x) => {
                self.value_enc.encode_binary(x, &mut self.value_out)?;
                self.page_stats.update_text(t, x);
            }
        }
        self.time_enc.encode(t, &mut self.time_out);
        self.check_page(scratch)
    }

    /// Writes one column of staged rows (`vals` holds `width` value bits per row, see
    /// [`stage_bits`]) point by point, each point followed by its page check: the same
    /// as one `write_value` call per point.
    pub(crate) fn write_staged(
        &mut self,
        times: &[i64],
        vals: &[u64],
        width: usize,
        col: usize,
        scratch: &mut Scratch,
    ) -> Result<()> {
        let width = width.max(1);
        let rows = vals.len() / width;
        let mut g = std::mem::take(&mut scratch.col);
        macro_rules! gather {
            ($buf:ident, |$b:ident| $conv:expr) => {{
                g.$buf.clear();
                g.$buf.extend((0..rows).map(|r| {
                    let $b = vals.get(r * width + col).copied().unwrap_or(0);
                    $conv
                }));
                self.write_run(times, &g.$buf, scratch)
            }};
        }
        let r = match self.data_type.storage_type() {
            DataType::BOOLEAN => gather!(bools, |b| b != 0),
            DataType::INT32 => gather!(i32s, |b| b as u32 as i32),
            DataType::INT64 => gather!(i64s, |b| b as i64),
            DataType::FLOAT => gather!(f32s, |b| f32::from_bits(b as u32)),
            DataType::DOUBLE => gather!(f64s, |b| f64::from_bits(b)),
            _ => Err(Error::invalid("TEXT points cannot be staged")),
        };
        scratch.col = g;
        r
    }

    /// Writes points with a page check after each, as one `write_value` call per point
    /// would: the points go through the encoders in runs that end where a page check
    /// can act (the point limit or the next size check).
    fn write_run<T: RunValue>(
        &mut self,
        times: &[i64],
        vals: &[T],
        scratch: &mut Scratch,
    ) -> Result<()> {
        let n = times.len().min(vals.len());
        let mut i = 0;
        while i < n {
            let count = self.page_stats.count;
            let to_limit = if count < self.max_points {
                self.max_points - count
            } else {
                i64::MAX
            };
            let to_check = self.next_check.saturating_sub(count).max(1);
            let room = usize::try_from(to_limit.min(to_check)).unwrap_or(usize::MAX);
            let k = (n - i).min(room);
            self.append(&times[i..i + k], &vals[i..i + k], false)
                .map_err(|(_, e)| e)?;
            i += k;
            self.check_page(scratch)?;
        }
        Ok(())
    }

    /// Encodes points and adds them to the page statistics, without page checks
    /// (`sorted`: the times do not decrease). On a refusal the points before the refused
    /// one stay written.
    #[inline]
    fn append<T: RunValue>(
        &mut self,
        times: &[i64],
        vals: &[T],
        sorted: bool,
    ) -> std::result::Result<(), (usize, Error)> {
        let r = T::encode(&mut *self.value_enc, vals, &mut self.value_out);
        let done = match &r {
            Ok(()) => times.len(),
            Err((k, _)) => *k,
        };
        self.time_enc.encode_run(&times[..done], &mut self.time_out);
        if sorted {
            T::update_sorted(&mut self.page_stats, &times[..done], &vals[..done]);
        } else {
            T::update(&mut self.page_stats, &times[..done], &vals[..done]);
        }
        r
    }

    /// Writes a batch (one tablet column): all points, then one page check, as Java's
    /// batch write does. Types and lengths were checked by the caller, and that the times
    /// do not decrease.
    ///
    /// On an encoder refusal the points before the refused one stay written; their
    /// number comes with the error.
    pub(crate) fn write_batch(
        &mut self,
        times: &[i64],
        values: &Column,
        scratch: &mut Scratch,
    ) -> std::result::Result<(), (usize, Error)> {
        let n = times.len().min(values.len());
        let times = &times[..n];
        // Room for the batch's streams at once rather than by doubling from empty: a byte a
        // time, and the plain width of a fixed-width value (what most pages of those
        // encodings take at most).
        let width = match values {
            Column::Boolean(_) => 1,
            Column::Int32(_) | Column::Float(_) => 4,
            Column::Int64(_) | Column::Double(_) => 8,
            Column::Text(_) => 0,
        };
        self.time_out.reserve(n);
        self.value_out.reserve(n * width);
        match values {
            Column::Boolean(v) => self.append(times, &v[..n], true),
            Column::Int32(v) => self.append(times, &v[..n], true),
            Column::Int64(v) => self.append(times, &v[..n], true),
            Column::Float(v) => self.append(times, &v[..n], true),
            Column::Double(v) => self.append(times, &v[..n], true),
            Column::Text(v) => self.append(times, &v[..n], true),
        }?;
        self.check_page(scratch).map_err(|e| (times.len(), e))
    }

    /// Java's `checkPageSizeAndMayOpenANewPage` (spec §7.2).
    #[inline]
    fn check_page(&mut self, scratch: &mut Scratch) -> Result<()> {
        let points = self.page_stats.count;
        if points == self.max_points || points >= self.next_check {
            self.check_page_slow(scratch)
        } else {
            Ok(())
        }
    }

    #[cold]
    #[inline(never)]
    fn check_page_slow(&mut self, scratch: &mut Scratch) -> Result<()> {
        let points = self.page_stats.count;
        if points == self.max_points {
            self.seal_page(scratch)
        } else if points >= self.next_check {
            let est = self.page_estimate();
            if est > self.page_size {
                let r = self.seal_page(scratch);
                self.next_check = MIN_POINTS_FOR_SIZE_CHECK;
                r
            } else {
                // (int) (((float) pageSize / (float) est) * (float) points)
                let next = (self.page_size as f32 / est as f32) * points as f32;
                self.next_check = next as i32 as i64;
                Ok(())
            }
        } else {
            Ok(())
        }
    }

    /// Seals the open page if it holds points (`sealCurrentPage`).
    pub(crate) fn seal_current_page(&mut self, scratch: &mut Scratch) -> Result<()> {
        if self.page_stats.count > 0 {
            self.seal_page(scratch)
        } else {
            Ok(())
        }
    }

    /// Seals the open page into the page buffer. The open page is reset whatever
    /// happens; on failure its points are dropped, the encoders are replaced by fresh
    /// ones and the page buffer is left as it was.
    fn seal_page(&mut self, scratch: &mut Scratch) -> Result<()> {
        let r = self.seal_page_inner(scratch);
        let dropped = self.page_stats.count;
        self.time_out.clear();
        self.value_out.clear();
        self.page_stats = Statistics::new(self.data_type);
        if let Err(e) = r {
            self.time_enc = LongDeltaEncoder::new();
            if let Ok(enc) =
                encoding::get_encoder(self.encoding, self.data_type, self.float_precision)
            {
                self.value_enc = enc;
            }
            return Err(Error::invalid(format!(
                "sealing a page of {dropped} points failed, the page was dropped: {e}"
            )));
        }
        Ok(())
    }

    fn seal_page_inner(&mut self, scratch: &mut Scratch) -> Result<()> {
        if self.page_stats.count == 0 {
            return Ok(());
        }
        self.time_enc.flush_block(&mut self.time_out);
        self.value_enc.flush(&mut self.value_out)?;
        let tlen = self.time_out.len();
        let body_len = u32::try_from(tlen)
            .ok()
            .map(|t| io::uvarint_len(t) + tlen + self.value_out.len())
            .filter(|n| *n <= i32::MAX as usize)
            .ok_or_else(|| Error::invalid("a page body must stay below 2 GiB"))?;
        let header_len = PAGE_HEADER_SIZES + self.page_stats.serialized_size();
        if self.pages_len + header_len + body_len > i32::MAX as usize {
            return Err(Error::invalid(
                "a chunk's pages must stay below 2 GiB (ChunkHeader.dataSize is an i32)",
            ));
        }
        let start = self.pages.len();
        match self.compression {
            Compression::UNCOMPRESSED => {
                io::put_i32(&mut self.pages, body_len as i32);
                io::put_i32(&mut self.pages, body_len as i32);
                self.page_stats.serialize(&mut self.pages);
                io::put_uvarint(&mut self.pages, tlen as u32);
                for which in [0, 1] {
                    let stream = if which == 0 {
                        &mut self.time_out
                    } else {
                        &mut self.value_out
                    };
                    if stream.len() >= MOVE_THRESHOLD {
                        // Hand the stream over instead of copying it; the next page's
                        // stream starts with room for a page like this one.
                        let room = stream.len() + stream.len() / 8;
                        let moved = std::mem::replace(stream, Vec::with_capacity(room));
                        if !self.pages.is_empty() {
                            let packed = std::mem::take(&mut self.pages);
                            self.parts.push(packed);
                        }
                        self.parts.push(moved);
                    } else {
                        self.pages.extend_from_slice(stream);
                    }
                }
                self.pages_len += header_len + body_len;
            }
            codec => {
                let Scratch {
                    body,
                    snappy,
                    compressed,
                    ..
                } = scratch;
                body.clear();
                body.reserve(body_len);
                io::put_uvarint(body, tlen as u32);
                body.extend_from_slice(&self.time_out);
                body.extend_from_slice(&self.value_out);
                // The page is compressed first, so that the page buffer grows once, by
                // the page's exact size.
                let clen = if codec == Compression::SNAPPY {
                    // Raw Snappy block, with the writer's reusable compressor (its hash
                    // table is allocated once, not per page).
                    let room = snap::raw::max_compress_len(body.len());
                    if compressed.len() < room {
                        compressed.resize(room, 0);
                    }
                    snappy
                        .compress(body, compressed)
                        .map_err(|e| Error::invalid(format!("snappy compression failed: {e}")))?
                } else {
                    compressed.clear();
                    compression::compress(codec, body, compressed)?;
                    compressed.len()
                };
                if self.pages_len + header_len + clen > i32::MAX as usize {
                    return Err(Error::invalid(
                        "a chunk's pages must stay below 2 GiB (ChunkHeader.dataSize is an i32)",
                    ));
                }
                self.pages.reserve(header_len + clen);
                io::put_i32(&mut self.pages, body_len as i32);
                io::put_i32(&mut self.pages, clen as i32);
                self.page_stats.serialize(&mut self.pages);
                self.pages.extend_from_slice(&compressed[..clen]);
                debug_assert_eq!(self.pages.len() - start, header_len + clen);
                self.pages_len += header_len + clen;
            }
        }
        self.chunk_stats.merge(&self.page_stats)?;
        self.num_pages += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::metadata::PageHeader;
    use crate::util::io::ByteReader;

    fn schema(dt: DataType, enc: Encoding, c: Compression) -> MeasurementSchema {
        MeasurementSchema::new("s", dt, enc, c)
    }

    fn pages_of(w: &ChunkWriter) -> Vec<PageHeader> {
        let bytes: Vec<u8> = w.page_parts().flatten().copied().collect();
        assert_eq!(bytes.len(), w.pages_len());
        let mut r = ByteReader::new(&bytes, 0);
        let mut out = Vec::new();
        while !r.is_empty() {
            let h = PageHeader::deserialize(&mut r, w.data_type).unwrap();
            r.take(h.compressed_size as usize, "body").unwrap();
            out.push(h);
        }
        out
    }

    #[test]
    fn spec_size_rule_int64_plain() {
        // §7.2 worked example: INT64 PLAIN, times 0,1,2,...: pages of 7989, 7989, 4022.
        let s = schema(DataType::INT64, Encoding::PLAIN, Compression::UNCOMPRESSED);
        let mut w = ChunkWriter::new(&s, 65536, 1_048_576, 2).unwrap();
        let mut scratch = Scratch::default();
        for t in 0..20000i64 {
            w.write_value(t, &Value::Int64(t * 3), &mut scratch)
                .unwrap();
        }
        w.seal_current_page(&mut scratch).unwrap();
        let counts: Vec<i64> = pages_of(&w).iter().map(|h| h.statistics.count).collect();
        assert_eq!(counts, [7989, 7989, 4022]);
        assert_eq!(w.num_pages(), 3);
        assert_eq!(w.chunk_stats().count, 20000);
        assert_eq!(w.chunk_stats().end_time, 19999);
    }

    #[test]
    fn spec_size_rule_text_plain() {
        // §7.2: TEXT PLAIN "x"+t gets 7381, 6813, 5806.
        let s = schema(DataType::TEXT, Encoding::PLAIN, Compression::SNAPPY);
        let mut w = ChunkWriter::new(&s, 65536, 1_048_576, 2).unwrap();
        let mut scratch = Scratch::default();
        for t in 0..20000i64 {
            let v = Value::Text(format!("x{t}").into_bytes());
            w.write_value(t, &v, &mut scratch).unwrap();
        }
        w.seal_current_page(&mut scratch).unwrap();
        let counts: Vec<i64> = pages_of(&w).iter().map(|h| h.statistics.count).collect();
        assert_eq!(counts, [7381, 6813, 5806]);
    }

    #[test]
    fn point_limit_is_an_equality_check_per_call() {
        let s = schema(DataType::INT32, Encoding::PLAIN, Compression::UNCOMPRESSED);
        let mut w = ChunkWriter::new(&s, 65536, 200, 2).unwrap();
        let mut scratch = Scratch::default();
        let times: Vec<i64> = (0..500).collect();
        let vals = Column::Int32((0..500).collect());
        w.write_batch(&times, &vals, &mut scratch)
            .map_err(|e| e.1)
            .unwrap();
        assert_eq!(w.num_pages(), 0, "a 500-row batch overshoots the 200 limit");
        assert_eq!(w.page_points(), 500);
        let times: Vec<i64> = (500..700).collect();
        let vals = Column::Int32((0..200).collect());
        w.seal_current_page(&mut scratch).unwrap();
        w.write_batch(&times, &vals, &mut scratch)
            .map_err(|e| e.1)
            .unwrap();
        assert_eq!(w.num_pages(), 2, "exactly 200 points seal the page");
        assert_eq!(w.page_points(), 0);
    }

    #[test]
    fn memory_estimate_counts_pages_and_stats() {
        let s = schema(DataType::INT64, Encoding::PLAIN, Compression::UNCOMPRESSED);
        let mut w = ChunkWriter::new(&s, 65536, 3, 2).unwrap();
        let mut scratch = Scratch::default();
        // Empty: TS_2DIFF INT64 estimate 16 (empty block) + PLAIN 0 + 8 + 64 stats.
        assert_eq!(w.memory_estimate(), 16 + 8 + 64);
        for t in 0..3 {
            w.write_value(t, &Value::Int64(t), &mut scratch).unwrap();
        }
        assert_eq!(w.num_pages(), 1);
        assert_eq!(w.memory_estimate(), 16 + w.pages_len() as i64 + 8 + 64);
        assert!(w.allocated() >= w.pages_len());
    }
}
