# Mirrors ffi/r/tests: calibration against hand-computed values, samplers, the accountant, DCA
# rounds through the wire bytes, and errors for bad input. Run with
#   DPDIST_LIB=/path/to/libdpdist.so julia --project=ffi/julia/DpDist -e 'using Pkg; Pkg.test()'
using DpDist
using DpDist: config_info
using Test
using Statistics: mean, var, std
using LinearAlgebra: Diagonal, I, norm
using Random: MersenneTwister, randn, rand

"Runs `f` and returns the DpDistError it throws (failing the test if it throws nothing else)."
function dpd_error(f, status::Symbol)
    err = try
        f()
        nothing
    catch e
        e
    end
    @test err isa DpDistError
    err isa DpDistError && @test err.status == status
    return err
end

@testset "DpDist" begin

@testset "calibration" begin
    # sqrt(2 ln(1.25/1e-5)) * 1 / 0.5 = 9.68961052521
    @test gaussian_sigma(0.5, 1e-5, 1.0; method=:classic) ≈ 9.68961052521 atol = 1e-9
    e = dpd_error(() -> gaussian_sigma(1.0, 1e-5, 1.0; method=:classic), :DPD_ERR_INVALID_ARGUMENT)
    @test occursin("analytic", e.msg)
    # Balle–Wang: δ(σ) ≤ δ at the returned σ, > δ just below it.
    # Φ from the C library's erfc (Base has no erf; SpecialFunctions is not a dependency).
    Φ(x) = 0.5 * ccall(:erfc, Cdouble, (Cdouble,), -x / sqrt(2))
    bw(s, ε, Δ) = Φ(Δ / (2s) - ε * s / Δ) - exp(ε) * Φ(-Δ / (2s) - ε * s / Δ)
    for (ε, δ, Δ) in ((1.0, 1e-5, 1.0), (0.5, 1e-6, 2.0), (4.0, 1e-3, 1.0))
        s = gaussian_sigma(ε, δ, Δ)
        @test bw(s, ε, Δ) <= δ * (1 + 1e-9)
        @test bw(s * (1 - 1e-6), ε, Δ) > δ
    end
    @test distributed_sigma(10.0, 10, 2) ≈ 3.77964473009 atol = 1e-10   # 10 / sqrt(7)
    dpd_error(() -> distributed_sigma(10.0, 3, 2), :DPD_ERR_INVALID_ARGUMENT)
    @test laplace_scale(0.5, 2.0) == 4.0
    dpd_error(() -> gaussian_sigma(NaN, 1e-5, 1.0), :DPD_ERR_INVALID_PRIVACY_PARAMETER)
    dpd_error(() -> laplace_scale(Inf, 1.0), :DPD_ERR_INVALID_PRIVACY_PARAMETER)
    @test DpDist.abi_version() == DpDist.DPDIST_ABI_VERSION
    @test !isempty(DpDist.version())
end

@testset "samplers" begin
    a = sample_discrete_gaussian(Rng(insecure_seed=7), 5.0, 100)
    @test a == sample_discrete_gaussian(Rng(insecure_seed=7), 5.0, 100)
    @test a != sample_discrete_gaussian(Rng(insecure_seed=8), 5.0, 100)
    @test sample_gaussian(Rng(), 1.0, 20) != sample_gaussian(Rng(), 1.0, 20)
    # n = 20000, σ = 3: 5.3 sd bounds (α ~ 1e-7) of 0.113 on the mean and 0.48 on the variance.
    x = sample_discrete_gaussian(Rng(insecure_seed=11), 3.0, 20000)
    @test abs(mean(x)) < 0.113
    @test abs(var(x) - 9) < 0.48
    # ‖b‖ ~ Gamma(3, 2): mean 6, sd 3.46; 2000 draws: 5.3 sd of the mean = 0.41.
    rng = Rng(insecure_seed=15)
    norms = [sqrt(sum(abs2, sample_objective_perturbation(rng, 1.0, 3))) for _ in 1:2000]
    @test abs(mean(norms) - 6) < 0.41
    dpd_error(() -> sample_discrete_gaussian(Rng(), NaN, 10), :DPD_ERR_NON_FINITE)
    dpd_error(() -> sample_discrete_gaussian(Rng(), -1.0, 10), :DPD_ERR_INVALID_ARGUMENT)
    r = Rng(insecure_seed=1)
    DpDist.free!(r)
    dpd_error(() -> sample_gaussian(r, 1.0, 3), :DPD_ERR_NULL_POINTER)
end

@testset "accountant" begin
    acc = Accountant(1.0, 1e-5)
    charge_pure!(acc, 0.4)
    charge_pure!(acc, 0.4)
    s = spent(acc)
    @test s.epsilon ≈ 0.8 atol = 1e-12
    @test s.rounds == 2
    dpd_error(() -> charge_pure!(acc, 0.4), :DPD_ERR_BUDGET_EXCEEDED)
    @test spent(acc) == s
    # μ = 1/10 composed exactly (μ-GDP): the smallest ε with
    # Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) ≤ 1e-5 is 0.340669364684326 (mpmath, 50 digits).
    acc = Accountant(1.0, 1e-5)
    charge_gaussian!(acc, 1.0, 10.0)
    @test spent(acc).epsilon ≈ 0.340669364684326 atol = 1e-9
    dpd_error(() -> charge_gaussian!(acc, 1.0, 1.0), :DPD_ERR_BUDGET_EXCEEDED)
    dpd_error(() -> Accountant(-1.0, 1e-5), :DPD_ERR_INVALID_PRIVACY_PARAMETER)
end

const X = [1.5 -2.25 3.125 0.3;
           -7.7 0.001 2.0 -0.5;
           9.99 4.4 -3.3 1.1;
           0.0 -9.5 8.75 2.2;
           -1.0 1.0 -1.0 1.0]

# A round over X where client i (0-based) sends to the nodes in sends[i + 1].
function manual_round(mode; max_dropped=1, sends=fill(0:2, 5))
    cfg = RoundConfig(round=42, n_clients=5, n_nodes=3, max_dropped=max_dropped, dim=4,
                      bound=10.0, mode=mode, non_private=true)
    rng = Rng(insecure_seed=1)
    nodes = [Node(cfg, k) for k in 0:2]
    messages = [shard(Client(cfg, i, rng), X[i+1, :]) for i in 0:4]
    for i in 0:4, k in sends[i+1]
        absorb!(nodes[k+1], messages[i+1][k+1])
    end
    agreed = reduce(intersect, received.(nodes))
    for i in setdiff(0:4, first.(agreed)), k in 0:2
        if i in first.(received(nodes[k+1])) && wire_inspect(messages[i+1][k+1]).kind == 0
            retract!(nodes[k+1], messages[i+1][k+1])
        end
    end
    agg = Aggregator(cfg)
    for node in nodes
        add!(agg, finalize_sum(node, agreed))
    end
    return release(agg)
