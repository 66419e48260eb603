//! `tsfiled sketch FILE [--output PATH]`: the "TsFile Sketch" of the IoTDB 0.10
//! documentation (`TsFileSketchTool`): a `POSITION | CONTENT` listing of every
//! structure of a file, in file order.
//!
//! The labels, numbers and layout (`%20d|\t...`) are those of the Java tool. It lists
//! more than the Java tool does, so that the positions cover the whole file: every
//! `TimeseriesMetadata` and every index node below the root (the Java tool lists only
//! the root's children), and any bytes no structure accounts for
//! (`[unaccounted bytes]`). `[num of devices]` is the number of devices in the index
//! (Java prints the root's entry count, which differs for deep indexes).
//!
//! A file that cannot be opened as a complete TsFile (no tail, bad metadata) is still
//! sketched as far as its data section can be walked, followed by the reason.

use crate::errors::{Error, Result};
use crate::file::metadata::{
    ChunkGroupFooter, ChunkHeader, MetadataIndexNode, TimeseriesMetadata, TsFileMetadata,
};
use crate::file::reader::{SequentialWalk, Source, TsFileReader, WalkEvent};
use crate::file::HEADER_LEN;
use crate::statistics::{Statistics, ValueStats};
use crate::tools::javafmt::{escape_text, java_f32, java_f64, push_escaped};
use crate::DataType;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;

/// What one listed structure is.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// `TsFile` at 0.
    HeadMagic(String),
    /// `000002` at 6.
    VersionNumber(String),
    /// Banner before a chunk group's chunks (no bytes of its own).
    ChunkGroupStart {
        /// Device of the group.
        device: String,
        /// Chunks found in the group.
        chunks: usize,
    },
    /// A chunk: header and pages.
    Chunk {
        /// The chunk header.
        header: ChunkHeader,
        /// Statistics merged from the page headers.
        statistics: Statistics,
    },
    /// A chunk group footer.
    ChunkGroupFooter(ChunkGroupFooter),
    /// Banner after a chunk group's footer (no bytes of its own).
    ChunkGroupEnd(String),
    /// A version record.
    VersionRecord(i64),
    /// The separator that ends the data section.
    Separator,
    /// A series' `ChunkMetadata` list (shown with the series statistics, as Java does).
    ChunkMetadataList {
        /// `device.measurement`.
        path: String,
        /// The series' `TimeseriesMetadata`.
        series: TimeseriesMetadata,
    },
    /// A `TimeseriesMetadata`.
    TimeseriesMetadata {
        /// `device.measurement`.
        path: String,
        /// The metadata.
        series: TimeseriesMetadata,
    },
    /// An index node below the root.
    IndexNode {
        /// Name of the entry that points at the node.
        name: String,
        /// The node.
        node: MetadataIndexNode,
    },
    /// `TsFileMetadata` with its bloom filter.
    TsFileMetadata {
        /// The metadata.
        metadata: Box<TsFileMetadata>,
        /// Devices in the index.
        devices: usize,
    },
    /// The i32 size of `TsFileMetadata`.
    MetadataSize(u64),
    /// `TsFile` at the end.
    TailMagic(String),
    /// Bytes between two listed structures that none of them accounts for.
    Unaccounted,
    /// Two listed structures overlap (the later one starts inside the earlier).
    Overlap(u64),
    /// End of the file (no bytes).
    End,
    /// Why the sketch stops early.
    Error(String),
}

/// One line group of the sketch: a structure at `offset` of `size` bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Absolute offset.
    pub offset: u64,
    /// Bytes covered (0 for banners, the end line and errors).
    pub size: u64,
    /// The structure.
    pub part: Part,
}

/// A sketch of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Sketch {
    /// File length in bytes.
    pub file_len: u64,
    /// Every entry in file order.
    pub entries: Vec<Entry>,
    /// Whether the sketch stopped early or found unaccounted/overlapping bytes.
    pub complete: bool,
}

fn e(offset: u64, size: u64, part: Part) -> Entry {
    Entry { offset, size, part }
}

/// Sketches the TsFile in `src`.
pub fn sketch<S: Source>(src: S) -> Sketch {
    let file_len = src.size().unwrap_or(0);
    let mut entries = Vec::new();
    let mut head = [0u8; 12];
    if file_len >= HEADER_LEN && src.read_exact_at(0, &mut head).is_ok() {
        entries.push(e(
            0,
            6,
            Part::HeadMagic(String::from_utf8_lossy(&head[..6]).into()),
        ));
        entries.push(e(
            6,
            6,
            Part::VersionNumber(String::from_utf8_lossy(&head[6..]).into()),
        ));
    }
    match TsFileReader::open(&src) {
        Ok(reader) => {
            let walk_ok = walk_data(reader.walk(), &mut entries);
            let meta_ok = metadata(&reader, &mut entries);
            finish(file_len, entries, walk_ok && meta_ok)
        }
        Err(open_err) => {
            // Sketch what the data section holds, then say why the file is not complete.
            walk_data(SequentialWalk::new(&src), &mut entries);
            let at = entries.last().map_or(0, |x| x.offset + x.size);
            entries.push(e(
                at,
                0,
                Part::Error(format!("not a complete TsFile: {open_err}")),
            ));
            finish(file_len, entries, false)
        }
    }
}

