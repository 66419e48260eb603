//! The sequential walk of the data section (Java's `TsFileSequenceRead`).

use super::series::{check_page_header, decode_page, PageData};
use super::source::{read_range, read_range_into};
use super::{check_head, Source};
use crate::basic::{Compression, DataType, Encoding};
use crate::errors::{Error, Result};
use crate::file::metadata::{ChunkGroupFooter, ChunkHeader, PageHeader};
use crate::file::{marker, HEADER_LEN};
use crate::util::io::ByteReader;

/// A page found by the walk. Decode it with [`SequentialWalk::decode_page`].
#[derive(Debug, Clone, PartialEq)]
pub struct PageRef {
    /// Offset of the chunk header (its `0x01` marker) this page belongs to.
    pub chunk_offset: u64,
    /// Page number inside the chunk, from 0.
    pub index: u32,
    /// Offset of the page header.
    pub offset: u64,
    /// Bytes of the page header.
    pub header_size: u64,
    /// Offset of the stored (compressed) body; it is `header.compressed_size` long.
    pub body_offset: u64,
    /// The page header.
    pub header: PageHeader,
    /// The chunk's data type.
    pub data_type: DataType,
    /// The chunk's value encoding.
    pub encoding: Encoding,
    /// The chunk's compression.
    pub compression: Compression,
}

impl PageRef {
    /// Total bytes of the page (header and stored body).
    pub fn size(&self) -> u64 {
        self.header_size + self.header.compressed_size as u64
    }
}

/// One structure of the data section, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum WalkEvent {
    /// A chunk header; its pages follow as [`WalkEvent::Page`] events.
    ChunkHeader {
        /// Offset of the `0x01` marker.
        offset: u64,
        /// Bytes of the header, marker included.
        header_size: u64,
        /// The header; `data_size` bytes of pages follow it.
        header: ChunkHeader,
    },
    /// A page of the current chunk.
    Page(PageRef),
    /// The footer that ends a chunk group.
    ChunkGroupFooter {
        /// Offset of the `0x00` marker.
        offset: u64,
        /// Bytes of the footer, marker included.
        size: u64,
        /// Offset of the group's first chunk header.
        group_offset: u64,
        /// The footer.
        footer: ChunkGroupFooter,
    },
    /// A version record (`0x03` + i64, 9 bytes).
    Version {
        /// Offset of the `0x03` marker.
        offset: u64,
        /// The version.
        version: i64,
    },
    /// The separator that ends the data section; the walk ends after it.
    Separator {
        /// Offset of the `0x02` byte (the file's meta offset).
        offset: u64,
    },
}

impl WalkEvent {
    /// Offset of the structure.
    pub fn offset(&self) -> u64 {
        match self {
            WalkEvent::ChunkHeader { offset, .. }
            | WalkEvent::ChunkGroupFooter { offset, .. }
            | WalkEvent::Version { offset, .. }
            | WalkEvent::Separator { offset } => *offset,
            WalkEvent::Page(p) => p.offset,
        }
    }

    /// Bytes of the structure (a chunk header without its pages, a page with its body).
    pub fn size(&self) -> u64 {
        match self {
            WalkEvent::ChunkHeader { header_size, .. } => *header_size,
            WalkEvent::Page(p) => p.size(),
            WalkEvent::ChunkGroupFooter { size, .. } => *size,
            WalkEvent::Version { .. } => 9,
            WalkEvent::Separator { .. } => 1,
        }
    }
}

#[derive(Debug)]
struct WalkChunk {
    offset: u64,
    header: ChunkHeader,
    data_offset: u64,
    pos: usize,
    pages: i32,
}

/// Walks the data section from byte 12, one structure per step, checking that chunk
/// sizes, page counts and chunk group footers agree with what it finds.
///
/// Made by [`SequentialWalk::new`] (any file, also one without tail: the walk ends at
/// the separator, or fails where the data ends) or by
/// [`TsFileReader::walk`](super::TsFileReader::walk) (bounded by the meta offset). After
/// an error the iterator ends.
#[derive(Debug)]
pub struct SequentialWalk<'a, S: ?Sized> {
    src: &'a S,
    pos: u64,
    /// Bytes the walk may read: `[12, limit)`.
    limit: u64,
    /// Where the separator must be, if known.
    separator_at: Option<u64>,
    chunk: Option<WalkChunk>,
    chunk_buf: Vec<u8>,
    small: Vec<u8>,
    scratch: Vec<u8>,
    group_start: Option<u64>,
    group_chunks: i32,
    head_error: Option<Error>,
    done: bool,
}

