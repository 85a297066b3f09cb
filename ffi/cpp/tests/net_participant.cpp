// A hospital's C++ system taking part in a dpdist job through libdpdist_net: it reads its own CSV
// into a matrix (the rows stay in this process), hands it to dpd::net::Participant and follows
// one job to its end. The multi-host job test (scripts/test-net-hosts.sh) runs it beside
// `dpdist participant` processes and an R session.
//
//   net_participant AGGREGATOR_URL CA_PEM TOKEN_FILE POLICY_TOML STATE_DIR ROWS_CSV JOB_ID
//                   [--insecure-seed N]
//
// Prints "job STATE; this participant took part" (or "did not take part", with the reason) and
// exits 0 when the job ended; on an error it prints the status name and message and exits 1.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "dpdist_net.hpp"

namespace {

// A header row of names, then rows of numbers; a cell that is not a number is an error naming
// its line and column.
void read_csv(const std::string &path, std::vector<std::string> &columns,
              std::vector<double> &values) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot be opened");
    std::string line;
    if (!std::getline(in, line)) throw std::runtime_error(path + ": no header");
    std::stringstream header(line);
    for (std::string name; std::getline(header, name, ',');) {
        if (!name.empty() && name.back() == '\r') name.pop_back();
        columns.push_back(name);
    }
    for (size_t number = 2; std::getline(in, line); ++number) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        std::stringstream row(line);
        size_t column = 0;
        for (std::string cell; std::getline(row, cell, ','); ++column) {
            char *end = nullptr;
            const double v = std::strtod(cell.c_str(), &end);
            if (cell.empty() || *end != '\0') {
                throw std::runtime_error(path + ":" + std::to_string(number) + ": column " +
                                         std::to_string(column + 1) + " is not a number");
            }
            values.push_back(v);
        }
        if (column != columns.size()) {
            throw std::runtime_error(path + ":" + std::to_string(number) + ": " +
                                     std::to_string(column) + " cells, the header has " +
                                     std::to_string(columns.size()));
        }
    }
}

const char *state_name(dpd_net_job_state s) {
    switch (s) {
    case DPD_NET_JOB_DONE: return "done";
    case DPD_NET_JOB_ABORTED: return "aborted";
    case DPD_NET_JOB_CANCELLED: return "cancelled";
    }
    return "unknown";
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 8 && !(argc == 10 && std::string(argv[8]) == "--insecure-seed")) {
        std::cerr << "usage: " << argv[0]
                  << " AGGREGATOR_URL CA_PEM TOKEN_FILE POLICY_TOML STATE_DIR ROWS_CSV JOB_ID"
                     " [--insecure-seed N]\n";
        return 2;
    }
    try {
        std::vector<std::string> columns;
        std::vector<double> values;
        dpd::net::check_abi();
        read_csv(argv[6], columns, values);
        dpd::net::Participant participant(argv[1], argv[2], argv[3], argv[4], argv[5]);
        participant.set_rows(columns, values);
        if (argc == 10) {
            std::cerr << "NON-PRIVATE: noise and masks from the fixed seed " << argv[9] << "\n";
            participant.set_insecure_fixed_seed(std::strtoull(argv[9], nullptr, 10));
        }
        participant.set_poll(std::chrono::milliseconds(50));
        const dpd::net::Outcome outcome = participant.follow_job(argv[7]);
        std::cout << "job " << state_name(outcome.state) << "; this participant "
                  << (outcome.took_part ? "took part" : "did not take part");
        if (!outcome.reason.empty()) std::cout << " (" << outcome.reason << ")";
        std::cout << std::endl;
        return 0;
    } catch (const dpd::net::Error &e) {
        std::cerr << "net_participant: " << e.status_name() << ": " << e.what() << "\n";
    } catch (const std::exception &e) {
        std::cerr << "net_participant: " << e.what() << "\n";
    }
    return 1;
}
