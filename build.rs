//! Links the `kiln` binary as a position-dependent executable on Linux (ADR 0043).
//!
//! A position-independent executable is relocated by the dynamic loader at every start: kiln's
//! 53,000 relative relocations write into 830 KB of `.data.rel.ro`, a copy-on-write page fault
//! for each of its 200 pages, about 1 ms of a process whose render takes 2–12 ms (issue 37,
//! process start included). Linked at a fixed address, the executable needs none; its shared
//! libraries, heap, stack and mappings stay randomised. Only the binary: the library, the tests
//! and the examples are linked as before.
#![allow(clippy::disallowed_methods)] // a build script: cargo's target, from the environment

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        // After rustc's own `-pie`: the C compiler driver takes the last of the two.
        println!("cargo:rustc-link-arg-bin=kiln=-no-pie");
    }
}
