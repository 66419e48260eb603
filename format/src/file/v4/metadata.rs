//! The serialized v4 structures, each with its writer and reader side by side.

use super::statistics::StatisticsV4;
use super::{put_var_str, put_varint, read_var_bytes, read_var_string, read_varint};
use crate::basic::{Compression, Encoding};
use crate::errors::{Error, Result};
use crate::file::bloom::BloomFilter;
use crate::util::io::{self, ByteReader};
use std::cmp::Ordering;

/// Path levels folded into a tree-model device id's first segment (the "table name").
pub const SEGMENTS_FOR_TABLE_NAME: usize = 3;

/// First character of a table-model device's [`DeviceId::key`].
pub const TABLE_KEY_MARK: char = '\u{1f}';
/// Precedes a tag value in a table-model device's [`DeviceId::key`].
pub const TAG_MARK: char = '\u{1e}';
/// Stands for a null tag in a table-model device's [`DeviceId::key`].
pub const NULL_TAG_MARK: char = '\u{1d}';

/// A device id as v4 stores it (`StringArrayDeviceID`): segments, the first being the
/// table name. A tree-model path `root.sg.d1` is `["root.sg", "d1"]`; a path of more
/// levels keeps its first three levels in the first segment (`root.a.b`, `c`, `d`).
/// A table-model device is the table name then its tag values, a null tag `None`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeviceId {
    /// Segments; the first is the table name. `None` is a stored null (a null tag).
    pub segments: Vec<Option<String>>,
}

impl DeviceId {
    /// The device id of a tree-model device path (levels split on `.`, no quoting).
    pub fn from_path(path: &str) -> Self {
        let levels: Vec<&str> = path.split('.').collect();
        let n = levels.len();
        let segments = if n == 1 {
            vec![levels[0].to_string()]
        } else if n <= SEGMENTS_FOR_TABLE_NAME {
            vec![levels[..n - 1].join("."), levels[n - 1].to_string()]
        } else {
            let mut s = vec![levels[..SEGMENTS_FOR_TABLE_NAME].join(".")];
            s.extend(
                levels[SEGMENTS_FOR_TABLE_NAME..]
                    .iter()
                    .map(|l| l.to_string()),
            );
            s
        };
        DeviceId {
            segments: segments.into_iter().map(Some).collect(),
        }
    }

    /// The device id of a table-model device: the table name, then its tag values in the
    /// table's TAG column order; trailing nulls are dropped (Java `StringArrayDeviceID`).
    pub fn from_table(table: &str, tags: &[Option<&str>]) -> Self {
        let keep = tags.iter().rposition(|t| t.is_some()).map_or(0, |i| i + 1);
        let mut segments = Vec::with_capacity(1 + keep);
        segments.push(Some(table.to_string()));
        segments.extend(tags[..keep].iter().map(|t| t.map(str::to_string)));
        DeviceId { segments }
    }

    /// A string naming the device, tree or table model alike, from which [`DeviceId::from_key`]
    /// rebuilds it: a tree-model id (first segment `root` or `root.…`) is its path; a
    /// table-model id is [`TABLE_KEY_MARK`], the table name, then per tag segment
    /// [`TAG_MARK`] and the value, or [`NULL_TAG_MARK`] for a null (table names and tag values
    /// holding these three characters have no key).
    pub fn key(&self) -> String {
        let first = self.segments[0].as_deref().unwrap_or("");
        if first == "root" || first.starts_with("root.") {
            return self.path();
        }
        let mut k = String::with_capacity(1 + first.len() + 8 * self.segments.len());
        k.push(TABLE_KEY_MARK);
        k.push_str(first);
        for s in &self.segments[1..] {
            match s {
                Some(v) => {
                    k.push(TAG_MARK);
                    k.push_str(v);
                }
                None => k.push(NULL_TAG_MARK),
            }
        }
        k
    }

