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
#include <cstddef>
#include <cstdint>
#include <memory>
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

/// Runs a query-size call `call(T *out, size_t cap, size_t *len)` twice: size, then data.
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

/// The public parameters of a round; every party builds the same one.
class RoundConfig {
public:
    /// noise_sigma_total = 0: exact, non-private sum; frac_bits: DPD_FRAC_BITS_AUTO or explicit.
    RoundConfig(uint64_t round, size_t n_clients, uint32_t n_nodes, size_t max_dropped,
                size_t dim, double bound, ShareMode mode, double noise_sigma_total = 0.0,
                uint32_t frac_bits = DPD_FRAC_BITS_AUTO)
        : h_(detail::make<dpd_round_config, dpd_round_config_free>(
              [&](dpd_round_config **out) {
                  return dpd_round_config_new(round, n_clients, n_nodes, max_dropped, dim, bound,
                                              static_cast<uint32_t>(mode), noise_sigma_total,
                                              frac_bits, out);
              })) {}
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
    const dpd_round_config *get() const noexcept { return h_.get(); }

private:
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

/// A compute node's sum over the agreed clients.
class NodeSum {
public:
    const dpd_node_sum *get() const noexcept { return h_.get(); }

private:
    friend class ComputeNode;
    explicit NodeSum(dpd_node_sum *raw) : h_(raw) {}
    detail::Handle<dpd_node_sum, dpd_node_sum_free> h_;
};

/// A compute node of one round.
class ComputeNode {
public:
    ComputeNode(const RoundConfig &config, uint32_t node)
        : h_(detail::make<dpd_node, dpd_node_free>(
              [&](dpd_node **out) { return dpd_node_new(config.get(), node, out); })) {}
    /// Adds one client's share from untrusted wire bytes (unchanged on error).
    void absorb(Span<const uint8_t> bytes) {
        check(dpd_node_absorb(h_.get(), bytes.data(), bytes.size()));
    }
    /// Removes a full share of a client outside the agreed set (same bytes as absorbed).
    void retract(Span<const uint8_t> bytes) {
        check(dpd_node_retract(h_.get(), bytes.data(), bytes.size()));
    }
    /// Ids of the clients absorbed so far, ascending.
    std::vector<uint64_t> received() const {
        return detail::fetch<uint64_t>([&](uint64_t *out, size_t cap, size_t *len) {
            return dpd_node_received(h_.get(), out, cap, len);
        });
    }
    NodeSum finalize(Span<const uint64_t> agreed) const {
        dpd_node_sum *raw = nullptr;
        check(dpd_node_finalize(h_.get(), agreed.data(), agreed.size(), &raw));
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
              [&](dpd_aggregator **out) { return dpd_aggregator_new(config.get(), out); })) {}
    void add(const NodeSum &sum) { check(dpd_aggregator_add(h_.get(), sum.get())); }
    Release release() const {
        Release r{{}, {}};
        r.sum = detail::fetch<double>([&](double *out, size_t cap, size_t *len) {
            return dpd_aggregator_release(h_.get(), out, cap, len, &r.info);
        });
        return r;
    }

private:
    detail::Handle<dpd_aggregator, dpd_aggregator_free> h_;
};

/// A whole round in one process; `inputs` is N x d row-major.
inline Release simulate_round(const RoundConfig &config, Span<const double> inputs,
                              Span<const uint64_t> dropped, Rng &rng) {
    Release r{{}, {}};
    r.sum = detail::fetch<double>([&](double *out, size_t cap, size_t *len) {
        return dpd_simulate_round(config.get(), inputs.data(), inputs.size(), dropped.data(),
                                  dropped.size(), rng.get(), out, cap, len, &r.info);
    });
    return r;
}

/// The header of a share message (validates the whole message).
inline dpd_wire_header wire_inspect(Span<const uint8_t> bytes) {
    dpd_wire_header h{};
    check(dpd_wire_inspect(bytes.data(), bytes.size(), &h));
    return h;
}

} // namespace dpd

#endif
