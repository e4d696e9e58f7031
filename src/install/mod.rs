//! Installers: wire memhook into each agent's configuration, driven by profiles in `installers/`.

use crate::cli::{CmdResult, DoctorArgs, InstallArgs, InstallMcpArgs, UninstallArgs};
use std::path::Path;

pub fn run_install(_args: &InstallArgs, _data_dir: Option<&Path>) -> CmdResult {
    Err("memhook install-hooks is not implemented yet".into())
}

pub fn run_uninstall(_args: &UninstallArgs) -> CmdResult {
    Err("memhook uninstall-hooks is not implemented yet".into())
}

pub fn run_install_mcp(_args: &InstallMcpArgs, _data_dir: Option<&Path>) -> CmdResult {
    Err("memhook install-mcp is not implemented yet".into())
}

pub fn run_doctor(_args: &DoctorArgs) -> CmdResult {
    Err("memhook doctor is not implemented yet".into())
}
