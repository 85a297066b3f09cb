# Private Bayesian linear regression (DCA paper Alg. 2; the robust LR paper's Laplace variant):
# `BlrSettings` describes a private fit, `blr_fit` runs it on a matrix of records. Neighbouring
# data sets differ in one record (n is public). The building blocks let hosts run the rounds.

"""
A fitted private BLR model: posterior from the released statistics and what it cost, and (when
fitted with `noise_aware = true`) the noise-aware posterior of its coefficients.
"""
mutable struct BlrModel
    ptr::Ptr{dpd_blr_model}
    noise_aware::Any # Nothing or a BlrNoiseAware (blr_uncertainty.jl)
    BlrModel(ptr::Ptr{dpd_blr_model}) = finalizer(free!, new(ptr, nothing))
end

function free!(x::BlrModel)
    @ccall libdpdist.dpd_blr_model_free(x.ptr::Ptr{dpd_blr_model})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_blr_model}}, x::BlrModel) = checked_ptr(x, "BlrModel")

"""
    BlrSettings(; epsilon, delta, assumed_x, assumed_y, aggregation=:trusted, n_nodes=3,
                max_dropped=0, share_mode=:seed, mechanism=:gaussian,
                laplace_split=(0.6, 0.35, 0.05), projection=true, std=:pooled,
                std_share=0.1, public_std_x=nothing, public_std_y=nothing, lambda=1,
                lambda0=1, release_yy=false, clipped_share=0)

Settings of a private fit with total budget (ε, δ) (δ ignored by Laplace). `assumed_x` (one
bound per column) and `assumed_y` must be public, never computed from the private data.
`aggregation`: `:trusted`, `:distributed` (DCA with `n_nodes` compute nodes and at most
`max_dropped` missing or colluding clients, masks `:seed` or `:full`) or `:input`.
`projection = true` runs Alg. 2 (DP std round, threshold search); `false` clips to the assumed
bounds. `std` says where the projection's standard deviations come from: `:pooled` (the
default; one DP σ for all x columns) or `:per_dimension` (one DP σ per column), spending
`std_share` of the budget, or `:public` (`public_std_x`, `public_std_y`: known by construction
of the preprocessing, never computed from the private data; no budget spent). `release_yy` also releases Σy² (for `blr_fit_gamma_prior`).
With projection, `clipped_share` > 0 spends that fraction of the budget releasing the shares of
records the bounds clipped (`blr_clipped_share`): every posterior is the clipped records'
regression, and these say how far that is from the raw data's.
"""
Base.@kwdef struct BlrSettings
    epsilon::Float64
    delta::Float64
    assumed_x::Vector{Float64}
    assumed_y::Float64
    aggregation::Symbol = :trusted
    n_nodes::Int = 3
    max_dropped::Int = 0
    share_mode::Symbol = :seed
    mechanism::Symbol = :gaussian
    laplace_split::NTuple{3,Float64} = (0.6, 0.35, 0.05)
    projection::Bool = true
    std::Symbol = :pooled
    std_share::Float64 = 0.1
    public_std_x::Union{Nothing,Vector{Float64}} = nothing
    public_std_y::Union{Nothing,Float64} = nothing
    lambda::Float64 = 1.0
    lambda0::Float64 = 1.0
    release_yy::Bool = false
    clipped_share::Float64 = 0.0
end