impl<'a, S: Source + ?Sized> SequentialWalk<'a, S> {
    /// A walk over a whole file; the head (magic and version) is checked on the first
    /// step.
    pub fn new(src: &'a S) -> Self {
        let (limit, head_error) = match src.size() {
            Ok(len) => (len, check_head(src, len).err()),
            Err(e) => (0, Some(e)),
        };
        Self::make(src, limit, None, head_error)
    }

    /// A walk whose separator is known to be at `meta_offset` (head already checked).
    pub(crate) fn bounded(src: &'a S, meta_offset: u64) -> Self {
        Self::make(src, meta_offset + 1, Some(meta_offset), None)
    }

    fn make(src: &'a S, limit: u64, separator_at: Option<u64>, head_error: Option<Error>) -> Self {
        SequentialWalk {
            src,
            pos: HEADER_LEN,
            limit,
            separator_at,
            chunk: None,
            chunk_buf: Vec::new(),
            small: Vec::new(),
            scratch: Vec::new(),
            group_start: None,
            group_chunks: 0,
            head_error,
            done: false,
        }
    }

    /// Offset of the next structure (after the current chunk's remaining pages).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Decodes a page the walk yielded (from the current chunk's buffer if it is still
    /// there, otherwise re-read from the source).
    pub fn decode_page(&mut self, page: &PageRef, out: &mut PageData) -> Result<()> {
        let what = format!("page {} of the chunk at {}", page.index, page.chunk_offset);
        let len = page.header.compressed_size as usize;
        let in_buf = self.chunk.as_ref().and_then(|c| {
            if c.offset != page.chunk_offset {
                return None;
            }
            let start = page.body_offset.checked_sub(c.data_offset)? as usize;
            self.chunk_buf.get(start..start.checked_add(len)?)
        });
        let owned;
        let body = match in_buf {
            Some(b) => b,
            None => {
                owned = read_range(
                    self.src,
                    page.body_offset,
                    len as u64,
                    self.limit,
                    "page body",
                )?;
                &owned[..]
            }
        };
        decode_page(
            page.compression,
            page.encoding,
            page.data_type,
            &page.header,
            body,
            page.body_offset,
            &mut self.scratch,
            out,
            &what,
        )
    }

    /// Reads `N` bytes at `offset`, checked against the walk's limit.
    fn read_array<const N: usize>(&self, offset: u64, what: &str) -> Result<[u8; N]> {
        if offset.saturating_add(N as u64) > self.limit {
            return Err(Error::format(
                offset,
                format_args!(
                    "{what}: {N} bytes, but the data ends at byte {}",
                    self.limit
                ),
            ));
        }
        let mut a = [0u8; N];
        self.src.read_exact_at(offset, &mut a)?;
        Ok(a)
    }

    /// Reads `len` bytes at `offset` into the reused small-structure buffer.
    fn read_small(&mut self, offset: u64, len: u64, what: &str) -> Result<()> {
        read_range_into(self.src, offset, len, self.limit, what, &mut self.small)
    }

    /// Reads an i32-length-prefixed string's length at `offset + 1` (after a marker)
    /// and returns the full size of a structure `fixed + len` bytes long.
    fn sized_after_marker(&self, offset: u64, fixed: u64, what: &str) -> Result<u64> {
        let n = i32::from_be_bytes(self.read_array::<4>(offset + 1, what)?);
        if n < 0 || offset + fixed + n as u64 > self.limit {
            return Err(Error::format(
                offset + 1,
                format_args!(
                    "{what}: a name length that fits before byte {}, found {n}",
                    self.limit
                ),
            ));
        }
        Ok(fixed + n as u64)
    }

