//! Integration tests: drive the real `memhook` binary with a temporary HOME
//! and data dir. One test binary; one module per product surface, and
//! `support` for what more than one of them needs.

mod support;

mod agents;
mod binaries;
mod binding;
mod briefing;
mod capture;
mod cli;
mod crash;
mod delivery;
mod deps;
mod fingerprints;
mod forget;
mod handoff;
mod history;
mod hook;
mod hostile;
mod install;
mod kept_briefing;
mod mcp;
mod readme;
mod records;
mod scope;
mod secrets;
mod serve;
mod session;
mod stores;
mod switches;
mod team;
mod web;