# The C settings handle lives only for one call; `f` receives it.
function with_config(f, s::BlrSettings)
    s.aggregation in (:trusted, :distributed, :input) ||
        argument_error("aggregation must be :trusted, :distributed or :input, got $(s.aggregation)")
    s.mechanism in (:gaussian, :laplace) ||
        argument_error("mechanism must be :gaussian or :laplace, got $(s.mechanism)")
    s.share_mode in (:seed, :full) ||
        argument_error("share_mode must be :seed or :full, got $(s.share_mode)")
    (s.n_nodes >= 0 && s.max_dropped >= 0) ||
        argument_error("n_nodes and max_dropped must be >= 0")
    mode = s.share_mode === :seed ? DPD_SHARE_MODE_SEED : DPD_SHARE_MODE_FULL
    out = Ref{Ptr{dpd_blr_config}}(C_NULL)
    check(@ccall libdpdist.dpd_blr_config_new(s.epsilon::Cdouble, s.delta::Cdouble,
                                              s.assumed_x::Ptr{Cdouble},
                                              length(s.assumed_x)::Csize_t,
                                              s.assumed_y::Cdouble,
                                              out::Ref{Ptr{dpd_blr_config}})::Cint)
    cfg = out[]
    try
        if s.aggregation === :trusted
            check(@ccall libdpdist.dpd_blr_config_set_trusted(cfg::Ptr{dpd_blr_config})::Cint)
        elseif s.aggregation === :distributed
            check(@ccall libdpdist.dpd_blr_config_set_distributed(
                cfg::Ptr{dpd_blr_config}, UInt32(min(s.n_nodes, typemax(UInt32)))::UInt32,
                s.max_dropped::Csize_t, mode::UInt32)::Cint)
        elseif s.aggregation === :input
            check(@ccall libdpdist.dpd_blr_config_set_input_perturbation(
                cfg::Ptr{dpd_blr_config})::Cint)
        end
        if s.mechanism === :laplace
            p = s.laplace_split
            check(@ccall libdpdist.dpd_blr_config_set_laplace(cfg::Ptr{dpd_blr_config},
                                                              p[1]::Cdouble, p[2]::Cdouble,
                                                              p[3]::Cdouble)::Cint)
        end
        check(@ccall libdpdist.dpd_blr_config_set_projection(cfg::Ptr{dpd_blr_config},
                                                             UInt32(s.projection)::UInt32)::Cint)
        if s.projection && s.std === :public
            x_std = s.public_std_x
            (x_std === nothing || s.public_std_y === nothing) &&
                argument_error("std = :public needs public_std_x and public_std_y")
            check(@ccall libdpdist.dpd_blr_config_set_public_std(
                cfg::Ptr{dpd_blr_config}, x_std::Ptr{Cdouble}, length(x_std)::Csize_t,
                s.public_std_y::Cdouble)::Cint)
        elseif s.projection
            mode = s.std === :pooled ? DPD_BLR_STD_POOLED :
                   s.std === :per_dimension ? DPD_BLR_STD_PER_DIMENSION :
                   argument_error("std must be :pooled, :per_dimension or :public, got $(s.std)")
            check(@ccall libdpdist.dpd_blr_config_set_dp_std(cfg::Ptr{dpd_blr_config},
                                                             mode::UInt32,
                                                             s.std_share::Cdouble)::Cint)
        end
        if s.projection
            check(@ccall libdpdist.dpd_blr_config_set_clipped_share(cfg::Ptr{dpd_blr_config},
                                                                    s.clipped_share::Cdouble)::Cint)
        end
        check(@ccall libdpdist.dpd_blr_config_set_prior(cfg::Ptr{dpd_blr_config},
                                                        s.lambda::Cdouble,
                                                        s.lambda0::Cdouble)::Cint)
        check(@ccall libdpdist.dpd_blr_config_set_release_yy(cfg::Ptr{dpd_blr_config},
                                                             UInt32(s.release_yy)::UInt32)::Cint)
        return f(cfg)
    finally
        @ccall libdpdist.dpd_blr_config_free(cfg::Ptr{dpd_blr_config})::Cvoid
    end
end

row_major(x::AbstractMatrix{<:Real}) = convert(Matrix{Cdouble}, permutedims(x))

# Calls `fill(buf, cap, len)` once to learn the length (query-size pattern), then to fill.
function query_then_fill(fill)
    len = Ref{Csize_t}(0)
    status = fill(Ptr{Cdouble}(C_NULL), 0, len)
    status == DPD_ERR_BUFFER_TOO_SMALL || check(status)
    out = Vector{Cdouble}(undef, len[])
    check(fill(pointer(out), length(out), len))
    return out[1:len[]]
end

