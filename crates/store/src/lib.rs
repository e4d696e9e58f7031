//! memhook's store: the store model (rows, the engine-neutral error, every
//! store trait), the embedded SQLite store, project memory documents, named
//! tokens and the briefing composed from any store.

pub mod briefing;
pub mod collapse;
pub mod fold;
pub mod history;
pub mod meaning;
pub mod memory;
pub mod model;
pub mod retention;
pub mod sqlite;
pub mod tokens;
pub mod words;
