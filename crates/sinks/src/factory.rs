//! The drainer's sinks, made for each spool entry's target: the embedded
//! store, or an ai-memory server with the live token.

use std::path::Path;
use std::time::{Duration, Instant};

use memhook_delivery::sink::Sink;
use memhook_delivery::spool::SinkTarget;

/// The real sinks: the embedded store, or an HTTP server with the live token
/// and `timeout` per delivery call.
pub fn sink_factory(
    data_dir: &Path,
    timeout: Duration,
) -> impl FnMut(&SinkTarget) -> Box<dyn Sink> + '_ {
    sink_factory_until(data_dir, timeout, None)
}

/// [`sink_factory`]; with a `deadline` (session start), the store waits for
/// another connection's lock only until then.
pub fn sink_factory_until(
    data_dir: &Path,
    timeout: Duration,
    deadline: Option<Instant>,
) -> impl FnMut(&SinkTarget) -> Box<dyn Sink> + '_ {
    move |target| make_sink(data_dir, target, timeout, deadline)
}

/// The embedded store's sink only, for a drain of `data_dir` with `only:
/// Store` that waits for another connection's lock until `deadline`: the
/// briefing composer (`memhook-brief`) never talks to a server, and a
/// binary that names no HTTP sink links no HTTP or TLS code.
pub fn store_only(
    data_dir: &Path,
    deadline: Instant,
) -> impl FnMut(&SinkTarget) -> Box<dyn Sink> + '_ {
    move |target| {
        debug_assert_eq!(target, &SinkTarget::Store, "a drain with only: Store");
        Box::new(crate::store::StoreSink::new(data_dir).until(Some(deadline)))
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
