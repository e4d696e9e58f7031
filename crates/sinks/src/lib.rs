//! What runs a delivery: the drainer's two sinks (the embedded store,
//! `store.rs`; an ai-memory server over HTTP, `http.rs`) and the factory
//! that picks one per spool entry, forget across the store and the spool (`forget.rs`), and the hook's
//! session start (deliver what is pending, then brief: `session_start.rs`).
//!
//! The per-event binary links none of this: it spawns `memhook-session` to
//! drain (`drainer.rs`) and hands it a server's session start, and
//! `memhook-brief` to compose a briefing from the store
//! (`session_start::compose_for`; docs/architecture.md, "Four binaries").

pub mod drainer;
pub mod factory;
pub mod forget;
pub mod http;
pub mod session_start;
pub mod store;

pub use factory::{make_sink, sink_factory};
