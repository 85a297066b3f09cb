//! Gives the shared library an ELF SONAME carrying the ABI version, `libdpdist.so.N` with N =
//! `DPD_ABI_VERSION` (src/version.rs), so that a program linked against one ABI never loads
//! another. A plain `cargo build` sets it too; the install step (ffi/cpp/CMakeLists.txt) installs
//! `libdpdist.so.N` with the `libdpdist.so` link beside it, and a program linked in the build tree
//! needs `target/release/libdpdist.so.N -> libdpdist.so` (scripts/test-c.sh makes it).

use std::env;
use std::fs;

fn main() {
    println!("cargo:rerun-if-changed=src/version.rs");
    let source = fs::read_to_string("src/version.rs").expect("ffi/capi/src/version.rs is readable");
    let abi: u32 = source
        .lines()
        .find_map(|line| {
            line.trim()
                .strip_prefix("pub const DPD_ABI_VERSION: u32 = ")
        })
        .and_then(|rest| rest.strip_suffix(';'))
        .and_then(|value| value.trim().parse().ok())
        .expect("src/version.rs defines `pub const DPD_ABI_VERSION: u32 = N;`");
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let elf = matches!(
        os.as_str(),
        "linux"
            | "android"
            | "freebsd"
            | "netbsd"
            | "openbsd"
            | "dragonfly"
            | "illumos"
            | "solaris"
    );
    if elf {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdpdist.so.{abi}");
    }
}
