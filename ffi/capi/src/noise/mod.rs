//! Bindings of `dp_noise`: calibration, samplers and the privacy accountant.

mod accountant;
mod calibrate;
mod errors;
mod samplers;
