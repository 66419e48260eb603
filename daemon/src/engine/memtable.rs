//! Memtables: the points of a storage group partition not flushed yet, per series, in a
//! sequence and an unsequence space, and the memtable budget.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tsfile::basic::Column;

use super::batch::SeriesData;
use super::files::Space;
use super::flush::OpenFile;
use super::schema::SeriesType;
use super::{Engine, SealReason};
use crate::hasher::FxBuild;
use crate::wal::Lsn;

pub(super) struct SeriesBuf {
    pub(super) ty: SeriesType,
    pub(super) times: Vec<i64>,
    pub(super) values: Column,
    /// Times strictly increasing so far.
    pub(super) sorted: bool,
    /// Bytes of TEXT values (their heap parts).
    pub(super) text_bytes: usize,
}

/// Memory of a memtable entry besides its vectors (map slot, key, buffer header).
pub(super) const SERIES_OVERHEAD: usize = 160;

/// Heap bytes a series buffer holds (allocated capacity, not length).
pub(super) fn footprint(b: &SeriesBuf) -> usize {
    let cap = match &b.values {
        Column::Boolean(v) => v.capacity(),
        Column::Int32(v) => v.capacity() * 4,
        Column::Float(v) => v.capacity() * 4,
        Column::Int64(v) => v.capacity() * 8,
        Column::Double(v) => v.capacity() * 8,
        Column::Text(v) => v.capacity() * 24,
    };
    b.times.capacity() * 8 + cap + b.text_bytes
}

pub(super) type SeriesKey = (Arc<str>, Arc<str>);

/// A memtable's series.
pub(super) type MemMap = HashMap<SeriesKey, SeriesBuf, FxBuild>;

pub(super) struct Proc {
    pub(super) mem: MemMap,
    pub(super) mem_bytes: usize,
    pub(super) file: Option<OpenFile>,
}

impl Proc {
    pub(super) fn new() -> Proc {
        Proc {
            mem: HashMap::default(),
            mem_bytes: 0,
            file: None,
        }
    }
}

pub(super) struct Group {
    pub(super) sg: Arc<str>,
    pub(super) partition: i64,
    pub(super) seq: Proc,
    pub(super) unseq: Proc,
    pub(super) first_lsn: Option<Lsn>,
    pub(super) first_at: Option<Instant>,
    pub(super) last_write: Instant,
    pub(super) oldest_receive: Option<Instant>,
    pub(super) latest_flushed: HashMap<Arc<str>, i64, FxBuild>,
    /// Set while a flush or seal of the partition failed: its unsealed points are then
    /// neither in memory nor in open files, only in the WAL from `first_lsn` on, and are
    /// read back from there at `retry_at`.
    pub(super) failed: Option<Instant>,
    /// Wait before the next retry after a failure (doubles; reset by a successful seal).
    pub(super) backoff: Duration,
    /// Seal again once the points are read back (the seal that failed, and why).
    pub(super) reseal: Option<SealReason>,
}

impl Group {
    pub(super) fn has_data(&self) -> bool {
        self.first_lsn.is_some()
    }
}

pub(super) fn push_from(dst: &mut Column, src: &Column, i: usize) {
    match (dst, src) {
        (Column::Boolean(d), Column::Boolean(s)) => d.push(s[i]),
        (Column::Int32(d), Column::Int32(s)) => d.push(s[i]),
        (Column::Int64(d), Column::Int64(s)) => d.push(s[i]),
        (Column::Float(d), Column::Float(s)) => d.push(s[i]),
        (Column::Double(d), Column::Double(s)) => d.push(s[i]),
        (Column::Text(d), Column::Text(s)) => d.push(s[i].clone()),
        _ => {}
    }
}

pub(super) fn extend_from(dst: &mut Column, src: &Column) {
    match (dst, src) {
        (Column::Boolean(d), Column::Boolean(s)) => d.extend_from_slice(s),
        (Column::Int32(d), Column::Int32(s)) => d.extend_from_slice(s),
        (Column::Int64(d), Column::Int64(s)) => d.extend_from_slice(s),
        (Column::Float(d), Column::Float(s)) => d.extend_from_slice(s),
        (Column::Double(d), Column::Double(s)) => d.extend_from_slice(s),
        (Column::Text(d), Column::Text(s)) => d.extend(s.iter().cloned()),
        _ => {}
    }
}

pub(super) fn gather(src: &Column, idx: &[usize]) -> Column {
    match src {
        Column::Boolean(s) => Column::Boolean(idx.iter().map(|&i| s[i]).collect()),
        Column::Int32(s) => Column::Int32(idx.iter().map(|&i| s[i]).collect()),
        Column::Int64(s) => Column::Int64(idx.iter().map(|&i| s[i]).collect()),
        Column::Float(s) => Column::Float(idx.iter().map(|&i| s[i]).collect()),
        Column::Double(s) => Column::Double(idx.iter().map(|&i| s[i]).collect()),
        Column::Text(s) => Column::Text(idx.iter().map(|&i| s[i].clone()).collect()),
    }
}

/// Sorts a series by time; for equal times the last written wins.
pub(super) fn sort_dedup(times: Vec<i64>, values: Column) -> (Vec<i64>, Column) {
    let mut idx: Vec<usize> = (0..times.len()).collect();
    idx.sort_by_key(|&i| times[i]); // stable: equal times keep arrival order
    let mut keep: Vec<usize> = Vec::with_capacity(idx.len());
    for &i in &idx {
        match keep.last_mut() {
            Some(last) if times[*last] == times[i] => *last = i,
            _ => keep.push(i),
        }
    }
    let t = keep.iter().map(|&i| times[i]).collect();
    (t, gather(&values, &keep))
}

