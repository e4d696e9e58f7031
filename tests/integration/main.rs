//! Integration tests: drive the real `memhook` binary with a temporary HOME
//! and data dir. One test binary; one module per product surface.

mod util;

mod delivery;
mod hook;
mod install;
mod mcp;
mod scope;
mod serve;
