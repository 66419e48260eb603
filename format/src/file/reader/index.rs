//! The metadata index tree: whole-tree walk and single-series lookup (spec §5.5, §8.2).

use super::source::read_range;
use super::{Source, TsFileReader};
use crate::errors::{Error, Result};
use crate::file::metadata::{
    java_cmp, MetadataIndexNode, MetadataIndexNodeType as NodeType, TimeseriesMetadata,
};
use crate::util::io::ByteReader;
use std::cmp::Ordering;
use std::collections::HashSet;

/// Deepest index tree the reader follows (a real tree of degree >= 2 over any file
/// that fits in memory is far shallower); bounds the recursion on crafted input.
const MAX_DEPTH: usize = 64;

/// One node of the index tree, as found by [`TsFileReader::index_tree`].
#[derive(Debug, Clone, PartialEq)]
pub struct IndexNodeInfo {
    /// Depth (0 = the root inside `TsFileMetadata`).
    pub depth: usize,
    /// Absolute offset of the serialized node.
    pub offset: u64,
    /// The node.
    pub node: MetadataIndexNode,
}

/// One device and its series, in index order.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceIndex {
    /// Device name.
    pub device: String,
    /// `(offset of the TimeseriesMetadata, the metadata)`, in index order.
    pub series: Vec<(u64, TimeseriesMetadata)>,
}

/// The whole metadata index: every node (depth-first, pre-order) and every device
/// with its series.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IndexTree {
    /// Every node, the root first.
    pub nodes: Vec<IndexNodeInfo>,
    /// Every device, in index (sorted) order.
    pub devices: Vec<DeviceIndex>,
}

impl IndexTree {
    /// Number of series.
    pub fn series_count(&self) -> usize {
        self.devices.iter().map(|d| d.series.len()).sum()
    }
}

/// The full path Java hashes and sorts by: `device.measurement`, the measurement in
/// double quotes if it contains a `.`.
pub(crate) fn full_path(device: &str, measurement: &str) -> String {
    if measurement.contains('.') {
        format!("{device}.\"{measurement}\"")
    } else {
        format!("{device}.{measurement}")
    }
}

impl<S: Source> TsFileReader<S> {
    /// Byte range `[start, end)` of child `i` of `node` (serialized at `node_off`),
    /// checked to lie in the metadata section before the node itself.
    fn child_range(&self, node: &MetadataIndexNode, node_off: u64, i: usize) -> Result<(u64, u64)> {
        let start = node.children[i].offset;
        let end = node.child_end(i);
        let lo = self.meta_offset() as i64;
        if start <= lo || end <= start || end as u64 > node_off {
            return Err(Error::format(
                node_off,
                format_args!(
                    "entry {i} ({:?}) of the {} index node: a child range inside ({lo}, {node_off}) (children precede their node), found [{start}, {end})",
                    node.children[i].name,
                    node.node_type.name()
                ),
            ));
        }
        Ok((start as u64, end as u64))
    }

    /// Reads the node serialized exactly in `[start, end)`.
    fn read_node(&self, start: u64, end: u64) -> Result<MetadataIndexNode> {
        let buf = read_range(
            &self.src,
            start,
            end - start,
            self.metadata_pos,
            "index node",
        )?;
        let mut r = ByteReader::new(&buf, start);
        let node = MetadataIndexNode::deserialize(&mut r)?;
        if !r.is_empty() {
            return Err(r.error(format_args!(
                "the end of the index node (its parent's entry range ends at {end}), found {} more bytes",
                r.remaining()
            )));
        }
        Ok(node)
    }

