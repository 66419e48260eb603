//! The log's documented contract checked against hand-written values: the segment and record
//! layout of the module docs (record checksums are CRC-32 check values computed outside this
//! code: `zlib.crc32`), the LSN layout, the limits of [`WalOptions`] and [`MAX_RECORD`], and
//! what shutdown, a deleted directory or a failing device do.

use super::*;
use std::fs;
use std::sync::atomic::AtomicI32;

/// CRC-32 (IEEE) of `123456789`, the algorithm's published check value.
const CRC_123456789: u32 = 0xCBF4_3926;
/// CRC-32 of `abc` and of `a` (`zlib.crc32`).
const CRC_ABC: u32 = 0x3524_41C2;
const CRC_A: u32 = 0xE8B7_BE43;

/// A record as the module docs lay it out: `[len u32 LE][crc32 u32 LE][payload]`.
fn record(payload: &[u8], crc: u32) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// A segment: the 8-byte magic `TSFDWAL1`, then `records`.
fn segment(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"TSFDWAL1".to_vec();
    for r in records {
        out.extend_from_slice(r);
    }
    out
}

fn replay_all(dir: &Path) -> (u64, ReplayReport, u64, Vec<(Lsn, Vec<u8>)>) {
    let mut recs = Vec::new();
    let (next, report, disk) = replay(&*tsfiled_fsio::std_fs(), dir, |r| {
        recs.push((r.lsn, r.payload))
    })
    .unwrap();
    (next, report, disk, recs)
}

/// A log whose sink blocks on item 0 until released: while it blocks, later appends queue
/// up (the log thread is inside its first commit, that group's bytes no longer pending).
/// (`release` is dropped first: a failing test then frees the log thread instead of waiting
/// for it forever.)
struct Held {
    release: mpsc::Sender<()>,
    entered: mpsc::Receiver<()>,
    wal: Wal<u32>,
}

fn held(opts: WalOptions) -> Held {
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (release, release_rx) = mpsc::channel::<()>();
    let dir = opts.dir.clone();
    let (next, _, disk) = replay(&*opts.fs, &dir, |_| {}).unwrap();
    let wal = Wal::start(opts, next, disk, move |_lsn, _, item: u32| {
        if item == 0 {
            entered_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        }
    })
    .unwrap();
    Held {
        release,
        entered,
        wal,
    }
}

impl Held {
    /// Appends item 0 and waits until the log thread blocks delivering it.
    fn hold(&self) -> Ticket {
        let t = self.wal.append(vec![0; 10], 0).unwrap();
        self.entered.recv().unwrap();
        t
    }
}

#[test]
fn an_lsn_is_the_segment_shifted_by_40_bits_or_the_offset() {
    assert_eq!(lsn(0, 8), 8);
    assert_eq!(lsn(3, 5), 0x0300_0000_0005);
    assert_eq!(lsn(1, 0xFF_FFFF_FFFF), 0x01FF_FFFF_FFFF);
    assert_eq!(lsn_segment(0x0300_0000_0005), 3);
    assert_eq!(lsn_segment(0x01FF_FFFF_FFFF), 1);
    assert_eq!(lsn_segment(0xFF_FFFF_FFFF), 0);
}

#[test]
fn a_hand_built_segment_replays_with_its_positions() {
    let tmp = tempfile::tempdir().unwrap();
    let data = segment(&[record(b"123456789", CRC_123456789), record(b"abc", CRC_ABC)]);
    assert_eq!(data.len(), 8 + 17 + 11);
    fs::write(tmp.path().join("wal-00000000000000000007.log"), &data).unwrap();
    let (next, report, disk, recs) = replay_all(tmp.path());
    assert_eq!(next, 8);
    assert_eq!(
        recs,
        vec![
            (0x0700_0000_0008, b"123456789".to_vec()),
            (0x0700_0000_0019, b"abc".to_vec())
        ]
    );
    assert_eq!(
        report,
        ReplayReport {
            segments: 1,
            records: 2,
            truncated: vec![],
            skipped: vec![],
        }
    );
    assert_eq!(disk, 36);
    // Files that are not segments are left alone.
    fs::write(tmp.path().join("wal-x.log"), b"not a segment").unwrap();
    fs::write(tmp.path().join("notes.txt"), b"").unwrap();
    let (next, report, disk, _) = replay_all(tmp.path());
    assert_eq!((next, report.segments, disk), (8, 1, 36));
}

#[test]
fn a_header_only_segment_is_an_empty_good_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("wal-00000000000000000002.log");
    fs::write(&path, b"TSFDWAL1").unwrap();
    let (next, report, disk, recs) = replay_all(tmp.path());
    assert_eq!(next, 3);
    assert!(recs.is_empty());
    assert_eq!(report.segments, 1);
    assert_eq!(report.truncated, vec![]);
    assert_eq!(disk, 8);
    assert_eq!(fs::read(&path).unwrap(), b"TSFDWAL1");
}

#[test]
fn a_torn_first_record_leaves_the_bare_header() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("wal-00000000000000000000.log");
    let mut data = segment(&[record(b"123456789", CRC_123456789)]);
    data.truncate(8 + 8 + 4);
    fs::write(&path, &data).unwrap();
    let (_, report, disk, recs) = replay_all(tmp.path());
    assert!(recs.is_empty());
    assert_eq!(
        report.truncated,
        vec![(
            0,
            8,
            "torn record: 9 bytes announced, 4 present".to_string()
        )]
    );
    assert_eq!(disk, 8);
    assert_eq!(fs::read(&path).unwrap(), b"TSFDWAL1");
}

#[test]
fn a_segment_with_a_bad_magic_is_removed_whatever_follows() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("wal-00000000000000000004.log");
    let mut data = b"TSFDWAL0".to_vec();
    data.extend_from_slice(&record(b"123456789", CRC_123456789));
    data.extend_from_slice(&record(b"abc", CRC_ABC));
    fs::write(&path, &data).unwrap();
    let (next, report, disk, recs) = replay_all(tmp.path());
    assert_eq!(next, 5);
    assert!(recs.is_empty());
    assert_eq!(
        report.truncated,
        vec![(4, 0, "bad segment magic".to_string())]
    );
    assert_eq!(report.skipped, vec![]);
    assert_eq!(disk, 0);
    assert!(!path.exists());
}

