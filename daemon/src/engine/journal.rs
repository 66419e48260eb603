//! The sealer's work on a seal: files closed and fsynced, their `.resource` written, the
//! seal committed in the seal journal, the files renamed into place; and the journal's
//! compaction.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tsfiled_fsio::{Fs, FsRef};

use super::files::{self, SealEntry, SealJournal};
use super::flush::{io_fail, Fail, OpenFile};
use super::sealer::{SealDone, SealJob};
use crate::health::FaultKind;

/// The seal journal and what its compaction keeps.
pub(super) struct JournalState {
    pub(super) journal: SealJournal,
    pub(super) entries: usize,
    pub(super) last_by_group: HashMap<(String, i64), SealEntry>,
    pub(super) data_dir: PathBuf,
    pub(super) fs: FsRef,
    /// Committed files whose renames into place failed (retried with every seal, at the
    /// sealer's end, and by recovery at the next start).
    pub(super) unrenamed: Vec<String>,
    /// Slept at the start of every seal (a test hook: [`crate::hooks::TestHooks::seal_delay`]).
    pub(super) seal_delay: Option<Duration>,
}

impl JournalState {
    /// What a rewritten journal must hold: for files whose renames are still pending and
    /// that no group's last entry lists, an entry naming them (first, with nothing
    /// covered, so recovery still rolls them forward), then each group's last entry.
    pub(super) fn keep(&self) -> Vec<SealEntry> {
        let listed: HashSet<&String> = self
            .last_by_group
            .values()
            .flat_map(|e| e.files.iter())
            .collect();
        let mut keep: Vec<SealEntry> = self
            .unrenamed
            .iter()
            .filter(|f| !listed.contains(f))
            .filter_map(|f| {
                let mut parts = f.split('/');
                let (_space, sg, partition) = (parts.next()?, parts.next()?, parts.next()?);
                Some(SealEntry {
                    sg: sg.to_string(),
                    partition: partition.parse().ok()?,
                    covered: 0,
                    max_version: 0,
                    files: vec![f.clone()],
                })
            })
            .collect();
        keep.extend(self.last_by_group.values().cloned());
        keep
    }

    /// Renames committed files into place; keeps those that fail for later.
    pub(super) fn rename_committed(&mut self) {
        let data_dir = self.data_dir.clone();
        let fs = self.fs.clone();
        self.unrenamed.retain(|f| match files::roll_forward(&*fs, &data_dir, f) {
            Ok(_) => false,
            Err(e) => {
                tracing::error!(file = %f, error = %e, "renaming a sealed file into place failed (retried at the next seal and at start)");
                true
            }
        });
    }

    /// Closes and fsyncs the files, writes their `.resource`, commits the seal in the
    /// journal and renames the files into place (the TsFile last).
    pub(super) fn complete(&mut self, job: SealJob) -> SealDone {
        if let Some(d) = self.seal_delay {
            std::thread::sleep(d);
        }
        let mut done = SealDone::failed(&job, (FaultKind::Io, String::new()));
        let mut prepared: Vec<(PathBuf, PathBuf, u64)> = Vec::new();
        let mut error = None;
        let fs_ref = self.fs.clone();
        let fs = &*fs_ref;
        for f in job.files {
            match finish_file(fs, f) {
                Ok(p) => prepared.push(p),
                Err((e, tmp)) => {
                    let _ = fs.remove_file(&tmp);
                    error = Some(e);
                }
            }
        }
        if error.is_none() {
            // The temporaries' names must be durable before the commit point, or a power
            // loss leaves a committed seal whose files are gone.
            error = sync_parents(fs, prepared.iter().map(|p| p.0.as_path())).err();
        }
        if let Some(e) = error {
            for (fin, tmp, _) in &prepared {
                let _ = fs.remove_file(tmp);
                let _ = fs.remove_file(&files::with_suffix(fin, ".resource.tmp"));
            }
            done.error = Some(e);
            return done;
        }
        let entry = SealEntry {
            sg: job.sg.clone(),
            partition: job.partition,
            covered: job.covered,
            max_version: job.max_version,
            files: prepared
                .iter()
                .map(|(fin, _, _)| {
                    fin.strip_prefix(&self.data_dir)
                        .unwrap_or(fin)
                        .to_string_lossy()
                        .to_string()
                })
                .collect(),
        };
        let known = self.keep();
        if let Err(e) = self.journal.commit(&entry, &known) {
            for (fin, tmp, _) in &prepared {
                let _ = fs.remove_file(tmp);
                let _ = fs.remove_file(&files::with_suffix(fin, ".resource.tmp"));
            }
            done.error = Some((FaultKind::of(&e), format!("seal journal write failed: {e}")));
            return done;
        }
        self.unrenamed.extend(entry.files.iter().cloned());
        self.rename_committed();
        for (fin, _, points) in &prepared {
            tracing::debug!(file = %fin.display(), points, reason = job.reason.label(), "sealed");
        }
        done.files = prepared.len();
        done.sealed = prepared
            .iter()
            .zip(&entry.files)
            .map(|((fin, _, points), rel)| {
                let bytes = fs.file_len(fin).unwrap_or(0);
                (rel.clone(), bytes, *points)
            })
            .collect();
        done.error = None;
        self.last_by_group
            .insert((entry.sg.clone(), entry.partition), entry);
        self.entries += 1;
        if self.entries > 1000 + 2 * self.last_by_group.len() {
            let keep = self.keep();
            if self.journal.compact(&keep).is_ok() {
                self.entries = keep.len();
            }
        }
        done
    }
}

