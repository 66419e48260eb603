//! Helpers shared by the writer tests: fixture lookup and a structural checker that
//! walks a TsFile with the metadata structures' own deserializers.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use tsfile::basic::DataType;
use tsfile::file::metadata::{
    ChunkGroupFooter, ChunkHeader, ChunkMetadata, MetadataIndexNode, MetadataIndexNodeType,
    PageHeader, TimeseriesMetadata, TsFileMetadata,
};
use tsfile::statistics::Statistics;
use tsfile::util::io::ByteReader;

/// The conformance corpus: `format/tests/fixtures` if present, else the shared copy.
pub fn fixture_dir() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidates = [
        manifest.join("tests/fixtures"),
        manifest.join("../../shared/conformance"),
        manifest.join("../../../shared/conformance"),
        PathBuf::from("/work/shared/conformance"),
    ];
    for c in &candidates {
        if c.join("settings.json").is_file() {
            return c.clone();
        }
    }
    panic!("no conformance fixtures found (looked in {candidates:?})");
}

/// One chunk found by the sequential walk.
#[derive(Debug, Clone)]
pub struct WalkedChunk {
    pub offset: u64,
    /// Index of the chunk group (file order).
    pub group: usize,
    pub device: String,
    pub header: ChunkHeader,
    pub pages: Vec<PageHeader>,
    /// Merge of the page statistics.
    pub stats: Statistics,
}

/// What [`check_file`] found.
#[derive(Debug, Default)]
pub struct Walk {
    pub chunk_groups: usize,
    pub chunks: Vec<WalkedChunk>,
    pub versions: Vec<(u64, i64)>,
    pub meta_offset: u64,
    pub metadata: Option<TsFileMetadata>,
    /// Series (device, measurement) → TimeseriesMetadata, found through the index.
    pub series: BTreeMap<(String, String), TimeseriesMetadata>,
    /// Depth of the index tree (root = 1).
    pub index_depth: usize,
}

impl Walk {
    pub fn pages(&self) -> usize {
        self.chunks.iter().map(|c| c.pages.len()).sum()
    }
    pub fn points(&self) -> i64 {
        self.series.values().map(|t| t.statistics.count).sum()
    }
}

fn err(offset: u64, msg: impl std::fmt::Display) -> String {
    format!("at byte {offset}: {msg}")
}