pub(super) fn g_proc(g: &mut Group, space: Space) -> &mut Proc {
    match space {
        Space::Sequence => &mut g.seq,
        Space::Unsequence => &mut g.unseq,
    }
}

/// Marks a partition written by the record at `lsn`.
fn touch(g: &mut Group, lsn: Lsn, (received, now): (Instant, Instant)) {
    if g.first_lsn.is_none() {
        g.first_lsn = Some(lsn);
        g.first_at = Some(now);
    }
    g.last_write = now;
    if g.oldest_receive.is_none() {
        g.oldest_receive = Some(received);
    }
}

/// Inserts a series into a partition's memtables, given the latest time flushed of its device
/// there; returns the bytes the memtables grew by.
fn insert_into(g: &mut Group, latest: Option<i64>, s: &SeriesData) -> usize {
    let min_t = s.times.iter().copied().min().unwrap_or(i64::MIN);
    let mut added = 0usize;
    let key: SeriesKey = (s.device.clone(), s.measurement.clone());
    let new_buf = || SeriesBuf {
        ty: s.ty,
        times: Vec::new(),
        values: Column::new(s.ty.data_type),
        sorted: true,
        text_bytes: 0,
    };
    match latest {
        Some(l) if min_t <= l => {
            // Split: newer points to sequence, the rest to unsequence.
            for (proc_, keep_seq) in [(&mut g.seq, true), (&mut g.unseq, false)] {
                let idx: Vec<usize> = (0..s.times.len())
                    .filter(|&i| (s.times[i] > l) == keep_seq)
                    .collect();
                if idx.is_empty() {
                    continue;
                }
                let (before, buf) = match proc_.mem.entry(key.clone()) {
                    Entry::Occupied(e) => (footprint(e.get()) + SERIES_OVERHEAD, e.into_mut()),
                    Entry::Vacant(e) => (0, e.insert(new_buf())),
                };
                for &i in &idx {
                    let t = s.times[i];
                    if buf.times.last().is_some_and(|&last| t <= last) {
                        buf.sorted = false;
                    }
                    buf.times.push(t);
                    push_from(&mut buf.values, &s.values, i);
                    if let Column::Text(v) = &s.values {
                        buf.text_bytes += v[i].len();
                    }
                }
                let after = footprint(buf) + SERIES_OVERHEAD;
                let bytes = after.saturating_sub(before);
                proc_.mem_bytes += bytes;
                added += bytes;
            }
        }
        _ => {
            let proc_ = &mut g.seq;
            let (before, buf) = match proc_.mem.entry(key) {
                Entry::Occupied(e) => (footprint(e.get()) + SERIES_OVERHEAD, e.into_mut()),
                Entry::Vacant(e) => (0, e.insert(new_buf())),
            };
            let mut sorted = buf.sorted
                && buf
                    .times
                    .last()
                    .is_none_or(|&last| s.times.first().is_some_and(|&f| f > last));
            sorted = sorted && s.times.windows(2).all(|w| w[0] < w[1]);
            buf.sorted = sorted;
            if let Column::Text(v) = &s.values {
                buf.text_bytes += v.iter().map(|x| x.len()).sum::<usize>();
            }
            buf.times.extend_from_slice(&s.times);
            extend_from(&mut buf.values, &s.values);
            let after = footprint(buf) + SERIES_OVERHEAD;
            let bytes = after.saturating_sub(before);
            proc_.mem_bytes += bytes;
            added += bytes;
        }
    }
    added
}

impl Engine {
    pub(super) fn insert_series(
        &mut self,
        sg: &Arc<str>,
        p: i64,
        lsn: Lsn,
        at: (Instant, Instant),
        s: &SeriesData,
    ) {
        let g = self.group(sg, p);
        touch(g, lsn, at);
        let latest = g.latest_flushed.get(&s.device).copied();
        self.mem_total += insert_into(g, latest, s);
    }

    /// [`Engine::insert_series`] of a run of series of one device in one partition, the
    /// empty ones skipped (at least one is not empty).
    pub(super) fn insert_run(
        &mut self,
        sg: &Arc<str>,
        p: i64,
        lsn: Lsn,
        at: (Instant, Instant),
        run: &[SeriesData],
    ) {
        let g = self.group(sg, p);
        touch(g, lsn, at);
        let latest = g.latest_flushed.get(&run[0].device).copied();
        let mut added = 0;
        for s in run.iter().filter(|s| !s.is_empty()) {
            added += insert_into(g, latest, s);
        }
        self.mem_total += added;
    }

    pub(super) fn enforce_budget(&mut self) {
        let big: Vec<(Arc<str>, i64)> = self
            .groups
            .iter()
            .filter(|(_, g)| g.seq.mem_bytes >= self.opts.chunk_group_bytes)
            .map(|(k, _)| k.clone())
            .collect();
        for key in big {
            self.flush_seq_and_check_size(&key);
        }
        if self.mem_total < self.opts.memtable_bytes {
            return;
        }
        let target = self.opts.memtable_bytes / 2;
        while self.mem_total > target {
            let Some((key, space)) = self
                .groups
                .iter()
                .flat_map(|(k, g)| {
                    [
                        (k, Space::Sequence, g.seq.mem_bytes),
                        (k, Space::Unsequence, g.unseq.mem_bytes),
                    ]
                })
                .filter(|x| x.2 > 0)
                .max_by_key(|x| x.2)
                .map(|(k, s, _)| (k.clone(), s))
            else {
                break;
            };
            if space == Space::Unsequence {
                // An unsequence file takes exactly one flush (at its seal), so its
                // series never go back in time: seal instead of flushing.
                self.seal_group(&key, SealReason::Size);
                continue;
            }
            self.flush_seq_and_check_size(&key);
        }
    }
}
