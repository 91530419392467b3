//! Records the compiler's version for the observation's `runtime_version`: the first two words of
//! `rustc --version` ("rustc 1.95.0"), the form the harness reports for the rust runtime.
use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| {
            String::from_utf8_lossy(&output.stdout)
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| "rustc (unknown version)".to_owned());
    println!("cargo:rustc-env=MCPCM_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-changed=build.rs");
}
