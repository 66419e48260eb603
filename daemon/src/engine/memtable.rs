//! Memtables: the points of a storage group partition not flushed yet, per series, in a
//! sequence and an unsequence space, and the memtable budget.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hashbrown::HashTable;
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

/// Most memtable positions [`Engine::insert_run`] keeps (of all devices); past it they start
/// afresh.
pub(super) const HINTS: usize = 1 << 16;

/// Memory of a memtable entry besides its vectors (map slot, key, buffer header).
pub(super) const SERIES_OVERHEAD: usize = 160;

/// Heap bytes a series buffer holds (allocated capacity, not length).
pub(super) fn footprint(b: &SeriesBuf) -> usize {
    b.times.capacity() * 8 + column_capacity_bytes(&b.values) + b.text_bytes
}

/// Heap bytes of `values`' vector (its allocated capacity; a TEXT column's strings apart).
pub(crate) fn column_capacity_bytes(values: &Column) -> usize {
    let capacity = match values {
        Column::Boolean(v) => v.capacity(),
        Column::Int32(v) => v.capacity(),
        Column::Float(v) => v.capacity(),
        Column::Int64(v) => v.capacity(),
        Column::Double(v) => v.capacity(),
        Column::Text(v) => v.capacity(),
    };
    capacity * value_width(values)
}

/// Bytes a value takes in `values`' vector (a TEXT entry's own vector; its heap bytes are
/// counted apart).
fn value_width(values: &Column) -> usize {
    match values {
        Column::Boolean(_) => 1,
        Column::Int32(_) | Column::Float(_) => 4,
        Column::Int64(_) | Column::Double(_) => 8,
        Column::Text(_) => 24,
    }
}

pub(super) type SeriesKey = (Arc<str>, Arc<str>);

/// A memtable's series: their buffers in the order they were first written, found by key
/// through an index. A series keeps its position while the map lives (series are only ever
/// removed all at once), so a position found for one record is a hint for the next one
/// ([`MemMap::position_hinted`]).
#[derive(Default)]
pub(super) struct MemMap {
    /// The position of each series in `series`, by the hash of its key.
    index: HashTable<u32>,
    series: Vec<(SeriesKey, SeriesBuf)>,
    /// Room for points a series' vectors get when it is added ([`presize`]).
    presize: usize,
}

/// Points a series of the next memtable of a space gets room for when it is added, from the
/// memtable flushed before it: `series` series holding `points` points in `len_bytes` bytes
/// (the vectors' lengths, not capacities, text heap bytes included). The average series',
/// so that a series written at the same rate does not grow its vectors by doubling from
/// empty (each doubling a copy), scaled down so that this room for that many series stays
/// within three quarters of `limit` (the memtable size that flushes it): the room counts in
/// the memtable's bytes ([`footprint`]) from the start, and must not by itself flush the
/// next memtable before it holds points. 0 (room as the vectors grow) without points.
pub(super) fn presize(series: usize, points: usize, len_bytes: usize, limit: usize) -> usize {
    if series == 0 || points == 0 {
        return 0;
    }
    let room = limit / 4 * 3;
    let avg = points / series;
    if len_bytes <= room {
        avg
    } else {
        // avg * room / len_bytes, in u128: the product can pass usize.
        (avg as u128 * room as u128 / len_bytes as u128) as usize
    }
}

/// Bytes of a series' points by the vectors' lengths (text heap bytes included), the
/// `len_bytes` of [`presize`].
pub(super) fn len_bytes(b: &SeriesBuf) -> usize {
    b.times.len() * (8 + value_width(&b.values)) + b.text_bytes
}

/// The hash of a series key in a [`MemMap`]'s index.
fn key_hash(key: &SeriesKey) -> u64 {
    FxBuild::default().hash_one(key)
}

impl MemMap {
    /// An empty map whose series get room for `presize` points when they are added.
    pub(super) fn presized(presize: usize) -> MemMap {
        MemMap {
            presize,
            ..MemMap::default()
        }
    }