end

@testset "DCA round" begin
    for mode in (:seed, :full)
        r = manual_round(mode)
        @test maximum(abs.(r.sum .- vec(sum(X, dims=1)))) <= 5 * 2.0^-r.info.frac_bits
        @test r.info.n_included == 5
        # client 2 never sends, client 3 reaches node 0 only (retracted there); T = 2
        r = manual_round(mode; max_dropped=2, sends=[0:2, 0:2, Int[], [0], 0:2])
        @test r.info.n_included == 3
        @test maximum(abs.(r.sum .- vec(sum(X[[1, 2, 5], :], dims=1)))) <=
              3 * 2.0^-r.info.frac_bits
    end
    dpd_error(() -> manual_round(:seed; sends=[0:2, Int[], Int[], 0:2, 0:2]),
              :DPD_ERR_TOO_MANY_DROPPED)
end

@testset "DCA errors" begin
    cfg = RoundConfig(round=1, n_clients=4, n_nodes=2, max_dropped=1, dim=3, bound=10.0, non_private=true)
    rng = Rng(insecure_seed=5)
    client = Client(cfg, 0, rng)
    dpd_error(() -> shard(client, [1.0, 2.0]), :DPD_ERR_LENGTH_MISMATCH)
    dpd_error(() -> shard(client, [1.0, NaN, 2.0]), :DPD_ERR_NON_FINITE)
    dpd_error(() -> shard(client, [1.0, 11.0, 2.0]), :DPD_ERR_OVERFLOW)
    node = Node(cfg, 0)
    s = shard(client, [1.0, 2.0, 3.0])
    absorb!(node, s[1])
    dpd_error(() -> absorb!(node, s[1]), :DPD_ERR_DUPLICATE_CLIENT)
    dpd_error(() -> absorb!(node, s[1][1:end-1]), :DPD_ERR_MALFORMED)
    dpd_error(() -> absorb!(node, UInt8[]), :DPD_ERR_MALFORMED)
    dpd_error(() -> absorb!(node, s[2]), :DPD_ERR_UNKNOWN_NODE)
    dpd_error(() -> wire_inspect(s[2][1:5]), :DPD_ERR_MALFORMED)
    @test first.(received(node)) == UInt64[0]
    @test last.(received(node)) == [wire_inspect(s[1]).shard]
    dpd_error(() -> RoundConfig(round=1, n_clients=4, n_nodes=1, max_dropped=1, dim=3,
                                bound=10.0, non_private=true), :DPD_ERR_INVALID_ARGUMENT)
    dpd_error(() -> RoundConfig(round=1, n_clients=4, n_nodes=2, max_dropped=1, dim=3,
                                bound=10.0, mode=:bogus, non_private=true), :DPD_ERR_INVALID_ARGUMENT)
    # σ = 0 (an unchecked failed calibration), negative or NaN is never an exact sum in disguise
    for bad in (0.0, -1.0, NaN)
        e = dpd_error(() -> RoundConfig(round=1, n_clients=10, n_nodes=2, max_dropped=1, dim=3,
                                        bound=1.0, noise_sigma_total=bad),
                      :DPD_ERR_INVALID_PRIVACY_PARAMETER)
    end
    dpd_error(() -> RoundConfig(round=1, n_clients=10, n_nodes=2, max_dropped=1, dim=3,
                                bound=1.0), :DPD_ERR_INVALID_PRIVACY_PARAMETER)
    @test config_info(RoundConfig(round=1, n_clients=10, n_nodes=2, max_dropped=1, dim=3,
                                  bound=1.0, non_private=true)).sigma_client == 0.0
end

@testset "verified round" begin
    # τ and B by hand (python3 `math`): σ = 0.5/sqrt(5)·2^20 units,
    # τ = ceil(σ·sqrt(2·ln(2·8·4/1e-9))) = 1654032, B = 2^20 + τ = 2702608,
    # δ_t = 9.999940807445824e-10; total δ at ε = 0.5, δ = 1e-6: 1.0026487055922424e-6.
    x = [sin(0.37 * (4i + j)) for i in 0:7, j in 0:3]
    mk() = RoundConfig(round=43, n_clients=8, n_nodes=3, max_dropped=2, dim=4, bound=1.0,
                       noise_sigma_total=0.5, frac_bits=20)
    plain, cfg = mk(), mk()
    @test validity_info(cfg).kind == DPD_VALIDITY_NONE
    dpd_error(() -> set_validity!(cfg; truncation_delta=0.0), :DPD_ERR_INVALID_PRIVACY_PARAMETER)
    set_validity!(cfg; truncation_delta=1e-9)
    v = validity_info(cfg)
    @test v.slice_units == 1654032 && v.bound_units == 2702608
    @test abs(v.truncation_delta - 9.999940807445824e-10) <= 1e-22
    @test abs(verified_total_delta(0.5, 1e-6, v.truncation_delta) - 1.0026487055922424e-6) <= 1e-20
    honest = simulate_round_verified(cfg, x, Int[], Rng(insecure_seed=43))
    ref = simulate_round(plain, x, Int[], Rng(insecure_seed=43))
    @test isempty(honest.invalid) && honest.sum == ref.sum
    cheated = simulate_round_verified_testing_malicious(cfg, x, Int[], [5], Rng(insecure_seed=43))
    without = simulate_round(plain, x, [5], Rng(insecure_seed=43))
    @test cheated.invalid == [5] && cheated.sum == without.sum && cheated.info.n_included == 7
    dpd_error(() -> simulate_round_verified_testing_malicious(cfg, x, Int[], [0, 3, 6]),
              :DPD_ERR_TOO_MANY_DROPPED)
    dpd_error(() -> simulate_round(cfg, x), :DPD_ERR_INVALID_ARGUMENT)

    # L2 (python3 with mpmath, the formulas of verified_shares::l2): x = ln(8/1e-9),
    # τ₂ = ceil(σ·sqrt(4 + 2·sqrt(4x) + 2x)) = ceil(1943493.779…) = 1943494; data_norm 2 →
    # 2097152 units, R = 4040646; δ_t = 8·exp(−y²), y = (sqrt(2t − 4) − 2)/2, t = τ₂²/σ²:
    # 9.9999354351203662e-10. Every row of x has norm ≤ 1.833 < 2.
    dpd_error(() -> set_validity!(cfg, :l2; data_norm=-1.0), :DPD_ERR_INVALID_ARGUMENT)
    @test validity_info(cfg).kind == DPD_VALIDITY_LINF
    set_validity!(cfg, :l2; data_norm=2.0, truncation_delta=1e-9)
    v = validity_info(cfg)
    @test v.kind == DPD_VALIDITY_L2 && v.data_units == 2097152
    @test v.slice_units == 1943494 && v.bound_units == 4040646
    @test abs(v.truncation_delta - 9.9999354351203662e-10) <= 1e-21
    honest = simulate_round_verified(cfg, x, Int[], Rng(insecure_seed=43))
    @test isempty(honest.invalid) && honest.sum == ref.sum
    cheated = simulate_round_verified_testing_malicious(cfg, x, Int[], [5], Rng(insecure_seed=43))
    @test cheated.invalid == [5] && cheated.sum == without.sum
    # Every row halved but client 3's (norm 1.778 > 1.5): it refuses.
    set_validity!(cfg, :l2; data_norm=1.5)
    long3 = 0.5 .* x
    long3[4, :] = x[4, :]
    dpd_error(() -> simulate_round_verified(cfg, long3, Int[], Rng(insecure_seed=43)),
              :DPD_ERR_INVALID_ARGUMENT)
