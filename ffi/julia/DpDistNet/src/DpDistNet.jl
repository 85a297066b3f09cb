"""
    DpDistNet

A Julia program as a data holder in a dpdist job, through libdpdist_net (include/dpdist_net.h):
its rows stay in the process and leave it only as sealed shares. A package of its own so that
`DpDist` (the core library's bindings) never loads network code.

Written and checked statically (scripts/check-julia.py against include/dpdist_net.h); no Julia
binary is available where it is developed, so it has not been run.
"""
module DpDistNet

using Libdl

export Participant, follow_job, stop!, DpDistNetError

# `DPD_NET_ABI_VERSION` of the include/dpdist_net.h these bindings mirror; on Linux the library's
# SONAME, which every @ccall below names, resolved to the copy `__init__` loads.
const DPD_NET_ABI_VERSION = 1
const libdpdist_net = Sys.islinux() ? "libdpdist_net.so.$(DPD_NET_ABI_VERSION)" : "libdpdist_net"
const libdpdist_net_handle = Ref{Ptr{Cvoid}}(C_NULL)

# Opaque C type and the outcome struct of dpdist_net.h.
mutable struct dpd_net_participant end
struct dpd_net_outcome
    state::UInt32
    took_part::UInt32
end

const DPD_NET_OK = Cint(0)
const DPD_NET_COLUMN_MAJOR = UInt32(1)
const JOB_STATES = (:done, :aborted, :cancelled)

"""
    __init__()

Loads libdpdist_net from `ENV["DPDIST_NET_LIB"]` (a file), else from the build tree of the
repository this package sits in (`target/release/libdpdist_net.so`, `cargo build --release -p
dpdist-capi-net`), and checks its ABI version.
"""
function __init__()
    path = get(ENV, "DPDIST_NET_LIB", "")
    if isempty(path)
        path = normpath(joinpath(@__DIR__, "..", "..", "..", "..", "target", "release",
                                 "libdpdist_net." * Libdl.dlext))
    end
    isfile(path) || error("DpDistNet: libdpdist_net not found at $path: build it (cargo build " *
                          "--release -p dpdist-capi-net) or set ENV[\"DPDIST_NET_LIB\"]")
    libdpdist_net_handle[] = Libdl.dlopen(path, Libdl.RTLD_GLOBAL; throw_error=true)
    abi = @ccall libdpdist_net.dpd_net_abi_version()::UInt32
    abi == DPD_NET_ABI_VERSION ||
        error("DpDistNet: $path implements ABI $abi, these bindings ABI $DPD_NET_ABI_VERSION")
end

"""A failed libdpdist_net call: the status name and the library's message."""
struct DpDistNetError <: Exception
    status::Symbol
    message::String
end
Base.showerror(io::IO, e::DpDistNetError) = print(io, e.status, ": ", e.message)

function last_message()
    len = Ref{Csize_t}(0)
    @ccall libdpdist_net.dpd_net_last_error_message(C_NULL::Ptr{Cchar}, 0::Csize_t,
                                                    len::Ref{Csize_t})::Cint
    buf = Vector{UInt8}(undef, len[] + 1)
    @ccall libdpdist_net.dpd_net_last_error_message(buf::Ptr{Cchar}, length(buf)::Csize_t,
                                                    len::Ref{Csize_t})::Cint
    return String(buf[1:len[]])
end

function check(status::Cint)
    status == DPD_NET_OK && return nothing
    name = unsafe_string(@ccall libdpdist_net.dpd_net_status_name(UInt32(status)::UInt32)::Cstring)
    throw(DpDistNetError(Symbol(name), last_message()))
end

