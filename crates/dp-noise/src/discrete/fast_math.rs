//! exp(−γ) and ln y in plain f64 arithmetic, one value or a whole batch (which the compiler
//! vectorises), with the error bounds the samplers' margins rest on proven here — so the
//! exactness of the discrete Gaussian does not depend on the platform's libm.
//!
//! Both are textbook: range reduction to a small argument, then a truncated series whose
//! remainder is bounded in closed form. The constants are the usual ones: ln 2 split as
//! LN2_HI + LN2_LO with LN2_HI = 0x3FE62E42FEE00000 (32 significant bits, so k·LN2_HI is exact
//! for |k| < 2^21) and LN2_LO = 0x3DEA39EF35793C76 (|LN2_HI + LN2_LO − ln 2| < 2^−86).
//!
//! # exp(−γ), γ ∈ [0, 64]: relative error ≤ 2^−46
//! k = ⌊γ/ln 2 + 1/2⌋ ∈ [0, 93] and r = (γ − k·LN2_HI) − k·LN2_LO, so exp(−γ) = 2^−k·exp(−r)
//! with |r| ≤ ln 2/2 + 2^−40 < 0.3466 (any integer k makes the identity true; the rounding of
//! k only matters for this bound). γ − k·LN2_HI is exact (k·LN2_HI is, and for k ≥ 1 it lies
//! in [γ/2, 2γ]: Sterbenz), the second subtraction rounds by ≤ 2^−53·|r| and the split ln 2
//! is off by < 93·2^−86: r is within 2^−52 relative (+2^−79) of the true one, exp(−r) within
//! 2^−52. The Taylor polynomial of degree 12 leaves |r|^13/13!·e^{|r|} < 2^−51.4·e^{−|r|};
//! Horner's 12 steps each round by 2^−53 of a partial sum bounded by e^{|r|} < 2·e^{−|r|},
//! and each coefficient 1/j! by 2^−53: together < 2^−47.4 relative. 2^−k is exact (a power
//! of two, normal for k ≤ 93). Total below 2^−46.
//!
//! # ln y, y ∈ [2^−24, 1): relative error ≤ 2^−48
//! y = 2^e·m with m ∈ [√½, √2) from the bits, s = (m − 1)/(m + 1) ∈ (−0.1716, 0.1716) and
//! ln m = 2s·Σ_j s^{2j}/(2j + 1). m − 1 is exact (Sterbenz), m + 1 and the division round:
//! s within 2^−52 relative. With z = s² < 0.02944 the series to j = 9 leaves
//! Σ_{j≥10} z^j/(2j+1) < z^10/(21·(1 − z)) < 2^−55 (against a sum ≥ 1); Horner in z with
//! |z| that small rounds by < 2^−52 relative overall; the product 2s·p by 2^−53: ln m within
//! 2^−50.4 relative. Then ln y = e·LN2_HI (exact) + (e·LN2_LO + ln m): for e ≠ 0,
//! |ln y| ≥ |e|·ln 2 − 0.3466 ≥ |e|·ln 2/2, so the two roundings of that sum and ln m's error
//! stay below 2^−48.5·|ln y|; for e = 0, ln y = ln m.
//!
//! The tests check both against exact rational bounds (`lazy_exp.rs`: `exp_neg_is_accurate`,
//! `ln_is_accurate`) with a margin of 2 bits below the claims.

use multiversion::multiversion;

const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);
const INV_LN2: f64 = std::f64::consts::LOG2_E;
/// Adding 2^52 to an integer-valued f64 in [0, 2^52) puts the integer in the low bits.
const TWO_52: f64 = 4_503_599_627_370_496.0;

/// 1/j! for j = 12 down to 0, for Horner.
const INV_FACTORIALS: [f64; 13] = [
    1.0 / 479_001_600.0,
    1.0 / 39_916_800.0,
    1.0 / 3_628_800.0,
    1.0 / 362_880.0,
    1.0 / 40_320.0,
    1.0 / 5_040.0,
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    1.0 / 2.0,
    1.0,
    1.0,
];

