//! The recovery scan of an incomplete file (spec §8.4, Java `selfCheck`).

use super::walk::{SequentialWalk, WalkEvent};
use super::{check_head, Source};
use crate::errors::{Error, Result};
use crate::file::metadata::{ChunkHeader, ChunkMetadata};
use crate::file::{HEADER_LEN, MAGIC};
use crate::statistics::Statistics;

/// A chunk of a recovered chunk group.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveredChunk {
    /// The chunk header as stored.
    pub header: ChunkHeader,
    /// Rebuilt chunk metadata (statistics = merge of the page statistics).
    pub metadata: ChunkMetadata,
}

/// A complete chunk group found by the scan.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveredChunkGroup {
    /// Device of the group (from its footer).
    pub device: String,
    /// Offset of the group's first chunk header.
    pub offset: u64,
    /// Offset of the footer's marker.
    pub footer_offset: u64,
    /// Offset just after the footer.
    pub end: u64,
    /// The group's chunks, in file order.
    pub chunks: Vec<RecoveredChunk>,
}

/// What the recovery scan found.
#[derive(Debug)]
pub struct Recovery {
    /// Size of the scanned file.
    pub file_len: u64,
    /// Where to cut the file: just after the last complete chunk group footer or
    /// version record, or at the separator if the data section is complete; 12 when
    /// nothing after the head is complete (Java 0.10 says 6 here — a bug fixed upstream;
    /// we keep the version bytes).
    pub truncate_at: u64,
    /// Every complete chunk group before `truncate_at`, in file order.
    pub chunk_groups: Vec<RecoveredChunkGroup>,
    /// `(offset after the record, version)` of every version record before
    /// `truncate_at`.
    pub version_info: Vec<(i64, i64)>,
    /// Offset of the separator, if the scan reached it (the data section is complete).
    pub separator_at: Option<u64>,
    /// Whether the file ends with the tail magic (it may be complete).
    pub has_tail_magic: bool,
    /// Why the scan stopped before a separator (truncation or corruption), if it did.
    pub stopped_by: Option<Error>,
}

impl Recovery {
    /// Number of chunks in the recovered groups.
    pub fn chunk_count(&self) -> usize {
        self.chunk_groups.iter().map(|g| g.chunks.len()).sum()
    }
}

/// Scans the data section of `src` from byte 12 and reports the last consistent
/// boundary (spec §8.4). Fails only if the head is not `"TsFile000002"`.
///
/// The scan is stricter than Java's: a chunk whose pages do not fill its data size
/// exactly, or a footer whose data size or chunk count disagree with the group, ends
/// it like a truncation does.
pub fn recover<S: Source + ?Sized>(src: &S) -> Result<Recovery> {
    let len = src.size()?;
    check_head(src, len)?;
    let has_tail_magic = len >= HEADER_LEN + 6 && {
        let mut t = [0u8; 6];
        src.read_exact_at(len - 6, &mut t)?;
        &t == MAGIC
    };
    let mut rec = Recovery {
        file_len: len,
        truncate_at: HEADER_LEN,
        chunk_groups: Vec::new(),
        version_info: Vec::new(),
        separator_at: None,
        has_tail_magic,
        stopped_by: None,
    };
    if len == HEADER_LEN {
        return Ok(rec);
    }
    let mut pending: Vec<RecoveredChunk> = Vec::new();
    let walk = SequentialWalk::new(src);
    for ev in walk {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                rec.stopped_by = Some(e);
                break;
            }
        };
        match ev {
            WalkEvent::ChunkHeader { offset, header, .. } => {
                pending.push(RecoveredChunk {
                    metadata: ChunkMetadata {
                        measurement: header.measurement.clone(),
                        offset_of_chunk_header: offset as i64,
                        data_type: header.data_type,
                        statistics: Statistics::new(header.data_type),
                    },
                    header,
                });
            }
            WalkEvent::Page(p) => {
                if let Some(c) = pending.last_mut() {
                    let st = &mut c.metadata.statistics;
                    // Page counts are bounded by their body sizes (checked by the
                    // walk), so this only guards against a corrupt sum.
                    if st.count.checked_add(p.header.statistics.count).is_none() {
                        rec.stopped_by = Some(Error::format(
                            p.offset,
                            "chunk statistics whose point count fits in an i64",
                        ));
                        break;
                    }
                    if let Err(e) = st.merge(&p.header.statistics) {
                        rec.stopped_by = Some(Error::format(p.offset, e));
                        break;
                    }
                }
            }
            WalkEvent::ChunkGroupFooter {
                offset,
                size,
                group_offset,
                footer,
            } => {
                rec.chunk_groups.push(RecoveredChunkGroup {
                    device: footer.device,
                    offset: group_offset,
                    footer_offset: offset,
                    end: offset + size,
                    chunks: std::mem::take(&mut pending),
                });
                rec.truncate_at = offset + size;
            }
            WalkEvent::Version { offset, version } => {
                rec.version_info.push(((offset + 9) as i64, version));
                rec.truncate_at = offset + 9;
            }
            WalkEvent::Separator { offset } => {
                rec.separator_at = Some(offset);
                rec.truncate_at = offset;
            }
        }
    }
    Ok(rec)
}
