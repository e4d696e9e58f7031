//! Delivery sinks: the embedded SQLite store (`store.rs`) and the ai-memory
//! HTTP protocol (`http.rs`). The drainer hands each sink a batch of spool
//! entries and gets one outcome per entry back.

use crate::spool::SpoolEntry;

/// What happened to one entry handed to a sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemOutcome {
    /// Stored (or already stored: a replay of the same key is a no-op).
    Delivered,
    /// Not delivered now; try again later. `charge` = count it as a failed
    /// attempt (a 429 is free). `reason` is for `status` (no secrets).
    Retry { charge: bool, reason: String },
    /// Never deliverable (e.g. 403): delete and count under `reason`.
    Drop { reason: String },
}

/// A delivery target.
pub trait Sink {
    /// Deliver `entries` (oldest first, same sink). Returns exactly one
    /// outcome per entry, in order.
    fn deliver(&mut self, entries: &[SpoolEntry]) -> Vec<ItemOutcome>;
}
