//! Empty: present so that cargo resolves this crate's `[build-dependencies]` (feature pins).
fn main() {}
