// The C++ RAII wrapper (include/dpdist.hpp): a DCA round with a dropout, error cases as
// exceptions carrying the status and message, and the accountant; the regression with an
// indicator group.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dpdist.hpp"

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        ++checks;                                                                           \
        if (!(cond)) {                                                                      \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
            ++failures;                                                                     \
        }                                                                                   \
    } while (0)

// Runs `body`, which must throw dpd::Error with `expected` and a message containing `needle`.
template <class Body> static void expect_error(dpd_status expected, const char *needle, Body body) {
    ++checks;
    try {
        body();
        std::fprintf(stderr, "expected %s, nothing thrown\n", dpd_status_name(expected));
        ++failures;
    } catch (const dpd::Error &e) {
        if (e.status() != expected || std::strstr(e.what(), needle) == nullptr) {
            std::fprintf(stderr, "expected %s containing \"%s\", got %s: %s\n",
                         dpd_status_name(expected), needle, e.status_name(), e.what());
            ++failures;
        }
    }
}

static double value(size_t i, size_t j) { return std::sin(double(3 * i + j)) * 2.0; }

static void dca_round(dpd::ShareMode mode) {
    const size_t n = 5, d = 4;
    const uint32_t m = 3;
    auto config = dpd::RoundConfig::exact_non_private(77, n, m, 1, d, 2.0, mode);
    auto rng = dpd::Rng::os();
    std::vector<dpd::ComputeNode> nodes;
    for (uint32_t k = 0; k < m; ++k) nodes.emplace_back(config, k);

    // Client 3 reaches node 0 only, then drops out.
    std::vector<uint8_t> lost;
    for (size_t i = 0; i < n; ++i) {
        std::vector<double> x(d);
        for (size_t j = 0; j < d; ++j) x[j] = value(i, j);
        dpd::Client client(config, i, rng);
        dpd::Shares shares = client.shard(x);
        CHECK(shares.count() == m);
        for (uint32_t k = 0; k < m; ++k) {
            std::vector<uint8_t> msg = shares.message(k);
            CHECK(dpd::wire_inspect(msg).client == i);
            if (i == 3 && k > 0) continue;
            nodes[k].absorb(msg);
            if (i == 3) lost = msg;
        }
    }
    std::vector<dpd::ShardSet> received;
    for (auto &node : nodes) received.push_back(node.received());
    dpd::ShardSet agreed = dpd::agree(received);
    CHECK(agreed.clients.size() == n - 1);
    CHECK(agreed.shards.size() == n - 1);
    nodes[0].retract(lost);
    dpd::Aggregator aggregator(config);
    for (auto &node : nodes) {
        // Through the wire and back, decoded against the round.
        dpd::NodeSum sum = dpd::NodeSum::from_bytes(config, node.finalize(agreed).to_bytes());
        aggregator.add(sum);
    }
    dpd::Release r = aggregator.release();
    CHECK(r.sum.size() == d);
    CHECK(r.info.n_included == n - 1);
    const double tol = double(n) * std::ldexp(1.0, -int(r.info.frac_bits)) + 1e-12;
    for (size_t j = 0; j < d; ++j) {
        double plain = 0.0;
        for (size_t i = 0; i < n; ++i)
            if (i != 3) plain += value(i, j);
        CHECK(std::fabs(r.sum[j] - plain) <= tol);
    }

    // The same round simulated in one call.
    std::vector<double> inputs(n * d);
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < d; ++j) inputs[i * d + j] = value(i, j);
    std::vector<uint64_t> dropped{3};
    dpd::Release sim = dpd::simulate_round(config, inputs, dropped, rng);
    for (size_t j = 0; j < d; ++j) CHECK(std::fabs(sim.sum[j] - r.sum[j]) <= 2 * tol);
}

// The wrappers of noisy calls run them once: dpd::simulate_round under a fixed seed releases
// exactly what one direct C call releases, and a second call on the same generator differs (so
// an extra run, which would advance the generator, could not go unnoticed).
static void noisy_calls_run_once() {
    const size_t n = 6, d = 4;
    dpd::RoundConfig config(11, n, 3, 1, d, 10.0, dpd::ShareMode::Seed, 1.5);
    std::vector<double> inputs(n * d);
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < d; ++j) inputs[i * d + j] = value(i, j);
    std::vector<uint64_t> none;
    auto rng = dpd::Rng::insecure_fixed_seed(99);
    dpd::Release wrapped = dpd::simulate_round(config, inputs, none, rng);
    dpd::Release again = dpd::simulate_round(config, inputs, none, rng);

    auto direct_rng = dpd::Rng::insecure_fixed_seed(99);
    std::vector<double> direct(d);
    size_t len = 0;
    dpd_release_info info;
    CHECK(dpd_simulate_round(config.get(), inputs.data(), inputs.size(), nullptr, 0,
                             direct_rng.get(), direct.data(), d, &len, &info) == DPD_OK);
    CHECK(len == d && wrapped.sum.size() == d);
    bool differs = false;
    for (size_t j = 0; j < d; ++j) {
        CHECK(wrapped.sum[j] == direct[j]);
        differs = differs || again.sum[j] != wrapped.sum[j];
    }
    CHECK(differs);
}

