//! Project memory documents (MEMORY.md and friends) stored as plain files per scope.
