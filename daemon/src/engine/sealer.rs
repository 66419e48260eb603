//! Sealing: a partition's files handed to the sealer thread, which closes them and commits
//! the seal in the journal ([`super::journal`]) off the intake path, and the engine's side of
//! it (ordering, bounds, outcomes).

use std::io;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::files::Space;
use super::flush::{Fail, OpenFile};
use super::memtable::g_proc;
use super::status::{FileStatus, RECENT_SEALED};
use super::{now_millis, Engine, SealReason};
use crate::health::{FaultKind, StorageOp};
use crate::wal::Lsn;

impl Engine {
    /// Flushes a partition's memtables and hands its files to the sealer (closing,
    /// fsync, `.resource`, journal commit and renames happen there, off the intake path).
    pub(super) fn seal_group(&mut self, key: &(Arc<str>, i64), reason: SealReason) {
        let started = Instant::now();
        let mut waited = Duration::ZERO;
        // A partition's seals commit in log order, one at a time: wait for its previous
        // seal (if that failed, the partition is failed and is not sealed now).
        while self.sealer.is_some() && self.pending.values().any(|p| p.key == *key) {
            let t = Instant::now();
            let done = self.sealer.as_ref().and_then(|s| s.done.recv().ok());
            waited += t.elapsed();
            match done {
                Some(d) => self.seal_done(d),
                None => break,
            }
        }
        self.flush(key, Space::Sequence);
        self.flush(key, Space::Unsequence);
        let covered = self.covered_for(key);
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        if g.failed.is_some() {
            return;
        }
        let files: Vec<OpenFile> = [Space::Sequence, Space::Unsequence]
            .into_iter()
            .filter_map(|space| g_proc(g, space).file.take())
            .collect();
        let pin = g.first_lsn.take().unwrap_or(covered);
        g.first_at = None;
        if files.is_empty() {
            return;
        }
        let sg = g.sg.clone();
        let partition = g.partition;
        let paths: Vec<String> = files.iter().map(|f| self.rel(&f.final_path)).collect();
        if let Ok(mut st) = self.status.lock() {
            for p in &paths {
                st.open.remove(p);
            }
        }
        let job = SealJob {
            id: self.next_job,
            sg: sg.to_string(),
            partition,
            covered,
            max_version: self.versions.get(&sg).copied().unwrap_or(0),
            files,
            reason,
            started,
        };
        self.next_job += 1;
        self.pending.insert(
            job.id,
            PendingSeal {
                key: key.clone(),
                pin,
                files: job.files.len(),
            },
        );
        // Bound the work (and open files) queued behind the sealer.
        while self.sealer.is_some() && self.pending.len() > 4 {
            let t = Instant::now();
            let done = self.sealer.as_ref().and_then(|s| s.done.recv().ok());
            waited += t.elapsed();
            match done {
                Some(d) => self.seal_done(d),
                None => break,
            }
        }
        if let Some(s) = &self.sealer {
            if let Err(mpsc::SendError(job)) = s.jobs.send(job) {
                let d = SealDone::failed(&job, (FaultKind::Io, "the sealer thread is gone".into()));
                self.seal_done(d);
            }
        } else if let Some(j) = self.journal.as_mut() {
            let d = j.complete(job);
            self.seal_done(d);
        }
        if self.sealer.is_some() {
            self.metrics
                .seal_wait_seconds
                .with_label_values(&[self.opts.pipeline.as_str()])
                .observe(waited.as_secs_f64());
        }
        self.update_open_files();
    }

    /// Takes note of a finished seal.
    pub(super) fn seal_done(&mut self, d: SealDone) {
        let Some(PendingSeal { key, pin, .. }) = self.pending.remove(&d.id) else {
            return;
        };
        let pl = [self.opts.pipeline.as_str(), d.reason.label()];
        match d.error {
            None => {
                if let Some(g) = self.groups.get_mut(&key) {
                    g.backoff = Duration::ZERO;
                }
                self.metrics
                    .files_sealed
                    .with_label_values(&pl)
                    .inc_by(d.files as u64);
                self.metrics
                    .seal_seconds
                    .with_label_values(&pl[..1])
                    .observe(d.started.elapsed().as_secs_f64());
                if let Ok(mut st) = self.status.lock() {
                    for (path, bytes, points) in &d.sealed {
                        st.sealed.push_front(FileStatus {
                            path: path.clone(),
                            storage_group: d.sg.clone(),
                            bytes: *bytes,
                            points: *points,
                            time_ms: now_millis(),
                            reason: Some(d.reason.label()),
                        });
                    }
                    st.sealed.truncate(RECENT_SEALED);
                }
            }
            Some((kind, e)) => {
                // No later seal of this partition may be committed before these points are
                // sealed: its journal entry would claim (as `covered`) that they are, and
                // replay would skip them.
                self.fail_group(&key, StorageOp::Seal, kind, e, Some(pin), Some(d.reason));
            }
        }
        self.update_open_files();
        self.publish_watermark();
    }