/// Adds the data-section entries from a walk; false if the walk failed.
fn walk_data<S: Source + ?Sized>(walk: SequentialWalk<'_, S>, entries: &mut Vec<Entry>) -> bool {
    let mut group: Vec<Entry> = Vec::new();
    let mut group_start = 0u64;
    for ev in walk {
        let ev = match ev {
            Ok(ev) => ev,
            Err(err) => {
                let at = group
                    .last()
                    .or(entries.last())
                    .map_or(0, |x| x.offset + x.size);
                entries.append(&mut group);
                entries.push(e(at, 0, Part::Error(err.to_string())));
                return false;
            }
        };
        match ev {
            WalkEvent::ChunkHeader {
                offset,
                header_size,
                header,
            } => {
                if group.is_empty() {
                    group_start = offset;
                }
                let statistics = Statistics::new(header.data_type);
                let size = header_size + header.data_size.max(0) as u64;
                group.push(e(offset, size, Part::Chunk { header, statistics }));
            }
            WalkEvent::Page(p) => {
                if let Some(Entry {
                    part: Part::Chunk { statistics, .. },
                    ..
                }) = group.last_mut()
                {
                    // Same type by construction (the walk decodes with the chunk's type).
                    let _ = statistics.merge(&p.header.statistics);
                }
            }
            WalkEvent::ChunkGroupFooter {
                offset,
                size,
                footer,
                ..
            } => {
                let device = footer.device.clone();
                let start = if group.is_empty() {
                    offset
                } else {
                    group_start
                };
                entries.push(e(
                    start,
                    0,
                    Part::ChunkGroupStart {
                        device: device.clone(),
                        chunks: group.len(),
                    },
                ));
                entries.append(&mut group);
                entries.push(e(offset, size, Part::ChunkGroupFooter(footer)));
                entries.push(e(offset + size, 0, Part::ChunkGroupEnd(device)));
            }
            WalkEvent::Version { offset, version } => {
                entries.append(&mut group);
                entries.push(e(offset, 9, Part::VersionRecord(version)));
            }
            WalkEvent::Separator { offset } => {
                entries.append(&mut group);
                entries.push(e(offset, 1, Part::Separator));
            }
        }
    }
    entries.append(&mut group);
    true
}

/// Adds the metadata-section entries; false if the index could not be read.
fn metadata<S: Source>(reader: &TsFileReader<S>, entries: &mut Vec<Entry>) -> bool {
    let mut meta: Vec<Entry> = Vec::new();
    let mut ok = true;
    let mut devices = 0;
    match reader.index_tree() {
        Ok(tree) => {
            devices = tree.devices.len();
            for d in &tree.devices {
                for (off, ts) in &d.series {
                    let path = format!("{}.{}", d.device, ts.measurement);
                    meta.push(e(
                        ts.chunk_metadata_offset.max(0) as u64,
                        ts.chunk_metadata_size.max(0) as u64,
                        Part::ChunkMetadataList {
                            path: path.clone(),
                            series: ts.clone(),
                        },
                    ));
                    meta.push(e(
                        *off,
                        ts.serialized_size() as u64,
                        Part::TimeseriesMetadata {
                            path,
                            series: ts.clone(),
                        },
                    ));
                }
            }
            let mut names: HashMap<i64, &str> = HashMap::new();
            for n in &tree.nodes {
                for c in &n.node.children {
                    names.entry(c.offset).or_insert(&c.name);
                }
            }
            for n in tree.nodes.iter().filter(|n| n.depth > 0) {
                let name = names.get(&(n.offset as i64)).copied().unwrap_or("?");
                meta.push(e(
                    n.offset,
                    n.node.serialized_size() as u64,
                    Part::IndexNode {
                        name: name.to_owned(),
                        node: n.node.clone(),
                    },
                ));
            }
        }
        Err(err) => {
            meta.push(e(
                reader.meta_offset() + 1,
                0,
                Part::Error(format!("metadata index: {err}")),
            ));
            ok = false;
        }
    }
    // Stable: an error entry stays before what starts at the same offset.
    meta.sort_by_key(|x| x.offset);
    entries.append(&mut meta);
    let pos = reader.metadata_pos();
    let size = reader.metadata_size();
    entries.push(e(
        pos,
        size,
        Part::TsFileMetadata {
            metadata: Box::new(reader.metadata().clone()),
            devices,
        },
    ));
    entries.push(e(pos + size, 4, Part::MetadataSize(size)));
    entries.push(e(pos + size + 4, 6, Part::TailMagic("TsFile".into())));
    ok
}

