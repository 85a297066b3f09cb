//! The L2 mode's check: a validity circuit proving ‖v‖₂ ≤ R for a
//! client's contribution v ∈ ℤ^d (grid units), and the bound R with the cost of truncating the
//! noise slice in L2.
//!
//! libprio 0.18 offers `SumVec` (every entry in a range) and `L1BoundSum`, no L2 type. So this is
//! a circuit written on libprio's proof system — its `Flp` / `Type` traits, its `ParallelSum<Mul>`
//! gadget, and `Prio3` around it — not a proof system of our own. With the per-entry bound equal
//! to R (an honest entry obeys |v_i| ≤ ‖v‖₂ ≤ R):
//! - the input is, per entry, the bits of u_i = v_i + R ∈ [0, 2R], then the bits of the slack
//!   s = R² − ‖v‖² ∈ [0, R²], each in the bit encoding whose last digit's weight makes every bit
//!   vector decode inside its range (the encoding of libprio's `Sum`, draft-irtf-cfrg-vdaf);
//! - every input element is a bit: Σ_k r^k·b_k·(b_k − 1) = 0 per chunk of the input, r from
//!   the joint randomness;
//! - Σ_i (u_i − R)² + s − R² = 0, the squares computed by the same gadget in later calls.
//!
//! Σ_i (u_i − R)² ≤ d·R² and s ≤ R², so when d·R² + R² < p (checked at construction) the field
//! equation is the integer one: ‖v‖² = R² − s ≤ R². The output of a valid report is u (the
//! shifted entries), so nodes sum outputs exactly as in the L∞ mode and the release subtracts
//! n_valid·R.
//!
//! One gadget for both parts keeps libprio's single-gadget FLP (BBCG+19, Thm 4.3); libprio marks
//! its multi-gadget generalisation as needing security analysis.

use prio::field::{Field128, FieldElement};
use prio::flp::gadgets::{Mul, ParallelSum, ParallelSumGadget};
use prio::flp::{Flp, FlpError, Gadget, Type};

use fixedpoint_shares::RoundConfig;

use crate::{Error, Result};

type SumOfProducts = ParallelSum<Field128, Mul>;

/// The FLP type: a vector of `len` integers whose L2 norm is at most `radius` (grid units).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct L2BoundSumVec {
    len: usize,
    radius: u128,
    entry_bits: usize,
    slack_bits: usize,
    chunk_length: usize,
    range_calls: usize,
    square_calls: usize,
}

impl L2BoundSumVec {
    /// The type for vectors of `len` entries and norm bound `radius` ≥ 1, the gadget summing
    /// `chunk_length` products per call.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `len`, `radius` or `chunk_length` is 0, or if
    /// (len + 1)·R² ≥ 2^127 (the norm equation could wrap around the field).
    pub fn new(len: usize, radius: u64, chunk_length: usize) -> Result<Self> {
        let positive = |name, value: usize| {
            if value == 0 {
                Err(Error::InvalidParameter {
                    name,
                    value: 0.0,
                    requirement: "at least 1",
                })
            } else {
                Ok(())
            }
        };
        positive("len", len)?;
        positive("radius", radius as usize)?;
        positive("chunk_length", chunk_length)?;
        let radius = u128::from(radius);
        let squares_fit = radius
            .checked_mul(radius)
            .and_then(|r2| r2.checked_mul(len as u128 + 1))
            .is_some_and(|total| total < 1u128 << 127);
        if !squares_fit {
            return Err(Error::InvalidParameter {
                name: "radius (grid units)",
                value: radius as f64,
                requirement: "such that (d + 1)·R² < 2^127",
            });
        }
        let entry_bits = bit_count(2 * radius);
        let slack_bits = bit_count(radius * radius);
        let input_len = len * entry_bits + slack_bits;
        Ok(Self {
            len,
            radius,
            entry_bits,
            slack_bits,
            chunk_length,
            range_calls: input_len.div_ceil(chunk_length),
            square_calls: len.div_ceil(chunk_length),
        })
    }

    /// R, grid units.
    pub fn radius(&self) -> u128 {
        self.radius
    }

    fn calls(&self) -> usize {
        self.range_calls + self.square_calls
    }