static void errors() {
    auto config = dpd::RoundConfig::exact_non_private(1, 3, 2, 1, 2, 1.0, dpd::ShareMode::Seed);
    auto rng = dpd::Rng::insecure_fixed_seed(3);
    dpd::Client client(config, 0, rng);
    std::vector<double> with_nan{0.5, std::nan("")};
    expect_error(DPD_ERR_NON_FINITE, "dpd_client_shard", [&] { client.shard(with_nan); });
    std::vector<double> ok{0.5, 0.25};
    std::vector<uint8_t> msg = client.shard(ok).message(0);
    dpd::ComputeNode node(config, 0);
    node.absorb(msg);
    expect_error(DPD_ERR_DUPLICATE_CLIENT, "duplicate", [&] { node.absorb(msg); });
    msg.pop_back();
    expect_error(DPD_ERR_MALFORMED, "truncated", [&] { node.absorb(msg); });
    expect_error(DPD_ERR_INVALID_ARGUMENT, "mode", [&] {
        dpd::RoundConfig::exact_non_private(1, 3, 2, 1, 2, 1.0, static_cast<dpd::ShareMode>(9));
    });
    // σ = 0 (an unchecked failed calibration) or NaN never gives a round without noise.
    expect_error(DPD_ERR_INVALID_PRIVACY_PARAMETER, "dpd_round_config_new_exact", [] {
        dpd::RoundConfig zero(1, 10, 2, 1, 2, 1.0, dpd::ShareMode::Seed, 0.0);
    });
    expect_error(DPD_ERR_INVALID_PRIVACY_PARAMETER, "NON-PRIVATE", [] {
        dpd::RoundConfig nan(1, 10, 2, 1, 2, 1.0, dpd::ShareMode::Seed, std::nan(""));
    });
    CHECK(config.sigma_client() == 0.0);
    expect_error(DPD_ERR_INVALID_ARGUMENT, "analytic",
                 [] { dpd::gaussian_sigma_classic(2.0, 1e-5, 1.0); });
}

// Verified rounds (issue 43): τ and B by hand (python3 `math`: σ = 0.5/sqrt(5)·2^20 units,
// τ = ceil(σ·sqrt(2·ln(2·8·4/1e-9))) = 1654032, B = 2^20 + τ); an honest verified round is the
// plain round bit for bit; a client sending 10^6 times its bound is left out and named and the
// release is the round without it; total δ = 1e-6 + (1 + e^0.5)·δ_t.
static void verified_round() {
    const size_t n = 8, d = 4;
    dpd::RoundConfig plain(43, n, 3, 2, d, 1.0, dpd::ShareMode::Seed, 0.5, 20);
    dpd::RoundConfig config(43, n, 3, 2, d, 1.0, dpd::ShareMode::Seed, 0.5, 20);
    CHECK(config.validity_info().kind == DPD_VALIDITY_NONE);
    expect_error(DPD_ERR_INVALID_PRIVACY_PARAMETER, "truncation_delta",
                 [&] { config.set_validity(dpd::Validity::Linf, 1.5); });
    CHECK(config.validity_info().kind == DPD_VALIDITY_NONE);
    config.set_validity(dpd::Validity::Linf, 1e-9);
    dpd_validity_info v = config.validity_info();
    CHECK(v.kind == DPD_VALIDITY_LINF && v.slice_units == 1654032 && v.bound_units == 2702608);
    std::vector<double> inputs(n * d);
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < d; ++j) inputs[i * d + j] = std::sin(0.37 * double(i * d + j));
    std::vector<uint64_t> none, five{5};

    auto rng = dpd::Rng::insecure_fixed_seed(43);
    dpd::VerifiedRelease honest = dpd::simulate_round_verified(config, inputs, none, rng);
    rng = dpd::Rng::insecure_fixed_seed(43);
    dpd::Release reference = dpd::simulate_round(plain, inputs, none, rng);
    CHECK(honest.invalid.empty() && honest.sum == reference.sum);
    CHECK(honest.info.n_included == n && honest.truncation_delta == v.truncation_delta);

    rng = dpd::Rng::insecure_fixed_seed(43);
    dpd::VerifiedRelease cheated =
        dpd::simulate_round_verified_testing_malicious(config, inputs, none, five, rng);
    rng = dpd::Rng::insecure_fixed_seed(43);
    dpd::Release without_five = dpd::simulate_round(plain, inputs, five, rng);
    CHECK(cheated.invalid == five && cheated.sum == without_five.sum);
    CHECK(cheated.info.n_included == n - 1);
    CHECK(cheated.sum != honest.sum);

    std::vector<uint64_t> three{0, 3, 6};
    expect_error(DPD_ERR_TOO_MANY_DROPPED, "(clients 0, 3, 6)", [&] {
        dpd::simulate_round_verified_testing_malicious(config, inputs, none, three, rng);
    });
    expect_error(DPD_ERR_INVALID_ARGUMENT, "dpd_simulate_round_verified",
                 [&] { dpd::simulate_round(config, inputs, none, rng); });
    expect_error(DPD_ERR_INVALID_ARGUMENT, "validity off",
                 [&] { dpd::simulate_round_verified(plain, inputs, none, rng); });
    double total = dpd::verified_total_delta(0.5, 1e-6, v.truncation_delta);
    CHECK(std::fabs(total - (1e-6 + (1.0 + std::exp(0.5)) * v.truncation_delta)) <= 1e-20);
    CHECK(std::fabs(total - 1.0026487055922424e-06) <= 1e-20);

    // L2 (python3 with mpmath, the formulas of verified_shares::l2): x = ln(8/1e-9),
    // τ₂ = ceil(σ·sqrt(4 + 2·sqrt(4x) + 2x)) = ceil(1943493.779…) = 1943494; data_norm 2 →
    // 2097152 units, R = 4040646; δ_t = 8·exp(−y²), y = (sqrt(2t − 4) − 2)/2, t = τ₂²/σ²:
    // 9.9999354351203662e-10. Every row of `inputs` has norm ≤ 1.833 < 2.
    expect_error(DPD_ERR_INVALID_ARGUMENT, "data_norm",
                 [&] { config.set_validity_l2(-1.0, 1e-9); });
    expect_error(DPD_ERR_INVALID_ARGUMENT, "set_validity_l2",
                 [&] { config.set_validity(dpd::Validity::L2, 1e-9); });
    CHECK(config.validity_info().kind == DPD_VALIDITY_LINF);
    config.set_validity_l2(2.0, 1e-9);
    v = config.validity_info();
    CHECK(v.kind == DPD_VALIDITY_L2 && v.data_units == 2097152 && v.slice_units == 1943494 &&
          v.bound_units == 4040646);
    CHECK(std::fabs(v.truncation_delta - 9.9999354351203662e-10) <= 1e-21);
    rng = dpd::Rng::insecure_fixed_seed(43);
    dpd::VerifiedRelease l2_honest = dpd::simulate_round_verified(config, inputs, none, rng);
    CHECK(l2_honest.invalid.empty() && l2_honest.sum == reference.sum);
    rng = dpd::Rng::insecure_fixed_seed(43);
    dpd::VerifiedRelease l2_cheated =
        dpd::simulate_round_verified_testing_malicious(config, inputs, none, five, rng);
    CHECK(l2_cheated.invalid == five && l2_cheated.sum == without_five.sum);
    // A bound of 1.5 with every row but client 3's halved (norms ≤ 0.92; client 3's is 1.778):
    // client 3 refuses and is named.
    config.set_validity_l2(1.5, 1e-9);
    std::vector<double> long_three = inputs;
    for (size_t i = 0; i < n; ++i)
        if (i != 3)
            for (size_t j = 0; j < d; ++j) long_three[i * d + j] *= 0.5;
    expect_error(DPD_ERR_INVALID_ARGUMENT, "client 3: its data's L2 norm", [&] {
        dpd::simulate_round_verified(config, long_three, none, rng);
    });
}

