//! The flush and seal rules of [`EngineOptions`] checked through a pipeline, with expected
//! counts worked out by hand from the documented limits: a file is sealed for size once the
//! metadata the writer keeps for it (160 bytes a chunk, 400 a series: [`CHUNK_META_BYTES`],
//! [`SERIES_META_BYTES`]) reaches a quarter of the memtable budget, but no less than 4 MiB,
//! or once it reaches `file_max_bytes`; every flush writes one chunk per series.

use std::sync::Arc;
use std::time::Instant;

use tsfiled_connectors::{Batch, Field, FieldValue, Record};

use super::{CHUNK_META_BYTES, SERIES_META_BYTES};
use crate::metrics::Metrics;
use crate::pipeline::{Pipeline, PipelineOptions};

/// One record of `root.sg.d1` at `time` with `series` measurements `m0..`.
fn wide(time: i64, series: usize) -> Batch {
    Batch {
        records: vec![Record {
            device: "root.sg.d1".into(),
            time,
            fields: (0..series)
                .map(|k| Field::new(format!("m{k}"), FieldValue::Int(time)))
                .collect(),
        }],
        rejections: vec![],
    }
}

fn sealed(metrics: &Metrics, reason: &str) -> u64 {
    let text = metrics.render();
    let key = format!("tsfiled_files_sealed_total{{pipeline=\"t\",reason=\"{reason}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .map_or(0, |v| v.parse().unwrap())
}

/// Submits `batches` wide batches of 5000 series, then shuts down; the metrics.
fn run(memtable_bytes: usize, chunk_group_bytes: usize, batches: i64) -> Arc<Metrics> {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = PipelineOptions::new("t", tmp.path());
    opts.engine.memtable_bytes = memtable_bytes;
    opts.engine.chunk_group_bytes = chunk_group_bytes;
    let metrics = Metrics::new();
    let p = Pipeline::open(opts, metrics.clone()).unwrap();
    for t in 1..=batches {
        let out = p
            .submit_blocking("test", wide(t, 5000), Instant::now())
            .unwrap();
        assert_eq!(out.accepted, 5000);
    }
    p.shutdown_blocking();
    metrics
}

#[test]
fn the_documented_metadata_sizes() {
    assert_eq!((CHUNK_META_BYTES, SERIES_META_BYTES), (160, 400));
}

/// A 1-byte memtable budget flushes every batch; a quarter of it is below the 4 MiB floor.
/// With 5000 series a file's metadata after `k` flushes is 800000 k + 2000000 bytes: it
/// reaches 4194304 at the third flush. Four batches: one file sealed for size, one at shutdown.
#[test]
fn metadata_past_4_mib_seals_a_file_when_the_budget_is_small() {
    let metrics = run(1, 16 * 1024 * 1024, 4);
    assert_eq!(sealed(&metrics, "size"), 1);
    assert_eq!(sealed(&metrics, "shutdown"), 1);
}

/// A 32 MiB budget: the cap is a quarter, 8388608 bytes, reached at the eighth flush
/// (8400000 bytes; a 1-byte chunk group flushes every batch). Ten batches: one file sealed
/// for size, one at shutdown.
#[test]
fn metadata_past_a_quarter_of_the_budget_seals_a_file() {
    let metrics = run(32 * 1024 * 1024, 1, 10);
    assert_eq!(sealed(&metrics, "size"), 1);
    assert_eq!(sealed(&metrics, "shutdown"), 1);
}

/// A few small flushes stay in one file, sealed at shutdown; every point is counted once,
/// in the metrics and in the sealed file's status.
#[test]
fn small_flushes_share_one_file_and_count_their_points() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = PipelineOptions::new("t", tmp.path());
    opts.engine.memtable_bytes = 1;
    let metrics = Metrics::new();
    let p = Pipeline::open(opts, metrics.clone()).unwrap();
    for t in [1, 2, 3] {
        p.submit_blocking("test", wide(t, 2), Instant::now())
            .unwrap();
    }
    p.shutdown_blocking();
    assert_eq!(sealed(&metrics, "size"), 0);
    assert_eq!(sealed(&metrics, "shutdown"), 1);
    assert!(
        metrics
            .render()
            .contains("tsfiled_points_written_total{pipeline=\"t\"} 6\n"),
        "{}",
        metrics.render()
    );
    let status = p.status_json(&[]);
    let files = status["recent_sealed"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{status}");
    assert_eq!(files[0]["points"], 6);
    assert_eq!(files[0]["reason"], "shutdown");
}

/// A seal journal that exists but cannot be read (EIO) fails the open: it is not taken for
/// an absent journal (which would drop every committed seal from recovery).
#[test]
fn a_seal_journal_that_cannot_be_read_is_an_error() {
    use super::files::{SealEntry, SealJournal};
    use std::path::Path;
    use tsfiled_fsio::sim::{Fault, SimFs};
    use tsfiled_fsio::FsRef;
    let sim = SimFs::new();
    let fs = FsRef::new(sim.clone());
    let p = Path::new("/state/seals.log");
    fs.create_dir_all(Path::new("/state")).unwrap();
    let e = SealEntry {
        sg: "root.sg".into(),
        partition: 0,
        covered: 7,
        max_version: 1,
        files: vec!["sequence/root.sg/0/1-1-0.tsfile".into()],
    };
    {
        let (mut j, entries) = SealJournal::open(fs.clone(), p).unwrap();
        assert!(entries.is_empty());
        j.commit(&e, &[]).unwrap();
    }
    sim.fail_at(sim.calls(), Fault::Io);
    let err = SealJournal::open(fs.clone(), p).err().unwrap();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    assert_eq!(SealJournal::open(fs, p).unwrap().1, vec![e]);
}

fn entry(sg: &str, partition: i64, covered: u64) -> super::files::SealEntry {
    super::files::SealEntry {
        sg: sg.into(),
        partition,
        covered,
        max_version: 0,
        files: vec![],
    }
}

/// The seal journal is compacted to each partition's last entry once it holds more than
/// 1000 entries plus two per partition: with three partitions, at the 1007th.
#[test]
fn the_seal_journal_is_compacted_past_1000_entries_plus_two_a_partition() {
    use super::files::SealJournal;
    use super::{JournalState, SealJob, SealReason};
    use std::collections::HashMap;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("seals.log");
    let fs = tsfiled_fsio::std_fs();
    let (mut journal, _) = SealJournal::open(fs.clone(), &path).unwrap();
    // Three partitions sealed before, their entries in the journal (1004 counted).
    let old: Vec<_> = (0..3).map(|p| entry("root.a", p, 1)).collect();
    for e in &old {
        journal.commit(e, &[]).unwrap();
    }
    let mut state = JournalState {
        journal,
        entries: 1004,
        last_by_group: old
            .iter()
            .map(|e| (("root.a".to_string(), e.partition), e.clone()))
            .collect::<HashMap<_, _>>(),
        data_dir: tmp.path().to_path_buf(),
        fs: fs.clone(),
        unrenamed: vec![],
    };
    let job = |id: u64, partition: i64| SealJob {
        id,
        sg: "root.a".into(),
        partition,
        covered: 100 + partition as u64,
        max_version: 0,
        files: vec![],
        reason: SealReason::Size,
        started: Instant::now(),
    };
    let journal_entries = || {
        let (_, mut es) = SealJournal::open(fs.clone(), &path).unwrap();
        es.sort_by_key(|e| (e.partition, e.covered));
        es
    };
    // The 1005th and 1006th entries are appended.
    assert!(state.complete(job(1, 0)).error.is_none());
    assert!(state.complete(job(2, 1)).error.is_none());
    assert_eq!(journal_entries().len(), 5);
    // The 1007th compacts the journal to the three partitions' last entries.
    assert!(state.complete(job(3, 2)).error.is_none());
    assert_eq!(
        journal_entries(),
        vec![
            entry("root.a", 0, 100),
            entry("root.a", 1, 101),
            entry("root.a", 2, 102)
        ]
    );
    assert_eq!(state.entries, 3);
}

/// Recovery's scan of the data directory: uncommitted temporaries go, the largest version and
/// creation time come from the file names (`<millis>-<version>-0.tsfile`), the newest time per
/// device from the sequence files' `.resource` only.
#[test]
fn the_data_directory_scan_reads_names_and_sequence_resources() {
    use super::files::{resource_bytes, scan_data_dir};
    use tsfile::file::writer::DeviceTimeRange;
    let tmp = tempfile::tempdir().unwrap();
    let seq = tmp.path().join("sequence/root.sg/3");
    let unseq = tmp.path().join("unsequence/root.sg/3");
    std::fs::create_dir_all(&seq).unwrap();
    std::fs::create_dir_all(&unseq).unwrap();
    let range = |end: i64| {
        vec![DeviceTimeRange {
            device: "root.sg.d1".into(),
            start_time: 1,
            end_time: end,
        }]
    };
    std::fs::write(seq.join("1000-7-0.tsfile"), b"").unwrap();
    std::fs::write(
        seq.join("1000-7-0.tsfile.resource"),
        resource_bytes(&range(100), 7),
    )
    .unwrap();
    std::fs::write(seq.join("2000-9-0.tsfile.tmp"), b"partial").unwrap();
    std::fs::write(unseq.join("1500-8-0.tsfile"), b"").unwrap();
    std::fs::write(
        unseq.join("1500-8-0.tsfile.resource"),
        resource_bytes(&range(500), 8),
    )
    .unwrap();
    let st = scan_data_dir(&*tsfiled_fsio::std_fs(), tmp.path()).unwrap();
    assert_eq!(st.removed_tmp, vec![seq.join("2000-9-0.tsfile.tmp")]);
    assert!(!seq.join("2000-9-0.tsfile.tmp").exists());
    assert_eq!(st.max_version.get("root.sg"), Some(&8));
    assert_eq!(st.max_create_millis, 1500);
    let latest = &st.latest_flushed[&("root.sg".to_string(), 3)];
    assert_eq!(latest.get("root.sg.d1"), Some(&100));
    assert_eq!(st.latest_flushed.len(), 1);
}

/// A seal makes its temporaries' names durable (their directory fsynced) before its journal
/// commit: a power loss after the commit and before the renames leaves files that recovery
/// can roll forward.
#[test]
fn a_seals_temporaries_are_durable_before_its_commit() {
    use super::files::{SealJournal, Space};
    use super::{open_file, JournalState, SealJob, SealReason};
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use tsfiled_fsio::sim::{Op, SimFs, Tear};
    use tsfiled_fsio::FsRef;
    let seal = |crash: Option<u64>| -> SimFs {
        let sim = SimFs::new();
        let fs = FsRef::new(sim.clone());
        let data = Path::new("/data");
        tsfiled_fsio::create_dir_all_synced(&*fs, Path::new("/data/state")).unwrap();
        let (journal, _) =
            SealJournal::open(fs.clone(), Path::new("/data/state/seals.log")).unwrap();
        let file = open_file(
            &*fs,
            data,
            Space::Sequence,
            "root.sg",
            0,
            1000,
            1,
            Default::default(),
            super::files::FormatVersion::V2,
        )
        .unwrap();
        let mut state = JournalState {
            journal,
            entries: 0,
            last_by_group: HashMap::new(),
            data_dir: data.into(),
            fs,
            unrenamed: vec![],
        };
        sim.record(true);
        if let Some(k) = crash {
            sim.crash_at(k);
        }
        let _ = state.complete(SealJob {
            id: 1,
            sg: "root.sg".into(),
            partition: 0,
            covered: 5,
            max_version: 1,
            files: vec![file],
            reason: SealReason::Size,
            started: Instant::now(),
        });
        sim
    };
    let first_rename = seal(None)
        .log()
        .into_iter()
        .find(|c| c.op == Op::Rename)
        .unwrap()
        .index;
    let image = seal(Some(first_rename)).crash_image(Tear::Drop);
    let names: Vec<PathBuf> = image.files().into_iter().map(|f| f.0).collect();
    let dir = Path::new("/data/sequence/root.sg/0");
    assert!(
        names.contains(&dir.join("1000-1-0.tsfile.tmp")),
        "{names:?}"
    );
    assert!(
        names.contains(&dir.join("1000-1-0.tsfile.resource.tmp")),
        "{names:?}"
    );
    assert!(
        names.contains(&PathBuf::from("/data/state/seals.log")),
        "{names:?}"
    );
}