    /// Reads child `i` of `parent` as a node of one of `allowed` types, checking that
    /// it is non-empty and that its first entry carries the parent entry's name.
    fn read_child_node(
        &self,
        parent: &MetadataIndexNode,
        parent_off: u64,
        i: usize,
        allowed: &[NodeType],
        check_name: bool,
    ) -> Result<(MetadataIndexNode, u64)> {
        let (start, end) = self.child_range(parent, parent_off, i)?;
        let node = self.read_node(start, end)?;
        if !allowed.contains(&node.node_type) {
            return Err(Error::format(
                start,
                format_args!(
                    "an index node of type {} (child of a {} node), found {}",
                    allowed
                        .iter()
                        .map(|t| t.name())
                        .collect::<Vec<_>>()
                        .join(" or "),
                    parent.node_type.name(),
                    node.node_type.name()
                ),
            ));
        }
        let Some(first) = node.children.first() else {
            return Err(Error::format(
                start,
                "an index node with at least one entry, found 0",
            ));
        };
        if check_name && first.name != parent.children[i].name {
            return Err(Error::format(
                start,
                format_args!(
                    "an index node whose first entry is {:?} (its parent's entry name), found {:?}",
                    parent.children[i].name, first.name
                ),
            ));
        }
        Ok((node, start))
    }

    /// Reads the run of `TimeseriesMetadata` serialized exactly in `[start, end)`.
    fn read_ts_run(&self, start: u64, end: u64) -> Result<Vec<(u64, TimeseriesMetadata)>> {
        let buf = read_range(
            &self.src,
            start,
            end - start,
            self.metadata_pos,
            "timeseries metadata",
        )?;
        let mut r = ByteReader::new(&buf, start);
        let mut out = Vec::new();
        while !r.is_empty() {
            let at = r.offset();
            let ts = TimeseriesMetadata::deserialize(&mut r)?;
            let cm_start = ts.chunk_metadata_offset;
            let cm_end = cm_start.checked_add(ts.chunk_metadata_size as i64);
            if cm_start <= self.meta_offset() as i64
                || cm_end.is_none_or(|e| e as u64 > self.metadata_pos)
            {
                return Err(Error::format(
                    at,
                    format_args!(
                        "timeseries metadata of {:?} whose chunk metadata lie in ({}, {}), found offset {cm_start} size {}",
                        ts.measurement,
                        self.meta_offset(),
                        self.metadata_pos,
                        ts.chunk_metadata_size
                    ),
                ));
            }
            out.push((at, ts));
        }
        Ok(out)
    }

    /// Walks the whole index tree.
    pub fn index_tree(&self) -> Result<IndexTree> {
        let mut tree = IndexTree::default();
        let root = &self.metadata.metadata_index;
        tree.nodes.push(IndexNodeInfo {
            depth: 0,
            offset: self.metadata_pos,
            node: root.clone(),
        });
        match root.node_type {
            NodeType::LeafMeasurement => {
                return Err(Error::format(
                    self.metadata_pos,
                    "a root index node of a device-level type (INTERNAL_MEASUREMENT, INTERNAL_DEVICE or LEAF_DEVICE), found LEAF_MEASUREMENT",
                ))
            }
            _ => self.walk_devices(root, self.metadata_pos, 0, &mut tree)?,
        }
        Ok(tree)
    }

    /// The devices, in index order.
    pub fn devices(&self) -> Result<Vec<String>> {
        Ok(self
            .index_tree()?
            .devices
            .into_iter()
            .map(|d| d.device)
            .collect())
    }

    /// Every series as `(device, metadata)`, in index order.
    pub fn all_series(&self) -> Result<Vec<(String, TimeseriesMetadata)>> {
        let mut out = Vec::new();
        for d in self.index_tree()?.devices {
            for (_, ts) in d.series {
                out.push((d.device.clone(), ts));
            }
        }
        Ok(out)
    }

