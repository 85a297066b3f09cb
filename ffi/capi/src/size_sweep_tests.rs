//! Every exported function with a `size_t` argument, called with the extreme sizes 0, 1, 2^32 and
//! `SIZE_MAX` in each such argument in turn while the others stay valid.
//!
//! A call must return a status and never `DPD_ERR_PANIC` (nor abort the test process). Every call
//! keeps the header's contract: an array whose claimed length exceeds the buffer the test owns is
//! passed as NULL (which must then be refused), so nothing here is undefined behaviour.
//!
//! The table is checked against `include/dpdist.h`: a function added with a `size_t` argument,
//! or a `size_t` argument added to a function, fails `the_table_covers_every_size_argument`
//! until its case is written here.

use std::collections::BTreeMap;
use std::ptr::{null, null_mut};

use crate::blr::cavi::*;
use crate::blr::config::*;
use crate::blr::fit::*;
use crate::blr::noise_aware::*;
use crate::blr::regression::*;
use crate::blr::search::*;
use crate::blr::stats::*;
use crate::blr::std_source::*;
use crate::dca::aggregator::*;
use crate::dca::client::*;
use crate::dca::codec::*;
use crate::dca::kernels::*;
use crate::dca::ledger::*;
use crate::dca::node::*;
use crate::dca::node_sum::*;
use crate::dca::round::*;
use crate::dca::seal::*;
use crate::dca::simulate::*;
use crate::dca::verified::*;
use crate::dca::wire::*;
use crate::error::dpd_last_error_message;
use crate::iterative::calibrate::*;
use crate::iterative::config::*;
use crate::iterative::trainer::*;
use crate::noise::calibrate::*;
use crate::noise::samplers::*;
use crate::plr::data::*;
use crate::plr::fit::*;
use crate::plr::metrics::*;
use crate::plr::model::*;
use crate::rng::*;
use crate::status::dpd_status::{self, DPD_OK};
use crate::threads::dpd_set_num_threads;

/// The sizes every `size_t` argument is tried with.
const EXTREMES: [usize; 4] = [0, 1, 1 << 32, usize::MAX];

/// Buffers the test owns hold this many elements; a larger claimed length is passed with NULL.
const BUF: usize = 64;

/// An input array of claimed length `len`: the buffer when it really has `len` elements, else
/// NULL (a contract-keeping way to claim any length).
fn input<T>(buffer: &[T], len: usize) -> *const T {
    if len <= buffer.len() {
        buffer.as_ptr()
    } else {
        null()
    }
}

/// An output array of claimed capacity `cap`, as [`input`].
fn output<T>(buffer: &mut [T], cap: usize) -> *mut T {
    if cap <= buffer.len() {
        buffer.as_mut_ptr()
    } else {
        null_mut()
    }
}

/// Two feature groups of the fixture's D = 3 columns, importance ½ each (freed by the caller).
fn two_groups() -> *mut dpd_feature_groups {
    let (assignment, importance) = ([0u32, 1, 1], [0.5, 0.5]);
    let mut groups = null_mut();
    // SAFETY: both arrays are read for the lengths passed; `groups` is writable.
    let status = unsafe {
        dpd_feature_groups_new(assignment.as_ptr(), D, importance.as_ptr(), 2, &mut groups)
    };
    ok(status, "feature groups");
    groups
}

/// The fixture's round (4 clients, 2 nodes, T = 1, d = 3, exact) with validity on at
/// δ_t = 1e-9: L∞, or L2 with the data's norm bound √3 (freed by the caller).
fn verified_config(l2: bool) -> *mut dpd_round_config {
    let mut config = null_mut();
    // SAFETY: `config` is a local; the handle is live when validity is set.
    unsafe {
        ok(
            dpd_round_config_new_exact(1, 4, 2, 1, D, 1.0, 1, DPD_FRAC_BITS_AUTO, &mut config),
            "verified config",
        );
        let status = if l2 {
            dpd_round_config_set_validity_l2(config, 3f64.sqrt(), 1e-9)
        } else {
            dpd_round_config_set_validity(config, dpd_validity::DPD_VALIDITY_LINF as u32, 1e-9)
        };
        ok(status, "validity");
    }
    config
}

/// The status of a call made in both validity modes: a panic if either panicked, else the
/// first that is not `DPD_OK` (so each mode's call is checked).
fn both_modes(mut call: impl FnMut(*mut dpd_round_config) -> dpd_status) -> dpd_status {
    let statuses = [false, true].map(|l2| {
        let config = verified_config(l2);
        let status = call(config);
        // SAFETY: a live handle, freed once.
        unsafe { dpd_round_config_free(config) };
        status
    });
    if statuses.contains(&dpd_status::DPD_ERR_PANIC) {
        return dpd_status::DPD_ERR_PANIC;
    }
    statuses
        .into_iter()
        .find(|&s| s != DPD_OK)
        .unwrap_or(DPD_OK)
}

/// Live handles and valid inputs for every call: a 4-client, 2-node round of d = 3 with its
/// shares, node sums and aggregator; a BLR config and model; a PLR data set and model.
struct Fixture {
    rng: *mut dpd_rng,
    config: *mut dpd_round_config,
    client: *mut dpd_client,
    shares: *mut dpd_shares,
    node: *mut dpd_node,
    node_sum: *mut dpd_node_sum,
    node_sum_bytes: Vec<u8>,
    message: Vec<u8>,
    /// The agreed (client, shard) pairs of the round: clients 0..4 and their shard ids.
    agreed_ids: Vec<u64>,
    agreed_shards: Vec<u64>,
    aggregator: *mut dpd_aggregator,
    blr_config: *mut dpd_blr_config,
    blr_model: *mut dpd_blr_model,
    regression: *mut dpd_regression,
    dataset: *mut dpd_dataset,
    plr_model: *mut dpd_plr_model,
    stacked: *mut dpd_plr_model,
    noise_aware: *mut dpd_blr_noise_aware,
    iterative_config: *mut dpd_iterative_config,
    trainer: *mut dpd_iterative_trainer,
    /// 64 values in [−0.5, 0.5].
    values: Vec<f64>,
    /// 64 labels alternating 0, 1.
    labels: Vec<f64>,
    /// The flat statistics of the 20 × 3 data set, with Σy².
    stats: Vec<f64>,
}

const D: usize = 3;
const N_ROWS: usize = 20;

fn ok(status: dpd_status, what: &str) {
    assert_eq!(status, DPD_OK, "fixture: {what}");
}