    /// The device id of a [`DeviceId::key`]; a key not starting with [`TABLE_KEY_MARK`] is a
    /// tree-model path ([`DeviceId::from_path`]).
    pub fn from_key(key: &str) -> Self {
        let Some(rest) = key.strip_prefix(TABLE_KEY_MARK) else {
            return DeviceId::from_path(key);
        };
        let mut segments = Vec::new();
        let mut start = 0;
        let mut null = false;
        for (i, c) in rest.char_indices() {
            if c == TAG_MARK || c == NULL_TAG_MARK {
                segments.push((!null).then(|| rest[start..i].to_string()));
                start = i + c.len_utf8();
                null = c == NULL_TAG_MARK;
            }
        }
        segments.push((!null).then(|| rest[start..].to_string()));
        DeviceId { segments }
    }

    /// The table name (first segment; `""` if null).
    pub fn table(&self) -> &str {
        self.segments[0].as_deref().unwrap_or("")
    }

    /// The tag values (segments after the table name), padded with nulls to `n`.
    pub fn tags(&self, n: usize) -> Vec<Option<&str>> {
        let mut t: Vec<Option<&str>> = self.segments[1..].iter().map(|s| s.as_deref()).collect();
        t.resize(n.max(t.len()), None);
        t
    }

    /// The tree-model path (segments joined with `.`, a null as `null` as Java prints it).
    pub fn path(&self) -> String {
        let parts: Vec<&str> = self
            .segments
            .iter()
            .map(|s| s.as_deref().unwrap_or("null"))
            .collect();
        parts.join(".")
    }

    /// Appends the stored form: var-int segment count, then each segment as a var string.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        io::put_uvarint(out, self.segments.len() as u32);
        for s in &self.segments {
            put_var_str(out, s.as_deref().map(str::as_bytes));
        }
    }

    /// Reads a device id. A null segment reads as `None`.
    pub fn deserialize(r: &mut ByteReader<'_>) -> Result<Self> {
        let at = r.offset();
        let n = r.read_uvarint("device id segment count")? as usize;
        if n > r.remaining() {
            return Err(Error::format(
                at,
                format_args!(
                    "a device id of at most {} segments, found {n}",
                    r.remaining()
                ),
            ));
        }
        let mut segments = Vec::with_capacity(n.max(1));
        for _ in 0..n {
            let seg = match read_var_bytes(r, "device id segment")? {
                None => None,
                Some(b) => Some(
                    String::from_utf8(b.to_vec())
                        .map_err(|_| Error::format(at, "a UTF-8 device id"))?,
                ),
            };
            segments.push(seg);
        }
        if segments.is_empty() {
            segments.push(Some(String::new()));
        }
        Ok(DeviceId { segments })
    }
}

impl Ord for DeviceId {
    /// Segment by segment (byte order, a null first), a prefix first: Java
    /// `StringArrayDeviceID.compareTo`.
    fn cmp(&self, o: &Self) -> Ordering {
        for (a, b) in self.segments.iter().zip(&o.segments) {
            match a
                .as_deref()
                .map(str::as_bytes)
                .cmp(&b.as_deref().map(str::as_bytes))
            {
                Ordering::Equal => {}
                c => return c,
            }
        }
        self.segments.len().cmp(&o.segments.len())
    }
}

impl PartialOrd for DeviceId {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// A v4 chunk header. `chunk_type` is the marker byte: [`super::marker::CHUNK_HEADER`] or
/// [`super::marker::ONLY_ONE_PAGE_CHUNK_HEADER`], ORed with a column mask.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkHeaderV4 {
    /// Marker byte (chunk type).
    pub chunk_type: u8,
    /// Measurement name (`""` for an aligned time column).
    pub measurement: String,
    /// Bytes of the page headers and bodies that follow.
    pub data_size: u32,
    /// Data type code ([`super::VECTOR_TYPE`] for an aligned time column).
    pub type_code: u8,
    /// Compression code.
    pub compression: u8,
    /// Encoding code.
    pub encoding: u8,
}

impl ChunkHeaderV4 {
    /// Whether the pages carry no statistics (single-page chunk).
    pub fn single_page(&self) -> bool {
        self.chunk_type & 0x3F == super::marker::ONLY_ONE_PAGE_CHUNK_HEADER
    }

    /// Appends the stored form (marker included).
    pub fn serialize(&self, out: &mut Vec<u8>) {
        out.push(self.chunk_type);
        put_var_str(out, Some(self.measurement.as_bytes()));
        io::put_uvarint(out, self.data_size);
        out.push(self.type_code);
        out.push(self.compression);
        out.push(self.encoding);
    }

