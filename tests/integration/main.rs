//! Integration tests: drive the real `memhook` binary with a temporary HOME
//! and data dir. One test binary; one module per product surface.

mod util;

mod agents;
mod binaries;
mod binding;
mod briefing;
mod capture;
mod cli;
mod crash;
mod delivery;
mod deps;
mod forget;
mod hook;
mod hostile;
mod install;
mod mcp;
mod pg;
mod records;
mod scope;
mod secrets;
mod serve;
mod session;
mod stores;
mod switches;
mod team;
mod web;