/// 1/(2j + 1) for j = 9 down to 0, for Horner.
const INV_ODD: [f64; 10] = [
    1.0 / 19.0,
    1.0 / 17.0,
    1.0 / 15.0,
    1.0 / 13.0,
    1.0 / 11.0,
    1.0 / 9.0,
    1.0 / 7.0,
    1.0 / 5.0,
    1.0 / 3.0,
    1.0,
];

/// One Horner step p·x + c: fused (one rounding) when `FMA`, else a multiply and an add. The
/// error bounds above hold for both (the fused step rounds once where the other rounds twice);
/// callers pick `FMA` only where the instruction is enabled, since without it `mul_add` is a
/// slow library call (still correctly rounded, which is how the tests check the fused path on
/// every machine).
#[inline(always)]
fn horner_step<const FMA: bool>(p: f64, x: f64, c: f64) -> f64 {
    if FMA { p.mul_add(x, c) } else { p * x + c }
}

/// exp(−γ) for γ ∈ [0, 64], within 2^−46 relative (module docs). Outside that range (or NaN)
/// the input is clamped into it: the result is then only some value in (0, 1].
#[inline(always)]
pub(crate) fn exp_neg(gamma: f64) -> f64 {
    exp_neg_with::<false>(gamma)
}

/// [`exp_neg`], its polynomial by fused multiply-adds when `FMA`.
#[inline(always)]
pub(crate) fn exp_neg_with<const FMA: bool>(gamma: f64) -> f64 {
    // max/min map NaN to 0 (clamp would keep it) and keep the exponent field below valid.
    #[allow(clippy::manual_clamp)]
    let g = gamma.max(0.0).min(64.0);
    let k = (g * INV_LN2 + 0.5).floor();
    let r = (g - k * LN2_HI) - k * LN2_LO;
    let x = -r;
    let mut p = INV_FACTORIALS[0];
    for &c in &INV_FACTORIALS[1..] {
        p = horner_step::<FMA>(p, x, c);
    }
    // k ∈ [0, 93] is an integer: its bits after adding 2^52 are k itself.
    let k_int = (k + TWO_52).to_bits() - TWO_52.to_bits();
    p * f64::from_bits((1023 - k_int) << 52)
}

/// ln y for y ∈ [2^−24, 1), within 2^−48 relative (module docs). Other positive normal inputs
/// get a value of the right size without the bound.
#[inline(always)]
pub(crate) fn ln(y: f64) -> f64 {
    ln_with::<false>(y)
}

/// [`ln`], its polynomial by fused multiply-adds when `FMA`.
#[inline(always)]
pub(crate) fn ln_with<const FMA: bool>(y: f64) -> f64 {
    const MANTISSA: u64 = (1 << 52) - 1;
    let bits = y.to_bits();
    let biased = bits >> 52;
    // The biased exponent (< 2^11) as f64, exactly, without an integer conversion.
    let mut e = f64::from_bits(TWO_52.to_bits() | biased) - (TWO_52 + 1023.0);
    let mut m = f64::from_bits((bits & MANTISSA) | 1.0f64.to_bits());
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1.0;
    }
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    let mut p = INV_ODD[0];
    for &c in &INV_ODD[1..] {
        p = horner_step::<FMA>(p, z, c);
    }
    e * LN2_HI + (e * LN2_LO + 2.0 * s * p)
}

/// exp(−γ) for each γ (clamped as in [`exp_neg`]).
#[multiversion(targets("x86_64+avx512f", "x86_64+avx2+fma", "x86_64+avx2"))]
pub(crate) fn exp_neg_batch(gammas: &[f64], out: &mut [f64]) {
    const FMA: bool = multiversion::target::selected_target!().supports_feature_str("fma");
    for (o, &g) in out.iter_mut().zip(gammas) {
        *o = exp_neg_with::<FMA>(g);
    }
}

/// (w >> 12)·2^−52, exactly: the mantissa bits under the exponent of 1, minus 1 (Sterbenz).
#[inline(always)]
pub(crate) fn grid_point(w: u64) -> f64 {
    f64::from_bits((w >> 12) | 1.0f64.to_bits()) - 1.0
}