#[test]
fn the_record_limit_is_256_mib() {
    // A length of exactly 256 MiB is in range (here: torn), one more byte is not.
    let mut data = segment(&[]);
    data.extend_from_slice(&268_435_456u32.to_le_bytes());
    data.extend_from_slice(&[0; 4]);
    assert_eq!(
        scan_segment(&data, 0, 0, |_, _| {}),
        (
            8,
            Some("torn record: 268435456 bytes announced, 0 present".to_string())
        )
    );
    data[8..12].copy_from_slice(&268_435_457u32.to_le_bytes());
    assert_eq!(
        scan_segment(&data, 0, 0, |_, _| {}),
        (8, Some("record length 268435457 out of range".to_string()))
    );
    // An append of exactly 256 MiB passes the record limit (and meets the disk budget).
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = WalOptions::new(tmp.path());
    opts.max_bytes = 1 << 20;
    let (next, _, disk) = replay(&*opts.fs, tmp.path(), |_| {}).unwrap();
    let wal = Wal::start(opts, next, disk, |_, _, _: u32| {}).unwrap();
    match wal.append(vec![0; 268_435_456], 1) {
        Err(Error::WalFull(reason)) => assert_eq!(reason, "disk budget"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn resync_finds_the_next_whole_record_after_the_given_position() {
    // Records at 8 and 25.
    let data = segment(&[record(b"123456789", CRC_123456789), record(b"abc", CRC_ABC)]);
    assert_eq!(resync(&data, 7, None), Some(8));
    assert_eq!(resync(&data, 8, None), Some(25));
    assert_eq!(resync(&data, 24, None), Some(25));
    assert_eq!(resync(&data, 25, None), None);
    // Zeros (a length-0 record with the checksum of nothing) are no place to resume at.
    let mut data = segment(&[]);
    data.extend_from_slice(&[0; 16]);
    data.extend_from_slice(&record(b"a", CRC_A));
    assert_eq!(resync(&data, 8, None), Some(24));
    // A wrong checksum, or a length running past the end, is no record either.
    let mut data = segment(&[record(b"abc", CRC_ABC ^ 1)]);
    data.extend_from_slice(&record(b"a", CRC_A));
    assert_eq!(resync(&data, 0, None), Some(19));
    let data = segment(&[record(b"abc", CRC_ABC)]);
    assert_eq!(resync(&data[..18], 0, None), None);
}

/// Appends `n` records of `size` bytes one at a time; their LSNs.
fn append_each(wal: &Wal<u32>, n: u32, size: usize) -> Vec<Lsn> {
    (0..n)
        .map(|i| {
            wal.append(vec![1; size], i)
                .unwrap()
                .wait_blocking()
                .unwrap()
        })
        .collect()
}

/// A partition read back after a restart passes over the corrupt stretches replay skipped,
/// and reads the good records after them (before, it read nothing more of that segment).
#[test]
fn a_log_reader_passes_over_the_stretches_replay_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    // Segment 2: "123456789" at 8, a corrupt "abc" at 8 + 8 + 9 = 0x19, "a" at
    // 0x19 + 8 + 3 = 0x24; segment 3: "abc" at 8.
    let two = segment(&[
        record(b"123456789", CRC_123456789),
        record(b"abc", CRC_ABC ^ 1),
        record(b"a", CRC_A),
    ]);
    fs::write(tmp.path().join("wal-00000000000000000002.log"), two).unwrap();
    let three = segment(&[record(b"abc", CRC_ABC)]);
    fs::write(tmp.path().join("wal-00000000000000000003.log"), three).unwrap();
    let (_, report, _, _) = replay_all(tmp.path());
    assert_eq!(
        report.skipped,
        vec![(2, 0x19, 0x24, "record checksum mismatch".to_string())]
    );
    let skips = report.skip_ranges();
    let bounds: Vec<_> = skips.iter().map(|r| (r.start, r.end)).collect();
    assert_eq!(bounds, vec![(0x0200_0000_0019, 0x0200_0000_0024)]);
    let read = |skips: Arc<[Range<Lsn>]>, upto: Lsn| {
        let mut r = LogReader::new(
            tsfiled_fsio::std_fs(),
            tmp.path().to_path_buf(),
            0x0200_0000_0008,
        )
        .skipping(skips);
        let mut out = Vec::new();
        loop {
            match r.next(upto) {
                Ok(Some((at, payload))) => out.push((at, payload.to_vec())),
                Ok(None) => return Ok(out),
                Err(e) => return Err((out, e.to_string())),
            }
        }
    };
    assert_eq!(
        read(skips.clone(), 0x0300_0000_0008),
        Ok(vec![
            (0x0200_0000_0008, b"123456789".to_vec()),
            (0x0200_0000_0024, b"a".to_vec()),
            (0x0300_0000_0008, b"abc".to_vec()),
        ])
    );
    // Without the stretch, the corrupt record ends segment 2 (so "a" is not read) and, in
    // the segment of the last record wanted, is an error.
    assert_eq!(
        read(Arc::from([]), 0x0300_0000_0008),
        Ok(vec![
            (0x0200_0000_0008, b"123456789".to_vec()),
            (0x0300_0000_0008, b"abc".to_vec()),
        ])
    );
    let (got, e) = read(Arc::from([]), 0x0200_0000_0024).unwrap_err();
    assert_eq!(got, vec![(0x0200_0000_0008, b"123456789".to_vec())]);
    assert!(e.contains("segment 2, offset 25"), "{e}");
}

#[test]
fn a_segment_is_at_most_an_eighth_of_the_size_limit_and_at_least_64_kib() {
    // 1 MiB limit: segments rotate once they reach 131072 bytes, i.e. after the 14th record
    // of 10008 bytes (8 + 14 * 10008 = 140120; after 13: 130112).
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = WalOptions::new(tmp.path());
    opts.segment_bytes = 1 << 30;
    opts.max_bytes = 1 << 20;
    let wal = Wal::start(opts, 0, 0, |_, _, _: u32| {}).unwrap();
    let lsns = append_each(&wal, 16, 10_000);
    assert_eq!(lsns[13], 8 + 13 * 10_008);
    assert_eq!(lsns[14], 0x0100_0000_0008);
    assert_eq!(lsns[15], 0x0100_0000_0008 + 10_008);
    drop(wal);
    // 100000-byte limit: an eighth is 12500, so 64 KiB: the first segment takes 66 records
    // of 1008 bytes (8 + 65 * 1008 = 65528 < 65536).
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = WalOptions::new(tmp.path());
    opts.max_bytes = 100_000;
    let wal = Wal::start(opts, 0, 0, |_, _, _: u32| {}).unwrap();
    let lsns = append_each(&wal, 68, 1000);
    assert_eq!(lsns[65], 8 + 65 * 1008);
    assert_eq!(lsns[66], 0x0100_0000_0008);
    assert_eq!(lsns[67], 0x0100_0000_0008 + 1008);
}

#[test]
fn the_disk_budget_counts_the_segment_header_and_every_record() {
    // 188 bytes: the 8-byte header and ten records of 18.
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = WalOptions::new(tmp.path());
    opts.max_bytes = 188;
    let wal = Wal::start(opts, 0, 0, |_, _, _: u32| {}).unwrap();
    let lsns = append_each(&wal, 10, 10);
    assert_eq!(lsns[9], 8 + 9 * 18);
    assert_eq!(wal.fill_ratio(), 1.0);
    match wal.append(vec![1], 10) {
        Err(Error::WalFull(reason)) => assert_eq!(reason, "disk budget"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert_eq!(wal.stats().pending_bytes.load(Ordering::Relaxed), 0);
}

#[test]
fn the_queue_limit_refuses_appends_past_max_pending_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = WalOptions::new(tmp.path());
    opts.max_pending_bytes = 90;
    let h = held(opts);
    let first = h.hold();
    // Five records of 18 bytes fill the 90 bytes; the sixth is refused.
    let tickets: Vec<_> = (1..=5u32)
        .map(|i| h.wal.append(vec![2; 10], i).unwrap())
        .collect();
    assert_eq!(h.wal.stats().pending_bytes.load(Ordering::Relaxed), 90);
    match h.wal.append(vec![2; 10], 6) {
        Err(Error::WalFull(reason)) => assert_eq!(reason, "queue"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    h.release.send(()).unwrap();
    assert_eq!(first.wait_blocking().unwrap(), 8);
    let lsns: Vec<_> = tickets
        .into_iter()
        .map(|t| t.wait_blocking().unwrap())
        .collect();
    assert_eq!(lsns, vec![26, 44, 62, 80, 98]);
    assert_eq!(h.wal.stats().pending_bytes.load(Ordering::Relaxed), 0);
}

#[test]
fn an_empty_queue_takes_a_record_larger_than_its_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = WalOptions::new(tmp.path());
    opts.max_pending_bytes = 90;
    let h = held(opts);
    let _first = h.hold();
    let big = h.wal.append(vec![3; 200], 1).unwrap();
    assert_eq!(h.wal.stats().pending_bytes.load(Ordering::Relaxed), 208);
    match h.wal.append(vec![3], 2) {
        Err(Error::WalFull(reason)) => assert_eq!(reason, "queue"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    h.release.send(()).unwrap();
    assert_eq!(big.wait_blocking().unwrap(), 26);
}

#[test]
fn fill_ratio_counts_the_bytes_on_disk_and_the_queued_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = WalOptions::new(tmp.path());
    opts.max_bytes = 1000;
    let h = held(opts);
    // A fresh segment: its 8-byte header.
    assert_eq!(h.wal.fill_ratio(), 0.008);
    let _first = h.hold();
    // Header and one record on disk (26), one record of 18 queued.
    let queued = h.wal.append(vec![4; 10], 1).unwrap();
    assert_eq!(h.wal.fill_ratio(), 0.044);
    h.release.send(()).unwrap();
    queued.wait_blocking().unwrap();
    assert_eq!(h.wal.fill_ratio(), 0.044);
}

#[test]
fn commit_bytes_bounds_the_bytes_written_under_one_fsync() {
    // 99 records of 18 bytes queue up while the thread is held in the first commit; with
    // 180 bytes a group they take 10 fsyncs (nine of ten records, one of nine), 11 in all.
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = WalOptions::new(tmp.path());
    opts.commit_bytes = 180;
    let h = held(opts);
    let first = h.hold();
    let tickets: Vec<_> = (1..100u32)
        .map(|i| h.wal.append(vec![5; 10], i).unwrap())
        .collect();
    h.release.send(()).unwrap();
    first.wait_blocking().unwrap();
    for t in tickets {
        t.wait_blocking().unwrap();
    }
    assert_eq!(h.wal.stats().syncs.load(Ordering::Relaxed), 11);
    assert_eq!(h.wal.stats().records.load(Ordering::Relaxed), 100);
}

#[test]
fn a_commit_delay_gathers_the_appends_that_follow_into_one_group() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = WalOptions::new(tmp.path());
    opts.commit_delay = Duration::from_secs(2);
    let wal = Wal::start(opts, 0, 0, |_, _, _: u32| {}).unwrap();
    let mut tickets = vec![wal.append(vec![6; 10], 0).unwrap()];
    // The log thread has the first record and waits out the delay.
    std::thread::sleep(Duration::from_millis(100));
    tickets.extend((1..10u32).map(|i| wal.append(vec![6; 10], i).unwrap()));
    let lsns: Vec<_> = tickets
        .into_iter()
        .map(|t| t.wait_blocking().unwrap())
        .collect();
    assert_eq!(lsns, (0..10).map(|i| 8 + 18 * i).collect::<Vec<_>>());
    assert_eq!(wal.stats().syncs.load(Ordering::Relaxed), 1);
}

#[test]
fn trim_before_raises_the_shared_watermark_and_never_lowers_it() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = Wal::start(WalOptions::new(tmp.path()), 0, 0, |_, _, _: u32| {}).unwrap();
    let handle = wal.watermark_handle();
    assert_eq!(handle.load(Ordering::Relaxed), 0);
    wal.trim_before(0x0200_0000_0000);
    assert_eq!(handle.load(Ordering::Relaxed), 0x0200_0000_0000);
    wal.trim_before(0x0100_0000_0005);
    assert_eq!(handle.load(Ordering::Relaxed), 0x0200_0000_0000);
}

#[test]
fn a_ticket_resolves_in_async_code_too() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = Wal::start(WalOptions::new(tmp.path()), 0, 0, |_, _, _: u32| {}).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let at = rt.block_on(wal.append(vec![7; 3], 1).unwrap().wait());
    assert_eq!(at.unwrap(), 8);
    let at = rt.block_on(wal.append(vec![7; 3], 2).unwrap().wait());
    assert_eq!(at.unwrap(), 8 + 11);
}

#[test]
fn shutdown_writes_what_is_queued_and_refuses_later_appends() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = Wal::start(WalOptions::new(tmp.path()), 0, 0, |_, _, _: u32| {}).unwrap();
    let tickets: Vec<_> = (0..20u32)
        .map(|i| wal.append(vec![i as u8; 4], i).unwrap())
        .collect();
    wal.shutdown();
    let (_, _, _, recs) = replay_all(tmp.path());
    assert_eq!(recs.len(), 20);
    for t in tickets {
        t.wait_blocking().unwrap();
    }
    assert!(matches!(wal.append(vec![1], 20), Err(Error::WalClosed)));
}

#[test]
fn dropping_the_log_writes_what_is_queued() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = Wal::start(WalOptions::new(tmp.path()), 0, 0, |_, _, _: u32| {}).unwrap();
    for i in 0..20u32 {
        drop(wal.append(vec![i as u8; 4], i).unwrap());
    }
    drop(wal);
    let (_, _, _, recs) = replay_all(tmp.path());
    assert_eq!(
        recs.into_iter().map(|r| r.1).collect::<Vec<_>>(),
        (0..20u8).map(|i| vec![i; 4]).collect::<Vec<_>>()
    );
}

