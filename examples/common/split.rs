//! A stratified train/test split of 0/1-labelled rows.

use rand_core::RngCore;

/// Row indices of each class shuffled (Fisher–Yates) and cut at `train_share`, so both parts keep
/// the class balance: (train, test).
pub fn stratified_split(
    y: &[f64],
    train_share: f64,
    rng: &mut impl RngCore,
) -> (Vec<usize>, Vec<usize>) {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for class in [0.0, 1.0] {
        let mut idx: Vec<usize> = (0..y.len()).filter(|&i| y[i] == class).collect();
        for i in (1..idx.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            idx.swap(i, j);
        }
        let cut = (idx.len() as f64 * train_share).round() as usize;
        train.extend_from_slice(&idx[..cut]);
        test.extend_from_slice(&idx[cut..]);
    }
    (train, test)
}
