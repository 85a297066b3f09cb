# Randomness, calibration, samplers and the privacy accountant.

"""
    Rng(; insecure_seed=nothing)

A source of randomness: ChaCha20 keyed from the OS CSPRNG by default. `insecure_seed` gives a
reproducible stream for tests and experiments ONLY — whoever knows the seed can remove the noise
and unmask shares. Each call that consumes randomness draws an independent child stream.
Not for use by two threads at once.
"""
mutable struct Rng
    ptr::Ptr{dpd_rng}
    insecure::Bool
    function Rng(; insecure_seed::Union{Nothing,Integer}=nothing)
        out = Ref{Ptr{dpd_rng}}(C_NULL)
        if insecure_seed === nothing
            check(@ccall libdpdist.dpd_rng_new_os(out::Ref{Ptr{dpd_rng}})::Cint)
        else
            check(@ccall libdpdist.dpd_rng_new_insecure_fixed_seed(
                UInt64(insecure_seed)::UInt64, out::Ref{Ptr{dpd_rng}})::Cint)
        end
        return finalizer(free!, new(out[], insecure_seed !== nothing))
    end
end

function free!(x::Rng)
    @ccall libdpdist.dpd_rng_free(x.ptr::Ptr{dpd_rng})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_rng}}, x::Rng) = checked_ptr(x, "Rng")
Base.show(io::IO, x::Rng) = print(io, x.insecure ? "Rng(INSECURE fixed seed)" : "Rng(OS CSPRNG)")

# ---- calibration ------------------------------------------------------------------------------

"""
    gaussian_sigma(epsilon, delta, l2_sensitivity; method=:analytic)

Gaussian noise σ for (ε, δ)-DP. `:analytic` (Balle & Wang 2018) holds for every ε > 0;
`:classic` is sqrt(2 ln(1.25/δ))·Δ/ε, proven only for ε < 1 (larger ε throws).
"""
function gaussian_sigma(epsilon::Real, delta::Real, l2_sensitivity::Real; method::Symbol=:analytic)
    out = Ref{Cdouble}(0)
    if method === :analytic
        check(@ccall libdpdist.dpd_gaussian_sigma_analytic(epsilon::Cdouble, delta::Cdouble,
                                                           l2_sensitivity::Cdouble,
                                                           out::Ref{Cdouble})::Cint)
    elseif method === :classic
        check(@ccall libdpdist.dpd_gaussian_sigma_classic(epsilon::Cdouble, delta::Cdouble,
                                                          l2_sensitivity::Cdouble,
                                                          out::Ref{Cdouble})::Cint)
    else
        argument_error("method must be :analytic or :classic, got :$method")
    end
    return out[]
end

"""Per-client σ when N clients add noise and up to T may drop out or collude: σ/sqrt(N−T−1)."""
function distributed_sigma(sigma_total::Real, n_clients::Integer, max_dropped::Integer)
    out = Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_distributed_sigma(sigma_total::Cdouble, n_clients::Csize_t,
                                                 max_dropped::Csize_t, out::Ref{Cdouble})::Cint)
    return out[]
end

"""Laplace scale Δ₁/ε for ε-DP."""
function laplace_scale(epsilon::Real, l1_sensitivity::Real)
    out = Ref{Cdouble}(0)
    check(@ccall libdpdist.dpd_laplace_scale(epsilon::Cdouble, l1_sensitivity::Cdouble,
                                             out::Ref{Cdouble})::Cint)
    return out[]
end

# ---- samplers -------------------------------------------------------------------------------

"""`n` exact discrete Gaussian samples with parameter `sigma_units` (Canonne–Kamath–Steinke)."""
function sample_discrete_gaussian(rng::Rng, sigma_units::Real, n::Integer)
    out = Vector{Int64}(undef, n)
    check(@ccall libdpdist.dpd_sample_discrete_gaussian(rng::Ptr{dpd_rng}, sigma_units::Cdouble,
                                                        out::Ptr{Int64}, n::Csize_t)::Cint)
    return out
end

"""`n` exact discrete Laplace samples, P(y) ∝ exp(−|y|/scale_units)."""
function sample_discrete_laplace(rng::Rng, scale_units::Real, n::Integer)
    out = Vector{Int64}(undef, n)
    check(@ccall libdpdist.dpd_sample_discrete_laplace(rng::Ptr{dpd_rng}, scale_units::Cdouble,
                                                       out::Ptr{Int64}, n::Csize_t)::Cint)
    return out