/// Inserts `Unaccounted`/`Overlap` entries where the covered ranges are not
/// contiguous, and the end line.
fn finish(file_len: u64, entries: Vec<Entry>, ok: bool) -> Sketch {
    let mut out = Vec::with_capacity(entries.len() + 1);
    let mut pos = 0u64;
    let mut complete = ok;
    for x in entries {
        if x.size > 0 || matches!(x.part, Part::Error(_)) {
            if x.offset > pos {
                out.push(e(pos, x.offset - pos, Part::Unaccounted));
                complete = false;
            } else if x.offset < pos {
                out.push(e(x.offset, 0, Part::Overlap(pos - x.offset)));
                complete = false;
            }
            pos = pos.max(x.offset + x.size);
        }
        out.push(x);
    }
    if complete && pos < file_len {
        out.push(e(pos, file_len - pos, Part::Unaccounted));
        complete = false;
    }
    out.push(e(file_len, 0, Part::End));
    Sketch {
        file_len,
        entries: out,
        complete,
    }
}

/// Java's `Statistics.toString()`.
pub fn statistics_text(s: &Statistics) -> String {
    let mut t = format!(
        "startTime: {} endTime: {} count: {}",
        s.start_time, s.end_time, s.count
    );
    macro_rules! num {
        ($n:expr, $f:expr) => {{
            let n = $n;
            let _ = write!(
                t,
                " [minValue:{},maxValue:{},firstValue:{},lastValue:{},sumValue:{}]",
                $f(n.min),
                $f(n.max),
                $f(n.first),
                $f(n.last),
                java_f64(n.sum)
            );
        }};
    }
    match &s.values {
        ValueStats::Boolean { first, last } => {
            let _ = write!(t, " [firstValue:{first},lastValue:{last}]");
        }
        ValueStats::Int32(n) => num!(n, |v: i32| v.to_string()),
        ValueStats::Int64(n) => num!(n, |v: i64| v.to_string()),
        ValueStats::Float(n) => num!(n, java_f32),
        ValueStats::Double(n) => num!(n, java_f64),
        ValueStats::Text { first, last } => {
            let _ = write!(
                t,
                " [firstValue:{},lastValue:{}]",
                escape_text(first),
                escape_text(last)
            );
        }
    }
    t
}

fn type_name(t: DataType) -> &'static str {
    t.name()
}

/// A name as stored, with control characters escaped so that it stays on its line.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_escaped(&mut out, s);
    out
}

