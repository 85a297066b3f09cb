# The regression on real data (docs/src/regression.md): an intercept, every column's public
# range, one Gaussian release, results in the data's units.

"""
A fitted private regression in the data's units (`regression_fit`).
"""
mutable struct Regression
    ptr::Ptr{dpd_regression}
    Regression(ptr::Ptr{dpd_regression}) = finalizer(free!, new(ptr))
end

function free!(x::Regression)
    @ccall libdpdist.dpd_regression_free(x.ptr::Ptr{dpd_regression})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_regression}}, x::Regression) = checked_ptr(x, "Regression")

"""
    regression_fit(x, y; lower_x, upper_x, range_y, epsilon, delta=1e-5, intercept=true,
                   n_nodes=0, group_of=nothing, rng=Rng())

Fits `y ~ x` with an intercept from one (ε, δ) Gaussian release. Column j's public range is
`[lower_x[j], upper_x[j]]`, y's `range_y = (lower, upper)`: from a codebook or a physical limit,
never from the data. `n_nodes = 0`: a trusted aggregator adds the noise; ≥ 2: DCA.
`group_of` (one integer per column, or `nothing` for none) declares indicator groups: 0 for an
ordinary column, k ≥ 1 for the indicator columns of one categorical variable's levels (ranges
[0, 1], at most one set per row; a row that sets two is refused). A group of 5 or more
indicators counts once in the sensitivity (`dpd_regression_fit_grouped`).
"""
function regression_fit(x::AbstractMatrix{<:Real}, y::AbstractVector{<:Real};
                        lower_x::AbstractVector{<:Real}, upper_x::AbstractVector{<:Real},
                        range_y::Tuple{<:Real,<:Real}, epsilon::Real, delta::Real=1e-5,
                        intercept::Bool=true, n_nodes::Integer=0,
                        group_of::Union{Nothing,AbstractVector{<:Integer}}=nothing,
                        rng::Rng=Rng())
    rows = row_major(x)
    ys = convert(Vector{Cdouble}, y)
    n, d = size(x)
    length(ys) == n || throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3,
                                         "y has $(length(ys)) values, x $n rows"))
    lo = convert(Vector{Cdouble}, lower_x)
    hi = convert(Vector{Cdouble}, upper_x)
    (length(lo) == d && length(hi) == d) ||
        throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3, "one public range per column of x ($d)"))
    out = Ref{Ptr{dpd_regression}}(C_NULL)
    if group_of === nothing
        check(@ccall libdpdist.dpd_regression_fit(rows::Ptr{Cdouble}, length(rows)::Csize_t,
                                                  ys::Ptr{Cdouble}, n::Csize_t, lo::Ptr{Cdouble},
                                                  hi::Ptr{Cdouble}, d::Csize_t,
                                                  range_y[1]::Cdouble, range_y[2]::Cdouble,
                                                  UInt32(intercept)::UInt32, epsilon::Cdouble,
                                                  delta::Cdouble, UInt32(n_nodes)::UInt32,
                                                  rng::Ptr{dpd_rng},
                                                  out::Ref{Ptr{dpd_regression}})::Cint)
    else
        length(group_of) == d ||
            throw(DpDistError(:DPD_ERR_LENGTH_MISMATCH, 3, "one group_of entry per column of x ($d)"))
        all(>=(0), group_of) ||
            argument_error("group_of: 0 or a group number >= 1")
        groups = convert(Vector{UInt32}, group_of)
        check(@ccall libdpdist.dpd_regression_fit_grouped(rows::Ptr{Cdouble}, length(rows)::Csize_t,
                                                          ys::Ptr{Cdouble}, n::Csize_t,
                                                          lo::Ptr{Cdouble}, hi::Ptr{Cdouble},
                                                          groups::Ptr{UInt32}, d::Csize_t,
                                                          range_y[1]::Cdouble, range_y[2]::Cdouble,
                                                          UInt32(intercept)::UInt32,
                                                          epsilon::Cdouble, delta::Cdouble,
                                                          UInt32(n_nodes)::UInt32,
                                                          rng::Ptr{dpd_rng},
                                                          out::Ref{Ptr{dpd_regression}})::Cint)
    end
    return Regression(out[])
end

"""(intercept, slope_1, …, slope_d) in the data's units."""
function regression_coefficients(m::Regression)
    query_then_fill() do buf, cap, len
        @ccall libdpdist.dpd_regression_coefficients(m::Ptr{dpd_regression}, buf::Ptr{Cdouble},
                                                     cap::Csize_t, len::Ref{Csize_t})::Cint
    end
end

"""Standard errors of (intercept, slopes); NaN for slopes of a fit that is the constant."""
function regression_std_errors(m::Regression)
    query_then_fill() do buf, cap, len
        @ccall libdpdist.dpd_regression_std_errors(m::Ptr{dpd_regression}, buf::Ptr{Cdouble},
                                                   cap::Csize_t, len::Ref{Csize_t})::Cint
    end
end

"""Predictions for raw rows of `x`, in y's units."""
function regression_predict(m::Regression, x::AbstractMatrix{<:Real})
    rows = row_major(x)
    out = Vector{Cdouble}(undef, size(x, 1))
    len = Ref{Csize_t}(0)
    check(@ccall libdpdist.dpd_regression_predict(m::Ptr{dpd_regression}, rows::Ptr{Cdouble},
                                                  length(rows)::Csize_t, out::Ptr{Cdouble},
                                                  length(out)::Csize_t, len::Ref{Csize_t})::Cint)
    return out[1:len[]]
end

"""(r_squared, constant, residual_sd): the DP R² (NaN when unavailable), the constant predictor
it is measured against, and the residual sd."""
function regression_quality(m::Regression)
    r2, constant, sd = Ref{Cdouble}(0), Ref{Cdouble}(0), Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_regression_fit_quality(m::Ptr{dpd_regression}, r2::Ref{Cdouble},
                                                      constant::Ref{Cdouble},
                                                      sd::Ref{Cdouble})::Cint)
    return (r_squared=r2[], constant=constant[], residual_sd=sd[])
end

"""The fit's warnings (a fit no better than the constant; noise that dominates), one string each."""
function regression_warnings(m::Regression)
    len = Ref{Csize_t}(0)
    status = @ccall libdpdist.dpd_regression_warnings(m::Ptr{dpd_regression}, C_NULL::Ptr{UInt8},
                                                      0::Csize_t, len::Ref{Csize_t})::Cint
    status == DPD_ERR_BUFFER_TOO_SMALL || check(status)
    bytes = Vector{UInt8}(undef, len[])
    check(@ccall libdpdist.dpd_regression_warnings(m::Ptr{dpd_regression}, bytes::Ptr{UInt8},
                                                   length(bytes)::Csize_t,
                                                   len::Ref{Csize_t})::Cint)
    text = String(bytes[1:len[]])
    return isempty(text) ? String[] : split(text, '\n')
end
