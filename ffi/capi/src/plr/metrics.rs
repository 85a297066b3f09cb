//! Evaluation metrics of the classifiers.

use crate::error::FfiError;
use crate::guard::ffi_entry;
use crate::ptr::{check_out, slice_in, write_out};
use crate::status::dpd_status;

/// AUC of `scores[0..n]` against `labels[0..n_labels]` (n_labels must equal n; labels in
/// {0, 1} or {−1, +1}): the Mann–Whitney statistic, ties counting ½.
///
/// # Safety
/// Arrays NULL only with length 0, else readable; `out` NULL (→ error) or a writable `double`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_auc(
    scores: *const f64,
    n: usize,
    labels: *const f64,
    n_labels: usize,
    out: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_auc", || {
        check_out(out, "out")?;
        // SAFETY: header contract for both arrays.
        let (scores, labels) = unsafe {
            (
                slice_in(scores, n, "scores")?,
                slice_in(labels, n_labels, "labels")?,
            )
        };
        let auc = plr_stacking::auc(scores, labels).map_err(FfiError::from)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, auc, "out") }
    })
}
