# The summation kernels of DCA: wrapping arithmetic mod 2^64 over UInt64 vectors, the operation a
# compute node sums shares with (ffi/capi/src/dca/kernels.rs), plus a small benchmark helper.

"""
    kernel_path() -> String

The implementation the dispatched kernels use on this CPU: `"portable"`, `"avx2"` or `"avx512f"`.
"""
function kernel_path()
    path = @ccall libdpdist.dpd_kernel_selected_path()::Cint
    return unsafe_string(@ccall libdpdist.dpd_kernel_path_name(UInt32(path)::UInt32)::Cstring)
end

"""
    wrapping_add!(acc, src; kernel=:dispatched) -> acc

`acc[i] = acc[i] + src[i] mod 2^64`. `kernel` is `:dispatched` (the fastest path of this CPU),
`:scalar` (the reference) or `:wide` (portable 4-lane SIMD). Lengths must match; `acc` and `src`
must not be the same array.
"""
function wrapping_add!(acc::Vector{UInt64}, src::Vector{UInt64}; kernel::Symbol=:dispatched)
    length(acc) == length(src) ||
        throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3, "wrapping_add!: acc and src lengths differ"))
    n = length(acc)
    if kernel === :dispatched
        check(@ccall libdpdist.dpd_wrapping_add_u64(acc::Ptr{UInt64}, src::Ptr{UInt64},
                                                    n::Csize_t)::Cint)
    elseif kernel === :scalar
        check(@ccall libdpdist.dpd_wrapping_add_u64_scalar(acc::Ptr{UInt64}, src::Ptr{UInt64},
                                                           n::Csize_t)::Cint)
    elseif kernel === :wide
        check(@ccall libdpdist.dpd_wrapping_add_u64_wide(acc::Ptr{UInt64}, src::Ptr{UInt64},
                                                         n::Csize_t)::Cint)
    else
        argument_error("kernel must be :dispatched, :scalar or :wide, not $kernel")
    end
    return acc
end

"""
    wrapping_sub!(acc, src) -> acc

`acc[i] = acc[i] - src[i] mod 2^64` (dispatched). Lengths must match.
"""
function wrapping_sub!(acc::Vector{UInt64}, src::Vector{UInt64})
    length(acc) == length(src) ||
        throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3, "wrapping_sub!: acc and src lengths differ"))
    n = length(acc)
    check(@ccall libdpdist.dpd_wrapping_sub_u64(acc::Ptr{UInt64}, src::Ptr{UInt64},
                                                n::Csize_t)::Cint)
    return acc
end

"""
    kernel_benchmark(; len=2^20, reps=50, kernel=:dispatched)

Times `wrapping_add!` on `len` random words after one warm-up call and keeps the fastest of
`reps` calls. Returns `(kernel, path, len, seconds, gib_per_s)`, bytes counted as read `acc`,
read `src`, write `acc`. Reports; asserts nothing.
"""
function kernel_benchmark(; len::Integer=1 << 20, reps::Integer=50, kernel::Symbol=:dispatched)
    acc = rand(UInt64, len)
    src = rand(UInt64, len)
    wrapping_add!(acc, src; kernel=kernel)
    best = Inf
    for _ in 1:reps
        start = time_ns()
        wrapping_add!(acc, src; kernel=kernel)
        best = min(best, (time_ns() - start) / 1e9)
    end
    return (kernel=kernel, path=kernel_path(), len=Int(len), seconds=best,
            gib_per_s=3 * 8 * len / best / 2^30)
end
