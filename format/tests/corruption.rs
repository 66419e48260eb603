//! Malformed input never panics and never makes the reader allocate by an unchecked
//! length: every prefix of several golden files, and thousands of seeded random
//! corruptions, go through opening, reading every series, the sequential walk and
//! the recovery scan.

mod golden_common;

use golden_common::fixture;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use tsfile::file::reader::{recover, PageData, SequentialWalk, TsFileReader, WalkEvent};

/// Records the largest single allocation of the current thread, so each test can bound
/// it by its input size (tests run in parallel threads; a process-wide maximum would
/// mix them up).
struct Tracking;

thread_local! {
    static LARGEST_HERE: Cell<usize> = const { Cell::new(0) };
}

/// The current thread's largest allocation since the last reset.
struct Largest;

impl Largest {
    fn record(size: usize) {
        let _ = LARGEST_HERE.try_with(|c| {
            if size > c.get() {
                c.set(size);
            }
        });
    }

    fn store(&self, v: usize, _: Ordering) {
        LARGEST_HERE.with(|c| c.set(v));
    }

    fn load(&self, _: Ordering) -> usize {
        LARGEST_HERE.with(Cell::get)
    }
}

static LARGEST: Largest = Largest;

unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        Largest::record(l.size());
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        Largest::record(l.size());
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        Largest::record(new);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

/// Largest allocation a read of `len` input bytes may make: decoded columns can be a
/// few dozen times larger than their encoded bytes (TS_2DIFF blocks of zero-width
/// deltas), never gigabytes.
fn allocation_bound(len: usize) -> usize {
    256 * len + (1 << 20)
}

/// Opens `bytes` and reads everything there is: metadata, index, every series, the
/// sequential walk with every page decoded, the recovery scan. Returns the recovery
/// scan's truncation offset, if the head was acceptable.
fn read_everything(bytes: &[u8], decode_walk: bool) -> Option<u64> {
    let mut page = PageData::new(tsfile::DataType::INT32);
    if let Ok(reader) = TsFileReader::open(bytes) {
        let _ = reader.timeseries_metadata("root.nope", "s1");
        if let Ok(tree) = reader.index_tree() {
            for d in &tree.devices {
                let _ = reader.device_series(&d.device);
                for (_, ts) in &d.series {
                    let _ = reader.timeseries_metadata(&d.device, &ts.measurement);
                    if let Ok(mut sr) = reader.series_reader_for(&d.device, ts) {
                        while let Ok(true) = sr.next_page(&mut page) {}
                    }
                    if let Ok(q) = reader.series_reader_for(&d.device, ts) {
                        let mid = ts.statistics.start_time / 2 + ts.statistics.end_time / 2;
                        q.with_time_range(mid, i64::MAX).points().for_each(drop);
                    }
                }
            }
        }
        let mut w = reader.walk();
        while let Some(Ok(ev)) = w.next() {
            if let WalkEvent::Page(p) = ev {
                let _ = w.decode_page(&p, &mut page);
            }
        }
        let mut out = Vec::new();
        let _ = tsfile::tools::dump::dump(&reader, &mut out);
    }
    let mut w = SequentialWalk::new(bytes);
    while let Some(Ok(ev)) = w.next() {
        if let (true, WalkEvent::Page(p)) = (decode_walk, ev) {
            let _ = w.decode_page(&p, &mut page);
        }
    }
    recover(bytes).ok().map(|r| {
        assert!(r.truncate_at <= bytes.len() as u64);
        r.truncate_at
    })
}

/// Offsets where a recovery may cut the complete file: 12, after each chunk group
/// footer and version record, and the separator.
fn boundaries(bytes: &[u8]) -> BTreeSet<u64> {
    let reader = TsFileReader::open(bytes).unwrap();
    let mut b = BTreeSet::from([12u64]);
    for ev in reader.walk() {
        match ev.unwrap() {
            WalkEvent::ChunkGroupFooter { offset, size, .. } => {
                b.insert(offset + size);
            }
            WalkEvent::Version { offset, .. } => {
                b.insert(offset + 9);
            }
            WalkEvent::Separator { offset } => {
                b.insert(offset);
            }
            _ => {}
        }
    }
    b
}

