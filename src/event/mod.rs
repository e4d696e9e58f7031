//! Event intake: one parser for event names, per-agent payload schemas (a table).
