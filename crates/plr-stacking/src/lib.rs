//! Privacy-preserving logistic regression by objective perturbation and privacy-preserving
//! stacking (PST-S/F/H)
pub mod calibration;
pub mod data;
pub mod error;
pub(crate) mod solver;
