# Uncertainty of a private BLR fit: the noise-aware posterior of β (the released statistics
# treated as noisy observations of the true ones) and the naive one, as posterior means,
# standard deviations and central credible intervals for β and for predictions.

"""The noise-aware posterior of a BLR fit's coefficients (a mixture of Gaussians)."""
mutable struct BlrNoiseAware
    ptr::Ptr{dpd_blr_noise_aware}
    BlrNoiseAware(ptr::Ptr{dpd_blr_noise_aware}) = finalizer(free!, new(ptr))
end

function free!(x::BlrNoiseAware)
    @ccall libdpdist.dpd_blr_noise_aware_free(x.ptr::Ptr{dpd_blr_noise_aware})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_blr_noise_aware}}, x::BlrNoiseAware) =
    checked_ptr(x, "BlrNoiseAware")

"""
    blr_noise_aware(m; draws=1000, rng=Rng()) -> BlrNoiseAware

The noise-aware posterior of `m`'s coefficients, from the noise of `m`'s own release (trusted
aggregator, DCA or input perturbation; Gaussian or Laplace).
"""
function blr_noise_aware(m::BlrModel; draws::Integer=1000, rng::Rng=Rng())
    draws >= 0 || argument_error("draws must be >= 0, got $draws")
    out = Ref{Ptr{dpd_blr_noise_aware}}(C_NULL)
    check(@ccall libdpdist.dpd_blr_model_noise_aware(m::Ptr{dpd_blr_model}, draws::Csize_t,
                                                     rng::Ptr{dpd_rng},
                                                     out::Ref{Ptr{dpd_blr_noise_aware}})::Cint)
    return BlrNoiseAware(out[])
end

"""
    blr_stats_noise(m) -> StatsNoise

The public noise of `m`'s released statistics (`blr_stats(m)`).
"""
function blr_stats_noise(m::BlrModel)
    out = Ref{StatsNoise}(StatsNoise(0, 0.0, 0, 0.0))
    check(@ccall libdpdist.dpd_blr_model_stats_noise(m::Ptr{dpd_blr_model},
                                                     out::Ref{dpd_blr_stats_noise})::Cint)
    return out[]
end

"""
    blr_noise_aware_from_stats(stats, n, d, noise; bounds_x=nothing, second_moments=nothing,
                               dof=DPD_BLR_DOF_FROM_RELEASE, lambda=1.0, lambda0=1.0,
                               draws=1000, rng=Rng(), with_yy=false) -> BlrNoiseAware

The noise-aware posterior from statistics the host released itself (layout as `blr_stats`) of
`n` records and `d` features with public noise `noise::StatsNoise`, the bounds every record was
clipped to, the data model's second moments (`nothing`: B_j²/3) and degrees of freedom (0:
integrated over their posterior given the release). Equal to `blr_noise_aware(m)` for a model's
statistics, noise and bounds and the same rng state.
"""
function blr_noise_aware_from_stats(stats::AbstractVector{<:Real}, n::Integer, d::Integer,
                                    noise::StatsNoise; bounds_x=nothing, second_moments=nothing,
                                    dof::Real=DPD_BLR_DOF_FROM_RELEASE, lambda::Real=1.0,
                                    lambda0::Real=1.0, draws::Integer=1000, rng::Rng=Rng(),
                                    with_yy::Bool=false)
    (n >= 0 && d >= 0 && draws >= 0) || argument_error("n, d and draws must be >= 0")
    z = Vector{Cdouble}(stats)
    b = bounds_x === nothing ? Cdouble[] : Vector{Cdouble}(bounds_x)
    m2 = second_moments === nothing ? Cdouble[] : Vector{Cdouble}(second_moments)
    out = Ref{Ptr{dpd_blr_noise_aware}}(C_NULL)
    check(@ccall libdpdist.dpd_blr_noise_aware_from_stats(
        z::Ptr{Cdouble}, length(z)::Csize_t, n::Csize_t, d::Csize_t, UInt32(with_yy)::UInt32,
        Ref(noise)::Ref{dpd_blr_stats_noise}, b::Ptr{Cdouble}, length(b)::Csize_t,
        m2::Ptr{Cdouble}, length(m2)::Csize_t, dof::Cdouble, lambda::Cdouble, lambda0::Cdouble,
        draws::Csize_t, rng::Ptr{dpd_rng}, out::Ref{Ptr{dpd_blr_noise_aware}})::Cint)
    return BlrNoiseAware(out[])