    /// Takes note of every seal the sealer finished so far.
    pub(super) fn poll_sealer(&mut self) {
        loop {
            let d = self.sealer.as_ref().and_then(|s| s.done.try_recv().ok());
            match d {
                Some(d) => self.seal_done(d),
                None => return,
            }
        }
    }

    /// Waits until every handed-off seal is done.
    pub(super) fn drain_sealer(&mut self) {
        while !self.pending.is_empty() {
            let d = self.sealer.as_ref().and_then(|s| s.done.recv().ok());
            match d {
                Some(d) => self.seal_done(d),
                None => {
                    // The sealer is gone: nothing more will complete.
                    let lost: Vec<PendingSeal> = self.pending.drain().map(|(_, p)| p).collect();
                    for p in lost {
                        let e = "the sealer thread is gone".to_string();
                        self.fail_group(
                            &p.key,
                            StorageOp::Seal,
                            FaultKind::Io,
                            e,
                            Some(p.pin),
                            None,
                        );
                    }
                }
            }
        }
    }

    /// Starts the sealer thread (sealing then runs beside intake).
    pub(super) fn start_sealer(&mut self) -> io::Result<()> {
        let Some(mut journal) = self.journal.take() else {
            return Ok(());
        };
        let (jobs, jobs_rx) = mpsc::channel::<SealJob>();
        let (done_tx, done) = mpsc::channel::<SealDone>();
        let thread = std::thread::Builder::new()
            .name(format!("tsfiled-seal-{}", self.opts.pipeline))
            .spawn(move || {
                for job in jobs_rx {
                    if done_tx.send(journal.complete(job)).is_err() {
                        break;
                    }
                }
                journal.rename_committed();
            })?;
        self.sealer = Some(Sealer { jobs, done, thread });
        Ok(())
    }

    pub(super) fn stop_sealer(&mut self) {
        self.drain_sealer();
        if let Some(Sealer { jobs, done, thread }) = self.sealer.take() {
            drop(jobs);
            drop(done);
            let _ = thread.join();
        }
    }
    /// Logs the partitions left unsealed at shutdown because storage is failing.
    pub(super) fn report_unsealed(&self) {
        let failed = self.groups.values().filter(|g| g.failed.is_some()).count();
        if failed > 0 {
            tracing::warn!(
                partitions = failed,
                "stopping with partitions that could not be sealed (storage failing); their points stay in the write-ahead log and are written at the next start"
            );
        }
    }

    /// Seals every partition with data.
    pub fn seal_all(&mut self, reason: SealReason) {
        let keys: Vec<_> = self
            .groups
            .iter()
            .filter(|(_, g)| g.has_data() || g.seq.file.is_some() || g.unseq.file.is_some())
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            self.seal_group(&k, reason);
        }
        self.publish_watermark();
    }
}

/// A seal handed to the sealer and not done yet.
pub(super) struct PendingSeal {
    /// Its partition.
    pub(super) key: (Arc<str>, i64),
    /// The lowest LSN it holds (the WAL keeps everything from there).
    pub(super) pin: Lsn,
    /// Files in it.
    pub(super) files: usize,
}

/// The sealer thread's handle.
pub(super) struct Sealer {
    pub(super) jobs: mpsc::Sender<SealJob>,
    pub(super) done: mpsc::Receiver<SealDone>,
    pub(super) thread: std::thread::JoinHandle<()>,
}

/// A partition's files to seal.
pub(super) struct SealJob {
    pub(super) id: u64,
    pub(super) sg: String,
    pub(super) partition: i64,
    pub(super) covered: Lsn,
    pub(super) max_version: i64,
    pub(super) files: Vec<OpenFile>,
    pub(super) reason: SealReason,
    pub(super) started: Instant,
}

/// The outcome of a [`SealJob`].
pub(super) struct SealDone {
    pub(super) id: u64,
    pub(super) sg: String,
    pub(super) reason: SealReason,
    pub(super) started: Instant,
    pub(super) files: usize,
    /// (path relative to the data directory, bytes, points) of each sealed file.
    pub(super) sealed: Vec<(String, u64, u64)>,
    pub(super) error: Option<Fail>,
}

