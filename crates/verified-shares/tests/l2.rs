//! The L2 circuit: honest vectors within the radius pass, on one share and through Prio3 with
//! several aggregators; vectors past it, non-bit inputs and tampered shares fail; the slice
//! bound τ₂ and its δ_t against values computed by hand.

use prio::field::{Field128, FieldElement};
use prio::flp::{Flp, Type};
use prio::vdaf::prio3::{Prio3, Prio3InputShare};
use prio::vdaf::xof::XofTurboShake128;
use prio::vdaf::{Aggregatable, Aggregator, Client, Collector, VerifyTransition};
use verified_shares::l2::{
    L2Bound, L2BoundSumVec, slice_norm_bound_units, slice_norm_truncation_delta,
};

/// Runs the FLP on the whole input (one share): true if the verifier accepts.
fn decide(typ: &L2BoundSumVec, input: &[Field128]) -> bool {
    let joint_rand = Field128::random_vector(typ.joint_rand_len());
    let prove_rand = Field128::random_vector(typ.prove_rand_len());
    let query_rand = Field128::random_vector(typ.query_rand_len());
    let proof = typ.prove(input, &prove_rand, &joint_rand).unwrap();
    let verifier = typ
        .query(input, &proof, &query_rand, &joint_rand, 1)
        .unwrap();
    typ.decide(&verifier).unwrap()
}

/// The bits of x ∈ [0, max] as the circuit reads them, written here from the encoding's
/// definition (binary digits 1, 2, …, 2^(k−2), then a digit of weight max − 2^(k−1) + 1).
fn bits_by_hand(x: u128, max: u128) -> Vec<Field128> {
    let k = (128 - max.leading_zeros()) as usize;
    let low_max = (1u128 << (k - 1)) - 1;
    let (low, top) = if x > low_max {
        (x - (max - low_max), 1u128)
    } else {
        (x, 0)
    };
    let mut bits: Vec<Field128> = (0..k - 1).map(|j| Field128::from((low >> j) & 1)).collect();
    bits.push(Field128::from(top));
    bits
}

/// The input a client would send for entries `v` and slack `s` (no check of either).
fn input_by_hand(radius: u128, v: &[i64], slack: u128) -> Vec<Field128> {
    let mut input = Vec::new();
    for &x in v {
        input.extend(bits_by_hand(
            (i128::from(x) + radius as i128) as u128,
            2 * radius,
        ));
    }
    input.extend(bits_by_hand(slack, radius * radius));
    input
}

#[test]
fn vectors_within_the_radius_pass_and_encode_as_by_hand() {
    let typ = L2BoundSumVec::new(3, 5, 2).unwrap();
    for v in [
        vec![0, 0, 0],
        vec![3, 4, 0],
        vec![-3, 0, -4],
        vec![5, 0, 0],
        vec![0, -5, 0],
        vec![2, -2, 2],
        vec![1, 1, 1],
    ] {
        let input = typ.encode_measurement(&v).unwrap();
        let norm: i64 = v.iter().map(|x| x * x).sum();
        assert_eq!(input, input_by_hand(5, &v, 25 - norm as u128), "{v:?}");
        assert!(decide(&typ, &input), "{v:?} should pass");
        let shifted: Vec<Field128> = v.iter().map(|&x| Field128::from((x + 5) as u128)).collect();
        assert_eq!(typ.truncate(input).unwrap(), shifted);
    }
}

