# Private logistic regression (objective perturbation) and the PST stacking ensembles. Every fit
# is ε-DP for the rows it is given (δ = 0); ε = Inf gives the non-private fit. Rows of `x` are
# records; labels are all 0/1 or all −1/+1. Feature indices and groups are 1-based, as in Julia.
#
# `intercept=true` (the default, as GLM.jl and R's glm) estimates an intercept b:
# P(y = 1 | x) = σ(b + wᵀx̃), x̃ the row projected into the ball of radius r/√2 (the constant
# r/√2 shares the solver's ball of radius r, so the privacy calibration is unchanged). In a
# stack every low-level model and the high level get one; the high level's b is the stack's.
# `intercept=false` is the model without intercept, exactly what these fits returned before
# they had the option.

"""A fitted (or imported) logistic or stacked model."""
mutable struct PlrModel
    ptr::Ptr{dpd_plr_model}
    PlrModel(ptr::Ptr{dpd_plr_model}) = finalizer(free!, new(ptr))
end

function free!(x::PlrModel)
    @ccall libdpdist.dpd_plr_model_free(x.ptr::Ptr{dpd_plr_model})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_plr_model}}, x::PlrModel) = checked_ptr(x, "PlrModel")

# Data sets and feature groups live only for one fit; `f` receives the handle.
function with_dataset(f, x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real})
    rows = convert(Matrix{Cdouble}, permutedims(x))  # row-major n × d
    labels = convert(Vector{Cdouble}, y)
    out = Ref{Ptr{dpd_dataset}}(C_NULL)
    check(@ccall libdpdist.dpd_dataset_new(rows::Ptr{Cdouble}, length(rows)::Csize_t,
                                           size(x, 2)::Csize_t, labels::Ptr{Cdouble},
                                           length(labels)::Csize_t,
                                           out::Ref{Ptr{dpd_dataset}})::Cint)
    try
        return f(out[])
    finally
        @ccall libdpdist.dpd_dataset_free(out[]::Ptr{dpd_dataset})::Cvoid
    end
end

# groups[j] is the group (1..K) of feature j, or `nothing`/`missing` for an unused feature.
function with_groups(f, groups::AbstractVector, importance::AbstractVector{<:Real})
    of = UInt32[g === nothing || g === missing ? DPD_FEATURE_UNUSED :
                g >= 1 ? UInt32(g - 1) : argument_error("groups are numbered from 1, got $g")
                for g in groups]
    q = convert(Vector{Cdouble}, importance)
    out = Ref{Ptr{dpd_feature_groups}}(C_NULL)
    check(@ccall libdpdist.dpd_feature_groups_new(of::Ptr{UInt32}, length(of)::Csize_t,
                                                  q::Ptr{Cdouble}, length(q)::Csize_t,
                                                  out::Ref{Ptr{dpd_feature_groups}})::Cint)
    try
        return f(out[])
    finally
        @ccall libdpdist.dpd_feature_groups_free(out[]::Ptr{dpd_feature_groups})::Cvoid
    end
end

intercept_flag(intercept::Bool) = UInt32(intercept)

function take_model(status::Cint, out::Ref{Ptr{dpd_plr_model}})
    check(status)
    return PlrModel(out[])
end

