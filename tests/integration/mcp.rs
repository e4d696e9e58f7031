//! Integration tests for mcp.