fn truncation_sweep(name: &str) {
    let bytes = fixture(name, "tsfile");
    let bounds = boundaries(&bytes);
    let full = recover(&bytes[..]).unwrap();
    assert_eq!(
        full.truncate_at,
        TsFileReader::open(&bytes[..]).unwrap().meta_offset()
    );
    LARGEST.store(0, Ordering::Relaxed);
    let meta_offset = full.truncate_at as usize;
    for len in 0..=bytes.len() {
        // Past the data section every prefix lacks only (part of) the metadata, and
        // recovers exactly like the data section alone; big files check those on a
        // stride to keep the test quick in debug builds.
        if bytes.len() > 32 * 1024 && len > meta_offset + 64 && len % 16 != 0 {
            continue;
        }
        let prefix = &bytes[..len];
        // Every prefix is opened and recovered; everything else (index, series, walk
        // with decoding) repeats the full file's work on the complete part, so it
        // runs on a stride and near the end.
        if len % 61 == 0 || len + 64 > bytes.len() {
            read_everything(prefix, true);
        } else {
            let _ = TsFileReader::open(prefix);
        }
        let rec = recover(prefix);
        if len < 12 {
            assert!(rec.is_err(), "{name}: prefix {len} has no head");
            continue;
        }
        let r = rec.unwrap_or_else(|e| panic!("{name}: prefix {len}: recovery refused: {e}"));
        let cut = r.truncate_at;
        assert!(cut <= len as u64, "{name}: prefix {len}: cut at {cut}");
        // The cut is the last boundary inside the prefix (a structure ending exactly
        // at the prefix end is complete).
        let expect = *bounds.range(..=len as u64).next_back().unwrap();
        assert_eq!(cut, expect, "{name}: prefix {len}");
        assert_eq!(
            r.separator_at.is_some(),
            len as u64 > full.truncate_at,
            "{name}: {len}"
        );
        assert!(r.chunk_groups.len() <= full.chunk_groups.len());
        assert_eq!(
            r.chunk_groups[..],
            full.chunk_groups[..r.chunk_groups.len()]
        );
        assert!(r.chunk_groups.last().is_none_or(|g| g.end <= cut));
    }
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(
        largest <= allocation_bound(bytes.len()),
        "{name}: largest allocation {largest} bytes for a {}-byte file",
        bytes.len()
    );
}

#[test]
fn truncation_sweep_sensor_typical() {
    truncation_sweep("sensor_typical");
}

#[test]
fn truncation_sweep_struct_versions() {
    truncation_sweep("struct_versions");
}

#[test]
fn truncation_sweep_index_150dev() {
    truncation_sweep("index_150dev_1meas_deg10");
}

#[test]
fn truncation_sweep_enc_text_plain_snappy() {
    truncation_sweep("enc_text_plain_snappy");
}

#[test]
fn truncation_sweep_struct_unsorted() {
    truncation_sweep("struct_unsorted");
}

/// xorshift64*: a small deterministic generator for reproducible corruptions.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn corrupt(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let flips = 1 + rng.below(4) * rng.below(3);
    for _ in 0..flips {
        let i = rng.below(b.len());
        b[i] = match rng.below(6) {
            0 => b[i] ^ (1 << rng.below(8)),
            1 => 0xff,
            2 => 0x00,
            3 => 0x7f,
            4 => 0x80,
            _ => rng.next() as u8,
        };
    }
    b
}

fn random_corruption(name: &str, rounds: usize, seed: u64) {
    let bytes = fixture(name, "tsfile");
    let mut rng = Rng(seed);
    LARGEST.store(0, Ordering::Relaxed);
    for round in 0..rounds {
        let b = corrupt(&bytes, &mut rng);
        let r = std::panic::catch_unwind(|| read_everything(&b, true));
        if let Err(e) = r {
            let diff: Vec<_> = (0..b.len())
                .filter(|i| b[*i] != bytes[*i])
                .map(|i| (i, bytes[i], b[i]))
                .collect();
            eprintln!("{name}: round {round} (seed {seed}) panicked; changed bytes {diff:?}");
            std::panic::resume_unwind(e);
        }
    }
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(
        largest <= allocation_bound(bytes.len()),
        "{name}: largest allocation {largest} bytes for a {}-byte file",
        bytes.len()
    );
}