impl Fixture {
    fn new() -> Self {
        let values: Vec<f64> = (0..BUF)
            .map(|i| ((i * 7 % 11) as f64 - 5.0) / 10.0)
            .collect();
        let labels: Vec<f64> = (0..BUF).map(|i| (i % 2) as f64).collect();
        let mut f = Fixture {
            rng: null_mut(),
            config: null_mut(),
            client: null_mut(),
            shares: null_mut(),
            node: null_mut(),
            node_sum: null_mut(),
            node_sum_bytes: vec![0; 4096],
            message: vec![0; 4096],
            agreed_ids: vec![0; BUF],
            agreed_shards: vec![0; BUF],
            aggregator: null_mut(),
            blr_config: null_mut(),
            blr_model: null_mut(),
            regression: null_mut(),
            dataset: null_mut(),
            plr_model: null_mut(),
            stacked: null_mut(),
            noise_aware: null_mut(),
            iterative_config: null_mut(),
            trainer: null_mut(),
            values,
            labels,
            stats: vec![0.0; D * (D + 1) / 2 + D + 1],
        };
        let mut len = 0usize;
        // SAFETY: every pointer is a live local, a field of `f` of the stated length, or a handle
        // created just before.
        unsafe {
            ok(dpd_rng_new_insecure_fixed_seed(11, &mut f.rng), "rng");
            ok(
                dpd_round_config_new_exact(
                    1,
                    4,
                    2,
                    1,
                    D,
                    1.0,
                    1,
                    DPD_FRAC_BITS_AUTO,
                    &mut f.config,
                ),
                "config",
            );
            let mut nodes = [null_mut(); 2];
            for (k, node) in nodes.iter_mut().enumerate() {
                ok(dpd_node_new(f.config, k as u32, node), "node");
            }
            for id in 0..4u64 {
                let mut client = null_mut();
                let mut shares = null_mut();
                ok(dpd_client_new(f.config, id, f.rng, &mut client), "client");
                let row = &f.values[id as usize * D..id as usize * D + D];
                ok(
                    dpd_client_shard(client, row.as_ptr(), D, &mut shares),
                    "shard",
                );
                for (k, node) in nodes.iter().enumerate() {
                    let mut bytes = vec![0u8; 4096];
                    ok(
                        dpd_shares_message(shares, k as u32, bytes.as_mut_ptr(), 4096, &mut len),
                        "message",
                    );
                    ok(dpd_node_absorb(*node, bytes.as_ptr(), len), "absorb");
                    if id == 0 && k == 0 {
                        bytes.truncate(len);
                        f.message = bytes;
                    }
                }
                if id == 0 {
                    f.client = client;
                    f.shares = shares;
                } else {
                    dpd_client_free(client);
                    dpd_shares_free(shares);
                }
            }
            ok(
                dpd_node_received(
                    nodes[0],
                    f.agreed_ids.as_mut_ptr(),
                    f.agreed_shards.as_mut_ptr(),
                    BUF,
                    &mut len,
                ),
                "received",
            );
            assert_eq!(len, 4);
            ok(
                dpd_aggregator_new(f.config, &mut f.aggregator),
                "aggregator",
            );
            for (k, node) in nodes.iter().enumerate() {
                let mut sum = null_mut();
                ok(
                    dpd_node_finalize(
                        *node,
                        f.agreed_ids.as_ptr(),
                        f.agreed_shards.as_ptr(),
                        4,
                        &mut sum,
                    ),
                    "finalize",
                );
                ok(dpd_aggregator_add(f.aggregator, sum), "add");
                if k == 0 {
                    let mut bytes = vec![0u8; 4096];
                    ok(
                        dpd_node_sum_to_bytes(sum, bytes.as_mut_ptr(), 4096, &mut len),
                        "sum bytes",
                    );
                    bytes.truncate(len);
                    f.node_sum_bytes = bytes;
                    f.node_sum = sum;
                } else {
                    dpd_node_sum_free(sum);
                }
            }
            f.node = nodes[0];
            dpd_node_free(nodes[1]);

            let bounds = [1.0; D];
            ok(
                dpd_blr_config_new(1.0, 1e-5, bounds.as_ptr(), D, 1.0, &mut f.blr_config),
                "blr config",
            );
            let x = &f.values[..N_ROWS * D];
            let y = &f.values[N_ROWS * D - N_ROWS..N_ROWS * D];
            ok(
                dpd_blr_fit(
                    x.as_ptr(),
                    x.len(),
                    y.as_ptr(),
                    N_ROWS,
                    D,
                    f.blr_config,
                    f.rng,
                    &mut f.blr_model,
                ),
                "blr fit",
            );
            let (lower, upper) = ([-1.0; D], [1.0; D]);
            ok(
                dpd_regression_fit(
                    x.as_ptr(),
                    x.len(),
                    y.as_ptr(),
                    N_ROWS,
                    lower.as_ptr(),
                    upper.as_ptr(),
                    D,
                    -1.0,
                    1.0,
                    1,
                    1.0,
                    1e-5,
                    0,
                    f.rng,
                    &mut f.regression,
                ),
                "regression fit",
            );
            let mut record = vec![0.0; f.stats.len()];
            for i in 0..N_ROWS {
                ok(
                    dpd_blr_record_stats(
                        x[i * D..].as_ptr(),
                        D,
                        y[i],
                        1,
                        record.as_mut_ptr(),
                        record.len(),
                        &mut len,
                    ),
                    "record stats",
                );
                f.stats.iter_mut().zip(&record).for_each(|(s, r)| *s += r);
            }
            ok(
                dpd_dataset_new(
                    x.as_ptr(),
                    x.len(),
                    D,
                    f.labels.as_ptr(),
                    N_ROWS,
                    &mut f.dataset,
                ),
                "dataset",
            );
            ok(
                dpd_plr_fit(f.dataset, 1.0, 0.1, f.rng, &mut f.plr_model),
                "plr fit",
            );
            ok(
                dpd_pst_s_fit(f.dataset, 2, 1.0, 0.1, 1.0, 0.2, f.rng, &mut f.stacked),
                "pst-s fit",
            );
            ok(
                dpd_blr_model_noise_aware(f.blr_model, 50, f.rng, &mut f.noise_aware),
                "noise-aware posterior",
            );
            ok(
                dpd_iterative_config_new_logistic(0.1, &mut f.iterative_config),
                "iterative config",
            );
            ok(
                dpd_iterative_config_set_non_private(f.iterative_config),
                "non-private",
            );
            ok(
                dpd_iterative_trainer_new(f.iterative_config, N_ROWS, D, f.rng, &mut f.trainer),
                "trainer",
            );
        }
        f
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // SAFETY: every handle was created by the fixture and is freed once.
        unsafe {
            dpd_rng_free(self.rng);
            dpd_round_config_free(self.config);
            dpd_client_free(self.client);
            dpd_shares_free(self.shares);
            dpd_node_free(self.node);
            dpd_node_sum_free(self.node_sum);
            dpd_aggregator_free(self.aggregator);
            dpd_blr_config_free(self.blr_config);
            dpd_blr_model_free(self.blr_model);
            dpd_regression_free(self.regression);
            dpd_dataset_free(self.dataset);
            dpd_plr_model_free(self.plr_model);
            dpd_plr_model_free(self.stacked);
            dpd_blr_noise_aware_free(self.noise_aware);
            dpd_iterative_trainer_free(self.trainer);
            dpd_iterative_config_free(self.iterative_config);
        }
    }
}

