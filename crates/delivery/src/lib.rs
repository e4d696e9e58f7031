//! Delivery: the durable spool a hook writes, the drainer that empties it,
//! the sinks it delivers to (the embedded store, an ai-memory server) and
//! the ai-memory wire protocol that the http sink and `memhook serve` share.
//!
//! ```text
//! record ─► spool ─► drain ─► sink: store (embedded) | http (server)
//! ```

pub mod drain;
pub mod sink;
pub mod spool;
pub mod wire;
