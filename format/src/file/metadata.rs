//! The serialized structures of a TsFile, each with `serialize` and `deserialize`
//! side by side (spec §3 and §5).

use crate::basic::{Compression, DataType, Encoding};
use crate::errors::{Error, Result};
use crate::file::bloom::BloomFilter;
use crate::file::marker;
use crate::statistics::Statistics;
use crate::util::io::{self, ByteReader};

fn read_data_type(r: &mut ByteReader<'_>, what: &str) -> Result<DataType> {
    let at = r.offset();
    let code = r.read_i16(what)?;
    DataType::from_code(code)
        .filter(|t| t.in_v2())
        .ok_or_else(|| {
            Error::format(
                at,
                format_args!("{what}: a data type code 0..=5, found {code}"),
            )
        })
}

fn read_encoding(r: &mut ByteReader<'_>, what: &str) -> Result<Encoding> {
    let at = r.offset();
    let code = r.read_i16(what)?;
    Encoding::from_code(code).ok_or_else(|| {
        Error::format(
            at,
            format_args!("{what}: an encoding code 0..=7, found {code}"),
        )
    })
}

fn read_compression(r: &mut ByteReader<'_>, what: &str) -> Result<Compression> {
    let at = r.offset();
    let code = r.read_i16(what)?;
    Compression::from_code(code).ok_or_else(|| {
        Error::format(
            at,
            format_args!("{what}: a compression code 0..=6, found {code}"),
        )
    })
}

/// Header of a chunk (§3.2). The marker byte is part of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkHeader {
    /// Measurement name (no device).
    pub measurement: String,
    /// Bytes of all page headers and page bodies that follow.
    pub data_size: i32,
    /// Data type of the values.
    pub data_type: DataType,
    /// Number of pages.
    pub num_pages: i32,
    /// Page compression.
    pub compression: Compression,
    /// Encoding of the value column.
    pub encoding: Encoding,
}

impl ChunkHeader {
    /// Serialized size including the marker: `19 + len(measurement)`.
    pub fn serialized_size(measurement: &str) -> usize {
        19 + measurement.len()
    }

    /// Appends the header, marker first.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        out.push(marker::CHUNK_HEADER);
        io::put_binary(out, self.measurement.as_bytes());
        io::put_i32(out, self.data_size);
        io::put_i16(out, self.data_type.code());
        io::put_i32(out, self.num_pages);
        io::put_i16(out, self.compression.code());
        io::put_i16(out, self.encoding.code());
    }

    /// Reads a header whose marker byte was already consumed.
    pub fn deserialize_after_marker(r: &mut ByteReader<'_>) -> Result<Self> {
        let measurement = r.read_string("chunk header measurement id")?;
        let at = r.offset();
        let data_size = r.read_i32("chunk header data size")?;
        if data_size < 0 {
            return Err(Error::format(
                at,
                format_args!("chunk data size >= 0, found {data_size}"),
            ));
        }
        let data_type = read_data_type(r, "chunk header data type")?;
        let at = r.offset();
        let num_pages = r.read_i32("chunk header page count")?;
        if num_pages < 0 {
            return Err(Error::format(
                at,
                format_args!("page count >= 0, found {num_pages}"),
            ));
        }
        let compression = read_compression(r, "chunk header compression")?;
        let encoding = read_encoding(r, "chunk header encoding")?;
        Ok(ChunkHeader {
            measurement,
            data_size,
            data_type,
            num_pages,
            compression,
            encoding,
        })
    }

    /// Reads a header starting at its marker byte.
    pub fn deserialize(r: &mut ByteReader<'_>) -> Result<Self> {
        let at = r.offset();
        let m = r.read_u8("chunk header marker")?;
        if m != marker::CHUNK_HEADER {
            return Err(Error::format(
                at,
                format_args!("chunk header marker 0x01, found 0x{m:02x}"),
            ));
        }
        Self::deserialize_after_marker(r)
    }
}

/// Header of a page (§3.3).
#[derive(Debug, Clone, PartialEq)]
pub struct PageHeader {
    /// Body length before compression.
    pub uncompressed_size: i32,
    /// Body length as stored.
    pub compressed_size: i32,
    /// Statistics of the page's points.
    pub statistics: Statistics,
}

