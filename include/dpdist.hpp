// dpdist.hpp — a C++17 RAII wrapper over the dpdist C ABI (dpdist.h). Hand-written; header-only.
//
// - Every handle is owned by exactly one object (move-only, freed in the destructor).
// - Every failing call throws dpd::Error, carrying the dpd_status and the library's message.
// - Arrays go in as dpd::Span<const T> (built implicitly from std::vector, std::array or a
//   pointer and a length) and come out as std::vector.
// - Randomness: dpd::Rng::os() in production; dpd::Rng::insecure_fixed_seed() for tests only.
#ifndef DPDIST_HPP
#define DPDIST_HPP

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dpdist.h"

namespace dpd {

/// A failed dpdist call: the status code and the message of dpd_last_error_message().
class Error : public std::runtime_error {
public:
    Error(dpd_status status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    /// The status the C function returned.
    dpd_status status() const noexcept { return status_; }
    /// Its name, e.g. "DPD_ERR_DUPLICATE_CLIENT".
    const char *status_name() const noexcept {
        return dpd_status_name(static_cast<uint32_t>(status_));
    }

private:
    dpd_status status_;
};

/// The message of the last failed call on this thread.
inline std::string last_error_message() {
    size_t len = 0;
    if (dpd_last_error_message(nullptr, 0, &len) != DPD_OK) return "unknown error";
    std::string message(len + 1, '\0');
    if (dpd_last_error_message(&message[0], message.size(), &len) != DPD_OK) {
        return "unknown error";
    }
    message.resize(len);
    return message;
}

/// Throws dpd::Error unless `status` is DPD_OK.
inline void check(dpd_status status) {
    if (status != DPD_OK) throw Error(status, last_error_message());
}

/// Throws unless the loaded library implements the ABI this header describes.
inline void check_abi() {
    if (dpd_abi_version() != DPD_ABI_VERSION) {
        throw Error(DPD_ERR_INVALID_STATE,
                    "libdpdist ABI " + std::to_string(dpd_abi_version()) +
                        " does not match dpdist.h ABI " + std::to_string(DPD_ABI_VERSION));
    }
}

/// The library version, e.g. "0.1.0".
inline std::string version() { return dpd_version(); }

/// A read-only view of contiguous elements (std::span is C++20).
template <class T> class Span {
public:
    Span() noexcept = default;
    Span(const T *data, size_t size) noexcept : data_(data), size_(size) {}
    Span(const std::vector<std::remove_const_t<T>> &v) noexcept : data_(v.data()), size_(v.size()) {}
    template <size_t N>
    Span(const std::array<std::remove_const_t<T>, N> &a) noexcept : data_(a.data()), size_(N) {}
    const T *data() const noexcept { return data_; }
    size_t size() const noexcept { return size_; }

private:
    const T *data_ = nullptr;
    size_t size_ = 0;
};

namespace detail {

template <class T, void (*Free)(T *)> struct Deleter {
    void operator()(T *p) const noexcept { Free(p); }
};

/// An owning handle.
template <class T, void (*Free)(T *)> using Handle = std::unique_ptr<T, Deleter<T, Free>>;

/// Creates a handle with a C constructor whose last argument is `T **out`.
template <class T, void (*Free)(T *), class Make> Handle<T, Free> make(Make &&make_call) {
    T *raw = nullptr;
    check(make_call(&raw));
    return Handle<T, Free>(raw);
}

/// Copies a value a handle already holds through a query-size call
/// `call(T *out, size_t cap, size_t *len)`: size, then data. Only for calls that compute
/// nothing; a call that computes is sized from its inputs with `compute` instead.
template <class T, class Call> std::vector<T> fetch(Call &&call) {
    size_t len = 0;
    dpd_status status = call(nullptr, 0, &len);
    if (status == DPD_OK) return {};
    if (status != DPD_ERR_BUFFER_TOO_SMALL) check(status);
    std::vector<T> out(len);
    check(call(out.data(), out.size(), &len));
    out.resize(len);
    return out;
}

/// Runs a computing query-size call once into a buffer of `expected` elements, the length the
/// inputs imply. The C side checks the capacity before computing, so should `expected` ever be
/// short, the refused call did no work and the retry is the only computation.
template <class T, class Call> std::vector<T> compute(size_t expected, Call &&call) {
    std::vector<T> out(expected);
    size_t len = 0;
    dpd_status status = call(out.data(), out.size(), &len);
    if (status == DPD_ERR_BUFFER_TOO_SMALL) {
        out.resize(len);
        status = call(out.data(), out.size(), &len);
    }
    check(status);
    out.resize(len);
    return out;
}

} // namespace detail

/// Caps dpdist's worker threads; call before any other computation (0 = one per core).
inline void set_num_threads(size_t n) { check(dpd_set_num_threads(n)); }

// ---- randomness ----------------------------------------------------------------------------

/// A source of randomness; each call that uses it draws an independent stream.
class Rng {
public:
    /// ChaCha20 keyed from the OS CSPRNG: the one for production.
    static Rng os() {
        return Rng(detail::make<dpd_rng, dpd_rng_free>(
            [](dpd_rng **out) { return dpd_rng_new_os(out); }));
    }
    /// INSECURE deterministic generator, for tests and reproducible experiments only.
    static Rng insecure_fixed_seed(uint64_t seed) {
        return Rng(detail::make<dpd_rng, dpd_rng_free>(
            [seed](dpd_rng **out) { return dpd_rng_new_insecure_fixed_seed(seed, out); }));
    }
    dpd_rng *get() const noexcept { return h_.get(); }

private:
    explicit Rng(detail::Handle<dpd_rng, dpd_rng_free> h) : h_(std::move(h)) {}
    detail::Handle<dpd_rng, dpd_rng_free> h_;
};

// ---- calibration and samplers ----------------------------------------------------------------

inline double gaussian_sigma_classic(double epsilon, double delta, double l2_sensitivity) {
    double out = 0.0;
    check(dpd_gaussian_sigma_classic(epsilon, delta, l2_sensitivity, &out));
    return out;
}
inline double gaussian_sigma_analytic(double epsilon, double delta, double l2_sensitivity) {
    double out = 0.0;
    check(dpd_gaussian_sigma_analytic(epsilon, delta, l2_sensitivity, &out));
    return out;
}
inline double distributed_sigma(double sigma_total, size_t n_clients, size_t max_dropped) {
    double out = 0.0;
    check(dpd_distributed_sigma(sigma_total, n_clients, max_dropped, &out));
    return out;
}
inline double laplace_scale(double epsilon, double l1_sensitivity) {
    double out = 0.0;
    check(dpd_laplace_scale(epsilon, l1_sensitivity, &out));
    return out;
}
inline std::vector<int64_t> sample_discrete_gaussian(Rng &rng, double sigma_units, size_t n) {
    std::vector<int64_t> out(n);
    check(dpd_sample_discrete_gaussian(rng.get(), sigma_units, out.data(), n));
    return out;
}
inline std::vector<int64_t> sample_discrete_laplace(Rng &rng, double scale_units, size_t n) {
    std::vector<int64_t> out(n);
    check(dpd_sample_discrete_laplace(rng.get(), scale_units, out.data(), n));
    return out;
}
inline std::vector<double> sample_gaussian(Rng &rng, double sigma, size_t n) {
    std::vector<double> out(n);
    check(dpd_sample_gaussian(rng.get(), sigma, out.data(), n));
    return out;
}
inline std::vector<double> sample_laplace(Rng &rng, double scale, size_t n) {
    std::vector<double> out(n);
    check(dpd_sample_laplace(rng.get(), scale, out.data(), n));
    return out;
}
inline std::vector<double> sample_objective_perturbation(Rng &rng, double epsilon_prime, size_t d) {
    std::vector<double> out(d);
    check(dpd_sample_objective_perturbation(rng.get(), epsilon_prime, out.data(), d));
    return out;
}

/// Total privacy loss spent so far.
struct PrivacySpent {
    double epsilon;
    double delta;
    size_t rounds;
};

/// A privacy budget; a charge that would exceed it throws (status DPD_ERR_BUDGET_EXCEEDED)
/// and changes nothing. Charge BEFORE releasing a round's output.
class Accountant {
public:
    Accountant(double epsilon, double delta)
        : h_(detail::make<dpd_accountant, dpd_accountant_free>([&](dpd_accountant **out) {
              return dpd_accountant_new(epsilon, delta, out);
          })) {}
    void charge_gaussian(double l2_sensitivity, double sigma) {
        check(dpd_accountant_charge_gaussian(h_.get(), l2_sensitivity, sigma));
    }
    void charge_zcdp(double rho) { check(dpd_accountant_charge_zcdp(h_.get(), rho)); }
    void charge_pure(double epsilon) { check(dpd_accountant_charge_pure(h_.get(), epsilon)); }
    void charge_approx(double epsilon, double delta) {
        check(dpd_accountant_charge_approx(h_.get(), epsilon, delta));
    }
    PrivacySpent spent() const {
        PrivacySpent s{0.0, 0.0, 0};
        check(dpd_accountant_spent(h_.get(), &s.epsilon, &s.delta, &s.rounds));
        return s;
    }

private:
    detail::Handle<dpd_accountant, dpd_accountant_free> h_;
};

// ---- DCA -------------------------------------------------------------------------------------

/// How masks travel.
enum class ShareMode : uint32_t { Full = DPD_SHARE_MODE_FULL, Seed = DPD_SHARE_MODE_SEED };

/// Issue 43's validity check of a round (dpd_round_config_set_validity).
/// Validity::L2 is set with RoundConfig::set_validity_l2 (it needs the data's norm bound).
enum class Validity : uint32_t {
    None = DPD_VALIDITY_NONE,
    Linf = DPD_VALIDITY_LINF,
    L2 = DPD_VALIDITY_L2
};

/// The public parameters of a round; every party builds the same one.
class RoundConfig {
public:
    /// A differentially private round: noise_sigma_total > 0 is required (0, negative or NaN
    /// throws DPD_ERR_INVALID_PRIVACY_PARAMETER); frac_bits: DPD_FRAC_BITS_AUTO or explicit.
    /// An exact sum is RoundConfig::exact_non_private.
    RoundConfig(uint64_t round, size_t n_clients, uint32_t n_nodes, size_t max_dropped,
                size_t dim, double bound, ShareMode mode, double noise_sigma_total,
                uint32_t frac_bits = DPD_FRAC_BITS_AUTO)
        : h_(detail::make<dpd_round_config, dpd_round_config_free>(
              [&](dpd_round_config **out) {
                  return dpd_round_config_new(round, n_clients, n_nodes, max_dropped, dim, bound,
                                              static_cast<uint32_t>(mode), noise_sigma_total,
                                              frac_bits, out);
              })) {}
    /// NON-PRIVATE: a round that releases the EXACT sum, without noise
    /// (dpd_round_config_new_exact). For tests, benchmarks and data that is not personal.
    static RoundConfig exact_non_private(uint64_t round, size_t n_clients, uint32_t n_nodes,
                                         size_t max_dropped, size_t dim, double bound,
                                         ShareMode mode,
                                         uint32_t frac_bits = DPD_FRAC_BITS_AUTO) {
        return RoundConfig(detail::make<dpd_round_config, dpd_round_config_free>(
            [&](dpd_round_config **out) {
                return dpd_round_config_new_exact(round, n_clients, n_nodes, max_dropped, dim,
                                                  bound, static_cast<uint32_t>(mode), frac_bits,
                                                  out);
            }));
    }
    uint32_t frac_bits() const {
        uint32_t f = 0;
        check(dpd_round_config_info(h_.get(), &f, nullptr, nullptr));
        return f;
    }
    double sigma_client() const {
        double s = 0.0;
        check(dpd_round_config_info(h_.get(), nullptr, &s, nullptr));
        return s;
    }
    size_t dim() const {
        size_t d = 0;
        check(dpd_round_config_info(h_.get(), nullptr, nullptr, &d));
        return d;
    }
    /// Turns the L∞ validity check on (Validity::Linf, truncation δ_t target in (0, 1), e.g.
    /// 1e-9) or off (Validity::None, the default). With it on, only simulate_round_verified runs
    /// the round so far: Client, ComputeNode, Aggregator and simulate_round throw
    /// DPD_ERR_INVALID_ARGUMENT. A bad setting throws and leaves the config unchanged.
    void set_validity(Validity kind, double truncation_delta) {
        check(dpd_round_config_set_validity(h_.get(), static_cast<uint32_t>(kind),
                                            truncation_delta));
    }
    /// Turns the L2 validity check on: each client proves its contribution has L2 norm at most
    /// R = ⌈data_norm·2^frac_bits⌉ + τ₂ grid units, data_norm bounding every client's data row
    /// (value units), τ₂ chosen so that an honest noise slice is longer (and scaled back to τ₂)
    /// with probability δ_t ≤ truncation_delta. A client whose row is longer makes
    /// simulate_round_verified throw DPD_ERR_INVALID_ARGUMENT naming it. A bad setting throws
    /// and leaves the config unchanged; set_validity(Validity::None, 0) turns it off.
    void set_validity_l2(double data_norm, double truncation_delta) {
        check(dpd_round_config_set_validity_l2(h_.get(), data_norm, truncation_delta));
    }
    /// The validity mode and its bound: τ or τ₂ (slice_units), B or R (bound_units), δ_t.
    dpd_validity_info validity_info() const {
        dpd_validity_info v{};
        check(dpd_round_config_validity_info(h_.get(), &v));
        return v;
    }
    const dpd_round_config *get() const noexcept { return h_.get(); }

private:
    explicit RoundConfig(detail::Handle<dpd_round_config, dpd_round_config_free> h)
        : h_(std::move(h)) {}
    detail::Handle<dpd_round_config, dpd_round_config_free> h_;
};

/// One client's M wire messages; message(k) goes to compute node k.
class Shares {
public:
    size_t count() const {
        size_t n = 0;
        check(dpd_shares_count(h_.get(), &n));
        return n;
    }
    std::vector<uint8_t> message(uint32_t node) const {
        return detail::fetch<uint8_t>([&](uint8_t *out, size_t cap, size_t *len) {
            return dpd_shares_message(h_.get(), node, out, cap, len);
        });
    }
    /// The sharding attempt all M messages carry (a retry gets a new one).
    uint64_t shard_id() const {
        uint64_t id = 0;
        check(dpd_shares_shard_id(h_.get(), &id));
        return id;
    }

private:
    friend class Client;
    explicit Shares(dpd_shares *raw) : h_(raw) {}
    detail::Handle<dpd_shares, dpd_shares_free> h_;
};

/// A client of one round.
class Client {
public:
    Client(const RoundConfig &config, uint64_t id, Rng &rng)
        : h_(detail::make<dpd_client, dpd_client_free>([&](dpd_client **out) {
              return dpd_client_new(config.get(), id, rng.get(), out);
          })) {}
    /// Encodes, adds the round's noise and splits `values` (length d).
    Shares shard(Span<const double> values) {
        dpd_shares *raw = nullptr;
        check(dpd_client_shard(h_.get(), values.data(), values.size(), &raw));
        return Shares(raw);
    }

private:
    detail::Handle<dpd_client, dpd_client_free> h_;
};

/// (client id, shard id) pairs, ascending by client: what a node received, what the nodes agree
/// on. clients[i] sharded as attempt shards[i].
struct ShardSet {
    std::vector<uint64_t> clients;
    std::vector<uint64_t> shards;
};

/// The pairs every node received: node sets' intersection, pair by pair. A client whose nodes
/// hold different attempts (it sharded twice) is left out.
inline ShardSet agree(const std::vector<ShardSet> &received) {
    ShardSet out;
    if (received.empty()) return out;
    out = received.front();
    for (size_t k = 1; k < received.size(); ++k) {
        const ShardSet &other = received[k];
        ShardSet kept;
        size_t b = 0;
        for (size_t a = 0; a < out.clients.size(); ++a) {
            while (b < other.clients.size() && other.clients[b] < out.clients[a]) ++b;
            if (b < other.clients.size() && other.clients[b] == out.clients[a] &&
                other.shards[b] == out.shards[a]) {
                kept.clients.push_back(out.clients[a]);
                kept.shards.push_back(out.shards[a]);
            }
        }
        out = std::move(kept);
    }
    return out;
}

/// A compute node's sum over the agreed pairs.
class NodeSum {
public:
    /// Parses untrusted bytes of `to_bytes` against the round.
    static NodeSum from_bytes(const RoundConfig &config, Span<const uint8_t> bytes) {
        dpd_node_sum *raw = nullptr;
        check(dpd_node_sum_from_bytes(config.get(), bytes.data(), bytes.size(), &raw));
        return NodeSum(raw);
    }
    std::vector<uint8_t> to_bytes() const {
        return detail::fetch<uint8_t>([&](uint8_t *out, size_t cap, size_t *len) {
            return dpd_node_sum_to_bytes(h_.get(), out, cap, len);
        });
    }
    const dpd_node_sum *get() const noexcept { return h_.get(); }

private:
    friend class ComputeNode;
    explicit NodeSum(dpd_node_sum *raw) : h_(raw) {}
    detail::Handle<dpd_node_sum, dpd_node_sum_free> h_;
};

/// The round ids a party has seen: refuses an id reused with another configuration.
class RoundLedger {
public:
    RoundLedger()
        : h_(detail::make<dpd_round_ledger, dpd_round_ledger_free>(
              [&](dpd_round_ledger **out) { return dpd_round_ledger_new(out); })) {}
    /// True for a new round id, false for the same round again; throws for another config.
    bool admit(const RoundConfig &config) {
        uint32_t is_new = 0;
        check(dpd_round_ledger_admit(h_.get(), config.get(), &is_new));
        return is_new != 0;
    }
    /// One admitted round: what a party stores to restore its ledger after a restart.
    struct Entry {
        uint64_t round;
        std::array<uint8_t, DPD_CONFIG_DIGEST_LEN> digest;
    };
    /// The admitted rounds, in increasing round id.
    std::vector<Entry> entries() const {
        size_t len = 0;
        dpd_status status = dpd_round_ledger_entries(h_.get(), nullptr, nullptr, 0, &len);
        if (status != DPD_ERR_BUFFER_TOO_SMALL) check(status);
        std::vector<uint64_t> rounds(len);
        std::vector<uint8_t> digests(len * DPD_CONFIG_DIGEST_LEN);
        check(dpd_round_ledger_entries(h_.get(), rounds.data(), digests.data(), len, &len));
        std::vector<Entry> out(len);
        for (size_t i = 0; i < len; ++i) {
            out[i].round = rounds[i];
            for (size_t b = 0; b < DPD_CONFIG_DIGEST_LEN; ++b)
                out[i].digest[b] = digests[i * DPD_CONFIG_DIGEST_LEN + b];
        }
        return out;
    }
    /// As admit(config), from an entry saved by entries().
    bool admit(const Entry &saved) {
        uint32_t is_new = 0;
        check(dpd_round_ledger_admit_digest(h_.get(), saved.round, saved.digest.data(),
                                            saved.digest.size(), &is_new));
        return is_new != 0;
    }