end

@testset "simulated round" begin
    x = reshape(collect(range(-1, 1, length=150)), 50, 3)
    for mode in (:seed, :full)
        r = dca_simulate_round(x; bound=1.0, n_nodes=3, max_dropped=2, mode=mode,
                               rng=Rng(insecure_seed=6), non_private=true)
        @test maximum(abs.(r.sum .- vec(sum(x, dims=1)))) <= 50 * 2.0^-r.info.frac_bits
        r = dca_simulate_round(x; bound=1.0, n_nodes=3, max_dropped=2, mode=mode,
                               dropped=[0, 7], rng=Rng(insecure_seed=6), non_private=true)
        keep = setdiff(1:50, [1, 8])
        @test r.info.n_included == 48
        @test maximum(abs.(r.sum .- vec(sum(x[keep, :], dims=1)))) <= 48 * 2.0^-r.info.frac_bits
    end
    dpd_error(() -> dca_simulate_round(x; bound=1.0, max_dropped=1, dropped=[0, 7], non_private=true),
              :DPD_ERR_TOO_MANY_DROPPED)
    # Noise: σ_client = 1.5/sqrt(17), released σ = σ_client·sqrt(20); 2000 coordinates.
    z = zeros(20, 2000)
    r = dca_simulate_round(z; bound=1.0, max_dropped=2, sigma_total=1.5,
                           rng=Rng(insecure_seed=9))
    @test r.info.noise_sigma_client ≈ 1.5 / sqrt(17) atol = 1e-12
    @test abs(std(r.sum) / r.info.noise_sigma_released - 1) < 0.084
end

# ---- PLR and stacking -----------------------------------------------------------------------

logistic(t) = 1 / (1 + exp(-t))

