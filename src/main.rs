//! The `memhook` binary: parse the command line, run it, decide the exit code.

fn main() -> std::process::ExitCode {
    memhook::cli::main()
}
