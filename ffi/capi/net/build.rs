//! Gives libdpdist_net an ELF SONAME carrying its ABI version, `libdpdist_net.so.N` with N =
//! `DPD_NET_ABI_VERSION` (src/lib.rs; a unit test keeps the two equal), so that a program or a
//! Julia `@ccall` linked against one ABI never loads another.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(
        os.as_str(),
        "linux" | "android" | "freebsd" | "netbsd" | "openbsd"
    ) {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdpdist_net.so.1");
    }
}