"""
PLR (stacking paper Alg. 1) with ridge strength `lambda`; `intercept` as above. `ranges`:
`nothing` (default), or public feature ranges known without the private data, one per column of
`x`, as `(lo=, hi=)` (two vectors) or a d×2 matrix `[lo hi]`: each value is clamped into its
range and mapped onto [−1, 1], (clamp(x_j, lo_j, hi_j) − m_j)/h_j with m_j, h_j the range's
centre and half-width, before the projection; the model predicts through the same map
(`model_ranges` reads them back). Bad ranges → `DPD_ERR_INVALID_ARGUMENT` naming the (0-based)
column, nothing drawn from `rng`.
"""
function plr_fit(x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real}; epsilon::Real,
                 lambda::Real, rng::Rng=Rng(), intercept::Bool=true, ranges=nothing)
    if ranges === nothing
        return with_dataset(x, y) do ds
            out = Ref{Ptr{dpd_plr_model}}(C_NULL)
            take_model(@ccall(libdpdist.dpd_plr_fit_with_intercept(
                ds::Ptr{dpd_dataset}, epsilon::Cdouble, lambda::Cdouble,
                intercept_flag(intercept)::UInt32, rng::Ptr{dpd_rng},
                out::Ref{Ptr{dpd_plr_model}})::Cint), out)
        end
    end
    lo, hi = range_vectors(ranges)
    with_dataset(x, y) do ds
        out = Ref{Ptr{dpd_plr_model}}(C_NULL)
        take_model(@ccall(libdpdist.dpd_plr_fit_with_ranges(
            ds::Ptr{dpd_dataset}, epsilon::Cdouble, lambda::Cdouble,
            intercept_flag(intercept)::UInt32, lo::Ptr{Cdouble}, hi::Ptr{Cdouble},
            length(lo)::Csize_t, rng::Ptr{dpd_rng}, out::Ref{Ptr{dpd_plr_model}})::Cint), out)
    end
end

# (lo, hi) as two Cdouble vectors of one length from `(lo=, hi=)` or a d×2 matrix.
function range_vectors(ranges)
    lo, hi = if ranges isa AbstractMatrix
        size(ranges, 2) == 2 || argument_error("`ranges` as a matrix has two columns, lo and hi")
        ranges[:, 1], ranges[:, 2]
    else
        ranges.lo, ranges.hi
    end
    length(lo) == length(hi) ||
        argument_error("`ranges` has $(length(lo)) lower and $(length(hi)) upper ends")
    return convert(Vector{Cdouble}, lo), convert(Vector{Cdouble}, hi)
end

"""
The public ranges `(lo=, hi=)` a single model (`k = nothing`) or low-level model `k` (1..K) of
a stack maps its inputs from, in the order of its features; `nothing` for a model without them
(its weights then act on the rows as they are, not on mapped ones; a stack's high level never
has any).
"""
function model_ranges(m::PlrModel, k::Union{Nothing,Integer}=nothing)
    k === nothing || k >= 1 || argument_error("`k` counts low-level models from 1")
    fetch_ranges(lo, hi, cap, len) = if k === nothing
        @ccall libdpdist.dpd_plr_model_ranges(m::Ptr{dpd_plr_model}, lo::Ptr{Cdouble},
                                              hi::Ptr{Cdouble}, cap::Csize_t,
                                              len::Ref{Csize_t})::Cint
    else
        @ccall libdpdist.dpd_plr_model_low_level_ranges(m::Ptr{dpd_plr_model}, (k - 1)::Csize_t,
                                                        lo::Ptr{Cdouble}, hi::Ptr{Cdouble},
                                                        cap::Csize_t, len::Ref{Csize_t})::Cint
    end
    len = Ref{Csize_t}(0)
    status = fetch_ranges(C_NULL, C_NULL, 0, len)
    # DPD_ERR_INVALID_STATE is the library's "this model has no public ranges": an answer.
    status == DPD_ERR_INVALID_STATE && return nothing
    status == DPD_ERR_BUFFER_TOO_SMALL || check(status)
    lo = Vector{Cdouble}(undef, len[])
    hi = Vector{Cdouble}(undef, len[])
    check(fetch_ranges(lo, hi, length(lo), len))
    return (lo=lo, hi=hi)
end

# The stacked fits take `ranges` as `plr_fit` does, one per column: every low-level model maps
# its own columns by their ranges before the projection and predicts through the same map
# (`model_ranges(m, k)`); the high level reads the low-level outputs and has none.

