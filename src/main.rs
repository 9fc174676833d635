//! The `datadiff` binary: see the `datadiff_cli` crate.
fn main() -> std::process::ExitCode {
    datadiff_cli::main()
}