    /// Whether there are no series.
    pub(super) fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// The number of series.
    pub(super) fn len(&self) -> usize {
        self.series.len()
    }

    /// Removes every series.
    pub(super) fn clear(&mut self) {
        self.index.clear();
        self.series.clear();
    }

    /// The keys of the series, in the order they were first written.
    pub(super) fn keys(&self) -> impl Iterator<Item = &SeriesKey> {
        self.series.iter().map(|(k, _)| k)
    }

    /// The series and their buffers, in the order they were first written.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&SeriesKey, &SeriesBuf)> {
        self.series.iter().map(|(k, b)| (k, b))
    }

    fn find(&self, key: &SeriesKey, hash: u64) -> Option<usize> {
        let series = &self.series;
        self.index
            .find(hash, |&i| series[i as usize].0 == *key)
            .map(|&i| i as usize)
    }

    /// The buffer of a series.
    pub(super) fn get(&self, key: &SeriesKey) -> Option<&SeriesBuf> {
        self.find(key, key_hash(key)).map(|i| &self.series[i].1)
    }

    /// The position of the buffer of `key`; an empty one for points of type `ty` is added
    /// when there is none (`true` then).
    fn position(&mut self, key: &SeriesKey, ty: SeriesType) -> (usize, bool) {
        let hash = key_hash(key);
        if let Some(i) = self.find(key, hash) {
            return (i, false);
        }
        let i = self.series.len();
        let series = &self.series;
        self.index
            .insert_unique(hash, i as u32, |&j| key_hash(&series[j as usize].0));
        let buf = SeriesBuf {
            ty,
            times: Vec::with_capacity(self.presize),
            values: Column::with_capacity(ty.data_type, self.presize),
            sorted: true,
            text_bytes: 0,
        };
        self.series.push((key.clone(), buf));
        (i, true)
    }

    /// [`MemMap::position`] of the series `(device, measurement)`, taking `hint` when the
    /// series there has these very names (the same shared strings); `hint` is set to it.
    fn position_hinted(
        &mut self,
        (device, measurement): (&Arc<str>, &Arc<str>),
        ty: SeriesType,
        hint: &mut usize,
    ) -> (usize, bool) {
        if let Some(((d, m), _)) = self.series.get(*hint) {
            if Arc::ptr_eq(d, device) && Arc::ptr_eq(m, measurement) {
                return (*hint, false);
            }
        }
        let found = self.position(&(device.clone(), measurement.clone()), ty);
        *hint = found.0;
        found
    }
}

impl std::ops::Index<&SeriesKey> for MemMap {
    type Output = SeriesBuf;

    fn index(&self, key: &SeriesKey) -> &SeriesBuf {
        self.get(key).expect("a series of the memtable")
    }
}

impl IntoIterator for MemMap {
    type Item = (SeriesKey, SeriesBuf);
    type IntoIter = std::vec::IntoIter<(SeriesKey, SeriesBuf)>;

    fn into_iter(self) -> Self::IntoIter {
        self.series.into_iter()
    }
}

pub(super) struct Proc {
    pub(super) mem: MemMap,
    pub(super) mem_bytes: usize,
    pub(super) file: Option<OpenFile>,
}