#[test]
fn vectors_past_the_radius_fail_even_with_every_entry_in_range() {
    let typ = L2BoundSumVec::new(3, 5, 2).unwrap();
    // ‖(5, 5, 0)‖² = 50 > 25 though each entry is within ±5: no slack in [0, 25] closes the
    // equation, so every choice fails.
    for slack in [0, 1, 24, 25] {
        assert!(
            !decide(&typ, &input_by_hand(5, &[5, 5, 0], slack)),
            "{slack}"
        );
    }
    // Just past: ‖(3, 4, 1)‖² = 26.
    for slack in [0, 25] {
        assert!(
            !decide(&typ, &input_by_hand(5, &[3, 4, 1], slack)),
            "{slack}"
        );
    }
    // The right slack for a vector inside, but a wrong one: fails too.
    assert!(!decide(&typ, &input_by_hand(5, &[3, 0, 0], 15)));
    assert!(decide(&typ, &input_by_hand(5, &[3, 0, 0], 16)));
    assert!(typ.encode_measurement(&vec![3, 4, 1]).is_err());
    assert!(typ.encode_measurement(&vec![6, 0, 0]).is_err());
    assert!(typ.encode_measurement(&vec![0, 0]).is_err());
}

#[test]
fn an_input_element_that_is_not_a_bit_fails() {
    let typ = L2BoundSumVec::new(3, 5, 2).unwrap();
    let honest = typ.encode_measurement(&vec![1, 2, -2]).unwrap();
    assert!(decide(&typ, &honest));
    for position in [0, 4, honest.len() - 1] {
        let mut input = honest.clone();
        input[position] += Field128::from(2u128);
        assert!(!decide(&typ, &input), "element {position} set to a non-bit");
    }
    // A huge "bit" that would make entry 0 equal to R·10⁶ if it were allowed.
    let mut input = honest.clone();
    input[0] = Field128::from(5_000_000u128);
    assert!(!decide(&typ, &input));
}

#[test]
fn parameters_are_checked() {
    assert!(L2BoundSumVec::new(0, 5, 2).is_err());
    assert!(L2BoundSumVec::new(3, 0, 2).is_err());
    assert!(L2BoundSumVec::new(3, 5, 0).is_err());
    // (d + 1)·R² < 2^127: R = 2^61 with d = 31 gives exactly 2^127.
    assert!(L2BoundSumVec::new(31, 1 << 61, 8).is_err());
    assert!(L2BoundSumVec::new(30, 1 << 61, 8).is_ok());
}

type Prio3L2 = Prio3<L2BoundSumVec, XofTurboShake128, 32>;

/// One report through Prio3 with `nodes` aggregators; the summed output if every node accepts.
fn prio3_round(
    nodes: u8,
    typ: &L2BoundSumVec,
    v: &[i64],
    tamper: impl Fn(&mut Vec<Prio3InputShare<Field128, 32>>),
) -> Option<Vec<u128>> {
    let vdaf = Prio3L2::new(nodes, 1, 0xFFFF_0043, typ.clone()).unwrap();
    let ctx = b"dpdist l2 test";
    let verify_key = [7u8; 32];
    let nonce = [9u8; 16];
    let (public_share, mut shares) = vdaf.shard(ctx, &v.to_vec(), &nonce).unwrap();
    tamper(&mut shares);
    let mut states = Vec::new();
    let mut verifier_shares = Vec::new();
    for (index, share) in shares.iter().enumerate() {
        let (state, verifier) = vdaf
            .verify_init(&verify_key, ctx, index, &(), &nonce, &public_share, share)
            .ok()?;
        states.push(state);
        verifier_shares.push(verifier);
    }
    let message = vdaf
        .verifier_shares_to_message(ctx, &(), verifier_shares)
        .ok()?;
    let mut sums = Vec::new();
    for state in states {
        match vdaf.verify_next(ctx, state, message.clone()).unwrap() {
            VerifyTransition::Finish(output) => {
                let mut sum = vdaf.aggregate_init(&());
                sum.accumulate(&output).unwrap();
                sums.push(sum);
            }
            VerifyTransition::Continue(..) => panic!("one verification round"),
        }
    }
    Some(vdaf.unshard(&(), sums, 1).unwrap())
}