    fn arity(&self) -> usize {
        2 * self.chunk_length
    }

    fn entry_last_weight(&self) -> Field128 {
        Field128::from(last_weight(2 * self.radius, self.entry_bits))
    }

    /// The entries u_i ∈ [0, 2R] of an input (or of a share of one: the decoding is linear).
    fn shifted_entries<'a>(&self, input: &'a [Field128]) -> impl Iterator<Item = Field128> + 'a {
        let weight = self.entry_last_weight();
        input[..self.len * self.entry_bits]
            .chunks(self.entry_bits)
            .map(move |bits| decode_bits(bits, weight))
    }
}

impl Flp for L2BoundSumVec {
    type Field = Field128;

    fn gadget(&self) -> Vec<Box<dyn Gadget<Field128>>> {
        vec![Box::new(SumOfProducts::new(
            Mul::new(self.calls()),
            self.chunk_length,
        ))]
    }

    fn num_gadgets(&self) -> usize {
        1
    }

    fn valid(
        &self,
        gadgets: &mut Vec<Box<dyn Gadget<Field128>>>,
        input: &[Field128],
        joint_rand: &[Field128],
        num_shares: usize,
    ) -> std::result::Result<Vec<Field128>, FlpError> {
        self.valid_call_check(input, joint_rand)?;
        // Constants enter each of the `num_shares` shares once divided by their number, so that
        // the shares of an affine expression add up to it.
        let shares_inverse = Field128::from(num_shares as u128).inv();
        let share_of = |constant: Field128| constant * shares_inverse;
        let gadget = &mut gadgets[0];
        let mut args = vec![Field128::zero(); self.arity()];

        let one = share_of(Field128::one());
        let mut not_bits = Field128::zero();
        for (chunk, &r) in input.chunks(self.chunk_length).zip(joint_rand) {
            args.fill(Field128::zero());
            let mut r_power = r;
            for (bit, pair) in chunk.iter().zip(args.chunks_mut(2)) {
                pair[0] = r_power * *bit;
                pair[1] = *bit - one;
                r_power *= r;
            }
            not_bits += gadget.eval(&args)?;
        }

        let radius = share_of(Field128::from(self.radius));
        let centred: Vec<Field128> = self.shifted_entries(input).map(|u| u - radius).collect();
        let mut norm_squared = Field128::zero();
        for chunk in centred.chunks(self.chunk_length) {
            args.fill(Field128::zero());
            for (&v, pair) in chunk.iter().zip(args.chunks_mut(2)) {
                pair[0] = v;
                pair[1] = v;
            }
            norm_squared += gadget.eval(&args)?;
        }
        let slack_bits = &input[self.len * self.entry_bits..];
        let slack_weight = last_weight(self.radius * self.radius, self.slack_bits);
        let slack = decode_bits(slack_bits, Field128::from(slack_weight));
        let radius_squared = share_of(Field128::from(self.radius * self.radius));

        Ok(vec![not_bits, norm_squared + slack - radius_squared])
    }

    fn input_len(&self) -> usize {
        self.len * self.entry_bits + self.slack_bits
    }

    fn proof_len(&self) -> usize {
        // The gadget's wire seeds, then its polynomial: degree 2 over (1 + calls) rounded up to
        // a power of two points.
        self.arity() + 2 * ((1 + self.calls()).next_power_of_two() - 1) + 1
    }

    fn verifier_len(&self) -> usize {
        // The circuit's (compressed) output, the wires at the query point, the gadget there.
        1 + self.arity() + 1
    }

    fn joint_rand_len(&self) -> usize {
        self.range_calls
    }

    fn eval_output_len(&self) -> usize {
        2
    }

    fn prove_rand_len(&self) -> usize {
        self.arity()
    }
}

impl Type for L2BoundSumVec {
    /// v, grid units.
    type Measurement = Vec<i64>;
    /// Σ u over the valid reports (each entry shifted by R).
    type AggregateResult = Vec<u128>;

