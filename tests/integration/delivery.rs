//! Integration tests for delivery.