    fn step(&mut self) -> Result<Option<WalkEvent>> {
        if let Some(e) = self.head_error.take() {
            return Err(e);
        }
        // Pages of the current chunk first.
        if let Some(ch) = self.chunk.as_mut() {
            if ch.pos < self.chunk_buf.len() {
                let offset = ch.data_offset + ch.pos as u64;
                let mut r = ByteReader::new(&self.chunk_buf[ch.pos..], offset);
                let header = PageHeader::deserialize(&mut r, ch.header.data_type)?;
                check_page_header(&header, offset)?;
                let header_size = r.position() as u64;
                let body_offset = r.offset();
                r.take(
                    header.compressed_size as usize,
                    "page body (within the chunk's data size)",
                )?;
                ch.pos += r.position();
                let index = ch.pages as u32;
                ch.pages += 1;
                if ch.pages > ch.header.num_pages {
                    return Err(Error::format(
                        offset,
                        format_args!(
                            "at most {} pages in the chunk at {} (chunk header)",
                            ch.header.num_pages, ch.offset
                        ),
                    ));
                }
                return Ok(Some(WalkEvent::Page(PageRef {
                    chunk_offset: ch.offset,
                    index,
                    offset,
                    header_size,
                    body_offset,
                    header,
                    data_type: ch.header.data_type,
                    encoding: ch.header.encoding,
                    compression: ch.header.compression,
                })));
            }
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
            self.chunk = None;
        }
        let at = self.pos;
        if at >= self.limit {
            return Err(Error::format(
                at,
                "a marker (chunk header, chunk group footer, version or separator), but the data ends here",
            ));
        }
        let [m] = self.read_array::<1>(at, "marker")?;
        match m {
            marker::CHUNK_HEADER => {
                let hlen = self.sized_after_marker(at, 19, "chunk header")?;
                self.read_small(at, hlen, "chunk header")?;
                let mut r = ByteReader::new(&self.small, at);
                let header = ChunkHeader::deserialize(&mut r)?;
                let data_offset = at + hlen;
                read_range_into(
                    self.src,
                    data_offset,
                    header.data_size as u64,
                    self.limit,
                    "chunk data (chunk header data size)",
                    &mut self.chunk_buf,
                )?;
                self.pos = data_offset + header.data_size as u64;
                if self.group_start.is_none() {
                    self.group_start = Some(at);
                }
                self.group_chunks += 1;
                self.chunk = Some(WalkChunk {
                    offset: at,
                    header: header.clone(),
                    data_offset,
                    pos: 0,
                    pages: 0,
                });
                Ok(Some(WalkEvent::ChunkHeader {
                    offset: at,
                    header_size: hlen,
                    header,
                }))
            }
            marker::CHUNK_GROUP_FOOTER => {
                let size = self.sized_after_marker(at, 17, "chunk group footer")?;
                self.read_small(at + 1, size - 1, "chunk group footer")?;
                let mut r = ByteReader::new(&self.small, at + 1);
                let footer = ChunkGroupFooter::deserialize_after_marker(&mut r)?;
                let Some(group_offset) = self.group_start.take() else {
                    return Err(Error::format(
                        at,
                        "a chunk header before a chunk group footer (a group has at least one chunk)",
                    ));
                };
                let chunks = std::mem::take(&mut self.group_chunks);
                if footer.data_size as u64 != at - group_offset || footer.num_chunks != chunks {
                    return Err(Error::format(
                        at,
                        format_args!(
                            "a chunk group footer of {:?} matching its group ({} data bytes from {group_offset}, {chunks} chunks), found data size {} and {} chunks",
                            footer.device,
                            at - group_offset,
                            footer.data_size,
                            footer.num_chunks
                        ),
                    ));
                }
                self.pos = at + size;
                Ok(Some(WalkEvent::ChunkGroupFooter {
                    offset: at,
                    size,
                    group_offset,
                    footer,
                }))
            }
            marker::VERSION => {
                self.no_open_group(at, "a version record")?;
                let version = i64::from_be_bytes(self.read_array::<8>(at + 1, "version record")?);
                self.pos = at + 9;
                Ok(Some(WalkEvent::Version {
                    offset: at,
                    version,
                }))
            }
            marker::SEPARATOR => {
                self.no_open_group(at, "the separator")?;
                if let Some(s) = self.separator_at {
                    if s != at {
                        return Err(Error::format(
                            at,
                            format_args!("the separator at the meta offset {s}, found it here"),
                        ));
                    }
                }
                self.done = true;
                Ok(Some(WalkEvent::Separator { offset: at }))
            }
            other => Err(Error::format(
                at,
                format_args!(
                    "a marker 0x00 (chunk group footer), 0x01 (chunk header), 0x02 (separator) or 0x03 (version), found 0x{other:02x}"
                ),
            )),
        }
    }

    fn no_open_group(&self, at: u64, what: &str) -> Result<()> {
        match self.group_start {
            Some(g) => Err(Error::format(
                at,
                format_args!("the chunk group footer of the group starting at {g} before {what}"),
            )),
            None => Ok(()),
        }
    }
}

impl<S: Source + ?Sized> Iterator for SequentialWalk<'_, S> {
    type Item = Result<WalkEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(ev)) => Some(Ok(ev)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
