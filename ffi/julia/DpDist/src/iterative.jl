# Iterative private learning over DCA rounds (DCA paper Sec. 4.2): logistic regression and BLR
# by DP variational inference trained with clipped, noisy minibatch gradients; each iteration is
# one DCA round charged to a Rényi-DP accountant that refuses to pass the budget.

function sampling_code(sampling::Symbol)
    sampling === :poisson && return DPD_SAMPLING_POISSON
    sampling === :without_replacement && return DPD_SAMPLING_WITHOUT_REPLACEMENT
    argument_error("sampling must be :poisson or :without_replacement, got $sampling")
end

function nonnegative(name, v::Integer)
    v >= 0 || argument_error("$name must be >= 0, got $v")
    return v
end

"""
    rdp_epsilon(q, noise_multiplier, steps, delta; sampling=:poisson) -> (epsilon, order)

ε after `steps` steps of the sampled Gaussian mechanism (noise multiplier z = σ/C, sampling
probability q) at δ, by Rényi DP over dp_accounting's orders; `:poisson` is add/remove-one,
`:without_replacement` (fixed-size batches, q = m/n) replace-one.
"""
function rdp_epsilon(q::Real, noise_multiplier::Real, steps::Integer, delta::Real;
                     sampling::Symbol=:poisson)
    eps, order = Ref{Cdouble}(0), Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_rdp_epsilon(q::Cdouble, noise_multiplier::Cdouble,
                                           nonnegative("steps", steps)::UInt64, delta::Cdouble,
                                           sampling_code(sampling)::UInt32, eps::Ref{Cdouble},
                                           order::Ref{Cdouble})::Cint)
    return (epsilon=eps[], order=order[])
end

"""
    rdp_noise_multiplier(epsilon, delta, steps, q; sampling=:poisson)

The smallest noise multiplier for which `steps` steps at sampling probability q stay within
(ε, δ).
"""
function rdp_noise_multiplier(epsilon::Real, delta::Real, steps::Integer, q::Real;
                              sampling::Symbol=:poisson)
    z = Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_rdp_noise_multiplier(epsilon::Cdouble, delta::Cdouble,
                                                    nonnegative("steps", steps)::UInt64,
                                                    q::Cdouble, sampling_code(sampling)::UInt32,
                                                    z::Ref{Cdouble})::Cint)
    return z[]
end

"""
    IterativeSettings(; model=:logistic, l2=0, noise_precision=1, prior_precision=1,
                      sampling=:poisson, rate=0.05, batch=0, optimizer=:adam,
                      learning_rate=0.02, beta1=0.9, beta2=0.999, adam_epsilon=1e-8,
                      clip_norm=1, n_nodes=3, max_dropped=0, private=true, epsilon=NaN,
                      delta=NaN, noise_multiplier=nothing, intercept=nothing)

An iterative run. `model`: `:logistic` (labels 0/1 or ±1, penalty (l2/2)‖w‖²) or `:blr_vi`
(y ~ N(xᵀβ, 1/noise_precision), β ~ N(0, I/prior_precision), mean-field posterior).
`sampling`: `:poisson` at `rate` (clients flip their own coins) or `:fixed_size` (`batch`
clients drawn by the trainer). `optimizer`: `:adam` or `:sgd`. Each iteration is a DCA round
with `n_nodes` compute nodes tolerating `max_dropped` missing or colluding clients. With
`private = true` (the default) the budget (`epsilon`, `delta`) must be given; the noise
multiplier is calibrated for the planned iterations unless given. `private = false` is for
baselines only (no noise, no clipping). `intercept` (logistic only; `nothing` means `true` for
`:logistic`, as GLM.jl, and `false` for `:blr_vi`) estimates an intercept b: θ = (w, b), b last,
unpenalised, inside each record's clipped gradient; `false` is the model without intercept,
exactly as before the option existed.
"""
Base.@kwdef struct IterativeSettings
    model::Symbol = :logistic
    l2::Float64 = 0.0
    noise_precision::Float64 = 1.0
    prior_precision::Float64 = 1.0
    sampling::Symbol = :poisson
    rate::Float64 = 0.05
    batch::Int = 0
    optimizer::Symbol = :adam
    learning_rate::Float64 = 0.02
    beta1::Float64 = 0.9
    beta2::Float64 = 0.999
    adam_epsilon::Float64 = 1e-8
    clip_norm::Float64 = 1.0
    n_nodes::Int = 3
    max_dropped::Int = 0
    private::Bool = true
    epsilon::Float64 = NaN
    delta::Float64 = NaN
    noise_multiplier::Union{Nothing,Float64} = nothing
    intercept::Union{Nothing,Bool} = nothing