"""
    Participant(aggregator, ca, token_file, policy, state_dir)

A data holder of the aggregator at `aggregator` (https://host:port), trusting the CA in `ca`,
presenting the token in `token_file`, answering jobs by the TOML policy in `policy` and keeping its
ledger and sealed attempts in `state_dir` (reuse it across restarts).
"""
mutable struct Participant
    handle::Ptr{dpd_net_participant}
    function Participant(aggregator::AbstractString, ca::AbstractString,
                         token_file::AbstractString, policy::AbstractString,
                         state_dir::AbstractString)
        out = Ref{Ptr{dpd_net_participant}}(C_NULL)
        check(@ccall libdpdist_net.dpd_net_participant_new(
            aggregator::Cstring, ca::Cstring, token_file::Cstring, policy::Cstring,
            state_dir::Cstring, out::Ref{Ptr{dpd_net_participant}})::Cint)
        p = new(out[])
        finalizer(p) do p
            @ccall libdpdist_net.dpd_net_participant_free(p.handle::Ptr{dpd_net_participant})::Cvoid
        end
        return p
    end
end

"""
    set_rows!(p, columns, x)

Hands `p` its rows: the matrix `x` (rows × columns, Julia's column-major layout is passed as is)
with one name per column. A NaN (missing value) is refused with its row and column.
"""
function set_rows!(p::Participant, columns::AbstractVector{<:AbstractString},
                   x::AbstractMatrix{<:Real})
    size(x, 2) == length(columns) ||
        throw(ArgumentError("$(size(x, 2)) columns but $(length(columns)) names"))
    values = Matrix{Float64}(x)
    names = [Base.cconvert(Cstring, String(c)) for c in columns]
    GC.@preserve names values begin
        pointers = [Base.unsafe_convert(Cstring, n) for n in names]
        check(@ccall libdpdist_net.dpd_net_participant_set_rows(
            p.handle::Ptr{dpd_net_participant}, pointers::Ptr{Cstring}, length(columns)::Csize_t,
            values::Ptr{Cdouble}, size(values, 1)::Csize_t, DPD_NET_COLUMN_MAJOR::UInt32)::Cint)
    end
    return p
end

"""
    set_insecure_fixed_seed!(p, seed)

NON-PRIVATE, tests only: noise and masks from a fixed seed.
"""
function set_insecure_fixed_seed!(p::Participant, seed::Integer)
    @warn "NON-PRIVATE: noise and masks from the fixed seed $seed (tests only)"
    check(@ccall libdpdist_net.dpd_net_participant_set_insecure_fixed_seed(
        p.handle::Ptr{dpd_net_participant}, UInt64(seed)::UInt64)::Cint)
    return p
end

"""
    follow_job(p, job_id; poll_ms = 200) -> (state, took_part, reason)

Follows job `job_id` (64 hex digits) until it ends; blocks the calling thread. `state` is
`:done`, `:aborted` or `:cancelled`.
"""
function follow_job(p::Participant, job_id::AbstractString; poll_ms::Integer=200)
    check(@ccall libdpdist_net.dpd_net_participant_set_poll_ms(
        p.handle::Ptr{dpd_net_participant}, UInt32(poll_ms)::UInt32)::Cint)
    out = Ref(dpd_net_outcome(0, 0))
    check(@ccall libdpdist_net.dpd_net_participant_follow_job(
        p.handle::Ptr{dpd_net_participant}, job_id::Cstring, out::Ref{dpd_net_outcome})::Cint)
    len = Ref{Csize_t}(0)
    check(@ccall libdpdist_net.dpd_net_participant_outcome_reason(
        p.handle::Ptr{dpd_net_participant}, C_NULL::Ptr{Cchar}, 0::Csize_t,
        len::Ref{Csize_t})::Cint)
    buf = Vector{UInt8}(undef, len[] + 1)
    check(@ccall libdpdist_net.dpd_net_participant_outcome_reason(
        p.handle::Ptr{dpd_net_participant}, buf::Ptr{Cchar}, length(buf)::Csize_t,
        len::Ref{Csize_t})::Cint)
    return (state=JOB_STATES[out[].state+1], took_part=out[].took_part != 0,
            reason=String(buf[1:len[]]))
end

"""
    stop!(p)

Makes a `follow_job` on another thread return with a `DPD_NET_ERR_STOPPED` error.
"""
function stop!(p::Participant)
    check(@ccall libdpdist_net.dpd_net_participant_stop(p.handle::Ptr{dpd_net_participant})::Cint)
    return p
end

end # module
