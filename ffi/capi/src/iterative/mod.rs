//! Bindings of `dca_learning`: iterative private learning over DCA rounds (DCA paper Sec. 4.2)
//! — logistic regression and BLR by DP variational inference trained with clipped, noisy
//! minibatch gradients — and the Rényi-DP calibration of its noise (`dp_noise::rdp`).

pub(crate) mod calibrate;
pub(crate) mod config;
mod errors;
pub(crate) mod trainer;