    dpd_round_ledger *get() const { return h_.get(); }

private:
    detail::Handle<dpd_round_ledger, dpd_round_ledger_free> h_;
};

/// A compute node of one round.
class ComputeNode {
public:
    ComputeNode(const RoundConfig &config, uint32_t node)
        : h_(detail::make<dpd_node, dpd_node_free>(
              [&](dpd_node **out) { return dpd_node_new(config.get(), node, out); })) {}
    /// Admitted through `ledger`: throws DPD_ERR_WRONG_ROUND for a round id it saw with another
    /// configuration (nothing created).
    ComputeNode(RoundLedger &ledger, const RoundConfig &config, uint32_t node)
        : h_(detail::make<dpd_node, dpd_node_free>([&](dpd_node **out) {
              return dpd_node_new_admitted(ledger.get(), config.get(), node, out);
          })) {}
    /// Adds one client's share from untrusted wire bytes (unchanged on error).
    void absorb(Span<const uint8_t> bytes) {
        check(dpd_node_absorb(h_.get(), bytes.data(), bytes.size()));
    }
    /// Removes a full share of a client outside the agreed set (same bytes as absorbed).
    void retract(Span<const uint8_t> bytes) {
        check(dpd_node_retract(h_.get(), bytes.data(), bytes.size()));
    }
    /// The (client, shard) pairs absorbed so far, ascending by client.
    ShardSet received() const {
        ShardSet out;
        size_t len = 0;
        dpd_status status = dpd_node_received(h_.get(), nullptr, nullptr, 0, &len);
        if (status == DPD_OK) return out;
        if (status != DPD_ERR_BUFFER_TOO_SMALL) check(status);
        out.clients.resize(len);
        out.shards.resize(len);
        check(dpd_node_received(h_.get(), out.clients.data(), out.shards.data(), len, &len));
        out.clients.resize(len);
        out.shards.resize(len);
        return out;
    }
    /// The node's sum over `agreed` (see `agree`); the node is unchanged.
    NodeSum finalize(const ShardSet &agreed) const {
        if (agreed.clients.size() != agreed.shards.size()) {
            throw std::invalid_argument("dpd::ComputeNode::finalize: clients and shards differ in length");
        }
        dpd_node_sum *raw = nullptr;
        check(dpd_node_finalize(h_.get(), agreed.clients.data(), agreed.shards.data(),
                                agreed.clients.size(), &raw));
        return NodeSum(raw);
    }

private:
    detail::Handle<dpd_node, dpd_node_free> h_;
};

/// A released sum and what it contains.
struct Release {
    std::vector<double> sum;
    dpd_release_info info;
};

/// Adds the M node sums and decodes.
class Aggregator {
public:
    explicit Aggregator(const RoundConfig &config)
        : h_(detail::make<dpd_aggregator, dpd_aggregator_free>(
              [&](dpd_aggregator **out) { return dpd_aggregator_new(config.get(), out); })),
          dim_(config.dim()) {}
    /// Admitted through `ledger`, as ComputeNode's ledger constructor.
    Aggregator(RoundLedger &ledger, const RoundConfig &config)
        : h_(detail::make<dpd_aggregator, dpd_aggregator_free>([&](dpd_aggregator **out) {
              return dpd_aggregator_new_admitted(ledger.get(), config.get(), out);
          })),
          dim_(config.dim()) {}
    void add(const NodeSum &sum) { check(dpd_aggregator_add(h_.get(), sum.get())); }
    Release release() const {
        Release r{{}, {}};
        r.sum = detail::compute<double>(dim_, [&](double *out, size_t cap, size_t *len) {
            return dpd_aggregator_release(h_.get(), out, cap, len, &r.info);
        });
        return r;
    }

private:
    detail::Handle<dpd_aggregator, dpd_aggregator_free> h_;
    size_t dim_;
};

/// A whole round in one process; `inputs` is N x d row-major.
inline Release simulate_round(const RoundConfig &config, Span<const double> inputs,
                              Span<const uint64_t> dropped, Rng &rng) {
    Release r{{}, {}};
    // Sized from the config: the round (and its noise) runs exactly once.
    r.sum = detail::compute<double>(config.dim(), [&](double *out, size_t cap, size_t *len) {
        return dpd_simulate_round(config.get(), inputs.data(), inputs.size(), dropped.data(),
                                  dropped.size(), rng.get(), out, cap, len, &r.info);
    });
    return r;
}

/// A verified round's release: the sum over the valid clients, the ids of the clients left
/// out for invalid contributions (increasing), and δ_t (add it to δ with
/// verified_total_delta).
struct VerifiedRelease {
    std::vector<double> sum;
    dpd_release_info info;
    std::vector<uint64_t> invalid;
    double truncation_delta;
};

namespace detail {
inline VerifiedRelease simulate_verified(const RoundConfig &config, Span<const double> inputs,
                                         Span<const uint64_t> dropped,
                                         const Span<const uint64_t> *malicious, Rng &rng) {
    const size_t d = config.dim();
    VerifiedRelease r{std::vector<double>(d), {}, {}, 0.0};
    // At most T < N clients are left out of a round that releases: N entries always suffice
    // (inputs of another length are refused before anything runs).
    r.invalid.resize(inputs.size() / d + 1);
    size_t len = 0, n_invalid = 0;
    if (malicious == nullptr) {
        check(dpd_simulate_round_verified(config.get(), inputs.data(), inputs.size(),
                                          dropped.data(), dropped.size(), rng.get(),
                                          r.sum.data(), d, &len, r.invalid.data(),
                                          r.invalid.size(), &n_invalid, &r.info,
                                          &r.truncation_delta));
    } else {
        check(dpd_simulate_round_verified_testing_malicious(
            config.get(), inputs.data(), inputs.size(), dropped.data(), dropped.size(),
            malicious->data(), malicious->size(), rng.get(), r.sum.data(), d, &len,
            r.invalid.data(), r.invalid.size(), &n_invalid, &r.info, &r.truncation_delta));
    }
    r.sum.resize(len);
    r.invalid.resize(n_invalid);
    return r;
}
} // namespace detail

/// A whole verified round in one process (the config must have validity on): as
/// simulate_round, with every client's contribution checked by the nodes; invalid clients are
/// left out and named.
inline VerifiedRelease simulate_round_verified(const RoundConfig &config,
                                               Span<const double> inputs,
                                               Span<const uint64_t> dropped, Rng &rng) {
    return detail::simulate_verified(config, inputs, dropped, nullptr, rng);
}

/// TESTING ONLY: as simulate_round_verified, with each client in `malicious` sending 10^6 times
/// its bound in coordinate 0 (dpd_simulate_round_verified_testing_malicious).
inline VerifiedRelease simulate_round_verified_testing_malicious(
    const RoundConfig &config, Span<const double> inputs, Span<const uint64_t> dropped,
    Span<const uint64_t> malicious, Rng &rng) {
    return detail::simulate_verified(config, inputs, dropped, &malicious, rng);
}

/// δ + (1 + e^ε)·δ_t: the δ of a verified round whose unclamped round is (ε, δ)-DP.
inline double verified_total_delta(double epsilon, double delta, double truncation_delta) {
    double out = 0.0;
    check(dpd_verified_total_delta(epsilon, delta, truncation_delta, &out));
    return out;
}

/// The header of a share message (validates the whole message).
inline dpd_wire_header wire_inspect(Span<const uint8_t> bytes) {
    dpd_wire_header h{};
    check(dpd_wire_inspect(bytes.data(), bytes.size(), &h));
    return h;
}

// ---- private logistic regression and stacking -------------------------------------------

/// Labelled rows for the logistic learners (row-major x, labels in {0,1} or {-1,+1}).
class Dataset {
public:
    Dataset(Span<const double> x, size_t n_features, Span<const double> labels)
        : h_(detail::make<dpd_dataset, dpd_dataset_free>([&](dpd_dataset **out) {
              return dpd_dataset_new(x.data(), x.size(), n_features, labels.data(), labels.size(),
                                     out);
          })) {}
    const dpd_dataset *get() const noexcept { return h_.get(); }

private:
    detail::Handle<dpd_dataset, dpd_dataset_free> h_;
};

/// Feature groups: group_of_feature[j] in 0..K or DPD_FEATURE_UNUSED; importances from side
/// information only.
class FeatureGroups {
public:
    FeatureGroups(Span<const uint32_t> group_of_feature, Span<const double> importance)
        : h_(detail::make<dpd_feature_groups, dpd_feature_groups_free>(
              [&](dpd_feature_groups **out) {
                  return dpd_feature_groups_new(group_of_feature.data(), group_of_feature.size(),
                                                importance.data(), importance.size(), out);
              })) {}
    const dpd_feature_groups *get() const noexcept { return h_.get(); }

private:
    detail::Handle<dpd_feature_groups, dpd_feature_groups_free> h_;
};

/// Public feature ranges of a PLR or PST fit, one [lo[j], hi[j]] per feature (both finite,
/// lo[j] < hi[j]), known without looking at the private data (codebooks, physical limits).
struct PlrRanges {
    std::vector<double> lo;
    std::vector<double> hi;
};

/// A fitted PLR / PST model (epsilon = INFINITY fits the non-private model). `intercept` true
/// estimates an intercept b (in a stack: in every low-level model and in the high-level model,
/// whose b is the stack's); false, the default, is the model without intercept, as before.
class PlrModel {
public:
    static PlrModel fit_plr(const Dataset &data, double epsilon, double lambda, Rng &rng,
                            bool intercept = false) {
        return make([&](dpd_plr_model **out) {
            return dpd_plr_fit_with_intercept(data.get(), epsilon, lambda, flag(intercept),
                                              rng.get(), out);
        });
    }
    /// PLR with public ranges: each value is clamped into its range and mapped onto [−1, 1],
    /// (clamp(x_j, lo_j, hi_j) − m_j)/h_j with m_j, h_j the range's centre and half-width,
    /// before the projection; the model predicts through the same map (ranges() reads them).
    /// Bad ranges throw DPD_ERR_INVALID_ARGUMENT naming the column; nothing is drawn from rng.
    static PlrModel fit_plr(const Dataset &data, double epsilon, double lambda, Rng &rng,
                            bool intercept, const PlrRanges &ranges) {
        check_ranges(ranges, "fit_plr");
        return make([&](dpd_plr_model **out) {
            return dpd_plr_fit_with_ranges(data.get(), epsilon, lambda, flag(intercept),
                                           ranges.lo.data(), ranges.hi.data(), ranges.lo.size(),
                                           rng.get(), out);
        });
    }
    static PlrModel fit_pst_s(const Dataset &data, size_t n_parts, double epsilon, double lambda,
                              double lambda_high, double high_fraction, Rng &rng,
                              bool intercept = false) {
        return make([&](dpd_plr_model **out) {
            return dpd_pst_s_fit_with_intercept(data.get(), n_parts, epsilon, lambda, lambda_high,
                                                high_fraction, flag(intercept), rng.get(), out);
        });
    }
    static PlrModel fit_pst_f(const Dataset &data, const FeatureGroups &groups, double epsilon,
                              double lambda, double lambda_high, double high_fraction, Rng &rng,
                              bool intercept = false) {
        return make([&](dpd_plr_model **out) {
            return dpd_pst_f_fit_with_intercept(data.get(), groups.get(), epsilon, lambda,
                                                lambda_high, high_fraction, flag(intercept),
                                                rng.get(), out);
        });
    }
    static PlrModel fit_pst_h(const Dataset &source, const Dataset &target,
                              const FeatureGroups &groups, double epsilon_source,
                              double epsilon_target, double lambda_source, double lambda_target,
                              double lambda_high, double high_fraction, Rng &rng,
                              bool intercept = false) {
        return make([&](dpd_plr_model **out) {
            return dpd_pst_h_fit_with_intercept(source.get(), target.get(), groups.get(),
                                                epsilon_source, epsilon_target, lambda_source,
                                                lambda_target, lambda_high, high_fraction,
                                                flag(intercept), rng.get(), out);
        });
    }
    /// The stacked fits with public ranges, one per column of the data (as fit_plr's): every
    /// low-level model maps its own columns by their ranges before the projection and predicts
    /// through the same map (low_level_ranges(k) reads model k's, in its features' order); the
    /// high level reads the low-level outputs and has none. Bad ranges throw
    /// DPD_ERR_INVALID_ARGUMENT naming the column; nothing is drawn from rng.
    static PlrModel fit_pst_s(const Dataset &data, size_t n_parts, double epsilon, double lambda,
                              double lambda_high, double high_fraction, Rng &rng, bool intercept,
                              const PlrRanges &ranges) {
        check_ranges(ranges, "fit_pst_s");
        return make([&](dpd_plr_model **out) {
            return dpd_pst_s_fit_with_ranges(data.get(), n_parts, epsilon, lambda, lambda_high,
                                             high_fraction, flag(intercept), ranges.lo.data(),
                                             ranges.hi.data(), ranges.lo.size(), rng.get(), out);
        });
    }
    static PlrModel fit_pst_f(const Dataset &data, const FeatureGroups &groups, double epsilon,
                              double lambda, double lambda_high, double high_fraction, Rng &rng,
                              bool intercept, const PlrRanges &ranges) {
        check_ranges(ranges, "fit_pst_f");
        return make([&](dpd_plr_model **out) {
            return dpd_pst_f_fit_with_ranges(data.get(), groups.get(), epsilon, lambda,
                                             lambda_high, high_fraction, flag(intercept),
                                             ranges.lo.data(), ranges.hi.data(),
                                             ranges.lo.size(), rng.get(), out);
        });
    }
    static PlrModel fit_pst_h(const Dataset &source, const Dataset &target,
                              const FeatureGroups &groups, double epsilon_source,
                              double epsilon_target, double lambda_source, double lambda_target,
                              double lambda_high, double high_fraction, Rng &rng, bool intercept,
                              const PlrRanges &ranges) {
        check_ranges(ranges, "fit_pst_h");
        return make([&](dpd_plr_model **out) {
            return dpd_pst_h_fit_with_ranges(
                source.get(), target.get(), groups.get(), epsilon_source, epsilon_target,
                lambda_source, lambda_target, lambda_high, high_fraction, flag(intercept),
                ranges.lo.data(), ranges.hi.data(), ranges.lo.size(), rng.get(), out);
        });
    }
    /// Imports a single logistic model from exported weights.
    static PlrModel from_weights(Span<const double> weights, double input_radius) {
        return make([&](dpd_plr_model **out) {
            return dpd_plr_model_from_weights(weights.data(), weights.size(), input_radius, out);
        });
    }
    /// Imports a single logistic model with an intercept: p = σ(wᵀx̃ + b), x̃ the row clipped to
    /// ‖x̃‖ <= input_radius/√2 (what fit_plr(..., true) fitted).
    static PlrModel from_weights_and_intercept(Span<const double> weights, double intercept,
                                               double input_radius) {
        return make([&](dpd_plr_model **out) {
            return dpd_plr_model_from_weights_and_intercept(weights.data(), weights.size(),
                                                            intercept, input_radius, out);
        });
    }
    /// Imports a single logistic model with public ranges (what fit_plr(..., ranges) fitted),
    /// with its intercept when given; the other importers make a model without ranges.
    static PlrModel from_weights_and_ranges(Span<const double> weights,
                                            std::optional<double> intercept,
                                            const PlrRanges &ranges, double input_radius) {
        check_ranges(ranges, "from_weights_and_ranges");
        return make([&](dpd_plr_model **out) {
            return dpd_plr_model_from_weights_and_ranges(
                weights.data(), weights.size(), flag(intercept.has_value()),
                intercept.value_or(0.0), ranges.lo.data(), ranges.hi.data(), ranges.lo.size(),
                input_radius, out);
        });
    }
    /// The public ranges of a single model; empty for a model without (its weights act on the
    /// mapped rows when it has them) and for a stack (see low_level_ranges).
    std::optional<PlrRanges> ranges() const {
        return optional_ranges([&](double *lo, double *hi, size_t cap, size_t *len) {
            return dpd_plr_model_ranges(h_.get(), lo, hi, cap, len);
        });
    }
    /// The public ranges of low-level model k of a stack, in the order of its features; empty
    /// for a stack fitted without ranges.
    std::optional<PlrRanges> low_level_ranges(size_t k) const {
        return optional_ranges([&](double *lo, double *hi, size_t cap, size_t *len) {
            return dpd_plr_model_low_level_ranges(h_.get(), k, lo, hi, cap, len);
        });
    }
    /// The intercept b of a single model or of a stack's high level; empty for a model without.
    std::optional<double> intercept() const {
        return optional_intercept(
            [&](double *out) { return dpd_plr_model_intercept(h_.get(), out); });
    }
    /// The intercept of low-level model k of a stack; empty for a stack without intercepts.
    std::optional<double> low_level_intercept(size_t k) const {
        return optional_intercept(
            [&](double *out) { return dpd_plr_model_low_level_intercept(h_.get(), k, out); });
    }
    std::vector<double> predict_proba(Span<const double> x) const {
        size_t n_features = 0;
        check(dpd_plr_model_info(h_.get(), nullptr, &n_features, nullptr, nullptr));
        size_t rows = n_features == 0 ? 0 : x.size() / n_features;
        return detail::compute<double>(rows, [&](double *out, size_t cap, size_t *len) {
            return dpd_plr_model_predict_proba(h_.get(), x.data(), x.size(), out, cap, len);
        });
    }
    /// Weights of a single model or of the high level of a stack.
    std::vector<double> weights() const {
        return detail::fetch<double>([&](double *out, size_t cap, size_t *len) {
            return dpd_plr_model_weights(h_.get(), out, cap, len, nullptr);
        });
    }
    double input_radius() const {
        double r = 0.0;
        size_t len = 0;
        dpd_status s = dpd_plr_model_weights(h_.get(), nullptr, 0, &len, &r);
        if (s == DPD_ERR_BUFFER_TOO_SMALL) {
            std::vector<double> w(len);
            s = dpd_plr_model_weights(h_.get(), w.data(), w.size(), &len, &r);
        }
        check(s);
        return r;
    }
    /// ε of the training data's guarantee (δ = 0); NaN for an imported model.
    double epsilon() const {
        double e = 0.0;
        check(dpd_plr_model_info(h_.get(), nullptr, nullptr, nullptr, &e));
        return e;
    }
    /// Number K of low-level models (0 for a single model).
    size_t n_low_level() const {
        size_t k = 0;
        check(dpd_plr_model_info(h_.get(), nullptr, nullptr, &k, nullptr));
        return k;
    }

private:
    template <class Make> static PlrModel make(Make &&m) {
        return PlrModel(detail::make<dpd_plr_model, dpd_plr_model_free>(m));
    }
    static uint32_t flag(bool on) { return on ? 1u : 0u; }
    static void check_ranges(const PlrRanges &r, const char *what) {
        if (r.lo.size() != r.hi.size())
            throw Error(DPD_ERR_LENGTH_MISMATCH, std::string("dpd::PlrModel::") + what +
                                                     ": ranges.lo and ranges.hi differ in length");
    }
    // DPD_ERR_INVALID_STATE is the library's "this model has no public ranges": an answer, not
    // a failure; every other error throws.
    template <class Call> static std::optional<PlrRanges> optional_ranges(Call &&call) {
        size_t len = 0;
        dpd_status s = call(nullptr, nullptr, 0, &len);
        if (s == DPD_ERR_INVALID_STATE) return std::nullopt;
        if (s != DPD_ERR_BUFFER_TOO_SMALL) check(s);
        PlrRanges r{std::vector<double>(len), std::vector<double>(len)};
        check(call(r.lo.data(), r.hi.data(), len, &len));
        return r;
    }
    // DPD_ERR_INVALID_STATE is the library's "this model has no intercept": an answer, not a
    // failure; every other error throws.
    template <class Call> static std::optional<double> optional_intercept(Call &&call) {
        double b = 0.0;
        dpd_status s = call(&b);
        if (s == DPD_ERR_INVALID_STATE) return std::nullopt;
        check(s);
        return b;
    }
    explicit PlrModel(detail::Handle<dpd_plr_model, dpd_plr_model_free> h) : h_(std::move(h)) {}
    detail::Handle<dpd_plr_model, dpd_plr_model_free> h_;
};

/// Mann-Whitney AUC (ties 1/2).
inline double auc(Span<const double> scores, Span<const double> labels) {
    double out = 0.0;
    check(dpd_auc(scores.data(), scores.size(), labels.data(), labels.size(), &out));
    return out;
}

// ---- Bayesian linear regression ----------------------------------------------------------

/// Which standard deviations the DP std round estimates.
enum class StdMode : uint32_t {
    Pooled = DPD_BLR_STD_POOLED,
    PerDimension = DPD_BLR_STD_PER_DIMENSION
};

/// Settings of a private BLR fit (defaults: trusted aggregator, Gaussian, projection with a
/// pooled DP std round, λ = λ₀ = 1).
class BlrConfig {
public:
    BlrConfig(double epsilon, double delta, Span<const double> assumed_x, double assumed_y)
        : h_(detail::make<dpd_blr_config, dpd_blr_config_free>([&](dpd_blr_config **out) {
              return dpd_blr_config_new(epsilon, delta, assumed_x.data(), assumed_x.size(),
                                        assumed_y, out);
          })) {}
    BlrConfig &trusted() { return apply(dpd_blr_config_set_trusted(h_.get())); }
    BlrConfig &distributed(uint32_t n_nodes, size_t max_dropped, ShareMode mode) {
        return apply(dpd_blr_config_set_distributed(h_.get(), n_nodes, max_dropped,
                                                    static_cast<uint32_t>(mode)));
    }
    BlrConfig &input_perturbation() {
        return apply(dpd_blr_config_set_input_perturbation(h_.get()));
    }
    BlrConfig &laplace(double p1, double p2, double p3) {
        return apply(dpd_blr_config_set_laplace(h_.get(), p1, p2, p3));
    }
    BlrConfig &projection(bool enabled) {
        return apply(dpd_blr_config_set_projection(h_.get(), enabled ? 1u : 0u));
    }
    /// The projection's σ from the DP std round (pooled by default), spending `budget_share`.
    BlrConfig &dp_std(StdMode mode, double budget_share) {
        return apply(dpd_blr_config_set_dp_std(h_.get(), static_cast<uint32_t>(mode),
                                               budget_share));
    }
    /// Spends `budget_share` of the budget releasing the shares of clipped records
    /// (BlrModel::clipped_share); 0, the default, releases none. Needs projection on.
    BlrConfig &clipped_share(double budget_share) {
        return apply(dpd_blr_config_set_clipped_share(h_.get(), budget_share));
    }
    /// The projection's σ are public by construction (never computed from the private data).
    BlrConfig &public_std(Span<const double> x_std, double y_std) {
        return apply(
            dpd_blr_config_set_public_std(h_.get(), x_std.data(), x_std.size(), y_std));
    }
    BlrConfig &prior(double lambda, double lambda0) {
        return apply(dpd_blr_config_set_prior(h_.get(), lambda, lambda0));
    }
    /// Also release Σy² (needed by fit_gamma_prior).
    BlrConfig &release_yy(bool enabled) {
        return apply(dpd_blr_config_set_release_yy(h_.get(), enabled ? 1u : 0u));
    }
    const dpd_blr_config *get() const noexcept { return h_.get(); }

private:
    BlrConfig &apply(dpd_status s) {
        check(s);
        return *this;
    }
    detail::Handle<dpd_blr_config, dpd_blr_config_free> h_;
};

/// Posterior means, standard deviations and central credible intervals [lower, upper], one
/// entry per coefficient or per predicted row.
struct PosteriorSummary {
    std::vector<double> mean, sd, lower, upper;
};

namespace detail {
/// Runs a computing call with four parallel outputs of `expected` elements (as `compute`).
template <class Call> PosteriorSummary summarise(size_t expected, Call &&call) {
    PosteriorSummary r;
    auto size = [&](size_t n) {
        r.mean.resize(n);
        r.sd.resize(n);
        r.lower.resize(n);
        r.upper.resize(n);
    };
    size(expected);
    size_t len = 0;
    auto run = [&] {
        return call(r.mean.data(), r.sd.data(), r.lower.data(), r.upper.data(), r.mean.size(),
                    &len);
    };
    dpd_status status = run();
    if (status == DPD_ERR_BUFFER_TOO_SMALL) {
        size(len);
        status = run();
    }
    check(status);
    size(len);
    return r;
}
} // namespace detail

/// Bounds and priors of a noise-aware posterior from statistics the host released itself.
struct NoiseAwarePrior {
    /// |x_j| <= B_j, the bounds every record was clipped to (empty: none; then second_moments
    /// is required).
    std::vector<double> bounds_x;
    /// E[x_j²] of the data model (empty: B_j²/3 from the bounds).
    std::vector<double> second_moments;
    /// Degrees of freedom of the second-moment prior; DPD_BLR_DOF_FROM_RELEASE integrates it
    /// (and the moments' scale) over their posterior given the release.
    double dof = DPD_BLR_DOF_FROM_RELEASE;
    double lambda = 1.0;  ///< noise precision λ
    double lambda0 = 1.0; ///< coefficient precision λ₀
};

/// The noise-aware posterior of a private BLR fit's coefficients (the released statistics
/// treated as noisy observations of the true ones).
class BlrNoiseAware {
public:
    /// From a statistics vector the host released itself (layout as dpd_blr_record_stats) of
    /// n records and d features with public noise `noise`; `draws` draws from `rng`
    /// (post-processing: no privacy cost). Equal to BlrModel::noise_aware for a model's
    /// statistics, noise and bounds with the default prior.
    static BlrNoiseAware from_stats(Span<const double> stats, size_t n, size_t d, bool with_yy,
                                    const dpd_blr_stats_noise &noise,
                                    const NoiseAwarePrior &prior, size_t draws, Rng &rng) {
        return BlrNoiseAware(detail::make<dpd_blr_noise_aware, dpd_blr_noise_aware_free>(
            [&](dpd_blr_noise_aware **out) {
                return dpd_blr_noise_aware_from_stats(
                    stats.data(), stats.size(), n, d, with_yy ? 1u : 0u, &noise,
                    prior.bounds_x.data(), prior.bounds_x.size(), prior.second_moments.data(),
                    prior.second_moments.size(), prior.dof, prior.lambda, prior.lambda0, draws,
                    rng.get(), out);
            }));
    }
    /// Summaries of β_1..β_d with central intervals at `level` in (0, 1).
    PosteriorSummary coefficients(double level = 0.9) const {
        return detail::summarise(d(), [&](double *m, double *s, double *lo, double *hi,
                                          size_t cap, size_t *len) {
            return dpd_blr_noise_aware_coefficients(h_.get(), level, m, s, lo, hi, cap, len);
        });
    }
    /// Summaries of xᵀβ for the rows of x (n x d, row-major), or of a new observation
    /// xᵀβ + e when `observation` is true.
    PosteriorSummary predict(Span<const double> x, bool observation = false,
                             double level = 0.9) const {
        size_t rows = d() == 0 ? 0 : x.size() / d();
        return detail::summarise(rows, [&](double *m, double *s, double *lo, double *hi,
                                           size_t cap, size_t *len) {
            return dpd_blr_noise_aware_predict(h_.get(), x.data(), x.size(),
                                               observation ? 1u : 0u, level, m, s, lo, hi, cap,
                                               len);
        });
    }
    /// The number of coefficients d.
    size_t d() const {
        size_t d = 0;
        check(dpd_blr_noise_aware_info(h_.get(), &d, nullptr));
        return d;
    }
    /// (Σw)²/Σw² of the importance weights (at most the draws used: up to 16 × draws when the first
    /// draws weigh too unevenly).
    double effective_sample_size() const {
        double ess = 0.0;
        check(dpd_blr_noise_aware_info(h_.get(), nullptr, &ess));
        return ess;
    }

private:
    friend class BlrModel;
    explicit BlrNoiseAware(detail::Handle<dpd_blr_noise_aware, dpd_blr_noise_aware_free> h)
        : h_(std::move(h)) {}
    detail::Handle<dpd_blr_noise_aware, dpd_blr_noise_aware_free> h_;
};

/// Released shares of clipped records (BlrModel::clipped_share).
struct ClippedShare {
    double y;  ///< share of records whose y the bound clipped (noisy, in [0, 1])
    double x;  ///< share of records with some clipped x (noisy, in [0, 1])
    double sd; ///< sd of the noise on each share
};

/// A privately fitted BLR model.
class BlrModel {
public:
    /// x is n x d row-major, y has n entries.
    BlrModel(Span<const double> x, Span<const double> y, size_t d, const BlrConfig &config,
             Rng &rng)
        : h_(detail::make<dpd_blr_model, dpd_blr_model_free>([&](dpd_blr_model **out) {
              return dpd_blr_fit(x.data(), x.size(), y.data(), y.size(), d, config.get(),
                                 rng.get(), out);
          })) {}
    std::vector<double> mean() const {
        return detail::fetch<double>([&](double *out, size_t cap, size_t *len) {
            return dpd_blr_model_mean(h_.get(), out, cap, len);
        });
    }
    /// The (ε, δ) the accountant charged.
    std::pair<double, double> spent() const {
        std::pair<double, double> s{0.0, 0.0};
        check(dpd_blr_model_spent(h_.get(), &s.first, &s.second));
        return s;
    }
    std::vector<double> predict(Span<const double> x) const {
        size_t d = 0;
        dpd_status s = dpd_blr_model_mean(h_.get(), nullptr, 0, &d); // a size query: a copy
        if (s != DPD_ERR_BUFFER_TOO_SMALL) check(s);
        size_t rows = d == 0 ? 0 : x.size() / d;
        return detail::compute<double>(rows, [&](double *out, size_t cap, size_t *len) {
            return dpd_blr_model_predict(h_.get(), x.data(), x.size(), out, cap, len);
        });
    }
    /// The released shares of records whose y, or some x, the bounds clipped, and the sd of
    /// the noise on each share: the posterior is the clipped records' regression. Throws
    /// (DPD_ERR_INVALID_STATE) when the fit released none (BlrConfig::clipped_share).
    ClippedShare clipped_share() const {
        ClippedShare c{0.0, 0.0, 0.0};
        check(dpd_blr_model_clipped_share(h_.get(), &c.y, &c.x, &c.sd));
        return c;
    }
    /// The clipping bounds of the statistics round: (B_j per x dimension, B_y); with
    /// projection these are ω·σ̂.
    std::pair<std::vector<double>, double> bounds() const {
        size_t d = 0;
        dpd_status s = dpd_blr_model_bounds(h_.get(), nullptr, 0, &d, nullptr); // size query
        if (s != DPD_ERR_BUFFER_TOO_SMALL) check(s);
        std::pair<std::vector<double>, double> out{std::vector<double>(d), 0.0};
        check(dpd_blr_model_bounds(h_.get(), out.first.data(), d, &d, &out.second));
        return out;
    }
    /// The released (noisy) statistics vector (with Σy² iff BlrConfig::release_yy).
    std::vector<double> stats() const {
        return detail::fetch<double>([&](double *out, size_t cap, size_t *len) {
            return dpd_blr_model_stats(h_.get(), out, cap, len);
        });
    }
    /// The public noise of stats() (per block: kind and sd or Laplace scale).
    dpd_blr_stats_noise stats_noise() const {
        dpd_blr_stats_noise noise{};
        check(dpd_blr_model_stats_noise(h_.get(), &noise));
        return noise;
    }
    /// The naive posterior's summaries of β at `level` (noisy statistics treated as exact: too
    /// narrow at small ε; for comparison with noise_aware()).
    PosteriorSummary coefficients(double level = 0.9) const {
        return detail::summarise(mean().size(), [&](double *m, double *s, double *lo, double *hi,
                                                    size_t cap, size_t *len) {
            return dpd_blr_model_coefficients(h_.get(), level, m, s, lo, hi, cap, len);
        });
    }
    /// The noise-aware posterior of β (`draws` draws of the latent Σxxᵀ; 1000 is a good default).
    /// Post-processing: costs no privacy.
    BlrNoiseAware noise_aware(size_t draws, Rng &rng) const {
        return BlrNoiseAware(
            detail::make<dpd_blr_noise_aware, dpd_blr_noise_aware_free>(
                [&](dpd_blr_noise_aware **out) {
                    return dpd_blr_model_noise_aware(h_.get(), draws, rng.get(), out);
                }));
    }

private:
    detail::Handle<dpd_blr_model, dpd_blr_model_free> h_;
};

/// Gamma-prior fit from a statistics vector with Σy²: the mean of q(β) and the precisions'
/// posterior.
struct GammaPriorFit {
    std::vector<double> mean;
    dpd_blr_cavi_info info;
};
inline GammaPriorFit fit_gamma_prior(Span<const double> stats, size_t n, size_t d, double a = 2,
                                     double b = 2, double a0 = 2, double b0 = 2,
                                     size_t max_iter = 1000, double tol = 1e-12) {
    GammaPriorFit fit{{}, {}};
    fit.mean = detail::compute<double>(d, [&](double *out, size_t cap, size_t *len) {
        return dpd_blr_fit_gamma_prior(stats.data(), stats.size(), n, d, a, b, a0, b0, max_iter,
                                       tol, out, cap, len, &fit.info);
    });
    return fit;
}

/// The projection multipliers chosen on auxiliary data (no privacy cost).
struct Thresholds {
    double omega_x, omega_y, error;
};
inline Thresholds search_thresholds(Span<const double> sigma_x, double sigma_y, size_t n,
                                    const BlrConfig &config, dpd_blr_error_measure measure,
                                    Rng &rng) {
    Thresholds t{0.0, 0.0, 0.0};
    check(dpd_blr_search_thresholds(sigma_x.data(), sigma_x.size(), sigma_y, n, config.get(),
                                    static_cast<uint32_t>(measure), rng.get(), &t.omega_x,
                                    &t.omega_y, &t.error));
    return t;
}

inline double mae(Span<const double> truth, Span<const double> predicted) {
    double out = 0.0;
    check(dpd_mae(truth.data(), truth.size(), predicted.data(), predicted.size(), &out));
    return out;
}
inline double rmse(Span<const double> truth, Span<const double> predicted) {
    double out = 0.0;
    check(dpd_rmse(truth.data(), truth.size(), predicted.data(), predicted.size(), &out));
    return out;
}
inline double spearman(Span<const double> truth, Span<const double> predicted) {
    double out = 0.0;
    check(dpd_spearman(truth.data(), truth.size(), predicted.data(), predicted.size(), &out));
    return out;
}

// ---- the regression on real data (intercept, public ranges, the data's units) -------------

/// The fit quality of a Regression, in the data's units.
struct RegressionQuality {
    double r_squared;   ///< DP adjusted R² from the released statistics (NaN when none)
    double constant;    ///< the constant predictor it is measured against
    double residual_sd; ///< residual sd
};

/// A private linear regression y ~ x with an intercept (docs/src/regression.md): one Gaussian
/// release at (ε, δ), coefficients, errors and predictions in the data's units.
class Regression {
public:
    /// Fits on x (n x d row-major) and y (n values). Column j's public range is
    /// [lower_x[j], upper_x[j]] and y's [lower_y, upper_y]: from a codebook or a physical limit,
    /// never from the data (values outside are clipped). `group_of` (empty: no groups, else d
    /// values) declares indicator groups: 0 for an ordinary column, k >= 1 for the indicator
    /// columns of one categorical variable's levels (ranges [0, 1], at most one set per row;
    /// a row that sets two throws DPD_ERR_INVALID_ARGUMENT and nothing is released). A group of
    /// 5 or more indicators counts once in the sensitivity. `intercept` false is y ~ x - 1;
    /// `n_nodes` 0 has a trusted aggregator add the noise, >= 2 runs DCA with that many nodes.
    Regression(Span<const double> x, Span<const double> y, Span<const double> lower_x,
               Span<const double> upper_x, double lower_y, double upper_y, double epsilon,
               double delta, Rng &rng, Span<const uint32_t> group_of = {},
               bool intercept = true, uint32_t n_nodes = 0)
        : d_(lower_x.size()) {
        if (upper_x.size() != d_) {
            throw Error(DPD_ERR_LENGTH_MISMATCH,
                        "dpd::Regression: lower_x and upper_x differ in length");
        }
        if (group_of.size() != 0 && group_of.size() != d_) {
            throw Error(DPD_ERR_LENGTH_MISMATCH,
                        "dpd::Regression: group_of needs one entry per column (" +
                            std::to_string(d_) + "), or none");
        }
        h_ = detail::make<dpd_regression, dpd_regression_free>([&](dpd_regression **out) {
            if (group_of.size() == 0) {
                return dpd_regression_fit(x.data(), x.size(), y.data(), y.size(), lower_x.data(),
                                          upper_x.data(), d_, lower_y, upper_y,
                                          intercept ? 1u : 0u, epsilon, delta, n_nodes,
                                          rng.get(), out);
            }
            return dpd_regression_fit_grouped(x.data(), x.size(), y.data(), y.size(),
                                              lower_x.data(), upper_x.data(), group_of.data(),
                                              d_, lower_y, upper_y, intercept ? 1u : 0u,
                                              epsilon, delta, n_nodes, rng.get(), out);
        });
    }
    /// (intercept, slope_1, ..., slope_d) in the data's units (without an intercept, the first
    /// value is the one the ranges' centres fix).
    std::vector<double> coefficients() const {
        return detail::fetch<double>([&](double *out, size_t cap, size_t *len) {
            return dpd_regression_coefficients(h_.get(), out, cap, len);
        });
    }
    /// Standard errors of (intercept, slopes); NaN for the slopes of a constant fit.
    std::vector<double> std_errors() const {
        return detail::fetch<double>([&](double *out, size_t cap, size_t *len) {
            return dpd_regression_std_errors(h_.get(), out, cap, len);
        });
    }
    /// Predictions for the raw rows of x (row-major, d columns), in y's units.
    std::vector<double> predict(Span<const double> x) const {
        return detail::compute<double>(x.size() / d_, [&](double *out, size_t cap, size_t *len) {
            return dpd_regression_predict(h_.get(), x.data(), x.size(), out, cap, len);
        });
    }
    /// DP R², the constant predictor and the residual sd.
    RegressionQuality quality() const {
        RegressionQuality q{0.0, 0.0, 0.0};
        check(dpd_regression_fit_quality(h_.get(), &q.r_squared, &q.constant, &q.residual_sd));
        return q;
    }
    /// The (ε, δ) the accountant charged.
    std::pair<double, double> spent() const {
        std::pair<double, double> s{0.0, 0.0};
        check(dpd_regression_spent(h_.get(), &s.first, &s.second));
        return s;
    }
    /// The fit's warnings (a fit no better than the constant, noise that dominates), one each.
    std::vector<std::string> warnings() const {
        std::vector<uint8_t> bytes = detail::fetch<uint8_t>(
            [&](uint8_t *out, size_t cap, size_t *len) {
                return dpd_regression_warnings(h_.get(), out, cap, len);
            });
        std::vector<std::string> out;
        std::string text(bytes.begin(), bytes.end());
        size_t start = 0;
        while (start < text.size()) {
            size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();
            out.push_back(text.substr(start, end - start));
            start = end + 1;
        }
        return out;
    }
    /// Columns of x.
    size_t d() const noexcept { return d_; }

private:
    size_t d_;
    detail::Handle<dpd_regression, dpd_regression_free> h_;
};

// ---- iterative private learning over DCA rounds (Rényi-DP accounting) ---------------------

/// How the records of one step are chosen (Poisson: add/remove-one; without replacement:
/// replace-one).
enum class Sampling : uint32_t {
    Poisson = DPD_SAMPLING_POISSON,
    WithoutReplacement = DPD_SAMPLING_WITHOUT_REPLACEMENT
};

/// ε after `steps` steps of the sampled Gaussian (noise multiplier z, probability q) at δ.
inline double rdp_epsilon(double q, double noise_multiplier, uint64_t steps, double delta,
                          Sampling sampling = Sampling::Poisson) {
    double eps = 0.0;
    check(dpd_rdp_epsilon(q, noise_multiplier, steps, delta, static_cast<uint32_t>(sampling), &eps,
                          nullptr));
    return eps;
}
/// The smallest noise multiplier for which `steps` steps at probability q stay within (ε, δ).
inline double rdp_noise_multiplier(double epsilon, double delta, uint64_t steps, double q,
                                   Sampling sampling = Sampling::Poisson) {
    double z = 0.0;
    check(dpd_rdp_noise_multiplier(epsilon, delta, steps, q, static_cast<uint32_t>(sampling), &z));
    return z;
}

/// Settings of an iterative run (defaults: Poisson q = 0.05, Adam 0.02, C = 1, M = 3, T = 0;
/// the privacy must be chosen with private_budget() or non_private()).
class IterativeConfig {
public:
    /// Logistic regression (labels 0/1 or ±1) with public penalty (l2/2)‖w‖².
    static IterativeConfig logistic(double l2) {
        return IterativeConfig([&](dpd_iterative_config **out) {
            return dpd_iterative_config_new_logistic(l2, out);
        });
    }
    /// Logistic regression only: estimate an intercept b (θ = (w, b), b last, unpenalised),
    /// or not (the default of logistic()).
    IterativeConfig &intercept(bool on) {
        return apply(dpd_iterative_config_set_intercept(h_.get(), on ? 1u : 0u));
    }
    /// Logistic regression only: public feature ranges, one per feature (checked against d when
    /// the trainer is made). Each record's x_j is clamped into [lo_j, hi_j] and mapped onto
    /// [−1, 1] as in PlrModel::fit_plr with ranges, before its gradient is clipped; predict()
    /// maps raw rows the same way. Bad ranges throw DPD_ERR_INVALID_ARGUMENT naming the column;
    /// empty ranges remove them.
    IterativeConfig &ranges(const PlrRanges &r) {
        if (r.lo.size() != r.hi.size())
            throw Error(DPD_ERR_LENGTH_MISMATCH,
                        "dpd::IterativeConfig::ranges: ranges.lo and ranges.hi differ in length");
        return apply(
            dpd_iterative_config_set_ranges(h_.get(), r.lo.data(), r.hi.data(), r.lo.size()));
    }
    /// BLR by DP variational inference (noise precision λ, prior precision λ₀).
    static IterativeConfig blr_vi(double noise_precision, double prior_precision) {
        return IterativeConfig([&](dpd_iterative_config **out) {
            return dpd_iterative_config_new_blr_vi(noise_precision, prior_precision, out);
        });
    }
    IterativeConfig &poisson(double rate) {
        return apply(dpd_iterative_config_set_poisson(h_.get(), rate));
    }
    IterativeConfig &fixed_size(size_t batch) {
        return apply(dpd_iterative_config_set_fixed_size(h_.get(), batch));
    }
    IterativeConfig &sgd(double learning_rate) {
        return apply(dpd_iterative_config_set_sgd(h_.get(), learning_rate));
    }
    IterativeConfig &adam(double learning_rate, double beta1 = 0.9, double beta2 = 0.999,
                          double epsilon = 1e-8) {
        return apply(dpd_iterative_config_set_adam(h_.get(), learning_rate, beta1, beta2, epsilon));
    }
    IterativeConfig &clip_norm(double c) {
        return apply(dpd_iterative_config_set_clip_norm(h_.get(), c));
    }
    IterativeConfig &dca(uint32_t n_nodes, size_t max_dropped) {
        return apply(dpd_iterative_config_set_dca(h_.get(), n_nodes, max_dropped));
    }
    /// Budget (ε, δ) for the whole run and noise multiplier z (see calibrate_noise_multiplier).
    IterativeConfig &private_budget(double epsilon, double delta, double noise_multiplier) {
        return apply(dpd_iterative_config_set_private(h_.get(), epsilon, delta, noise_multiplier));
    }
    /// No noise, no clipping (ε = ∞): baselines only.
    IterativeConfig &non_private() { return apply(dpd_iterative_config_set_non_private(h_.get())); }
    /// The smallest z for which `iterations` iterations on n clients x d features stay within
    /// (ε, δ), for the mechanism the trainer charges.
    double calibrate_noise_multiplier(size_t n_clients, size_t dim, double epsilon, double delta,
                                      uint64_t iterations) const {
        double z = 0.0;
        check(dpd_iterative_calibrate_noise_multiplier(h_.get(), n_clients, dim, epsilon, delta,
                                                       iterations, &z));
        return z;
    }
    const dpd_iterative_config *get() const noexcept { return h_.get(); }

private:
    template <class Make>
    explicit IterativeConfig(Make &&m)
        : h_(detail::make<dpd_iterative_config, dpd_iterative_config_free>(m)) {}
    IterativeConfig &apply(dpd_status s) {
        check(s);
        return *this;
    }
    detail::Handle<dpd_iterative_config, dpd_iterative_config_free> h_;
};

/// An iterative training run: public parameters θ and a Rényi-DP accountant.
class IterativeTrainer {
public:
    IterativeTrainer(const IterativeConfig &config, size_t n_clients, size_t dim, Rng &rng)
        : h_(detail::make<dpd_iterative_trainer, dpd_iterative_trainer_free>(
              [&](dpd_iterative_trainer **out) {
                  return dpd_iterative_trainer_new(config.get(), n_clients, dim, rng.get(), out);
              })) {}
    /// One iteration on every client's record (x: n x d row-major); `dropped` clients send
    /// nothing. Throws DPD_ERR_BUDGET_EXCEEDED (nothing released) past the budget.
    dpd_iterative_step_info step(Span<const double> x, Span<const double> y,
                                 Span<const size_t> dropped = {}) {
        dpd_iterative_step_info info{};
        check(dpd_iterative_trainer_step(h_.get(), x.data(), x.size(), y.data(), y.size(),
                                         dropped.data(), dropped.size(), &info));
        return info;
    }
    /// Up to `iterations` iterations, stopping at the budget; returns how many ran.
    uint64_t fit(Span<const double> x, Span<const double> y, uint64_t iterations) {
        uint64_t done = 0;
        check(dpd_iterative_trainer_fit(h_.get(), x.data(), x.size(), y.data(), y.size(),
                                        iterations, &done));
        return done;
    }
    /// θ: d weights (logistic) or (m, ln s) of length 2d (DP-VI BLR).
    std::vector<double> params() const {
        return detail::fetch<double>([&](double *out, size_t cap, size_t *len) {
            return dpd_iterative_trainer_params(h_.get(), out, cap, len);
        });
    }
    /// The last iteration's released noisy sum (as long as params(); empty before the first).
    std::vector<double> last_release() const {
        return detail::fetch<double>([&](double *out, size_t cap, size_t *len) {
            return dpd_iterative_trainer_last_release(h_.get(), out, cap, len);
        });
    }
    /// P(y = 1 | x) (logistic) or the posterior mean xᵀm (DP-VI BLR), one per row of x.
    std::vector<double> predict(Span<const double> x) const {
        size_t d = 0;
        check(dpd_iterative_trainer_info(h_.get(), nullptr, &d, nullptr, nullptr));
        size_t rows = d == 0 ? 0 : x.size() / d;
        return detail::compute<double>(rows, [&](double *out, size_t cap, size_t *len) {
            return dpd_iterative_trainer_predict(h_.get(), x.data(), x.size(), out, cap, len);
        });
    }
    /// (ε, δ) spent so far (ε = ∞ for a non-private run).
    std::pair<double, double> spent() const {
        std::pair<double, double> s{0.0, 0.0};
        check(dpd_iterative_trainer_spent(h_.get(), &s.first, &s.second));
        return s;
    }
    uint64_t iterations() const {
        uint64_t it = 0;
        check(dpd_iterative_trainer_info(h_.get(), &it, nullptr, nullptr, nullptr));
        return it;
    }
    /// The noise multiplier z of the run (0 when non-private).
    double noise_multiplier() const {
        double z = 0.0;
        check(dpd_iterative_trainer_info(h_.get(), nullptr, nullptr, nullptr, &z));
        return z;
    }

private:
    detail::Handle<dpd_iterative_trainer, dpd_iterative_trainer_free> h_;
};

// ---- summation kernels (wrapping arithmetic mod 2^64, what DCA nodes sum shares with) ----------

/// Which implementation of `wrapping_add` to call: the dispatched fastest path, the scalar
/// reference, or portable 4-lane SIMD.
enum class Kernel { Dispatched, Scalar, Wide };

/// The path the dispatched kernels take on this CPU: "portable", "avx2" or "avx512f".
inline std::string kernel_path() {
    return dpd_kernel_path_name(static_cast<uint32_t>(dpd_kernel_selected_path()));
}

/// acc[i] = acc[i] + src[i] mod 2^64; the lengths must match (else dpd::Error) and the arrays
/// must not overlap.
inline void wrapping_add(std::vector<uint64_t> &acc, Span<const uint64_t> src,
                         Kernel kernel = Kernel::Dispatched) {
    if (acc.size() != src.size())
        throw Error(DPD_ERR_LENGTH_MISMATCH, "wrapping_add: acc and src lengths differ");
    switch (kernel) {
    case Kernel::Scalar: check(dpd_wrapping_add_u64_scalar(acc.data(), src.data(), src.size())); break;
    case Kernel::Wide: check(dpd_wrapping_add_u64_wide(acc.data(), src.data(), src.size())); break;
    default: check(dpd_wrapping_add_u64(acc.data(), src.data(), src.size())); break;
    }
}

/// acc[i] = acc[i] − src[i] mod 2^64 (dispatched); lengths must match.
inline void wrapping_sub(std::vector<uint64_t> &acc, Span<const uint64_t> src) {
    if (acc.size() != src.size())
        throw Error(DPD_ERR_LENGTH_MISMATCH, "wrapping_sub: acc and src lengths differ");
    check(dpd_wrapping_sub_u64(acc.data(), src.data(), src.size()));
}

/// One measurement of a kernel: the fastest of `reps` calls on `len` words.
struct KernelTiming {
    std::string path;     ///< kernel_path() of this CPU
    size_t len = 0;       ///< words per call
    double seconds = 0.0; ///< fastest call
    double gib_per_s = 0.0; ///< bytes touched (read acc, read src, write acc) per second, GiB
};

/// A small benchmark helper: times `wrapping_add` on `len` pseudo-random words (after one
/// warm-up call) and keeps the fastest of `reps` calls. Reports; asserts nothing.
inline KernelTiming kernel_benchmark(size_t len = size_t(1) << 20, int reps = 50,
                                     Kernel kernel = Kernel::Dispatched) {
    std::vector<uint64_t> acc(len), src(len);
    uint64_t state = 0x9e3779b97f4a7c15u; // splitmix64: fixed, uninteresting input
    for (size_t i = 0; i < len; ++i) {
        uint64_t z = (state += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        acc[i] = z;
        src[i] = z ^ (z >> 31);
    }
    wrapping_add(acc, src, kernel);
    double best = 0.0;
    for (int r = 0; r < reps; ++r) {
        auto start = std::chrono::steady_clock::now();
        wrapping_add(acc, src, kernel);
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (r == 0 || s < best) best = s;
    }
    KernelTiming t;
    t.path = kernel_path();
    t.len = len;
    t.seconds = best;
    t.gib_per_s = best > 0.0 ? 3.0 * 8.0 * double(len) / best / double(1u << 30) : 0.0;
    return t;
}

} // namespace dpd

#endif