impl PageHeader {
    /// Serialized size.
    pub fn serialized_size(&self) -> usize {
        8 + self.statistics.serialized_size()
    }

    /// Appends the header.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        io::put_i32(out, self.uncompressed_size);
        io::put_i32(out, self.compressed_size);
        self.statistics.serialize(out);
    }

    /// Reads a page header of a chunk of `data_type`.
    pub fn deserialize(r: &mut ByteReader<'_>, data_type: DataType) -> Result<Self> {
        let at = r.offset();
        let uncompressed_size = r.read_i32("page header uncompressed size")?;
        let compressed_size = r.read_i32("page header compressed size")?;
        if uncompressed_size < 0 || compressed_size < 0 {
            return Err(Error::format(
                at,
                format_args!(
                    "page sizes >= 0, found uncompressed {uncompressed_size}, compressed {compressed_size}"
                ),
            ));
        }
        let statistics = Statistics::deserialize(r, data_type)?;
        Ok(PageHeader {
            uncompressed_size,
            compressed_size,
            statistics,
        })
    }
}

/// Footer that ends a chunk group (§3.1). The marker byte is part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkGroupFooter {
    /// Device of the group.
    pub device: String,
    /// Bytes from the group's first chunk marker up to this footer's marker.
    pub data_size: i64,
    /// Number of chunks in the group.
    pub num_chunks: i32,
}

impl ChunkGroupFooter {
    /// Serialized size including the marker.
    pub fn serialized_size(device: &str) -> usize {
        17 + device.len()
    }

    /// Appends the footer, marker first.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        out.push(marker::CHUNK_GROUP_FOOTER);
        io::put_binary(out, self.device.as_bytes());
        io::put_i64(out, self.data_size);
        io::put_i32(out, self.num_chunks);
    }

    /// Reads a footer whose marker byte was already consumed.
    pub fn deserialize_after_marker(r: &mut ByteReader<'_>) -> Result<Self> {
        let device = r.read_string("chunk group footer device id")?;
        let at = r.offset();
        let data_size = r.read_i64("chunk group footer data size")?;
        let num_chunks = r.read_i32("chunk group footer chunk count")?;
        if data_size < 0 || num_chunks < 0 {
            return Err(Error::format(
                at,
                format_args!(
                    "non-negative footer sizes, found data size {data_size}, {num_chunks} chunks"
                ),
            ));
        }
        Ok(ChunkGroupFooter {
            device,
            data_size,
            num_chunks,
        })
    }
}

/// Metadata of one chunk (§5.2).
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkMetadata {
    /// Measurement name.
    pub measurement: String,
    /// Absolute offset of the chunk's `0x01` marker.
    pub offset_of_chunk_header: i64,
    /// Data type.
    pub data_type: DataType,
    /// Merged page statistics.
    pub statistics: Statistics,
}

impl ChunkMetadata {
    /// Serialized size.
    pub fn serialized_size(&self) -> usize {
        4 + self.measurement.len() + 8 + 2 + self.statistics.serialized_size()
    }

    /// Appends the serialized form.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        io::put_binary(out, self.measurement.as_bytes());
        io::put_i64(out, self.offset_of_chunk_header);
        io::put_i16(out, self.data_type.code());
        self.statistics.serialize(out);
    }

    /// Reads one entry.
    pub fn deserialize(r: &mut ByteReader<'_>) -> Result<Self> {
        let measurement = r.read_string("chunk metadata measurement id")?;
        let offset_of_chunk_header = r.read_i64("chunk metadata chunk offset")?;
        let data_type = read_data_type(r, "chunk metadata data type")?;
        let statistics = Statistics::deserialize(r, data_type)?;
        Ok(ChunkMetadata {
            measurement,
            offset_of_chunk_header,
            data_type,
            statistics,
        })
    }
}

/// Metadata of one series (§5.3).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeseriesMetadata {
    /// Measurement name.
    pub measurement: String,
    /// Data type.
    pub data_type: DataType,
    /// Offset of the series' first `ChunkMetadata`.
    pub chunk_metadata_offset: i64,
    /// Bytes of the series' `ChunkMetadata` entries.
    pub chunk_metadata_size: i32,
    /// Merged chunk statistics.
    pub statistics: Statistics,
}

