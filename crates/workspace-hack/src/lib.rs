//! No code. This crate only pins dependency features so that every cargo selection of the
//! workspace (`--workspace`, `-p dca-service`, `-p dpdist-capi`, ...) resolves them alike and
//! reuses one build; see its `Cargo.toml` and `docs/src/results/build.md`.
#![no_std]