impl Proc {
    pub(super) fn new() -> Proc {
        Proc {
            mem: MemMap::default(),
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
/// there and a hint of its position in the sequence memtable ([`MemMap::position_hinted`]);
/// returns the bytes the memtables grew by.
fn insert_into(g: &mut Group, latest: Option<i64>, s: &SeriesData, hint: &mut usize) -> usize {
    // One pass without an early exit (it vectorizes); the first time is the least of
    // increasing times.
    let increasing = s
        .times
        .iter()
        .zip(s.times.iter().skip(1))
        .fold(true, |a, (x, y)| a & (x < y));
    let min_t = if increasing {
        s.times.first().copied()
    } else {
        s.times.iter().copied().min()
    }
    .unwrap_or(i64::MIN);
    let mut added = 0usize;
    match latest {
        Some(l) if min_t <= l => {
            // Split: newer points to sequence, the rest to unsequence.
            let key: SeriesKey = (s.device.clone(), s.measurement.clone());
            for (proc_, keep_seq) in [(&mut g.seq, true), (&mut g.unseq, false)] {
                let idx: Vec<usize> = (0..s.times.len())
                    .filter(|&i| (s.times[i] > l) == keep_seq)
                    .collect();
                if idx.is_empty() {
                    continue;
                }
                let (pos, new) = proc_.mem.position(&key, s.ty);
                let buf = &mut proc_.mem.series[pos].1;
                let before = if new {
                    0
                } else {
                    footprint(buf) + SERIES_OVERHEAD
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
            let (pos, new) = proc_
                .mem
                .position_hinted((&s.device, &s.measurement), s.ty, hint);
            let buf = &mut proc_.mem.series[pos].1;
            let before = if new {
                0
            } else {
                footprint(buf) + SERIES_OVERHEAD
            };
            buf.sorted = buf.sorted
                && increasing
                && buf
                    .times
                    .last()
                    .is_none_or(|&last| s.times.first().is_some_and(|&f| f > last));
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
        self.mem_total += insert_into(g, latest, s, &mut 0);
    }

    /// [`Engine::insert_series`] of a run of series of one device in one partition, the
    /// empty ones skipped (at least one is not empty). The positions of the run's series in
    /// the sequence memtable are kept for the device's next run ([`MemMap::position_hinted`]).
    pub(super) fn insert_run(
        &mut self,
        sg: &Arc<str>,
        p: i64,
        lsn: Lsn,
        at: (Instant, Instant),
        run: &[SeriesData],
    ) {
        if self.hint_count > HINTS {
            self.hints.clear();
            self.hint_count = 0;
        }
        // Keyed by the device's shared string: another device that gets its address later
        // only finds hints that do not hold.
        let mut hints = self
            .hints
            .remove(&(Arc::as_ptr(&run[0].device) as *const u8 as usize))
            .unwrap_or_default();
        if hints.len() < run.len() {
            self.hint_count += run.len() - hints.len();
            hints.resize(run.len(), 0);
        }
        let g = self.group(sg, p);
        touch(g, lsn, at);
        let latest = g.latest_flushed.get(&run[0].device).copied();
        let mut added = 0;
        for (s, hint) in run.iter().zip(hints.iter_mut()) {
            if !s.is_empty() {
                added += insert_into(g, latest, s, hint);
            }
        }
        self.mem_total += added;
        self.hints
            .insert(Arc::as_ptr(&run[0].device) as *const u8 as usize, hints);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use tsfile::basic::Column;
    use tsfile::DataType;

    use super::super::batch::{SeriesData, WriteBatch};
    use super::super::files::Space;
    use super::super::schema::SeriesType;
    use super::super::testing;
    use super::*;

    /// Worked by hand: 1,000 series of 770 DOUBLE points hold 770,000 × 16 = 12,320,000
    /// bytes, within three quarters of 16 MiB (12,582,912): each gets its average, 770. With
    /// 16,000,000 bytes over 1,000,000 points (1,000 a series) the room is scaled to
    /// 1,000 × 12,582,912 / 16,000,000 = 786.4: 786. Nothing held, nothing to size by.
    #[test]
    fn presize_is_the_average_series_within_three_quarters_of_the_limit() {
        assert_eq!(presize(1000, 770_000, 12_320_000, 16 << 20), 770);
        assert_eq!(presize(1000, 1_000_000, 16_000_000, 16 << 20), 786);
        assert_eq!(presize(3, 10, 160, 1 << 20), 3);
        assert_eq!(presize(0, 0, 0, 16 << 20), 0);
        assert_eq!(presize(4, 0, 0, 16 << 20), 0);
        // A 1-byte limit: no room (3/4 of it is 0 bytes).
        assert_eq!(presize(2, 100, 1600, 1), 0);
    }

    /// The bytes of a buffer's points by length: 8 per time, the value's width (24 for a
    /// TEXT value's vector entry) and the text bytes.
    #[test]
    fn len_bytes_counts_times_values_and_text() {
        let buf = |values: Column, text_bytes: usize| SeriesBuf {
            ty: SeriesType::default_for(values.data_type()),
            times: (0..values.len() as i64).collect(),
            values,
            sorted: true,
            text_bytes,
        };
        assert_eq!(len_bytes(&buf(Column::Int32(vec![1, 2, 3]), 0)), 36);
        assert_eq!(len_bytes(&buf(Column::Double(vec![0.5; 4]), 0)), 64);
        assert_eq!(len_bytes(&buf(Column::Boolean(vec![true; 2]), 0)), 18);
        let text = Column::Text(vec![b"ab".to_vec(), b"cde".to_vec()]);
        assert_eq!(len_bytes(&buf(text, 5)), 69);
    }

    /// Points of one time each, as a message of one record gives them: the memtable's
    /// bytes are its vectors' capacities (the standard library's room for 8-byte values goes
    /// 4, 8; for TEXT entries, 24 bytes each, also 4, 8), the text bytes and 160 bytes a
    /// series; a time not after the last makes the series unsorted, and the flush writes it
    /// sorted.
    #[test]
    fn single_points_count_their_vectors_text_and_order() {
        let tmp = tempfile::tempdir().unwrap();
        let faults = testing::FaultFs::default();
        let mut e = testing::engine(tmp.path(), &faults);
        let key = (Arc::<str>::from("root.sg"), 0);
        let text = |t: i64| SeriesData {
            device: "root.sg.d1".into(),
            measurement: "s".into(),
            ty: SeriesType::default_for(DataType::TEXT),
            times: vec![t],
            values: Column::Text(vec![b"abc".to_vec()]),
        };
        for (lsn, t) in [(1, 10), (2, 20), (3, 30), (4, 40)] {
            let wb = WriteBatch {
                series: vec![series("a", vec![t]), text(t)],
            };
            e.write(lsn, &wb.encode(), Instant::now());
        }
        // Room for 4: a 4 × 16 + 160 = 224, s 4 × (8 + 24) + 12 + 160 = 300.
        assert_eq!(e.groups[&key].seq.mem_bytes, 224 + 300);
        let wb = WriteBatch {
            series: vec![series("a", vec![5]), text(50)],
        };
        e.write(5, &wb.encode(), Instant::now());
        // Room for 8: a 8 × 16 + 160 = 288, s 8 × 32 + 15 + 160 = 431.
        assert_eq!(e.groups[&key].seq.mem_bytes, 288 + 431);
        let g = &e.groups[&key];
        let a = &g.seq.mem[&(Arc::from("root.sg.d1"), Arc::from("a"))];
        assert_eq!(a.times, vec![10, 20, 30, 40, 5]);
        assert_eq!(a.values, Column::Int64(vec![30, 60, 90, 120, 15]));
        assert!(!a.sorted);
        let s = &g.seq.mem[&(Arc::from("root.sg.d1"), Arc::from("s"))];
        assert!(s.sorted);
        assert_eq!(s.text_bytes, 15);
        let (times, values) = sort_dedup(a.times.clone(), a.values.clone());
        assert_eq!(times, vec![5, 10, 20, 30, 40]);
        assert_eq!(values, Column::Int64(vec![15, 30, 60, 90, 120]));
    }

    /// A series whose times are not increasing: its memtable buffer is unsorted; once the
    /// device's times up to 10 are flushed, of a series of times 12, 8, 15 the least, 8, is
    /// not newer, so 12 and 15 go to the sequence memtable and 8 to the unsequence one; of
    /// 20, 21, 22 (increasing, the least is the first) all go to the sequence memtable.
    #[test]
    fn times_not_increasing_are_unsorted_and_split_at_the_latest_flushed() {
        let tmp = tempfile::tempdir().unwrap();
        let faults = testing::FaultFs::default();
        let mut e = testing::engine(tmp.path(), &faults);
        let key = (Arc::<str>::from("root.sg"), 0);
        let a = (Arc::<str>::from("root.sg.d1"), Arc::<str>::from("a"));
        let wb = WriteBatch {
            series: vec![series("a", vec![7, 3, 10])],
        };
        e.write(1, &wb.encode(), Instant::now());
        assert!(!e.groups[&key].seq.mem[&a].sorted);
        e.flush(&key, Space::Sequence);
        let wb = WriteBatch {
            series: vec![series("a", vec![12, 8, 15])],
        };
        e.write(2, &wb.encode(), Instant::now());
        let g = &e.groups[&key];
        assert_eq!(g.seq.mem[&a].times, vec![12, 15]);
        assert_eq!(g.seq.mem[&a].values, Column::Int64(vec![36, 45]));
        assert!(g.seq.mem[&a].sorted);
        assert_eq!(g.unseq.mem[&a].times, vec![8]);
        let wb = WriteBatch {
            series: vec![series("a", vec![20, 21, 22])],
        };
        e.write(3, &wb.encode(), Instant::now());
        let g = &e.groups[&key];
        assert_eq!(g.seq.mem[&a].times, vec![12, 15, 20, 21, 22]);
        assert!(g.seq.mem[&a].sorted);
        assert_eq!(g.unseq.mem[&a].times, vec![8]);
    }

    fn series(m: &str, times: Vec<i64>) -> SeriesData {
        let values = Column::Int64(times.iter().map(|t| t * 3).collect());
        SeriesData {
            device: "root.sg.d1".into(),
            measurement: m.into(),
            ty: SeriesType::default_for(DataType::INT64),
            times,
            values,
        }
    }

    /// After a flush of three series of 1, 9 and 30 points, a series of the next memtable
    /// starts with room for their average, 40 / 3 = 13 points: one point of it counts
    /// 13 × (8 + 8) bytes and the 160 of its entry in the memtable's bytes. Before any flush
    /// a series' vectors grow from empty (the standard library's first room for 8-byte values
    /// is 4 of them: 4 × 16 + 160 bytes).
    #[test]
    fn a_memtable_after_a_flush_sizes_its_series_by_the_flushed_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let faults = testing::FaultFs::default();
        let mut e = testing::engine(tmp.path(), &faults);
        let key = (Arc::<str>::from("root.sg"), 0);
        let one = WriteBatch {
            series: vec![series("z", vec![1])],
        };
        e.write(1, &one.encode(), Instant::now());
        assert_eq!(e.groups[&key].seq.mem_bytes, 4 * 16 + 160);
        let wb = WriteBatch {
            series: vec![
                series("a", (2..11).collect()),
                series("b", (1..31).collect()),
            ],
        };
        e.write(2, &wb.encode(), Instant::now());
        e.flush(&key, Space::Sequence);
        assert_eq!(e.groups[&key].seq.mem_bytes, 0);
        // Three series flushed: z (1 point), a (9), b (30): 40 / 3 = 13.
        let next = WriteBatch {
            series: vec![series("a", vec![50])],
        };
        e.write(3, &next.encode(), Instant::now());
        let g = &e.groups[&key];
        assert_eq!(g.seq.mem_bytes, 13 * 16 + 160);
        let a = &g.seq.mem[&(Arc::from("root.sg.d1"), Arc::from("a"))];
        assert_eq!(a.times, vec![50]);
        assert_eq!(a.values, Column::Int64(vec![150]));
        assert_eq!((a.times.capacity(), a.values.len()), (13, 1));
    }
}