    fn encode_measurement(
        &self,
        measurement: &Vec<i64>,
    ) -> std::result::Result<Vec<Field128>, FlpError> {
        if measurement.len() != self.len {
            return Err(FlpError::Encode(format!(
                "{} entries where the type has {}",
                measurement.len(),
                self.len
            )));
        }
        let mut norm_squared = 0u128;
        for &v in measurement {
            let magnitude = u128::from(v.unsigned_abs());
            if magnitude > self.radius {
                return Err(FlpError::Encode(format!(
                    "entry {v} exceeds the radius {}",
                    self.radius
                )));
            }
            // Cannot overflow: each square ≤ R² and (d + 1)·R² < 2^127 (checked in `new`).
            norm_squared += magnitude * magnitude;
        }
        let radius_squared = self.radius * self.radius;
        if norm_squared > radius_squared {
            return Err(FlpError::Encode(format!(
                "squared norm {norm_squared} exceeds R² = {radius_squared}"
            )));
        }
        let mut input = Vec::with_capacity(self.input_len());
        for &v in measurement {
            let shifted = (i128::from(v) + self.radius as i128) as u128;
            encode_bits(shifted, 2 * self.radius, self.entry_bits, &mut input);
        }
        encode_bits(
            radius_squared - norm_squared,
            radius_squared,
            self.slack_bits,
            &mut input,
        );
        Ok(input)
    }

    fn truncate(&self, input: Vec<Field128>) -> std::result::Result<Vec<Field128>, FlpError> {
        self.truncate_call_check(&input)?;
        Ok(self.shifted_entries(&input).collect())
    }

    fn decode_result(
        &self,
        data: &[Field128],
        _num_measurements: usize,
    ) -> std::result::Result<Vec<u128>, FlpError> {
        if data.len() != self.len {
            return Err(FlpError::Decode(format!(
                "{} entries where the type has {}",
                data.len(),
                self.len
            )));
        }
        Ok(data.iter().map(|&x| u128::from(x)).collect())
    }

    fn output_len(&self) -> usize {
        self.len
    }
}

/// How many digits encode [0, max], max ≥ 1.
fn bit_count(max: u128) -> usize {
    (u128::BITS - max.leading_zeros()) as usize
}

/// The last digit's weight, max − (2^(k−1) − 1): with it every k-bit vector decodes into [0, max]
/// and every value of [0, max] has an encoding.
fn last_weight(max: u128, bits: usize) -> u128 {
    max - ((1u128 << (bits - 1)) - 1)
}

fn encode_bits(value: u128, max: u128, bits: usize, out: &mut Vec<Field128>) {
    let low_max = (1u128 << (bits - 1)) - 1;
    let (low, top) = if value > low_max {
        (value - last_weight(max, bits), 1)
    } else {
        (value, 0)
    };
    out.extend((0..bits - 1).map(|j| Field128::from((low >> j) & 1)));
    out.push(Field128::from(top));
}

fn decode_bits(bits: &[Field128], last_weight: Field128) -> Field128 {
    let (&top, low) = bits.split_last().expect("a range has at least one digit");
    let mut value = top * last_weight;
    let mut weight = Field128::one();
    for &bit in low {
        value += weight * bit;
        weight += weight;
    }
    value
}

/// The L2 bound of a round's contributions, grid units: R = `data_units` + `slice_units`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct L2Bound {
    /// The bound on ‖enc(x)‖₂ of a client's data, rounded up to the grid.
    pub data_units: u64,
    /// τ₂: an honest noise slice whose norm exceeds it is scaled back to it (0 without noise).
    pub slice_units: u64,
    /// δ_t: the probability that any honest slice of the round reaches τ₂.
    pub truncation_delta: f64,
}

impl L2Bound {
    /// R for `n_clients` clients each adding a d-dimensional slice of σ (grid units) per entry,
    /// their data within `data_units` in L2, τ₂ chosen so that δ_t ≤ `truncation_delta`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless 0 < `truncation_delta` < 1 and σ ≥ 0 is finite.
    pub fn new(
        data_units: u64,
        sigma_units: f64,
        n_clients: usize,
        dim: usize,
        truncation_delta: f64,
    ) -> Result<Self> {
        if !(truncation_delta > 0.0 && truncation_delta < 1.0) {
            return Err(Error::InvalidParameter {
                name: "truncation_delta",
                value: truncation_delta,
                requirement: "strictly between 0 and 1",
            });
        }
        if !(sigma_units.is_finite() && sigma_units >= 0.0) {
            return Err(Error::InvalidParameter {
                name: "sigma (grid units)",
                value: sigma_units,
                requirement: "finite and at least 0",
            });
        }
        if sigma_units == 0.0 {
            return Ok(Self {
                data_units,
                slice_units: 0,
                truncation_delta: 0.0,
            });
        }
        let tau = slice_norm_bound_units(sigma_units, n_clients, dim, truncation_delta);
        Ok(Self {
            data_units,
            slice_units: tau,
            truncation_delta: slice_norm_truncation_delta(sigma_units, n_clients, dim, tau),
        })
    }

