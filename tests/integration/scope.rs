//! Integration tests for scope.
