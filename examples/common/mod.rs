//! Pieces the examples share: CSV input, progress bars, SVG figures, a stratified split, summaries
//! and the synthetic logistic-regression data. Not an example itself
//! (Cargo only discovers `examples/*.rs` and `examples/*/main.rs`); each example includes it with
//! `mod common;` and uses what it needs, hence the `dead_code` allowance at each `mod` line.

pub mod csv_input;
pub mod figure;
pub mod progress;
pub mod split;
pub mod summary;
pub mod synthetic;