static void accountant() {
    dpd::Accountant acc(1.0, 1e-6);
    acc.charge_pure(0.6);
    expect_error(DPD_ERR_BUDGET_EXCEEDED, "budget", [&] { acc.charge_pure(0.6); });
    dpd::PrivacySpent s = acc.spent();
    CHECK(s.rounds == 1 && std::fabs(s.epsilon - 0.6) < 1e-12);
}

// PLR without intercept straight through the C ABI's original entry point, predictions on the
// data set's own rows: what fit_plr(..., false) must reproduce.
static std::vector<double> make_plain_plr(const dpd::Dataset &data, const std::vector<double> &x,
                                          size_t n, dpd::Rng &rng) {
    dpd_plr_model *model = nullptr;
    dpd::check(dpd_plr_fit(data.get(), 1.0, 0.01, rng.get(), &model));
    std::vector<double> p(n);
    size_t len = 0;
    dpd_status s = dpd_plr_model_predict_proba(model, x.data(), x.size(), p.data(), p.size(), &len);
    dpd_plr_model_free(model);
    dpd::check(s);
    return p;
}

// A PLR fit and a private BLR fit through the wrapper, on data made here.
static void learners() {
    const size_t n = 300, d = 2;
    std::vector<double> x(n * d), labels(n), y(n);
    for (size_t i = 0; i < n; ++i) {
        x[i * d] = std::sin(0.7 * double(i));
        x[i * d + 1] = std::cos(1.3 * double(i));
        labels[i] = 2.0 * x[i * d] - x[i * d + 1] > 0.0 ? 1.0 : 0.0;
        y[i] = 0.8 * x[i * d] - 0.3 * x[i * d + 1];
    }
    auto rng = dpd::Rng::insecure_fixed_seed(11);
    dpd::Dataset data(x, d, labels);
    dpd::PlrModel plr = dpd::PlrModel::fit_plr(data, INFINITY, 0.01, rng);
    double auc = dpd::auc(plr.predict_proba(x), labels);
    std::printf("PLR (non-private) AUC %.4f\n", auc);
    CHECK(auc > 0.95);
    dpd::PlrModel copy = dpd::PlrModel::from_weights(plr.weights(), plr.input_radius());
    CHECK(copy.predict_proba(x) == plr.predict_proba(x));
    CHECK(std::isnan(copy.epsilon()));
    CHECK(!plr.intercept().has_value());

    // The intercept: a known model against σ(wᵀx + b) computed by hand (w = (0.5, -1), b = 0.3,
    // row (1, 0.5) inside the ball of radius 2/√2: σ(0.3) = 0.574442516811659), then a fit on
    // labels off the origin, whose intercept survives an export and import.
    auto known = dpd::PlrModel::from_weights_and_intercept(std::vector<double>{0.5, -1.0}, 0.3,
                                                           2.0);
    CHECK(known.intercept() == std::optional<double>(0.3));
    CHECK(std::fabs(known.predict_proba(std::vector<double>{1.0, 0.5})[0] - 0.574442516811659) <
          1e-15);
    std::vector<double> offset_labels(n);
    for (size_t i = 0; i < n; ++i) offset_labels[i] = x[i * d] > 0.4 ? 1.0 : 0.0;
    dpd::Dataset offset(x, d, offset_labels);
    auto rng_a = dpd::Rng::insecure_fixed_seed(3);
    dpd::PlrModel with_b = dpd::PlrModel::fit_plr(offset, INFINITY, 0.001, rng_a, true);
    std::optional<double> b = with_b.intercept();
    CHECK(b.has_value() && *b < 0.0);
    auto p_b = with_b.predict_proba(x);
    std::printf("PLR with intercept (non-private) b %.3f, AUC %.4f\n", b.value_or(NAN),
                dpd::auc(p_b, offset_labels));
    CHECK(dpd::auc(p_b, offset_labels) > 0.95);
    auto reimported = dpd::PlrModel::from_weights_and_intercept(with_b.weights(), b.value_or(0.0),
                                                                with_b.input_radius());
    CHECK(reimported.predict_proba(x) == p_b);
    // intercept = false is the old model, bit for bit (same seed, private fit).
    auto rng_b = dpd::Rng::insecure_fixed_seed(4);
    auto rng_c = dpd::Rng::insecure_fixed_seed(4);
    auto plain = dpd::PlrModel::fit_plr(offset, 1.0, 0.01, rng_b);
    auto c_plain = make_plain_plr(offset, x, n, rng_c);
    CHECK(plain.predict_proba(x) == c_plain);
    // A stack with intercepts: every level has one.
    auto stack = dpd::PlrModel::fit_pst_s(offset, 2, 2.0, 0.01, 0.01, 0.5, rng_a, true);
    CHECK(stack.intercept().has_value() && stack.low_level_intercept(0).has_value() &&
          stack.low_level_intercept(1).has_value());
    auto stack_plain = dpd::PlrModel::fit_pst_s(offset, 2, 2.0, 0.01, 0.01, 0.5, rng_a);
    CHECK(!stack_plain.intercept().has_value() && !stack_plain.low_level_intercept(0));
    expect_error(DPD_ERR_INVALID_ARGUMENT, "does not exist",
                 [&] { (void)stack.low_level_intercept(2); });
    expect_error(DPD_ERR_INVALID_ARGUMENT, "single logistic model",
                 [&] { (void)known.low_level_intercept(0); });

    // Public ranges: a known model (w = (2, -1), b = 0.5, ranges [0, 4] x [-1, 1], r = 1; rows
    // mapped to (clamp(x) - centre)/half-width, then clipped to radius 1/√2). Row (1, 0) maps to
    // (-0.5, 0): σ(-0.5) = 0.37754066879814541; row (3, 0) to (0.5, 0): σ(1.5) =
    // 0.81757447619364365; row (10, 0.5) to (1, 0.5), scaled by √(0.5/1.25): σ(1.5·√0.4 + 0.5).
    const dpd::PlrRanges box{{0.0, -1.0}, {4.0, 1.0}};
    auto ranged = dpd::PlrModel::from_weights_and_ranges(std::vector<double>{2.0, -1.0}, 0.5, box,
                                                         1.0);
    auto p_ranged = ranged.predict_proba(std::vector<double>{1.0, 0.0, 3.0, 0.0, 10.0, 0.5});
    CHECK(std::fabs(p_ranged[0] - 0.37754066879814541) < 1e-15);
    CHECK(std::fabs(p_ranged[1] - 0.81757447619364365) < 1e-15);
    CHECK(std::fabs(p_ranged[2] - 1.0 / (1.0 + std::exp(-(1.5 * std::sqrt(0.4) + 0.5)))) < 1e-15);
    CHECK(ranged.ranges().has_value() && ranged.ranges()->lo == box.lo &&
          ranged.ranges()->hi == box.hi);
    CHECK(!known.ranges().has_value());
    // A fit with ranges on the offset labels: predictions through the same map, an export with
    // its ranges re-imported bit for bit, and bad ranges refused with nothing drawn.
    const dpd::PlrRanges unit{{-1.0, -1.0}, {1.0, 1.0}};
    auto rng_r = dpd::Rng::insecure_fixed_seed(9);
    auto rng_r2 = dpd::Rng::insecure_fixed_seed(9);
    expect_error(DPD_ERR_INVALID_ARGUMENT, "column 1", [&] {
        (void)dpd::PlrModel::fit_plr(offset, 1.0, 0.01, rng_r, true,
                                     dpd::PlrRanges{{-1.0, 1.0}, {1.0, 1.0}});
    });
    expect_error(DPD_ERR_INVALID_ARGUMENT, "`n_ranges` = 1", [&] {
        (void)dpd::PlrModel::fit_plr(offset, 1.0, 0.01, rng_r, true,
                                     dpd::PlrRanges{{-1.0}, {1.0}});
    });
    expect_error(DPD_ERR_LENGTH_MISMATCH, "differ in length", [&] {
        (void)dpd::PlrModel::fit_plr(offset, 1.0, 0.01, rng_r, true,
                                     dpd::PlrRanges{{-1.0, -1.0}, {1.0}});
    });
    auto fit_r = dpd::PlrModel::fit_plr(offset, 1.0, 0.01, rng_r, true, unit);
    auto fit_r2 = dpd::PlrModel::fit_plr(offset, 1.0, 0.01, rng_r2, true, unit);
    auto p_r = fit_r.predict_proba(x);
    CHECK(p_r == fit_r2.predict_proba(x));
    auto w_r = fit_r.weights();
    double r_r = fit_r.input_radius(), b_r = fit_r.intercept().value_or(NAN);
    bool by_hand = true;
    for (size_t i = 0; i < n; ++i) {
        // The ranges [-1, 1] map every x here to itself; clip to r/√2, then w·x̃ + b.
        double u = x[i * d], v = x[i * d + 1], norm = std::sqrt(u * u + v * v);
        double radius = r_r / std::sqrt(2.0), s = norm > radius ? radius / norm : 1.0;
        double m = w_r[0] * u * s + w_r[1] * v * s + b_r;
        by_hand = by_hand && std::fabs(p_r[i] - 1.0 / (1.0 + std::exp(-m))) < 1e-12;
    }
    CHECK(by_hand);
    auto back_r = dpd::PlrModel::from_weights_and_ranges(w_r, b_r, *fit_r.ranges(), r_r);
    CHECK(back_r.predict_proba(x) == p_r);

    // The stacked fits with ranges: rows 4x in the ranges [-4, 4]² map back to x exactly
    // ((4x - 0)/4, powers of two), so each stack fitted on 4x with the ranges is the stack
    // fitted on x without, bit for bit (same seed); a row outside, (100, 0), predicts as (1, 0).
    std::vector<double> x4(x.size());
    for (size_t i = 0; i < x.size(); ++i) x4[i] = 4.0 * x[i];
    dpd::Dataset offset4(x4, d, offset_labels);
    const dpd::PlrRanges four{{-4.0, -4.0}, {4.0, 4.0}};
    const std::vector<uint32_t> one_each{0, 1};
    dpd::FeatureGroups halves(one_each, std::vector<double>{0.5, 0.5});
    auto rng_s = dpd::Rng::insecure_fixed_seed(12);
    auto rng_s2 = dpd::Rng::insecure_fixed_seed(12);
    std::vector<std::pair<dpd::PlrModel, dpd::PlrModel>> stacks;
    stacks.emplace_back(
        dpd::PlrModel::fit_pst_s(offset4, 2, 2.0, 0.01, 0.1, 0.5, rng_s, true, four),
        dpd::PlrModel::fit_pst_s(offset, 2, 2.0, 0.01, 0.1, 0.5, rng_s2, true));
    stacks.emplace_back(
        dpd::PlrModel::fit_pst_f(offset4, halves, 2.0, 0.01, 0.1, 0.5, rng_s, true, four),
        dpd::PlrModel::fit_pst_f(offset, halves, 2.0, 0.01, 0.1, 0.5, rng_s2, true));
    stacks.emplace_back(dpd::PlrModel::fit_pst_h(offset4, offset4, halves, 1.0, 2.0, 0.01, 0.5,
                                                 0.1, 0.5, rng_s, true, four),
                        dpd::PlrModel::fit_pst_h(offset, offset, halves, 1.0, 2.0, 0.01, 0.5, 0.1,
                                                 0.5, rng_s2, true));
    for (const auto &[ranged_stack, plain_stack] : stacks) {
        CHECK(ranged_stack.predict_proba(x4) == plain_stack.predict_proba(x));
        CHECK(ranged_stack.predict_proba(std::vector<double>{100.0, 0.0}) ==
              plain_stack.predict_proba(std::vector<double>{1.0, 0.0}));
        CHECK(!ranged_stack.ranges().has_value() && !plain_stack.low_level_ranges(0));
    }
    // PST-S's low-level models read both columns, PST-F's model 1 column 1 alone.
    CHECK(stacks[0].first.low_level_ranges(1)->lo == four.lo);
    auto second = stacks[1].first.low_level_ranges(1);
    CHECK(second && second->lo == std::vector<double>{-4.0} &&
          second->hi == std::vector<double>{4.0});
    expect_error(DPD_ERR_INVALID_ARGUMENT, "column 0", [&] {
        (void)dpd::PlrModel::fit_pst_f(offset4, halves, 2.0, 0.01, 0.1, 0.5, rng_s, true,
                                       dpd::PlrRanges{{4.0, -4.0}, {-4.0, 4.0}});
    });
    expect_error(DPD_ERR_LENGTH_MISMATCH, "differ in length", [&] {
        (void)dpd::PlrModel::fit_pst_s(offset4, 2, 2.0, 0.01, 0.1, 0.5, rng_s, true,
                                       dpd::PlrRanges{{-4.0, -4.0}, {4.0}});
    });

    std::vector<double> assumed{1.0, 1.0};
    dpd::BlrConfig config(2.0, 1e-5, assumed, 1.5);
    config.distributed(3, 1, dpd::ShareMode::Seed);
    dpd::BlrModel blr(x, y, d, config, rng);
    auto spent = blr.spent();
    CHECK(spent.first > 0.0 && spent.first <= 2.0 + 1e-9 && spent.second <= 1e-5);
    double mae = dpd::mae(y, blr.predict(x));
    std::printf("BLR (DCA, eps=2) MAE %.4f, coefficients %.3f %.3f\n", mae, blr.mean()[0],
                blr.mean()[1]);
    CHECK(mae < 0.3); // |y| averages ~0.5: a model that learned nothing is far above this
    expect_error(DPD_ERR_INVALID_ARGUMENT, "n_nodes",
                 [&] { config.distributed(1, 0, dpd::ShareMode::Seed); });

    // Public standard deviations: the bounds are one multiplier times them.
    std::vector<double> x_std{0.7, 0.35};
    config.public_std(x_std, 0.5);
    dpd::BlrModel scaled(x, y, d, config, rng);
    auto [bounds, bound_y] = scaled.bounds();
    CHECK(bounds.size() == 2 && bound_y > 0.0);
    CHECK(std::fabs(bounds[0] / x_std[0] - bounds[1] / x_std[1]) < 1e-12 * bounds[0]);
    config.dp_std(dpd::StdMode::PerDimension, 0.2);
    expect_error(DPD_ERR_INVALID_ARGUMENT, "budget_share",
                 [&] { config.dp_std(dpd::StdMode::Pooled, 1.5); });
    expect_error(DPD_ERR_INVALID_ARGUMENT, "dimensions",
                 [&] { config.public_std(std::vector<double>{1.0}, 1.0); });

    // The shares of clipped records: none unless asked for, then in [0, 1] with their noise.
    expect_error(DPD_ERR_INVALID_STATE, "released no clipped shares",
                 [&] { (void)scaled.clipped_share(); });
    config.clipped_share(0.1);
    dpd::BlrModel counted(x, y, d, config, rng);
    dpd::ClippedShare clipped = counted.clipped_share();
    CHECK(clipped.y >= 0.0 && clipped.y <= 1.0 && clipped.x >= 0.0 && clipped.x <= 1.0);
    CHECK(clipped.sd > 0.0);
    expect_error(DPD_ERR_INVALID_ARGUMENT, "budget_share", [&] { config.clipped_share(1.0); });
}