impl TimeseriesMetadata {
    /// Serialized size.
    pub fn serialized_size(&self) -> usize {
        4 + self.measurement.len() + 2 + 8 + 4 + self.statistics.serialized_size()
    }

    /// Appends the serialized form.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        io::put_binary(out, self.measurement.as_bytes());
        io::put_i16(out, self.data_type.code());
        io::put_i64(out, self.chunk_metadata_offset);
        io::put_i32(out, self.chunk_metadata_size);
        self.statistics.serialize(out);
    }

    /// Reads one entry.
    pub fn deserialize(r: &mut ByteReader<'_>) -> Result<Self> {
        let measurement = r.read_string("timeseries metadata measurement id")?;
        let data_type = read_data_type(r, "timeseries metadata data type")?;
        let chunk_metadata_offset = r.read_i64("timeseries metadata chunk metadata offset")?;
        let at = r.offset();
        let chunk_metadata_size = r.read_i32("timeseries metadata chunk metadata size")?;
        if chunk_metadata_size < 0 || chunk_metadata_offset < 0 {
            return Err(Error::format(
                at,
                format_args!(
                    "a chunk metadata range, found offset {chunk_metadata_offset} size {chunk_metadata_size}"
                ),
            ));
        }
        let statistics = Statistics::deserialize(r, data_type)?;
        Ok(TimeseriesMetadata {
            measurement,
            data_type,
            chunk_metadata_offset,
            chunk_metadata_size,
            statistics,
        })
    }
}

/// What the entries of a [`MetadataIndexNode`] point to (§5.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetadataIndexNodeType {
    /// Entries point to LEAF_DEVICE or INTERNAL_DEVICE nodes.
    InternalDevice = 0,
    /// Entries point to device top measurement nodes.
    LeafDevice = 1,
    /// Entries point to measurement-level nodes (or, at a small root, device tops).
    InternalMeasurement = 2,
    /// Entries point to runs of `TimeseriesMetadata`.
    LeafMeasurement = 3,
}

impl MetadataIndexNodeType {
    /// The stored byte.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The type for a stored byte.
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::InternalDevice,
            1 => Self::LeafDevice,
            2 => Self::InternalMeasurement,
            3 => Self::LeafMeasurement,
            _ => return None,
        })
    }

    /// Java's name (`"LEAF_MEASUREMENT"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::InternalDevice => "INTERNAL_DEVICE",
            Self::LeafDevice => "LEAF_DEVICE",
            Self::InternalMeasurement => "INTERNAL_MEASUREMENT",
            Self::LeafMeasurement => "LEAF_MEASUREMENT",
        }
    }
}

/// One entry of an index node: a name and the offset of what it points to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataIndexEntry {
    /// Device or measurement name.
    pub name: String,
    /// Absolute offset of the child.
    pub offset: i64,
}

/// A node of the metadata index tree (§5.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataIndexNode {
    /// Children, sorted by name.
    pub children: Vec<MetadataIndexEntry>,
    /// End of the last child's byte range.
    pub end_offset: i64,
    /// What the entries point to.
    pub node_type: MetadataIndexNodeType,
}

impl MetadataIndexNode {
    /// Serialized size.
    pub fn serialized_size(&self) -> usize {
        4 + self
            .children
            .iter()
            .map(|e| 12 + e.name.len())
            .sum::<usize>()
            + 8
            + 1
    }