"""PST-S: `n_parts` low-level PLRs on disjoint rows, a high-level PLR on `high_fraction`."""
function pst_s_fit(x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real}; n_parts::Integer,
                   epsilon::Real, lambda::Real, lambda_high::Real=lambda,
                   high_fraction::Real=0.5, rng::Rng=Rng(), intercept::Bool=true,
                   ranges=nothing)
    lo, hi = optional_range_vectors(ranges)
    b = intercept_flag(intercept)
    with_dataset(x, y) do ds
        out = Ref{Ptr{dpd_plr_model}}(C_NULL)
        status = if ranges === nothing
            @ccall libdpdist.dpd_pst_s_fit_with_intercept(
                ds::Ptr{dpd_dataset}, n_parts::Csize_t, epsilon::Cdouble, lambda::Cdouble,
                lambda_high::Cdouble, high_fraction::Cdouble, b::UInt32, rng::Ptr{dpd_rng},
                out::Ref{Ptr{dpd_plr_model}})::Cint
        else
            @ccall libdpdist.dpd_pst_s_fit_with_ranges(
                ds::Ptr{dpd_dataset}, n_parts::Csize_t, epsilon::Cdouble, lambda::Cdouble,
                lambda_high::Cdouble, high_fraction::Cdouble, b::UInt32, lo::Ptr{Cdouble},
                hi::Ptr{Cdouble}, length(lo)::Csize_t, rng::Ptr{dpd_rng},
                out::Ref{Ptr{dpd_plr_model}})::Cint
        end
        take_model(status, out)
    end
end

"""
PST-F: one low-level PLR per feature group. `importance` must come from side information,
never from the private data.
"""
function pst_f_fit(x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real}; groups::AbstractVector,
                   importance::AbstractVector{<:Real}, epsilon::Real, lambda::Real,
                   lambda_high::Real=lambda, high_fraction::Real=0.5, rng::Rng=Rng(),
                   intercept::Bool=true, ranges=nothing)
    lo, hi = optional_range_vectors(ranges)
    b = intercept_flag(intercept)
    with_groups(groups, importance) do fg
        with_dataset(x, y) do ds
            out = Ref{Ptr{dpd_plr_model}}(C_NULL)
            status = if ranges === nothing
                @ccall libdpdist.dpd_pst_f_fit_with_intercept(
                    ds::Ptr{dpd_dataset}, fg::Ptr{dpd_feature_groups}, epsilon::Cdouble,
                    lambda::Cdouble, lambda_high::Cdouble, high_fraction::Cdouble, b::UInt32,
                    rng::Ptr{dpd_rng}, out::Ref{Ptr{dpd_plr_model}})::Cint
            else
                @ccall libdpdist.dpd_pst_f_fit_with_ranges(
                    ds::Ptr{dpd_dataset}, fg::Ptr{dpd_feature_groups}, epsilon::Cdouble,
                    lambda::Cdouble, lambda_high::Cdouble, high_fraction::Cdouble, b::UInt32,
                    lo::Ptr{Cdouble}, hi::Ptr{Cdouble}, length(lo)::Csize_t, rng::Ptr{dpd_rng},
                    out::Ref{Ptr{dpd_plr_model}})::Cint
            end
            take_model(status, out)
        end
    end
end

"""
PST-H (transfer): source models per group, then PST-F on the target pulled towards them.
`ranges` (one per column, shared by the source and the target) map the source models too.
"""
function pst_h_fit(source_x::AbstractMatrix{<:Real}, source_y::AbstractVector{<:Real},
                   target_x::AbstractMatrix{<:Real}, target_y::AbstractVector{<:Real};
                   groups::AbstractVector, importance::AbstractVector{<:Real},
                   epsilon_source::Real, epsilon_target::Real, lambda_source::Real,
                   lambda_target::Real, lambda_high::Real=lambda_target,
                   high_fraction::Real=0.5, rng::Rng=Rng(), intercept::Bool=true,
                   ranges=nothing)
    lo, hi = optional_range_vectors(ranges)
    b = intercept_flag(intercept)
    with_groups(groups, importance) do fg
        with_dataset(source_x, source_y) do src
            with_dataset(target_x, target_y) do tgt
                out = Ref{Ptr{dpd_plr_model}}(C_NULL)
                status = if ranges === nothing
                    @ccall libdpdist.dpd_pst_h_fit_with_intercept(
                        src::Ptr{dpd_dataset}, tgt::Ptr{dpd_dataset},
                        fg::Ptr{dpd_feature_groups}, epsilon_source::Cdouble,
                        epsilon_target::Cdouble, lambda_source::Cdouble,
                        lambda_target::Cdouble, lambda_high::Cdouble, high_fraction::Cdouble,
                        b::UInt32, rng::Ptr{dpd_rng}, out::Ref{Ptr{dpd_plr_model}})::Cint
                else
                    @ccall libdpdist.dpd_pst_h_fit_with_ranges(
                        src::Ptr{dpd_dataset}, tgt::Ptr{dpd_dataset},
                        fg::Ptr{dpd_feature_groups}, epsilon_source::Cdouble,
                        epsilon_target::Cdouble, lambda_source::Cdouble,
                        lambda_target::Cdouble, lambda_high::Cdouble, high_fraction::Cdouble,
                        b::UInt32, lo::Ptr{Cdouble}, hi::Ptr{Cdouble}, length(lo)::Csize_t,
                        rng::Ptr{dpd_rng}, out::Ref{Ptr{dpd_plr_model}})::Cint
                end
                take_model(status, out)
            end
        end
    end
