//! The metadata index tree (spec §5.6, Java `MetadataIndexConstructor`) and the
//! buffered, position-tracking sink the metadata section is written through.

use crate::errors::{Error, Result};
use crate::file::metadata::{
    java_cmp, MetadataIndexEntry, MetadataIndexNode, MetadataIndexNodeType, TimeseriesMetadata,
};
use std::collections::VecDeque;
use std::io::Write;

/// Buffer size at which the sink passes its bytes on.
const SINK_CHUNK: usize = 1 << 16;

/// Buffers serialized structures and writes them to `out` in large pieces, tracking the
/// absolute file position.
pub(crate) struct Sink<'a, W: Write> {
    out: &'a mut W,
    /// Bytes not yet passed to `out`.
    pub(crate) buf: Vec<u8>,
    /// Absolute position of `buf[0]`.
    base: u64,
}

impl<'a, W: Write> Sink<'a, W> {
    /// A sink whose next byte lands at absolute offset `pos`.
    pub(crate) fn new(out: &'a mut W, pos: u64) -> Self {
        Sink {
            out,
            buf: Vec::with_capacity(SINK_CHUNK + 4096),
            base: pos,
        }
    }

    /// Absolute position of the next byte.
    pub(crate) fn pos(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    /// Passes the buffer on once it is large.
    pub(crate) fn maybe_flush(&mut self) -> Result<()> {
        if self.buf.len() >= SINK_CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// Passes every buffered byte on.
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.out.write_all(&self.buf)?;
        self.base += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

fn node(node_type: MetadataIndexNodeType) -> MetadataIndexNode {
    MetadataIndexNode {
        children: Vec::new(),
        end_offset: 0,
        node_type,
    }
}

fn entry(name: &str, pos: u64) -> MetadataIndexEntry {
    MetadataIndexEntry {
        name: name.to_string(),
        offset: pos as i64,
    }
}

/// `addCurrentIndexNodeToQueue`: sets the end offset, queues the node (not serialized).
fn enqueue(mut n: MetadataIndexNode, q: &mut VecDeque<MetadataIndexNode>, pos: u64) {
    n.end_offset = pos as i64;
    q.push_back(n);
}

fn serialize<W: Write>(n: &MetadataIndexNode, sink: &mut Sink<'_, W>) -> Result<()> {
    n.serialize(&mut sink.buf);
    sink.maybe_flush()
}

/// `generateRootNode`: builds the upper levels over the queued nodes, serializing each
/// child as its parent entry is made. The returned node is not serialized.
fn generate_root<W: Write>(
    mut q: VecDeque<MetadataIndexNode>,
    node_type: MetadataIndexNodeType,
    degree: usize,
    sink: &mut Sink<'_, W>,
) -> Result<MetadataIndexNode> {
    let mut n = q.len();
    let mut cur = node(node_type);
    while n != 1 {
        for _ in 0..n {
            let child = q
                .pop_front()
                .ok_or_else(|| Error::invalid("index construction: empty queue"))?;
            if cur.children.len() == degree {
                enqueue(cur, &mut q, sink.pos());
                cur = node(node_type);
            }
            let first = child
                .children
                .first()
                .ok_or_else(|| Error::invalid("index construction: a node without entries"))?;
            cur.children.push(entry(&first.name, sink.pos()));
            serialize(&child, sink)?;
        }
        enqueue(cur, &mut q, sink.pos());
        cur = node(node_type);
        n = q.len();
    }
    q.pop_front()
        .ok_or_else(|| Error::invalid("index construction: empty queue"))
}

/// Writes every device's `TimeseriesMetadata` with its lower measurement index nodes
/// (devices in the given first-appearance order), then the device top nodes (sorted
/// by device) and the device levels; returns the root, which is not written here
/// (it opens `TsFileMetadata`).
pub(crate) fn write_index<W: Write>(
    devices: Vec<(String, Vec<TimeseriesMetadata>)>,
    degree: usize,
    sink: &mut Sink<'_, W>,
) -> Result<MetadataIndexNode> {
    let mut tops: Vec<(String, MetadataIndexNode)> = Vec::with_capacity(devices.len());
    for (device, list) in devices {
        if list.is_empty() {
            continue;
        }
        let mut q = VecDeque::new();
        let mut cur = node(MetadataIndexNodeType::LeafMeasurement);
        for (i, ts) in list.iter().enumerate() {
            if i % degree == 0 {
                if cur.children.len() == degree {
                    enqueue(cur, &mut q, sink.pos());
                    cur = node(MetadataIndexNodeType::LeafMeasurement);
                }
                cur.children.push(entry(&ts.measurement, sink.pos()));
            }
            ts.serialize(&mut sink.buf);
            sink.maybe_flush()?;
        }
        enqueue(cur, &mut q, sink.pos());
        let top = generate_root(q, MetadataIndexNodeType::InternalMeasurement, degree, sink)?;
        tops.push((device, top));
    }
    // TreeMap<String, _>: device names compared as Java strings.
    tops.sort_by(|a, b| java_cmp(&a.0, &b.0));
    if tops.len() <= degree {
        let mut root = node(MetadataIndexNodeType::InternalMeasurement);
        for (device, top) in &tops {
            root.children.push(entry(device, sink.pos()));
            serialize(top, sink)?;
        }
        root.end_offset = sink.pos() as i64;
        return Ok(root);
    }
    let mut q = VecDeque::new();
    let mut cur = node(MetadataIndexNodeType::LeafDevice);
    for (device, top) in &tops {
        if cur.children.len() == degree {
            enqueue(cur, &mut q, sink.pos());
            cur = node(MetadataIndexNodeType::LeafDevice);
        }
        cur.children.push(entry(device, sink.pos()));
        serialize(top, sink)?;
    }
    enqueue(cur, &mut q, sink.pos());
    let mut root = generate_root(q, MetadataIndexNodeType::InternalDevice, degree, sink)?;
    root.end_offset = sink.pos() as i64;
    Ok(root)
}