"""
    blr_fit(x, y, settings; rng=Rng(), noise_aware=false, draws=1000)

Fits privately on the rows of `x` and `y`; the budget is charged before any release. With
`noise_aware = true` the model also carries the noise-aware posterior of β (`draws` draws of the
latent Σxxᵀ; post-processing, no privacy cost), which `blr_coefficients` and
`blr_predict_interval` then report.
"""
function blr_fit(x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real}, s::BlrSettings;
                 rng::Rng=Rng(), noise_aware::Bool=false, draws::Integer=1000)
    m = blr_fit_model(x, y, s, rng)
    noise_aware && (m.noise_aware = blr_noise_aware(m; draws=draws, rng=rng))
    return m
end

function blr_fit_model(x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real}, s::BlrSettings,
                       rng::Rng)
    rows = row_major(x)
    ys = convert(Vector{Cdouble}, y)
    n, d = size(x)
    length(ys) == n || throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3,
                                         "y has $(length(ys)) values, x $n rows"))
    with_config(s) do cfg
        out = Ref{Ptr{dpd_blr_model}}(C_NULL)
        check(@ccall libdpdist.dpd_blr_fit(rows::Ptr{Cdouble}, length(rows)::Csize_t,
                                           ys::Ptr{Cdouble}, n::Csize_t, d::Csize_t,
                                           cfg::Ptr{dpd_blr_config}, rng::Ptr{dpd_rng},
                                           out::Ref{Ptr{dpd_blr_model}})::Cint)
        return BlrModel(out[])
    end
end

"""Posterior mean μ (the coefficients)."""
function blr_mean(m::BlrModel)
    query_then_fill() do buf, cap, len
        @ccall libdpdist.dpd_blr_model_mean(m::Ptr{dpd_blr_model}, buf::Ptr{Cdouble},
                                            cap::Csize_t, len::Ref{Csize_t})::Cint
    end
end

"""The released (noisy) statistics vector (with Σy² iff `release_yy`)."""
function blr_stats(m::BlrModel)
    query_then_fill() do buf, cap, len
        @ccall libdpdist.dpd_blr_model_stats(m::Ptr{dpd_blr_model}, buf::Ptr{Cdouble},
                                             cap::Csize_t, len::Ref{Csize_t})::Cint
    end
end

"""`(epsilon, delta)` the accountant charged for the fit."""
function blr_spent(m::BlrModel)
    eps, delta = Ref{Cdouble}(0), Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_blr_model_spent(m::Ptr{dpd_blr_model}, eps::Ref{Cdouble},
                                               delta::Ref{Cdouble})::Cint)
    return (epsilon=eps[], delta=delta[])
end

"""`(x, y)`: the clipping bounds the statistics round used."""
function blr_bounds(m::BlrModel)
    by = Ref{Cdouble}(0)
    bx = query_then_fill() do buf, cap, len
        @ccall libdpdist.dpd_blr_model_bounds(m::Ptr{dpd_blr_model}, buf::Ptr{Cdouble},
                                              cap::Csize_t, len::Ref{Csize_t},
                                              by::Ref{Cdouble})::Cint
    end
    return (x=bx, y=by[])
end

"""
`(y, x, sd)`: the released shares of records whose y, or some x, the bounds clipped (noisy, in
[0, 1]) and the sd of the noise on each; `DPD_ERR_INVALID_STATE` when the fit released none
(`clipped_share = 0`, the default).
"""
function blr_clipped_share(m::BlrModel)
    y, x, sd = Ref{Cdouble}(0), Ref{Cdouble}(0), Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_blr_model_clipped_share(m::Ptr{dpd_blr_model}, y::Ref{Cdouble},
                                                       x::Ref{Cdouble}, sd::Ref{Cdouble})::Cint)
    return (y=y[], x=x[], sd=sd[])
end

"""Predictions xᵀμ for the rows of `x`."""
function blr_predict(m::BlrModel, x::AbstractMatrix{<:Real})
    d = length(blr_mean(m))
    size(x, 2) == d || throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3,
                                         "x has $(size(x, 2)) columns, the model reads $d"))
    rows = row_major(x)
    out = Vector{Cdouble}(undef, size(x, 1))
    len = Ref{Csize_t}(0)
    check(@ccall libdpdist.dpd_blr_model_predict(m::Ptr{dpd_blr_model}, rows::Ptr{Cdouble},
                                                 length(rows)::Csize_t, out::Ptr{Cdouble},
                                                 length(out)::Csize_t, len::Ref{Csize_t})::Cint)
    return out[1:len[]]
