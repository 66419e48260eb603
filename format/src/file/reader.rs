//! The TsFile reader (spec §8): head and tail validation, the index tree, series
//! lookup, point iteration, time-range queries, the sequential walk and the recovery
//! scan.
//!
//! Everything works over a [`Source`] (a file or bytes in memory) and checks what it
//! reads: every range is checked against the file (and against the section it must lie
//! in) before a buffer is sized by it, and every malformed or truncated input yields an
//! [`Error::Format`] naming the absolute byte offset and what was expected there.
//!
//! * [`TsFileReader::open`] validates magic, version, tail and `TsFileMetadata`.
//! * [`TsFileReader::index_tree`] walks the whole metadata index;
//!   [`TsFileReader::timeseries_metadata`] finds one series reading only the nodes on
//!   its path (and verifies the device and measurement names).
//! * [`TsFileReader::series_reader`] / [`TsFileReader::query`] decode a series page by
//!   page ([`SeriesReader::next_page`]) or point by point ([`SeriesReader::points`]),
//!   skipping chunks and pages whose statistics miss the queried time range.
//! * [`SequentialWalk`] walks the data section from byte 12 like Java's
//!   `TsFileSequenceRead`, yielding [`WalkEvent`]s with offsets and sizes.
//! * [`recover`] finds the last complete chunk group or version record of a truncated
//!   file (spec §8.4), rebuilding the chunk metadata of the recovered groups.
//!
//! Quirk 5 of the conformance corpus (Java's query reader drops a time of exactly
//! `i64::MIN`): this reader returns every stored point, `i64::MIN` included, on both
//! the query path and the sequential walk.

mod index;
mod recover;
mod series;
mod source;
mod walk;

pub use index::{DeviceIndex, IndexNodeInfo, IndexTree};
pub use recover::{recover, RecoveredChunk, RecoveredChunkGroup, Recovery};
pub use series::{PageData, SeriesPoints, SeriesReader};
pub use source::Source;
pub use walk::{PageRef, SequentialWalk, WalkEvent};

use crate::errors::{Error, Result};
use crate::file::bloom::BloomFilter;
use crate::file::metadata::TsFileMetadata;
use crate::file::{marker, HEADER_LEN, MAGIC, VERSION};
use crate::util::io::ByteReader;

/// Bytes after the metadata: `i32` size and the 6-byte tail magic.
const TAIL_LEN: u64 = 10;

/// Checks the 12-byte head (magic and version) of a file of `len` bytes.
pub(crate) fn check_head<S: Source + ?Sized>(src: &S, len: u64) -> Result<()> {
    if len < HEADER_LEN {
        return Err(Error::format(
            0,
            format_args!("the 12-byte head \"TsFile000002\", but the file has only {len} bytes"),
        ));
    }
    let mut head = [0u8; 12];
    src.read_exact_at(0, &mut head)?;
    if &head[..6] != MAGIC {
        return Err(Error::format(
            0,
            format_args!(
                "head magic \"TsFile\", found {:?}",
                String::from_utf8_lossy(&head[..6])
            ),
        ));
    }
    if &head[6..] != VERSION {
        return Err(Error::format(
            6,
            format_args!(
                "format version \"000002\" (IoTDB 0.10), found {:?}",
                String::from_utf8_lossy(&head[6..])
            ),
        ));
    }
    Ok(())
}

/// An open, complete TsFile.
#[derive(Debug)]
pub struct TsFileReader<S> {
    src: S,
    file_len: u64,
    metadata: TsFileMetadata,
    metadata_pos: u64,
    metadata_size: u64,
}

impl TsFileReader<std::fs::File> {
    /// Opens the file at `path`.
    pub fn open_path(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::open(std::fs::File::open(path)?)
    }
}