end

# `range_vectors`, or two empty vectors for no ranges.
optional_range_vectors(ranges) =
    ranges === nothing ? (Cdouble[], Cdouble[]) : range_vectors(ranges)

"""`(kind=:logistic|:stacked, n_features, n_low_level, epsilon)`; ε is NaN for an import."""
function model_info(m::PlrModel)
    kind = Ref{UInt32}(0)
    n_features = Ref{Csize_t}(0)
    n_low = Ref{Csize_t}(0)
    eps = Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_plr_model_info(m::Ptr{dpd_plr_model}, kind::Ref{UInt32},
                                              n_features::Ref{Csize_t}, n_low::Ref{Csize_t},
                                              eps::Ref{Cdouble})::Cint)
    return (kind=kind[] == DPD_PLR_MODEL_STACKED ? :stacked : :logistic,
            n_features=Int(n_features[]), n_low_level=Int(n_low[]), epsilon=eps[])
end

"""P(y = 1 | x) for the rows of `x`."""
function predict_proba(m::PlrModel, x::AbstractMatrix{<:Real})
    size(x, 2) == model_info(m).n_features ||
        throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3,
                          "x has $(size(x, 2)) columns, the model reads $(model_info(m).n_features)"))
    rows = convert(Matrix{Cdouble}, permutedims(x))
    out = Vector{Cdouble}(undef, size(x, 1))
    len = Ref{Csize_t}(0)
    check(@ccall libdpdist.dpd_plr_model_predict_proba(m::Ptr{dpd_plr_model}, rows::Ptr{Cdouble},
                                                       length(rows)::Csize_t, out::Ptr{Cdouble},
                                                       length(out)::Csize_t,
                                                       len::Ref{Csize_t})::Cint)
    return out[1:len[]]
end

"""`(weights, input_radius)` of a single model or of the high level of a stack."""
function model_weights(m::PlrModel)
    len = Ref{Csize_t}(0)
    status = @ccall libdpdist.dpd_plr_model_weights(m::Ptr{dpd_plr_model}, C_NULL::Ptr{Cdouble},
                                                    0::Csize_t, len::Ref{Csize_t},
                                                    C_NULL::Ptr{Cdouble})::Cint
    status == DPD_ERR_BUFFER_TOO_SMALL || check(status)
    w = Vector{Cdouble}(undef, len[])
    radius = Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_plr_model_weights(m::Ptr{dpd_plr_model}, w::Ptr{Cdouble},
                                                 length(w)::Csize_t, len::Ref{Csize_t},
                                                 radius::Ref{Cdouble})::Cint)
    return (weights=w, input_radius=radius[])
end

