//! Training data and feature groups as handles, validated once.

use plr_stacking::{Dataset, FeatureGroups};

use crate::alloc::copied;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, into_handle};
use crate::ptr::{check_out, slice_in, write_out};
use crate::status::dpd_status;

/// Marks a feature that belongs to no group in `dpd_feature_groups_new`.
pub const DPD_FEATURE_UNUSED: u32 = 4294967295;

/// A labelled data set for the logistic learners (rows are copied in).
pub struct dpd_dataset {
    pub(crate) inner: Dataset,
}

/// A partition of (some of) the features into K groups with importances q_k.
pub struct dpd_feature_groups {
    pub(crate) inner: FeatureGroups,
}

/// Copies a data set: `x` holds `n_rows` rows of `n_features` values, row-major
/// (`x_len = n_rows·n_features`); `labels[0..n_rows]` are all in {0, 1} or all in {−1, +1}.
/// Errors: `DPD_ERR_LENGTH_MISMATCH`, `DPD_ERR_NON_FINITE`, `DPD_ERR_INVALID_ARGUMENT` (bad or
/// mixed labels, one class only, empty).
///
/// # Safety
/// `x`, `labels` NULL only with length 0, else readable for their lengths; `out` NULL (→ error)
/// or a writable `dpd_dataset*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_dataset_new(
    x: *const f64,
    x_len: usize,
    n_features: usize,
    labels: *const f64,
    n_rows: usize,
    out: *mut *mut dpd_dataset,
) -> dpd_status {
    ffi_entry("dpd_dataset_new", || {
        check_out(out, "out")?;
        // SAFETY: header contract for both arrays.
        let (x, labels) = unsafe {
            (
                slice_in(x, x_len, "x")?,
                slice_in(labels, n_rows, "labels")?,
            )
        };
        if n_rows.checked_mul(n_features) != Some(x.len()) {
            return Err(FfiError::new(
                dpd_status::DPD_ERR_LENGTH_MISMATCH,
                format!(
                    "`x` has {} values, n_rows·n_features = {n_rows}·{n_features}",
                    x.len()
                ),
            ));
        }
        let inner = Dataset::from_rows(x, n_features, labels)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_dataset { inner }), "out") }
    })
}

/// Frees a data set; NULL is a no-op.
///
/// # Safety
/// `dataset` must be NULL or a handle from `dpd_dataset_new` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_dataset_free(dataset: *mut dpd_dataset) {
    // SAFETY: header contract.
    unsafe { free_handle(dataset) }
}

/// Builds feature groups: `group_of_feature[j]` (j < n_features) is the group (0..n_groups) of
/// feature j, or `DPD_FEATURE_UNUSED`; `importance[0..n_groups]` are the q_k (>= 0, summing to 1).
/// Importances must come from side information, never from the private data. Every group must
/// be non-empty. Errors: `DPD_ERR_INVALID_ARGUMENT`, `DPD_ERR_LENGTH_MISMATCH`.
///
/// # Safety
/// Arrays NULL only with length 0, else readable for their lengths; `out` NULL (→ error) or a
/// writable `dpd_feature_groups*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_feature_groups_new(
    group_of_feature: *const u32,
    n_features: usize,
    importance: *const f64,
    n_groups: usize,
    out: *mut *mut dpd_feature_groups,
) -> dpd_status {
    ffi_entry("dpd_feature_groups_new", || {
        check_out(out, "out")?;
        // SAFETY: header contract for both arrays.
        let (assignment, importance) = unsafe {
            (
                slice_in(group_of_feature, n_features, "group_of_feature")?,
                slice_in(importance, n_groups, "importance")?,
            )
        };
        let groups = groups_from_assignment(assignment, n_groups)?;
        let inner =
            FeatureGroups::new(groups, copied(importance, "group importances")?, n_features)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_feature_groups { inner }), "out") }
    })
}

/// Inverts `group_of_feature` into the feature list of each group (ascending).
fn groups_from_assignment(assignment: &[u32], n_groups: usize) -> FfiResult<Vec<Vec<usize>>> {
    let mut groups = vec![Vec::new(); n_groups];
    for (j, &g) in assignment.iter().enumerate() {
        if g == DPD_FEATURE_UNUSED {
            continue;
        }
        let group = usize::try_from(g)
            .ok()
            .and_then(|g| groups.get_mut(g))
            .ok_or_else(|| {
                FfiError::invalid(format!(
                    "feature {j} is assigned to group {g}, but there are {n_groups} groups"
                ))
            })?;
        group.push(j);
    }
    Ok(groups)
}

/// Frees feature groups; NULL is a no-op.
///
/// # Safety
/// `groups` must be NULL or a handle from `dpd_feature_groups_new` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_feature_groups_free(groups: *mut dpd_feature_groups) {
    // SAFETY: header contract.
    unsafe { free_handle(groups) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignment_is_inverted_and_checked() {
        let groups = groups_from_assignment(&[1, 0, DPD_FEATURE_UNUSED, 1], 2).unwrap();
        assert_eq!(groups, vec![vec![1], vec![0, 3]]);
        let e = groups_from_assignment(&[0, 2], 2).unwrap_err();
        assert_eq!(e.status, dpd_status::DPD_ERR_INVALID_ARGUMENT);
    }
}