end

"""The non-private posterior mean (λ₀I + λXᵀX)⁻¹λXᵀy (baseline)."""
function blr_fit_non_private(x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real};
                             lambda::Real=1, lambda0::Real=1)
    rows = row_major(x)
    ys = convert(Vector{Cdouble}, y)
    n, d = size(x)
    length(ys) == n || throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3,
                                         "y has $(length(ys)) values, x $n rows"))
    out = Vector{Cdouble}(undef, d)
    len = Ref{Csize_t}(0)
    check(@ccall libdpdist.dpd_blr_fit_non_private(rows::Ptr{Cdouble}, length(rows)::Csize_t,
                                                   ys::Ptr{Cdouble}, n::Csize_t, d::Csize_t,
                                                   lambda::Cdouble, lambda0::Cdouble,
                                                   out::Ptr{Cdouble}, length(out)::Csize_t,
                                                   len::Ref{Csize_t})::Cint)
    return out
end

"""One record's statistics vector `[x_j x_k (j ≤ k)…, x_j y…, (y²)]` (a DCA client's input)."""
function blr_record_stats(x_row::AbstractVector{<:Real}, y::Real; with_yy::Bool=false)
    xr = convert(Vector{Cdouble}, x_row)
    query_then_fill() do buf, cap, len
        @ccall libdpdist.dpd_blr_record_stats(xr::Ptr{Cdouble}, length(xr)::Csize_t,
                                              y::Cdouble, UInt32(with_yy)::UInt32,
                                              buf::Ptr{Cdouble}, cap::Csize_t,
                                              len::Ref{Csize_t})::Cint
    end
end

"""Posterior mean from a (noisy) summed statistics vector of `n` records and `d` features."""
function blr_posterior_mean(stats::AbstractVector{<:Real}, n::Integer, d::Integer;
                            with_yy::Bool=false, lambda::Real=1, lambda0::Real=1)
    s = convert(Vector{Cdouble}, stats)
    query_then_fill() do buf, cap, len
        @ccall libdpdist.dpd_blr_posterior_mean(s::Ptr{Cdouble}, length(s)::Csize_t,
                                                n::Csize_t, d::Csize_t,
                                                UInt32(with_yy)::UInt32, lambda::Cdouble,
                                                lambda0::Cdouble, buf::Ptr{Cdouble},
                                                cap::Csize_t, len::Ref{Csize_t})::Cint
    end
end

"""Shape/rate posterior of the precisions of a Gamma-prior fit (mirrors `dpd_blr_cavi_info`)."""
struct dpd_blr_cavi_info
    lambda_shape::Cdouble
    lambda_rate::Cdouble
    lambda0_shape::Cdouble
    lambda0_rate::Cdouble
    iterations::Csize_t
    converged::UInt32
end
const CaviInfo = dpd_blr_cavi_info

"""
    blr_fit_gamma_prior(stats, n, d; a=2, b=2, a0=2, b0=2, max_iter=1000, tol=1e-12)

λ ~ Gamma(a, b), λ₀ ~ Gamma(a0, b0) (shape, rate) fitted by coordinate ascent from a statistics
vector that carries Σy². Returns `(mean, info::CaviInfo)`.
"""
function blr_fit_gamma_prior(stats::AbstractVector{<:Real}, n::Integer, d::Integer;
                             a::Real=2, b::Real=2, a0::Real=2, b0::Real=2,
                             max_iter::Integer=1000, tol::Real=1e-12)
    s = convert(Vector{Cdouble}, stats)
    info = Ref{dpd_blr_cavi_info}()
    mean = query_then_fill() do buf, cap, len
        @ccall libdpdist.dpd_blr_fit_gamma_prior(s::Ptr{Cdouble}, length(s)::Csize_t,
                                                 n::Csize_t, d::Csize_t, a::Cdouble, b::Cdouble,
                                                 a0::Cdouble, b0::Cdouble, max_iter::Csize_t,
                                                 tol::Cdouble, buf::Ptr{Cdouble}, cap::Csize_t,
                                                 len::Ref{Csize_t},
                                                 info::Ref{dpd_blr_cavi_info})::Cint
    end
    return (mean=mean, info=info[])