"""`(features (1-based), weights, input_radius)` of low-level model `k` (1..K) of a stack."""
function low_level_model(m::PlrModel, k::Integer)
    k >= 1 || argument_error("low-level models are numbered from 1, got $k")
    len = Ref{Csize_t}(0)
    status = @ccall libdpdist.dpd_plr_model_low_level(m::Ptr{dpd_plr_model}, (k - 1)::Csize_t,
                                                      C_NULL::Ptr{UInt64}, 0::Csize_t,
                                                      C_NULL::Ptr{Cdouble}, 0::Csize_t,
                                                      len::Ref{Csize_t}, C_NULL::Ptr{Cdouble})::Cint
    status == DPD_ERR_BUFFER_TOO_SMALL || check(status)
    features = Vector{UInt64}(undef, len[])
    w = Vector{Cdouble}(undef, len[])
    radius = Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_plr_model_low_level(m::Ptr{dpd_plr_model}, (k - 1)::Csize_t,
                                                   features::Ptr{UInt64}, length(features)::Csize_t,
                                                   w::Ptr{Cdouble}, length(w)::Csize_t,
                                                   len::Ref{Csize_t}, radius::Ref{Cdouble})::Cint)
    return (features=Int.(features) .+ 1, weights=w, input_radius=radius[])
end

"""
The intercept b of a single model or of a stack's high level, or (with `k`) of low-level
model `k` (1..K) of a stack; `nothing` for a model fitted or imported without one.
"""
function model_intercept(m::PlrModel, k::Union{Nothing,Integer}=nothing)
    b = Ref{Cdouble}(0)
    status = if k === nothing
        @ccall libdpdist.dpd_plr_model_intercept(m::Ptr{dpd_plr_model}, b::Ref{Cdouble})::Cint
    else
        k >= 1 || argument_error("low-level models are numbered from 1, got $k")
        @ccall libdpdist.dpd_plr_model_low_level_intercept(m::Ptr{dpd_plr_model},
                                                           (k - 1)::Csize_t,
                                                           b::Ref{Cdouble})::Cint
    end
    # DPD_ERR_INVALID_STATE is the library's "this model has no intercept": an answer.
    status == DPD_ERR_INVALID_STATE && return nothing
    check(status)
    return b[]
end

"""
Imports a single logistic model from exported weights, with its intercept when given
(`nothing`: a model without intercept, whose rows are projected to radius `input_radius`
rather than `input_radius`/√2) and its public ranges when given (as `plr_fit`'s `ranges`;
`model_ranges` reads them; without them the model maps no ranges).
"""
function PlrModel(w::AbstractVector{<:Real}, input_radius::Real;
                  intercept::Union{Nothing,Real}=nothing, ranges=nothing)
    v = convert(Vector{Cdouble}, w)
    out = Ref{Ptr{dpd_plr_model}}(C_NULL)
    if ranges !== nothing
        lo, hi = range_vectors(ranges)
        b = intercept === nothing ? 0.0 : Float64(intercept)
        check(@ccall libdpdist.dpd_plr_model_from_weights_and_ranges(
            v::Ptr{Cdouble}, length(v)::Csize_t, UInt32(intercept !== nothing)::UInt32,
            b::Cdouble, lo::Ptr{Cdouble}, hi::Ptr{Cdouble}, length(lo)::Csize_t,
            input_radius::Cdouble, out::Ref{Ptr{dpd_plr_model}})::Cint)
    elseif intercept === nothing
        check(@ccall libdpdist.dpd_plr_model_from_weights(v::Ptr{Cdouble}, length(v)::Csize_t,
                                                          input_radius::Cdouble,
                                                          out::Ref{Ptr{dpd_plr_model}})::Cint)
    else
        check(@ccall libdpdist.dpd_plr_model_from_weights_and_intercept(
            v::Ptr{Cdouble}, length(v)::Csize_t, intercept::Cdouble, input_radius::Cdouble,
            out::Ref{Ptr{dpd_plr_model}})::Cint)
    end
    return PlrModel(out[])
end

"""Area under the ROC curve (Mann–Whitney, ties count ½)."""
function auc(scores::AbstractVector{<:Real}, labels::AbstractVector{<:Real})
    s = convert(Vector{Cdouble}, scores)
    l = convert(Vector{Cdouble}, labels)
    out = Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_auc(s::Ptr{Cdouble}, length(s)::Csize_t, l::Ptr{Cdouble},
                                   length(l)::Csize_t, out::Ref{Cdouble})::Cint)
    return out[]
end