end

# Builds the C settings (privacy not yet chosen) for one call; `f` receives the handle.
function with_iterative_config(f, s::IterativeSettings)
    out = Ref{Ptr{dpd_iterative_config}}(C_NULL)
    if s.model === :logistic
        check(@ccall libdpdist.dpd_iterative_config_new_logistic(
            s.l2::Cdouble, out::Ref{Ptr{dpd_iterative_config}})::Cint)
    elseif s.model === :blr_vi
        check(@ccall libdpdist.dpd_iterative_config_new_blr_vi(
            s.noise_precision::Cdouble, s.prior_precision::Cdouble,
            out::Ref{Ptr{dpd_iterative_config}})::Cint)
    else
        argument_error("model must be :logistic or :blr_vi, got $(s.model)")
    end
    cfg = out[]
    try
        intercept = something(s.intercept, s.model === :logistic)
        # BLR's settings refuse an intercept (DPD_ERR_INVALID_STATE); asking for none is a no-op.
        if s.model === :logistic || intercept
            check(@ccall libdpdist.dpd_iterative_config_set_intercept(
                cfg::Ptr{dpd_iterative_config}, UInt32(intercept)::UInt32)::Cint)
        end
        if s.sampling === :poisson
            check(@ccall libdpdist.dpd_iterative_config_set_poisson(
                cfg::Ptr{dpd_iterative_config}, s.rate::Cdouble)::Cint)
        elseif s.sampling === :fixed_size
            check(@ccall libdpdist.dpd_iterative_config_set_fixed_size(
                cfg::Ptr{dpd_iterative_config}, nonnegative("batch", s.batch)::Csize_t)::Cint)
        else
            argument_error("sampling must be :poisson or :fixed_size, got $(s.sampling)")
        end
        if s.optimizer === :adam
            check(@ccall libdpdist.dpd_iterative_config_set_adam(
                cfg::Ptr{dpd_iterative_config}, s.learning_rate::Cdouble, s.beta1::Cdouble,
                s.beta2::Cdouble, s.adam_epsilon::Cdouble)::Cint)
        elseif s.optimizer === :sgd
            check(@ccall libdpdist.dpd_iterative_config_set_sgd(
                cfg::Ptr{dpd_iterative_config}, s.learning_rate::Cdouble)::Cint)
        else
            argument_error("optimizer must be :adam or :sgd, got $(s.optimizer)")
        end
        check(@ccall libdpdist.dpd_iterative_config_set_clip_norm(
            cfg::Ptr{dpd_iterative_config}, s.clip_norm::Cdouble)::Cint)
        check(@ccall libdpdist.dpd_iterative_config_set_dca(
            cfg::Ptr{dpd_iterative_config},
            UInt32(min(nonnegative("n_nodes", s.n_nodes), typemax(UInt32)))::UInt32,
            nonnegative("max_dropped", s.max_dropped)::Csize_t)::Cint)
        return f(cfg)
    finally
        @ccall libdpdist.dpd_iterative_config_free(cfg::Ptr{dpd_iterative_config})::Cvoid
    end
end

function calibrate(cfg::Ptr{dpd_iterative_config}, s::IterativeSettings, n::Integer, d::Integer,
                   iterations::Integer)
    z = Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_iterative_calibrate_noise_multiplier(
        cfg::Ptr{dpd_iterative_config}, n::Csize_t, d::Csize_t, s.epsilon::Cdouble,
        s.delta::Cdouble, nonnegative("iterations", iterations)::UInt64, z::Ref{Cdouble})::Cint)
    return z[]
end

"""
    iterative_calibrate(s, n_clients, dim, iterations) -> noise multiplier

The smallest noise multiplier for which `iterations` iterations of `s` on `n_clients` clients
with `dim` features stay within `s`'s (ε, δ), for the mechanism the trainer charges (DCA's sum of
discrete Gaussians).
"""
iterative_calibrate(s::IterativeSettings, n_clients::Integer, dim::Integer, iterations::Integer) =
    with_iterative_config(cfg -> calibrate(cfg, s, n_clients, dim, iterations), s)