/// Walks a complete file and cross-checks data section and metadata. Returns a
/// description of the first inconsistency.
pub fn check_file(b: &[u8]) -> Result<Walk, String> {
    if b.len() < 12 + 1 + 10 || &b[..6] != b"TsFile" || &b[6..12] != b"000002" {
        return Err("bad head magic/version or too short".into());
    }
    if &b[b.len() - 6..] != b"TsFile" {
        return Err("bad tail magic".into());
    }
    let n = b.len();
    let size = i32::from_be_bytes(b[n - 10..n - 6].try_into().unwrap());
    let p = (n as i64 - 10 - size as i64) as usize;
    let mut r = ByteReader::new(&b[p..n - 10], p as u64);
    let meta = TsFileMetadata::deserialize(&mut r).map_err(|e| e.to_string())?;
    if !r.is_empty() {
        return Err(err(r.offset(), "bytes left after TsFileMetadata"));
    }
    let meta_offset = meta.meta_offset as u64;
    if b.get(meta_offset as usize) != Some(&2) {
        return Err(err(meta_offset, "no separator at metaOffset"));
    }
    let mut w = Walk {
        meta_offset,
        ..Walk::default()
    };
    // Sequential walk of the data section.
    let mut r = ByteReader::new(&b[12..meta_offset as usize], 12);
    let mut pending: Vec<WalkedChunk> = Vec::new();
    let mut group_start: Option<u64> = None;
    while !r.is_empty() {
        let at = r.offset();
        match r.read_u8("marker").map_err(|e| e.to_string())? {
            1 => {
                group_start.get_or_insert(at);
                let h = ChunkHeader::deserialize_after_marker(&mut r).map_err(|e| e.to_string())?;
                let body = r
                    .take(h.data_size as usize, "chunk data")
                    .map_err(|e| e.to_string())?;
                let mut pr = ByteReader::new(body, r.offset() - body.len() as u64);
                let mut pages = Vec::new();
                let mut stats = Statistics::new(h.data_type);
                while !pr.is_empty() {
                    let ph =
                        PageHeader::deserialize(&mut pr, h.data_type).map_err(|e| e.to_string())?;
                    if ph.statistics.count == 0 {
                        return Err(err(pr.offset(), "empty page"));
                    }
                    pr.take(ph.compressed_size as usize, "page body")
                        .map_err(|e| e.to_string())?;
                    stats.merge(&ph.statistics).map_err(|e| e.to_string())?;
                    pages.push(ph);
                }
                if pages.len() != h.num_pages as usize {
                    return Err(err(
                        at,
                        format!("{} pages, header says {}", pages.len(), h.num_pages),
                    ));
                }
                if pages.is_empty() {
                    return Err(err(at, "chunk without pages"));
                }
                pending.push(WalkedChunk {
                    offset: at,
                    group: 0,
                    device: String::new(),
                    header: h,
                    pages,
                    stats,
                });
            }
            0 => {
                let f = ChunkGroupFooter::deserialize_after_marker(&mut r)
                    .map_err(|e| e.to_string())?;
                let start = group_start
                    .take()
                    .ok_or_else(|| err(at, "footer without chunks"))?;
                if f.num_chunks as usize != pending.len() || f.data_size as u64 != at - start {
                    return Err(err(at, format!("footer {f:?} disagrees with the walk")));
                }
                for mut c in pending.drain(..) {
                    c.device = f.device.clone();
                    c.group = w.chunk_groups;
                    w.chunks.push(c);
                }
                w.chunk_groups += 1;
            }
            3 => {
                if group_start.is_some() {
                    return Err(err(at, "version record inside a chunk group"));
                }
                let v = r.read_i64("version").map_err(|e| e.to_string())?;
                w.versions.push((r.offset(), v));
            }
            m => return Err(err(at, format!("unknown marker {m}"))),
        }
    }
    if !pending.is_empty() {
        return Err("chunks after the last footer".into());
    }
    if meta.total_chunk_num as usize != w.chunks.len() {
        return Err(format!(
            "totalChunkNum {} but {} chunks walked",
            meta.total_chunk_num,
            w.chunks.len()
        ));
    }
    let expected_versions: Vec<(i64, i64)> = if w.versions.is_empty() {
        vec![(i64::MAX, 0)]
    } else {
        w.versions.iter().map(|(o, v)| (*o as i64, *v)).collect()
    };
    if meta.version_info != expected_versions {
        return Err(format!(
            "versionInfo {:?} vs walk {:?}",
            meta.version_info, expected_versions
        ));
    }
    // Index tree.
    let chunk_at: HashMap<u64, usize> = w
        .chunks
        .iter()
        .enumerate()
        .map(|(i, c)| (c.offset, i))
        .collect();
    let mut referenced = vec![false; w.chunks.len()];
    let mut series = BTreeMap::new();
    let depth = visit(
        b,
        &meta.metadata_index,
        None,
        &w.chunks,
        &chunk_at,
        &mut referenced,
        &mut series,
        0,
    )?;
    if let Some(i) = referenced.iter().position(|r| !r) {
        return Err(err(
            w.chunks[i].offset,
            "chunk not referenced by any ChunkMetadata",
        ));
    }
    if let Some(bf) = &meta.bloom_filter {
        for (d, m) in series.keys() {
            let path = if m.contains('.') {
                format!("{d}.\"{m}\"")
            } else {
                format!("{d}.{m}")
            };
            if !bf.contains(&path) {
                return Err(format!("{path} missing from the bloom filter"));
            }
        }
    } else {
        return Err("no bloom filter".into());
    }
    w.series = series;
    w.index_depth = depth;
    w.metadata = Some(meta);
    Ok(w)
}

