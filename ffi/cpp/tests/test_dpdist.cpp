// The C++ RAII wrapper (include/dpdist.hpp): a DCA round with a dropout, error cases as
// exceptions carrying the status and message, and the accountant.
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
    dpd::RoundConfig config(77, n, m, 1, d, 2.0, mode);
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
    std::vector<uint64_t> agreed = nodes[1].received();
    CHECK(agreed.size() == n - 1);
    nodes[0].retract(lost);
    dpd::Aggregator aggregator(config);
    for (auto &node : nodes) aggregator.add(node.finalize(agreed));
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
    dpd::RoundConfig config(1, 3, 2, 1, 2, 1.0, dpd::ShareMode::Seed);
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
        dpd::RoundConfig bad(1, 3, 2, 1, 2, 1.0, static_cast<dpd::ShareMode>(9));
    });
    expect_error(DPD_ERR_INVALID_ARGUMENT, "analytic",
                 [] { dpd::gaussian_sigma_classic(2.0, 1e-5, 1.0); });
}

static void accountant() {
    dpd::Accountant acc(1.0, 1e-6);
    acc.charge_pure(0.6);
    expect_error(DPD_ERR_BUDGET_EXCEEDED, "budget", [&] { acc.charge_pure(0.6); });
    dpd::PrivacySpent s = acc.spent();
    CHECK(s.rounds == 1 && std::fabs(s.epsilon - 0.6) < 1e-12);
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

int main() {
    dpd::check_abi();
    std::printf("dpdist %s\n", dpd::version().c_str());
    dca_round(dpd::ShareMode::Full);
    dca_round(dpd::ShareMode::Seed);
    noisy_calls_run_once();
    errors();
    accountant();
    learners();
    kernels();
    if (failures != 0) {
        std::fprintf(stderr, "test_dpdist (C++): %d of %d checks FAILED\n", failures, checks);
        return 1;
    }
    std::printf("test_dpdist (C++): all %d checks passed\n", checks);
    return 0;
}