"""An iterative run: its public parameters θ, optimizer state and accountant."""
mutable struct IterativeTrainer
    ptr::Ptr{dpd_iterative_trainer}
    dim::Int
    IterativeTrainer(ptr::Ptr{dpd_iterative_trainer}, dim::Int) = finalizer(free!, new(ptr, dim))
end

function free!(x::IterativeTrainer)
    @ccall libdpdist.dpd_iterative_trainer_free(x.ptr::Ptr{dpd_iterative_trainer})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_iterative_trainer}}, x::IterativeTrainer) =
    checked_ptr(x, "IterativeTrainer")

"""
    IterativeTrainer(s, n_clients, dim; iterations=nothing, rng=Rng(), ranges=nothing)

A trainer for `n_clients` clients (one record each) with `dim` features. A private `s` without
a noise multiplier needs the planned `iterations` to calibrate it. `ranges` (logistic only):
`nothing` (default), or public feature ranges, one per feature, as in `plr_fit` — `(lo=, hi=)`
or a d×2 matrix `[lo hi]`: each record's x_j is clamped into [lo_j, hi_j] and mapped onto
[−1, 1] before its gradient is clipped (a public per-record map: the privacy guarantee is
unchanged), and `iterative_predict` maps new rows the same way. Bad ranges →
`DPD_ERR_INVALID_ARGUMENT` naming the (0-based) column; with `:blr_vi` →
`DPD_ERR_INVALID_STATE`.
"""
function IterativeTrainer(s::IterativeSettings, n_clients::Integer, dim::Integer;
                          iterations::Union{Nothing,Integer}=nothing, rng::Rng=Rng(),
                          ranges=nothing)
    with_iterative_config(s) do cfg
        if ranges !== nothing
            lo, hi = range_vectors(ranges)
            check(@ccall libdpdist.dpd_iterative_config_set_ranges(
                cfg::Ptr{dpd_iterative_config}, lo::Ptr{Cdouble}, hi::Ptr{Cdouble},
                length(lo)::Csize_t)::Cint)
        end
        if s.private
            (isnan(s.epsilon) || isnan(s.delta)) &&
                argument_error("a private run needs its budget: IterativeSettings(epsilon=, " *
                               "delta=), or private=false for a non-private baseline")
            z = s.noise_multiplier
            if z === nothing
                iterations === nothing &&
                    argument_error("a private run needs noise_multiplier or the planned iterations")
                z = calibrate(cfg, s, n_clients, dim, iterations)
            end
            check(@ccall libdpdist.dpd_iterative_config_set_private(
                cfg::Ptr{dpd_iterative_config}, s.epsilon::Cdouble, s.delta::Cdouble,
                z::Cdouble)::Cint)
        else
            check(@ccall libdpdist.dpd_iterative_config_set_non_private(
                cfg::Ptr{dpd_iterative_config})::Cint)
        end
        out = Ref{Ptr{dpd_iterative_trainer}}(C_NULL)
        check(@ccall libdpdist.dpd_iterative_trainer_new(
            cfg::Ptr{dpd_iterative_config}, nonnegative("n_clients", n_clients)::Csize_t,
            nonnegative("dim", dim)::Csize_t, rng::Ptr{dpd_rng},
            out::Ref{Ptr{dpd_iterative_trainer}})::Cint)
        return IterativeTrainer(out[], Int(dim))
    end
end

function records(t::IterativeTrainer, x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real})
    size(x, 1) == length(y) || throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3,
                                                 "y has $(length(y)) values, x $(size(x, 1)) rows"))
    return row_major(x), convert(Vector{Cdouble}, y)
end

"""
    step!(t, x, y; dropped=Int[]) -> StepInfo

One iteration on every client's record (row i of `x` and `y[i]` are client i−1's); clients in
`dropped` (0-based ids, at most T) send nothing. Throws `DPD_ERR_BUDGET_EXCEEDED` before
anything is released once the budget is spent; on any error nothing changes.
"""
function step!(t::IterativeTrainer, x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real};
               dropped::AbstractVector{<:Integer}=Int[])
    rows, ys = records(t, x, y)
    any(<(0), dropped) && argument_error("dropped client ids are 0-based and >= 0")
    drop = convert(Vector{Csize_t}, dropped)
    info = Ref{dpd_iterative_step_info}()
    check(@ccall libdpdist.dpd_iterative_trainer_step(
        t::Ptr{dpd_iterative_trainer}, rows::Ptr{Cdouble}, length(rows)::Csize_t,
        ys::Ptr{Cdouble}, length(ys)::Csize_t, drop::Ptr{Csize_t}, length(drop)::Csize_t,
        info::Ref{dpd_iterative_step_info})::Cint)
    return info[]
