//! Bindings of `dp_noise`: calibration, samplers and the privacy accountant.

pub(crate) mod accountant;
pub(crate) mod calibrate;
mod errors;
pub(crate) mod samplers;