/// A call of one exported function with the given values of its `size_t` arguments.
type SizedCall = Box<dyn Fn(&mut Fixture, &[usize]) -> dpd_status>;

/// One exported function: its valid sizes (in header order) and a call with given sizes.
struct Case {
    name: &'static str,
    valid: Vec<usize>,
    call: SizedCall,
}

macro_rules! case {
    ($name:ident, [$($valid:expr),* $(,)?], |$f:ident, $s:ident| $body:expr) => {
        Case {
            name: stringify!($name),
            valid: vec![$($valid),*],
            // SAFETY (of every body): pointers are live fixture handles, local buffers of at
            // least the length passed with them, or NULL (see `input` / `output`).
            call: Box::new(move |$f: &mut Fixture, $s: &[usize]| {
                // Not every entry point is `unsafe` (dpd_set_num_threads).
                #[allow(unused_unsafe)]
                let status = unsafe { $body };
                status
            }),
        }
    };
}

/// The cases, one per exported function with a `size_t` argument.
fn cases() -> Vec<Case> {
    let n_stats = D * (D + 1) / 2 + D + 1;
    let ctx = dpd_seal_context {
        round: 1,
        config_hash: [3; 32],
        client: 0,
        node: 0,
    };
    vec![
        case!(
            dpd_blr_fit_gamma_prior,
            [n_stats, N_ROWS, D, 50, BUF],
            |f, s| {
                let mut out = [0.0; BUF];
                let mut len = 0;
                dpd_blr_fit_gamma_prior(
                    input(&f.stats, s[0]),
                    s[0],
                    s[1],
                    s[2],
                    2.0,
                    2.0,
                    2.0,
                    2.0,
                    s[3],
                    1e-6,
                    output(&mut out, s[4]),
                    s[4],
                    &mut len,
                    null_mut(),
                )
            }
        ),
        case!(dpd_round_ledger_entries, [BUF], |f, s| {
            let (mut rounds, mut digests) = ([0u64; BUF], [0u8; BUF * DPD_CONFIG_DIGEST_LEN]);
            let mut ledger = null_mut();
            let mut len = 0;
            ok(dpd_round_ledger_new(&mut ledger), "ledger");
            ok(
                dpd_round_ledger_admit(ledger, f.config, null_mut()),
                "admit",
            );
            let status = dpd_round_ledger_entries(
                ledger,
                output(&mut rounds, s[0]),
                output(&mut digests, s[0].saturating_mul(DPD_CONFIG_DIGEST_LEN)),
                s[0],
                &mut len,
            );
            dpd_round_ledger_free(ledger);
            status
        }),
        case!(
            dpd_round_ledger_admit_digest,
            [DPD_CONFIG_DIGEST_LEN],
            |_f, s| {
                let digest = [5u8; BUF];
                let mut ledger = null_mut();
                ok(dpd_round_ledger_new(&mut ledger), "ledger");
                let status = dpd_round_ledger_admit_digest(
                    ledger,
                    3,
                    input(&digest, s[0]),
                    s[0],
                    null_mut(),
                );
                dpd_round_ledger_free(ledger);
                status
            }
        ),
        case!(dpd_blr_config_new, [D], |_f, s| {
            let bounds = [1.0; BUF];
            let mut out = null_mut();
            let status = dpd_blr_config_new(1.0, 1e-5, input(&bounds, s[0]), s[0], 1.0, &mut out);
            dpd_blr_config_free(out);
            status
        }),
        case!(dpd_blr_config_set_distributed, [1], |_f, s| {
            let bounds = [1.0; D];
            let mut config = null_mut();
            ok(
                dpd_blr_config_new(1.0, 1e-5, bounds.as_ptr(), D, 1.0, &mut config),
                "config",
            );
            let status = dpd_blr_config_set_distributed(config, 2, s[0], 1);
            dpd_blr_config_free(config);
            status
        }),
        case!(dpd_blr_fit, [N_ROWS * D, N_ROWS, D], |f, s| {
            let mut out = null_mut();
            let status = dpd_blr_fit(
                input(&f.values, s[0]),
                s[0],
                input(&f.values, s[1]),
                s[1],
                s[2],
                f.blr_config,
                f.rng,
                &mut out,
            );
            dpd_blr_model_free(out);
            status
        }),
        case!(dpd_regression_fit, [N_ROWS * D, N_ROWS, D], |f, s| {
            let (lower, upper) = ([-1.0; BUF], [1.0; BUF]);
            let mut out = null_mut();
            let status = dpd_regression_fit(
                input(&f.values, s[0]),
                s[0],
                input(&f.values, s[1]),
                s[1],
                input(&lower, s[2]),
                input(&upper, s[2]),
                s[2],
                -1.0,
                1.0,
                1,
                1.0,
                1e-5,
                0,
                f.rng,
                &mut out,
            );
            dpd_regression_free(out);
            status
        }),
        case!(
            dpd_regression_fit_grouped,
            [N_ROWS * D, N_ROWS, D],
            |f, s| {
                let (lower, upper) = ([-1.0; BUF], [1.0; BUF]);
                let group_of = [0u32; BUF];
                let mut out = null_mut();
                let status = dpd_regression_fit_grouped(
                    input(&f.values, s[0]),
                    s[0],
                    input(&f.values, s[1]),
                    s[1],
                    input(&lower, s[2]),
                    input(&upper, s[2]),
                    input(&group_of, s[2]),
                    s[2],
                    -1.0,
                    1.0,
                    1,
                    1.0,
                    1e-5,
                    0,
                    f.rng,
                    &mut out,
                );
                dpd_regression_free(out);
                status
            }
        ),
        case!(dpd_regression_coefficients, [BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_regression_coefficients(f.regression, output(&mut out, s[0]), s[0], &mut len)
        }),
        case!(dpd_regression_std_errors, [BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_regression_std_errors(f.regression, output(&mut out, s[0]), s[0], &mut len)
        }),
        case!(dpd_regression_predict, [D * 4, BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_regression_predict(
                f.regression,
                input(&f.values, s[0]),
                s[0],
                output(&mut out, s[1]),
                s[1],
                &mut len,
            )
        }),
        case!(dpd_regression_warnings, [4096], |f, s| {
            let mut out = [0u8; 4096];
            let mut len = 0;
            dpd_regression_warnings(f.regression, output(&mut out, s[0]), s[0], &mut len)
        }),
        case!(dpd_blr_model_mean, [BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_blr_model_mean(f.blr_model, output(&mut out, s[0]), s[0], &mut len)
        }),
        case!(dpd_blr_model_bounds, [BUF], |f, s| {
            let mut out = [0.0; BUF];
            let (mut len, mut y) = (0, 0.0);
            dpd_blr_model_bounds(f.blr_model, output(&mut out, s[0]), s[0], &mut len, &mut y)
        }),
        case!(dpd_blr_model_predict, [D * 4, BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_blr_model_predict(
                f.blr_model,
                input(&f.values, s[0]),
                s[0],
                output(&mut out, s[1]),
                s[1],
                &mut len,
            )
        }),
        case!(dpd_blr_model_stats, [BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_blr_model_stats(f.blr_model, output(&mut out, s[0]), s[0], &mut len)
        }),
        case!(dpd_blr_search_thresholds, [D, N_ROWS], |f, s| {
            let sigma = [0.3; BUF];
            let (mut wx, mut wy) = (0.0, 0.0);
            dpd_blr_search_thresholds(
                input(&sigma, s[0]),
                s[0],
                0.3,
                s[1],
                f.blr_config,
                0,
                f.rng,
                &mut wx,
                &mut wy,
                null_mut(),
            )
        }),
        case!(dpd_blr_stats_len, [D], |_f, s| {
            let mut len = 0;
            let status = dpd_blr_stats_len(s[0], 1, &mut len);
            if status == DPD_OK {
                // Never a wrapped value: the exact d(d+1)/2 + d + 1, computed in u128.
                let d = s[0] as u128;
                assert_eq!(len as u128, d * (d + 1) / 2 + d + 1, "d = {d}");
            }
            status
        }),
        case!(dpd_blr_record_stats, [D, BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_blr_record_stats(
                input(&f.values, s[0]),
                s[0],
                0.5,
                0,
                output(&mut out, s[1]),
                s[1],
                &mut len,
            )
        }),
        case!(dpd_blr_posterior_mean, [n_stats, N_ROWS, D, BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_blr_posterior_mean(
                input(&f.stats, s[0]),
                s[0],
                s[1],
                s[2],
                1,
                1.0,
                1.0,
                output(&mut out, s[3]),
                s[3],
                &mut len,
            )
        }),
        case!(
            dpd_blr_fit_non_private,
            [N_ROWS * D, N_ROWS, D, BUF],
            |f, s| {
                let mut out = [0.0; BUF];
                let mut len = 0;
                dpd_blr_fit_non_private(
                    input(&f.values, s[0]),
                    s[0],
                    input(&f.values, s[1]),
                    s[1],
                    s[2],
                    1.0,
                    1.0,
                    output(&mut out, s[3]),
                    s[3],
                    &mut len,
                )
            }
        ),
        case!(dpd_mae, [10, 10], |f, s| {
            let mut out = 0.0;
            dpd_mae(
                input(&f.values, s[0]),
                s[0],
                input(&f.labels, s[1]),
                s[1],
                &mut out,
            )
        }),
        case!(dpd_rmse, [10, 10], |f, s| {
            let mut out = 0.0;
            dpd_rmse(
                input(&f.values, s[0]),
                s[0],
                input(&f.labels, s[1]),
                s[1],
                &mut out,
            )
        }),
        case!(dpd_spearman, [10, 10], |f, s| {
            let mut out = 0.0;
            dpd_spearman(
                input(&f.values, s[0]),
                s[0],
                input(&f.labels, s[1]),
                s[1],
                &mut out,
            )
        }),
        case!(dpd_aggregator_release, [D], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_aggregator_release(
                f.aggregator,
                output(&mut out, s[0]),
                s[0],
                &mut len,
                null_mut(),
            )
        }),
        case!(dpd_client_shard, [D], |f, s| {
            let mut out = null_mut();
            let status = dpd_client_shard(f.client, input(&f.values, s[0]), s[0], &mut out);
            dpd_shares_free(out);
            status
        }),
        case!(dpd_shares_message, [4096], |f, s| {
            let mut out = vec![0u8; 4096];
            let mut len = 0;
            dpd_shares_message(f.shares, 1, output(&mut out, s[0]), s[0], &mut len)
        }),
        case!(dpd_fixed_point_frac_bits_for_sum, [4], |_f, s| {
            let mut out = 0;
            dpd_fixed_point_frac_bits_for_sum(s[0], 1.0, 0.0, &mut out)
        }),
        case!(dpd_fixed_point_encode, [D, BUF], |f, s| {
            let mut out = [0u64; BUF];
            let mut len = 0;
            dpd_fixed_point_encode(
                20,
                1.0,
                input(&f.values, s[0]),
                s[0],
                output(&mut out, s[1]),
                s[1],
                &mut len,
            )
        }),
        case!(dpd_fixed_point_decode, [D, BUF], |_f, s| {
            let sums = [5u64; BUF];
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_fixed_point_decode(
                20,
                input(&sums, s[0]),
                s[0],
                output(&mut out, s[1]),
                s[1],
                &mut len,
            )
        }),
        case!(dpd_wrapping_add_u64, [BUF], |_f, s| {
            let mut acc = [1u64; BUF];
            let src = [2u64; BUF];
            dpd_wrapping_add_u64(output(&mut acc, s[0]), input(&src, s[0]), s[0])
        }),
        case!(dpd_wrapping_add_u64_scalar, [BUF], |_f, s| {
            let mut acc = [1u64; BUF];
            let src = [2u64; BUF];
            dpd_wrapping_add_u64_scalar(output(&mut acc, s[0]), input(&src, s[0]), s[0])
        }),
        case!(dpd_wrapping_add_u64_wide, [BUF], |_f, s| {
            let mut acc = [1u64; BUF];
            let src = [2u64; BUF];
            dpd_wrapping_add_u64_wide(output(&mut acc, s[0]), input(&src, s[0]), s[0])
        }),
        case!(dpd_wrapping_sub_u64, [BUF], |_f, s| {
            let mut acc = [1u64; BUF];
            let src = [2u64; BUF];
            dpd_wrapping_sub_u64(output(&mut acc, s[0]), input(&src, s[0]), s[0])
        }),
        case!(dpd_node_absorb, [usize::MAX], |f, s| {
            // The valid size is the message's own length (set below); a duplicate is refused.
            let len = if s[0] == usize::MAX {
                f.message.len()
            } else {
                s[0]
            };
            dpd_node_absorb(f.node, input(&f.message, len), len)
        }),
        case!(dpd_node_retract, [usize::MAX], |f, s| {
            // Retracting and re-absorbing leaves the node as it was.
            let len = if s[0] == usize::MAX {
                f.message.len()
            } else {
                s[0]
            };
            let status = dpd_node_retract(f.node, input(&f.message, len), len);
            if status == DPD_OK {
                ok(
                    dpd_node_absorb(f.node, f.message.as_ptr(), f.message.len()),
                    "re-absorb",
                );
            }
            status
        }),
        case!(dpd_node_received, [BUF], |f, s| {
            let mut out = [0u64; BUF];
            let mut len = 0;
            let mut shards = [0u64; BUF];
            dpd_node_received(
                f.node,
                output(&mut out, s[0]),
                output(&mut shards, s[0]),
                s[0],
                &mut len,
            )
        }),
        case!(dpd_node_finalize, [4], |f, s| {
            let mut out = null_mut();
            let status = dpd_node_finalize(
                f.node,
                input(&f.agreed_ids, s[0]),
                input(&f.agreed_shards, s[0]),
                s[0],
                &mut out,
            );
            dpd_node_sum_free(out);
            status
        }),
        case!(dpd_node_sum_to_bytes, [4096], |f, s| {
            let mut out = vec![0u8; 4096];
            let mut len = 0;
            dpd_node_sum_to_bytes(f.node_sum, output(&mut out, s[0]), s[0], &mut len)
        }),
        case!(dpd_node_sum_from_bytes, [usize::MAX], |f, s| {
            let len = if s[0] == usize::MAX {
                f.node_sum_bytes.len()
            } else {
                s[0]
            };
            let mut out = null_mut();
            let status =
                dpd_node_sum_from_bytes(f.config, input(&f.node_sum_bytes, len), len, &mut out);
            dpd_node_sum_free(out);
            status
        }),
        case!(dpd_round_config_new, [4, 1, D], |_f, s| {
            let mut out = null_mut();
            let status = dpd_round_config_new(
                1,
                s[0],
                2,
                s[1],
                s[2],
                1.0,
                1,
                1.0,
                DPD_FRAC_BITS_AUTO,
                &mut out,
            );
            dpd_round_config_free(out);
            status
        }),
        case!(dpd_round_config_new_exact, [4, 1, D], |_f, s| {
            let mut out = null_mut();
            let status = dpd_round_config_new_exact(
                1,
                s[0],
                2,
                s[1],
                s[2],
                1.0,
                1,
                DPD_FRAC_BITS_AUTO,
                &mut out,
            );
            dpd_round_config_free(out);
            status
        }),
        case!(dpd_share_seal, [32, 16, BUF + 48], |f, s| {
            let key = [9u8; 32];
            let mut out = [0u8; BUF + 48];
            let mut len = 0;
            dpd_share_seal(
                input(&key, s[0]),
                s[0],
                &ctx,
                input(&f.message, s[1]),
                s[1],
                output(&mut out, s[2]),
                s[2],
                &mut len,
            )
        }),
        case!(dpd_share_open, [32, 64, BUF], |_f, s| {
            let key = [9u8; 32];
            let sealed = [1u8; BUF];
            let mut out = [0u8; BUF];
            let mut len = 0;
            dpd_share_open(
                input(&key, s[0]),
                s[0],
                &ctx,
                input(&sealed, s[1]),
                s[1],
                output(&mut out, s[2]),
                s[2],
                &mut len,
            )
        }),
        case!(dpd_simulate_round, [4 * D, 1, D], |f, s| {
            let dropped = [2u64; BUF];
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_simulate_round(
                f.config,
                input(&f.values, s[0]),
                s[0],
                input(&dropped, s[1]),
                s[1],
                f.rng,
                output(&mut out, s[2]),
                s[2],
                &mut len,
                null_mut(),
            )
        }),
        case!(dpd_simulate_round_verified, [4 * D, 1, D, 1], |f, s| {
            let dropped = [2u64; BUF];
            let (mut out, mut invalid) = ([0.0; BUF], [0u64; BUF]);
            let (mut len, mut n_invalid) = (0, 0);
            let (values, rng) = (&f.values, f.rng);
            both_modes(|config| {
                dpd_simulate_round_verified(
                    config,
                    input(values, s[0]),
                    s[0],
                    input(&dropped, s[1]),
                    s[1],
                    rng,
                    output(&mut out, s[2]),
                    s[2],
                    &mut len,
                    output(&mut invalid, s[3]),
                    s[3],
                    &mut n_invalid,
                    null_mut(),
                    null_mut(),
                )
            })
        }),
        case!(
            dpd_simulate_round_verified_testing_malicious,
            [4 * D, 0, 1, D, 1],
            |f, s| {
                let (dropped, malicious) = ([2u64; BUF], [3u64; BUF]);
                let (mut out, mut invalid) = ([0.0; BUF], [0u64; BUF]);
                let (mut len, mut n_invalid) = (0, 0);
                let (values, rng) = (&f.values, f.rng);
                both_modes(|config| {
                    dpd_simulate_round_verified_testing_malicious(
                        config,
                        input(values, s[0]),
                        s[0],
                        input(&dropped, s[1]),
                        s[1],
                        input(&malicious, s[2]),
                        s[2],
                        rng,
                        output(&mut out, s[3]),
                        s[3],
                        &mut len,
                        output(&mut invalid, s[4]),
                        s[4],
                        &mut n_invalid,
                        null_mut(),
                        null_mut(),
                    )
                })
            }
        ),
        case!(dpd_wire_inspect, [usize::MAX], |f, s| {
            let len = if s[0] == usize::MAX {
                f.message.len()
            } else {
                s[0]
            };
            let mut out = std::mem::MaybeUninit::uninit();
            dpd_wire_inspect(input(&f.message, len), len, out.as_mut_ptr())
        }),
        case!(dpd_last_error_message, [BUF], |_f, s| {
            let mut buf = [0u8; BUF];
            let mut len = 0;
            dpd_last_error_message(output(&mut buf, s[0]).cast(), s[0], &mut len)
        }),
        case!(dpd_distributed_sigma, [10, 2], |_f, s| {
            let mut out = 0.0;
            dpd_distributed_sigma(1.0, s[0], s[1], &mut out)
        }),
        case!(dpd_sample_discrete_gaussian, [BUF], |f, s| {
            let mut out = [0i64; BUF];
            dpd_sample_discrete_gaussian(f.rng, 3.0, output(&mut out, s[0]), s[0])
        }),
        case!(dpd_sample_discrete_laplace, [BUF], |f, s| {
            let mut out = [0i64; BUF];
            dpd_sample_discrete_laplace(f.rng, 3.0, output(&mut out, s[0]), s[0])
        }),
        case!(dpd_sample_gaussian, [BUF], |f, s| {
            let mut out = [0.0; BUF];
            dpd_sample_gaussian(f.rng, 1.0, output(&mut out, s[0]), s[0])
        }),
        case!(dpd_sample_laplace, [BUF], |f, s| {
            let mut out = [0.0; BUF];
            dpd_sample_laplace(f.rng, 1.0, output(&mut out, s[0]), s[0])
        }),
        case!(dpd_sample_objective_perturbation, [D], |f, s| {
            let mut out = [0.0; BUF];
            dpd_sample_objective_perturbation(f.rng, 1.0, output(&mut out, s[0]), s[0])
        }),
        case!(dpd_dataset_new, [N_ROWS * D, D, N_ROWS], |f, s| {
            let mut out = null_mut();
            let status = dpd_dataset_new(
                input(&f.values, s[0]),
                s[0],
                s[1],
                input(&f.labels, s[2]),
                s[2],
                &mut out,
            );
            dpd_dataset_free(out);
            status
        }),
        case!(dpd_feature_groups_new, [D, 2], |_f, s| {
            let groups = [0u32, 1, 1, 0, 1, 0, 0, 1];
            let importance = [0.5; BUF];
            let assignment: Vec<u32> = (0..BUF).map(|j| groups[j % 8]).collect();
            let mut out = null_mut();
            let status = dpd_feature_groups_new(
                input(&assignment, s[0]),
                s[0],
                input(&importance, s[1]),
                s[1],
                &mut out,
            );
            dpd_feature_groups_free(out);
            status
        }),
        case!(dpd_pst_s_fit, [2], |f, s| {
            let mut out = null_mut();
            let status = dpd_pst_s_fit(f.dataset, s[0], 1.0, 0.1, 1.0, 0.2, f.rng, &mut out);
            dpd_plr_model_free(out);
            status
        }),
        case!(dpd_pst_s_fit_with_intercept, [2], |f, s| {
            let mut out = null_mut();
            let status = dpd_pst_s_fit_with_intercept(
                f.dataset, s[0], 1.0, 0.1, 1.0, 0.2, 1, f.rng, &mut out,
            );
            dpd_plr_model_free(out);
            status
        }),
        case!(dpd_auc, [10, 10], |f, s| {
            let mut out = 0.0;
            dpd_auc(
                input(&f.values, s[0]),
                s[0],
                input(&f.labels, s[1]),
                s[1],
                &mut out,
            )
        }),
        case!(dpd_plr_model_predict_proba, [D * 4, BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_plr_model_predict_proba(
                f.plr_model,
                input(&f.values, s[0]),
                s[0],
                output(&mut out, s[1]),
                s[1],
                &mut len,
            )
        }),
        case!(dpd_plr_model_weights, [BUF], |f, s| {
            let mut out = [0.0; BUF];
            let (mut len, mut r) = (0, 0.0);
            dpd_plr_model_weights(f.plr_model, output(&mut out, s[0]), s[0], &mut len, &mut r)
        }),
        case!(dpd_plr_model_low_level, [0, BUF, BUF], |f, s| {
            let mut features = [0u64; BUF];
            let mut weights = [0.0; BUF];
            let (mut n, mut r) = (0, 0.0);
            dpd_plr_model_low_level(
                f.stacked,
                s[0],
                output(&mut features, s[1]),
                s[1],
                output(&mut weights, s[2]),
                s[2],
                &mut n,
                &mut r,
            )
        }),
        case!(dpd_plr_model_low_level_intercept, [0], |f, s| {
            // The fixture's stack has no intercepts: fit one that has.
            let mut stack = null_mut();
            let fitted = dpd_pst_s_fit_with_intercept(
                f.dataset, 2, 1.0, 0.1, 1.0, 0.2, 1, f.rng, &mut stack,
            );
            assert_eq!(fitted, DPD_OK);
            let mut b = 0.0;
            let status = dpd_plr_model_low_level_intercept(stack, s[0], &mut b);
            dpd_plr_model_free(stack);
            status
        }),
        case!(dpd_plr_model_from_weights_and_intercept, [D], |f, s| {
            let mut out = null_mut();
            let status = dpd_plr_model_from_weights_and_intercept(
                input(&f.values, s[0]),
                s[0],
                0.5,
                1.0,
                &mut out,
            );
            dpd_plr_model_free(out);
            status
        }),
        case!(dpd_plr_fit_with_ranges, [D], |f, s| {
            let (lo, hi) = ([-1.0; D], [1.0; D]);
            let mut out = null_mut();
            let status = dpd_plr_fit_with_ranges(
                f.dataset,
                1.0,
                0.1,
                1,
                input(&lo, s[0]),
                input(&hi, s[0]),
                s[0],
                f.rng,
                &mut out,
            );
            dpd_plr_model_free(out);
            status
        }),
        case!(dpd_plr_model_ranges, [BUF], |f, s| {
            // The fixture's model has no ranges: fit one that has.
            let (lo, hi) = ([-1.0; D], [1.0; D]);
            let mut model = null_mut();
            let fitted = dpd_plr_fit_with_ranges(
                f.dataset,
                1.0,
                0.1,
                1,
                lo.as_ptr(),
                hi.as_ptr(),
                D,
                f.rng,
                &mut model,
            );
            assert_eq!(fitted, DPD_OK);
            let (mut out_lo, mut out_hi) = ([0.0; BUF], [0.0; BUF]);
            let mut len = 0;
            let status = dpd_plr_model_ranges(
                model,
                output(&mut out_lo, s[0]),
                output(&mut out_hi, s[0]),
                s[0],
                &mut len,
            );
            dpd_plr_model_free(model);
            status
        }),
        case!(dpd_plr_model_from_weights_and_ranges, [D, D], |f, s| {
            let (lo, hi) = ([-1.0; D], [1.0; D]);
            let mut out = null_mut();
            let status = dpd_plr_model_from_weights_and_ranges(
                input(&f.values, s[0]),
                s[0],
                1,
                0.5,
                input(&lo, s[1]),
                input(&hi, s[1]),
                s[1],
                1.0,
                &mut out,
            );
            dpd_plr_model_free(out);
            status
        }),
        case!(dpd_pst_s_fit_with_ranges, [2, D], |f, s| {
            let (lo, hi) = ([-1.0; D], [1.0; D]);
            let mut out = null_mut();
            let status = dpd_pst_s_fit_with_ranges(
                f.dataset,
                s[0],
                1.0,
                0.1,
                1.0,
                0.2,
                1,
                input(&lo, s[1]),
                input(&hi, s[1]),
                s[1],
                f.rng,
                &mut out,
            );
            dpd_plr_model_free(out);
            status
        }),
        case!(dpd_pst_f_fit_with_ranges, [D], |f, s| {
            let groups = two_groups();
            let (lo, hi) = ([-1.0; D], [1.0; D]);
            let mut out = null_mut();
            let status = dpd_pst_f_fit_with_ranges(
                f.dataset,
                groups,
                1.0,
                0.1,
                1.0,
                0.2,
                1,
                input(&lo, s[0]),
                input(&hi, s[0]),
                s[0],
                f.rng,
                &mut out,
            );
            dpd_plr_model_free(out);
            dpd_feature_groups_free(groups);
            status
        }),
        case!(dpd_pst_h_fit_with_ranges, [D], |f, s| {
            let groups = two_groups();
            let (lo, hi) = ([-1.0; D], [1.0; D]);
            let mut out = null_mut();
            let status = dpd_pst_h_fit_with_ranges(
                f.dataset,
                f.dataset,
                groups,
                1.0,
                1.0,
                0.1,
                0.1,
                1.0,
                0.2,
                1,
                input(&lo, s[0]),
                input(&hi, s[0]),
                s[0],
                f.rng,
                &mut out,
            );
            dpd_plr_model_free(out);
            dpd_feature_groups_free(groups);
            status
        }),
        case!(dpd_plr_model_low_level_ranges, [0, BUF], |f, s| {
            // The fixture's stack has no ranges: fit one that has.
            let (lo, hi) = ([-1.0; D], [1.0; D]);
            let mut stack = null_mut();
            let fitted = dpd_pst_s_fit_with_ranges(
                f.dataset,
                2,
                1.0,
                0.1,
                1.0,
                0.2,
                1,
                lo.as_ptr(),
                hi.as_ptr(),
                D,
                f.rng,
                &mut stack,
            );
            assert_eq!(fitted, DPD_OK);
            let (mut out_lo, mut out_hi) = ([0.0; BUF], [0.0; BUF]);
            let mut len = 0;
            let status = dpd_plr_model_low_level_ranges(
                stack,
                s[0],
                output(&mut out_lo, s[1]),
                output(&mut out_hi, s[1]),
                s[1],
                &mut len,
            );
            dpd_plr_model_free(stack);
            status
        }),
        case!(dpd_plr_model_from_weights, [D], |f, s| {
            let mut out = null_mut();
            let status = dpd_plr_model_from_weights(input(&f.values, s[0]), s[0], 1.0, &mut out);
            dpd_plr_model_free(out);
            status
        }),
        case!(dpd_blr_model_noise_aware, [20], |f, s| {
            let mut out = null_mut();
            let status = dpd_blr_model_noise_aware(f.blr_model, s[0], f.rng, &mut out);
            dpd_blr_noise_aware_free(out);
            status
        }),
        case!(
            dpd_blr_noise_aware_from_stats,
            [D * (D + 1) / 2 + D + 1, N_ROWS, D, D, 0, 20],
            |f, s| {
                let mut noise = crate::blr::noise_aware_stats::dpd_blr_stats_noise {
                    xx_kind: 0,
                    xx: 0.0,
                    xy_kind: 0,
                    xy: 0.0,
                };
                let status = crate::blr::noise_aware_stats::dpd_blr_model_stats_noise(
                    f.blr_model,
                    &mut noise,
                );
                if status != dpd_status::DPD_OK {
                    return status;
                }
                let bounds = [2.0; BUF];
                let mut out = null_mut();
                let status = crate::blr::noise_aware_stats::dpd_blr_noise_aware_from_stats(
                    input(&f.stats, s[0]),
                    s[0],
                    s[1],
                    s[2],
                    1,
                    &noise,
                    input(&bounds, s[3]),
                    s[3],
                    input(&bounds, s[4]),
                    s[4],
                    0.0,
                    1.0,
                    1.0,
                    s[5],
                    f.rng,
                    &mut out,
                );
                dpd_blr_noise_aware_free(out);
                status
            }
        ),
        case!(dpd_blr_noise_aware_coefficients, [BUF], |f, s| {
            let (mut m, mut sd, mut lo, mut hi) = ([0.0; BUF], [0.0; BUF], [0.0; BUF], [0.0; BUF]);
            let mut len = 0;
            dpd_blr_noise_aware_coefficients(
                f.noise_aware,
                0.9,
                output(&mut m, s[0]),
                output(&mut sd, s[0]),
                output(&mut lo, s[0]),
                output(&mut hi, s[0]),
                s[0],
                &mut len,
            )
        }),
        case!(dpd_blr_noise_aware_predict, [D * 4, BUF], |f, s| {
            let (mut m, mut sd, mut lo, mut hi) = ([0.0; BUF], [0.0; BUF], [0.0; BUF], [0.0; BUF]);
            let mut len = 0;
            dpd_blr_noise_aware_predict(
                f.noise_aware,
                input(&f.values, s[0]),
                s[0],
                0,
                0.9,
                output(&mut m, s[1]),
                output(&mut sd, s[1]),
                output(&mut lo, s[1]),
                output(&mut hi, s[1]),
                s[1],
                &mut len,
            )
        }),
        case!(dpd_blr_model_coefficients, [BUF], |f, s| {
            let (mut m, mut sd, mut lo, mut hi) = ([0.0; BUF], [0.0; BUF], [0.0; BUF], [0.0; BUF]);
            let mut len = 0;
            dpd_blr_model_coefficients(
                f.blr_model,
                0.9,
                output(&mut m, s[0]),
                output(&mut sd, s[0]),
                output(&mut lo, s[0]),
                output(&mut hi, s[0]),
                s[0],
                &mut len,
            )
        }),
        case!(dpd_blr_config_set_public_std, [D], |_f, s| {
            let bounds = [1.0; D];
            let stds = [0.5; BUF];
            let mut config = null_mut();
            ok(
                dpd_blr_config_new(1.0, 1e-5, bounds.as_ptr(), D, 1.0, &mut config),
                "config",
            );
            let status = dpd_blr_config_set_public_std(config, input(&stds, s[0]), s[0], 0.5);
            dpd_blr_config_free(config);
            status
        }),
        case!(
            dpd_iterative_calibrate_noise_multiplier,
            [N_ROWS, D],
            |_f, s| {
                let mut out = 0.0;
                let mut config = null_mut();
                ok(
                    dpd_iterative_config_new_logistic(0.1, &mut config),
                    "config",
                );
                let status = dpd_iterative_calibrate_noise_multiplier(
                    config, s[0], s[1], 1.0, 1e-5, 10, &mut out,
                );
                dpd_iterative_config_free(config);
                status
            }
        ),
        case!(dpd_iterative_config_set_fixed_size, [4], |_f, s| {
            let mut config = null_mut();
            ok(
                dpd_iterative_config_new_logistic(0.1, &mut config),
                "config",
            );
            let status = dpd_iterative_config_set_fixed_size(config, s[0]);
            dpd_iterative_config_free(config);
            status
        }),
        case!(dpd_iterative_config_set_ranges, [D], |_f, s| {
            let (lo, hi) = ([-1.0; D], [1.0; D]);
            let mut config = null_mut();
            ok(
                dpd_iterative_config_new_logistic(0.1, &mut config),
                "config",
            );
            let status =
                dpd_iterative_config_set_ranges(config, input(&lo, s[0]), input(&hi, s[0]), s[0]);
            dpd_iterative_config_free(config);
            status
        }),
        case!(dpd_iterative_config_set_dca, [1], |_f, s| {
            let mut config = null_mut();
            ok(
                dpd_iterative_config_new_logistic(0.1, &mut config),
                "config",
            );
            let status = dpd_iterative_config_set_dca(config, 2, s[0]);
            dpd_iterative_config_free(config);
            status
        }),
        case!(dpd_iterative_trainer_new, [N_ROWS, D], |f, s| {
            let mut out = null_mut();
            let status = dpd_iterative_trainer_new(f.iterative_config, s[0], s[1], f.rng, &mut out);
            dpd_iterative_trainer_free(out);
            status
        }),
        case!(
            dpd_iterative_trainer_step,
            [N_ROWS * D, N_ROWS, 0],
            |f, s| {
                let dropped = [1usize; BUF];
                dpd_iterative_trainer_step(
                    f.trainer,
                    input(&f.values, s[0]),
                    s[0],
                    input(&f.labels, s[1]),
                    s[1],
                    input(&dropped, s[2]),
                    s[2],
                    null_mut(),
                )
            }
        ),
        case!(dpd_iterative_trainer_fit, [N_ROWS * D, N_ROWS], |f, s| {
            let mut done = 0;
            dpd_iterative_trainer_fit(
                f.trainer,
                input(&f.values, s[0]),
                s[0],
                input(&f.labels, s[1]),
                s[1],
                2,
                &mut done,
            )
        }),
        case!(dpd_iterative_trainer_params, [BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_iterative_trainer_params(f.trainer, output(&mut out, s[0]), s[0], &mut len)
        }),
        case!(dpd_iterative_trainer_last_release, [BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_iterative_trainer_last_release(f.trainer, output(&mut out, s[0]), s[0], &mut len)
        }),
        case!(dpd_iterative_trainer_predict, [D * 4, BUF], |f, s| {
            let mut out = [0.0; BUF];
            let mut len = 0;
            dpd_iterative_trainer_predict(
                f.trainer,
                input(&f.values, s[0]),
                s[0],
                output(&mut out, s[1]),
                s[1],
                &mut len,
            )
        }),
        case!(dpd_set_num_threads, [0], |_f, s| {
            // The pool exists already (see the test): this never builds one.
            dpd_set_num_threads(s[0])
        }),
    ]
}

