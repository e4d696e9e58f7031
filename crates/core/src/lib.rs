//! memhook's per-event core: what an agent event is, which project memory it
//! belongs to, what the project keeps out of capture, and the bounded,
//! redacted record that leaves the agent. No SQLite, no network, no clap.
//!
//! ```text
//! stdin ─► event ─► scope ─► capture ─► record ─► (memhook-delivery: spool)
//! ```

pub mod briefing_cache;
pub mod capture;
pub mod data_dir;
pub mod entropy;
pub mod envelope;
pub mod event;
pub mod fingerprint;
pub mod hex;
pub mod history;
pub mod mathlog;
pub mod mcp_agents;
pub mod names;
pub mod record;
pub mod redact;
pub mod scope;
pub mod switches;
pub mod term;
pub mod timefmt;
#[cfg(windows)]
pub mod winacl;