    /// `node` lives at the device level: INTERNAL_DEVICE, LEAF_DEVICE, or the root
    /// INTERNAL_MEASUREMENT whose entries are devices.
    fn walk_devices(
        &self,
        node: &MetadataIndexNode,
        node_off: u64,
        depth: usize,
        tree: &mut IndexTree,
    ) -> Result<()> {
        if depth >= MAX_DEPTH {
            return Err(Error::format(
                node_off,
                format_args!("an index tree at most {MAX_DEPTH} levels deep"),
            ));
        }
        for i in 0..node.children.len() {
            if node.node_type == NodeType::InternalDevice {
                let (child, off) = self.read_child_node(
                    node,
                    node_off,
                    i,
                    &[NodeType::InternalDevice, NodeType::LeafDevice],
                    true,
                )?;
                tree.nodes.push(IndexNodeInfo {
                    depth: depth + 1,
                    offset: off,
                    node: child.clone(),
                });
                self.walk_devices(&child, off, depth + 1, tree)?;
            } else {
                let device = &node.children[i].name;
                if let Some(prev) = tree.devices.last() {
                    if java_cmp(&prev.device, device) != Ordering::Less {
                        return Err(Error::format(
                            node_off,
                            format_args!(
                                "device entries in strictly ascending order, found {device:?} after {:?}",
                                prev.device
                            ),
                        ));
                    }
                }
                let (top, off) = self.read_child_node(
                    node,
                    node_off,
                    i,
                    &[NodeType::InternalMeasurement, NodeType::LeafMeasurement],
                    false,
                )?;
                tree.nodes.push(IndexNodeInfo {
                    depth: depth + 1,
                    offset: off,
                    node: top.clone(),
                });
                let mut series = Vec::new();
                self.walk_measurements(&top, off, depth + 1, Some(&mut tree.nodes), &mut series)?;
                check_unique(device, &series, off)?;
                tree.devices.push(DeviceIndex {
                    device: device.clone(),
                    series,
                });
            }
        }
        Ok(())
    }

    /// `node` is a measurement-level node (INTERNAL_ or LEAF_MEASUREMENT).
    fn walk_measurements(
        &self,
        node: &MetadataIndexNode,
        node_off: u64,
        depth: usize,
        mut nodes: Option<&mut Vec<IndexNodeInfo>>,
        out: &mut Vec<(u64, TimeseriesMetadata)>,
    ) -> Result<()> {
        if depth >= MAX_DEPTH {
            return Err(Error::format(
                node_off,
                format_args!("an index tree at most {MAX_DEPTH} levels deep"),
            ));
        }
        for i in 0..node.children.len() {
            if node.node_type == NodeType::InternalMeasurement {
                let (child, off) = self.read_child_node(
                    node,
                    node_off,
                    i,
                    &[NodeType::InternalMeasurement, NodeType::LeafMeasurement],
                    true,
                )?;
                if let Some(n) = nodes.as_deref_mut() {
                    n.push(IndexNodeInfo {
                        depth: depth + 1,
                        offset: off,
                        node: child.clone(),
                    });
                }
                self.walk_measurements(&child, off, depth + 1, nodes.as_deref_mut(), out)?;
            } else {
                let (start, end) = self.child_range(node, node_off, i)?;
                let run = self.read_ts_run(start, end)?;
                check_run_name(node, i, &run, start)?;
                out.extend(run);
            }
        }
        Ok(())
    }

    /// Finds the device's top measurement node, reading only the nodes on its path.
    fn device_top(&self, device: &str) -> Result<Option<(MetadataIndexNode, u64)>> {
        let mut node = self.metadata.metadata_index.clone();
        let mut off = self.metadata_pos;
        for _ in 0..MAX_DEPTH {
            let Some((i, _)) = node.child_for(device) else {
                return Ok(None);
            };
            match node.node_type {
                NodeType::InternalDevice => {
                    let (child, coff) = self.read_child_node(
                        &node,
                        off,
                        i,
                        &[NodeType::InternalDevice, NodeType::LeafDevice],
                        true,
                    )?;
                    node = child;
                    off = coff;
                }
                NodeType::LeafDevice | NodeType::InternalMeasurement => {
                    // Entries name devices: only an exact match is this device (Java
                    // would descend into the floor entry, a neighbour).
                    if node.children[i].name != device {
                        return Ok(None);
                    }
                    let top = self.read_child_node(
                        &node,
                        off,
                        i,
                        &[NodeType::InternalMeasurement, NodeType::LeafMeasurement],
                        false,
                    )?;
                    return Ok(Some(top));
                }
                NodeType::LeafMeasurement => {
                    return Err(Error::format(
                        off,
                        "a device-level index node, found LEAF_MEASUREMENT",
                    ))
                }
            }
        }
        Err(Error::format(
            off,
            format_args!("an index tree at most {MAX_DEPTH} levels deep"),
        ))
    }

