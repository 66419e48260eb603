//! File structures (spec §2–§5), the writer and the reader.

pub mod bloom;
pub mod metadata;
pub mod properties;
pub mod reader;
pub mod v4;
pub mod writer;

/// `"TsFile"`, at the start and the end of every file.
pub const MAGIC: &[u8; 6] = b"TsFile";
/// The format version written after the head magic.
pub const VERSION: &[u8; 6] = b"000002";
/// Length of magic + version: the data section starts here.
pub const HEADER_LEN: u64 = 12;

/// Marker bytes of the data section (`MetaMarker`).
pub mod marker {
    /// Starts a chunk group footer.
    pub const CHUNK_GROUP_FOOTER: u8 = 0x00;
    /// Starts a chunk header.
    pub const CHUNK_HEADER: u8 = 0x01;
    /// Ends the data section.
    pub const SEPARATOR: u8 = 0x02;
    /// Starts a version record.
    pub const VERSION: u8 = 0x03;
}