#[test]
fn a_deleted_directory_refuses_the_group_then_is_created_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wal");
    let wal = Wal::start(WalOptions::new(&dir), 0, 0, |_, _, _: u32| {}).unwrap();
    assert_eq!(
        wal.append(vec![1; 4], 1).unwrap().wait_blocking().unwrap(),
        8
    );
    fs::remove_dir_all(&dir).unwrap();
    match wal.append(vec![2; 4], 2).unwrap().wait_blocking() {
        Err(Error::WalIo(message)) => {
            assert!(message.contains("was deleted while in use"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(wal.stats().lost_segments.load(Ordering::Relaxed));
    let at = wal.append(vec![3; 4], 3).unwrap().wait_blocking().unwrap();
    assert_eq!(at, 0x0100_0000_0008);
    drop(wal);
    let (_, _, _, recs) = replay_all(&dir);
    assert_eq!(recs, vec![(0x0100_0000_0008, vec![3; 4])]);
}

/// The real file system, with `create` failing with errno `create_errno` (0: not) and the
/// files' `fdatasync` failing with `sync_errno` (0: not).
#[derive(Debug, Default)]
struct Faulty {
    create_errno: AtomicI32,
    sync_errno: Arc<AtomicI32>,
}

#[derive(Debug)]
struct FaultyFile {
    inner: Box<dyn FsFile>,
    sync_errno: Arc<AtomicI32>,
}

fn errno(code: &AtomicI32) -> io::Result<()> {
    match code.load(Ordering::Relaxed) {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

impl Write for FaultyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl FsFile for FaultyFile {
    fn sync_all(&mut self) -> io::Result<()> {
        self.inner.sync_all()
    }
    fn sync_data(&mut self) -> io::Result<()> {
        errno(&self.sync_errno)?;
        self.inner.sync_data()
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn seek_to(&mut self, pos: u64) -> io::Result<()> {
        self.inner.seek_to(pos)
    }
}

impl Fs for Faulty {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        errno(&self.create_errno)?;
        Ok(Box::new(FaultyFile {
            inner: tsfiled_fsio::std_fs().create(path)?,
            sync_errno: self.sync_errno.clone(),
        }))
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        tsfiled_fsio::std_fs().create_new(path)
    }
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        tsfiled_fsio::std_fs().open_write(path)
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        tsfiled_fsio::std_fs().open_append(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        tsfiled_fsio::std_fs().read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        tsfiled_fsio::std_fs().rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        tsfiled_fsio::std_fs().remove_file(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        tsfiled_fsio::std_fs().create_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        tsfiled_fsio::std_fs().sync_dir(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<tsfiled_fsio::DirEntry>> {
        tsfiled_fsio::std_fs().read_dir(path)
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        tsfiled_fsio::std_fs().file_len(path)
    }
    fn exists(&self, path: &Path) -> bool {
        tsfiled_fsio::std_fs().exists(path)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn std::any::Any + Send + Sync>> {
        tsfiled_fsio::std_fs().lock(path)
    }
}

/// A log on a [`Faulty`] file system (shared with the test).
fn on_faulty(dir: &Path) -> (Wal<u32>, Arc<Faulty>) {
    let faulty = Arc::new(Faulty::default());
    let mut opts = WalOptions::new(dir);
    opts.fs = FsRef::new(ArcFs(faulty.clone()));
    (Wal::start(opts, 0, 0, |_, _, _: u32| {}).unwrap(), faulty)
}

/// [`Faulty`] behind an `Arc` (the test keeps a handle to flip its faults).
#[derive(Debug)]
struct ArcFs(Arc<Faulty>);

impl Fs for ArcFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.0.create(path)
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.0.create_new(path)
    }
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.0.open_write(path)
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.0.open_append(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.0.read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.0.remove_file(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.0.create_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.0.sync_dir(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<tsfiled_fsio::DirEntry>> {
        self.0.read_dir(path)
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        self.0.file_len(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.0.exists(path)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn std::any::Any + Send + Sync>> {
        self.0.lock(path)
    }
}

/// Waits until the log refuses appends (it failed to open its next segment).
fn refused_reason(wal: &Wal<u32>) -> &'static str {
    for _ in 0..500 {
        match wal.append(vec![9], 99) {
            Err(Error::WalFull(reason)) => return reason,
            Ok(t) => {
                let _ = t.wait_blocking();
            }
            Err(e) => panic!("{e}"),
        }
    }
    panic!("appends never refused");
}

#[test]
fn a_full_device_is_named_in_the_refusal() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, faulty) = on_faulty(tmp.path());
    wal.append(vec![1; 10], 1).unwrap().wait_blocking().unwrap();
    // The fsync fails with ENOSPC: the group is refused as "full", the segment retired.
    faulty.sync_errno.store(libc::ENOSPC, Ordering::Relaxed);
    faulty.create_errno.store(libc::ENOSPC, Ordering::Relaxed);
    match wal.append(vec![2; 10], 2).unwrap().wait_blocking() {
        Err(Error::WalFull(reason)) => assert_eq!(reason, "no space left on the WAL device"),
        other => panic!("{other:?}"),
    }
    // The next group finds no segment and cannot create one: refused with the reason.
    match wal.append(vec![3; 10], 3).unwrap().wait_blocking() {
        Err(Error::WalFull(reason)) => assert_eq!(reason, "no space left on the WAL device"),
        other => panic!("{other:?}"),
    }
    assert_eq!(wal.stats().pending_bytes.load(Ordering::Relaxed), 0);
    assert_eq!(refused_reason(&wal), "no space left on the WAL device");
}

#[test]
fn a_read_only_device_is_named_in_the_refusal() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, faulty) = on_faulty(tmp.path());
    wal.append(vec![1; 10], 1).unwrap().wait_blocking().unwrap();
    faulty.sync_errno.store(libc::EROFS, Ordering::Relaxed);
    faulty.create_errno.store(libc::EROFS, Ordering::Relaxed);
    match wal.append(vec![2; 10], 2).unwrap().wait_blocking() {
        Err(Error::WalFull(reason)) => assert_eq!(reason, "the WAL device is read-only"),
        other => panic!("{other:?}"),
    }
    assert_eq!(refused_reason(&wal), "the WAL device is read-only");
    // The device comes back: appends go to the segment after the failed one.
    faulty.sync_errno.store(0, Ordering::Relaxed);
    faulty.create_errno.store(0, Ordering::Relaxed);
    let start = Instant::now();
    let at = loop {
        match wal.append(vec![4; 10], 4) {
            Ok(t) => break t.wait_blocking().unwrap(),
            Err(Error::WalFull(_)) => {
                assert!(start.elapsed() < Duration::from_secs(30), "never recovered");
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(at, 0x0100_0000_0008);
}

/// The real file system whose first `remove_file` blocks until released and then fails
/// with EBUSY (a slow deletion, as on a device that discards freed blocks, that fails).
#[derive(Debug)]
struct SlowRemove {
    removes: AtomicUsize,
    entered: Mutex<mpsc::Sender<()>>,
    release: Mutex<mpsc::Receiver<()>>,
}

impl Fs for SlowRemove {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        tsfiled_fsio::std_fs().create(path)
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        tsfiled_fsio::std_fs().create_new(path)
    }
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        tsfiled_fsio::std_fs().open_write(path)
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        tsfiled_fsio::std_fs().open_append(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        tsfiled_fsio::std_fs().read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        tsfiled_fsio::std_fs().rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        if self.removes.fetch_add(1, Ordering::SeqCst) == 0 {
            let _ = self.entered.lock().unwrap().send(());
            let _ = self.release.lock().unwrap().recv();
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
        tsfiled_fsio::std_fs().remove_file(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        tsfiled_fsio::std_fs().create_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        tsfiled_fsio::std_fs().sync_dir(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<tsfiled_fsio::DirEntry>> {
        tsfiled_fsio::std_fs().read_dir(path)
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        tsfiled_fsio::std_fs().file_len(path)
    }
    fn exists(&self, path: &Path) -> bool {
        tsfiled_fsio::std_fs().exists(path)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn std::any::Any + Send + Sync>> {
        tsfiled_fsio::std_fs().lock(path)
    }
}

/// Deleting segments below the watermark runs beside the log's thread: while a deletion
/// hangs, appends are still written and acknowledged; the deletion that then fails is
/// tried again, and the log counts exactly the bytes left on disk.
#[test]
fn a_slow_segment_deletion_does_not_hold_appends_and_a_failed_one_is_retried() {
    let tmp = tempfile::tempdir().unwrap();
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let mut opts = WalOptions::new(tmp.path());
    opts.fs = FsRef::new(SlowRemove {
        removes: AtomicUsize::new(0),
        entered: Mutex::new(entered_tx),
        release: Mutex::new(release_rx),
    });
    // 1000-byte segments: a segment (8-byte magic) rotates after its second 508-byte record
    // (8 + 2 x 508 = 1024 bytes).
    opts.segment_bytes = 1000;
    opts.spares = 0; // trimmed segments are deleted, none kept for reuse
    let wal = Arc::new(Wal::start(opts, 0, 0, |_, _, _: u32| {}).unwrap());
    let lsns: Vec<Lsn> = (0..6)
        .map(|i| {
            wal.append(vec![1; 500], i)
                .unwrap()
                .wait_blocking()
                .unwrap()
        })
        .collect();
    assert_eq!(
        lsns,
        [
            0x8,
            0x204,
            0x0100_0000_0008,
            0x0100_0000_0204,
            0x0200_0000_0008,
            0x0200_0000_0204
        ]
    );
    // Segments 0 and 1 are sealed: the first deletion hangs.
    wal.trim_before(0x0200_0000_0008);
    entered
        .recv_timeout(Duration::from_secs(60))
        .expect("no segment deletion was tried");
    let (acked_tx, acked) = mpsc::channel();
    let w = wal.clone();
    std::thread::spawn(move || {
        let _ = acked_tx.send(w.append(vec![1; 500], 7).unwrap().wait_blocking());
    });
    let at = acked.recv_timeout(Duration::from_secs(60));
    release.send(()).unwrap();
    assert_eq!(
        at.expect("the append was held by the deletion").unwrap(),
        0x0300_0000_0008
    );
    let segments = || -> Vec<u64> {
        list_segments(&*tsfiled_fsio::std_fs(), tmp.path())
            .unwrap()
            .into_iter()
            .map(|s| s.0)
            .collect()
    };
    let start = Instant::now();
    while segments() != [2, 3] {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{:?}",
            segments()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Segment 2: 1024 bytes; segment 3: the magic and one record, 516.
    assert_eq!(wal.stats().disk_bytes.load(Ordering::Relaxed), 1024 + 516);
}

/// CRC-32 of segment id 7 (u64 LE) followed by `abc`, of id 9 and `abc`, of id 5 and
/// `123456789`, of id 9 and `123456789` (`zlib.crc32(struct.pack("<Q", id) + payload)`).
const CRC_ID7_ABC: u32 = 0x88D9_3CBF;
const CRC_ID9_ABC: u32 = 0xDAAF_17B9;
const CRC_ID5_123456789: u32 = 0x10BC_30B9;
const CRC_ID9_123456789: u32 = 0x85A4_58E8;

/// A segment of the current format: the 8-byte magic `TSFDWAL2`, then `records`.
fn segment_v2(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"TSFDWAL2".to_vec();
    for r in records {
        out.extend_from_slice(r);
    }
    out
}

#[test]
fn a_v2_record_checksum_covers_the_segment_id_then_the_payload() {
    // What the log writes, byte for byte.
    let tmp = tempfile::tempdir().unwrap();
    let wal = Wal::start(WalOptions::new(tmp.path()), 7, 0, |_, _, _: u32| {}).unwrap();
    let at = wal
        .append(b"abc".to_vec(), 1)
        .unwrap()
        .wait_blocking()
        .unwrap();
    drop(wal);
    assert_eq!(at, 0x0700_0000_0008);
    let written = fs::read(tmp.path().join("wal-00000000000000000007.log")).unwrap();
    assert_eq!(written, segment_v2(&[record(b"abc", CRC_ID7_ABC)]));
    // The hand-built segment replays under its own id only.
    let tmp = tempfile::tempdir().unwrap();
    let data = segment_v2(&[record(b"abc", CRC_ID7_ABC)]);
    fs::write(tmp.path().join("wal-00000000000000000007.log"), &data).unwrap();
    let (next, report, disk, recs) = replay_all(tmp.path());
    assert_eq!(recs, vec![(0x0700_0000_0008, b"abc".to_vec())]);
    assert_eq!((next, report.truncated, disk), (8, vec![], 19));
    for (name, bytes) in [
        // The same bytes under another id.
        ("wal-00000000000000000009.log", data.clone()),
        // The first format's checksum (payload alone) in a v2 segment.
        (
            "wal-00000000000000000007.log",
            segment_v2(&[record(b"abc", CRC_ABC)]),
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join(name), bytes).unwrap();
        let (_, report, disk, recs) = replay_all(tmp.path());
        assert!(recs.is_empty(), "{name}");
        assert_eq!(report.truncated.len(), 1);
        assert_eq!(report.truncated[0].1, 8);
        assert_eq!(report.truncated[0].2, "record checksum mismatch");
        assert_eq!(disk, 8);
    }
}

#[test]
fn a_reused_files_old_records_are_cut_never_replayed_nor_resynced_onto() {
    // Segment 9 in a file that held segment 5: a record of 9, then a whole record of 5.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("wal-00000000000000000009.log");
    let mine = record(b"abc", CRC_ID9_ABC);
    let stale = record(b"123456789", CRC_ID5_123456789);
    fs::write(&path, segment_v2(&[mine.clone(), stale.clone()])).unwrap();
    let (next, report, disk, recs) = replay_all(tmp.path());
    assert_eq!(recs, vec![(0x0900_0000_0008, b"abc".to_vec())]);
    assert_eq!(next, 10);
    assert_eq!(
        report.truncated,
        vec![(9, 19, "record checksum mismatch".to_string())]
    );
    assert_eq!(report.skipped, vec![]);
    assert_eq!((disk, fs::read(&path).unwrap().len()), (19, 19));
    // A corrupt record of 9 followed by the old record: no good record follows, so the
    // stretch is a tail (cut), not a skip onto the old record.
    let corrupt = record(b"abc", CRC_ID9_ABC ^ 1);
    fs::write(
        &path,
        segment_v2(&[mine.clone(), corrupt.clone(), stale.clone()]),
    )
    .unwrap();
    let (_, report, _, recs) = replay_all(tmp.path());
    assert_eq!(recs.len(), 1);
    assert_eq!(report.skipped, vec![]);
    assert_eq!(report.truncated[0].1, 19);
    // Whereas a record of 9 after the corrupt one is resumed at (the stretch is skipped).
    let good = record(b"123456789", CRC_ID9_123456789);
    fs::write(&path, segment_v2(&[mine, corrupt, good])).unwrap();
    let (_, report, _, recs) = replay_all(tmp.path());
    assert_eq!(
        recs,
        vec![
            (0x0900_0000_0008, b"abc".to_vec()),
            (0x0900_0000_001E, b"123456789".to_vec())
        ]
    );
    assert_eq!(
        report.skipped,
        vec![(9, 19, 30, "record checksum mismatch".to_string())]
    );
}

#[test]
fn spares_count_in_the_next_segment_id() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(
        tmp.path().join("wal-00000000000000000003.log"),
        segment_v2(&[]),
    )
    .unwrap();
    fs::write(tmp.path().join("wal-00000000000000000011.spare"), [1u8; 40]).unwrap();
    let (next, report, disk, _) = replay_all(tmp.path());
    assert_eq!((next, report.segments, disk), (12, 1, 8));
}

/// The real file system, recording the paths `create` was called on.
#[derive(Debug, Default)]
struct CountCreates(Arc<Mutex<Vec<PathBuf>>>);

impl Fs for CountCreates {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.0.lock().unwrap().push(path.to_path_buf());
        tsfiled_fsio::std_fs().create(path)
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.0.lock().unwrap().push(path.to_path_buf());
        tsfiled_fsio::std_fs().create_new(path)
    }
    fn open_write(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        tsfiled_fsio::std_fs().open_write(path)
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        tsfiled_fsio::std_fs().open_append(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        tsfiled_fsio::std_fs().read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        tsfiled_fsio::std_fs().rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        tsfiled_fsio::std_fs().remove_file(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        tsfiled_fsio::std_fs().create_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        tsfiled_fsio::std_fs().sync_dir(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<tsfiled_fsio::DirEntry>> {
        tsfiled_fsio::std_fs().read_dir(path)
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        tsfiled_fsio::std_fs().file_len(path)
    }
    fn exists(&self, path: &Path) -> bool {
        tsfiled_fsio::std_fs().exists(path)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn std::any::Any + Send + Sync>> {
        tsfiled_fsio::std_fs().lock(path)
    }
}

/// Waits (up to a minute) until `cond` holds.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// 1000-byte segments of two 500-byte records (8 + 2 x 508 = 1024 bytes): six appends fill
/// segments 0, 1 and 2, and the log opens segment 3; segments 0 and 1 are then trimmed.
fn fill_three_and_trim_two(opts: WalOptions) -> Wal<u32> {
    let wal = Wal::start(opts, 0, 0, |_, _, _: u32| {}).unwrap();
    for i in 0..6u8 {
        wal.append(vec![i; 500], i as u32)
            .unwrap()
            .wait_blocking()
            .unwrap();
    }
    wal.trim_before(0x0200_0000_0008);
    wal
}

#[test]
fn a_trimmed_segment_becomes_the_next_segment_without_a_create() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let seg = |id: u64| segment_path(tmp.path(), id);
    let creates = CountCreates::default();
    let created = creates.0.clone();
    let mut opts = WalOptions::new(tmp.path());
    opts.segment_bytes = 1000;
    opts.fs = FsRef::new(creates);
    let wal = fill_three_and_trim_two(opts);
    let old_inodes = [
        fs::metadata(seg(0)).unwrap().ino(),
        fs::metadata(seg(1)).unwrap().ino(),
    ];
    // Both trimmed segments are kept (spares); one of them is renamed to segment 4 ahead.
    wait_for("segment 4 prepared", || seg(4).exists());
    assert!(!seg(0).exists() && !seg(1).exists());
    assert_eq!(fs::metadata(seg(4)).unwrap().len(), 1024);
    let st = wal.stats();
    assert_eq!(st.spare_bytes.load(Ordering::Relaxed), 2 * 1024);
    // Segments 2 (full) and 3 (the magic): the spares are not counted.
    assert_eq!(st.disk_bytes.load(Ordering::Relaxed), 1024 + 8);
    // Two more records fill segment 3; the third goes to segment 4, a reused file.
    let lsns: Vec<Lsn> = (6..9u8)
        .map(|i| {
            wal.append(vec![i; 500], i as u32)
                .unwrap()
                .wait_blocking()
                .unwrap()
        })
        .collect();
    assert_eq!(lsns[2], 0x0400_0000_0008);
    assert!(old_inodes.contains(&fs::metadata(seg(4)).unwrap().ino()));
    let created: Vec<PathBuf> = created.lock().unwrap().clone();
    assert_eq!(created, vec![seg(0), seg(1), seg(2), seg(3)]);
    // Segment 4 counts as its whole file from the moment it is opened.
    assert_eq!(st.disk_bytes.load(Ordering::Relaxed), 3 * 1024);
    assert_eq!(st.spare_bytes.load(Ordering::Relaxed), 1024);
    drop(wal);
    // Replay: the records of segments 2, 3 and 4; the old bytes of segment 4 past its record
    // are cut, and segment 5 (the other spare, prepared meanwhile) is an empty segment.
    let (next, report, disk, recs) = replay_all(tmp.path());
    let payloads: Vec<Vec<u8>> = recs.iter().map(|r| r.1.clone()).collect();
    assert_eq!(payloads, (4..9u8).map(|i| vec![i; 500]).collect::<Vec<_>>());
    assert_eq!(
        report.truncated,
        vec![
            (4, 516, "record checksum mismatch".to_string()),
            (5, 8, "record checksum mismatch".to_string())
        ]
    );
    assert_eq!((next, disk), (6, 1024 + 1024 + 516 + 8));
}

#[test]
fn a_power_loss_around_a_prepared_segment_keeps_exactly_the_acknowledged_records() {
    use tsfiled_fsio::sim::{SimFs, Tear};
    let dir = Path::new("/wal");
    let sim = SimFs::new();
    let mut opts = WalOptions::new(dir);
    opts.segment_bytes = 1000;
    opts.fs = FsRef::new(sim.clone());
    let wal = fill_three_and_trim_two(opts);
    let has = |sim: &SimFs, id: u64| sim.files().iter().any(|f| f.0 == segment_path(dir, id));
    wait_for("segment 4 prepared", || has(&sim, 4));
    let replay_image = |image: &SimFs| {
        let mut recs = Vec::new();
        let (next, report, _) = replay(image, dir, |r| recs.push((r.lsn, r.payload))).unwrap();
        (next, report, recs)
    };
    let acked =
        |items: std::ops::Range<u8>| -> Vec<Vec<u8>> { items.map(|i| vec![i; 500]).collect() };
    // Power lost after the preparation, before the log used it: segment 2's records (0 and 1
    // were trimmed), segments 3 and 4 empty.
    let image = sim.crash_image(Tear::Drop);
    let (next, report, recs) = replay_image(&image);
    assert_eq!(
        recs.into_iter().map(|r| r.1).collect::<Vec<_>>(),
        acked(4..6)
    );
    assert_eq!(
        report.truncated,
        vec![(4, 8, "record checksum mismatch".to_string())]
    );
    assert_eq!(next, 5);
    // Power lost after a record was acknowledged in the reused segment: it is there.
    let lsns: Vec<Lsn> = (6..9u8)
        .map(|i| {
            wal.append(vec![i; 500], i as u32)
                .unwrap()
                .wait_blocking()
                .unwrap()
        })
        .collect();
    assert_eq!(lsns[2], 0x0400_0000_0008);
    let image = sim.crash_image(Tear::Drop);
    let (next, report, recs) = replay_image(&image);
    assert_eq!(
        recs.iter().map(|r| r.1.clone()).collect::<Vec<_>>(),
        acked(4..9)
    );
    assert_eq!(recs[4].0, 0x0400_0000_0008);
    assert_eq!(
        report.truncated[0],
        (4, 516, "record checksum mismatch".to_string())
    );
    // The log starts on the image past every segment and spare, and writes again.
    let opts = {
        let mut o = WalOptions::new(dir);
        o.fs = FsRef::new(image.clone());
        o
    };
    let wal2 = Wal::start(opts, next, 0, |_, _, _: u32| {}).unwrap();
    let at = wal2
        .append(vec![9; 10], 9)
        .unwrap()
        .wait_blocking()
        .unwrap();
    assert_eq!(lsn_segment(at), next);
    assert!(next >= 5);
}

#[test]
fn resync_takes_the_record_after_a_whole_corrupt_one_and_gives_up_past_its_budget() {
    // A whole record of 9 with a bad checksum, then a good one right after it.
    let data = segment_v2(&[
        record(b"abc", CRC_ID9_ABC ^ 1),
        record(b"123456789", CRC_ID9_123456789),
    ]);
    assert_eq!(resync(&data, 8, Some(9)), Some(19));
    // 20,000 bytes whose every fourth position reads as a 4096-byte record (old contents of
    // a reused file), then a good record: checksumming each candidate would cost about
    // 5,000 x 4,096 bytes, over the budget of 8 bytes per byte of the segment, so the search
    // stops and the good record at the end is not reached: the stretch is a tail.
    let mut data = segment_v2(&[]);
    for _ in 0..5000 {
        data.extend_from_slice(&[0x00, 0x10, 0x00, 0x00]);
    }
    let good_at = data.len();
    data.extend_from_slice(&record(b"abc", CRC_ID9_ABC));
    assert_eq!(resync(&data, 8, Some(9)), None);
    // The same good record after a short stretch is found.
    let mut near = segment_v2(&[]);
    near.extend_from_slice(&[0x00, 0x10, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00]);
    near.extend_from_slice(&record(b"abc", CRC_ID9_ABC));
    assert_eq!(resync(&near, 8, Some(9)), Some(16));
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("wal-00000000000000000009.log"), &data).unwrap();
    let (_, report, disk, recs) = replay_all(tmp.path());
    assert!(recs.is_empty());
    assert_eq!(report.skipped, vec![]);
    assert_eq!(report.truncated[0].1, 8);
    assert_eq!(disk, 8);
    // (The record at the end is a good one: read from its position, it checks out.)
    let mut found = Vec::new();
    let end = scan_segment(&data, 9, good_at, |at, payload| {
        found.push((at, payload.to_vec()))
    });
    assert_eq!(end, (data.len(), None));
    assert_eq!(found, vec![(good_at, b"abc".to_vec())]);
}

#[test]
fn v1_and_v2_segments_replay_side_by_side() {
    let tmp = tempfile::tempdir().unwrap();
    let v1 = segment(&[record(b"abc", CRC_ABC)]);
    fs::write(tmp.path().join("wal-00000000000000000005.log"), v1).unwrap();
    let v2 = segment_v2(&[record(b"123456789", CRC_ID9_123456789)]);
    fs::write(tmp.path().join("wal-00000000000000000009.log"), v2).unwrap();
    let (next, report, disk, recs) = replay_all(tmp.path());
    assert_eq!(
        recs,
        vec![
            (0x0500_0000_0008, b"abc".to_vec()),
            (0x0900_0000_0008, b"123456789".to_vec())
        ]
    );
    assert_eq!((next, report.truncated, disk), (10, vec![], 19 + 25));
}

#[test]
fn spares_left_by_a_previous_run_are_taken_up_to_the_pool_size_and_reused() {
    let tmp = tempfile::tempdir().unwrap();
    for id in [1u64, 2, 3] {
        fs::write(spare_path(tmp.path(), id), vec![7u8; 100 * id as usize]).unwrap();
    }
    let (next, _, disk, _) = replay_all(tmp.path());
    assert_eq!((next, disk), (4, 0));
    let wal = Wal::start(WalOptions::new(tmp.path()), next, disk, |_, _, _: u32| {}).unwrap();
    // Two spares are kept (the default pool), the third deleted; one is prepared as segment 5.
    let seg5 = segment_path(tmp.path(), 5);
    wait_for("segment 5 prepared", || seg5.exists());
    let spares = list_spares(&*tsfiled_fsio::std_fs(), tmp.path()).unwrap();
    assert_eq!(spares.len(), 1, "{spares:?}");
    let left = fs::metadata(&spares[0].1).unwrap().len();
    let prepared = fs::metadata(&seg5).unwrap().len();
    assert_eq!(left + prepared, 300 + 200);
    assert_eq!(
        wal.stats().spare_bytes.load(Ordering::Relaxed),
        left + prepared
    );
    drop(wal);
    // Segment 4 (empty) was created; the unused prepared 5 (no magic: the log writes it when
    // it uses the file) is removed by replay.
    let (next, report, _, recs) = replay_all(tmp.path());
    assert!(recs.is_empty());
    assert_eq!(next, 6);
    assert_eq!(
        report.truncated,
        vec![(5, 0, "bad segment magic".to_string())]
    );
}

/// The log read back while its thread writes it ([`LogReader`]): the records up to a
/// position, on into the next segment there is (ids may skip one a failure retired), the
/// records written after the reader read a segment, and an error for a record up to the
/// position that does not check out.
#[test]
fn a_log_reader_follows_the_log_up_to_a_position() {
    let tmp = tempfile::tempdir().unwrap();
    let path = |id: u64| tmp.path().join(format!("wal-{id:020}.log"));
    // Segment 2: "123456789" at 8, "abc" at 8 + 8 + 9 = 25 (0x19); segment 4: "a" at 8.
    let two = segment(&[record(b"123456789", CRC_123456789), record(b"abc", CRC_ABC)]);
    fs::write(path(2), two).unwrap();
    fs::write(path(4), segment(&[record(b"a", CRC_A)])).unwrap();
    let mut r = LogReader::new(
        tsfiled_fsio::std_fs(),
        tmp.path().to_path_buf(),
        0x0200_0000_0008,
    );
    let upto = 0x0200_0000_0019;
    assert_eq!(
        r.next(upto).unwrap(),
        Some((0x0200_0000_0008, &b"123456789"[..]))
    );
    assert_eq!(r.next(upto).unwrap(), Some((0x0200_0000_0019, &b"abc"[..])));
    // Past the position nothing is read; the reader waits after "abc" (0x19 + 8 + 3).
    assert_eq!(r.next(upto).unwrap(), None);
    assert_eq!(r.position(), 0x0200_0000_0024);
    // Segment 2 ends there: segment 4 follows.
    assert_eq!(
        r.next(0x0400_0000_0008).unwrap(),
        Some((0x0400_0000_0008, &b"a"[..]))
    );
    // "abc" appended to segment 4 after the reader read it, at 8 + 8 + 1 = 0x11.
    let four = segment(&[record(b"a", CRC_A), record(b"abc", CRC_ABC)]);
    fs::write(path(4), &four).unwrap();
    assert_eq!(
        r.next(0x0400_0000_0011).unwrap(),
        Some((0x0400_0000_0011, &b"abc"[..]))
    );
    // A record announced at 0x11 + 8 + 3 = 0x1c but torn: up to its position, an error.
    let mut torn = four.clone();
    torn.extend_from_slice(&record(b"abc", CRC_ABC)[..9]);
    fs::write(path(4), &torn).unwrap();
    let e = r.next(0x0400_0000_001c).unwrap_err();
    assert!(e.to_string().contains("segment 4, offset 28"), "{e}");
    // A corrupt one (its checksum is that of "a"): the same.
    let mut corrupt = four;
    corrupt.extend_from_slice(&record(b"abc", CRC_A));
    fs::write(path(4), &corrupt).unwrap();
    let got = r.next(0x0400_0000_001c);
    assert!(got.is_err(), "{got:?}");
}

/// A reused segment file holds old bytes past the records written so far; a reader that read
/// them reads the record the log wrote over them since.
#[test]
fn a_log_reader_reads_a_record_written_over_old_bytes_it_had_read() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(format!("wal-{:020}.log", 5));
    // "a" at 8, then an old record at 0x11 whose checksum no longer holds ("123" with the
    // checksum of "abc").
    let mut old = segment(&[record(b"a", CRC_A)]);
    old.extend_from_slice(&record(b"123", CRC_ABC));
    fs::write(&path, &old).unwrap();
    let mut r = LogReader::new(
        tsfiled_fsio::std_fs(),
        tmp.path().to_path_buf(),
        0x0500_0000_0008,
    );
    assert_eq!(
        r.next(0x0500_0000_0008).unwrap(),
        Some((0x0500_0000_0008, &b"a"[..]))
    );
    // The log writes "abc" over the old record (the same length).
    fs::write(
        &path,
        segment(&[record(b"a", CRC_A), record(b"abc", CRC_ABC)]),
    )
    .unwrap();
    assert_eq!(
        r.next(0x0500_0000_0011).unwrap(),
        Some((0x0500_0000_0011, &b"abc"[..]))
    );
}
