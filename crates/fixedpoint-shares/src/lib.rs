//! DCA secure summation: fixed-point ring codec, SIMD wrapping-add kernels, additive shares, wire format