end

"""
    fit!(t, x, y, iterations) -> iterations done

Up to `iterations` iterations without dropouts; stops early (without error) at the budget.
"""
function fit!(t::IterativeTrainer, x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real},
              iterations::Integer)
    rows, ys = records(t, x, y)
    done = Ref{UInt64}(0)
    check(@ccall libdpdist.dpd_iterative_trainer_fit(
        t::Ptr{dpd_iterative_trainer}, rows::Ptr{Cdouble}, length(rows)::Csize_t,
        ys::Ptr{Cdouble}, length(ys)::Csize_t, nonnegative("iterations", iterations)::UInt64,
        done::Ref{UInt64})::Cint)
    return Int(done[])
end

"""
    iterative_fit(x, y, s; iterations, rng=Rng(), ranges=nothing) -> IterativeTrainer

Creates a trainer for the rows of `x` (one client each) and runs up to `iterations` iterations
(a private run's noise is calibrated to last exactly that many unless `s` gives it). `ranges`
(logistic only): public ranges, one per column of `x`, as in [`IterativeTrainer`].
"""
function iterative_fit(x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real},
                       s::IterativeSettings; iterations::Integer, rng::Rng=Rng(),
                       ranges=nothing)
    t = IterativeTrainer(s, size(x, 1), size(x, 2); iterations=iterations, rng=rng,
                         ranges=ranges)
    fit!(t, x, y, iterations)
    return t
end

"""θ: the d weights (logistic), then b with an intercept (d + 1), or (m, ln s) of length 2d (DP-VI BLR)."""
function iterative_params(t::IterativeTrainer)
    query_then_fill() do buf, cap, len
        @ccall libdpdist.dpd_iterative_trainer_params(t::Ptr{dpd_iterative_trainer},
                                                      buf::Ptr{Cdouble}, cap::Csize_t,
                                                      len::Ref{Csize_t})::Cint
    end
end

"""The last iteration's released noisy sum (as long as `iterative_params`; empty before the first)."""
function iterative_last_release(t::IterativeTrainer)
    query_then_fill() do buf, cap, len
        @ccall libdpdist.dpd_iterative_trainer_last_release(t::Ptr{dpd_iterative_trainer},
                                                            buf::Ptr{Cdouble}, cap::Csize_t,
                                                            len::Ref{Csize_t})::Cint
    end
end

"""P(y = 1 | x) (logistic) or the posterior mean xᵀm (DP-VI BLR) for each row of `x`."""
function iterative_predict(t::IterativeTrainer, x::AbstractMatrix{<:Real})
    size(x, 2) == t.dim || throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3,
                                             "x has $(size(x, 2)) columns, the model reads $(t.dim)"))
    rows = row_major(x)
    out = Vector{Cdouble}(undef, size(x, 1))
    len = Ref{Csize_t}(0)
    check(@ccall libdpdist.dpd_iterative_trainer_predict(
        t::Ptr{dpd_iterative_trainer}, rows::Ptr{Cdouble}, length(rows)::Csize_t,
        out::Ptr{Cdouble}, length(out)::Csize_t, len::Ref{Csize_t})::Cint)
    return out[1:len[]]
end

"""`(epsilon, delta, iterations)` spent so far (ε = Inf for a non-private run)."""
function spent(t::IterativeTrainer)
    eps, delta, it = Ref{Cdouble}(0), Ref{Cdouble}(0), Ref{UInt64}(0)
    check(@ccall libdpdist.dpd_iterative_trainer_spent(t::Ptr{dpd_iterative_trainer},
                                                       eps::Ref{Cdouble},
                                                       delta::Ref{Cdouble})::Cint)
    check(@ccall libdpdist.dpd_iterative_trainer_info(t::Ptr{dpd_iterative_trainer},
                                                      it::Ref{UInt64}, C_NULL::Ptr{Csize_t},
                                                      C_NULL::Ptr{Csize_t},
                                                      C_NULL::Ptr{Cdouble})::Cint)
    return (epsilon=eps[], delta=delta[], iterations=Int(it[]))
end
