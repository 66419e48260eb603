//! TsFile format v4 (Apache TsFile 2.x, IoTDB 2.x): magic `TsFile` + version byte 4.
//!
//! The layout is written down byte by byte in `format/docs/tsfile-v4.md`. It shares the
//! typed core ([`crate::basic`]), the codecs and the bloom filter with format 000002;
//! everything that differs lives here: device ids ([`metadata::DeviceId`]), one-byte
//! type codes, var-int framed headers, v4 statistics ([`statistics`]), aligned
//! time/value chunks, the per-table metadata index and the file properties.

pub mod codec;
pub mod metadata;
pub mod reader;
pub mod statistics;
pub mod table;
pub mod writer;

pub use metadata::DeviceId;
pub use reader::TsFileReaderV4;
pub use table::{ColumnCategory, TableColumn, TableRow, TableSchema};
pub use writer::{AlignedColumn, SeriesChunk, TsFileWriterV4};

use crate::errors::{Error, Result};
use crate::util::io::ByteReader;

/// The version byte after the magic.
pub const VERSION_BYTE: u8 = 4;
/// Length of magic + version byte: the data section starts here.
pub const HEADER_LEN: u64 = 7;
/// Data type code of an aligned series' time column (`TSDataType.VECTOR`).
pub const VECTOR_TYPE: u8 = 6;
/// Chunk-type / timeseries-metadata-type bit of an aligned time column.
pub const TIME_COLUMN_MASK: u8 = 0x80;
/// Chunk-type / timeseries-metadata-type bit of an aligned value column.
pub const VALUE_COLUMN_MASK: u8 = 0x40;

/// Marker bytes of the v4 data section (`MetaMarker`).
pub mod marker {
    /// Starts a chunk group header (a device id follows).
    pub const CHUNK_GROUP_HEADER: u8 = 0;
    /// Starts a chunk header of a chunk with several pages (ORed with a column mask).
    pub const CHUNK_HEADER: u8 = 1;
    /// Ends the data section.
    pub const SEPARATOR: u8 = 2;
    /// Starts an operation index range (two i64), written by the C++ writer and IoTDB.
    pub const OPERATION_INDEX_RANGE: u8 = 4;
    /// Starts a chunk header of a single-page chunk (page header without statistics).
    pub const ONLY_ONE_PAGE_CHUNK_HEADER: u8 = 5;
}

/// Whether `bytes` start with the v4 head (`TsFile` + 4).
pub fn is_v4(bytes: &[u8]) -> bool {
    bytes.len() >= 7 && &bytes[..6] == crate::file::MAGIC && bytes[6] == VERSION_BYTE
}

/// Appends a zigzag var-int (Java `writeVarInt`).
pub fn put_varint(out: &mut Vec<u8>, v: i32) {
    let u = ((v << 1) ^ (v >> 31)) as u32;
    crate::util::io::put_uvarint(out, u);
}

/// Appends a string with a zigzag var-int length (Java `writeVar`); `None` is length -1.
pub fn put_var_str(out: &mut Vec<u8>, s: Option<&[u8]>) {
    match s {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

/// Reads a zigzag var-int (Java `readVarInt`).
pub fn read_varint(r: &mut ByteReader<'_>, what: &str) -> Result<i32> {
    let u = r.read_uvarint(what)?;
    Ok(((u >> 1) as i32) ^ -((u & 1) as i32))
}

/// Reads a zigzag-var-int-length string (`readVarIntString`); length -1 is `None`.
pub fn read_var_bytes<'a>(r: &mut ByteReader<'a>, what: &str) -> Result<Option<&'a [u8]>> {
    let at = r.offset();
    let n = read_varint(r, what)?;
    if n == -1 {
        return Ok(None);
    }
    if n < 0 || n as usize > r.remaining() {
        return Err(Error::format(
            at,
            format_args!("{what}: a length in 0..={}, found {n}", r.remaining()),
        ));
    }
    Ok(Some(r.take(n as usize, what)?))
}

/// Reads a var-int-length UTF-8 string; `None` (length -1) is refused.
pub fn read_var_string(r: &mut ByteReader<'_>, what: &str) -> Result<String> {
    let at = r.offset();
    let b = read_var_bytes(r, what)?
        .ok_or_else(|| Error::format(at, format_args!("{what}: a string, found null")))?;
    String::from_utf8(b.to_vec())
        .map_err(|_| Error::format(at, format_args!("{what}: valid UTF-8")))
}
