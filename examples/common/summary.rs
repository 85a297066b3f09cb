//! Summaries of repeated measurements.

/// Mean and sample standard deviation (0 for a single value).
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    let k = values.len() as f64;
    let mean = values.iter().sum::<f64>() / k;
    let var = if values.len() > 1 {
        values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}
