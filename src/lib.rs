//! memhook: a native lifecycle hook that gives coding agents a durable,
//! private project memory.
//!
//! Data flows one way (see `docs/` and DESIGN §1):
//!
//! ```text
//! stdin ─► event ─► scope ─► capture ─► record ─► spool ─► drain ─► sink
//! session start: sink ─► briefing ─► envelope on stdout
//! ```

pub mod briefing;
pub mod capture;
pub mod cli;
pub mod cmd;
pub mod data_dir;
pub mod drain;
pub mod entropy;
pub mod envelope;
pub mod event;
pub mod forget;
pub mod hex;
pub mod hook;
pub mod install;
pub mod mcp;
pub mod memory;
pub mod names;
pub mod record;
pub mod redact;
pub mod scope;
pub mod serve;
pub mod session_start;
pub mod show;
pub mod sink;
pub mod spool;
pub mod status;
pub mod switches;
pub mod term;
pub mod timefmt;
pub mod token;
pub mod transfer;
pub mod trust;
pub mod ui;
