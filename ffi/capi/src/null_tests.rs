//! NULL handling across the entry points, from Rust: every required pointer that is NULL gives
//! `DPD_ERR_NULL_POINTER`, out-pointers stay untouched, and every `_free` accepts NULL.

use std::ptr::{null, null_mut};

use crate::dca::aggregator::*;
use crate::dca::client::*;
use crate::dca::node::*;
use crate::dca::node_sum::*;
use crate::dca::round::*;
use crate::noise::accountant::*;
use crate::noise::calibrate::*;
use crate::noise::samplers::*;
use crate::plr::data::*;
use crate::plr::fit::*;
use crate::plr::model::*;
use crate::rng::*;
use crate::status::dpd_status::{self, DPD_ERR_NULL_POINTER, DPD_OK};

fn config() -> *mut dpd_round_config {
    let mut out = null_mut();
    // SAFETY: `out` is a local.
    let s =
        unsafe { dpd_round_config_new(1, 3, 2, 1, 2, 1.0, 1, 0.0, DPD_FRAC_BITS_AUTO, &mut out) };
    assert_eq!(s, DPD_OK);
    out
}

#[test]
fn null_handles_and_outputs_are_refused() {
    let cfg = config();
    let sentinel = std::ptr::dangling_mut::<dpd_client>();
    let mut client = sentinel;
    let mut rng = null_mut();
    let mut x = 0.0f64;
    let mut n = 0usize;
    let values = [0.5f64, 0.25];
    // SAFETY: every non-NULL pointer below is a live local or handle.
    unsafe {
        assert_eq!(dpd_rng_new_insecure_fixed_seed(1, &mut rng), DPD_OK);
        let cases: [(&str, dpd_status); 14] = [
            (
                "client_new config",
                dpd_client_new(null(), 0, rng, &mut client),
            ),
            (
                "client_new rng",
                dpd_client_new(cfg, 0, null_mut(), &mut client),
            ),
            ("client_new out", dpd_client_new(cfg, 0, rng, null_mut())),
            (
                "shard client",
                dpd_client_shard(null_mut(), values.as_ptr(), 2, null_mut()),
            ),
            ("node_new out", dpd_node_new(cfg, 0, null_mut())),
            (
                "absorb node",
                dpd_node_absorb(null_mut(), [0u8].as_ptr(), 1),
            ),
            (
                "received out_len",
                dpd_node_received(null(), null_mut(), 0, null_mut()),
            ),
            (
                "aggregator_new config",
                dpd_aggregator_new(null(), null_mut()),
            ),
            (
                "classic out",
                dpd_gaussian_sigma_classic(0.5, 1e-5, 1.0, null_mut()),
            ),
            (
                "sampler rng",
                dpd_sample_gaussian(null_mut(), 1.0, &mut x, 1),
            ),
            (
                "accountant spent",
                dpd_accountant_spent(null(), &mut x, null_mut(), &mut n),
            ),
            (
                "dataset x",
                dpd_dataset_new(null(), 4, 2, values.as_ptr(), 2, null_mut()),
            ),
            (
                "plr_fit dataset",
                dpd_plr_fit(null(), 1.0, 1.0, rng, null_mut()),
            ),
            (
                "node_sum bytes",
                dpd_node_sum_to_bytes(null(), null_mut(), 0, &mut n),
            ),
        ];
        for (what, status) in cases {
            assert_eq!(status, DPD_ERR_NULL_POINTER, "{what}");
        }
        assert_eq!(client, sentinel);
        assert_eq!((x, n), (0.0, 0));

        dpd_rng_free(rng);
        dpd_round_config_free(cfg);
        dpd_rng_free(null_mut());
        dpd_round_config_free(null_mut());
        dpd_client_free(null_mut());
        dpd_shares_free(null_mut());
        dpd_node_free(null_mut());
        dpd_node_sum_free(null_mut());
        dpd_aggregator_free(null_mut());
        dpd_accountant_free(null_mut());
        dpd_dataset_free(null_mut());
        dpd_feature_groups_free(null_mut());
        dpd_plr_model_free(null_mut());
    }
}