    /// Reads a chunk header whose marker byte was already read.
    pub fn deserialize(r: &mut ByteReader<'_>, chunk_type: u8) -> Result<Self> {
        Ok(ChunkHeaderV4 {
            chunk_type,
            measurement: read_var_string(r, "chunk header measurement")?,
            data_size: r.read_uvarint("chunk header data size")?,
            type_code: r.read_u8("chunk header data type")?,
            compression: r.read_u8("chunk header compression")?,
            encoding: r.read_u8("chunk header encoding")?,
        })
    }

    /// The compression, if this library knows its code.
    pub fn compression(&self) -> Option<Compression> {
        Compression::from_code(self.compression as i16)
    }

    /// The encoding, if this library knows its code.
    pub fn encoding(&self) -> Option<Encoding> {
        Encoding::from_code(self.encoding as i16)
    }
}

/// `ChunkMetadata` as the writer keeps it until the index is written.
#[derive(Debug, Clone)]
pub struct ChunkMetadataV4 {
    /// Measurement name (`""` for an aligned time column).
    pub measurement: String,
    /// Data type code.
    pub type_code: u8,
    /// Column mask (0, [`super::TIME_COLUMN_MASK`] or [`super::VALUE_COLUMN_MASK`]).
    pub mask: u8,
    /// Offset of the chunk header's marker.
    pub offset: u64,
    /// Chunk statistics.
    pub statistics: StatisticsV4,
}

/// `TimeseriesMetadata` of one series, with its chunk metadata.
#[derive(Debug, Clone)]
pub struct TimeseriesMetadataV4 {
    /// `1` if the chunk metadata carry statistics (more than one chunk), ORed with the mask.
    pub ts_type: u8,
    /// Measurement name.
    pub measurement: String,
    /// Data type code.
    pub type_code: u8,
    /// Series statistics.
    pub statistics: StatisticsV4,
    /// `(chunk header offset, chunk statistics)` in file order.
    pub chunks: Vec<(u64, StatisticsV4)>,
    /// Offset of this structure in the file.
    pub offset: u64,
}

impl TimeseriesMetadataV4 {
    /// Builds the series metadata of chunks of one series (in file order) and appends it.
    pub fn write_from_chunks(chunks: &[&ChunkMetadataV4], out: &mut Vec<u8>) -> Result<()> {
        let last = chunks
            .last()
            .ok_or_else(|| Error::invalid("a series without chunks"))?;
        let several = chunks.len() > 1;
        let mut stats = StatisticsV4::new(last.type_code)?;
        let mut list = Vec::new();
        for c in chunks {
            io::put_i64(&mut list, c.offset as i64);
            if several {
                c.statistics.serialize(&mut list);
            }
            stats.merge(&c.statistics)?;
        }
        out.push(several as u8 | chunks[0].mask);
        put_var_str(out, Some(last.measurement.as_bytes()));
        out.push(last.type_code);
        io::put_uvarint(out, list.len() as u32);
        stats.serialize(out);
        out.extend_from_slice(&list);
        Ok(())
    }

    /// Reads one series metadata with its chunk metadata list.
    pub fn deserialize(r: &mut ByteReader<'_>) -> Result<Self> {
        let offset = r.offset();
        let ts_type = r.read_u8("timeseries metadata type")?;
        let measurement = read_var_string(r, "timeseries metadata measurement")?;
        let type_code = r.read_u8("timeseries metadata data type")?;
        let list_len = r.read_uvarint("chunk metadata list size")? as usize;
        let statistics = StatisticsV4::deserialize(r, type_code)?;
        let at = r.offset();
        let list = r.take(list_len, "chunk metadata list")?;
        let mut lr = ByteReader::new(list, at);
        let mut chunks = Vec::new();
        while !lr.is_empty() {
            let off = lr.read_i64("chunk header offset")?;
            if off < 0 {
                return Err(Error::format(lr.offset() - 8, "a chunk offset >= 0"));
            }
            let st = if ts_type & 0x3F != 0 {
                StatisticsV4::deserialize(&mut lr, type_code)?
            } else {
                statistics.clone()
            };
            chunks.push((off as u64, st));
        }
        Ok(TimeseriesMetadataV4 {
            ts_type,
            measurement,
            type_code,
            statistics,
            chunks,
            offset,
        })
    }