#[test]
fn prio3_with_several_aggregators_accepts_honest_reports_and_refuses_tampered_shares() {
    let typ = L2BoundSumVec::new(4, 1000, 3).unwrap();
    let v = [600, -800, 0, 0]; // ‖v‖ = 1000 = R
    for nodes in [2u8, 3, 5] {
        let out = prio3_round(nodes, &typ, &v, |_| {}).expect("honest report refused");
        assert_eq!(out, vec![1600, 200, 1000, 1000], "{nodes} nodes");
        // Node 0 adds 10⁶·R to entry 0's lowest bit: the shares now add to a vector far past R.
        let refused = prio3_round(nodes, &typ, &v, |shares| match &mut shares[0] {
            Prio3InputShare::Leader {
                measurement_share, ..
            } => measurement_share[0] += Field128::from(1_000_000_000u128),
            Prio3InputShare::Helper { .. } => panic!("node 0 holds the leader share"),
        });
        assert_eq!(refused, None, "{nodes} nodes");
    }
    assert!(
        Prio3L2::new(2, 1, 0xFFFF_0043, typ.clone())
            .unwrap()
            .shard(b"x", &vec![700, -800, 0, 0], &[0; 16])
            .is_err(),
        "a client cannot encode a vector past R"
    );
}

#[test]
fn the_slice_bound_and_its_delta_by_hand() {
    // σ = 1000 units, N = 10, d = 100, δ_t = 1e-9: x = ln(10 / 1e-9) = ln(1e10) = 23.025850930;
    // d + 2·sqrt(d·x) + 2x = 100 + 2·47.985259 + 46.051702 = 242.022220;
    // τ₂ = ⌈1000·sqrt(242.022220)⌉ = ⌈15557.063⌉ = 15558.
    assert_eq!(slice_norm_bound_units(1000.0, 10, 100, 1e-9), 15558);
    // Back from τ₂ = 15558: t = 15.558² = 242.051364; y = (sqrt(2t − d) − sqrt(d))/2
    // = (sqrt(384.102728) − 10)/2 = (19.598539 − 10)/2 = 4.799269; y² = 23.032987;
    // δ_t = 10·e^(−23.032987) = 9.928890e-10 (≤ 1e-9, as the ceiling promises).
    let delta = slice_norm_truncation_delta(1000.0, 10, 100, 15558);
    assert!((delta - 9.928890e-10).abs() < 1e-15, "{delta}");
    // A bound no larger than σ·sqrt(d) bounds nothing.
    assert_eq!(slice_norm_truncation_delta(1000.0, 10, 100, 10_000), 1.0);

    let bound = L2Bound::new(40_000, 1000.0, 10, 100, 1e-9).unwrap();
    assert_eq!(bound.slice_units, 15558);
    assert_eq!(bound.units(), 55_558);
    assert!((bound.truncation_delta - 9.928890e-10).abs() < 1e-15);
    let noiseless = L2Bound::new(40_000, 0.0, 10, 100, 1e-9).unwrap();
    assert_eq!(
        (noiseless.units(), noiseless.truncation_delta),
        (40_000, 0.0)
    );
    assert!(L2Bound::new(1, 1.0, 10, 100, 0.0).is_err());
    assert!(L2Bound::new(1, f64::NAN, 10, 100, 1e-9).is_err());
    let _ = Field128::zero();
}

/// A client that runs the protocol honestly on an input it should not have: its encoder writes
/// the bits of any vector (every entry within ±R) with a slack of 0, whatever the norm.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Cheater(L2BoundSumVec);

impl Flp for Cheater {
    type Field = Field128;
    fn gadget(&self) -> Vec<Box<dyn prio::flp::Gadget<Field128>>> {
        self.0.gadget()
    }
    fn num_gadgets(&self) -> usize {
        self.0.num_gadgets()
    }
    fn valid(
        &self,
        gadgets: &mut Vec<Box<dyn prio::flp::Gadget<Field128>>>,
        input: &[Field128],
        joint_rand: &[Field128],
        num_shares: usize,
    ) -> Result<Vec<Field128>, prio::flp::FlpError> {
        self.0.valid(gadgets, input, joint_rand, num_shares)
    }
    fn input_len(&self) -> usize {
        self.0.input_len()
    }
    fn proof_len(&self) -> usize {
        self.0.proof_len()
    }
    fn verifier_len(&self) -> usize {
        self.0.verifier_len()
    }
    fn joint_rand_len(&self) -> usize {
        self.0.joint_rand_len()
    }
    fn eval_output_len(&self) -> usize {
        self.0.eval_output_len()
    }
    fn prove_rand_len(&self) -> usize {
        self.0.prove_rand_len()
    }
}

