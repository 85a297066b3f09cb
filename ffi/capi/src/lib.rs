//! The C ABI of dpdist.
