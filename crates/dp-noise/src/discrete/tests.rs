use super::*;

#[test]
fn invalid_parameters_are_refused() {
    for bad in [f64::NAN, f64::INFINITY, -1.0, 0.0, 1e-3, 1e16] {
        assert!(DiscreteGaussian::new(bad).is_err(), "sigma {bad}");
    }
    for bad in [f64::NAN, f64::NEG_INFINITY, -0.5, 0.0, 1e-12, 1e16] {
        assert!(DiscreteLaplace::new(bad).is_err(), "scale {bad}");
    }
    assert!(DiscreteGaussian::new(MIN_GAUSSIAN_SIGMA_UNITS).is_ok());
    assert!(DiscreteGaussian::new(MAX_SCALE_UNITS).is_ok());
    assert!(DiscreteLaplace::new(MIN_LAPLACE_SCALE_UNITS).is_ok());
    assert!(DiscreteLaplace::new(MAX_SCALE_UNITS).is_ok());
}

#[test]
fn dyadic_decomposition_is_exact() {
    assert_eq!(dyadic(1.0), (1, 0));
    assert_eq!(dyadic(0.75), (3, -2));
    assert_eq!(dyadic(1024.0), (1, 10));
    assert_eq!(dyadic(f64::MIN_POSITIVE / 4.0), (1, -1024));
    let x = 1234.5678_f64;
    let (m, e) = dyadic(x);
    assert_eq!(m % 2, 1);
    assert_eq!(m as f64 * 2f64.powi(e), x);
}