#[allow(clippy::too_many_arguments)]
fn visit(
    b: &[u8],
    node: &MetadataIndexNode,
    device: Option<&str>,
    chunks: &[WalkedChunk],
    chunk_at: &HashMap<u64, usize>,
    referenced: &mut [bool],
    out: &mut BTreeMap<(String, String), TimeseriesMetadata>,
    level: usize,
) -> Result<usize, String> {
    let mut depth = level + 1;
    for w in node.children.windows(2) {
        if tsfile::file::metadata::java_cmp(&w[0].name, &w[1].name) != std::cmp::Ordering::Less {
            return Err(format!(
                "index entries out of order: {} then {}",
                w[0].name, w[1].name
            ));
        }
    }
    for (i, e) in node.children.iter().enumerate() {
        let start = e.offset as usize;
        let end = node.child_end(i) as usize;
        if start > end || end > b.len() {
            return Err(format!(
                "index entry {} range {start}..{end} invalid",
                e.name
            ));
        }
        let mut r = ByteReader::new(&b[start..end], start as u64);
        match node.node_type {
            MetadataIndexNodeType::LeafMeasurement => {
                let d = device.ok_or("a LEAF_MEASUREMENT node outside a device")?;
                let mut first = true;
                while !r.is_empty() {
                    let ts = TimeseriesMetadata::deserialize(&mut r).map_err(|e| e.to_string())?;
                    if first && ts.measurement != e.name {
                        return Err(format!(
                            "leaf entry {} points at {}",
                            e.name, ts.measurement
                        ));
                    }
                    first = false;
                    check_series(b, d, &ts, chunks, chunk_at, referenced)?;
                    if out
                        .insert((d.to_string(), ts.measurement.clone()), ts)
                        .is_some()
                    {
                        return Err(format!("series {d} listed twice"));
                    }
                }
            }
            t => {
                let child = MetadataIndexNode::deserialize(&mut r).map_err(|e| e.to_string())?;
                if !r.is_empty() {
                    return Err(format!("index node for {} does not fill its range", e.name));
                }
                let child_device = match (t, device) {
                    (MetadataIndexNodeType::InternalMeasurement, None)
                    | (MetadataIndexNodeType::LeafDevice, None) => Some(e.name.as_str()),
                    (MetadataIndexNodeType::InternalDevice, None) => None,
                    (MetadataIndexNodeType::InternalMeasurement, Some(d)) => Some(d),
                    _ => return Err(format!("unexpected node type {t:?} under {device:?}")),
                };
                let same_level = matches!(
                    (t, device),
                    (MetadataIndexNodeType::InternalDevice, _)
                        | (MetadataIndexNodeType::InternalMeasurement, Some(_))
                );
                if let Some(first) = child.children.first().filter(|_| same_level) {
                    if first.name != e.name {
                        return Err(format!(
                            "entry {} points at a node starting {}",
                            e.name, first.name
                        ));
                    }
                }
                let dd = visit(
                    b,
                    &child,
                    child_device,
                    chunks,
                    chunk_at,
                    referenced,
                    out,
                    level + 1,
                )?;
                depth = depth.max(dd);
            }
        }
    }
    Ok(depth)
}

fn check_series(
    b: &[u8],
    device: &str,
    ts: &TimeseriesMetadata,
    chunks: &[WalkedChunk],
    chunk_at: &HashMap<u64, usize>,
    referenced: &mut [bool],
) -> Result<(), String> {
    let start = ts.chunk_metadata_offset as usize;
    let end = start + ts.chunk_metadata_size as usize;
    let mut r = ByteReader::new(&b[start..end], start as u64);
    let mut merged = Statistics::new(ts.data_type);
    while !r.is_empty() {
        let cm = ChunkMetadata::deserialize(&mut r).map_err(|e| e.to_string())?;
        let &i = chunk_at
            .get(&(cm.offset_of_chunk_header as u64))
            .ok_or_else(|| {
                format!(
                    "{device}.{}: ChunkMetadata points at no chunk",
                    ts.measurement
                )
            })?;
        let c = &chunks[i];
        if c.device != device
            || c.header.measurement != ts.measurement
            || cm.data_type != ts.data_type
        {
            return Err(format!(
                "{device}.{}: ChunkMetadata points at {}.{}",
                ts.measurement, c.device, c.header.measurement
            ));
        }
        if !cm.statistics.bit_eq(&c.stats) {
            return Err(format!(
                "{device}.{}: chunk statistics differ from its pages",
                ts.measurement
            ));
        }
        if referenced[i] {
            return Err(format!("chunk at {} referenced twice", c.offset));
        }
        referenced[i] = true;
        merged.merge(&cm.statistics).map_err(|e| e.to_string())?;
    }
    if !merged.bit_eq(&ts.statistics) {
        return Err(format!(
            "{device}.{}: series statistics differ from its chunks",
            ts.measurement
        ));
    }
    Ok(())
}

/// Data type of a TSV line's TYPE field.
pub fn data_type(s: &str) -> DataType {
    s.parse().unwrap()
}