end

const DPD_BLR_ERROR = Dict(:mae => UInt32(0), :rmse => UInt32(1), :spearman => UInt32(2))

"""
    blr_search_thresholds(sigma_x, sigma_y, n, settings; measure=:mae, rng=Rng())

Chooses the projection multipliers (ω_x, ω_y) on auxiliary data for a release of `n` records
with standard deviations `sigma_x`, `sigma_y` under `settings` (same mechanism, aggregation,
prior and budget share as `blr_fit`), minimising `measure` (`:mae`, `:rmse`, `:spearman`).
Costs no privacy. Returns `(omega_x, omega_y, error)`.
"""
function blr_search_thresholds(sigma_x::AbstractVector{<:Real}, sigma_y::Real, n::Integer,
                               s::BlrSettings; measure::Symbol=:mae, rng::Rng=Rng())
    haskey(DPD_BLR_ERROR, measure) ||
        argument_error("measure must be :mae, :rmse or :spearman, got $measure")
    code = DPD_BLR_ERROR[measure]
    sx = convert(Vector{Cdouble}, sigma_x)
    ox, oy, err = Ref{Cdouble}(0), Ref{Cdouble}(0), Ref{Cdouble}(0)
    with_config(s) do cfg
        check(@ccall libdpdist.dpd_blr_search_thresholds(sx::Ptr{Cdouble}, length(sx)::Csize_t,
                                                         sigma_y::Cdouble, n::Csize_t,
                                                         cfg::Ptr{dpd_blr_config}, code::UInt32,
                                                         rng::Ptr{dpd_rng}, ox::Ref{Cdouble},
                                                         oy::Ref{Cdouble},
                                                         err::Ref{Cdouble})::Cint)
    end
    return (omega_x=ox[], omega_y=oy[], error=err[])
end

# `call(t, nt, p, np, out)` is the metric's @ccall.
function metric(call, truth::AbstractVector{<:Real}, predicted::AbstractVector{<:Real})
    t = convert(Vector{Cdouble}, truth)
    p = convert(Vector{Cdouble}, predicted)
    out = Ref{Cdouble}(0)
    GC.@preserve t p check(call(pointer(t), length(t), pointer(p), length(p), out))
    return out[]
end

"""Mean absolute error of `predicted` against `truth`."""
mae(truth, predicted) = metric(truth, predicted) do t, nt, p, np, out
    @ccall libdpdist.dpd_mae(t::Ptr{Cdouble}, nt::Csize_t, p::Ptr{Cdouble}, np::Csize_t,
                             out::Ref{Cdouble})::Cint
end

"""Root mean squared error of `predicted` against `truth`."""
rmse(truth, predicted) = metric(truth, predicted) do t, nt, p, np, out
    @ccall libdpdist.dpd_rmse(t::Ptr{Cdouble}, nt::Csize_t, p::Ptr{Cdouble}, np::Csize_t,
                              out::Ref{Cdouble})::Cint
end

"""Spearman's rank correlation (average ranks; 0 for constant input)."""
spearman(truth, predicted) = metric(truth, predicted) do t, nt, p, np, out
    @ccall libdpdist.dpd_spearman(t::Ptr{Cdouble}, nt::Csize_t, p::Ptr{Cdouble}, np::Csize_t,
                                  out::Ref{Cdouble})::Cint
end

"""Length of a statistics vector for `d` features: d(d+1)/2 + d (+ 1 with Σy²)."""
function blr_stats_len(d::Integer; with_yy::Bool=false)
    out = Ref{Csize_t}(0)
    check(@ccall libdpdist.dpd_blr_stats_len(d::Csize_t, UInt32(with_yy)::UInt32,
                                             out::Ref{Csize_t})::Cint)
    return Int(out[])
end
