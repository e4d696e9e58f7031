//! Integration tests for hook.