end

"""`n` continuous N(0, σ²) samples from a CSPRNG."""
function sample_gaussian(rng::Rng, sigma::Real, n::Integer)
    out = Vector{Cdouble}(undef, n)
    check(@ccall libdpdist.dpd_sample_gaussian(rng::Ptr{dpd_rng}, sigma::Cdouble,
                                               out::Ptr{Cdouble}, n::Csize_t)::Cint)
    return out
end

"""`n` continuous Laplace(0, scale) samples from a CSPRNG."""
function sample_laplace(rng::Rng, scale::Real, n::Integer)
    out = Vector{Cdouble}(undef, n)
    check(@ccall libdpdist.dpd_sample_laplace(rng::Ptr{dpd_rng}, scale::Cdouble,
                                              out::Ptr{Cdouble}, n::Csize_t)::Cint)
    return out
end

"""One objective-perturbation vector b ∈ ℝᵈ with density ∝ exp(−ε′‖b‖/2)."""
function sample_objective_perturbation(rng::Rng, epsilon_prime::Real, d::Integer)
    out = Vector{Cdouble}(undef, d)
    check(@ccall libdpdist.dpd_sample_objective_perturbation(rng::Ptr{dpd_rng},
                                                             epsilon_prime::Cdouble,
                                                             out::Ptr{Cdouble}, d::Csize_t)::Cint)
    return out
end

# ---- accountant -----------------------------------------------------------------------------

"""
    Accountant(epsilon, delta)

Composes the privacy loss of rounds against the budget (ε, δ). A charge that would exceed the
budget throws `DpDistError(:DPD_ERR_BUDGET_EXCEEDED, …)` and changes nothing: charge first,
release after.
"""
mutable struct Accountant
    ptr::Ptr{dpd_accountant}
    function Accountant(epsilon::Real, delta::Real)
        out = Ref{Ptr{dpd_accountant}}(C_NULL)
        check(@ccall libdpdist.dpd_accountant_new(epsilon::Cdouble, delta::Cdouble,
                                                  out::Ref{Ptr{dpd_accountant}})::Cint)
        return finalizer(free!, new(out[]))
    end
end

function free!(x::Accountant)
    @ccall libdpdist.dpd_accountant_free(x.ptr::Ptr{dpd_accountant})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_accountant}}, x::Accountant) = checked_ptr(x, "Accountant")

"""Charges a Gaussian mechanism (μ = Δ/σ, composed exactly in μ-GDP)."""
function charge_gaussian!(acc::Accountant, l2_sensitivity::Real, sigma::Real)
    check(@ccall libdpdist.dpd_accountant_charge_gaussian(acc::Ptr{dpd_accountant},
                                                          l2_sensitivity::Cdouble,
                                                          sigma::Cdouble)::Cint)
    return acc
end

"""Charges an (ε, δ)-DP round."""
function charge_approx!(acc::Accountant, epsilon::Real, delta::Real)
    check(@ccall libdpdist.dpd_accountant_charge_approx(acc::Ptr{dpd_accountant},
                                                        epsilon::Cdouble, delta::Cdouble)::Cint)
    return acc
end

"""Charges an ε-DP (pure) round."""
function charge_pure!(acc::Accountant, epsilon::Real)
    check(@ccall libdpdist.dpd_accountant_charge_pure(acc::Ptr{dpd_accountant},
                                                      epsilon::Cdouble)::Cint)
    return acc
end

"""Charges a ρ-zCDP round."""
function charge_zcdp!(acc::Accountant, rho::Real)
    check(@ccall libdpdist.dpd_accountant_charge_zcdp(acc::Ptr{dpd_accountant},
                                                      rho::Cdouble)::Cint)
    return acc
end

"""Privacy spent so far: `(epsilon=…, delta=…, rounds=…)`."""
function spent(acc::Accountant)
    eps = Ref{Cdouble}(0)
    delta = Ref{Cdouble}(0)
    rounds = Ref{Csize_t}(0)
    check(@ccall libdpdist.dpd_accountant_spent(acc::Ptr{dpd_accountant}, eps::Ref{Cdouble},
                                                delta::Ref{Cdouble}, rounds::Ref{Csize_t})::Cint)
    return (epsilon=eps[], delta=delta[], rounds=Int(rounds[]))
end
