//! Delivery sinks: the embedded SQLite store and the ai-memory HTTP protocol.