    /// The column mask bits.
    pub fn mask(&self) -> u8 {
        self.ts_type & 0xC0
    }
}

/// `MetadataIndexNodeType` codes.
pub mod node_type {
    /// Internal node over device nodes.
    pub const INTERNAL_DEVICE: u8 = 0;
    /// Leaf node whose entries point at a device's measurement index.
    pub const LEAF_DEVICE: u8 = 1;
    /// Internal node over measurement nodes.
    pub const INTERNAL_MEASUREMENT: u8 = 2;
    /// Leaf node whose entries point at timeseries metadata.
    pub const LEAF_MEASUREMENT: u8 = 3;
}

/// An index entry's key.
#[derive(Debug, Clone, PartialEq)]
pub enum IndexKey {
    /// A device entry (device levels).
    Device(DeviceId),
    /// A measurement entry (measurement levels).
    Measurement(String),
}

/// A `MetadataIndexNode`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexNodeV4 {
    /// `(key, offset)` entries.
    pub entries: Vec<(IndexKey, u64)>,
    /// End of the region the last entry covers.
    pub end_offset: u64,
    /// One of [`node_type`].
    pub node_type: u8,
}

impl IndexNodeV4 {
    /// Whether entries are device keys.
    pub fn is_device_level(&self) -> bool {
        self.node_type <= node_type::LEAF_DEVICE
    }

    /// Appends the stored form.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        io::put_uvarint(out, self.entries.len() as u32);
        for (k, off) in &self.entries {
            match k {
                IndexKey::Device(d) => d.serialize(out),
                IndexKey::Measurement(m) => put_var_str(out, Some(m.as_bytes())),
            }
            io::put_i64(out, *off as i64);
        }
        io::put_i64(out, self.end_offset as i64);
        out.push(self.node_type);
    }

    /// Reads a node; `device_level` says how to read the entry keys.
    pub fn deserialize(r: &mut ByteReader<'_>, device_level: bool) -> Result<Self> {
        let at = r.offset();
        let n = r.read_uvarint("index node entry count")? as usize;
        if n > r.remaining() {
            return Err(Error::format(
                at,
                format_args!(
                    "an index node of at most {} entries, found {n}",
                    r.remaining()
                ),
            ));
        }
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let key = if device_level {
                IndexKey::Device(DeviceId::deserialize(r)?)
            } else {
                IndexKey::Measurement(read_var_string(r, "index entry measurement")?)
            };
            let off = r.read_i64("index entry offset")?;
            entries.push((key, off.max(0) as u64));
        }
        let end_offset = r.read_i64("index node end offset")?.max(0) as u64;
        let t_at = r.offset();
        let node_type = r.read_u8("index node type")?;
        if node_type > 3 || (node_type <= 1) != device_level {
            return Err(Error::format(
                t_at,
                format_args!(
                    "a {} index node type, found {node_type}",
                    if device_level {
                        "device"
                    } else {
                        "measurement"
                    }
                ),
            ));
        }
        Ok(IndexNodeV4 {
            entries,
            end_offset,
            node_type,
        })
    }
}

/// Tail of a v4 file (`TsFileMetadata`).
#[derive(Debug, Clone)]
pub struct FileMetadataV4 {
    /// Per table name, the root of its device index.
    pub tables: Vec<(String, IndexNodeV4)>,
    /// Table schemas (table model), by table name; empty in a tree-model file.
    pub table_schemas: Vec<super::table::TableSchema>,
    /// Offset of the SEPARATOR marker.
    pub meta_offset: u64,
    /// The bloom filter over series paths, if stored.
    pub bloom: Option<BloomFilter>,
    /// File properties (`encryptLevel`, ...); `None` values are stored nulls.
    pub properties: Vec<(String, Option<String>)>,
}

