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
        unsafe { dpd_round_config_new_exact(1, 3, 2, 1, 2, 1.0, 1, DPD_FRAC_BITS_AUTO, &mut out) };
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
        let cases: [(&str, dpd_status); 23] = [
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
                dpd_node_received(null(), null_mut(), null_mut(), 0, null_mut()),
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
                "plr_fit_with_intercept dataset",
                dpd_plr_fit_with_intercept(null(), 1.0, 1.0, 1, rng, null_mut()),
            ),
            (
                "plr_fit_with_ranges dataset",
                dpd_plr_fit_with_ranges(null(), 1.0, 1.0, 1, null(), null(), 0, rng, null_mut()),
            ),
            (
                "plr_model_ranges model",
                dpd_plr_model_ranges(null(), null_mut(), null_mut(), 0, &mut n),
            ),
            (
                "pst_s_fit_with_ranges dataset",
                dpd_pst_s_fit_with_ranges(
                    null(),
                    2,
                    1.0,
                    1.0,
                    1.0,
                    0.5,
                    1,
                    null(),
                    null(),
                    0,
                    rng,
                    null_mut(),
                ),
            ),
            (
                "pst_f_fit_with_ranges out",
                dpd_pst_f_fit_with_ranges(
                    null(),
                    null(),
                    1.0,
                    1.0,
                    1.0,
                    0.5,
                    1,
                    null(),
                    null(),
                    0,
                    rng,
                    null_mut(),
                ),
            ),
            (
                "pst_h_fit_with_ranges out",
                dpd_pst_h_fit_with_ranges(
                    null(),
                    null(),
                    null(),
                    1.0,
                    1.0,
                    1.0,
                    1.0,
                    1.0,
                    0.5,
                    1,
                    null(),
                    null(),
                    0,
                    rng,
                    null_mut(),
                ),
            ),
            (
                "plr_model_low_level_ranges model",
                dpd_plr_model_low_level_ranges(null(), 0, null_mut(), null_mut(), 0, &mut n),
            ),
            (
                "plr_model_intercept model",
                dpd_plr_model_intercept(null(), &mut x),
            ),
            (
                "plr_model_low_level_intercept model",
                dpd_plr_model_low_level_intercept(null(), 0, &mut x),
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

#[test]
fn iterative_and_uncertainty_entry_points_refuse_null() {
    use crate::blr::noise_aware::*;
    use crate::iterative::calibrate::*;
    use crate::iterative::config::*;
    use crate::iterative::trainer::*;
    let mut x = 0.0f64;
    let mut n = 0usize;
    let mut done = 0u64;
    let sentinel = std::ptr::dangling_mut::<dpd_iterative_trainer>();
    let mut trainer = sentinel;
    let mut config = null_mut();
    let mut rng = null_mut();
    // SAFETY: every non-NULL pointer below is a live local or handle.
    unsafe {
        assert_eq!(dpd_rng_new_insecure_fixed_seed(1, &mut rng), DPD_OK);
        assert_eq!(dpd_iterative_config_new_logistic(0.0, &mut config), DPD_OK);
        assert_eq!(dpd_iterative_config_set_non_private(config), DPD_OK);
        let cases: [(&str, dpd_status); 17] = [
            (
                "config_new out",
                dpd_iterative_config_new_logistic(0.0, null_mut()),
            ),
            (
                "blr_vi out",
                dpd_iterative_config_new_blr_vi(1.0, 1.0, null_mut()),
            ),
            (
                "set_sgd config",
                dpd_iterative_config_set_sgd(null_mut(), 0.1),
            ),
            (
                "set_ranges config",
                dpd_iterative_config_set_ranges(null_mut(), null(), null(), 0),
            ),
            (
                "set_ranges lo",
                dpd_iterative_config_set_ranges(config, null(), [1.0].as_ptr(), 1),
            ),
            (
                "set_ranges hi",
                dpd_iterative_config_set_ranges(config, [0.0].as_ptr(), null(), 1),
            ),
            (
                "set_private config",
                dpd_iterative_config_set_private(null_mut(), 1.0, 1e-5, 1.0),
            ),
            (
                "trainer_new config",
                dpd_iterative_trainer_new(null(), 3, 1, rng, &mut trainer),
            ),
            (
                "trainer_new rng",
                dpd_iterative_trainer_new(config, 3, 1, null_mut(), &mut trainer),
            ),
            (
                "trainer_new out",
                dpd_iterative_trainer_new(config, 3, 1, rng, null_mut()),
            ),
            (
                "step trainer",
                dpd_iterative_trainer_step(null_mut(), null(), 0, null(), 0, null(), 0, null_mut()),
            ),
            (
                "fit trainer",
                dpd_iterative_trainer_fit(null_mut(), null(), 0, null(), 0, 1, &mut done),
            ),
            (
                "params out_len",
                dpd_iterative_trainer_params(null(), null_mut(), 0, null_mut()),
            ),
            (
                "rdp_epsilon out",
                dpd_rdp_epsilon(0.1, 1.0, 1, 1e-5, 0, null_mut(), null_mut()),
            ),
            (
                "rdp_z out",
                dpd_rdp_noise_multiplier(1.0, 1e-5, 1, 0.1, 0, null_mut()),
            ),
            (
                "noise_aware model",
                dpd_blr_model_noise_aware(null(), 10, rng, null_mut()),
            ),
            (
                "noise_aware coefficients",
                dpd_blr_noise_aware_coefficients(
                    null(),
                    0.9,
                    null_mut(),
                    null_mut(),
                    null_mut(),
                    null_mut(),
                    0,
                    &mut n,
                ),
            ),
        ];
        for (what, status) in cases {
            assert_eq!(status, DPD_ERR_NULL_POINTER, "{what}");
        }
        assert_eq!(trainer, sentinel);
        assert_eq!((x, n, done), (0.0, 0, 0));
        x = 1.0;
        assert_eq!(
            dpd_iterative_trainer_spent(null(), &mut x, null_mut()),
            DPD_ERR_NULL_POINTER
        );
        assert_eq!(x, 1.0);
        dpd_iterative_config_free(config);
        dpd_rng_free(rng);
        dpd_iterative_config_free(null_mut());
        dpd_iterative_trainer_free(null_mut());
        dpd_blr_noise_aware_free(null_mut());
    }
}