/// Fsyncs each distinct parent directory of `paths`.
pub(super) fn sync_parents<'a>(
    fs: &dyn Fs,
    paths: impl Iterator<Item = &'a Path>,
) -> Result<(), Fail> {
    let mut dirs: Vec<&Path> = paths.filter_map(Path::parent).collect();
    dirs.sort();
    dirs.dedup();
    for d in dirs {
        fs.sync_dir(d)
            .map_err(|e| io_fail("syncing directory", d, e))?;
    }
    Ok(())
}

/// Closes a file, fsyncs it and writes its `.resource` temporary. Returns
/// (final path, tmp path, points), or the error and the tmp path.
pub(super) fn finish_file(
    fs: &dyn Fs,
    f: OpenFile,
) -> Result<(PathBuf, PathBuf, u64), (Fail, PathBuf)> {
    let tmp = f.tmp_path.clone();
    let (out, devices) = f.writer.close().map_err(|e| (e, tmp.clone()))?;
    let mut file = out
        .into_inner()
        .map_err(|e| (io_fail("writing", &tmp, e.into_error()), tmp.clone()))?;
    // A failed fsync leaves the file's unsynced data in doubt ("fsyncgate"): the seal
    // fails and the file is rebuilt from the WAL, never retried as it is.
    file.sync_all()
        .map_err(|e| (io_fail("syncing", &tmp, e), tmp.clone()))?;
    drop(file);
    let res_tmp = files::with_suffix(&f.final_path, ".resource.tmp");
    tsfiled_fsio::write_synced(
        fs,
        &res_tmp,
        &files::resource_for(&devices, f.version, f.format),
    )
    .map_err(|e| (io_fail("writing", &res_tmp, e), tmp.clone()))?;
    Ok((f.final_path, f.tmp_path, f.points))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    fn entry(sg: &str, partition: i64, covered: u64) -> crate::engine::files::SealEntry {
        crate::engine::files::SealEntry {
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
        use crate::engine::files::SealJournal;
        use crate::engine::journal::JournalState;
        use crate::engine::sealer::SealJob;
        use crate::engine::SealReason;
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
            seal_delay: None,
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

    /// A seal makes its temporaries' names durable (their directory fsynced) before its journal
    /// commit: a power loss after the commit and before the renames leaves files that recovery
    /// can roll forward.
    #[test]
    fn a_seals_temporaries_are_durable_before_its_commit() {
        use crate::engine::files::{SealJournal, Space};
        use crate::engine::flush::open_file;
        use crate::engine::journal::JournalState;
        use crate::engine::sealer::SealJob;
        use crate::engine::SealReason;
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
                crate::engine::files::FormatVersion::V2,
            )
            .unwrap();
            let mut state = JournalState {
                journal,
                entries: 0,
                last_by_group: HashMap::new(),
                data_dir: data.into(),
                fs,
                unrenamed: vec![],
                seal_delay: None,
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
}