impl Type for Cheater {
    type Measurement = Vec<i64>;
    type AggregateResult = Vec<u128>;
    fn encode_measurement(&self, v: &Vec<i64>) -> Result<Vec<Field128>, prio::flp::FlpError> {
        Ok(input_by_hand(self.0.radius(), v, 0))
    }
    fn truncate(&self, input: Vec<Field128>) -> Result<Vec<Field128>, prio::flp::FlpError> {
        self.0.truncate(input)
    }
    fn decode_result(&self, data: &[Field128], n: usize) -> Result<Vec<u128>, prio::flp::FlpError> {
        self.0.decode_result(data, n)
    }
    fn output_len(&self) -> usize {
        self.0.output_len()
    }
}

/// The nodes' verdict on a report the cheater sharded with Prio3 (same algorithm id, context,
/// keys): the honest nodes run the honest type.
fn cheater_accepted(nodes: u8, typ: &L2BoundSumVec, v: &[i64]) -> bool {
    let cheat =
        Prio3::<Cheater, XofTurboShake128, 32>::new(nodes, 1, 0xFFFF_0043, Cheater(typ.clone()))
            .unwrap();
    let vdaf = Prio3L2::new(nodes, 1, 0xFFFF_0043, typ.clone()).unwrap();
    let (ctx, verify_key, nonce) = (b"dpdist l2 test", [7u8; 32], [9u8; 16]);
    let (public_share, shares) = cheat.shard(ctx, &v.to_vec(), &nonce).unwrap();
    let mut verifier_shares = Vec::new();
    for (index, share) in shares.iter().enumerate() {
        match vdaf.verify_init(&verify_key, ctx, index, &(), &nonce, &public_share, share) {
            Ok((_, verifier)) => verifier_shares.push(verifier),
            Err(_) => return false,
        }
    }
    vdaf.verifier_shares_to_message(ctx, &(), verifier_shares)
        .is_ok()
}

#[test]
fn a_client_proving_a_vector_past_the_radius_is_refused_by_the_nodes() {
    let typ = L2BoundSumVec::new(4, 1000, 3).unwrap();
    // The cheater's encoder is the honest one where the slack is 0 (‖v‖ = R): accepted, so the
    // refusals below are the circuit's, not a mismatch of encodings.
    for nodes in [2u8, 3] {
        assert!(cheater_accepted(nodes, &typ, &[600, -800, 0, 0]), "{nodes}");
        // Every entry within ±R but ‖v‖ = 2R; then a vector just past R (‖v‖² = R² + 1).
        assert!(
            !cheater_accepted(nodes, &typ, &[1000, 1000, 1000, 1000]),
            "{nodes}"
        );
        assert!(
            !cheater_accepted(nodes, &typ, &[600, -800, 1, 0]),
            "{nodes}"
        );
    }
}

/// The promise δ_t ≤ target holds as computed, also where τ₂ passes 2^53 units.
#[test]
fn the_slice_norm_bound_keeps_its_delta_within_the_target_past_2_pow_53() {
    for i in 0..2000 {
        let sigma = 2f64.powi(46) * (1.0 + i as f64 / 997.0);
        for (n, d, target) in [(10, 100, 1e-9), (10_000, 1000, 1e-9), (1000, 7, 1e-12)] {
            let tau = slice_norm_bound_units(sigma, n, d, target);
            let dt = slice_norm_truncation_delta(sigma, n, d, tau);
            assert!(dt <= target, "σ = {sigma}: δ_t = {dt:e} > {target:e}");
        }
    }
}