// Iterative learning and the RDP accountant through the wrapper: a published figure (TF
// Privacy's compute_dp_sgd_privacy_statement, 3 decimals), a calibrated run that lasts exactly
// the planned iterations, and the budget refusal.
static void iterative() {
    CHECK(std::fabs(dpd::rdp_epsilon(64.0 / 10000.0, 1.0, 782, 1e-6) - 1.616) < 5e-4);
    double z0 = dpd::rdp_noise_multiplier(1.0, 1e-5, 100, 0.05, dpd::Sampling::WithoutReplacement);
    CHECK(dpd::rdp_epsilon(0.05, z0, 100, 1e-5, dpd::Sampling::WithoutReplacement) <= 1.0);

    const size_t n = 200, d = 2, planned = 15;
    std::vector<double> x(n * d), labels(n);
    for (size_t i = 0; i < n; ++i) {
        x[i * d] = std::sin(0.7 * double(i));
        x[i * d + 1] = std::cos(1.3 * double(i));
        labels[i] = 2.0 * x[i * d] - x[i * d + 1] > 0.0 ? 1.0 : 0.0;
    }
    auto config = dpd::IterativeConfig::logistic(0.01);
    config.poisson(0.25).adam(0.1).dca(3, 2);
    auto rng = dpd::Rng::insecure_fixed_seed(5);
    expect_error(DPD_ERR_INVALID_STATE, "set_private",
                 [&] { dpd::IterativeTrainer unchosen(config, n, d, rng); });
    double z = config.calibrate_noise_multiplier(n, d, 3.0, 1e-5, planned);
    config.private_budget(3.0, 1e-5, z);
    dpd::IterativeTrainer trainer(config, n, d, rng);
    CHECK(trainer.last_release().empty());
    std::vector<size_t> dropped{4};
    dpd_iterative_step_info info = trainer.step(x, labels, dropped);
    CHECK(info.n_included == n - 1 && info.iteration == 0);
    CHECK(trainer.last_release().size() == d && info.noise_sigma_released > 0.0);
    CHECK(trainer.fit(x, labels, 100) == planned - 1);
    auto spent = trainer.spent();
    CHECK(spent.first <= 3.0 && spent.first > 3.0 * (1 - 1e-6) && spent.second == 1e-5);
    auto before = trainer.params();
    expect_error(DPD_ERR_BUDGET_EXCEEDED, "nothing was released",
                 [&] { trainer.step(x, labels); });
    CHECK(trainer.params() == before && trainer.iterations() == planned);
    CHECK(trainer.noise_multiplier() == z);
    double auc = dpd::auc(trainer.predict(x), labels);
    std::printf("iterative LR (DCA, eps=3, z=%.3f, %zu iterations) AUC %.4f\n", z, planned, auc);
    CHECK(auc > 0.5 && auc <= 1.0);

    // DP-VI BLR: θ has 2d entries; the predictions are xᵀm.
    auto vi = dpd::IterativeConfig::blr_vi(1.0, 1.0);
    vi.poisson(1.0).sgd(0.5).non_private();
    dpd::IterativeTrainer blr(vi, n, d, rng);
    expect_error(DPD_ERR_INVALID_STATE, "logistic regression only", [&] { vi.intercept(true); });
    // Logistic regression with an intercept: θ = (w, b), predictions σ(wᵀx + b).
    auto with_b = dpd::IterativeConfig::logistic(0.01);
    with_b.intercept(true).poisson(1.0).sgd(0.5).non_private();
    dpd::IterativeTrainer lr_b(with_b, n, d, rng);
    lr_b.fit(x, labels, 50);
    auto theta_b = lr_b.params();
    CHECK(theta_b.size() == d + 1);
    auto p_b = lr_b.predict(x);
    for (size_t i = 0; i < n; ++i) {
        double m = theta_b[0] * x[i * d] + theta_b[1] * x[i * d + 1] + theta_b[2];
        CHECK(std::fabs(p_b[i] - 1.0 / (1.0 + std::exp(-m))) < 1e-12);
    }
    // Public ranges [0, 10] and [−2, 2]: (2.5, 3) maps to (−0.5, 1), (12.5, −1) to (1, −0.5);
    // at θ = 0 the gradients −y·σ(0)·(x̃, 1) are (0.25, −0.5, −0.5) and (0.5, −0.25, 0.5), so one
    // SGD step of rate 1 over the batch of 2 gives θ = (−0.375, 0.375, 0) (worked out by hand).
    auto ranged = dpd::IterativeConfig::logistic(0.0);
    ranged.intercept(true).fixed_size(2).sgd(1.0).dca(2, 0).non_private();
    expect_error(DPD_ERR_INVALID_ARGUMENT, "range of column 1",
                 [&] { ranged.ranges({{0.0, 1.0}, {10.0, 1.0}}); });
    expect_error(DPD_ERR_INVALID_STATE, "logistic regression only",
                 [&] { vi.ranges({{0.0}, {1.0}}); });
    ranged.ranges({{0.0, -2.0}, {10.0, 2.0}});
    dpd::IterativeTrainer lr_r(ranged, 2, 2, rng);
    lr_r.step(std::vector<double>{2.5, 3.0, 12.5, -1.0}, std::vector<double>{1.0, 0.0});
    auto theta_r = lr_r.params();
    const double want_r[3] = {-0.375, 0.375, 0.0};
    for (size_t a = 0; a < 3; ++a) CHECK(std::fabs(theta_r[a] - want_r[a]) < 1e-9);
    // (12.5, −5) is outside both ranges: it predicts as (10, −2), σ(−0.75).
    auto p_r = lr_r.predict(std::vector<double>{12.5, -5.0, 10.0, -2.0});
    CHECK(p_r[0] == p_r[1] && std::fabs(p_r[0] - 1.0 / (1.0 + std::exp(0.75))) < 1e-9);
    std::vector<double> y(n);
    for (size_t i = 0; i < n; ++i) y[i] = 0.8 * x[i * d] - 0.3 * x[i * d + 1];
    CHECK(blr.fit(x, y, 50) == 50);
    auto theta = blr.params();
    CHECK(theta.size() == 2 * d);
    auto pred = blr.predict(x);
    CHECK(pred.size() == n && std::fabs(pred[3] - (theta[0] * x[6] + theta[1] * x[7])) < 1e-12);
    CHECK(std::isinf(blr.spent().first));
}

