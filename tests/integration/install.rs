//! Integration tests for install.