impl Sketch {
    /// Writes the sketch text; `path` is shown as the file path.
    pub fn render(&self, path: &str, out: &mut impl Write) -> std::io::Result<()> {
        let blank = " ".repeat(20);
        let bar = "|".repeat(21);
        writeln!(
            out,
            "-------------------------------- TsFile Sketch --------------------------------"
        )?;
        writeln!(out, "file path: {path}")?;
        writeln!(out, "file length: {}", self.file_len)?;
        writeln!(out)?;
        writeln!(out, "{:>20}|\tCONTENT", "POSITION")?;
        writeln!(out, "{:>20} \t-------", "--------")?;
        for x in &self.entries {
            let p = x.offset;
            match &x.part {
                Part::HeadMagic(m) => writeln!(out, "{p:>20}|\t[magic head] {m}")?,
                Part::VersionNumber(v) => writeln!(out, "{p:>20}|\t[version number] {v}")?,
                Part::ChunkGroupStart { device, chunks } => {
                    writeln!(
                        out,
                        "{bar}\t[Chunk Group] of {}, num of Chunks:{chunks}",
                        esc(device)
                    )?
                }
                Part::Chunk { header, statistics } => {
                    writeln!(
                        out,
                        "{p:>20}|\t[Chunk] of {}, numOfPoints:{}, time range:[{},{}], tsDataType:{}, ",
                        esc(&header.measurement),
                        statistics.count,
                        statistics.start_time,
                        statistics.end_time,
                        type_name(header.data_type)
                    )?;
                    writeln!(out, "{blank} \t{}", statistics_text(statistics))?;
                    writeln!(out, "{blank}|\t\t[marker] 1")?;
                    writeln!(out, "{blank}|\t\t[ChunkHeader]")?;
                    writeln!(out, "{blank}|\t\t{} pages", header.num_pages)?;
                }
                Part::ChunkGroupFooter(f) => {
                    writeln!(out, "{p:>20}|\t[Chunk Group Footer]")?;
                    writeln!(out, "{blank}|\t\t[marker] 0")?;
                    writeln!(out, "{blank}|\t\t[deviceID] {}", esc(&f.device))?;
                    writeln!(out, "{blank}|\t\t[dataSize] {}", f.data_size)?;
                    writeln!(out, "{blank}|\t\t[num of chunks] {}", f.num_chunks)?;
                }
                Part::ChunkGroupEnd(d) => {
                    writeln!(out, "{bar}\t[Chunk Group] of {} ends", esc(d))?
                }
                Part::VersionRecord(v) => {
                    writeln!(out, "{p:>20}|\t[Version Info]")?;
                    writeln!(out, "{blank}|\t\t[marker] 3")?;
                    writeln!(out, "{blank}|\t\t[version] {v}")?;
                }
                Part::Separator => writeln!(out, "{p:>20}|\t[marker] 2")?,
                Part::ChunkMetadataList { path, series } => {
                    writeln!(
                        out,
                        "{p:>20}|\t[ChunkMetadataList] of {}, tsDataType:{}",
                        esc(path),
                        type_name(series.data_type)
                    )?;
                    writeln!(out, "{blank}|\t[{}] ", statistics_text(&series.statistics))?;
                }
                Part::TimeseriesMetadata { path, series } => {
                    writeln!(
                        out,
                        "{p:>20}|\t[TimeseriesMetadata] of {}, tsDataType:{}",
                        esc(path),
                        type_name(series.data_type)
                    )?;
                    writeln!(
                        out,
                        "{blank}|\t\t[startOffsetOfChunkMetadataList] {}, [chunkMetaDataListDataSize] {}",
                        series.chunk_metadata_offset, series.chunk_metadata_size
                    )?;
                }
                Part::IndexNode { name, node } => {
                    writeln!(out, "{p:>20}|\t[MetadataIndex] of {}", esc(name))?;
                    writeln!(
                        out,
                        "{blank}|\t\t[nodeType] {}, [children] {}, [endOffset] {}",
                        node.node_type.name(),
                        node.children.len(),
                        node.end_offset
                    )?;
                }
                Part::TsFileMetadata { metadata, devices } => {
                    let root = metadata.metadata_index.children.len();
                    writeln!(out, "{p:>20}|\t[TsFileMetadata]")?;
                    writeln!(out, "{blank}|\t\t[num of devices] {devices}")?;
                    writeln!(out, "{blank}|\t\t{root} key&TsMetadataIndex")?;
                    writeln!(out, "{blank}|\t\t[totalChunkNum] {}", metadata.total_chunk_num)?;
                    writeln!(out, "{blank}|\t\t[invalidChunkNum] {}", metadata.invalid_chunk_num)?;
                    match &metadata.bloom_filter {
                        Some(b) => {
                            writeln!(
                                out,
                                "{blank}|\t\t[bloom filter bit vector byte array length] {}",
                                b.serialized_bits_len()
                            )?;
                            writeln!(out, "{blank}|\t\t[bloom filter bit vector byte array] ")?;
                            writeln!(out, "{blank}|\t\t[bloom filter number of bits] {}", b.size())?;
                            writeln!(
                                out,
                                "{blank}|\t\t[bloom filter number of hash functions] {}",
                                b.hash_count()
                            )?;
                        }
                        None => writeln!(out, "{blank}|\t\t[bloom filter] absent")?,
                    }
                }
                Part::MetadataSize(s) => writeln!(out, "{p:>20}|\t[TsFileMetadataSize] {s}")?,
                Part::TailMagic(m) => writeln!(out, "{p:>20}|\t[magic tail] {m}")?,
                Part::Unaccounted => {
                    writeln!(out, "{p:>20}|\t[unaccounted bytes] {}", x.size)?
                }
                Part::Overlap(n) => writeln!(
                    out,
                    "{p:>20}|\t[overlap] the next structure starts {n} bytes inside the previous one"
                )?,
                Part::End => writeln!(out, "{p:>20}|\tEND of TsFile")?,
                Part::Error(m) => writeln!(out, "{p:>20}|\t[error] {m}")?,
            }
        }
        writeln!(out)?;
        writeln!(
            out,
            "---------------------------------- TsFile Sketch End ----------------------------------"
        )?;
        Ok(())
    }

    /// The first error the sketch ran into, if it stopped early.
    pub fn error(&self) -> Option<&str> {
        self.entries.iter().find_map(|x| match &x.part {
            Part::Error(m) => Some(m.as_str()),
            _ => None,
        })
    }
}