// The noise-aware posterior of a BLR fit through the wrapper: wider than the naive one at ε = 1,
// and a new observation adds exactly 1/λ = 1 to the predictive variance.
static void blr_uncertainty() {
    const size_t n = 300, d = 2;
    std::vector<double> x(n * d), y(n);
    for (size_t i = 0; i < n; ++i) {
        x[i * d] = std::sin(0.7 * double(i));
        x[i * d + 1] = std::cos(1.3 * double(i));
        y[i] = 0.8 * x[i * d] - 0.3 * x[i * d + 1] + 0.3 * std::sin(5.0 * double(i));
    }
    std::vector<double> assumed{1.0, 1.0};
    dpd::BlrConfig config(1.0, 1e-5, assumed, 2.0);
    config.projection(false);
    auto rng = dpd::Rng::insecure_fixed_seed(8);
    dpd::BlrModel model(x, y, d, config, rng);
    dpd::BlrNoiseAware aware = model.noise_aware(300, rng);
    dpd::PosteriorSummary a = aware.coefficients(0.9), b = model.coefficients(0.9);
    CHECK(a.mean.size() == d && b.sd.size() == d && aware.d() == d);
    for (size_t j = 0; j < d; ++j) {
        CHECK(a.sd[j] > b.sd[j]);
        CHECK(a.lower[j] < a.mean[j] && a.mean[j] < a.upper[j]);
    }
    std::printf("BLR eps=1 beta_1: naive sd %.4f, noise-aware sd %.4f (ESS %.0f of 300)\n",
                b.sd[0], a.sd[0], aware.effective_sample_size());
    auto mean_response = aware.predict(x, false, 0.9);
    auto observation = aware.predict(x, true, 0.9);
    CHECK(mean_response.mean.size() == n);
    CHECK(std::fabs(observation.sd[7] * observation.sd[7] -
                    mean_response.sd[7] * mean_response.sd[7] - 1.0) < 1e-9);
    expect_error(DPD_ERR_INVALID_ARGUMENT, "credible level", [&] { aware.coefficients(1.5); });

    // The same posterior from the statistics as a host that released them itself holds them:
    // equal to the model's for the same rng state; a NaN in the statistics is refused.
    dpd::NoiseAwarePrior prior;
    prior.bounds_x = model.bounds().first;
    std::vector<double> stats = model.stats();
    auto rng_a = dpd::Rng::insecure_fixed_seed(9), rng_b = dpd::Rng::insecure_fixed_seed(9);
    dpd::PosteriorSummary from_model = model.noise_aware(300, rng_a).coefficients(0.9);
    dpd::PosteriorSummary from_host =
        dpd::BlrNoiseAware::from_stats(stats, n, d, false, model.stats_noise(), prior, 300, rng_b)
            .coefficients(0.9);
    CHECK(from_model.mean == from_host.mean && from_model.sd == from_host.sd);
    CHECK(from_model.lower == from_host.lower && from_model.upper == from_host.upper);
    stats[0] = NAN;
    expect_error(DPD_ERR_NON_FINITE, "statistics", [&] {
        dpd::BlrNoiseAware::from_stats(stats, n, d, false, model.stats_noise(), prior, 300, rng);
    });
}