/// The exported functions of `include/dpdist.h` with their number of `size_t` (by value)
/// arguments, for those with at least one.
fn header_size_arguments() -> BTreeMap<String, usize> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../include/dpdist.h");
    let header = std::fs::read_to_string(path).expect("include/dpdist.h is readable");
    // Drop comments, then split the declarations at ';'.
    let mut code = String::new();
    let mut rest = header.as_str();
    while let Some(start) = rest.find("/*") {
        code.push_str(&rest[..start]);
        rest = rest[start..]
            .find("*/")
            .map_or("", |end| &rest[start + end + 2..]);
    }
    code.push_str(rest);
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let mut found = BTreeMap::new();
    for declaration in code.split(';') {
        // Keep what follows the last brace (`extern "C" {`, the end of a struct).
        let declaration = declaration.rsplit(['{', '}']).next().unwrap_or("");
        let Some(open) = declaration.find('(') else {
            continue;
        };
        let Some(name) = declaration[..open].split_whitespace().last() else {
            continue;
        };
        if !name.starts_with("dpd_") {
            continue;
        }
        let arguments = &declaration[open + 1..declaration.rfind(')').unwrap_or(declaration.len())];
        let sizes = arguments
            .split(',')
            .filter(|a| {
                let words: Vec<&str> = a.split_whitespace().collect();
                words.len() >= 2
                    && words[words.len() - 2] == "size_t"
                    && !words[words.len() - 1].starts_with('*')
            })
            .count();
        if sizes > 0 {
            found.insert(name.to_string(), sizes);
        }
    }
    found
}