    /// The series of one device, in index order (`None` if the device is not in the
    /// index). Reads the device's path and its own subtree only.
    pub fn device_series(&self, device: &str) -> Result<Option<Vec<TimeseriesMetadata>>> {
        let Some((top, off)) = self.device_top(device)? else {
            return Ok(None);
        };
        let mut series = Vec::new();
        self.walk_measurements(&top, off, 1, None, &mut series)?;
        check_unique(device, &series, off)?;
        Ok(Some(series.into_iter().map(|(_, ts)| ts).collect()))
    }

    /// Finds one series through the index tree (spec §8.2), reading only the nodes on
    /// its path. The bloom filter is consulted first; the device and the measurement
    /// must match exactly (a missing device never resolves to a neighbour).
    pub fn timeseries_metadata(
        &self,
        device: &str,
        measurement: &str,
    ) -> Result<Option<TimeseriesMetadata>> {
        if let Some(b) = self.bloom_filter() {
            if !b.contains(&full_path(device, measurement)) {
                return Ok(None);
            }
        }
        let Some((mut node, mut off)) = self.device_top(device)? else {
            return Ok(None);
        };
        for _ in 0..MAX_DEPTH {
            let Some((i, _)) = node.child_for(measurement) else {
                return Ok(None);
            };
            match node.node_type {
                NodeType::InternalMeasurement => {
                    let (child, coff) = self.read_child_node(
                        &node,
                        off,
                        i,
                        &[NodeType::InternalMeasurement, NodeType::LeafMeasurement],
                        true,
                    )?;
                    node = child;
                    off = coff;
                }
                NodeType::LeafMeasurement => {
                    let (start, end) = self.child_range(&node, off, i)?;
                    let run = self.read_ts_run(start, end)?;
                    check_run_name(&node, i, &run, start)?;
                    return Ok(run
                        .into_iter()
                        .map(|(_, ts)| ts)
                        .find(|ts| ts.measurement == measurement));
                }
                _ => {
                    return Err(Error::format(
                        off,
                        format_args!(
                            "a measurement-level index node, found {}",
                            node.node_type.name()
                        ),
                    ))
                }
            }
        }
        Err(Error::format(
            off,
            format_args!("an index tree at most {MAX_DEPTH} levels deep"),
        ))
    }
}

/// A LEAF_MEASUREMENT entry names the first `TimeseriesMetadata` of its run.
fn check_run_name(
    node: &MetadataIndexNode,
    i: usize,
    run: &[(u64, TimeseriesMetadata)],
    start: u64,
) -> Result<()> {
    let name = &node.children[i].name;
    match run.first() {
        Some((_, ts)) if &ts.measurement == name => Ok(()),
        Some((_, ts)) => Err(Error::format(
            start,
            format_args!(
                "timeseries metadata of {name:?} (the leaf entry's name), found {:?}",
                ts.measurement
            ),
        )),
        None => Err(Error::format(start, "at least one timeseries metadata")),
    }
}

fn check_unique(device: &str, series: &[(u64, TimeseriesMetadata)], off: u64) -> Result<()> {
    let mut seen = HashSet::with_capacity(series.len());
    for (at, ts) in series {
        if !seen.insert(ts.measurement.as_str()) {
            return Err(Error::format(
                *at,
                format_args!(
                    "each measurement once per device, found {:?} of {device:?} twice (device index at {off})",
                    ts.measurement
                ),
            ));
        }
    }
    Ok(())
}
