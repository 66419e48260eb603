//! The pipeline's part of `/api/status`.

use std::sync::atomic::Ordering;

use super::Pipeline;

impl Pipeline {
    /// The pipeline's part of `/api/status` (see `assets/status.html`); `sources` are
    /// (name, type, state) of its sources.
    pub fn status_json(
        &self,
        sources: &[(String, &'static str, &'static str)],
    ) -> serde_json::Value {
        let file = |f: &crate::engine::FileStatus, time_key: &str| {
            let mut v = serde_json::json!({
                "path": f.path,
                "storage_group": f.storage_group,
                "bytes": f.bytes,
                "points": f.points,
            });
            v[time_key] = f.time_ms.into();
            if let Some(r) = f.reason {
                v["reason"] = r.into();
            }
            v
        };
        let (open, sealed): (Vec<_>, Vec<_>) = match self.status.lock() {
            Ok(st) => (
                st.open.values().map(|f| file(f, "created_ms")).collect(),
                st.sealed.iter().map(|f| file(f, "sealed_ms")).collect(),
            ),
            Err(_) => (Vec::new(), Vec::new()),
        };
        let st = self.wal.stats();
        let memtable = self
            .metrics
            .memtable_bytes
            .with_label_values(&[self.name.as_str()])
            .get();
        let faults: Vec<serde_json::Value> = self
            .health
            .faults()
            .into_iter()
            .map(|f| {
                serde_json::json!({
                    "op": f.op.label(),
                    "kind": f.kind.label(),
                    "message": f.message,
                    "since_ms": f.since_ms,
                })
            })
            .collect();
        let refusal = self.health.refusal();
        serde_json::json!({
            "name": self.name,
            "accepting": self.is_accepting() && self.wal_fill() < 1.0 && refusal.is_none(),
            "storage": {
                "degraded": !faults.is_empty(),
                "reason": self.health.summary(),
                "refusing": refusal,
                "faults": faults,
            },
            "wal": {"bytes": st.disk_bytes.load(Ordering::Relaxed), "max_bytes": self.wal_max_bytes},
            "memtable": {"bytes": memtable, "budget_bytes": self.memtable_budget},
            "sources": sources.iter().map(|(n, t, s)| serde_json::json!({"name": n, "type": t, "state": s})).collect::<Vec<_>>(),
            "open_files": open,
            "recent_sealed": sealed,
        })
    }
}