#[test]
fn random_corruption_small_files() {
    for (i, name) in [
        "struct_versions",
        "struct_unsorted",
        "struct_single_point",
        "struct_names",
        "struct_empty",
        "enc_int64_ts_2diff_snappy",
        "enc_boolean_rle_uncompressed",
        "enc_double_gorilla_snappy",
        "enc_float_rle_uncompressed",
        "enc_int64_regular_snappy",
        "index_5dev_5meas_deg10",
    ]
    .iter()
    .enumerate()
    {
        random_corruption(name, 1500, 0x9e37_79b9_7f4a_7c15 + i as u64);
    }
}

#[test]
fn random_corruption_sensor_typical() {
    random_corruption("sensor_typical", 600, 42);
}

#[test]
fn random_corruption_deep_index() {
    random_corruption("index_150dev_1meas_deg10", 300, 1234);
}

#[test]
fn random_corruption_text() {
    random_corruption("enc_text_plain_snappy", 1500, 7);
}

#[test]
fn corrupted_bytes_are_named_in_errors() {
    let bytes = fixture("struct_versions", "tsfile");
    let mut b = bytes.clone();
    b[0] = b'X';
    let e = TsFileReader::open(&b[..]).unwrap_err().to_string();
    assert!(e.contains("byte 0") && e.contains("head magic"), "{e}");
    let mut b = bytes.clone();
    b[11] = b'1';
    let e = TsFileReader::open(&b[..]).unwrap_err().to_string();
    assert!(e.contains("byte 6") && e.contains("000002"), "{e}");
    let n = bytes.len();
    let e = TsFileReader::open(&bytes[..n - 1]).unwrap_err().to_string();
    assert!(e.contains("tail magic") && e.contains("incomplete"), "{e}");
    // The size int claims more than the file holds.
    let mut b = bytes.clone();
    b[n - 10..n - 6].copy_from_slice(&0x7fff_fff0i32.to_be_bytes());
    let e = TsFileReader::open(&b[..]).unwrap_err().to_string();
    assert!(e.contains(&format!("byte {}", n - 10)), "{e}");
    // A bad marker right after the head.
    let mut b = bytes.clone();
    b[12] = 0x09;
    let reader = TsFileReader::open(&b[..]).unwrap();
    let e = reader.walk().next().unwrap().unwrap_err().to_string();
    assert!(e.contains("byte 12") && e.contains("marker"), "{e}");
    let r = recover(&b[..]).unwrap();
    assert_eq!(r.truncate_at, 12);
    assert!(r.chunk_groups.is_empty());
    assert!(r.stopped_by.is_some());
}

#[test]
fn recovery_of_head_only_and_short_files() {
    let bytes = fixture("struct_versions", "tsfile");
    assert!(recover(&bytes[..11]).is_err());
    let r = recover(&bytes[..12]).unwrap();
    assert_eq!((r.truncate_at, r.chunk_groups.len()), (12, 0));
    // A partial first chunk: Java 0.10 would cut to 6; we keep the head.
    let r = recover(&bytes[..40]).unwrap();
    assert_eq!(r.truncate_at, 12);
    let e = r.stopped_by.unwrap().to_string();
    assert!(e.contains("malformed TsFile at byte"), "{e}");
}

/// Found by the fuzzer: page counts near `i64::MAX` overflowed the recovery scan's
/// statistics merge. Page headers claiming more points than their body can hold are
/// now rejected by the walk.
#[test]
fn huge_page_counts_are_rejected_not_merged() {
    let bytes = fixture("struct_many_pages", "tsfile");
    let reader = TsFileReader::open(&bytes[..]).unwrap();
    let pages: Vec<u64> = reader
        .walk()
        .filter_map(|e| match e.unwrap() {
            WalkEvent::Page(p) => Some(p.offset),
            _ => None,
        })
        .take(2)
        .collect();
    let mut b = bytes.clone();
    for (p, count) in pages.iter().zip([i64::MAX, 5]) {
        let at = *p as usize + 8;
        b[at..at + 8].copy_from_slice(&count.to_be_bytes());
    }
    let r = recover(&b[..]).unwrap();
    assert_eq!(r.truncate_at, 12);
    let e = r.stopped_by.unwrap().to_string();
    assert!(
        e.contains(&format!("byte {}", pages[0])) && e.contains("points"),
        "{e}"
    );
    let reader = TsFileReader::open(&b[..]).unwrap();
    assert!(reader.walk().any(|e| e.is_err()));
    read_everything(&b, true);
}
