//! The filters a persistent MQTT session is subscribed to, recorded in a small JSON file.
//!
//! A broker keeps a persistent session's subscriptions across connections. When the
//! configuration drops or changes a filter, the old one would stay subscribed and its
//! messages would keep arriving (and be dead-lettered as matching no filter). The source
//! therefore records what it subscribed, and on the next connection with a session present
//! it unsubscribes the recorded filters that are no longer configured. A record made for
//! another broker URL or client id is about another session and is ignored.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tsfiled_fsio::FsRef;

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Record {
    url: String,
    client_id: String,
    filters: Vec<String>,
}

/// Where a source records its session's subscriptions.
#[derive(Debug, Clone)]
pub(crate) struct SubscriptionRecord {
    fs: FsRef,
    path: PathBuf,
    url: String,
    client_id: String,
}

impl SubscriptionRecord {
    pub(crate) fn new(fs: FsRef, path: &Path, url: &str, client_id: &str) -> SubscriptionRecord {
        SubscriptionRecord {
            fs,
            path: path.to_path_buf(),
            url: url.to_string(),
            client_id: client_id.to_string(),
        }
    }

    /// Recorded filters of this session that `current` no longer has. A missing, unreadable
    /// or foreign record yields none (an unreadable one is logged).
    pub(crate) fn stale(&self, current: &[String]) -> Vec<String> {
        let text = match self.fs.read(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                tracing::warn!(file = %self.path.display(), error = %e, "mqtt: cannot read the subscription record");
                return Vec::new();
            }
        };
        match serde_json::from_slice::<Record>(&text) {
            Ok(r) if r.url == self.url && r.client_id == self.client_id => r
                .filters
                .into_iter()
                .filter(|f| !current.contains(f))
                .collect(),
            Ok(_) => Vec::new(),
            Err(e) => {
                tracing::warn!(file = %self.path.display(), error = %e, "mqtt: ignoring a malformed subscription record");
                Vec::new()
            }
        }
    }

    /// Records `filters` as the session's subscriptions, atomically and durably (temporary
    /// file, fsync, rename, fsync of the directory).
    pub(crate) fn save(&self, filters: &[String]) -> io::Result<()> {
        let r = Record {
            url: self.url.clone(),
            client_id: self.client_id.clone(),
            filters: filters.to_vec(),
        };
        if let Some(dir) = self.path.parent() {
            tsfiled_fsio::create_dir_all_synced(&*self.fs, dir)?;
        }
        let bytes = serde_json::to_vec(&r).map_err(io::Error::other)?;
        tsfiled_fsio::write_atomic(&*self.fs, &self.path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn stale_filters_are_the_recorded_ones_no_longer_configured() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/broker.json");
        let rec = SubscriptionRecord::new(tsfiled_fsio::std_fs(), &path, "mqtt://h", "c1");
        assert!(rec.stale(&v(&["a/#"])).is_empty(), "no record yet");
        rec.save(&v(&["a/#", "b/+"])).unwrap();
        assert_eq!(rec.stale(&v(&["a/#", "c/#"])), v(&["b/+"]));
        assert!(rec.stale(&v(&["b/+", "a/#"])).is_empty());
        // Another session's record is not ours to act on.
        let other = SubscriptionRecord::new(tsfiled_fsio::std_fs(), &path, "mqtt://h", "c2");
        assert!(other.stale(&[]).is_empty());
        let other = SubscriptionRecord::new(tsfiled_fsio::std_fs(), &path, "mqtt://other", "c1");
        assert!(other.stale(&[]).is_empty());
        // Garbage is ignored, and overwritten by the next save.
        std::fs::write(&path, b"{not json").unwrap();
        assert!(rec.stale(&[]).is_empty());
        rec.save(&v(&["x"])).unwrap();
        assert_eq!(rec.stale(&[]), v(&["x"]));
    }

    /// Every call of a save failing once, and a power loss before every call: the record
    /// read back is the old or the new one; a save that returned `Ok` survives a power loss.
    #[test]
    fn a_save_survives_any_single_failure_and_any_power_loss() {
        use tsfiled_fsio::sim::{Fault, SimFs, Tear};
        let path = Path::new("/state/mqtt/s.json");
        let setup = || {
            let fs = SimFs::new();
            let rec = SubscriptionRecord::new(tsfiled_fsio::FsRef::new(fs.clone()), path, "u", "c");
            rec.save(&v(&["old/#"])).unwrap();
            (fs, rec)
        };
        let read = |fs: SimFs| {
            SubscriptionRecord::new(tsfiled_fsio::FsRef::new(fs), path, "u", "c").stale(&[])
        };
        let (old, new) = (v(&["old/#"]), v(&["new/#"]));
        let (fs, rec) = setup();
        fs.record(true);
        let base = fs.calls();
        rec.save(&new).unwrap();
        // Before the fix the record was never fsynced: a power loss could lose it.
        assert_eq!(read(fs.crash_image(Tear::Drop)), new);
        let calls = fs.log();
        for c in &calls {
            for &fault in Fault::for_op(c.op) {
                let (fs, rec) = setup();
                fs.fail_at(c.index - base + fs.calls(), fault);
                assert!(rec.save(&new).is_err(), "{fault:?} on {c:?}");
                for tear in [Tear::Drop, Tear::Keep, Tear::Torn(c.index)] {
                    let got = read(fs.crash_image(tear));
                    assert!(
                        got == old || got == new,
                        "{fault:?} on {c:?}, {tear:?}: {got:?}"
                    );
                }
                rec.save(&new).unwrap();
                assert_eq!(read(fs.crash_image(Tear::Drop)), new);
            }
            let (fs, rec) = setup();
            fs.crash_at(c.index - base + fs.calls());
            assert!(rec.save(&new).is_err());
            for tear in [Tear::Drop, Tear::Keep, Tear::Torn(c.index)] {
                let got = read(fs.crash_image(tear));
                assert!(
                    got == old || got == new,
                    "power loss before {c:?}, {tear:?}: {got:?}"
                );
            }
        }
    }
}