/// Sketches the file at `path` into `out` (format 000002, or v4 by [`sketch_v4`]).
/// Returns an error (after writing the sketch) if the file is incomplete or malformed.
pub fn sketch_path(path: &std::path::Path, out: &mut impl Write) -> Result<()> {
    let mut head = [0u8; 7];
    let n = {
        use std::io::Read;
        let mut f = std::fs::File::open(path)?;
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..])? {
                0 => break,
                k => n += k,
            }
        }
        n
    };
    if crate::file::v4::is_v4(&head[..n]) {
        let r = crate::file::v4::TsFileReaderV4::open_path(path)?;
        return sketch_v4(&r, &path.display().to_string(), out);
    }
    let file = std::fs::File::open(path)?;
    let s = sketch(&file);
    s.render(&path.display().to_string(), out)?;
    if s.complete {
        Ok(())
    } else {
        Err(Error::invalid(format_args!(
            "{}: {}",
            path.display(),
            s.error()
                .unwrap_or("bytes not accounted for by any structure (see the sketch)")
        )))
    }
}

/// The TsFile Sketch of a format v4 file, in the layout of TsFile 2.x's
/// `TsFileSketchTool`: head, every chunk group (header, chunks with their statistics,
/// chunk headers, page headers and page data, operation index ranges), the separator,
/// every `TimeseriesMetadata` by position, the file metadata, its size and the tail.
/// The `[version number]` line names the format (4).
pub fn sketch_v4(
    r: &crate::file::v4::TsFileReaderV4,
    path: &str,
    out: &mut impl Write,
) -> Result<()> {
    use crate::file::v4::metadata::DeviceId;
    use crate::file::v4::statistics::StatisticsV4;
    use crate::file::v4::{marker, HEADER_LEN, TIME_COLUMN_MASK};
    use crate::tools::sequence::statistics_text_v4;
    use crate::util::io::ByteReader;
    let bytes = r.bytes();
    let len = bytes.len() as u64;
    let meta = r.metadata();
    let end = meta.meta_offset;
    let bar = "|".repeat(21);
    let mut t = String::new();
    let _ = writeln!(
        t,
        "-------------------------------- TsFile Sketch --------------------------------"
    );
    let _ = writeln!(t, "file path: {path}");
    let _ = writeln!(t, "file length: {len}");
    let _ = writeln!(t);
    let _ = writeln!(t, "{:>20}|\tCONTENT", "POSITION");
    let _ = writeln!(t, "{:>20} \t-------", "--------");
    let _ = writeln!(
        t,
        "{:>20}|\t[magic head] {}",
        0,
        String::from_utf8_lossy(&bytes[..6])
    );
    let _ = writeln!(t, "{:>20}|\t[version number] {}", 6, bytes[6]);
    // Chunk offset -> (series path, statistics), from the index.
    let mut chunk_stats: HashMap<u64, (String, StatisticsV4)> = HashMap::new();
    let mut ts_list: Vec<(u64, String, &'static str, String)> = Vec::new();
    let devices = r.devices()?;
    for d in &devices {
        for ts in &d.series {
            let p = format!("{}.{}", d.device.path(), ts.measurement);
            for (off, st) in &ts.chunks {
                chunk_stats.insert(*off, (p.clone(), st.clone()));
            }
            let tname = if ts.type_code == crate::file::v4::VECTOR_TYPE {
                "VECTOR"
            } else {
                DataType::from_code(ts.type_code as i16).map_or("?", |t| t.name())
            };
            ts_list.push((ts.offset, p, tname, statistics_text_v4(&ts.statistics)));
        }
    }
    let mut pos = HEADER_LEN;
    // The open chunk group: device, chunks so far, where its banner goes in `t`.
    let mut group: Option<(String, usize, usize)> = None;
    let close_group = |t: &mut String, g: &mut Option<(String, usize, usize)>| {
        if let Some((dev, n, at)) = g.take() {
            let dev = esc(&dev);
            t.insert_str(
                at,
                &format!("{bar}\t[ChunkGroup] of {dev}, num of Chunks:{n}\n"),
            );
            let _ = writeln!(t, "{bar}\t[ChunkGroup] of {dev} ends");
        }
    };
    loop {
        let m = *bytes
            .get(pos as usize)
            .filter(|_| pos <= end)
            .ok_or_else(|| Error::format(pos, "a marker before the metadata"))?;
        match m {
            marker::CHUNK_GROUP_HEADER => {
                close_group(&mut t, &mut group);
                let mut br = ByteReader::new(&bytes[pos as usize + 1..end as usize], pos + 1);
                let d = DeviceId::deserialize(&mut br)?;
                let dev = d.path();
                // the banner (with the chunk count) is inserted here when the group ends
                let banner_at = t.len();
                let _ = writeln!(t, "{pos:>20}|\t[ChunkGroup Header]");
                let _ = writeln!(t, "{pos:>20}|\t\t[marker] 0");
                let _ = writeln!(
                    t,
                    "{:>20}|\t\t[deviceID] {} size={}",
                    pos + 1,
                    esc(&dev),
                    br.offset() - pos - 1
                );
                group = Some((dev, 0, banner_at));
                pos = br.offset();
            }
            marker::OPERATION_INDEX_RANGE => {
                let mut br = ByteReader::new(&bytes[pos as usize + 1..end as usize], pos + 1);
                let a = br.read_i64("operation index range start")?;
                let b = br.read_i64("operation index range end")?;
                let _ = writeln!(t, "{pos:>20}|\t[operation index range] {a} {b}");
                pos = br.offset();
            }
            marker::SEPARATOR => {
                close_group(&mut t, &mut group);
                let _ = writeln!(t, "{pos:>20}|\t[marker] 2");
                break;
            }
            m if matches!(
                m & 0x3f,
                marker::CHUNK_HEADER | marker::ONLY_ONE_PAGE_CHUNK_HEADER
            ) =>
            {
                let (h, data_at) = r.chunk_header(pos)?;
                let (series, stats) = match chunk_stats.get(&pos) {
                    Some((p, st)) => (esc(p), statistics_text_v4(st)),
                    None => (esc(&h.measurement), "(not in the index)".to_string()),
                };
                if let Some(g) = group.as_mut() {
                    g.1 += 1;
                }
                let _ = writeln!(t, "{pos:>20}|\t[Chunk] of {series}, {stats}");
                let dtype = if h.chunk_type & TIME_COLUMN_MASK != 0 {
                    "VECTOR"
                } else {
                    DataType::from_code(h.type_code as i16).map_or("?", |t| t.name())
                };
                let _ = writeln!(
                    t,
                    "{pos:>20}|\t\t[Chunk Header] marker={}, measurementID={}, dataSize={}, dataType={dtype}, compressionType={}, encodingType={}, size={}",
                    h.chunk_type as i8,
                    esc(&h.measurement),
                    h.data_size,
                    h.compression().map_or("?", |c| c.name()),
                    h.encoding().map_or("?", |e| e.v4_name()),
                    data_at - pos
                );
                let chunk_end = data_at + h.data_size as u64;
                let mut br = ByteReader::new(&bytes[data_at as usize..chunk_end as usize], data_at);
                let mut page = 0;
                while !br.is_empty() {
                    page += 1;
                    let at = br.offset();
                    let unc = br.read_uvarint("page uncompressed size")?;
                    if unc == 0 {
                        let _ = writeln!(
                            t,
                            "{at:>20}|\t\t\t[PageHeader-{page}]  all null, HeaderSize:1"
                        );
                        continue;
                    }
                    let comp = br.read_uvarint("page compressed size")?;
                    if h.single_page() {
                        let data = br.offset();
                        let _ = writeln!(
                            t,
                            "{at:>20}|\t\t\t[Page Header]  HeaderSize:{}, UncompressedSize:{unc}, CompressedSize:{comp}",
                            data - at
                        );
                        let _ = writeln!(t, "{data:>20}|\t\t\t[Page Data]  Size:{comp}");
                    } else {
                        let st = StatisticsV4::deserialize(&mut br, h.type_code)?;
                        let data = br.offset();
                        let st = statistics_text_v4(&st);
                        let _ = writeln!(
                            t,
                            "{at:>20}|\t\t\t[PageHeader-{page}]  HeaderSize:{}, UncompressedSize:{unc}, CompressedSize:{comp}, {st}",
                            data - at
                        );
                        let _ = writeln!(
                            t,
                            "{data:>20}|\t\t\t[Page-{page}] , CompressedSize:{comp}, {st}"
                        );
                    }
                    br.take(comp as usize, "page data")?;
                }
                pos = chunk_end;
            }
            m => {
                return Err(Error::format(
                    pos,
                    format_args!("a v4 marker, found {m:#04x}"),
                ))
            }
        }
    }
    ts_list.sort_by_key(|x| x.0);
    for (off, p, tname, st) in &ts_list {
        let _ = writeln!(
            t,
            "{off:>20}|\t[TimeseriesMetadata] of {}, tsDataType:{tname}, {st}",
            esc(p)
        );
    }
    let mp = r.metadata_pos();
    let split = "|".repeat(21);
    let _ = writeln!(t, "{split} [TsFileMetadata] begins");
    let _ = writeln!(t, "{mp:>20}|\tTableIndexRootCnt={}", meta.tables.len());
    for (table, root) in &meta.tables {
        let _ = writeln!(
            t,
            "{:>20}|\t[Table Name] {}, root entries={}, nodeType={}",
            "",
            esc(table),
            root.entries.len(),
            root.node_type
        );
    }
    let _ = writeln!(
        t,
        "{:>20}|\tTableSchemaCnt={}",
        "",
        meta.table_schemas.len()
    );
    let _ = writeln!(t, "{:>20}|\t[Meta Offset] {}", "", meta.meta_offset);
    if let Some(b) = &meta.bloom {
        let _ = writeln!(
            t,
            "{:>20}|\t[Bloom Filter] size={} hashFunctions={}",
            "",
            b.size(),
            b.hash_count()
        );
    }
    for (k, v) in &meta.properties {
        let _ = writeln!(
            t,
            "{:>20}|\t[Property] {}={}",
            "",
            esc(k),
            v.as_deref().map_or("null".to_string(), esc)
        );
    }
    let _ = writeln!(t, "{split} [TsFileMetadata] ends");
    let size_pos = len - 10;
    let _ = writeln!(t, "{size_pos:>20}|\t[TsFileMetadataSize] {}", size_pos - mp);
    let _ = writeln!(
        t,
        "{:>20}|\t[magic tail] {}",
        size_pos + 4,
        String::from_utf8_lossy(&bytes[len as usize - 6..])
    );
    let _ = writeln!(t, "{len:>20}|\tEND of TsFile");
    let _ = writeln!(
        t,
        "---------------------------------- TsFile Sketch End ----------------------------------"
    );
    out.write_all(t.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
    }

    fn json_i64(json: &str, key: &str) -> i64 {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        v[key].as_i64().unwrap_or_else(|| panic!("{key}"))
    }

    /// On every golden file the entries cover the file contiguously from 0 to its
    /// length, and the counts agree with the corpus summary.
    #[test]
    fn golden_files_are_covered_contiguously() {
        let mut files = 0;
        for entry in std::fs::read_dir(fixtures()).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|x| x.to_str()) != Some("tsfile") {
                continue;
            }
            files += 1;
            let bytes = std::fs::read(&path).unwrap();
            let meta = std::fs::read_to_string(path.with_extension("meta.json")).unwrap();
            let s = sketch(bytes.as_slice());
            assert!(s.complete, "{}: {:?}", path.display(), s.error());
            let mut pos = 0;
            for x in &s.entries {
                if x.size > 0 {
                    assert_eq!(x.offset, pos, "{}: {:?}", path.display(), x.part);
                    pos += x.size;
                }
            }
            assert_eq!(pos, bytes.len() as u64, "{}", path.display());
            assert_eq!(s.entries.last().unwrap().part, Part::End);
            let count =
                |f: &dyn Fn(&Part) -> bool| s.entries.iter().filter(|x| f(&x.part)).count() as i64;
            assert_eq!(
                count(&|p| matches!(p, Part::Chunk { .. })),
                json_i64(&meta, "chunks")
            );
            assert_eq!(
                count(&|p| matches!(p, Part::ChunkGroupFooter(_))),
                json_i64(&meta, "chunk_groups")
            );
            assert_eq!(
                count(&|p| matches!(p, Part::ChunkGroupStart { .. })),
                json_i64(&meta, "chunk_groups")
            );
            assert_eq!(
                count(&|p| matches!(p, Part::VersionRecord(_))),
                json_i64(&meta, "version_markers")
            );
            assert_eq!(
                count(&|p| matches!(p, Part::TimeseriesMetadata { .. })),
                json_i64(&meta, "series_count")
            );
            let sep = s
                .entries
                .iter()
                .find(|x| x.part == Part::Separator)
                .unwrap();
            assert_eq!(sep.offset as i64, json_i64(&meta, "meta_offset"));
            let mut text = Vec::new();
            s.render("x", &mut text).unwrap();
            let text = String::from_utf8(text).unwrap();
            let total = format!(
                "|\t\t[totalChunkNum] {}\n",
                json_i64(&meta, "total_chunk_num")
            );
            assert!(text.contains(&total), "{}", path.display());
            assert!(!text.contains("[unaccounted") && !text.contains("[overlap]"));
            let points: i64 = s
                .entries
                .iter()
                .filter_map(|x| match &x.part {
                    Part::Chunk { statistics, .. } => Some(statistics.count),
                    _ => None,
                })
                .sum();
            assert_eq!(points, json_i64(&meta, "point_count"), "{}", path.display());
        }
        assert_eq!(files, 56);
    }

    #[test]
    fn sketch_of_struct_versions_matches_the_java_layout() {
        let path = fixtures().join("struct_versions.tsfile");
        let mut out = Vec::new();
        sketch_path(&path, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let meta = std::fs::read_to_string(fixtures().join("struct_versions.meta.json")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "-------------------------------- TsFile Sketch --------------------------------"
        );
        assert_eq!(
            lines[2],
            format!("file length: {}", json_i64(&meta, "file_length"))
        );
        assert_eq!(lines[4], "            POSITION|\tCONTENT");
        assert_eq!(lines[5], "            -------- \t-------");
        assert_eq!(lines[6], "                   0|\t[magic head] TsFile");
        assert_eq!(lines[7], "                   6|\t[version number] 000002");
        assert!(
            lines[8].starts_with("|||||||||||||||||||||\t[Chunk Group] of root."),
            "{}",
            lines[8]
        );
        assert!(
            lines[9].starts_with("                  12|\t[Chunk] of "),
            "{}",
            lines[9]
        );
        assert!(
            lines[10].starts_with("                     \tstartTime: "),
            "{}",
            lines[10]
        );
        assert_eq!(lines[11], "                    |\t\t[marker] 1");
        assert_eq!(lines[12], "                    |\t\t[ChunkHeader]");
        assert_eq!(text.matches("|\t[Version Info]\n").count(), 3);
        assert!(text.contains("|\t\t[marker] 3\n"));
        let len = json_i64(&meta, "file_length");
        assert!(text.ends_with(&format!(
            "{:>20}|\t[magic tail] TsFile\n{len:>20}|\tEND of TsFile\n\n---------------------------------- TsFile Sketch End ----------------------------------\n",
            len - 6
        )));
        let size = json_i64(&meta, "file_metadata_size");
        assert!(text.contains(&format!("{:>20}|\t[TsFileMetadataSize] {size}\n", len - 10)));
        let pos = json_i64(&meta, "file_metadata_pos");
        assert!(text.contains(&format!("{pos:>20}|\t[TsFileMetadata]\n")));
    }

    #[test]
    fn statistics_text_is_javas() {
        let mut s = Statistics::new(DataType::DOUBLE);
        s.update_f64(1, 1.1);
        s.update_f64(5, 2.0e23);
        assert_eq!(
            statistics_text(&s),
            "startTime: 1 endTime: 5 count: 2 [minValue:1.1,maxValue:2.0E23,firstValue:1.1,lastValue:2.0E23,sumValue:2.0E23]"
        );
        let mut s = Statistics::new(DataType::BOOLEAN);
        s.update_bool(3, true);
        assert_eq!(
            statistics_text(&s),
            "startTime: 3 endTime: 3 count: 1 [firstValue:true,lastValue:true]"
        );
        let mut s = Statistics::new(DataType::TEXT);
        s.update_text(3, b"a\tb");
        assert_eq!(
            statistics_text(&s),
            "startTime: 3 endTime: 3 count: 1 [firstValue:a\\tb,lastValue:a\\tb]"
        );
        let mut s = Statistics::new(DataType::INT32);
        s.update_i32(3, -7);
        assert_eq!(
            statistics_text(&s),
            "startTime: 3 endTime: 3 count: 1 [minValue:-7,maxValue:-7,firstValue:-7,lastValue:-7,sumValue:-7.0]"
        );
        let mut s = Statistics::new(DataType::FLOAT);
        s.update_f32(3, "193394.625".parse().unwrap());
        assert!(statistics_text(&s).contains("minValue:193394.62,"));
    }

    #[test]
    fn truncated_and_corrupt_files_are_sketched_as_far_as_possible() {
        let bytes = std::fs::read(fixtures().join("struct_versions.tsfile")).unwrap();
        for cut in [0, 5, 12, 13, 100, 700, bytes.len() / 2, bytes.len() - 1] {
            let s = sketch(&bytes[..cut]);
            assert!(!s.complete, "{cut}");
            assert!(s.error().is_some(), "{cut}");
            let mut out = Vec::new();
            s.render("t", &mut out).unwrap();
            assert_eq!(s.entries.last().unwrap().offset, cut as u64);
        }
        // A truncated file still shows its complete chunk groups.
        let s = sketch(&bytes[..bytes.len() / 2]);
        assert!(s
            .entries
            .iter()
            .any(|x| matches!(x.part, Part::ChunkGroupFooter(_))));
        // Garbage never panics.
        let mut rng = 12345u64;
        for _ in 0..300 {
            let mut b = bytes.clone();
            for _ in 0..4 {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (rng >> 33) as usize % b.len();
                b[i] = (rng >> 20) as u8;
            }
            let s = sketch(b.as_slice());
            let mut out = Vec::new();
            s.render("g", &mut out).unwrap();
        }
    }

    #[test]
    fn empty_file_sketch() {
        let path = fixtures().join("struct_empty.tsfile");
        let mut out = Vec::new();
        sketch_path(&path, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("                  12|\t[marker] 2\n"),
            "{text}"
        );
        assert!(text.contains("|\t\t[num of devices] 0\n"));
        assert!(text.contains("|\t\t[bloom filter bit vector byte array length] 0\n"));
        assert!(!text.contains("[Chunk]"));
    }
}