    /// The bound of `config`'s round for clients whose data have ‖x‖₂ ≤ `data_norm` (value
    /// units; the job's bound, e.g. a clipped gradient's norm times its rows), with σ the
    /// round's per-client noise and τ₂ chosen so that δ_t ≤ `truncation_delta`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a negative or non-finite `data_norm`, a bad
    /// `truncation_delta`, or an R for which 2·R·N ≥ 2^120 (the field sum could wrap).
    pub fn for_round(config: &RoundConfig, data_norm: f64, truncation_delta: f64) -> Result<Self> {
        let scale = config.codec().scale();
        let data_units = data_norm * scale;
        if !(data_units.is_finite() && data_units >= 0.0 && data_units < u64::MAX as f64 / 4.0) {
            return Err(Error::InvalidParameter {
                name: "data_norm",
                value: data_norm,
                requirement: "finite, at least 0 and below 2^62 grid units",
            });
        }
        let sigma = config.noise().map_or(0.0, |noise| noise.sigma_client_units);
        let bound = Self::new(
            data_units.ceil() as u64,
            sigma,
            config.n_clients(),
            config.dim(),
            truncation_delta,
        )?;
        let total = 2 * u128::from(bound.units()) * config.n_clients() as u128;
        if bound.units() > i64::MAX as u64 / 2 || total >= 1u128 << 120 {
            return Err(Error::InvalidParameter {
                name: "bound (grid units)",
                value: bound.units() as f64,
                requirement: "such that 2·R·N < 2^120 and R < 2^62",
            });
        }
        Ok(bound)
    }

    /// R = data + slice, grid units.
    pub fn units(&self) -> u64 {
        self.data_units + self.slice_units
    }
}

/// τ₂ = ⌈σ·sqrt(d + 2·sqrt(d·x) + 2x)⌉ with x = ln(N/δ_t) grid units. A vector of d independent
/// σ²-subgaussian entries (N_Z(0, σ²) is one: Canonne, Kamath & Steinke 2020, Cor. 9) has
/// P(‖η‖² > σ²(d + 2·sqrt(d·x) + 2x)) ≤ e^(−x) (Hsu, Kakade & Zhang 2012, Thm 1 with A = I);
/// a union bound over the N clients gives δ_t.
pub fn slice_norm_bound_units(sigma_units: f64, n_clients: usize, dim: usize, delta_t: f64) -> u64 {
    let x = (n_clients as f64 / delta_t).ln();
    let d = dim as f64;
    let tau = (sigma_units * (d + 2.0 * (d * x).sqrt() + 2.0 * x).sqrt()).ceil() as u64;
    crate::bound::raise_until_within(tau, delta_t, |tau| {
        slice_norm_truncation_delta(sigma_units, n_clients, dim, tau)
    })
}

/// δ_t = N·e^(−x) for the x at which σ²(d + 2·sqrt(d·x) + 2x) = τ₂²: with y = sqrt(x),
/// 2y² + 2·sqrt(d)·y + d − t = 0 for t = τ₂²/σ², so y = (sqrt(2t − d) − sqrt(d))/2 (1 when
/// τ₂ ≤ σ·sqrt(d): no bound).
pub fn slice_norm_truncation_delta(
    sigma_units: f64,
    n_clients: usize,
    dim: usize,
    tau_units: u64,
) -> f64 {
    let t = (tau_units as f64 / sigma_units).powi(2);
    let d = dim as f64;
    if t <= d {
        return 1.0;
    }
    let y = ((2.0 * t - d).sqrt() - d.sqrt()) / 2.0;
    (n_clients as f64 * (-y * y).exp()).min(1.0)
}
