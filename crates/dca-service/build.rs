//! Rebuilds the crate when a store's migration (`migrations/`, embedded by refinery) is added or
//! changed: `include_str!` alone does not notice a new file.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