impl FileMetadataV4 {
    /// Appends the stored form.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        io::put_uvarint(out, self.tables.len() as u32);
        for (name, node) in &self.tables {
            put_var_str(out, Some(name.as_bytes()));
            node.serialize(out);
        }
        io::put_uvarint(out, self.table_schemas.len() as u32);
        for t in &self.table_schemas {
            put_var_str(out, Some(t.name.as_bytes()));
            t.serialize(out);
        }
        io::put_i64(out, self.meta_offset as i64);
        match &self.bloom {
            // An all-zero bit array is stored as its length 0 alone (Java `serializeBloomFilter`).
            Some(b) if !b.bit_bytes().is_empty() => {
                let bits = b.bit_bytes();
                io::put_uvarint(out, bits.len() as u32);
                out.extend_from_slice(bits);
                io::put_uvarint(out, b.size() as u32);
                io::put_uvarint(out, b.hash_count() as u32);
            }
            Some(_) => io::put_uvarint(out, 0),
            None => io::put_uvarint(out, 0),
        }
        put_varint(out, self.properties.len() as i32);
        for (k, v) in &self.properties {
            put_var_str(out, Some(k.as_bytes()));
            put_var_str(out, v.as_ref().map(|s| s.as_bytes()));
        }
    }

    /// Reads the file metadata.
    pub fn deserialize(r: &mut ByteReader<'_>) -> Result<Self> {
        let n = r.read_uvarint("table index count")? as usize;
        let mut tables = Vec::new();
        for _ in 0..n {
            let name = read_var_string(r, "table name")?;
            let node = IndexNodeV4::deserialize(r, true)?;
            tables.push((name, node));
        }
        let s_at = r.offset();
        let schema_count = r.read_uvarint("table schema count")? as usize;
        if schema_count > r.remaining() {
            return Err(Error::format(
                s_at,
                format_args!(
                    "at most {} table schemas, found {schema_count}",
                    r.remaining()
                ),
            ));
        }
        let mut table_schemas = Vec::with_capacity(schema_count);
        for _ in 0..schema_count {
            let name = read_var_string(r, "table schema name")?;
            table_schemas.push(super::table::TableSchema::deserialize(r, name)?);
        }
        let meta_offset = r.read_i64("meta offset")?.max(0) as u64;
        let mut bloom = None;
        if !r.is_empty() {
            let at = r.offset();
            let len = r.read_uvarint("bloom filter length")? as usize;
            if len != 0 {
                let bits = r.take(len, "bloom filter bit array")?.to_vec();
                let size = r.read_uvarint("bloom filter size")? as usize;
                let k = r.read_uvarint("bloom filter hash count")? as usize;
                bloom = Some(BloomFilter::from_parts(bits, size, k).ok_or_else(|| {
                    Error::format(at, format_args!("a bloom filter whose size covers its {len} bytes and 1..=8 hashes, found size {size}, {k} hashes"))
                })?);
            }
        }
        let mut properties = Vec::new();
        if !r.is_empty() {
            let count = read_varint(r, "property count")?;
            for _ in 0..count.max(0) {
                let k = read_var_string(r, "property key")?;
                let v = read_var_bytes(r, "property value")?
                    .map(|b| String::from_utf8_lossy(b).into_owned());
                properties.push((k, v));
            }
        }
        Ok(FileMetadataV4 {
            tables,
            table_schemas,
            meta_offset,
            bloom,
            properties,
        })
    }
}

#[cfg(test)]
mod key_tests {
    use super::DeviceId;

    /// Keys name tree and table devices alike and give the same id back; a table id's
    /// nulls (inner ones: trailing ones are dropped) survive.
    #[test]
    fn keys_round_trip() {
        let ids = [
            DeviceId::from_path("root.sg.d1"),
            DeviceId::from_path("root.a.b.c.d"),
            DeviceId::from_path("root"),
            DeviceId::from_table("cpu", &[]),
            DeviceId::from_table("cpu", &[Some("gw1"), None, Some(""), None]),
            DeviceId::from_table("t", &[None, Some("x.y")]),
        ];
        for id in ids {
            assert_eq!(DeviceId::from_key(&id.key()), id, "{:?}", id.key());
        }
        assert_eq!(DeviceId::from_path("root.sg.d1").key(), "root.sg.d1");
        assert_eq!(
            DeviceId::from_table("cpu", &[None, Some("a")]).key(),
            "\u{1f}cpu\u{1d}\u{1e}a"
        );
        assert_eq!(
            DeviceId::from_key("\u{1f}cpu\u{1d}\u{1e}a").segments,
            vec![Some("cpu".to_string()), None, Some("a".to_string())]
        );
    }
}