#[test]
fn the_table_covers_every_size_argument() {
    let header = header_size_arguments();
    // The parser must see the header's functions (guards against a parser that finds nothing).
    assert!(header.len() >= 50, "{header:?}");
    assert_eq!(header.get("dpd_blr_fit_gamma_prior"), Some(&5));
    let table: BTreeMap<String, usize> = cases()
        .iter()
        .map(|c| (c.name.to_string(), c.valid.len()))
        .collect();
    assert_eq!(cases().len(), table.len(), "a function is listed twice");
    for (name, n) in &header {
        assert_eq!(
            table.get(name),
            Some(n),
            "{name} has {n} size_t argument(s) in include/dpdist.h: add (or fix) its case in \
             ffi/capi/src/size_sweep_tests.rs"
        );
    }
    for name in table.keys() {
        assert!(header.contains_key(name), "{name} is not in the header");
    }
}

#[test]
fn every_size_argument_survives_extreme_values() {
    // Build the default thread pool first, so that dpd_set_num_threads never builds one here.
    assert!(rayon::current_num_threads() >= 1);
    let mut fixture = Fixture::new();
    let mut calls = 0;
    for case in cases() {
        // The valid sizes work (so that each extreme is tried on an otherwise valid call).
        let status = (case.call)(&mut fixture, &case.valid);
        assert!(
            matches!(
                status,
                DPD_OK
                    | dpd_status::DPD_ERR_DUPLICATE_CLIENT
                    | dpd_status::DPD_ERR_ALREADY_INITIALIZED
                    | dpd_status::DPD_ERR_MALFORMED
            ),
            "{} with its valid sizes {:?}: {status:?}",
            case.name,
            case.valid
        );
        for k in 0..case.valid.len() {
            for extreme in EXTREMES {
                let mut sizes = case.valid.clone();
                sizes[k] = extreme;
                let status = (case.call)(&mut fixture, &sizes);
                calls += 1;
                assert_ne!(
                    status,
                    dpd_status::DPD_ERR_PANIC,
                    "{} with sizes {sizes:?} reached a panic",
                    case.name
                );
            }
        }
    }
    // Every size argument of the header, at each of the extremes.
    let arguments: usize = header_size_arguments().values().sum();
    assert_eq!(calls, arguments * EXTREMES.len());
}