end

# Runs a call with four parallel outputs of `n` elements.
function summaries(call, n::Integer)
    mean, sd, lower, upper = (Vector{Cdouble}(undef, n) for _ in 1:4)
    len = Ref{Csize_t}(0)
    check(call(mean, sd, lower, upper, n, len))
    k = Int(len[])
    return (mean=mean[1:k], sd=sd[1:k], lower=lower[1:k], upper=upper[1:k])
end

function noise_aware_d(p::BlrNoiseAware)
    d = Ref{Csize_t}(0)
    check(@ccall libdpdist.dpd_blr_noise_aware_info(p::Ptr{dpd_blr_noise_aware}, d::Ref{Csize_t},
                                                    C_NULL::Ptr{Cdouble})::Cint)
    return Int(d[])
end

"""Effective sample size (Σw)²/Σw² of the posterior's importance weights (at most the draws used:
a fit whose first draws give an ESS below 10% of them draws more, up to 16×)."""
function effective_sample_size(p::BlrNoiseAware)
    ess = Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_blr_noise_aware_info(p::Ptr{dpd_blr_noise_aware},
                                                    C_NULL::Ptr{Csize_t}, ess::Ref{Cdouble})::Cint)
    return ess[]
end

"""
    blr_coefficients(p::BlrNoiseAware; level=0.9)
    blr_coefficients(m::BlrModel; level=0.9, naive=false)

Posterior `(mean, sd, lower, upper)` of each coefficient, with central credible intervals at
`level`. For a model: the noise-aware posterior when it was fitted with `noise_aware = true`
(unless `naive = true`), else the naive one (noise treated as data: too narrow at small ε).
"""
function blr_coefficients(p::BlrNoiseAware; level::Real=0.9)
    summaries(noise_aware_d(p)) do mean, sd, lower, upper, cap, len
        @ccall libdpdist.dpd_blr_noise_aware_coefficients(
            p::Ptr{dpd_blr_noise_aware}, level::Cdouble, mean::Ptr{Cdouble}, sd::Ptr{Cdouble},
            lower::Ptr{Cdouble}, upper::Ptr{Cdouble}, cap::Csize_t, len::Ref{Csize_t})::Cint
    end
end

function blr_coefficients(m::BlrModel; level::Real=0.9, naive::Bool=false)
    if !naive && m.noise_aware !== nothing
        return blr_coefficients(m.noise_aware; level=level)
    end
    summaries(length(blr_mean(m))) do mean, sd, lower, upper, cap, len
        @ccall libdpdist.dpd_blr_model_coefficients(
            m::Ptr{dpd_blr_model}, level::Cdouble, mean::Ptr{Cdouble}, sd::Ptr{Cdouble},
            lower::Ptr{Cdouble}, upper::Ptr{Cdouble}, cap::Csize_t, len::Ref{Csize_t})::Cint
    end
end

"""
    blr_predict_interval(p_or_model, x; level=0.9, observation=false)

Noise-aware posterior `(mean, sd, lower, upper)` of xᵀβ for each row of `x`, or of a new
observation xᵀβ + e with `observation = true`. A model must have been fitted with
`noise_aware = true`.
"""
function blr_predict_interval(p::BlrNoiseAware, x::AbstractMatrix{<:Real}; level::Real=0.9,
                              observation::Bool=false)
    d = noise_aware_d(p)
    size(x, 2) == d || throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3,
                                         "x has $(size(x, 2)) columns, the model reads $d"))
    rows = row_major(x)
    summaries(size(x, 1)) do mean, sd, lower, upper, cap, len
        @ccall libdpdist.dpd_blr_noise_aware_predict(
            p::Ptr{dpd_blr_noise_aware}, rows::Ptr{Cdouble}, length(rows)::Csize_t,
            UInt32(observation)::UInt32, level::Cdouble, mean::Ptr{Cdouble}, sd::Ptr{Cdouble},
            lower::Ptr{Cdouble}, upper::Ptr{Cdouble}, cap::Csize_t, len::Ref{Csize_t})::Cint
    end
end

function blr_predict_interval(m::BlrModel, x::AbstractMatrix{<:Real}; kwargs...)
    m.noise_aware === nothing &&
        argument_error("prediction intervals need the noise-aware posterior: fit with " *
                       "noise_aware = true (or use blr_noise_aware)")
    return blr_predict_interval(m.noise_aware, x; kwargs...)
end