// The summation kernels: wrap-around by hand, every kernel the same, sub undoes add.
static void kernels() {
    const uint64_t max = UINT64_MAX;
    std::vector<uint64_t> src = {2, max, 1, 0, max, 5, 7};
    for (dpd::Kernel k : {dpd::Kernel::Dispatched, dpd::Kernel::Scalar, dpd::Kernel::Wide}) {
        std::vector<uint64_t> acc = {max, max, 0, 0, 1, 10, 3};
        dpd::wrapping_add(acc, src, k);
        CHECK((acc == std::vector<uint64_t>{1, max - 1, 1, 0, 0, 15, 10}));
        dpd::wrapping_sub(acc, src);
        CHECK((acc == std::vector<uint64_t>{max, max, 0, 0, 1, 10, 3}));
    }
    std::vector<uint64_t> short_acc(3);
    expect_error(DPD_ERR_LENGTH_MISMATCH, "lengths", [&] { dpd::wrapping_add(short_acc, src); });
    std::string path = dpd::kernel_path();
    CHECK(path == "portable" || path == "avx2" || path == "avx512f");
    dpd::KernelTiming t = dpd::kernel_benchmark(4096, 3);
    CHECK(t.len == 4096 && t.path == path && t.seconds >= 0.0);
    std::printf("kernel %s: %zu words in %.2e s\n", t.path.c_str(), t.len, t.seconds);
}

