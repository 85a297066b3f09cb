// dpdist_net.hpp — a C++17 RAII wrapper over libdpdist_net (dpdist_net.h): a data holder taking
// part in dpdist jobs over HTTPS. Hand-written; header-only.
//
// - dpd::net::Participant owns one dpd_net_participant (move-only, freed in the destructor).
// - Every failing call throws dpd::net::Error with the dpd_net_status and the library's message.
// - follow_job() blocks; stop() may be called from another thread meanwhile.
// - Randomness comes from the OS CSPRNG; set_insecure_fixed_seed() is NON-PRIVATE (tests only).
#ifndef DPDIST_NET_HPP
#define DPDIST_NET_HPP

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dpdist_net.h"

namespace dpd {
namespace net {

/// A failed dpdist_net call: the status code and the message of dpd_net_last_error_message().
class Error : public std::runtime_error {
public:
    Error(dpd_net_status status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    /// The status the C function returned.
    dpd_net_status status() const noexcept { return status_; }
    /// Its name, e.g. "DPD_NET_ERR_IO".
    const char *status_name() const noexcept {
        return dpd_net_status_name(static_cast<uint32_t>(status_));
    }

private:
    dpd_net_status status_;
};

/// The message of the last failed dpdist_net call on this thread.
inline std::string last_error_message() {
    size_t len = 0;
    if (dpd_net_last_error_message(nullptr, 0, &len) != DPD_NET_OK) return "unknown error";
    std::string message(len + 1, '\0');
    if (dpd_net_last_error_message(&message[0], message.size(), &len) != DPD_NET_OK) {
        return "unknown error";
    }
    message.resize(len);
    return message;
}

/// Throws dpd::net::Error unless `status` is DPD_NET_OK.
inline void check(dpd_net_status status) {
    if (status != DPD_NET_OK) throw Error(status, last_error_message());
}

/// Throws unless the loaded libdpdist_net implements the ABI this header describes.
inline void check_abi() {
    if (dpd_net_abi_version() != DPD_NET_ABI_VERSION) {
        throw Error(DPD_NET_ERR_INVALID_STATE,
                    "libdpdist_net ABI " + std::to_string(dpd_net_abi_version()) +
                        " does not match dpdist_net.h ABI " + std::to_string(DPD_NET_ABI_VERSION));
    }
}

/// How a job ended, and whether this participant took part: its shares are in every released round
/// it was a client of, and at least one was released.
struct Outcome {
    dpd_net_job_state state;
    bool took_part;
    /// Why the job did not end done (empty if it did).
    std::string reason;
};

/// A data holder taking part in jobs on one aggregator with its own rows.
class Participant {
public:
    /// Reads the CA, token and policy files now (a missing file throws, naming it) and creates
    /// `state_dir` if needed. Reuse the state directory across restarts: it holds the ledger and
    /// the sealed shares, so no round is paid for or contributed to twice.
    Participant(const std::string &aggregator_url, const std::string &ca_pem_path,
                const std::string &token_path, const std::string &policy_path,
                const std::string &state_dir) {
        check(dpd_net_participant_new(aggregator_url.c_str(), ca_pem_path.c_str(),
                                      token_path.c_str(), policy_path.c_str(), state_dir.c_str(),
                                      &handle_));
    }
    ~Participant() { dpd_net_participant_free(handle_); }
    Participant(const Participant &) = delete;
    Participant &operator=(const Participant &) = delete;
    Participant(Participant &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    Participant &operator=(Participant &&other) noexcept {
        if (this != &other) {
            dpd_net_participant_free(handle_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }

    /// Hands over the rows: `values` holds values.size() / columns.size() rows, row after row
    /// (or column after column with DPD_NET_COLUMN_MAJOR). The values are copied.
    void set_rows(const std::vector<std::string> &columns, const std::vector<double> &values,
                  dpd_net_layout layout = DPD_NET_ROW_MAJOR) {
        std::vector<const char *> names;
        names.reserve(columns.size());
        for (const auto &c : columns) names.push_back(c.c_str());
        const size_t rows = columns.empty() ? 0 : values.size() / columns.size();
        if (!columns.empty() && rows * columns.size() != values.size()) {
            throw Error(DPD_NET_ERR_INVALID_ARGUMENT,
                        std::to_string(values.size()) + " values do not fill rows of " +
                            std::to_string(columns.size()) + " columns");
        }
        check(dpd_net_participant_set_rows(handle_, names.data(), names.size(), values.data(),
                                           rows, static_cast<uint32_t>(layout)));
    }

    /// NON-PRIVATE, tests only: noise and masks from a fixed seed.
    void set_insecure_fixed_seed(uint64_t seed) {
        check(dpd_net_participant_set_insecure_fixed_seed(handle_, seed));
    }

    /// How often to ask the aggregator for work.
    void set_poll(std::chrono::milliseconds every) {
        check(dpd_net_participant_set_poll_ms(handle_, static_cast<uint32_t>(every.count())));
    }

    /// Follows job `job_id` until it ends (blocks).
    Outcome follow_job(const std::string &job_id) {
        dpd_net_outcome out{};
        check(dpd_net_participant_follow_job(handle_, job_id.c_str(), &out));
        size_t len = 0;
        check(dpd_net_participant_outcome_reason(handle_, nullptr, 0, &len));
        std::string reason(len + 1, '\0');
        check(dpd_net_participant_outcome_reason(handle_, &reason[0], reason.size(), &len));
        reason.resize(len);
        return Outcome{static_cast<dpd_net_job_state>(out.state), out.took_part != 0,
                       std::move(reason)};
    }

    /// Follows every job whose roster lists this participant until stop() (throws the
    /// DPD_NET_ERR_STOPPED error then).
    void follow_all() { check(dpd_net_participant_follow_job(handle_, nullptr, nullptr)); }

    /// Makes a follow_job()/follow_all() on another thread return; safe from any thread.
    void stop() noexcept { dpd_net_participant_stop(handle_); }

private:
    dpd_net_participant *handle_ = nullptr;
};

}  // namespace net
}  // namespace dpd

#endif  // DPDIST_NET_HPP
