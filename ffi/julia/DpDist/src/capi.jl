# The library, the C types of include/dpdist.h mirrored in Julia, and status -> exception.
# scripts/check-julia.py checks every @ccall and struct here against the header.

# ---- finding the library at run time -----------------------------------------------------------
#
# `DPD_ABI_VERSION` of the include/dpdist.h these bindings mirror.
const DPDIST_ABI_VERSION = 3
# The name every @ccall below uses. On Linux it is the library's SONAME: `__init__` dlopens the
# file it finds at load time, and the dynamic loader then resolves this name to that loaded copy
# (the mechanism JLL packages use), so nothing about the path is fixed at precompilation.
const libdpdist = Sys.islinux() ? "libdpdist.so.$(DPDIST_ABI_VERSION)" : "libdpdist"
const libdpdist_file = Sys.islinux() ? libdpdist : "libdpdist." * Libdl.dlext
# The file that was loaded, and its handle (set by `__init__`).
const libdpdist_path = Ref{String}("")
const libdpdist_handle = Ref{Ptr{Cvoid}}(C_NULL)

"""
    library_candidates()

Where `__init__` looks for the library, in order: `ENV["DPDIST_LIB"]` (a file; nothing else is
tried when it is set); an artifact named `libdpdist` declared in the package's `Artifacts.toml`
(`<artifact>/lib/libdpdist.so.3`); the package's `deps/lib/` directory; the build tree of the
repository this package sits in (`<repo>/target/release/`, `cargo build --release -p
dpdist-capi`); then the system's search path (`LD_LIBRARY_PATH`, ldconfig).
"""
function library_candidates()
    from_env = get(ENV, "DPDIST_LIB", "")
    isempty(from_env) || return [from_env]
    package = normpath(joinpath(@__DIR__, ".."))
    found = String[]
    toml = joinpath(package, "Artifacts.toml")
    if isfile(toml)
        hash = Artifacts.artifact_hash("libdpdist", toml)
        if hash !== nothing && Artifacts.artifact_exists(hash)
            push!(found, joinpath(Artifacts.artifact_path(hash), "lib", libdpdist_file))
        end
    end
    push!(found, joinpath(package, "deps", "lib", libdpdist_file))
    repo_build = normpath(joinpath(package, "..", "..", "..", "target", "release"))
    # cargo names the file libdpdist.so; the SONAME link may not exist in a build tree.
    push!(found, joinpath(repo_build, libdpdist_file), joinpath(repo_build, "libdpdist." * Libdl.dlext))
    filter!(isfile, found)
    system = Libdl.find_library([libdpdist_file, "libdpdist"])
    isempty(system) || push!(found, system)
    return found
end

function __init__()
    candidates = library_candidates()
    if isempty(candidates)
        error("DpDist: libdpdist not found. Build it (cargo build --release -p dpdist-capi) and " *
              "set ENV[\"DPDIST_LIB\"] to target/release/libdpdist.so, or see " *
              "`?DpDist.library_candidates` for where it is looked for.")
    end
    path = first(candidates)
    if haskey(ENV, "DPDIST_LIB") && !isfile(path)
        error("DpDist: DPDIST_LIB = $path is not a file")
    end
    handle = Libdl.dlopen(path; throw_error=true)
    # The ABI check goes through the handle just opened, before any @ccall by name.
    abi = ccall(Libdl.dlsym(handle, :dpd_abi_version), UInt32, ())
    if abi != DPDIST_ABI_VERSION
        Libdl.dlclose(handle)
        error("DpDist: $path has ABI version $abi, these bindings need $DPDIST_ABI_VERSION")
    end
    libdpdist_path[] = path
    libdpdist_handle[] = handle
    return nothing
end

# Opaque handle types: only ever behind a Ptr.
struct dpd_rng end
struct dpd_accountant end
struct dpd_round_config end
struct dpd_client end
struct dpd_shares end
struct dpd_node end
struct dpd_node_sum end
struct dpd_aggregator end
struct dpd_round_ledger end
struct dpd_dataset end
struct dpd_feature_groups end
struct dpd_plr_model end
struct dpd_blr_config end
struct dpd_blr_model end
struct dpd_regression end
struct dpd_blr_noise_aware end
struct dpd_iterative_config end
struct dpd_iterative_trainer end

# dpd_status and the other C enums are C `int`s.
const DPD_OK = Cint(0)
const DPD_ERR_BUFFER_TOO_SMALL = Cint(12)
const DPD_ERR_INVALID_STATE = Cint(15)
const DPD_SHARE_MODE_FULL = UInt32(0)
const DPD_SHARE_MODE_SEED = UInt32(1)
const DPD_FRAC_BITS_AUTO = typemax(UInt32)
const DPD_VALIDITY_NONE = UInt32(0)
const DPD_VALIDITY_LINF = UInt32(1)
const DPD_VALIDITY_L2 = UInt32(2)
const DPD_CONFIG_DIGEST_LEN = 16
const DPD_FEATURE_UNUSED = typemax(UInt32)
const DPD_PLR_MODEL_STACKED = UInt32(1)
const DPD_SAMPLING_POISSON = UInt32(0)
const DPD_SAMPLING_WITHOUT_REPLACEMENT = UInt32(1)
const DPD_BLR_STD_POOLED = UInt32(0)
const DPD_BLR_STD_PER_DIMENSION = UInt32(1)

const DPD_NOISE_GAUSSIAN = UInt32(0)
const DPD_NOISE_LAPLACE = UInt32(1)
const DPD_BLR_DOF_FROM_RELEASE = 0.0

"""Public noise of released BLR statistics (mirrors `dpd_blr_stats_noise`): per block a
`DPD_NOISE_*` kind and its sd (Gaussian) or scale (Laplace)."""
struct dpd_blr_stats_noise
    xx_kind::UInt32
    xx::Cdouble
    xy_kind::UInt32
    xy::Cdouble
end
const StatsNoise = dpd_blr_stats_noise

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

"""A round config's validity mode and its bound in grid units (mirrors `dpd_validity_info`)."""
struct dpd_validity_info
    kind::UInt32
    truncation_delta_target::Cdouble
    data_units::UInt64
    slice_units::UInt64
    bound_units::UInt64
    truncation_delta::Cdouble
end
const ValidityInfo = dpd_validity_info

"""Header of a share message on the wire (mirrors `dpd_wire_header`)."""
struct dpd_wire_header
    round::UInt64
    client::UInt64
    shard::UInt64
    dim::UInt64
    node::UInt32
    frac_bits::UInt32
    kind::Cint
end
const WireHeader = dpd_wire_header

"""What one iteration of an iterative run released (mirrors `dpd_iterative_step_info`)."""
struct dpd_iterative_step_info
    iteration::UInt64
    noise_sigma_released::Cdouble
    n_included::Csize_t
    epsilon_spent::Cdouble
    delta_spent::Cdouble
end
const StepInfo = dpd_iterative_step_info

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

"""ABI version of the linked library (`__init__` refused any other than `DPDIST_ABI_VERSION`)."""
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