// Client 0 shards twice; node 0 absorbs the first attempt, node 1 the retry. The pair agreement
// leaves client 0 out (the release is the others' sum); agreeing on ids alone is refused by the
// aggregator; a reused round id is refused by the ledger.
static void mixed_retry() {
    const size_t n = 4, d = 3;
    auto config = dpd::RoundConfig::exact_non_private(78, n, 2, 1, d, 2.0, dpd::ShareMode::Seed);
    auto rng = dpd::Rng::os();
    std::vector<dpd::ComputeNode> nodes;
    for (uint32_t k = 0; k < 2; ++k) nodes.emplace_back(config, k);
    std::vector<uint8_t> first0;
    for (size_t i = 0; i < n; ++i) {
        std::vector<double> x(d);
        for (size_t j = 0; j < d; ++j) x[j] = value(i, j);
        dpd::Client client(config, i, rng);
        dpd::Shares shares = client.shard(x);
        if (i == 0) {
            dpd::Shares retry = client.shard(x);
            CHECK(retry.shard_id() != shares.shard_id());
            CHECK(dpd::wire_inspect(retry.message(1)).shard == retry.shard_id());
            first0 = shares.message(0);
            nodes[0].absorb(first0);
            nodes[1].absorb(retry.message(1));
            continue;
        }
        for (uint32_t k = 0; k < 2; ++k) nodes[k].absorb(shares.message(k));
    }
    {
        dpd::Aggregator ids_only(config);
        ids_only.add(nodes[0].finalize(nodes[0].received()));
        expect_error(DPD_ERR_INVALID_ARGUMENT, "sharded more than once",
                     [&] { ids_only.add(nodes[1].finalize(nodes[1].received())); });
    }
    dpd::ShardSet agreed = dpd::agree({nodes[0].received(), nodes[1].received()});
    CHECK(agreed.clients == (std::vector<uint64_t>{1, 2, 3}));
    nodes[0].retract(first0);
    dpd::Aggregator aggregator(config);
    for (auto &node : nodes) aggregator.add(node.finalize(agreed));
    dpd::Release r = aggregator.release();
    for (size_t j = 0; j < d; ++j) {
        double plain = value(1, j) + value(2, j) + value(3, j);
        CHECK(std::fabs(r.sum[j] - plain) <=
              double(n) * std::ldexp(1.0, -int(r.info.frac_bits)) + 1e-12);
    }
    dpd::RoundLedger ledger;
    CHECK(ledger.admit(config));
    CHECK(!ledger.admit(config));
    auto other = dpd::RoundConfig::exact_non_private(78, n + 1, 2, 1, d, 2.0, dpd::ShareMode::Seed);
    expect_error(DPD_ERR_WRONG_ROUND, "already used", [&] { ledger.admit(other); });
    dpd::ComputeNode admitted(ledger, config, 0);
    dpd::Aggregator admitted_aggregator(ledger, config);
    expect_error(DPD_ERR_WRONG_ROUND, "already used",
                 [&] { dpd::ComputeNode refused(ledger, other, 0); });
    expect_error(DPD_ERR_WRONG_ROUND, "already used",
                 [&] { dpd::Aggregator refused(ledger, other); });
    // Saved and restored (a restarted party): the reused id is still refused.
    std::vector<dpd::RoundLedger::Entry> saved = ledger.entries();
    CHECK(saved.size() == 1 && saved[0].round == 78);
    dpd::RoundLedger restored;
    CHECK(restored.admit(saved[0]));
    CHECK(!restored.admit(config));
    expect_error(DPD_ERR_WRONG_ROUND, "already used", [&] { restored.admit(other); });
    dpd::RoundLedger::Entry tampered = saved[0];
    tampered.digest[0] ^= 1;
    expect_error(DPD_ERR_WRONG_ROUND, "already used", [&] { restored.admit(tampered); });
}