function make_data(n, seed)
    g = MersenneTwister(seed)          # generates the DATA, not any DP noise
    x = randn(g, n, 4) ./ 2
    y = Float64[rand(g) < logistic(2 * (x[i, :]' * [2.0, -1.5, 1.0, 0.0])) for i in 1:n]
    return x, y
end

project_rows(x) = x ./ max.(1, sqrt.(sum(abs2, x, dims=2)))

# Mann–Whitney AUC by direct pair counting (ties ½), independent of the library.
function auc_pairs(s, y)
    pos, neg = s[y .== 1], s[y .!= 1]
    return sum((p > q) + 0.5 * (p == q) for p in pos, q in neg) / (length(pos) * length(neg))
end

@testset "PLR" begin
    x, y = make_data(1500, 1)
    λ = 0.01
    # intercept=false: the model without intercept (what plr_fit returned before the option).
    m = plr_fit(x, y; epsilon=Inf, lambda=λ, intercept=false)
    @test model_intercept(m) === nothing
    # Newton's method on (1/n) Σ log(1 + exp(−y wᵀx)) + λ‖w‖²/2 over projected rows.
    xp = project_rows(x)
    ypm = 2 .* y .- 1
    w = zeros(4)
    for _ in 1:50
        p = logistic.(-ypm .* (xp * w))
        grad = -(xp' * (ypm .* p)) ./ length(y) .+ λ .* w
        hess = (xp' * (xp .* (p .* (1 .- p)))) ./ length(y) + λ * I
        w -= hess \ grad
    end
    mw = model_weights(m)
    @test maximum(abs.(mw.weights .- w)) < 1e-4
    @test model_info(m).kind == :logistic
    @test model_info(m).epsilon == Inf
    @test predict_proba(m, x) ≈ logistic.(xp * mw.weights .* mw.input_radius) atol = 1e-12
    dpd_error(() -> predict_proba(m, x[:, 1:3]), :DPD_ERR_LENGTH_MISMATCH)

    # The default: an intercept. Labels off the origin; Newton's method on the solver's rows
    # (x̃, c), x̃ projected to radius c = 1/√2, b = c times the constant's weight.
    yb = Float64.(x[:, 1] .+ 0.3 .* x[:, 2] .> 0.25)
    mb = plr_fit(x, yb; epsilon=Inf, lambda=λ)
    c0 = 1 / sqrt(2)
    xb = hcat(x ./ max.(1, sqrt.(sum(abs2, x, dims=2)) ./ c0), fill(c0, size(x, 1)))
    yb_pm = 2 .* yb .- 1
    θ = zeros(5)
    for _ in 1:50
        p = logistic.(-yb_pm .* (xb * θ))
        grad = -(xb' * (yb_pm .* p)) ./ length(yb) .+ λ .* θ
        hess = (xb' * (xb .* (p .* (1 .- p)))) ./ length(yb) + λ * I
        θ -= hess \ grad
    end
    b = model_intercept(mb)
    @test b !== nothing && abs(b - θ[5] * c0) < 1e-4 && b < 0
    @test maximum(abs.(model_weights(mb).weights .- θ[1:4])) < 1e-4
    @test predict_proba(mb, x) ≈ logistic.(b .+ xb[:, 1:4] * model_weights(mb).weights) atol = 1e-12
    back = PlrModel(model_weights(mb).weights, model_weights(mb).input_radius; intercept=b)
    @test predict_proba(back, x) == predict_proba(mb, x)
    # By hand: w = (0.5, −1), b = 0.3, r = 2 (rows projected to √2): σ(0.3) and σ(0.3 − 0.5√2).
    known = PlrModel([0.5, -1.0], 2.0; intercept=0.3)
    @test predict_proba(known, [1.0 0.5; 3.0 4.0]) ≈ [0.574442516811659, 0.39960606322120307] atol = 1e-15
    @test model_intercept(known) == 0.3
    dpd_error(() -> model_intercept(known, 1), :DPD_ERR_INVALID_ARGUMENT)
    # Public ranges, by hand: w = (2, −1), b = 0.5, ranges [0, 4] × [−1, 1], r = 1 (mapped rows
    # clipped to 1/√2): (1, 0) → (−0.5, 0): σ(−0.5); (3, 0) → (0.5, 0): σ(1.5); (10, 0.5) →
    # (1, 0.5), scaled by √(0.5/1.25): σ(1.5√0.4 + 0.5).
    ranged = PlrModel([2.0, -1.0], 1.0; intercept=0.5, ranges=(lo=[0.0, -1.0], hi=[4.0, 1.0]))
    @test predict_proba(ranged, [1.0 0.0; 3.0 0.0; 10.0 0.5]) ≈
          logistic.([-0.5, 1.5, 1.5 * sqrt(0.4) + 0.5]) atol = 1e-15
    @test model_ranges(ranged) == (lo=[0.0, -1.0], hi=[4.0, 1.0])
    @test model_ranges(known) === nothing
    xr = [0.5 0.2; 1.0 -0.5; 1.5 0.9; 3.0 0.1; 3.5 -0.3; 10.0 0.5; -7.0 3.0; 2.5 -0.8]
    yr = [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    dpd_error(() -> plr_fit(xr, yr; epsilon=1.0, lambda=0.01, ranges=[0.0 4.0; 1.0 1.0]),
              :DPD_ERR_INVALID_ARGUMENT)
    mr = plr_fit(xr, yr; epsilon=1.0, lambda=0.01, rng=Rng(insecure_seed=40),
                 ranges=[0.0 4.0; -1.0 1.0])
    @test model_ranges(mr) == (lo=[0.0, -1.0], hi=[4.0, 1.0])
    @test predict_proba(mr, [10.0 0.5]) == predict_proba(mr, [4.0 0.5])
    wr = model_weights(mr)
    @test predict_proba(PlrModel(wr.weights, wr.input_radius; intercept=model_intercept(mr),
                                 ranges=model_ranges(mr)), xr) == predict_proba(mr, xr)
    # Stacks with ranges: x in the ranges [−64, 64] (|x| is far below 64 here) maps to x/64
    # exactly (centre 0, half-width a power of two), so a stack fitted on x with the ranges is
    # the stack fitted on x/64 without, bit for bit (same seed); model k's ranges are those of
    # its features; bad ranges refused.
    wide = (lo=fill(-64.0, 4), hi=fill(64.0, 4))
    @test maximum(abs.(x)) < 64
    st = (x, y)
    x64 = x ./ 64
    g, q = [1, 1, 2, 2], [0.5, 0.5]
    stacks = [
        (pst_s_fit(st...; n_parts=2, epsilon=2.0, lambda=λ, rng=Rng(insecure_seed=12),
                   ranges=wide),
         pst_s_fit(x64, y; n_parts=2, epsilon=2.0, lambda=λ, rng=Rng(insecure_seed=12))),
        (pst_f_fit(st...; groups=g, importance=q, epsilon=2.0, lambda=λ,
                   rng=Rng(insecure_seed=12), ranges=wide),
         pst_f_fit(x64, y; groups=g, importance=q, epsilon=2.0, lambda=λ,
                   rng=Rng(insecure_seed=12))),
        (pst_h_fit(st..., st...; groups=g, importance=q, epsilon_source=1.0, epsilon_target=2.0,
                   lambda_source=λ, lambda_target=0.5, rng=Rng(insecure_seed=12), ranges=wide),
         pst_h_fit(x64, y, x64, y; groups=g, importance=q, epsilon_source=1.0, epsilon_target=2.0,
                   lambda_source=λ, lambda_target=0.5, rng=Rng(insecure_seed=12)))]
    for (ranged_stack, plain_stack) in stacks
        @test predict_proba(ranged_stack, x) == predict_proba(plain_stack, x64)
        @test model_ranges(ranged_stack) === nothing
        @test model_ranges(plain_stack, 1) === nothing
    end
    @test model_ranges(stacks[2][1], 2) == (lo=[-64.0, -64.0], hi=[64.0, 64.0])
    dpd_error(() -> pst_f_fit(st...; groups=g, importance=q, epsilon=2.0, lambda=λ,
                              ranges=(lo=[64.0, -64.0, -64.0, -64.0], hi=fill(64.0, 4))),
              :DPD_ERR_INVALID_ARGUMENT)

    s = round.(randn(MersenneTwister(3), 300), digits=1)
    labels = Float64[rand(MersenneTwister(i), Float64) < logistic(s[i]) for i in 1:300]
    @test auc(s, labels) ≈ auc_pairs(s, labels) atol = 1e-12

    m1 = plr_fit(x, y; epsilon=1.0, lambda=λ, rng=Rng(insecure_seed=21))
    m2 = plr_fit(x, y; epsilon=1.0, lambda=λ, rng=Rng(insecure_seed=21))
    @test model_weights(m1) == model_weights(m2)
    @test model_weights(m1).weights != mw.weights
    @test model_intercept(m1) !== nothing
    # intercept=false reproduces the library's original dpd_plr_fit bit for bit: the weights it
    # gave (printed with %a by a C program linked against the build at 0980f78, before the
    # intercept reached the C ABI) for rows made with integer arithmetic.
    xg = [((i * 7 + j * 13 + i * i) % 17 - 8) / 10 for i in 0:199, j in 0:2]
    yg = Float64.(xg[:, 1] .- xg[:, 2] .+ 0.5 .* xg[:, 3] .> 0.1)
    mg = plr_fit(xg, yg; epsilon=1.0, lambda=0.01, rng=Rng(insecure_seed=21), intercept=false)
    @test model_weights(mg).weights == [0x1.da9c4a04031dap+1, -0x1.eae277485aa48p+0,
                                        0x1.86b0d87a4fe9bp+0]
    sg = pst_s_fit(xg, yg; n_parts=2, epsilon=2.0, lambda=0.01, rng=Rng(insecure_seed=5),
                   intercept=false)
    @test model_weights(sg).weights == [0x1.592585e8c1fa4p+0, 0x1.a84f93b521c58p+1]

    st = pst_s_fit(x, y; n_parts=3, epsilon=2.0, lambda=λ, rng=Rng(insecure_seed=5))
    @test model_info(st).kind == :stacked
    @test model_info(st).n_low_level == 3
    @test model_intercept(st) !== nothing && all(model_intercept(st, k) !== nothing for k in 1:3)
    st0 = pst_s_fit(x, y; n_parts=3, epsilon=2.0, lambda=λ, rng=Rng(insecure_seed=5),
                    intercept=false)
    @test model_intercept(st0) === nothing && model_intercept(st0, 1) === nothing
    f = pst_f_fit(x, y; groups=[1, 1, 2, nothing], importance=[0.6, 0.4], epsilon=2.0,
                  lambda=λ, rng=Rng(insecure_seed=6))
    @test low_level_model(f, 1).features == [1, 2]
    @test low_level_model(f, 2).features == [3]
    @test model_intercept(f, 2) !== nothing
    f0 = pst_f_fit(x, y; groups=[1, 1, 2, nothing], importance=[0.6, 0.4], epsilon=2.0,
                   lambda=λ, rng=Rng(insecure_seed=6), intercept=false)
    @test model_intercept(f0) === nothing
    xs, ys = make_data(1500, 7)
    h = pst_h_fit(xs, ys, x, y; groups=[1, 1, 2, 2], importance=[0.5, 0.5], epsilon_source=1.0,
                  epsilon_target=1.0, lambda_source=λ, lambda_target=λ, rng=Rng(insecure_seed=8))
    @test all(0 .< predict_proba(h, x) .< 1)
    @test model_intercept(h) !== nothing
    h0 = pst_h_fit(xs, ys, x, y; groups=[1, 1, 2, 2], importance=[0.5, 0.5], epsilon_source=1.0,
                   epsilon_target=1.0, lambda_source=λ, lambda_target=λ,
                   rng=Rng(insecure_seed=8), intercept=false)
    @test model_intercept(h0) === nothing

    imported = PlrModel([1.0, -2.0, 0.5], 1.0)
    z = [0.1 0.2 0.3; 3.0 4.0 0.0]
    @test predict_proba(imported, z) ≈ logistic.(project_rows(z) * [1.0, -2.0, 0.5]) atol = 1e-12
    @test isnan(model_info(imported).epsilon)

    y2 = copy(y); y2[5] = 2
    dpd_error(() -> plr_fit(x, y2; epsilon=1.0, lambda=λ), :DPD_ERR_INVALID_ARGUMENT)
    x2 = copy(x); x2[3, 2] = NaN
    dpd_error(() -> plr_fit(x2, y; epsilon=1.0, lambda=λ), :DPD_ERR_NON_FINITE)
    dpd_error(() -> plr_fit(x, y[2:end]; epsilon=1.0, lambda=λ), :DPD_ERR_LENGTH_MISMATCH)
    dpd_error(() -> pst_f_fit(x, y; groups=[1, 1, 2, 2], importance=[0.5, 0.6], epsilon=1.0,
                              lambda=λ), :DPD_ERR_INVALID_ARGUMENT)
end

@testset "node sums as bytes" begin
    cfg = RoundConfig(round=1, n_clients=3, n_nodes=2, max_dropped=0, dim=2, bound=10.0, non_private=true)
    rng = Rng(insecure_seed=2)
    nodes = [Node(cfg, 0), Node(cfg, 1)]
    for i in 0:2
        s = shard(Client(cfg, i, rng), [1.0 * i, 2.0])
        absorb!(nodes[1], s[1])
        absorb!(nodes[2], s[2])
    end
    agg = Aggregator(cfg)
    for n in nodes
        add!(agg, node_sum_from_bytes(cfg, node_sum_bytes(finalize_sum(n, received(n)))))
    end
    @test maximum(abs.(release(agg).sum .- [3.0, 6.0])) <= 3 * 2.0^-config_info(cfg).frac_bits
    b = node_sum_bytes(finalize_sum(nodes[1], received(nodes[1])))
    dpd_error(() -> node_sum_from_bytes(cfg, b[1:end-1]), :DPD_ERR_MALFORMED)
    other = RoundConfig(round=1, n_clients=4, n_nodes=2, max_dropped=0, dim=2, bound=10.0, non_private=true)
    dpd_error(() -> node_sum_from_bytes(other, b), :DPD_ERR_WRONG_ROUND)
end


function make_linear(n, seed)
    rng = MersenneTwister(seed)
    x = 2 .* rand(rng, n, 3) .- 1
    y = x * [1.0, -0.5, 0.25] .+ 0.2 .* (rand(rng, n) .- 0.5)
    return x, y
end

@testset "BLR" begin
    x, y = make_linear(2000, 1)
    # Non-private posterior against an independent solve of (λ₀I + λXᵀX)μ = λXᵀy.
    for (λ, λ0) in ((1.0, 1.0), (3.0, 0.5))
        @test maximum(abs.(blr_fit_non_private(x, y; lambda=λ, lambda0=λ0) .-
                           (λ0 * I + λ * (x' * x)) \ (λ * (x' * y)))) < 1e-8
    end
    # Summed per-record statistics give the same posterior.
    stats = sum(blr_record_stats(x[i, :], y[i]) for i in 1:300)
    @test length(stats) == blr_stats_len(3) == 9
    @test maximum(abs.(blr_posterior_mean(stats, 300, 3) .-
                       blr_fit_non_private(x[1:300, :], y[1:300]))) < 1e-9

    for (name, s) in (("trusted", BlrSettings(epsilon=1, delta=1e-5, assumed_x=[1, 1, 1],
                                              assumed_y=2)),
                      ("DCA", BlrSettings(epsilon=1, delta=1e-5, assumed_x=[1, 1, 1],
                                          assumed_y=2, aggregation=:distributed, n_nodes=3,
                                          max_dropped=2)),
                      ("Laplace", BlrSettings(epsilon=1, delta=1e-5, assumed_x=[1, 1, 1],
                                              assumed_y=2, mechanism=:laplace)))
        m = blr_fit(x, y, s; rng=Rng(insecure_seed=11))
        sp = blr_spent(m)
        @test 0 < sp.epsilon <= 1 + 1e-9
        @test 0 <= sp.delta <= 1e-5
        p = blr_predict(m, x)
        @test p ≈ x * blr_mean(m) atol = 1e-12
        @test length(blr_bounds(m).x) == 3 && blr_bounds(m).y > 0
        @test mae(y, p) < 0.25  # mean |y| is ~0.5: a fit that learned nothing is far above
    end
    s = BlrSettings(epsilon=1, delta=1e-5, assumed_x=[1, 1, 1], assumed_y=2)
    @test blr_mean(blr_fit(x, y, s; rng=Rng(insecure_seed=5))) ==
          blr_mean(blr_fit(x, y, s; rng=Rng(insecure_seed=5)))

    # Where the projection's σ come from: pooled DP (default) → one x bound; public → bounds
    # proportional to the given σ; bad settings refused.
    b0 = blr_bounds(blr_fit(x, y, s; rng=Rng(insecure_seed=5))).x
    @test all(==(b0[1]), b0)
    pub = BlrSettings(epsilon=1, delta=1e-5, assumed_x=[1, 1, 1], assumed_y=2, std=:public,
                      public_std_x=[0.6, 0.2, 0.4], public_std_y=0.5)
    bx = blr_bounds(blr_fit(x, y, pub; rng=Rng(insecure_seed=5))).x
    @test bx ./ [0.6, 0.2, 0.4] ≈ fill(bx[1] / 0.6, 3) rtol = 1e-12
    dpd_error(() -> blr_fit(x, y, BlrSettings(epsilon=1, delta=1e-5, assumed_x=[1, 1, 1],
                                              assumed_y=2, std=:per_dimension, std_share=1.0)),
              :DPD_ERR_INVALID_ARGUMENT)
    dpd_error(() -> blr_fit(x, y, BlrSettings(epsilon=1, delta=1e-5, assumed_x=[1, 1, 1],
                                              assumed_y=2, std=:public,
                                              public_std_x=[0.6, 0.2], public_std_y=0.5)),
              :DPD_ERR_INVALID_ARGUMENT)

    # Shares of clipped records: none by default; on request within 6 sd of the counts taken
    # here from the fit's bounds, with the sd 1/sqrt(0.2ρ)/n computed by hand.
    dpd_error(() -> blr_clipped_share(blr_fit(x, y, s; rng=Rng(insecure_seed=5))),
              :DPD_ERR_INVALID_STATE)
    counted = BlrSettings(epsilon=50, delta=1e-5, assumed_x=[1, 1, 1], assumed_y=2,
                          clipped_share=0.2)
    mc = blr_fit(x, y, counted; rng=Rng(insecure_seed=5))
    c, b = blr_clipped_share(mc), blr_bounds(mc)
    l = log(1e5)
    @test c.sd ≈ 1 / sqrt(0.2 * (sqrt(50 + l) - sqrt(l))^2) / size(x, 1) rtol = 1e-8
    @test abs(c.y - sum(abs.(y) .> b.y) / size(x, 1)) < 6 * c.sd
    @test abs(c.x - sum(any(abs.(x) .> b.x', dims=2)) / size(x, 1)) < 6 * c.sd
    dpd_error(() -> blr_fit(x, y, BlrSettings(epsilon=1, delta=1e-5, assumed_x=[1, 1, 1],
                                              assumed_y=2, clipped_share=1.0)),
              :DPD_ERR_INVALID_ARGUMENT)

    # Gamma prior: at convergence the mean is the ridge solution at E[λ], E[λ₀].
    exact = sum(blr_record_stats(x[i, :], y[i]; with_yy=true) for i in 1:2000)
    g = blr_fit_gamma_prior(exact, 2000, 3)
    @test g.info.converged == 1
    @test g.info.lambda_shape ≈ 2 + 2000 / 2
    el, el0 = g.info.lambda_shape / g.info.lambda_rate, g.info.lambda0_shape / g.info.lambda0_rate
    @test maximum(abs.(g.mean .- (el0 * I + el * (x' * x)) \ (el * (x' * y)))) < 1e-8
    m = blr_fit(x, y, BlrSettings(epsilon=1, delta=1e-5, assumed_x=[1, 1, 1], assumed_y=2,
                                  release_yy=true); rng=Rng(insecure_seed=6))
    @test length(blr_stats(m)) == 10
    @test all(isfinite, blr_fit_gamma_prior(blr_stats(m), 2000, 3).mean)
    dpd_error(() -> blr_fit_gamma_prior(exact[1:9], 2000, 3), :DPD_ERR_LENGTH_MISMATCH)

    # Threshold search: reproducible for a fixed seed, inside the DCA grid.
    a = blr_search_thresholds(fill(1 / sqrt(3), 3), 0.66, 2000, s; rng=Rng(insecure_seed=7))
    b = blr_search_thresholds(fill(1 / sqrt(3), 3), 0.66, 2000, s; rng=Rng(insecure_seed=7))
    @test a == b
    @test 0.1 - 1e-12 <= a.omega_x <= 2.1 + 1e-12 && 0.1 - 1e-12 <= a.omega_y <= 2.1 + 1e-12
    dpd_error(() -> blr_search_thresholds([0.5, NaN, 0.5], 0.66, 2000, s), :DPD_ERR_NON_FINITE)
    dpd_error(() -> blr_search_thresholds([0.5, 0.5], 0.66, 2000, s), :DPD_ERR_LENGTH_MISMATCH)
    dpd_error(() -> blr_search_thresholds(fill(0.5, 3), 0.66, 2000, s; measure=:r2),
              :DPD_ERR_INVALID_ARGUMENT)

    # Metrics against direct formulas.
    t, p = y[1:50], y[1:50] .+ 0.1 .* randn(MersenneTwister(8), 50)
    @test mae(t, p) ≈ sum(abs.(t .- p)) / 50 atol = 1e-12
    @test rmse(t, p) ≈ sqrt(sum((t .- p) .^ 2) / 50) atol = 1e-12
    @test spearman(t, t) ≈ 1 atol = 1e-12
    dpd_error(() -> rmse(t, p[2:end]), :DPD_ERR_LENGTH_MISMATCH)

    # Bad input.
    x2 = copy(x); x2[3, 2] = NaN
    dpd_error(() -> blr_fit(x2, y, s), :DPD_ERR_NON_FINITE)
    dpd_error(() -> blr_fit(x, y[2:end], s), :DPD_ERR_LENGTH_MISMATCH)
    dpd_error(() -> blr_fit_non_private(x, y[2:end]), :DPD_ERR_LENGTH_MISMATCH)
    dpd_error(() -> blr_fit(x, y, BlrSettings(epsilon=NaN, delta=1e-5, assumed_x=[1, 1, 1],
                                              assumed_y=2)), :DPD_ERR_INVALID_PRIVACY_PARAMETER)
    dpd_error(() -> blr_fit(x, y, BlrSettings(epsilon=1, delta=1e-5, assumed_x=[1, 1, 1],
                                              assumed_y=2, aggregation=:distributed,
                                              n_nodes=1)), :DPD_ERR_INVALID_ARGUMENT)
    dpd_error(() -> blr_predict(blr_fit(x, y, s), x[:, 1:2]), :DPD_ERR_LENGTH_MISMATCH)
end

end

@testset "BLR uncertainty" begin
    n = 400
    x = hcat([mod(0.6180339887 * i, 1.0) * 2 - 1 for i in 1:n],
             [mod(0.7548776662 * i, 1.0) * 2 - 1 for i in 1:n])
    y = 0.8 .* x[:, 1] .- 0.5 .* x[:, 2] .+ 0.5 .* sin.(7.0 .* (0:n-1))
    s(ε) = BlrSettings(epsilon=ε, delta=1e-5, assumed_x=[1, 1], assumed_y=3, projection=false)
    # As ε grows the noise-aware posterior approaches the naive one (within 5% at ε = 100).
    m = blr_fit(x, y, s(100.0); rng=Rng(insecure_seed=21), noise_aware=true, draws=200)
    a, b = blr_coefficients(m), blr_coefficients(m; naive=true)
    @test maximum(abs.(a.sd ./ b.sd .- 1)) < 0.05
    @test b.mean == blr_mean(m)
    # At ε = 0.5 it is wider, and the naive interval is mean ± z₀.₉₅ sd (z₀.₉₅ = 1.6448536269514722).
    m = blr_fit(x, y, s(0.5); rng=Rng(insecure_seed=22), noise_aware=true, draws=200)
    a, b = blr_coefficients(m; level=0.9), blr_coefficients(m; naive=true)
    @test all(a.sd .> b.sd)
    @test maximum(abs.(b.upper .- (b.mean .+ 1.6448536269514722 .* b.sd)) ./ b.sd) < 1e-6
    a50 = blr_coefficients(m; level=0.5)
    @test all(a.lower .< a50.lower .< a50.mean .< a50.upper .< a.upper)
    # A new observation adds 1/λ = 1 to the predictive variance of every row.
    p = blr_predict_interval(m, x[1:5, :])
    o = blr_predict_interval(m, x[1:5, :]; observation=true)
    @test maximum(abs.(o.sd .^ 2 .- p.sd .^ 2 .- 1)) < 1e-9
    @test 1 <= effective_sample_size(m.noise_aware) <= 200
    dpd_error(() -> blr_coefficients(m; level=1.0), :DPD_ERR_INVALID_ARGUMENT)
    plain = blr_fit(x, y, s(1.0); rng=Rng(insecure_seed=23))
    dpd_error(() -> blr_predict_interval(plain, x), :DPD_ERR_INVALID_ARGUMENT)
    dpd_error(() -> blr_noise_aware(plain; draws=0), :DPD_ERR_INVALID_ARGUMENT)
    @test length(blr_coefficients(blr_noise_aware(plain; draws=50)).mean) == 2
    # From statistics the host released itself: the model's posterior to the bit.
    noise = blr_stats_noise(plain)
    @test noise.xx_kind == DPD_NOISE_GAUSSIAN && noise.xx > 0
    a = blr_noise_aware(plain; draws=50, rng=Rng(insecure_seed=24))
    b = blr_noise_aware_from_stats(blr_stats(plain), size(x, 1), 2, noise;
                                   bounds_x=blr_bounds(plain).x, draws=50,
                                   rng=Rng(insecure_seed=24))
    @test blr_coefficients(a) == blr_coefficients(b)
    bad = copy(blr_stats(plain)); bad[2] = NaN
    dpd_error(() -> blr_noise_aware_from_stats(bad, size(x, 1), 2, noise;
                                               bounds_x=blr_bounds(plain).x),
              :DPD_ERR_NON_FINITE)
end

@testset "round ledger" begin
    cfg = RoundConfig(round=7, n_clients=3, n_nodes=2, max_dropped=0, dim=2, bound=10.0, non_private=true)
    other = RoundConfig(round=7, n_clients=4, n_nodes=2, max_dropped=0, dim=2, bound=10.0, non_private=true)
    ledger = RoundLedger()
    @test admit!(ledger, cfg) == true
    @test admit!(ledger, cfg) == false
    @test Node(cfg, 1; ledger=ledger) isa Node
    @test Aggregator(cfg; ledger=ledger) isa Aggregator
    dpd_error(() -> admit!(ledger, other), :DPD_ERR_WRONG_ROUND)
    dpd_error(() -> Node(other, 0; ledger=ledger), :DPD_ERR_WRONG_ROUND)
    dpd_error(() -> Aggregator(other; ledger=ledger), :DPD_ERR_WRONG_ROUND)
    @test Node(other, 0) isa Node  # no ledger, no check
    @test admit!(ledger, cfg) == false  # unchanged by the refusals
    # Saved and restored (a restarted party): the reused id is still refused.
    saved = ledger_entries(ledger)
    @test length(saved) == 1 && saved[1][1] == 7 && length(saved[1][2]) == 16
    restored = RoundLedger()
    @test all(admit!(restored, r, d) for (r, d) in saved)
    @test admit!(restored, cfg) == false
    dpd_error(() -> admit!(restored, other), :DPD_ERR_WRONG_ROUND)
    dpd_error(() -> admit!(restored, 8, UInt8[1, 2]), :DPD_ERR_LENGTH_MISMATCH)
end

@testset "iterative learning" begin
    # Published figures (TF Privacy compute_dp_sgd_privacy_statement / example_privacy).
    @test abs(rdp_epsilon(64 / 10000, 1.0, 782, 1e-6).epsilon - 1.616) < 5e-4
    @test abs(rdp_epsilon(1.0, 0.7, 2, 1e-5).epsilon - 10.8602036) < 5e-8
    @test abs(rdp_noise_multiplier(0.7242234026109595, 1e-5, 6000, 0.0025) / 1.3 - 1) < 2e-9
    z = rdp_noise_multiplier(1.0, 1e-5, 100, 0.05; sampling=:without_replacement)
    @test rdp_epsilon(0.05, z, 100, 1e-5; sampling=:without_replacement).epsilon <= 1
    dpd_error(() -> rdp_epsilon(0.0, 1.0, 5, 1e-5), :DPD_ERR_INVALID_ARGUMENT)

    # Non-private full-batch SGD reaches the Newton optimum of the same objective.
    n = 50
    x = hcat([mod(0.6180339887 * i, 1.0) * 2 - 1 for i in 1:n],
             [mod(0.7548776662 * i, 1.0) * 2 - 1 for i in 1:n])
    labels = Float64.(x[:, 1] .- 0.5 .* x[:, 2] .+ 0.3 .* sin.(0:n-1) .> 0)
    λ = 0.1
    w = zeros(2)
    for _ in 1:50
        sgn = 2 .* labels .- 1
        pr = 1 ./ (1 .+ exp.(sgn .* (x * w)))
        g = -(x' * (sgn .* pr)) ./ n .+ λ .* w
        H = (x' * (x .* (pr .* (1 .- pr)))) ./ n + λ * I
        w -= H \ g
    end
    s = IterativeSettings(model=:logistic, l2=λ, rate=1.0, optimizer=:sgd, learning_rate=1.0,
                          private=false, intercept=false)
    t = iterative_fit(x, labels, s; iterations=300, rng=Rng(insecure_seed=11))
    @test maximum(abs.(iterative_params(t) .- w)) < 1e-6
    @test isinf(spent(t).epsilon) && spent(t).iterations == 300
    @test iterative_predict(t, x) ≈ 1 ./ (1 .+ exp.(-(x * w))) atol = 1e-6
    # One iteration from w = 0, every client sampled, no noise: the released sum is the gradient
    # sum -Σ sᵢxᵢ/2, computed here.
    t1 = IterativeTrainer(s, n, 2; iterations=1, rng=Rng(insecure_seed=3))
    @test isempty(iterative_last_release(t1))
    step!(t1, x, labels)
    @test iterative_last_release(t1) ≈ -(x' * (2 .* labels .- 1)) ./ 2 atol = 1e-9

    # The default: an intercept, θ = (w, b), b unpenalised; Newton on (w, b). A clip norm of 10
    # never clips ‖(x, 1)‖ ≤ √3, so the non-private run reaches the plain optimum.
    labels_b = Float64.(x[:, 1] .- 0.5 .* x[:, 2] .+ 0.3 .* sin.(0:n-1) .> 0.4)
    zb = hcat(x, ones(n))
    pen = [λ, λ, 0.0]
    θ = zeros(3)
    for _ in 1:50
        sgn = 2 .* labels_b .- 1
        pr = 1 ./ (1 .+ exp.(sgn .* (zb * θ)))
        g = -(zb' * (sgn .* pr)) ./ n .+ pen .* θ
        H = (zb' * (zb .* (pr .* (1 .- pr)))) ./ n + Diagonal(pen)
        θ -= H \ g
    end
    @test θ[3] < -0.1
    sb = IterativeSettings(model=:logistic, l2=λ, rate=1.0, optimizer=:sgd, learning_rate=1.0,
                           clip_norm=10.0, private=false)
    tb = iterative_fit(x, labels_b, sb; iterations=3000, rng=Rng(insecure_seed=11))
    @test length(iterative_params(tb)) == 3
    @test maximum(abs.(iterative_params(tb) .- θ)) < 1e-6
    θt = iterative_params(tb)
    @test iterative_predict(tb, x) ≈ 1 ./ (1 .+ exp.(-(zb * θt))) atol = 1e-12
    dpd_error(() -> IterativeTrainer(IterativeSettings(model=:blr_vi, intercept=true,
                                                       private=false), n, 2),
              :DPD_ERR_INVALID_STATE)

    # Public ranges [0, 10] and [−2, 2]: (2.5, 3) ↦ (−0.5, 1), (12.5, −1) ↦ (1, −0.5). At θ = 0
    # the gradients −y·σ(0)·(x̃, 1), y read as ±1, are (0.25, −0.5, −0.5) and (0.5, −0.25, 0.5):
    # one SGD step of rate 1 over the batch of 2 gives θ = (−0.375, 0.375, 0), by hand.
    xr = [2.5 3.0; 12.5 -1.0]
    sr = IterativeSettings(model=:logistic, sampling=:fixed_size, batch=2, optimizer=:sgd,
                           learning_rate=1.0, n_nodes=2, private=false)
    tr = iterative_fit(xr, [1.0, 0.0], sr; iterations=1, rng=Rng(insecure_seed=3),
                       ranges=(lo=[0.0, -2.0], hi=[10.0, 2.0]))
    @test maximum(abs.(iterative_params(tr) .- [-0.375, 0.375, 0.0])) < 1e-9
    # (12.5, −5) lies outside both ranges: it predicts as (10, −2), σ(−0.75).
    pr = iterative_predict(tr, [12.5 -5.0; 10.0 -2.0])
    @test pr[1] == pr[2] && abs(pr[1] - 1 / (1 + exp(0.75))) < 1e-9
    dpd_error(() -> iterative_fit(xr, [1.0, 0.0], sr; iterations=1,
                                  ranges=[0.0 10.0; 1.0 1.0]), :DPD_ERR_INVALID_ARGUMENT)
    dpd_error(() -> IterativeTrainer(IterativeSettings(model=:blr_vi, private=false), 2, 2;
                                     ranges=(lo=[0.0, 0.0], hi=[1.0, 1.0])),
              :DPD_ERR_INVALID_STATE)

    # A private run calibrated for 20 iterations lasts exactly 20 and spends the budget.
    n = 200
    x = hcat([mod(0.6180339887 * i, 1.0) * 2 - 1 for i in 1:n],
             [mod(0.7548776662 * i, 1.0) * 2 - 1 for i in 1:n])
    labels = Float64.(x[:, 1] .+ x[:, 2] .> 0)
    s = IterativeSettings(model=:logistic, l2=0.01, rate=0.2, learning_rate=0.05, clip_norm=1.5,
                          max_dropped=2, epsilon=2.0, delta=1e-5)
    t = IterativeTrainer(s, n, 2; iterations=20, rng=Rng(insecure_seed=13))
    info = step!(t, x, labels; dropped=[7])
    @test info.iteration == 0 && info.n_included == n - 1
    @test fit!(t, x, labels, 1000) == 19
    sp = spent(t)
    @test 2 * (1 - 1e-6) < sp.epsilon <= 2 && sp.delta == 1e-5 && sp.iterations == 20
    before = iterative_params(t)
    e = dpd_error(() -> step!(t, x, labels), :DPD_ERR_BUDGET_EXCEEDED)
    @test occursin("nothing was released", e.msg)
    @test iterative_params(t) == before && spent(t).iterations == 20
    dpd_error(() -> step!(t, x, labels; dropped=[1, 2, 3]), :DPD_ERR_TOO_MANY_DROPPED)
    dpd_error(() -> IterativeTrainer(IterativeSettings(epsilon=1.0, delta=1e-5), n, 2),
              :DPD_ERR_INVALID_ARGUMENT)
    e = dpd_error(() -> IterativeTrainer(IterativeSettings(), n, 2; iterations=5),
                  :DPD_ERR_INVALID_ARGUMENT)
    @test occursin("needs its budget", e.msg)
    dpd_error(() -> IterativeTrainer(IterativeSettings(model=:svm, private=false), n, 2),
              :DPD_ERR_INVALID_ARGUMENT)

    # DP-VI BLR: θ = (m, ln s), predictions xᵀm.
    y = 0.8 .* x[:, 1] .- 0.3 .* x[:, 2]
    t = iterative_fit(x, y, IterativeSettings(model=:blr_vi, rate=1.0, optimizer=:sgd,
                                              learning_rate=0.5, private=false);
                      iterations=50, rng=Rng(insecure_seed=5))
    θ = iterative_params(t)
    @test length(θ) == 4
    @test iterative_predict(t, x) ≈ x * θ[1:2] atol = 1e-12
end

@testset "summation kernels" begin
    m = typemax(UInt64)
    src = UInt64[2, m, 1, 0, m, 5, 7]
    for kernel in (:dispatched, :scalar, :wide)
        acc = UInt64[m, m, 0, 0, 1, 10, 3]
        wrapping_add!(acc, src; kernel=kernel)
        @test acc == UInt64[1, m - 1, 1, 0, 0, 15, 10]      # wraps mod 2^64
        wrapping_sub!(acc, src)
        @test acc == UInt64[m, m, 0, 0, 1, 10, 3]
    end
    dpd_error(() -> wrapping_add!(zeros(UInt64, 3), src), :DPD_ERR_LENGTH_MISMATCH)
    dpd_error(() -> wrapping_add!(copy(src), src; kernel=:fast), :DPD_ERR_INVALID_ARGUMENT)
    @test kernel_path() in ("portable", "avx2", "avx512f")
    b = kernel_benchmark(len=4096, reps=3)
    @test b.len == 4096 && b.path == kernel_path() && b.seconds >= 0
end

@testset "library lookup" begin
    @test isfile(DpDist.libdpdist_path[])
    @test DpDist.abi_version() == DpDist.DPDIST_ABI_VERSION
    @test !isempty(DpDist.library_candidates())
end
