//! Integration tests: drive the real `memhook` binary with a temporary HOME
//! and data dir. One test binary; one module per product surface.

mod util;

mod agents;
mod capture;
mod delivery;
mod hook;
mod install;
mod mcp;
mod records;
mod scope;
mod serve;