    /// Appends the serialized form.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        io::put_i32(out, self.children.len() as i32);
        for e in &self.children {
            io::put_binary(out, e.name.as_bytes());
            io::put_i64(out, e.offset);
        }
        io::put_i64(out, self.end_offset);
        out.push(self.node_type.code());
    }

    /// Reads one node.
    pub fn deserialize(r: &mut ByteReader<'_>) -> Result<Self> {
        let at = r.offset();
        let n = r.read_i32("index node child count")?;
        // Each entry takes at least 12 bytes: bound the count before allocating.
        if n < 0 || (n as usize).saturating_mul(12) > r.remaining() {
            return Err(Error::format(
                at,
                format_args!("an index node child count that fits the node, found {n}"),
            ));
        }
        let mut children = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let name = r.read_string("index entry name")?;
            let offset = r.read_i64("index entry offset")?;
            children.push(MetadataIndexEntry { name, offset });
        }
        let end_offset = r.read_i64("index node end offset")?;
        let at = r.offset();
        let code = r.read_u8("index node type")?;
        let node_type = MetadataIndexNodeType::from_code(code).ok_or_else(|| {
            Error::format(at, format_args!("an index node type 0..=3, found {code}"))
        })?;
        Ok(MetadataIndexNode {
            children,
            end_offset,
            node_type,
        })
    }

    /// Java's `getChildIndexEntry`: the exact match, else the entry with the largest
    /// name below `key`, else entry 0. Returns the index and the child's end offset.
    /// Names compare as Java strings (UTF-16 code units).
    pub fn child_for(&self, key: &str) -> Option<(usize, i64)> {
        if self.children.is_empty() {
            return None;
        }
        let mut lo = 0usize;
        let mut hi = self.children.len();
        // First index whose name is > key.
        while lo < hi {
            let mid = (lo + hi) / 2;
            if java_cmp(&self.children[mid].name, key) == std::cmp::Ordering::Greater {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let i = lo.saturating_sub(1);
        Some((i, self.child_end(i)))
    }

    /// End offset of child `i`: the next child's offset, or the node's end offset.
    pub fn child_end(&self, i: usize) -> i64 {
        self.children
            .get(i + 1)
            .map(|e| e.offset)
            .unwrap_or(self.end_offset)
    }
}

/// Compares two strings as Java's `String.compareTo` (UTF-16 code units).
pub fn java_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The file-level metadata (§5.8), with its bloom filter.
#[derive(Debug, Clone, PartialEq)]
pub struct TsFileMetadata {
    /// Root of the index tree.
    pub metadata_index: MetadataIndexNode,
    /// Chunks written.
    pub total_chunk_num: i32,
    /// Chunks dropped by IoTDB merges (0 for plain writes).
    pub invalid_chunk_num: i32,
    /// `(offset after the version record, version)` pairs.
    pub version_info: Vec<(i64, i64)>,
    /// Offset of the separator byte.
    pub meta_offset: i64,
    /// The bloom filter, if present (readers treat it as optional).
    pub bloom_filter: Option<BloomFilter>,
}

impl TsFileMetadata {
    /// Appends the serialized form, bloom filter included.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        self.metadata_index.serialize(out);
        io::put_i32(out, self.total_chunk_num);
        io::put_i32(out, self.invalid_chunk_num);
        io::put_i32(out, self.version_info.len() as i32);
        for (o, v) in &self.version_info {
            io::put_i64(out, *o);
            io::put_i64(out, *v);
        }
        io::put_i64(out, self.meta_offset);
        if let Some(b) = &self.bloom_filter {
            b.serialize(out);
        }
    }

    /// Reads the metadata from exactly its byte range `[P, P+S)`.
    pub fn deserialize(r: &mut ByteReader<'_>) -> Result<Self> {
        let metadata_index = MetadataIndexNode::deserialize(r)?;
        let total_chunk_num = r.read_i32("total chunk count")?;
        let invalid_chunk_num = r.read_i32("invalid chunk count")?;
        let at = r.offset();
        let n = r.read_i32("version info count")?;
        if n < 0 || (n as usize).saturating_mul(16) > r.remaining() {
            return Err(Error::format(
                at,
                format_args!("a version info count that fits, found {n}"),
            ));
        }
        let mut version_info = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let o = r.read_i64("version info offset")?;
            let v = r.read_i64("version info version")?;
            version_info.push((o, v));
        }
        let meta_offset = r.read_i64("meta offset")?;
        let bloom_filter = if r.is_empty() {
            None
        } else {
            Some(BloomFilter::deserialize(r)?)
        };
        Ok(TsFileMetadata {
            metadata_index,
            total_chunk_num,
            invalid_chunk_num,
            version_info,
            meta_offset,
            bloom_filter,
        })
    }
}
