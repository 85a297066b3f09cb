//! Per-client clipping: the only thing that bounds one client's influence on a round.

/// Scales `g` so that ‖g‖₂ ≤ `c` (unchanged when already inside). A non-finite entry makes the
/// whole vector zero: a client whose gradient is not a number contributes nothing rather than
/// poisoning the sum (and its influence stays ≤ C).
pub fn clip_to_norm(g: &mut [f64], c: f64) {
    if g.iter().any(|v| !v.is_finite()) {
        g.fill(0.0);
        return;
    }
    // Scale by the largest entry first so the squares cannot overflow or underflow.
    let max = g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if max == 0.0 {
        return;
    }
    let norm = max * g.iter().map(|v| (v / max).powi(2)).sum::<f64>().sqrt();
    if norm > c {
        let s = c / norm;
        g.iter_mut().for_each(|v| *v *= s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipped_norm_never_exceeds_c() {
        for g in [
            vec![3.0, 4.0],
            vec![1e200, -1e200, 3e199],
            vec![1e-300, 0.0],
            vec![0.1, 0.1],
            vec![f64::NAN, 1.0],
            vec![f64::INFINITY, 1.0],
        ] {
            let mut v = g.clone();
            clip_to_norm(&mut v, 2.0);
            let n: f64 = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            assert!(n <= 2.0 * (1.0 + 1e-15), "{g:?} -> {v:?}");
            assert!(v.iter().all(|x| x.is_finite()));
        }
        let mut v = vec![3.0, 4.0];
        clip_to_norm(&mut v, 1.0);
        assert!((v[0] - 0.6).abs() < 1e-15 && (v[1] - 0.8).abs() < 1e-15);
        let mut v = vec![0.3, 0.4];
        clip_to_norm(&mut v, 1.0);
        assert_eq!(v, vec![0.3, 0.4]);
    }
}