impl SealDone {
    pub(super) fn failed(job: &SealJob, error: Fail) -> SealDone {
        SealDone {
            id: job.id,
            sg: job.sg.clone(),
            reason: job.reason,
            started: job.started,
            files: 0,
            sealed: Vec::new(),
            error: Some(error),
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
    use super::super::files::SealJournal;
    use super::super::schema::SeriesType;
    use super::super::testing::{engine, engine_at, logs, FaultFs, FaultOp};
    use super::super::SealReason;

    /// Points of `root.sg.d1.s` (INT64) at `times`, value `10 t`.
    fn batch(times: &[i64]) -> WriteBatch {
        batch_of("root.sg.d1", times)
    }

    /// Points of `<device>.s` (INT64) at `times`, value `10 t`.
    fn batch_of(device: &str, times: &[i64]) -> WriteBatch {
        WriteBatch {
            series: vec![SeriesData {
                device: device.into(),
                measurement: "s".into(),
                ty: SeriesType::default_for(DataType::INT64),
                times: times.to_vec(),
                values: Column::Int64(times.iter().map(|t| t * 10).collect()),
            }],
        }
    }

    /// A partition's seals commit one at a time, in log order: a seal handed to the sealer
    /// thread while the partition's previous seal is still queued waits for it, and when that
    /// one failed the partition is failed and nothing of it is committed. (A later seal
    /// committed first would claim in the journal, as `covered`, that the failed seal's points
    /// are sealed, and replay would skip them.)
    #[test]
    fn a_seal_waits_for_the_partitions_failed_previous_seal_and_commits_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let faults = FaultFs::default();
        let mut e = engine(tmp.path(), &faults);
        e.start_sealer().unwrap();
        // The partition's first file cannot be fsynced: its seal fails.
        faults.fail(FaultOp::Sync, "1000-1-0.tsfile.tmp");
        let key: (Arc<str>, i64) = (Arc::from("root.sg"), 0);
        e.apply(0, batch(&[1, 2]), Instant::now(), false);
        e.seal_group(&key, SealReason::Request);
        e.apply(1, batch(&[3]), Instant::now(), false);
        e.seal_group(&key, SealReason::Request);
        e.stop_sealer();
        let (_, entries) =
            SealJournal::open(faults.fs(), &tmp.path().join("state/seals.log")).unwrap();
        assert_eq!(entries, vec![]);
        let g = &e.groups[&key];
        assert!(g.failed.is_some());
        // Its points are read back from the WAL from the first one on.
        assert_eq!(g.first_lsn, Some(0));
        // Stopping now leaves it unsealed, and says so.
        let log = logs(|| e.report_unsealed());
        assert!(
            log.contains("stopping with partitions that could not be sealed")
                && log.contains("partitions=1"),
            "{log}"
        );
        let healthy = engine(tempfile::tempdir().unwrap().path(), &FaultFs::default());
        assert_eq!(logs(|| healthy.report_unsealed()), "");
    }

    /// Seals run on the sealer thread, off the intake path: handing a partition's files to
    /// it does not wait for their fsync, and up to four seals wait behind it; handing a fifth
    /// waits for the first to be done.
    #[test]
    fn seals_run_beside_intake_and_at_most_four_wait_behind_the_sealer() {
        let tmp = tempfile::tempdir().unwrap();
        let faults = FaultFs::default();
        let mut e = engine(tmp.path(), &faults);
        e.start_sealer().unwrap();
        // The first file (root.a's) is not fsynced until released.
        faults.hold("1000-1-0.tsfile.tmp");
        let sgs = ["root.a", "root.b", "root.c", "root.d", "root.e"];
        for (lsn, sg) in sgs.iter().enumerate() {
            e.apply(
                lsn as u64,
                batch_of(&format!("{sg}.d1"), &[1]),
                Instant::now(),
                false,
            );
        }
        let journal = tmp.path().join("state/seals.log");
        let committed = || {
            std::fs::read_to_string(&journal)
                .map(|s| s.lines().count())
                .unwrap_or(0)
        };
        for sg in &sgs[..4] {
            e.seal_group(&(Arc::from(*sg), 0), SealReason::Request);
            assert_eq!(committed(), 0, "{sg}: the engine waited for the held seal");
        }
        faults.release();
        e.seal_group(&(Arc::from("root.e"), 0), SealReason::Request);
        assert!(committed() >= 1);
        e.stop_sealer();
        assert_eq!(committed(), 5);
        // Each seal handed to the sealer thread counts once in the engine's wait histogram.
        let waits = e.metrics.seal_wait_seconds.with_label_values(&["t"]);
        assert_eq!(waits.get_sample_count(), 5);
    }

    /// File names (`<millis>-<version>-0.tsfile`) sort after every sealed file even when the
    /// clock went back, and versions go on from the largest sealed one (each new file and
    /// each flush, which ends with a version record, take the next version of the storage
    /// group).
    #[test]
    fn names_go_on_after_the_sealed_files_when_the_clock_went_back() {
        let tmp = tempfile::tempdir().unwrap();
        let faults = FaultFs::default();
        let key: (Arc<str>, i64) = (Arc::from("root.sg"), 0);
        {
            let mut e = engine_at(tmp.path(), &faults, 5000);
            e.apply(0, batch(&[1]), Instant::now(), false);
            e.seal_group(&key, SealReason::Request);
        }
        let mut e = engine_at(tmp.path(), &faults, 1000);
        e.apply(1, batch(&[2]), Instant::now(), false);
        e.seal_group(&key, SealReason::Request);
        let mut names: Vec<String> = std::fs::read_dir(tmp.path().join("sequence/root.sg/0"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tsfile"))
            .collect();
        names.sort();
        assert_eq!(names, ["5000-1-0.tsfile", "5001-3-0.tsfile"]);
        // Sealed inline (no sealer thread): nothing was waited for, nothing is counted.
        let waits = e.metrics.seal_wait_seconds.with_label_values(&["t"]);
        assert_eq!(waits.get_sample_count(), 0);
    }
}
