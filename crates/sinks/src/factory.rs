//! The drainer's sinks, made for each spool entry's target: the embedded
//! store, or an ai-memory server with the live token.

use std::path::Path;
use std::time::{Duration, Instant};

use memhook_delivery::sink::{ItemOutcome, Sink};
use memhook_delivery::spool::SinkTarget;

/// The real sinks: the embedded store, or an HTTP server with the live token
/// and `timeout` per delivery call.
pub fn sink_factory(
    data_dir: &Path,
    timeout: Duration,
) -> impl FnMut(&SinkTarget) -> Box<dyn Sink> + '_ {
    move |target| make_sink(data_dir, target, timeout, None)
}

/// The embedded store's sink only, for a drain of `data_dir` with `only:
/// Store` that waits for another connection's lock until `deadline`: the
/// briefing composer (`memhook-brief`) never talks to a server, and a
/// binary that names no HTTP sink links no HTTP or TLS code.
pub fn store_only(
    data_dir: &Path,
    deadline: Instant,
) -> impl FnMut(&SinkTarget) -> Box<dyn Sink> + '_ {
    move |target| -> Box<dyn Sink> {
        match target {
            SinkTarget::Store => {
                Box::new(crate::store::StoreSink::new(data_dir).until(Some(deadline)))
            }
            // A drain with `only: Store` never asks; were it to, a server's
            // records stay in the spool for a drainer that has its sink.
            SinkTarget::Http { .. } => Box::new(NotHere),
        }
    }
}

/// The sink of a server in a binary that has none: every record stays
/// pending, uncharged.
struct NotHere;

impl Sink for NotHere {
    fn deliver(&mut self, entries: &[memhook_delivery::spool::SpoolEntry]) -> Vec<ItemOutcome> {
        entries
            .iter()
            .map(|_| ItemOutcome::Retry {
                charge: false,
                reason: "this binary delivers only to the embedded store".to_string(),
            })
            .collect()
    }
}

/// The sink `target` names, for a drain of `data_dir` (the drain's
/// [`memhook_delivery::drain::MakeSink`]).
pub fn make_sink(
    data_dir: &Path,
    target: &SinkTarget,
    timeout: Duration,
    deadline: Option<Instant>,
) -> Box<dyn Sink> {
    match target {
        SinkTarget::Store => Box::new(crate::store::StoreSink::new(data_dir).until(deadline)),
        SinkTarget::Http { url } => Box::new(
            crate::http::HttpSink::new(url, memhook_delivery::sink::auth_token(data_dir), timeout)
                .with_data_dir(data_dir)
                .until(deadline),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's records given to the store-only factory stay pending,
    /// uncharged: never written into the embedded store.
    #[test]
    fn the_store_only_factory_delivers_nothing_for_a_server() {
        let t = tempfile::tempdir().unwrap();
        let mut make = store_only(t.path(), Instant::now() + Duration::from_secs(5));
        let mut sink = make(&SinkTarget::Http {
            url: "http://127.0.0.1:9".into(),
        });
        let entry = memhook_delivery::spool::SpoolEntry {
            v: memhook_delivery::spool::ENTRY_VERSION,
            sink: SinkTarget::Http {
                url: "http://127.0.0.1:9".into(),
            },
            attempts: 0,
            enqueued_ms: 1_700_000_000_000,
            record: memhook_core::record::sample::record(&"a".repeat(32)),
            exclusions: None,
        };
        let out = sink.deliver(std::slice::from_ref(&entry));
        assert!(
            matches!(&out[..], [ItemOutcome::Retry { charge: false, .. }]),
            "{out:?}"
        );
        assert!(!t.path().join(memhook_store::sqlite::STORE_FILE).exists());
    }
}
