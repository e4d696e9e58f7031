//! What more than one test file needs, one file per job:
//!
//! - [`binaries`]: the binaries under test and the commands that run them;
//! - [`home`]: temp homes, their data dir, and the HOME with a project
//!   the real agent CLIs run in;
//! - [`fixtures`]: the repository's fixtures and records built in code;
//! - [`files`]: every byte under a directory, and where a text is;
//! - [`model_server`]: the loopback model API the real agent CLIs talk to;
//! - [`process`]: child processes, and the daemons a test leaves behind,
//!   ended by their pid;
//! - [`serve`] and [`http`]: a real `memhook serve` and HTTP to it;
//! - [`pg`]: a real PostgreSQL;
//! - [`deps`]: the test dependencies beyond Rust (the real agent CLIs, the
//!   Python MCP SDK, a browser, PostgreSQL), found or reported missing.

pub mod binaries;
pub mod deps;
pub mod files;
pub mod fixtures;
pub mod home;
pub mod http;
pub mod model_server;
pub mod pg;
pub mod process;
pub mod serve;