impl<S: Source> TsFileReader<S> {
    /// Opens a complete TsFile: checks head magic and version, tail magic and size int,
    /// and reads `TsFileMetadata` (with its bloom filter).
    pub fn open(src: S) -> Result<Self> {
        let len = src.size()?;
        check_head(&src, len)?;
        if len < HEADER_LEN + 1 + TAIL_LEN {
            return Err(Error::format(
                len,
                format_args!(
                    "the metadata section, size int and tail magic after the head: the file has only {len} bytes (incomplete; a recovery scan can find its complete chunk groups)"
                ),
            ));
        }
        let mut tail = [0u8; 10];
        src.read_exact_at(len - TAIL_LEN, &mut tail)?;
        if &tail[4..] != MAGIC {
            return Err(Error::format(
                len - 6,
                format_args!(
                    "tail magic \"TsFile\", found {:?} (the file is incomplete; a recovery scan can find its complete chunk groups)",
                    String::from_utf8_lossy(&tail[4..])
                ),
            ));
        }
        let size = i32::from_be_bytes([tail[0], tail[1], tail[2], tail[3]]);
        // The metadata must fit between the separator (at >= 12) and the size int.
        let max = len - TAIL_LEN - HEADER_LEN - 1;
        if size < 0 || size as u64 > max {
            return Err(Error::format(
                len - TAIL_LEN,
                format_args!(
                    "a TsFileMetadata size between 0 and {max} (it must fit after the head and separator), found {size}"
                ),
            ));
        }
        let metadata_size = size as u64;
        let metadata_pos = len - TAIL_LEN - metadata_size;
        let buf = source::read_range(&src, metadata_pos, metadata_size, len, "TsFileMetadata")?;
        let mut r = ByteReader::new(&buf, metadata_pos);
        let metadata = TsFileMetadata::deserialize(&mut r)?;
        if !r.is_empty() {
            return Err(r.error(format_args!(
                "the end of TsFileMetadata (the size int says it ends at {}), found {} more bytes",
                metadata_pos + metadata_size,
                r.remaining()
            )));
        }
        let mo = metadata.meta_offset;
        if mo < HEADER_LEN as i64 || mo as u64 >= metadata_pos {
            return Err(Error::format(
                metadata_pos,
                format_args!(
                    "a meta offset (separator position) in [12, {metadata_pos}), found {mo}"
                ),
            ));
        }
        let mut sep = [0u8; 1];
        src.read_exact_at(mo as u64, &mut sep)?;
        if sep[0] != marker::SEPARATOR {
            return Err(Error::format(
                mo as u64,
                format_args!(
                    "the separator 0x02 (TsFileMetadata's meta offset points here), found 0x{:02x}",
                    sep[0]
                ),
            ));
        }
        Ok(TsFileReader {
            src,
            file_len: len,
            metadata,
            metadata_pos,
            metadata_size,
        })
    }

    /// The underlying source.
    pub fn source(&self) -> &S {
        &self.src
    }

    /// File size in bytes.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The deserialized `TsFileMetadata`.
    pub fn metadata(&self) -> &TsFileMetadata {
        &self.metadata
    }

    /// Offset of the serialized `TsFileMetadata` (`P` of spec §2.2).
    pub fn metadata_pos(&self) -> u64 {
        self.metadata_pos
    }

    /// Bytes of `TsFileMetadata` plus bloom filter (the size int before the tail).
    pub fn metadata_size(&self) -> u64 {
        self.metadata_size
    }

    /// Offset of the separator byte that ends the data section.
    pub fn meta_offset(&self) -> u64 {
        self.metadata.meta_offset as u64
    }

    /// The bloom filter, if the file has one.
    pub fn bloom_filter(&self) -> Option<&BloomFilter> {
        self.metadata.bloom_filter.as_ref()
    }

    /// The version of the chunk whose header is at `chunk_offset` (Java
    /// `VersionUtils`): the version of the first `versionInfo` pair whose offset is
    /// greater than the chunk's, or 0 if there is none.
    pub fn chunk_version(&self, chunk_offset: u64) -> i64 {
        self.metadata
            .version_info
            .iter()
            .find(|(o, _)| *o > chunk_offset as i64)
            .map_or(0, |(_, v)| *v)
    }

    /// A sequential walk of the data section, from byte 12 to the separator at
    /// [`TsFileReader::meta_offset`].
    pub fn walk(&self) -> SequentialWalk<'_, S> {
        SequentialWalk::bounded(&self.src, self.meta_offset())
    }
}