// y = 10 + 0.5 hours + 4 level (+ skewed noise), level 0..5 coded as 5 indicators declared as
// one group: level effects, a prediction, fit quality; a row with two levels set is refused.
static void regression() {
    const size_t n = 20000, d = 6;
    std::vector<double> x(n * d, 0.0), y(n);
    uint64_t s = 7;
    auto uniform = [&s] {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        return double(s >> 11) / 9007199254740992.0;
    };
    for (size_t i = 0; i < n; ++i) {
        x[i * d] = 60.0 * uniform();
        size_t level = size_t(6.0 * uniform());
        if (level > 0) x[i * d + level] = 1.0;
        y[i] = 10.0 + 0.5 * x[i * d] + 4.0 * double(level) - 10.0 * std::log(1.0 - uniform());
    }
    const std::vector<double> lower{0, 0, 0, 0, 0, 0}, upper{60, 1, 1, 1, 1, 1};
    const std::vector<uint32_t> group_of{0, 3, 3, 3, 3, 3};
    auto rng = dpd::Rng::insecure_fixed_seed(21);
    dpd::Regression fit(x, y, lower, upper, 0.0, 200.0, 1.0, 1e-5, rng, group_of);
    std::vector<double> b = fit.coefficients();
    CHECK(b.size() == d + 1 && fit.d() == d);
    CHECK(std::fabs(b[1] - 0.5) < 0.1);
    for (size_t l = 1; l < 6; ++l) CHECK(std::fabs(b[1 + l] - 4.0 * double(l)) < 2.5);
    std::vector<double> se = fit.std_errors();
    CHECK(se.size() == d + 1 && se[1] > 0.0);
    const std::vector<double> rows{30, 0, 1, 0, 0, 0, 30, 0, 0, 0, 0, 1};
    std::vector<double> p = fit.predict(rows);
    CHECK(p.size() == 2);
    CHECK(std::fabs(p[0] - 43.0) < 4.0 && std::fabs(p[1] - 55.0) < 4.0); // + E[noise] = 10
    dpd::RegressionQuality q = fit.quality();
    CHECK(q.r_squared > 0.3 && q.r_squared < 1.0 && q.residual_sd > 0.0);
    CHECK(fit.spent().first <= 1.0 && fit.spent().second <= 1e-5);
    CHECK(fit.warnings().empty());
    // Without groups the same call fits the columns as numbers.
    dpd::Regression plain(x, y, lower, upper, 0.0, 200.0, 1.0, 1e-5, rng);
    CHECK(plain.coefficients().size() == d + 1);

    x[4 * d + 2] = 1.0, x[4 * d + 5] = 1.0; // row 4 sets two levels
    expect_error(DPD_ERR_INVALID_ARGUMENT, "both 1", [&] {
        dpd::Regression refused(x, y, lower, upper, 0.0, 200.0, 1.0, 1e-5, rng, group_of);
    });
    expect_error(DPD_ERR_LENGTH_MISMATCH, "group_of", [&] {
        dpd::Regression refused(x, y, lower, upper, 0.0, 200.0, 1.0, 1e-5, rng,
                                std::vector<uint32_t>{0, 1});
    });
}

int main() {
    dpd::check_abi();
    std::printf("dpdist %s\n", dpd::version().c_str());
    dca_round(dpd::ShareMode::Full);
    dca_round(dpd::ShareMode::Seed);
    mixed_retry();
    noisy_calls_run_once();
    errors();
    verified_round();
    accountant();
    learners();
    iterative();
    blr_uncertainty();
    kernels();
    regression();
    if (failures != 0) {
        std::fprintf(stderr, "test_dpdist (C++): %d of %d checks FAILED\n", failures, checks);
        return 1;
    }
    std::printf("test_dpdist (C++): all %d checks passed\n", checks);
    return 0;
}
