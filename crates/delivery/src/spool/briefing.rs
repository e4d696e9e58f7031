//! Whether records waiting in the spool could change a starting session's
//! briefing: session start delivers them first (memhook-sinks'
//! `session_start`), and the per-event binary uses a briefing kept ready
//! only when none could (memhook-hook's `brief`).

use std::path::PathBuf;

use super::{SinkTarget, Spool};

/// Pending entries looked at before assuming delivery is worth it.
pub const PENDING_SCAN: usize = 64;

/// Whether `pending` may hold a record of `sink` from a session other than
/// `session` (the starting session is never briefed about itself). Past
/// [`PENDING_SCAN`] entries, assume it does.
pub fn briefing_may_change(pending: &[PathBuf], sink: &SinkTarget, session: Option<&str>) -> bool {
    if pending.len() > PENDING_SCAN {
        return true;
    }
    pending.iter().any(|p| match Spool::load(p) {
        Ok(e) => {
            &e.sink == sink && (session.is_none() || e.record.session_id.as_deref() != session)
        }
        Err(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spool::Spool;
    use memhook_core::record::sample::in_acme_api as rec;

    #[test]
    fn delivery_at_start_only_when_other_sessions_wait() {
        use crate::spool::{SpoolEntry, ENTRY_VERSION};
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let put = |key: &str, session: &str, sink: SinkTarget| {
            spool
                .enqueue(&SpoolEntry {
                    v: ENTRY_VERSION,
                    sink,
                    attempts: 0,
                    enqueued_ms: 1,
                    // A key of the hook's shape: `k1` → `0…01`.
                    record: rec(
                        &format!("{:0>32}", key.trim_start_matches('k')),
                        1,
                        session,
                        "session-start",
                    ),
                    exclusions: None,
                })
                .unwrap()
        };
        let http = SinkTarget::Http {
            url: "http://127.0.0.1:9".into(),
        };
        let store = SinkTarget::Store;
        assert!(!briefing_may_change(&[], &store, Some("new")));
        let own = put("k1", "new", store.clone());
        assert!(!briefing_may_change(
            std::slice::from_ref(&own),
            &store,
            Some("new")
        ));
        let other_sink = put("k2", "old", http.clone());
        let both = vec![own.clone(), other_sink];
        assert!(!briefing_may_change(&both, &store, Some("new")));
        assert!(briefing_may_change(&both, &http, Some("new")));
        assert!(briefing_may_change(
            std::slice::from_ref(&own),
            &store,
            None
        ));
        let old = put("k3", "old", store.clone());
        assert!(briefing_may_change(
            &[own.clone(), old],
            &store,
            Some("new")
        ));
        // Past the scan bound, assume so without reading.
        let many = vec![own; PENDING_SCAN + 1];
        assert!(briefing_may_change(&many, &store, Some("new")));
        assert!(!briefing_may_change(
            &many[..PENDING_SCAN],
            &store,
            Some("new")
        ));
    }
}
