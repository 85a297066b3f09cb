# The library, the C types of include/dpdist.h mirrored in Julia, and status -> exception.
# scripts/check-julia.py checks every @ccall and struct here against the header.

const libdpdist = get(ENV, "DPDIST_LIB",
    normpath(joinpath(@__DIR__, "..", "..", "..", "..", "target", "release",
                      "libdpdist." * Libdl.dlext)))

# Opaque handle types: only ever behind a Ptr.
struct dpd_rng end
struct dpd_accountant end
struct dpd_round_config end
struct dpd_client end
struct dpd_shares end
struct dpd_node end
struct dpd_node_sum end
struct dpd_aggregator end
struct dpd_dataset end
struct dpd_feature_groups end
struct dpd_plr_model end
struct dpd_blr_config end
struct dpd_blr_model end

# dpd_status and the other C enums are C `int`s.
const DPD_OK = Cint(0)
const DPD_ERR_BUFFER_TOO_SMALL = Cint(12)
const DPD_SHARE_MODE_FULL = UInt32(0)
const DPD_SHARE_MODE_SEED = UInt32(1)
const DPD_FRAC_BITS_AUTO = typemax(UInt32)
const DPD_FEATURE_UNUSED = typemax(UInt32)
const DPD_PLR_MODEL_STACKED = UInt32(1)

"""What the aggregator released alongside the sum (mirrors `dpd_release_info`)."""
struct dpd_release_info
    n_clients::Csize_t
    n_included::Csize_t
    max_dropped::Csize_t
    frac_bits::UInt32
    noise_sigma_total::Cdouble
    noise_sigma_client::Cdouble
    noise_sigma_released::Cdouble
end
const ReleaseInfo = dpd_release_info

"""Header of a share message on the wire (mirrors `dpd_wire_header`)."""
struct dpd_wire_header
    round::UInt64
    client::UInt64
    dim::UInt64
    node::UInt32
    frac_bits::UInt32
    kind::Cint
end
const WireHeader = dpd_wire_header

"""
    DpDistError(status, code, msg)

A failed dpdist call: `status` is the status name (e.g. `:DPD_ERR_BUDGET_EXCEEDED`), `code`
its number, `msg` the library's message.
"""
struct DpDistError <: Exception
    status::Symbol
    code::Int
    msg::String
end

Base.showerror(io::IO, e::DpDistError) = print(io, e.status, ": ", e.msg)

status_name(code::Integer) =
    Symbol(unsafe_string(@ccall libdpdist.dpd_status_name(UInt32(code)::UInt32)::Cstring))

function last_error_message()
    len = Ref{Csize_t}(0)
    @ccall libdpdist.dpd_last_error_message(C_NULL::Ptr{UInt8}, 0::Csize_t,
                                            len::Ref{Csize_t})::Cint
    buf = Vector{UInt8}(undef, len[] + 1)
    @ccall libdpdist.dpd_last_error_message(buf::Ptr{UInt8}, length(buf)::Csize_t,
                                            len::Ref{Csize_t})::Cint
    return String(buf[1:len[]])
end

"""Throws a `DpDistError` unless `status` is `DPD_OK`."""
function check(status::Cint)
    status == DPD_OK && return nothing
    throw(DpDistError(status_name(status), Int(status), last_error_message()))
end

# Errors the binding raises itself (before calling C) use the same exception and status names.
argument_error(msg) = throw(DpDistError(:DPD_ERR_INVALID_ARGUMENT, 2, msg))

"""Version string of the linked library."""
version() = unsafe_string(@ccall libdpdist.dpd_version()::Cstring)

"""ABI version of the linked library (this binding was written for 1)."""
abi_version() = Int(@ccall libdpdist.dpd_abi_version()::UInt32)

"""Caps the library's worker threads (0 = one per core); only before the first parallel work."""
set_num_threads(n::Integer) = check(@ccall libdpdist.dpd_set_num_threads(n::Csize_t)::Cint)

"""Number of worker threads the library uses."""
function num_threads()
    out = Ref{Csize_t}(0)
    check(@ccall libdpdist.dpd_num_threads(out::Ref{Csize_t})::Cint)
    return Int(out[])
end

# Every handle type `T` holds `ptr::Ptr{C}`; passing `x::T` to a `Ptr{C}` argument of @ccall
# roots `x` for the call and refuses a freed handle.
function checked_ptr(x, what)
    x.ptr == C_NULL && throw(DpDistError(:DPD_ERR_NULL_POINTER, 1, "$what was already freed"))
    return x.ptr
end
