/*
 * dpdist: differentially private Bayesian learning on distributed data — the C ABI.
 *
 * Conventions:
 * - Every fallible function returns a dpd_status (DPD_OK = 0) and writes its results through
 *   out-pointers only on success. dpd_last_error_message() gives the message of the last failure
 *   on the calling thread.
 * - Input arrays (const T *p, size_t len): p may be NULL only when len == 0.
 * - Output arrays (T *out, size_t out_cap, size_t *out_len): when out_cap is too small the call
 *   returns DPD_ERR_BUFFER_TOO_SMALL and writes only the required length to *out_len; pass
 *   out = NULL, out_cap = 0 to query the size. Where the length follows from the inputs (a sum
 *   of d values, one prediction per row, ...) the capacity is checked before anything is
 *   computed: a size query never runs (or draws noise for) the work it sizes.
 * - Handles are opaque; create with dpd_*_new, release with the NULL-safe dpd_*_free. A handle may
 *   move between threads but must not be used by two threads at once.
 * - Enum-valued inputs are passed as uint32_t and validated. No callbacks into the host.
 * - Randomness: dpd_rng_new_os() in production; dpd_rng_new_insecure_fixed_seed() for tests only.
 * - Sizes: every buffer sized by an argument (a dimension, a client count, a length) is reserved
 *   fallibly: memory that is not there is DPD_ERR_ALLOC, never an abort of the process; a length
 *   that does not fit a size_t is DPD_ERR_OVERFLOW (or DPD_ERR_LENGTH_MISMATCH), never wrapped.
 *
 * Privacy parameters (checked by every function that takes one; a value outside its range, NaN
 * and infinities included, is DPD_ERR_INVALID_PRIVACY_PARAMETER and the message names the range):
 *   epsilon      [1e-6, 100]                       (DPD_EPSILON_MIN, DPD_EPSILON_MAX)
 *   delta        [2.2e-308, 0.01]; 0 where a pure  (DPD_DELTA_MIN, DPD_DELTA_MAX)
 *                epsilon-DP budget or charge makes sense
 *   sensitivity  [1e-12, 1e12], l1 or l2           (DPD_SENSITIVITY_MIN, DPD_SENSITIVITY_MAX)
 *   sigma, scale [1e-15, 1e20]                     (DPD_SIGMA_MIN, DPD_SIGMA_MAX)
 *   rho (zCDP)   [5e-13, 5000]                     (DPD_RHO_MIN, DPD_RHO_MAX)
 * A charge that costs nothing (epsilon = 0, rho = 0, (0, 0), sigma = infinity) is refused, not
 * counted. delta <= 0.01 is a ceiling on nonsense, not advice: use delta much smaller than 1/N.
 */

#ifndef DPDIST_H
#define DPDIST_H

/* Generated from ffi/capi by scripts/gen-header.sh (cbindgen, pinned). Do not edit. */

#include <stddef.h>
#include <stdint.h>

/**
 * Pass as `dof` to integrate the degrees of freedom of the data-model prior, and a common scale
 * of its second moments, over their posterior given the released Σxxᵀ (what
 * `dpd_blr_model_noise_aware` does; `blr::latent`).
 */
#define DPD_BLR_DOF_FROM_RELEASE 0.0

/**
 * Bytes of one configuration digest in `dpd_round_ledger_entries` / `_admit_digest`.
 */
#define DPD_CONFIG_DIGEST_LEN 16

/**
 * Pass as `frac_bits` to let the round pick the most fractional bits that are safe.
 */
#define DPD_FRAC_BITS_AUTO 4294967295

/**
 * Marks a feature that belongs to no group in `dpd_feature_groups_new`.
 */
#define DPD_FEATURE_UNUSED 4294967295

/**
 * Smallest ε accepted (a budget, a charge, a mechanism's ε).
 */
#define DPD_EPSILON_MIN 1e-6

/**
 * Largest ε accepted: e^100 already makes the ε-bound vacuous for any practical purpose.
 */
#define DPD_EPSILON_MAX 100.0

/**
 * Largest δ accepted. δ is the probability that the e^ε bound fails outright: publishing one
 * uniformly chosen record of N in the clear is (0, 1/N)-DP, so a δ of 10^-2 already permits
 * exposing one person in every hundred. The library cannot know N, so this is a ceiling on
 * nonsense, not a recommendation: use δ much smaller than 1/N (dpdist's examples use 10^-5).
 */
#define DPD_DELTA_MAX 0.01

/**
 * Smallest positive δ accepted: the smallest normal double (subnormals are refused).
 */
#define DPD_DELTA_MIN 2.2250738585072014e-308

/**
 * Smallest sensitivity Δ (ℓ1 or ℓ2, in the units of the released values).
 */
#define DPD_SENSITIVITY_MIN 1e-12

/**
 * Largest sensitivity Δ.
 */
#define DPD_SENSITIVITY_MAX 1e12

/**
 * Smallest noise σ (or Laplace scale) accepted as an input.
 */
#define DPD_SIGMA_MIN 1e-15

/**
 * Largest noise σ (or Laplace scale) accepted as an input.
 */
#define DPD_SIGMA_MAX 1e20

/**
 * Smallest ρ of a zCDP charge: ε_min²/2 (a charge that costs less is a zero-cost charge).
 */
#define DPD_RHO_MIN 5e-13

/**
 * Largest ρ of a zCDP charge: ε_max²/2.
 */
#define DPD_RHO_MAX 5000.0

/**
 * The most worker threads `dpd_set_num_threads` accepts: far above any core count, far below
 * what would exhaust the process's threads or stacks.
 */
#define DPD_MAX_THREADS 4096

/**
 * The ABI version this header describes. It changes whenever a signature, a struct layout, an
 * existing enum value or the accepted inputs of an existing function change (3:
 * `dpd_round_config_new` refuses σ = 0; the exact sum is `dpd_round_config_new_exact`);
 * compare it with `dpd_abi_version()` at start-up. build.rs reads this line for the shared
 * library's SONAME (`libdpdist.so.N`).
 */
#define DPD_ABI_VERSION 3

/**
 * Result of a dpdist call. `DPD_OK` (0) is success; every other value is an error whose
 * message can be read with `dpd_last_error_message` on the same thread.
 *
 * The numeric values are part of the ABI: new codes are only ever appended.
 */
typedef enum dpd_status {
    /**
     * Success.
     */
    DPD_OK = 0,
    /**
     * A required pointer argument was NULL.
     */
    DPD_ERR_NULL_POINTER = 1,
    /**
     * An argument is out of its documented range (e.g. epsilon <= 0, unknown enum value).
     */
    DPD_ERR_INVALID_ARGUMENT = 2,
    /**
     * Array lengths disagree with each other or with the dimension fixed earlier.
     */
    DPD_ERR_LENGTH_MISMATCH = 3,
    /**
     * An input value is NaN or infinite.
     */
    DPD_ERR_NON_FINITE = 4,
    /**
     * A value does not fit the fixed-point ring (or another integer range) without wrapping.
     */
    DPD_ERR_OVERFLOW = 5,
    /**
     * The same client id was absorbed twice in one round.
     */
    DPD_ERR_DUPLICATE_CLIENT = 6,
    /**
     * Wire bytes or a node sum belong to a different round.
     */
    DPD_ERR_WRONG_ROUND = 7,
    /**
     * A compute-node index outside 0..M, or a share addressed to another node.
     */
    DPD_ERR_UNKNOWN_NODE = 8,
    /**
     * More clients are missing than the round tolerates; nothing is released.
     */
    DPD_ERR_TOO_MANY_DROPPED = 9,
    /**
     * Wire bytes could not be parsed (bad magic, version, kind, truncated, trailing bytes).
     */
    DPD_ERR_MALFORMED = 10,
    /**
     * The privacy accountant refused a charge that would exceed the budget.
     */
    DPD_ERR_BUDGET_EXCEEDED = 11,
    /**
     * An output buffer is too small; the required length was written to the length out-pointer.
     */
    DPD_ERR_BUFFER_TOO_SMALL = 12,
    /**
     * A Rust panic was caught at the ABI boundary (a bug in dpdist; please report it).
     * Handles used by the failing call are left in an unspecified state: free them.
     */
    DPD_ERR_PANIC = 13,
    /**
     * `dpd_set_num_threads` was called after the thread pool was already built.
     */
    DPD_ERR_ALREADY_INITIALIZED = 14,
    /**
     * The call is not allowed in the handle's current state (e.g. absorb after finalize).
     */
    DPD_ERR_INVALID_STATE = 15,
    /**
     * A numerical routine failed (e.g. a matrix could not be factorised, no convergence).
     */
    DPD_ERR_NUMERICAL = 16,
    /**
     * An error a wrapped crate reported that has no more specific code.
     */
    DPD_ERR_OTHER = 17,
    /**
     * The operating system's random number generator failed.
     */
    DPD_ERR_RNG = 18,
    /**
     * A buffer whose size comes from the arguments (a dimension, a client count, a length)
     * could not be allocated. Nothing was changed; the process is intact.
     */
    DPD_ERR_ALLOC = 19,
    /**
     * ε, δ, a sensitivity Δ or a noise σ is outside its documented range (see the header's
     * "Privacy parameters" section); the message names the range.
     */
    DPD_ERR_INVALID_PRIVACY_PARAMETER = 20,
} dpd_status;

/**
 * The implementation the dispatched kernels run on this CPU.
 */
typedef enum dpd_kernel_path {
    /**
     * The build's baseline target (SSE2 on x86_64).
     */
    DPD_KERNEL_PATH_PORTABLE = 0,
    /**
     * x86_64 AVX2.
     */
    DPD_KERNEL_PATH_AVX2 = 1,
    /**
     * x86_64 AVX-512F.
     */
    DPD_KERNEL_PATH_AVX512F = 2,
} dpd_kernel_path;

/**
 * How the M − 1 masks of a client travel (the `mode` argument of `dpd_round_config_new`).
 */
typedef enum dpd_share_mode {
    /**
     * Every node receives a full vector (the DCA paper's protocol; the benchmark baseline).
     */
    DPD_SHARE_MODE_FULL = 0,
    /**
     * Node 0 receives the full balancing share, nodes 1..M a 16-byte seed they expand.
     */
    DPD_SHARE_MODE_SEED = 1,
} dpd_share_mode;

/**
 * The validity check of a round (the `kind` argument of `dpd_round_config_set_validity`).
 */
typedef enum dpd_validity {
    /**
     * No check (the default): the round is DCA's, bit for bit.
     */
    DPD_VALIDITY_NONE = 0,
    /**
     * Every coordinate of each client's contribution within ±B grid units (L∞), B = the
     * codec's bound on |enc(x)| plus the noise slice bound τ; proved with libprio's
     * Prio3SumVec.
     */
    DPD_VALIDITY_LINF = 1,
    /**
     * Each client's contribution has L2 norm at most R grid units, R = the data's L2 bound
     * plus the noise slice's norm bound τ₂; proved with a circuit on libprio's FLP. Set with
     * `dpd_round_config_set_validity_l2`, which takes the data's norm bound.
     */
    DPD_VALIDITY_L2 = 2,
} dpd_validity;

/**
 * Which kind of model a `dpd_plr_model` holds.
 */
typedef enum dpd_plr_model_kind {
    /**
     * One logistic model (PLR, or an imported one).
     */
    DPD_PLR_MODEL_LOGISTIC = 0,
    /**
     * K low-level logistic models and a high-level one (PST-S, PST-F, PST-H).
     */
    DPD_PLR_MODEL_STACKED = 1,
} dpd_plr_model_kind;

/**
 * What the threshold search minimises on the auxiliary data.
 */
typedef enum dpd_blr_error_measure {
    /**
     * Mean absolute error (DCA paper).
     */
    DPD_BLR_ERROR_MAE = 0,
    /**
     * Root mean squared error.
     */
    DPD_BLR_ERROR_RMSE = 1,
    /**
     * Minus Spearman's rank correlation (robust LR paper).
     */
    DPD_BLR_ERROR_SPEARMAN = 2,
} dpd_blr_error_measure;

/**
 * How the records of one step are chosen, for the RDP accountant.
 */
typedef enum dpd_sampling {
    /**
     * Each record independently with probability q (add/remove-one neighbours;
     * Mironov–Talwar–Zhang 2019). q = 1 is no subsampling.
     */
    DPD_SAMPLING_POISSON = 0,
    /**
     * A uniformly random batch of exactly m of n records, q = m/n (replace-one neighbours;
     * Wang–Balle–Kasiviswanathan 2019, Thm 9).
     */
    DPD_SAMPLING_WITHOUT_REPLACEMENT = 1,
} dpd_sampling;

/**
 * Which standard deviations the DP std round estimates.
 */
typedef enum dpd_blr_std_mode {
    /**
     * One σ shared by all x dimensions (2 released numbers; the default).
     */
    DPD_BLR_STD_POOLED = 0,
    /**
     * One σ per x dimension (d + 1 released numbers; the DCA paper's choice).
     */
    DPD_BLR_STD_PER_DIMENSION = 1,
} dpd_blr_std_mode;

/**
 * The distribution of the noise on each entry of a block of released statistics.
 */
typedef enum dpd_noise_kind {
    /**
     * N(0, sd²): the parameter is the standard deviation (DCA: σ·sqrt(N / (N − T − 1))).
     */
    DPD_NOISE_GAUSSIAN = 0,
    /**
     * Laplace(0, b): the parameter is the scale b.
     */
    DPD_NOISE_LAPLACE = 1,
} dpd_noise_kind;

/**
 * A privacy budget and what has been spent of it.
 */
typedef struct dpd_accountant dpd_accountant;

/**
 * Collects the M node sums of a round.
 */
typedef struct dpd_aggregator dpd_aggregator;

/**
 * Settings of a private BLR fit.
 */
typedef struct dpd_blr_config dpd_blr_config;

/**
 * A fitted private BLR model: the posterior from the released statistics and what it cost.
 */
typedef struct dpd_blr_model dpd_blr_model;

/**
 * The noise-aware posterior of β of a private BLR fit: a mixture of Gaussians.
 */
typedef struct dpd_blr_noise_aware dpd_blr_noise_aware;

/**
 * One client of one round.
 */
typedef struct dpd_client dpd_client;

/**
 * A labelled data set for the logistic learners (rows are copied in).
 */
typedef struct dpd_dataset dpd_dataset;

/**
 * A partition of (some of) the features into K groups with importances q_k.
 */
typedef struct dpd_feature_groups dpd_feature_groups;

/**
 * Settings of an iterative private training run (model, sampling, optimizer, privacy, DCA).
 */
typedef struct dpd_iterative_config dpd_iterative_config;

/**
 * An iterative training run in progress (or finished): its parameters θ and its accountant.
 */
typedef struct dpd_iterative_trainer dpd_iterative_trainer;

/**
 * One compute node of one round.
 */
typedef struct dpd_node dpd_node;

/**
 * A compute node's sum over the agreed client set, ready for the aggregator.
 */
typedef struct dpd_node_sum dpd_node_sum;

/**
 * A logistic or stacked model and the privacy guarantee of its training data (if known).
 */
typedef struct dpd_plr_model dpd_plr_model;

/**
 * A fitted regression in the data's units.
 */
typedef struct dpd_regression dpd_regression;

/**
 * A source of randomness. Every call that consumes randomness draws a fresh, independent
 * child stream from it; with a fixed seed the sequence of calls is reproducible.
 */
typedef struct dpd_rng dpd_rng;

/**
 * A validated round configuration. Every party (clients, nodes, aggregator) builds it from
 * the same parameters and so agrees on the fixed-point precision and the noise.
 */
typedef struct dpd_round_config dpd_round_config;

/**
 * Round id → configuration digest of the rounds a party has admitted.
 */
typedef struct dpd_round_ledger dpd_round_ledger;

/**
 * The M wire messages of one sharding; message k is for compute node k.
 */
typedef struct dpd_shares dpd_shares;

/**
 * The precisions' posterior of a Gamma-prior fit and how the coordinate ascent ended.
 */
typedef struct dpd_blr_cavi_info {
    /**
     * Shape of q(λ) (noise precision).
     */
    double lambda_shape;
    /**
     * Rate of q(λ); E[λ] = shape / rate.
     */
    double lambda_rate;
    /**
     * Shape of q(λ₀) (coefficient precision).
     */
    double lambda0_shape;
    /**
     * Rate of q(λ₀).
     */
    double lambda0_rate;
    /**
     * Sweeps run.
     */
    size_t iterations;
    /**
     * 1 if the relative change of E[λ] and E[λ₀] fell below the tolerance, else 0.
     */
    uint32_t converged;
} dpd_blr_cavi_info;

/**
 * The public noise of a released statistics vector: one distribution for the d(d+1)/2 entries
 * of Σxxᵀ and one for the d entries of Σxy. Kinds are `dpd_noise_kind` values; a parameter of
 * 0 means that block carries no noise.
 */
typedef struct dpd_blr_stats_noise {
    /**
     * `dpd_noise_kind` of the Σxxᵀ entries.
     */
    uint32_t xx_kind;
    /**
     * Its standard deviation (Gaussian) or scale (Laplace), finite and >= 0.
     */
    double xx;
    /**
     * `dpd_noise_kind` of the Σxy entries.
     */
    uint32_t xy_kind;
    /**
     * Its standard deviation (Gaussian) or scale (Laplace), finite and >= 0.
     */
    double xy;
} dpd_blr_stats_noise;

/**
 * What a released sum contains and the guarantee it carries.
 */
typedef struct dpd_release_info {
    /**
     * N: clients registered for the round.
     */
    size_t n_clients;
    /**
     * Clients whose values are in the sum (the agreed set).
     */
    size_t n_included;
    /**
     * T: missing or colluding clients the noise was calibrated for.
     */
    size_t max_dropped;
    /**
     * Fixed-point fractional bits of the round.
     */
    uint32_t frac_bits;
    /**
     * σ_total the round was configured with (value units; 0 without noise).
     */
    double noise_sigma_total;
    /**
     * σ each client added (value units; 0 without noise).
     */
    double noise_sigma_client;
    /**
     * σ of the noise actually in the sum, σ_client·sqrt(n_included) (0 without noise).
     */
    double noise_sigma_released;
} dpd_release_info;

/**
 * The slot a sealed share is bound to (the HPKE associated data). A share opens only with the
 * same four values it was sealed with.
 */
typedef struct dpd_seal_context {
    /**
     * Round id.
     */
    uint64_t round;
    /**
     * SHA-256 of the round's configuration, as published by the aggregator.
     */
    uint8_t config_hash[32];
    /**
     * Client id.
     */
    uint64_t client;
    /**
     * Index of the compute node the share is for (0..65535).
     */
    uint32_t node;
} dpd_seal_context;

/**
 * A round config's validity mode and the bound it implies (`dpd_round_config_validity_info`).
 * Grid units are those of the round's fixed-point codec: a value x is round(x·2^frac_bits).
 * σ below is the client's noise σ in grid units, N the number of clients, d the dimension.
 */
typedef struct dpd_validity_info {
    /**
     * A `dpd_validity` value: `DPD_VALIDITY_NONE` (every other field 0), `DPD_VALIDITY_LINF`
     * or `DPD_VALIDITY_L2`.
     */
    uint32_t kind;
    /**
     * The truncation δ asked for in `dpd_round_config_set_validity` or
     * `dpd_round_config_set_validity_l2`.
     */
    double truncation_delta_target;
    /**
     * L∞: the codec's bound on |enc(x)| for |x| ≤ the round's bound. L2: the data's norm
     * bound on the grid, ⌈data_norm·2^frac_bits⌉. Grid units.
     */
    uint64_t data_units;
    /**
     * L∞: τ, each honest noise value is clamped into [−τ, τ], τ = ⌈σ·sqrt(2·ln(2·N·d/δ_t))⌉.
     * L2: τ₂, an honest noise slice longer than τ₂ (L2 norm) is scaled back to it,
     * τ₂ = ⌈σ·sqrt(d + 2·sqrt(d·x) + 2x)⌉ with x = ln(N/δ_t). Grid units; 0 without noise.
     */
    uint64_t slice_units;
    /**
     * L∞: B = data_units + slice_units, the bound each coordinate of a contribution is checked
     * against. L2: R = data_units + slice_units, the bound on the L2 norm of a contribution.
     */
    uint64_t bound_units;
    /**
     * The probability bound on any honest noise value (L∞) or slice (L2) reaching τ or τ₂ (0
     * without noise). L∞: δ_t = 2·N·d·exp(−τ²/(2σ²)). L2: δ_t = N·exp(−y²) with
     * y = (sqrt(2t − d) − sqrt(d))/2, t = τ₂²/σ² (the x at which τ₂ is reached exactly). At most
     * the target. Add it to the round's δ with `dpd_verified_total_delta`.
     */
    double truncation_delta;
} dpd_validity_info;

/**
 * The header fields of a share message.
 */
typedef struct dpd_wire_header {
    /**
     * Round id.
     */
    uint64_t round;
    /**
     * Sending client's id.
     */
    uint64_t client;
    /**
     * The sharding attempt (the same in all M messages of one `dpd_client_shard`).
     */
    uint64_t shard;
    /**
     * Vector length d.
     */
    uint64_t dim;
    /**
     * Receiving compute node.
     */
    uint32_t node;
    /**
     * Fixed-point fractional bits.
     */
    uint32_t frac_bits;
    /**
     * Payload kind: `DPD_SHARE_MODE_FULL` (a d-vector) or `DPD_SHARE_MODE_SEED` (a 16-byte seed).
     */
    enum dpd_share_mode kind;
} dpd_wire_header;

/**
 * What one iteration released and what the run has spent after it.
 */
typedef struct dpd_iterative_step_info {
    /**
     * The iteration (0-based).
     */
    uint64_t iteration;
    /**
     * σ of the noise in the released sum (σ_client·sqrt(n_included); 0 when non-private).
     */
    double noise_sigma_released;
    /**
     * Clients whose shares are in the sum (sampled or not: every client takes part).
     */
    size_t n_included;
    /**
     * ε spent by the run so far (INFINITY when non-private).
     */
    double epsilon_spent;
    /**
     * δ spent by the run so far (0 when non-private).
     */
    double delta_spent;
} dpd_iterative_step_info;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * Fits λ ~ Gamma(a, b), λ₀ ~ Gamma(a0, b0) (shape, rate; the paper uses 2 for all four),
 * β | λ₀ ~ N(0, λ₀⁻¹I), y ~ N(xᵀβ, λ⁻¹) to the statistics vector `stats` of n records and d
 * features, laid out as `dpd_blr_record_stats` with `with_yy = 1` (so `len` = d(d+1)/2 + d + 1).
 * Stops after `max_iter` sweeps or when E[λ], E[λ₀] change by less than `tol` relatively
 * (the library's defaults are 1000 and 1e-12). Writes the mean of q(β) (d values, query-size
 * pattern) and, when `info` is non-NULL, the precisions' posterior.
 *
 * # Safety
 * `stats` NULL only with `len == 0`, else readable; `(out_mean, out_cap, out_len)` per the
 * output-array rule; `info` NULL or writable.
 */
enum dpd_status dpd_blr_fit_gamma_prior(const double *stats,
                                        size_t len,
                                        size_t n,
                                        size_t d,
                                        double a,
                                        double b,
                                        double a0,
                                        double b0,
                                        size_t max_iter,
                                        double tol,
                                        double *out_mean,
                                        size_t out_cap,
                                        size_t *out_len,
                                        struct dpd_blr_cavi_info *info);

/**
 * Spends `budget_share` ∈ [0, 1) of the fit's budget on releasing the shares of clipped
 * records (read them with `dpd_blr_model_clipped_share`); 0, the default, releases none. The
 * statistics round gets what the std round and this leave, so with a DP std round the two
 * shares must add up to less than 1 (checked when fitting). Needs projection on; on any error
 * the settings are unchanged.
 *
 * # Safety
 * As `dpd_blr_config_set_trusted`.
 */
enum dpd_status dpd_blr_config_set_clipped_share(struct dpd_blr_config *config,
                                                 double budget_share);

/**
 * Writes the released share of records whose y the bounds clipped (`*out_y`), of records with
 * some clipped x (`*out_x`), and the standard deviation of the noise on each share
 * (`*out_sd`); any pointer may be NULL. The shares are noisy and clamped to [0, 1].
 * `DPD_ERR_INVALID_STATE` when the fit released none (no projection, or
 * `dpd_blr_config_set_clipped_share` not set above 0 before fitting).
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; each out-pointer NULL or writable.
 */
enum dpd_status dpd_blr_model_clipped_share(const struct dpd_blr_model *model,
                                            double *out_y,
                                            double *out_x,
                                            double *out_sd);

/**
 * Creates fit settings with total budget (ε, δ) (δ is ignored by Laplace) and the public
 * assumed bounds |x_j| <= `assumed_x[j]` (j < d = `d`) and |y| <= `assumed_y`. The bounds must
 * be public knowledge, never computed from the private data.
 *
 * Refused at construction, nothing created: ε outside [1e-6, 100] or δ not 0 and outside
 * [2.2e-308, 0.01] → `DPD_ERR_INVALID_PRIVACY_PARAMETER`; a NaN or infinite bound →
 * `DPD_ERR_NON_FINITE`; a bound <= 0 or d = 0 → `DPD_ERR_INVALID_ARGUMENT` (the bounds set the
 * sensitivity, so a bound that is not a positive number would void the guarantee).
 *
 * # Safety
 * `assumed_x` NULL only with `d == 0`, else `d` readable doubles; `out` NULL (→ error) or a
 * writable `dpd_blr_config*`.
 */
enum dpd_status dpd_blr_config_new(double epsilon,
                                   double delta,
                                   const double *assumed_x,
                                   size_t d,
                                   double assumed_y,
                                   struct dpd_blr_config **out);

/**
 * Who adds the noise: a trusted aggregator (`dpd_blr_config_new`'s default).
 *
 * # Safety
 * `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
 */
enum dpd_status dpd_blr_config_set_trusted(struct dpd_blr_config *config);

/**
 * Who adds the noise: the clients, through DCA with `n_nodes` >= 2 compute nodes, at most
 * `max_dropped` missing or colluding clients, masks sent as `mode` (`DPD_SHARE_MODE_*`).
 *
 * # Safety
 * As `dpd_blr_config_set_trusted`.
 */
enum dpd_status dpd_blr_config_set_distributed(struct dpd_blr_config *config,
                                               uint32_t n_nodes,
                                               size_t max_dropped,
                                               uint32_t mode);

/**
 * Who adds the noise: every client its own full noise (input perturbation; the weakest
 * baseline).
 *
 * # Safety
 * As `dpd_blr_config_set_trusted`.
 */
enum dpd_status dpd_blr_config_set_input_perturbation(struct dpd_blr_config *config);

/**
 * Uses Laplace noise (pure ε-DP, robust LR paper) with the budget split (p₁, p₂, p₃) over
 * Σxxᵀ, Σxy, Σy² (positive, summing to 1; the paper's optimum is (0.6, 0.35, 0.05)).
 * Validated when fitting.
 *
 * # Safety
 * As `dpd_blr_config_set_trusted`.
 */
enum dpd_status dpd_blr_config_set_laplace(struct dpd_blr_config *config,
                                           double p1,
                                           double p2,
                                           double p3);

/**
 * Turns the projection of Alg. 2 (DP std round + threshold search on auxiliary data) on
 * (`enabled = 1`, the default) or off (`0`: statistics at the assumed bounds, whole budget).
 * Turning it on when it is already on keeps its settings (`dpd_blr_config_set_dp_std`,
 * `dpd_blr_config_set_public_std`).
 *
 * # Safety
 * As `dpd_blr_config_set_trusted`.
 */
enum dpd_status dpd_blr_config_set_projection(struct dpd_blr_config *config, uint32_t enabled);

/**
 * Sets the model's fixed precisions: noise λ > 0 and prior λ₀ > 0 (both 1 by default).
 * Validated when fitting.
 *
 * # Safety
 * As `dpd_blr_config_set_trusted`.
 */
enum dpd_status dpd_blr_config_set_prior(struct dpd_blr_config *config,
                                         double lambda,
                                         double lambda0);

/**
 * Also releases Σy² in the statistics round (`enabled = 1`; default `0`), which the
 * Gamma-prior fit (`dpd_blr_fit_gamma_prior`) needs. Costs no extra budget: the sensitivity
 * and the noise account for the extra coordinate.
 *
 * # Safety
 * As `dpd_blr_config_set_trusted`.
 */
enum dpd_status dpd_blr_config_set_release_yy(struct dpd_blr_config *config, uint32_t enabled);

/**
 * Frees fit settings; NULL is a no-op.
 *
 * # Safety
 * `config` must be NULL or a handle from `dpd_blr_config_new` not freed before.
 */
void dpd_blr_config_free(struct dpd_blr_config *config);

/**
 * Fits BLR privately on `x` (n × d, row-major, `x_len = n·d`) and `y[0..n]` with `config`;
 * the accountant charges the budget before anything is released. Randomness (noise, masks,
 * the auxiliary data of the threshold search) comes from `rng`.
 *
 * # Safety
 * Arrays NULL only with length 0, else readable; `config`, `rng` NULL (→ error) or live
 * handles (`rng` not used concurrently); `out` NULL (→ error) or a writable `dpd_blr_model*`.
 */
enum dpd_status dpd_blr_fit(const double *x,
                            size_t x_len,
                            const double *y,
                            size_t n,
                            size_t d,
                            const struct dpd_blr_config *config,
                            struct dpd_rng *rng,
                            struct dpd_blr_model **out);

/**
 * Copies the posterior mean μ (d coefficients) into `out` (query-size pattern).
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; `(out, out_cap, out_len)` per the output-array
 * rule.
 */
enum dpd_status dpd_blr_model_mean(const struct dpd_blr_model *model,
                                   double *out,
                                   size_t out_cap,
                                   size_t *out_len);

/**
 * Writes the privacy the accountant charged for the fit, (ε, δ); either pointer may be NULL.
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; each out-pointer NULL or writable.
 */
enum dpd_status dpd_blr_model_spent(const struct dpd_blr_model *model,
                                    double *out_epsilon,
                                    double *out_delta);

/**
 * Copies the clipping bounds the statistics round used (B_j per x dimension, query-size
 * pattern into `out_bounds_x`) and B_y into `*out_bound_y` (may be NULL). With projection
 * these are ω·σ̂ from the threshold search, else the assumed bounds.
 *
 * # Safety
 * As `dpd_blr_model_mean`; `out_bound_y` NULL or writable.
 */
enum dpd_status dpd_blr_model_bounds(const struct dpd_blr_model *model,
                                     double *out_bounds_x,
                                     size_t out_cap,
                                     size_t *out_len,
                                     double *out_bound_y);

/**
 * Predictions ŷ = xᵀμ for the rows of `x` (row-major, `x_len` a multiple of d), one per row
 * into `out` (query-size pattern).
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; `x` NULL only with `x_len == 0`, else readable;
 * `(out, out_cap, out_len)` per the output-array rule.
 */
enum dpd_status dpd_blr_model_predict(const struct dpd_blr_model *model,
                                      const double *x,
                                      size_t x_len,
                                      double *out,
                                      size_t out_cap,
                                      size_t *out_len);

/**
 * Copies the released (noisy) statistics vector (layout as `dpd_blr_record_stats`, with Σy²
 * iff the config set `dpd_blr_config_set_release_yy`) into `out` (query-size pattern); feed
 * it to `dpd_blr_posterior_mean` or `dpd_blr_fit_gamma_prior`. Already private: no extra cost.
 *
 * # Safety
 * As `dpd_blr_model_mean`.
 */
enum dpd_status dpd_blr_model_stats(const struct dpd_blr_model *model,
                                    double *out,
                                    size_t out_cap,
                                    size_t *out_len);

/**
 * Frees a fitted model; NULL is a no-op.
 *
 * # Safety
 * `model` must be NULL or a handle from `dpd_blr_fit` not freed before.
 */
void dpd_blr_model_free(struct dpd_blr_model *model);

/**
 * The noise-aware posterior of the fit's coefficients (Bernstein & Sheldon 2019's model):
 * `draws` >= 1 draws of the latent Σxxᵀ given its released value and the public noise of the
 * fit's release (trusted aggregator, DCA or input perturbation, Gaussian or Laplace), inside
 * the box of the fit's clipping bounds, under the data-model prior (second moments B_j²/3 of
 * those bounds, their scale and the prior's degrees of freedom integrated over their
 * posterior given the release: `DPD_BLR_DOF_FROM_RELEASE`), each weighted by the likelihood of the
 * released Σxy; 1000 draws is a good default. `dpd_blr_noise_aware_from_stats` is the same for
 * statistics the host released itself. Randomness from `rng` (this is post-processing of the release:
 * it costs no privacy, and a fixed seed makes it reproducible). The prior precisions are the
 * fit's. Measured calibration and the approximations made are documented in `blr::noise_aware`.
 *
 * # Safety
 * `model`, `rng` NULL (→ error) or live handles (`rng` not used concurrently); `out` NULL
 * (→ error) or a writable `dpd_blr_noise_aware*`.
 */
enum dpd_status dpd_blr_model_noise_aware(const struct dpd_blr_model *model,
                                          size_t draws,
                                          struct dpd_rng *rng,
                                          struct dpd_blr_noise_aware **out);

/**
 * Posterior summaries of the coefficients β_1..β_d: means into `out_mean`, standard deviations
 * into `out_sd`, and the central credible interval at `level` in (0, 1) (e.g. 0.9) into
 * `out_lower` / `out_upper`. The four arrays share the capacity `out_cap` and the query-size
 * pattern (the length d goes to `*out_len`).
 *
 * # Safety
 * `posterior` NULL (→ error) or a live handle; the four arrays NULL only with `out_cap == 0`,
 * else `out_cap` writable doubles each, not overlapping; `out_len` NULL (→ error) or writable.
 */
enum dpd_status dpd_blr_noise_aware_coefficients(const struct dpd_blr_noise_aware *posterior,
                                                 double level,
                                                 double *out_mean,
                                                 double *out_sd,
                                                 double *out_lower,
                                                 double *out_upper,
                                                 size_t out_cap,
                                                 size_t *out_len);

/**
 * Posterior summaries of predictions for the rows of `x` (row-major, `x_len` a positive
 * multiple of d): with `observation = 0` of the mean response xᵀβ, with `observation = 1` of a
 * new observation xᵀβ + e (adds the noise variance 1/λ). Outputs as
 * `dpd_blr_noise_aware_coefficients`, one per row.
 *
 * # Safety
 * As `dpd_blr_noise_aware_coefficients`; `x` NULL only with `x_len == 0`, else readable.
 */
enum dpd_status dpd_blr_noise_aware_predict(const struct dpd_blr_noise_aware *posterior,
                                            const double *x,
                                            size_t x_len,
                                            uint32_t observation,
                                            double level,
                                            double *out_mean,
                                            double *out_sd,
                                            double *out_lower,
                                            double *out_upper,
                                            size_t out_cap,
                                            size_t *out_len);

/**
 * Describes the posterior: the number of coefficients d and the effective sample size of its
 * importance weights, (Σw)²/Σw² (at most the draws used: a fit whose first `draws` give an
 * ESS below 10% of them draws more, doubling up to 16 × `draws`; a value still far below the
 * draws means few draws carry the posterior — use more). Either pointer may be NULL.
 *
 * # Safety
 * `posterior` NULL (→ error) or a live handle; each out-pointer NULL or writable.
 */
enum dpd_status dpd_blr_noise_aware_info(const struct dpd_blr_noise_aware *posterior,
                                         size_t *out_d,
                                         double *out_effective_sample_size);

/**
 * Frees a noise-aware posterior; NULL is a no-op.
 *
 * # Safety
 * `posterior` must be NULL or a handle from `dpd_blr_model_noise_aware` not freed before.
 */
void dpd_blr_noise_aware_free(struct dpd_blr_noise_aware *posterior);

/**
 * The naive posterior's summaries of β (the released statistics treated as exact, as
 * `dpd_blr_model_mean` does): means, standard deviations and central intervals at `level`,
 * outputs as `dpd_blr_noise_aware_coefficients`. At small ε these intervals are too narrow;
 * they are here for comparison.
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; outputs as `dpd_blr_noise_aware_coefficients`.
 */
enum dpd_status dpd_blr_model_coefficients(const struct dpd_blr_model *model,
                                           double level,
                                           double *out_mean,
                                           double *out_sd,
                                           double *out_lower,
                                           double *out_upper,
                                           size_t out_cap,
                                           size_t *out_len);

/**
 * Writes the public noise of the model's released statistics (`dpd_blr_model_stats`): the
 * calibrated noise of its statistics round as the fit's aggregation adds it (trusted
 * aggregator: one draw; DCA: σ·sqrt(N/(N − T − 1)); input perturbation: the sum of N draws).
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; `out` NULL (→ error) or writable.
 */
enum dpd_status dpd_blr_model_stats_noise(const struct dpd_blr_model *model,
                                          struct dpd_blr_stats_noise *out);

/**
 * The noise-aware posterior of β from a released statistics vector `stats` (layout as
 * `dpd_blr_record_stats`; Σy², present iff `with_yy = 1`, is not used) of `n` records and `d`
 * features whose noise is `*noise`, with the bounds `bounds_x[0..d]` every record was clipped
 * to (NULL with `bounds_len = 0`: none; then `second_moments` is required), the data-model
 * prior of the latent Σxxᵀ — per-feature second moments E[x_j²] `second_moments[0..d]` (NULL
 * with length 0: B_j²/3 from the bounds) known to `dof` > 0 records' worth, or
 * `DPD_BLR_DOF_FROM_RELEASE` (0) to integrate ν and the moments' scale over their posterior
 * given the release (the default) — the prior precisions `lambda` (noise) and `lambda0`
 * (coefficients), and `draws` >= 1 draws from `rng` (post-processing of the release: no
 * privacy cost; a fixed seed makes it reproducible). With the statistics, noise, bounds and
 * priors of a model and `DPD_BLR_DOF_FROM_RELEASE`, the result equals `dpd_blr_model_noise_aware`'s
 * for the same rng state. On any error nothing is created and `*out` is untouched.
 *
 * # Safety
 * Arrays NULL only with length 0, else readable; `noise` NULL (→ error) or readable; `rng`
 * NULL (→ error) or a live handle not used concurrently; `out` NULL (→ error) or writable.
 */
enum dpd_status dpd_blr_noise_aware_from_stats(const double *stats,
                                               size_t stats_len,
                                               size_t n,
                                               size_t d,
                                               uint32_t with_yy_flag,
                                               const struct dpd_blr_stats_noise *noise,
                                               const double *bounds_x,
                                               size_t bounds_len,
                                               const double *second_moments,
                                               size_t second_moments_len,
                                               double dof,
                                               double lambda,
                                               double lambda0,
                                               size_t draws,
                                               struct dpd_rng *rng,
                                               struct dpd_blr_noise_aware **out);

/**
 * Fits the regression with an intercept (`intercept` = 1; 0 for `y ~ x - 1`) on `x` (n × d,
 * row-major, `x_len = n·d`) and `y[0..n]`: column j's public range is
 * `[lower_x[j], upper_x[j]]`, y's `[lower_y, upper_y]` (from a codebook or a physical limit,
 * never from the data; values outside are clipped to them). One Gaussian release at (ε, δ):
 * `n_nodes` = 0 has a trusted aggregator add the noise, `n_nodes` >= 2 runs DCA with that many
 * compute nodes (seed-compressed shares, no dropouts). Randomness from `rng`. No column is an
 * indicator group (`dpd_regression_fit_grouped` declares them).
 *
 * # Safety
 * Arrays NULL only with length 0, else readable (`lower_x`, `upper_x` of length d); `rng` NULL
 * (→ error) or a live handle not used concurrently; `out` NULL (→ error) or writable.
 */
enum dpd_status dpd_regression_fit(const double *x,
                                   size_t x_len,
                                   const double *y,
                                   size_t n,
                                   const double *lower_x,
                                   const double *upper_x,
                                   size_t d,
                                   double lower_y,
                                   double upper_y,
                                   uint32_t intercept,
                                   double epsilon,
                                   double delta,
                                   uint32_t n_nodes,
                                   struct dpd_rng *rng,
                                   struct dpd_regression **out);

/**
 * As `dpd_regression_fit`, with indicator groups: `group_of[j]` (length d) is 0 for a column
 * that is not an indicator and k >= 1 for a member of group k, the indicators of one
 * categorical variable's levels (R's treatment contrasts: one column per level but the
 * reference). Group numbers are labels in any order. Each grouped column's public range must be
 * [0, 1] and its values 0 or 1, and a row sets at most one column of a group — a fact of the
 * codebook: a row that breaks it is refused (DPD_ERR_INVALID_ARGUMENT, the message names the
 * group's label, the row and the columns), nothing is released and nothing made. A group of 5 or
 * more indicators is kept 0/1 on the design and counts once in the sensitivity (smaller than
 * the same columns ungrouped, so less noise); a smaller group is mapped like any column.
 * `group_of` NULL means no groups, as `dpd_regression_fit`.
 *
 * # Safety
 * As `dpd_regression_fit`; `group_of` NULL or readable for d values.
 */
enum dpd_status dpd_regression_fit_grouped(const double *x,
                                           size_t x_len,
                                           const double *y,
                                           size_t n,
                                           const double *lower_x,
                                           const double *upper_x,
                                           const uint32_t *group_of,
                                           size_t d,
                                           double lower_y,
                                           double upper_y,
                                           uint32_t intercept,
                                           double epsilon,
                                           double delta,
                                           uint32_t n_nodes,
                                           struct dpd_rng *rng,
                                           struct dpd_regression **out);

/**
 * Copies (intercept, slope_1, …, slope_d) in the data's units into `out` (query-size
 * pattern; d + 1 values). Without an intercept the first value is the one the ranges' centres
 * fix.
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; `(out, out_cap, out_len)` per the output-array
 * rule.
 */
enum dpd_status dpd_regression_coefficients(const struct dpd_regression *model,
                                            double *out,
                                            size_t out_cap,
                                            size_t *out_len);

/**
 * Copies the standard errors of (intercept, slopes) into `out` (query-size pattern; NaN for
 * slopes of a fit that is the constant predictor).
 *
 * # Safety
 * As `dpd_regression_coefficients`.
 */
enum dpd_status dpd_regression_std_errors(const struct dpd_regression *model,
                                          double *out,
                                          size_t out_cap,
                                          size_t *out_len);

/**
 * Predictions for the rows of `x` (row-major, raw values in the data's units, `x_len` a
 * multiple of d), one per row into `out` (query-size pattern).
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; `x` NULL only with `x_len == 0`, else readable;
 * `(out, out_cap, out_len)` per the output-array rule.
 */
enum dpd_status dpd_regression_predict(const struct dpd_regression *model,
                                       const double *x,
                                       size_t x_len,
                                       double *out,
                                       size_t out_cap,
                                       size_t *out_len);

/**
 * Writes the fit's DP adjusted R² (NaN when the release leaves none), the constant predictor
 * it is measured against and the residual sd, in the data's units; each pointer may be NULL.
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; each out-pointer NULL or writable.
 */
enum dpd_status dpd_regression_fit_quality(const struct dpd_regression *model,
                                           double *out_r_squared,
                                           double *out_constant,
                                           double *out_residual_sd);

/**
 * Writes the privacy the accountant charged, (ε, δ); either pointer may be NULL.
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; each out-pointer NULL or writable.
 */
enum dpd_status dpd_regression_spent(const struct dpd_regression *model,
                                     double *out_epsilon,
                                     double *out_delta);

/**
 * Copies the fit's warnings (UTF-8, one per line, no terminating NUL; empty when there are
 * none) into `out` (query-size pattern, in bytes): a fit no better than the constant, noise
 * that dominates the statistics.
 *
 * # Safety
 * As `dpd_regression_coefficients`, for bytes.
 */
enum dpd_status dpd_regression_warnings(const struct dpd_regression *model,
                                        uint8_t *out,
                                        size_t out_cap,
                                        size_t *out_len);

/**
 * Frees a fitted regression; NULL is a no-op.
 *
 * # Safety
 * `model` must be NULL or a handle from `dpd_regression_fit` not freed before.
 */
void dpd_regression_free(struct dpd_regression *model);

/**
 * Chooses the projection multipliers for a statistics release of n records with standard
 * deviations `sigma_x[0..d]` (per x dimension) and `sigma_y`, imitating the release `config`
 * describes (mechanism, aggregation, prior, and the statistics round's share of the budget as
 * `dpd_blr_fit` would spend it: (1 − 0.1) of it with projection on, all of it with projection
 * off), minimising `measure` (`DPD_BLR_ERROR_*`) over the DCA paper's grid (20 points in
 * [0.1, 2.1] each, 10 auxiliary data sets, mean error). The clipping bounds are then
 * B_j = ω_x·σ_j and B_y = ω_y·σ_y.
 *
 * The auxiliary data are seeded from `rng` (the seed is not secret: nothing private is drawn).
 * Writes ω_x, ω_y and the chosen point's mean error (`out_error` may be NULL) only on success.
 *
 * # Safety
 * `sigma_x` NULL only with `d == 0`, else `d` readable doubles; `config`, `rng` NULL (→ error)
 * or live handles (`rng` not used concurrently); `out_omega_x`, `out_omega_y` NULL (→ error)
 * or writable; `out_error` NULL or writable.
 */
enum dpd_status dpd_blr_search_thresholds(const double *sigma_x,
                                          size_t d,
                                          double sigma_y,
                                          size_t n,
                                          const struct dpd_blr_config *config,
                                          uint32_t measure,
                                          struct dpd_rng *rng,
                                          double *out_omega_x,
                                          double *out_omega_y,
                                          double *out_error);

/**
 * Writes the length of a statistics vector for d features: d(d+1)/2 entries of Σxxᵀ (packed
 * upper triangle, row-major), d of Σxy, and Σy² when `with_yy = 1`. A length that does not
 * fit a `size_t`, or whose doubles would not fit the address space, is `DPD_ERR_OVERFLOW`
 * (never a wrapped value).
 *
 * # Safety
 * `out` NULL (→ error) or a writable `size_t`.
 */
enum dpd_status dpd_blr_stats_len(size_t d, uint32_t with_yy_flag, size_t *out);

/**
 * Writes one record's statistics vector `[x_j x_k (j <= k)…, x_j y…, (y²)]` (the vector a DCA
 * client contributes; clip the record to public bounds first) into `out` (query-size
 * pattern).
 *
 * # Safety
 * `x_row` NULL only with `d == 0`, else `d` readable doubles; `(out, out_cap, out_len)` per
 * the output-array rule.
 */
enum dpd_status dpd_blr_record_stats(const double *x_row,
                                     size_t d,
                                     double y,
                                     uint32_t with_yy_flag,
                                     double *out,
                                     size_t out_cap,
                                     size_t *out_len);

/**
 * The posterior mean μ = (λ₀I + λ·nxx)⁻¹ λ·nxy from a (noisy) statistics vector `stats` of
 * n records and d features (layout as `dpd_blr_record_stats`), with the precision repaired
 * so that it is at least λ₀I. Writes d coefficients into `out` (query-size pattern).
 *
 * # Safety
 * `stats` NULL only with `len == 0`, else readable; `(out, out_cap, out_len)` per the
 * output-array rule.
 */
enum dpd_status dpd_blr_posterior_mean(const double *stats,
                                       size_t len,
                                       size_t n,
                                       size_t d,
                                       uint32_t with_yy_flag,
                                       double lambda,
                                       double lambda0,
                                       double *out,
                                       size_t out_cap,
                                       size_t *out_len);

/**
 * The non-private posterior mean (baseline) of `x` (n × d, row-major) and `y[0..n]`, d
 * coefficients into `out` (query-size pattern).
 *
 * # Safety
 * Arrays NULL only with length 0, else readable; `(out, out_cap, out_len)` per the
 * output-array rule.
 */
enum dpd_status dpd_blr_fit_non_private(const double *x,
                                        size_t x_len,
                                        const double *y,
                                        size_t n,
                                        size_t d,
                                        double lambda,
                                        double lambda0,
                                        double *out,
                                        size_t out_cap,
                                        size_t *out_len);

/**
 * Mean absolute error.
 *
 * # Safety
 * Arrays NULL only with length 0, else readable; `out` NULL (→ error) or a writable `double`.
 */
enum dpd_status dpd_mae(const double *truth,
                        size_t n,
                        const double *predicted,
                        size_t n_predicted,
                        double *out);

/**
 * Root mean squared error.
 *
 * # Safety
 * As `dpd_mae`.
 */
enum dpd_status dpd_rmse(const double *truth,
                         size_t n,
                         const double *predicted,
                         size_t n_predicted,
                         double *out);

/**
 * Spearman's rank correlation (average ranks for ties; 0 for constant input).
 *
 * # Safety
 * As `dpd_mae`.
 */
enum dpd_status dpd_spearman(const double *truth,
                             size_t n,
                             const double *predicted,
                             size_t n_predicted,
                             double *out);

/**
 * Estimates the standard deviations with the DP std round: `mode` a `dpd_blr_std_mode`, and
 * `budget_share` ∈ (0, 1) the fraction of the fit's budget it spends (the statistics round gets
 * the rest). The default is `DPD_BLR_STD_POOLED` with share 0.1. Needs projection on; on any
 * error the settings are unchanged.
 *
 * # Safety
 * As `dpd_blr_config_set_trusted`.
 */
enum dpd_status dpd_blr_config_set_dp_std(struct dpd_blr_config *config,
                                          uint32_t mode,
                                          double budget_share);

/**
 * Uses standard deviations that are public by construction (`x_std[0..d]` per x dimension, d
 * as given to `dpd_blr_config_new`, and `y_std`), e.g. after a preprocessing that fixes them
 * (unit-norm rows have pooled σ = sqrt(1/d); a standardised y has σ = 1). No budget is spent
 * on them, so they must never be computed from the private data. All must be finite and > 0.
 * Needs projection on; on any error the settings are unchanged.
 *
 * # Safety
 * As `dpd_blr_config_set_trusted`; `x_std` NULL only with `d == 0`, else `d` readable doubles.
 */
enum dpd_status dpd_blr_config_set_public_std(struct dpd_blr_config *config,
                                              const double *x_std,
                                              size_t d,
                                              double y_std);

/**
 * Creates the aggregator of the round. It holds d words: `DPD_ERR_ALLOC` when they cannot be
 * allocated (never an abort). A party that keeps a `dpd_round_ledger` uses
 * `dpd_aggregator_new_admitted` instead.
 *
 * # Safety
 * `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL or a writable
 * `dpd_aggregator*`.
 */
enum dpd_status dpd_aggregator_new(const struct dpd_round_config *config,
                                   struct dpd_aggregator **out);

/**
 * As `dpd_aggregator_new`, admitting the round through `ledger` (see
 * `dpd_round_ledger_admit`): a round id the ledger has seen with another configuration →
 * `DPD_ERR_WRONG_ROUND`, nothing created. The round is recorded only if the aggregator could
 * be created.
 *
 * # Safety
 * `ledger` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently; `config`
 * and `out` as `dpd_aggregator_new`.
 */
enum dpd_status dpd_aggregator_new_admitted(struct dpd_round_ledger *ledger,
                                            const struct dpd_round_config *config,
                                            struct dpd_aggregator **out);

/**
 * Adds one node's sum (the aggregator copies it; free `sum` when convenient). Errors, with the
 * aggregator unchanged: `DPD_ERR_WRONG_ROUND`, `DPD_ERR_UNKNOWN_NODE`,
 * `DPD_ERR_INVALID_ARGUMENT` (a second sum of the same node, or a client set different from
 * the other nodes'), `DPD_ERR_MALFORMED` (other precision), `DPD_ERR_LENGTH_MISMATCH`.
 *
 * # Safety
 * `aggregator` NULL or a live handle not used concurrently; `sum` NULL or a live handle.
 */
enum dpd_status dpd_aggregator_add(struct dpd_aggregator *aggregator,
                                   const struct dpd_node_sum *sum);

/**
 * Decodes the released sum (d doubles, query-size pattern into `out_sum`) once all M node
 * sums are in, and describes it in `*info` (optional, may be NULL). Errors:
 * `DPD_ERR_INVALID_STATE` (node sums missing), `DPD_ERR_TOO_MANY_DROPPED`. The aggregator is
 * not changed, so a size query followed by the real call is fine.
 *
 * # Safety
 * `aggregator` NULL or a live handle; `out_sum` NULL with `out_cap == 0` or `out_cap` writable
 * doubles; `out_len` NULL (→ error) or writable; `info` NULL or writable.
 */
enum dpd_status dpd_aggregator_release(const struct dpd_aggregator *aggregator,
                                       double *out_sum,
                                       size_t out_cap,
                                       size_t *out_len,
                                       struct dpd_release_info *info);

/**
 * Frees an aggregator; NULL is a no-op.
 *
 * # Safety
 * `aggregator` must be NULL or a handle from `dpd_aggregator_new` not freed before.
 */
void dpd_aggregator_free(struct dpd_aggregator *aggregator);

/**
 * Creates client `client_id` (< N) of the round. Its mask seeds and noise come from a fresh
 * child stream of `rng` (use `dpd_rng_new_os` in production).
 *
 * # Safety
 * `config`, `rng` must be NULL (→ `DPD_ERR_NULL_POINTER`) or live handles (`rng` not used
 * concurrently); `out` NULL or a writable `dpd_client*`.
 */
enum dpd_status dpd_client_new(const struct dpd_round_config *config,
                               uint64_t client_id,
                               struct dpd_rng *rng,
                               struct dpd_client **out);

/**
 * Encodes `values[0..len]` (len = d, each finite with |x| <= bound), adds the round's noise
 * and splits the result into M additive shares, returned as wire messages in a new
 * `dpd_shares` handle (read them with `dpd_shares_message`). Every call draws fresh masks and
 * noise: send each client's shares of a round only once.
 *
 * Errors: `DPD_ERR_LENGTH_MISMATCH`, `DPD_ERR_NON_FINITE`, `DPD_ERR_OVERFLOW` (|x| > bound),
 * checked before any randomness is drawn; `DPD_ERR_ALLOC` when the shares (d words for node 0,
 * and for every node in full mode) cannot be allocated.
 *
 * # Safety
 * `client` NULL or a live handle; `values` NULL with `len == 0` or `len` readable doubles;
 * `out` NULL or a writable `dpd_shares*`.
 */
enum dpd_status dpd_client_shard(struct dpd_client *client,
                                 const double *values,
                                 size_t len,
                                 struct dpd_shares **out);

/**
 * Frees a client; NULL is a no-op.
 *
 * # Safety
 * `client` must be NULL or a handle from `dpd_client_new` not freed before.
 */
void dpd_client_free(struct dpd_client *client);

/**
 * Writes the number of messages (M, one per compute node).
 *
 * # Safety
 * `shares` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL or writable.
 */
enum dpd_status dpd_shares_count(const struct dpd_shares *shares, size_t *out);

/**
 * Writes the shard id (the sharding attempt) that all M messages carry.
 *
 * # Safety
 * `shares` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL or writable.
 */
enum dpd_status dpd_shares_shard_id(const struct dpd_shares *shares, uint64_t *out);

/**
 * Copies the wire bytes of the message for compute node `node` (0..M) into `out`
 * (query-size pattern). Node 0 always gets a full vector (60 + 8·d bytes); in seed mode nodes
 * 1..M get 60 + 16 bytes. `node >= M` → `DPD_ERR_UNKNOWN_NODE`.
 *
 * # Safety
 * `shares` NULL or a live handle; `out` NULL with `out_cap == 0` or `out_cap` writable bytes;
 * `out_len` NULL (→ error) or writable.
 */
enum dpd_status dpd_shares_message(const struct dpd_shares *shares,
                                   uint32_t node,
                                   uint8_t *out,
                                   size_t out_cap,
                                   size_t *out_len);

/**
 * Frees a set of shares; NULL is a no-op.
 *
 * # Safety
 * `shares` must be NULL or a handle from `dpd_client_shard` not freed before.
 */
void dpd_shares_free(struct dpd_shares *shares);

/**
 * Writes the largest number of fractional bits f (<= 52) such that `n_clients` values with
 * |x| <= `bound` plus a noise sum of magnitude <= `noise_tail` (value units; 0 without noise)
 * add up without wrapping: N·ceil(bound·2^f) + ceil(tail·2^f) + N < 2^63.
 * No such f → `DPD_ERR_OVERFLOW`; bad parameters → `DPD_ERR_INVALID_ARGUMENT` /
 * `DPD_ERR_NON_FINITE`.
 *
 * # Safety
 * `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `uint32_t`.
 */
enum dpd_status dpd_fixed_point_frac_bits_for_sum(size_t n_clients,
                                                  double bound,
                                                  double noise_tail,
                                                  uint32_t *out);

/**
 * Encodes `values[0..len]` (each finite with |x| <= `bound`) with `frac_bits` fractional bits
 * into `out` (query-size pattern; the result has `len` elements). All-or-nothing: NaN/inf →
 * `DPD_ERR_NON_FINITE`, |x| > bound → `DPD_ERR_OVERFLOW`, naming the first bad index.
 *
 * # Safety
 * `values` must be NULL with `len == 0` or point to `len` readable doubles; `out` NULL with
 * `out_cap == 0` or `out_cap` writable `uint64_t`; `out_len` NULL (→ error) or writable.
 */
enum dpd_status dpd_fixed_point_encode(uint32_t frac_bits,
                                       double bound,
                                       const double *values,
                                       size_t len,
                                       uint64_t *out,
                                       size_t out_cap,
                                       size_t *out_len);

/**
 * Decodes ring sums `sums[0..len]` encoded with `frac_bits` fractional bits into `out`
 * (query-size pattern; `len` elements): `(int64_t)s / 2^frac_bits`. `frac_bits <= 62`.
 *
 * # Safety
 * As `dpd_fixed_point_encode`, with `sums` in place of `values` and `double` outputs.
 */
enum dpd_status dpd_fixed_point_decode(uint32_t frac_bits,
                                       const uint64_t *sums,
                                       size_t len,
                                       double *out,
                                       size_t out_cap,
                                       size_t *out_len);

/**
 * Which implementation `dpd_wrapping_add_u64` / `dpd_wrapping_sub_u64` use on this CPU.
 */
enum dpd_kernel_path dpd_kernel_selected_path(void);

/**
 * A short static name ("portable", "avx2", "avx512f") for a `dpd_kernel_path` value;
 * "unknown" for any other number. Never free it.
 */
const char *dpd_kernel_path_name(uint32_t path);

/**
 * `acc[i] = acc[i] + src[i] mod 2^64` for i < len, on the fastest path this CPU supports
 * (see `dpd_kernel_selected_path`). `acc` and `src` must not overlap
 * (→ `DPD_ERR_INVALID_ARGUMENT`).
 *
 * # Safety
 * `acc` must be NULL with `len == 0` or point to `len` writable `uint64_t`; `src` likewise
 * readable.
 */
enum dpd_status dpd_wrapping_add_u64(uint64_t *acc, const uint64_t *src, size_t len);

/**
 * As `dpd_wrapping_add_u64`, one element at a time (the reference implementation).
 *
 * # Safety
 * As `dpd_wrapping_add_u64`.
 */
enum dpd_status dpd_wrapping_add_u64_scalar(uint64_t *acc, const uint64_t *src, size_t len);

/**
 * As `dpd_wrapping_add_u64`, with portable 4-lane SIMD (`wide::u64x4`) and no dispatch.
 *
 * # Safety
 * As `dpd_wrapping_add_u64`.
 */
enum dpd_status dpd_wrapping_add_u64_wide(uint64_t *acc, const uint64_t *src, size_t len);

/**
 * `acc[i] = acc[i] − src[i] mod 2^64` for i < len (dispatched like `dpd_wrapping_add_u64`).
 *
 * # Safety
 * As `dpd_wrapping_add_u64`.
 */
enum dpd_status dpd_wrapping_sub_u64(uint64_t *acc, const uint64_t *src, size_t len);

/**
 * Creates an empty ledger.
 *
 * # Safety
 * `out` NULL (→ `DPD_ERR_NULL_POINTER`) or a writable `dpd_round_ledger*`.
 */
enum dpd_status dpd_round_ledger_new(struct dpd_round_ledger **out);

/**
 * Admits the round of `config`: records its id with its configuration, or confirms it is the
 * round seen before under that id. `*out_new` (may be NULL) is 1 for a round id not seen
 * before, 0 for the same round again. A round id seen with another configuration →
 * `DPD_ERR_WRONG_ROUND` naming both digests; the ledger is unchanged. `dpd_node_new_admitted`
 * and `dpd_aggregator_new_admitted` admit and create in one call.
 *
 * # Safety
 * `ledger` NULL or a live handle not used concurrently; `config` NULL or a live handle;
 * `out_new` NULL or writable.
 */
enum dpd_status dpd_round_ledger_admit(struct dpd_round_ledger *ledger,
                                       const struct dpd_round_config *config,
                                       uint32_t *out_new);

/**
 * The rounds `ledger` has admitted, for storage, in increasing round id: `out_rounds[i]` and
 * its configuration digest in `out_digests[16·i .. 16·i + 16]`, for at most `out_cap` entries
 * (`out_digests` holds `16·out_cap` bytes). Query-size pattern: fewer than the admitted
 * rounds → `DPD_ERR_BUFFER_TOO_SMALL` with `*out_len` = the number needed and nothing
 * written; `out_cap` 0 with both arrays NULL asks for the number alone. A host that keeps
 * these pairs (a file, a table) restores the ledger after a restart with
 * `dpd_round_ledger_admit_digest`, so that a restart does not forget which ids were used.
 *
 * # Safety
 * `ledger` NULL or a live handle; `out_rounds` NULL or `out_cap` writable `uint64_t`s;
 * `out_digests` NULL or `16·out_cap` writable bytes; `out_len` NULL or writable.
 */
enum dpd_status dpd_round_ledger_entries(const struct dpd_round_ledger *ledger,
                                         uint64_t *out_rounds,
                                         uint8_t *out_digests,
                                         size_t out_cap,
                                         size_t *out_len);

/**
 * Admits a round by its id and 16-byte configuration digest (`digest_len` must be 16), as
 * saved from `dpd_round_ledger_entries`: restores a ledger after a restart. Otherwise as
 * `dpd_round_ledger_admit` (`*out_new`, may be NULL; another digest under a seen id →
 * `DPD_ERR_WRONG_ROUND`, the ledger unchanged).
 *
 * # Safety
 * `ledger` NULL or a live handle not used concurrently; `digest` NULL or `digest_len`
 * readable bytes; `out_new` NULL or writable.
 */
enum dpd_status dpd_round_ledger_admit_digest(struct dpd_round_ledger *ledger,
                                              uint64_t round,
                                              const uint8_t *digest,
                                              size_t digest_len,
                                              uint32_t *out_new);

/**
 * Frees a ledger; NULL is a no-op.
 *
 * # Safety
 * `ledger` must be NULL or a handle from `dpd_round_ledger_new` not freed before.
 */
void dpd_round_ledger_free(struct dpd_round_ledger *ledger);

/**
 * Creates compute node `node` (0..M) of the round. Node 0 receives the clients' full
 * balancing shares; in seed mode nodes 1..M receive 16-byte seeds. The node holds d words
 * and N bits: when they cannot be allocated (e.g. d = 2^32 needs 32 GiB) the call returns
 * `DPD_ERR_ALLOC` (never aborts the process); `node >= M` → `DPD_ERR_UNKNOWN_NODE`. A party
 * that keeps a `dpd_round_ledger` uses `dpd_node_new_admitted` instead.
 *
 * # Safety
 * `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL or a writable
 * `dpd_node*`.
 */
enum dpd_status dpd_node_new(const struct dpd_round_config *config,
                             uint32_t node,
                             struct dpd_node **out);

/**
 * As `dpd_node_new`, admitting the round through `ledger` (see `dpd_round_ledger_admit`): a
 * round id the ledger has seen with another configuration → `DPD_ERR_WRONG_ROUND`, nothing
 * created. The round is recorded only if the node could be created.
 *
 * # Safety
 * `ledger` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently; `config`
 * and `out` as `dpd_node_new`.
 */
enum dpd_status dpd_node_new_admitted(struct dpd_round_ledger *ledger,
                                      const struct dpd_round_config *config,
                                      uint32_t node,
                                      struct dpd_node **out);

/**
 * Parses untrusted wire bytes against the node's round and adds the share to the node's sum
 * (a full share is added straight from the bytes). On any error the node is unchanged:
 * `DPD_ERR_MALFORMED` (bad bytes, wrong payload kind or precision), `DPD_ERR_WRONG_ROUND`
 * (another round, or bytes of an earlier round that used this round id with another
 * configuration), `DPD_ERR_UNKNOWN_NODE` (addressed to another node),
 * `DPD_ERR_LENGTH_MISMATCH` (wrong d), `DPD_ERR_INVALID_ARGUMENT` (client id >= N),
 * `DPD_ERR_DUPLICATE_CLIENT`.
 *
 * # Safety
 * `node` NULL or a live handle not used concurrently; `bytes` NULL with `len == 0` or `len`
 * readable bytes.
 */
enum dpd_status dpd_node_absorb(struct dpd_node *node, const uint8_t *bytes, size_t len);

/**
 * Removes a share absorbed earlier, given the identical wire bytes. Needed before
 * `dpd_node_finalize` for every client outside the agreed set whose FULL share this node
 * absorbed (always the case on node 0); seed shares are removed automatically.
 * Not absorbed → `DPD_ERR_INVALID_STATE`; another shard attempt of the client than the one
 * absorbed, or another seed → `DPD_ERR_INVALID_ARGUMENT` (node unchanged); otherwise errors as
 * `dpd_node_absorb`.
 *
 * # Safety
 * As `dpd_node_absorb`.
 */
enum dpd_status dpd_node_retract(struct dpd_node *node, const uint8_t *bytes, size_t len);

/**
 * Copies the (client id, shard id) pairs whose shares are in the node's sum, ascending by
 * client, into `out_ids[i]`, `out_shards[i]` (query-size pattern: both arrays have capacity
 * `out_cap`, `*out_len` is the number of pairs). The nodes publish these lists and agree on
 * the pairs every node holds; a client whose nodes hold different shard attempts (it sharded
 * twice) is not in that intersection.
 *
 * # Safety
 * `node` NULL or a live handle; `out_ids` and `out_shards` each NULL with `out_cap == 0` or
 * `out_cap` writable `uint64_t`; `out_len` NULL (→ error) or writable.
 */
enum dpd_status dpd_node_received(const struct dpd_node *node,
                                  uint64_t *out_ids,
                                  uint64_t *out_shards,
                                  size_t out_cap,
                                  size_t *out_len);

/**
 * Computes the node's sum over the agreed pairs (`agreed_ids[i]`, `agreed_shards[i]`),
 * i < `n_agreed` — the pairs every node reported in `dpd_node_received` — into a new
 * `dpd_node_sum`. The node is not changed. Errors: `DPD_ERR_TOO_MANY_DROPPED` (more than T of
 * N clients missing: nothing may be released), `DPD_ERR_INVALID_ARGUMENT` (an agreed client
 * this node never received, a shard id other than the one this node absorbed for that
 * client, or an id >= N), `DPD_ERR_DUPLICATE_CLIENT` (a client listed twice),
 * `DPD_ERR_INVALID_STATE` (a full share outside the set was not retracted).
 *
 * # Safety
 * `node` NULL or a live handle; `agreed_ids` and `agreed_shards` each NULL with
 * `n_agreed == 0` or `n_agreed` readable `uint64_t`; `out` NULL or a writable `dpd_node_sum*`.
 */
enum dpd_status dpd_node_finalize(const struct dpd_node *node,
                                  const uint64_t *agreed_ids,
                                  const uint64_t *agreed_shards,
                                  size_t n_agreed,
                                  struct dpd_node_sum **out);

/**
 * Frees a compute node; NULL is a no-op.
 *
 * # Safety
 * `node` must be NULL or a handle from `dpd_node_new` not freed before.
 */
void dpd_node_free(struct dpd_node *node);

/**
 * Serialises a node sum (versioned, little-endian, magic "DPDN") into `out` (query-size
 * pattern).
 *
 * # Safety
 * `sum` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL with `out_cap == 0` or
 * `out_cap` writable bytes; `out_len` NULL (→ error) or writable.
 */
enum dpd_status dpd_node_sum_to_bytes(const struct dpd_node_sum *sum,
                                      uint8_t *out,
                                      size_t out_cap,
                                      size_t *out_len);

/**
 * Parses untrusted bytes from `dpd_node_sum_to_bytes` into a new node sum of the round
 * `config` (never crashes; sizes are taken from the round, so nothing larger than the round
 * allows is allocated). Errors: `DPD_ERR_MALFORMED` with a precise message for bad bytes,
 * `DPD_ERR_WRONG_ROUND` (another round, or the same round id under another configuration),
 * `DPD_ERR_LENGTH_MISMATCH` (another d or N).
 *
 * # Safety
 * `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `bytes` NULL with `len == 0` or
 * `len` readable bytes; `out` NULL (→ error) or a writable `dpd_node_sum*`.
 */
enum dpd_status dpd_node_sum_from_bytes(const struct dpd_round_config *config,
                                        const uint8_t *bytes,
                                        size_t len,
                                        struct dpd_node_sum **out);

/**
 * Frees a node sum; NULL is a no-op.
 *
 * # Safety
 * `sum` must be NULL or a handle from `dpd_node_finalize` / `dpd_node_sum_from_bytes` not
 * freed before.
 */
void dpd_node_sum_free(struct dpd_node_sum *sum);

/**
 * Creates the configuration of a differentially private round `round`: N = `n_clients`
 * clients with ids 0..N, M = `n_nodes` >= 2 compute nodes (0..M), at most T = `max_dropped` < N
 * clients missing or colluding, vectors of length `dim` >= 1 with every element |x| <= `bound`.
 *
 * Each client adds exact discrete Gaussian noise of σ_total/sqrt(N − T − 1) (value units) so
 * that the released sum carries N(0, σ_total²) per coordinate even if T clients are missing or
 * collude. `noise_sigma_total` must be in [`DPD_SIGMA_MIN`, `DPD_SIGMA_MAX`]: 0, a negative
 * value or NaN is refused with `DPD_ERR_INVALID_PRIVACY_PARAMETER` (0 is what an unchecked,
 * failed `dpd_gaussian_sigma_analytic` would leave behind). An exact, NON-PRIVATE sum is only
 * available under its own name, `dpd_round_config_new_exact`. `frac_bits` is
 * `DPD_FRAC_BITS_AUTO` or an explicit number of fractional bits (an error if unsafe).
 *
 * Limits: 1 <= N <= 2^32, 2 <= M <= 65535, 1 <= d <= 2^32 (the wire format's maximum). The
 * configuration itself is small; nodes and aggregators allocate d words each, clients M·d
 * words when sharding, and report `DPD_ERR_ALLOC` when the memory is not there.
 *
 * Errors: `DPD_ERR_INVALID_PRIVACY_PARAMETER` (σ), `DPD_ERR_INVALID_ARGUMENT` (N, M, T, d,
 * bound, mode, N − T − 1 < 1), `DPD_ERR_NON_FINITE`, `DPD_ERR_OVERFLOW` (no precision lets the
 * sum fit the ring).
 *
 * # Safety
 * `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `dpd_round_config*`.
 */
enum dpd_status dpd_round_config_new(uint64_t round,
                                     size_t n_clients,
                                     uint32_t n_nodes,
                                     size_t max_dropped,
                                     size_t dim,
                                     double bound,
                                     uint32_t mode,
                                     double noise_sigma_total,
                                     uint32_t frac_bits,
                                     struct dpd_round_config **out);

/**
 * NON-PRIVATE: creates the configuration of a round that releases the EXACT sum, with no
 * noise at all. The sum hides the individual inputs from the nodes and the aggregator, but the
 * released value is not differentially private: anyone who sees it can learn about single
 * records from it. Use it for tests, benchmarks and data that is not personal; for a private
 * round calibrate σ (`dpd_gaussian_sigma_analytic`) and call `dpd_round_config_new`.
 *
 * The arguments are those of `dpd_round_config_new` without the noise; the same limits and
 * errors apply. `dpd_round_config_info` reports σ_client = 0 for such a round.
 *
 * # Safety
 * `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `dpd_round_config*`.
 */
enum dpd_status dpd_round_config_new_exact(uint64_t round,
                                           size_t n_clients,
                                           uint32_t n_nodes,
                                           size_t max_dropped,
                                           size_t dim,
                                           double bound,
                                           uint32_t mode,
                                           uint32_t frac_bits,
                                           struct dpd_round_config **out);

/**
 * Writes the round's fixed-point fractional bits, the per-client noise σ (value units; 0
 * without noise) and the vector length d. Any out-pointer may be NULL (not reported).
 *
 * # Safety
 * `config` must be NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; each out-pointer NULL or
 * writable.
 */
enum dpd_status dpd_round_config_info(const struct dpd_round_config *config,
                                      uint32_t *out_frac_bits,
                                      double *out_sigma_client,
                                      size_t *out_dim);

/**
 * Frees a round configuration; NULL is a no-op. Handles created from it stay valid (they keep
 * their own copy).
 *
 * # Safety
 * `config` must be NULL or a handle from `dpd_round_config_new` or
 * `dpd_round_config_new_exact` not freed before.
 */
void dpd_round_config_free(struct dpd_round_config *config);

/**
 * Seals `share` (e.g. the bytes of `dpd_shares_message` for node `ctx->node`) to that node's
 * 32-byte X25519 public key with HPKE (RFC 9180 base mode, DHKEM(X25519, HKDF-SHA256),
 * HKDF-SHA256, ChaCha20-Poly1305), binding round, config hash, client and node. The result is
 * `share_len + 48` bytes (32-byte encapsulated key ‖ ciphertext ‖ 16-byte tag); query-size
 * pattern: too small an `out_cap` → `DPD_ERR_BUFFER_TOO_SMALL` with the length in `*out_len`.
 * The ephemeral key comes from the operating system's CSPRNG. A key that is not 32 bytes, or
 * a low-order point (its Diffie–Hellman output is all zero, RFC 9180 §7.1.4: anyone could
 * open the share) → `DPD_ERR_INVALID_ARGUMENT`.
 *
 * # Safety
 * `node_public_key` has `key_len` readable bytes; `ctx` readable; `share` NULL with
 * `share_len == 0` or `share_len` readable bytes; `out` NULL with `out_cap == 0` or `out_cap`
 * writable bytes; `out_len` writable.
 */
enum dpd_status dpd_share_seal(const uint8_t *node_public_key,
                               size_t key_len,
                               const struct dpd_seal_context *ctx,
                               const uint8_t *share,
                               size_t share_len,
                               uint8_t *out,
                               size_t out_cap,
                               size_t *out_len);

/**
 * Opens a sealed share with a node's 32-byte X25519 secret key in the slot `ctx`. Anything
 * but the exact slot, key and bytes it was sealed with → `DPD_ERR_MALFORMED`, nothing
 * written. The plaintext is `sealed_len - 48` bytes; query-size pattern as `dpd_share_seal`.
 *
 * # Safety
 * As `dpd_share_seal`, with `node_secret_key` of `key_len` readable bytes.
 */
enum dpd_status dpd_share_open(const uint8_t *node_secret_key,
                               size_t key_len,
                               const struct dpd_seal_context *ctx,
                               const uint8_t *sealed,
                               size_t sealed_len,
                               uint8_t *out,
                               size_t out_cap,
                               size_t *out_len);

/**
 * Runs one round: every client in 0..N except `dropped[0..n_dropped]` shards its row of
 * `inputs` (N × d, row-major, `len` = N·d), the nodes sum and agree, the aggregator releases.
 * Writes the sum (query-size pattern, d doubles) and, if `info` is not NULL, its description.
 * More than T dropped → `DPD_ERR_TOO_MANY_DROPPED`; `len != N·d` →
 * `DPD_ERR_LENGTH_MISMATCH`; bad values as `dpd_client_shard`.
 *
 * # Safety
 * `config`, `rng` NULL or live handles (`rng` not used concurrently); input arrays NULL only
 * with length 0, else readable; `out_sum` NULL with `out_cap == 0` or `out_cap` writable
 * doubles; `out_len` NULL (→ error) or writable; `info` NULL or writable.
 */
enum dpd_status dpd_simulate_round(const struct dpd_round_config *config,
                                   const double *inputs,
                                   size_t len,
                                   const uint64_t *dropped,
                                   size_t n_dropped,
                                   struct dpd_rng *rng,
                                   double *out_sum,
                                   size_t out_cap,
                                   size_t *out_len,
                                   struct dpd_release_info *info);

/**
 * Turns the validity check of the round on (`DPD_VALIDITY_LINF`, with the truncation δ_t
 * target `truncation_delta`, strictly between 0 and 1, e.g. 1e-9) or off (`DPD_VALIDITY_NONE`;
 * `truncation_delta` is then ignored). Off is the default; a round with it off is the round it
 * was, bit for bit.
 *
 * With it on, each honest client clamps its noise into [−τ, τ] and proves that every
 * coordinate of its contribution lies within ±B; τ is chosen so that the clamping changes
 * anything with probability at most δ_t, which costs (1 + e^ε)·δ_t of δ
 * (`dpd_verified_total_delta`). `dpd_round_config_validity_info` reports τ, B and δ_t.
 *
 * So far only the in-process round `dpd_simulate_round_verified` runs such a round: clients,
 * nodes, aggregators, ledgers and `dpd_simulate_round` refuse a config with validity on
 * (`DPD_ERR_INVALID_ARGUMENT`), rather than run a round that checks nothing. Handles created
 * from the config before keep their own copy and are not affected.
 *
 * Errors, with the config unchanged: `DPD_ERR_INVALID_ARGUMENT` (unknown `kind`,
 * `DPD_VALIDITY_L2`: set it with `dpd_round_config_set_validity_l2`, more than 255 nodes:
 * Prio3's limit), `DPD_ERR_INVALID_PRIVACY_PARAMETER` (`truncation_delta` not in
 * (0, 1), NaN), `DPD_ERR_OVERFLOW` (B too large for the proof's field: 2·B·N ≥ 2^120).
 *
 * # Safety
 * `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
 */
enum dpd_status dpd_round_config_set_validity(struct dpd_round_config *config,
                                              uint32_t kind,
                                              double truncation_delta);

/**
 * Turns the L2 validity check of the round on (`DPD_VALIDITY_L2`): each client proves that its
 * contribution — encoded data plus its noise slice — has L2 norm at most R grid units, where
 * R = ⌈`data_norm`·2^frac_bits⌉ + τ₂ and `data_norm` bounds the L2 norm of every client's data
 * row (value units, e.g. a clipped gradient's norm). τ₂ is chosen so that an honest slice is
 * longer with probability at most δ_t ≤ `truncation_delta` (strictly between 0 and 1, e.g.
 * 1e-9); such a slice is scaled back to τ₂, which costs (1 + e^ε)·δ_t of δ
 * (`dpd_verified_total_delta`). `dpd_round_config_validity_info` reports τ₂, R and δ_t.
 * A client whose data are longer than `data_norm` (on the grid) refuses to take part: the
 * round fails (`dpd_simulate_round_verified`) rather than leave it out.
 *
 * As with `dpd_round_config_set_validity`, only `dpd_simulate_round_verified` runs such a
 * round so far; `dpd_round_config_set_validity(config, DPD_VALIDITY_NONE, 0)` turns it off.
 *
 * Errors, with the config unchanged: `DPD_ERR_INVALID_ARGUMENT` (`data_norm` negative, NaN,
 * infinite or at least 2^62 grid units; R = 0, i.e. `data_norm` 0 on an exact round; more than
 * 255 nodes), `DPD_ERR_INVALID_PRIVACY_PARAMETER` (`truncation_delta` not in (0, 1), NaN),
 * `DPD_ERR_OVERFLOW` (R too large for the proof's field: 2·R·N ≥ 2^120, R ≥ 2^62 or
 * (d + 1)·R² ≥ 2^127).
 *
 * # Safety
 * `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
 */
enum dpd_status dpd_round_config_set_validity_l2(struct dpd_round_config *config,
                                                 double data_norm,
                                                 double truncation_delta);

/**
 * Writes the round's validity mode and, when it is on, its bound (see `dpd_validity_info`).
 *
 * # Safety
 * `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL (→ error) or writable.
 */
enum dpd_status dpd_round_config_validity_info(const struct dpd_round_config *config,
                                               struct dpd_validity_info *out);

/**
 * The δ of a verified round: δ + (1 + e^ε)·δ_t, where (ε, δ) is the guarantee of the round
 * without clamping (the σ it was configured with) and δ_t its truncation δ
 * (`dpd_validity_info.truncation_delta`). The clamped and unclamped rounds differ only on an
 * event of probability ≤ δ_t, which gives this bound.
 *
 * Errors: `DPD_ERR_INVALID_PRIVACY_PARAMETER` unless ε > 0 is finite and δ, δ_t are in [0, 1)
 * (NaN included), or if the sum is not below 1.
 *
 * # Safety
 * `out` NULL (→ `DPD_ERR_NULL_POINTER`) or writable.
 */
enum dpd_status dpd_verified_total_delta(double epsilon,
                                         double delta,
                                         double truncation_delta,
                                         double *out);

/**
 * Runs one verified round in process: as `dpd_simulate_round` (same inputs, same noise draws
 * from `rng`), with every client's contribution checked by the nodes. The config must have
 * validity on (`dpd_round_config_set_validity`), else `DPD_ERR_INVALID_ARGUMENT`.
 *
 * Writes the sum over the valid clients (query-size pattern, d doubles), the ids of the
 * clients left out for invalid contributions into `out_invalid` (increasing; `*out_n_invalid`
 * of them; `invalid_cap` must be at least T = max_dropped, the most a round that releases can
 * leave out, checked before any work: else `DPD_ERR_BUFFER_TOO_SMALL` with `*out_n_invalid` =
 * T), optionally the release's description (`info`; `n_included` counts the valid clients) and
 * δ_t (`out_truncation_delta`, 0 without noise).
 *
 * Where no honest noise value reaches τ (probability ≥ 1 − δ_t), an honest round releases
 * exactly what `dpd_simulate_round` releases with the same seed. Whatever the config's share
 * mode, the reports travel as Prio3's shares (node 0 the field vector and its proof share, the
 * other nodes a seed); the mode changes nothing in the release. More than T clients dropped or
 * invalid → `DPD_ERR_TOO_MANY_DROPPED` (its message names the invalid clients), nothing
 * written. In an L2 round (`dpd_round_config_set_validity_l2`), a client whose data row is
 * longer than the data's norm bound refuses to take part: `DPD_ERR_INVALID_ARGUMENT`, the
 * message naming the client, its norm and the bound, nothing written. Other errors as
 * `dpd_simulate_round`.
 *
 * # Safety
 * As `dpd_simulate_round`; `out_invalid` NULL with `invalid_cap == 0` or `invalid_cap`
 * writable `uint64_t`s; `out_n_invalid` NULL (→ error) or writable; `out_truncation_delta`
 * NULL or writable.
 */
enum dpd_status dpd_simulate_round_verified(const struct dpd_round_config *config,
                                            const double *inputs,
                                            size_t len,
                                            const uint64_t *dropped,
                                            size_t n_dropped,
                                            struct dpd_rng *rng,
                                            double *out_sum,
                                            size_t out_cap,
                                            size_t *out_len,
                                            uint64_t *out_invalid,
                                            size_t invalid_cap,
                                            size_t *out_n_invalid,
                                            struct dpd_release_info *info,
                                            double *out_truncation_delta);

/**
 * TESTING ONLY — makes clients cheat: as `dpd_simulate_round_verified`, except that each client
 * in `malicious[0..n_malicious]` sends shares whose sum is its honest contribution plus 10⁶
 * times the data bound (10⁶·`data_units` grid units, 10⁶ units when `data_units` is 0) in
 * coordinate 0, in either validity mode, with the proof of its
 * honest contribution: what a client that inflates its value by a million times the bound
 * would send. For tests and demonstrations that such a client is left out and named; no
 * production path has a reason to call it.
 *
 * Errors as `dpd_simulate_round_verified`; a malicious id ≥ N or listed twice, or also in
 * `dropped` → `DPD_ERR_INVALID_ARGUMENT` (`DPD_ERR_DUPLICATE_CLIENT` for a repeated id).
 *
 * # Safety
 * As `dpd_simulate_round_verified`; `malicious` NULL only with `n_malicious == 0`, else
 * readable.
 */
enum dpd_status dpd_simulate_round_verified_testing_malicious(const struct dpd_round_config *config,
                                                              const double *inputs,
                                                              size_t len,
                                                              const uint64_t *dropped,
                                                              size_t n_dropped,
                                                              const uint64_t *malicious,
                                                              size_t n_malicious,
                                                              struct dpd_rng *rng,
                                                              double *out_sum,
                                                              size_t out_cap,
                                                              size_t *out_len,
                                                              uint64_t *out_invalid,
                                                              size_t invalid_cap,
                                                              size_t *out_n_invalid,
                                                              struct dpd_release_info *info,
                                                              double *out_truncation_delta);

/**
 * Parses untrusted bytes as a share message (every field and the exact length are checked;
 * never crashes; nothing is allocated) and writes its header. No round is needed: this is for
 * routers and logs, a node checks the message against its round when absorbing it.
 * `DPD_ERR_MALFORMED` with a precise message when the bytes are not a valid message.
 *
 * # Safety
 * `bytes` NULL with `len == 0` or `len` readable bytes; `out` NULL (→ error) or writable.
 */
enum dpd_status dpd_wire_inspect(const uint8_t *bytes, size_t len, struct dpd_wire_header *out);

/**
 * Copies the message of the most recent failed dpdist call on the calling thread into `buf`.
 *
 * The message is UTF-8 and always NUL-terminated when `len > 0`; when it does not fit it is
 * truncated (at a character boundary) to `len - 1` bytes. `*out_len` (if `out_len` is not
 * NULL) receives the full message length in bytes, excluding the NUL, so a caller detects
 * truncation by `*out_len >= len` and can query the size with `buf = NULL, len = 0`.
 * The message is empty if no call has failed on this thread yet. Successful calls do not clear
 * it, so read it right after a call returned a status other than `DPD_OK`.
 *
 * Returns `DPD_OK`, or `DPD_ERR_NULL_POINTER` if `buf` is NULL while `len > 0`.
 *
 * # Safety
 * `buf` must point to `len` writable bytes (or be NULL with `len == 0`); `out_len` must be NULL
 * or point to a writable `size_t`.
 */
enum dpd_status dpd_last_error_message(char *buf, size_t len, size_t *out_len);

/**
 * The ε after `steps` >= 1 steps of the sampled Gaussian mechanism with noise multiplier
 * z = σ/C > 0 and sampling probability q in (0, 1] (`sampling` a `dpd_sampling` value), at
 * δ in (0, 1), by the Rényi-DP accountant over dp_accounting's grid of orders with the
 * conversion of Balle et al. 2020 (Thm 21); the order that attains it goes to `*out_order`
 * (may be NULL). Continuous Gaussian noise; for DCA's discrete sum use the trainer's own
 * accountant (`dpd_iterative_trainer_spent`).
 *
 * # Safety
 * `out_epsilon` NULL (→ error) or writable; `out_order` NULL or writable.
 */
enum dpd_status dpd_rdp_epsilon(double q,
                                double noise_multiplier,
                                uint64_t steps,
                                double delta,
                                uint32_t sampling_kind,
                                double *out_epsilon,
                                double *out_order);

/**
 * The smallest noise multiplier z = σ/C (to relative precision 1e-9, rounded up so that it
 * meets the target) for which `steps` >= 1 steps of the sampled Gaussian mechanism with
 * sampling probability q in (0, 1] stay within (ε, δ) (ε > 0, δ in (0, 1)), by bisection over
 * `dpd_rdp_epsilon`'s accountant. Errors: `DPD_ERR_INVALID_ARGUMENT`, `DPD_ERR_NUMERICAL` (no
 * z <= 1e6 suffices).
 *
 * # Safety
 * `out` NULL (→ error) or writable.
 */
enum dpd_status dpd_rdp_noise_multiplier(double epsilon,
                                         double delta,
                                         uint64_t steps,
                                         double q,
                                         uint32_t sampling_kind,
                                         double *out);

/**
 * The smallest noise multiplier z for which `iterations` >= 1 iterations of a trainer with
 * `config`'s model, sampling, clipping norm and DCA settings on `n_clients` clients with `dim`
 * features stay within (ε, δ): bisection over the very mechanism the trainer charges (DCA's
 * sum of discrete Gaussians from N − T − 1 honest clients; its grid depends on z). `config`'s
 * privacy choice is ignored; pass the result to `dpd_iterative_config_set_private` with the
 * same (ε, δ).
 *
 * # Safety
 * `config` NULL (→ error) or a live handle; `out` NULL (→ error) or writable.
 */
enum dpd_status dpd_iterative_calibrate_noise_multiplier(const struct dpd_iterative_config *config,
                                                         size_t n_clients,
                                                         size_t dim,
                                                         double epsilon,
                                                         double delta,
                                                         uint64_t iterations,
                                                         double *out);

/**
 * Settings for logistic regression without intercept (`dpd_iterative_config_set_intercept`
 * adds one): per-client loss ln(1 + exp(−y·wᵀx)), labels in {0, 1} or {−1, +1}, public penalty
 * (`l2`/2)‖w‖² with `l2` >= 0 — the objective of PLR without its noise.
 *
 * # Safety
 * `out` NULL (→ `DPD_ERR_NULL_POINTER`) or a writable `dpd_iterative_config*`.
 */
enum dpd_status dpd_iterative_config_new_logistic(double l2,
                                                  struct dpd_iterative_config **out);

/**
 * Settings for Bayesian linear regression by DP variational inference: y ~ N(xᵀβ, 1/λ),
 * β ~ N(0, I/λ₀), mean-field Gaussian posterior N(m, diag(s²)) with parameters θ = (m, ln s)
 * of length 2d. `noise_precision` = λ > 0, `prior_precision` = λ₀ > 0.
 *
 * # Safety
 * As `dpd_iterative_config_new_logistic`.
 */
enum dpd_status dpd_iterative_config_new_blr_vi(double noise_precision,
                                                double prior_precision,
                                                struct dpd_iterative_config **out);

/**
 * Logistic regression only: `intercept` = 1 estimates an intercept b beside the weights, so
 * P(y = 1 | x) = σ(wᵀx + b); 0 leaves it out (the default of
 * `dpd_iterative_config_new_logistic`). With it θ has d + 1 values, b last
 * (`dpd_iterative_trainer_params`), b is inside each record's clipped gradient (the clip norm
 * bounds ‖(gradient of w, gradient of b)‖, so the noise and the accounting are unchanged) and
 * is not penalised by `l2`. Errors: `DPD_ERR_INVALID_ARGUMENT` (`intercept` not 0 or 1),
 * `DPD_ERR_INVALID_STATE` (the settings are not logistic regression's); unchanged on error.
 *
 * # Safety
 * `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
 */
enum dpd_status dpd_iterative_config_set_intercept(struct dpd_iterative_config *config,
                                                   uint32_t intercept);

/**
 * Logistic regression only: public feature ranges, `lo[j] < hi[j]` both finite, one pair per
 * feature (`n_ranges` must equal the trainer's d, checked by `dpd_iterative_trainer_new`),
 * known without looking at the data. Each record's x_j is clamped into [lo_j, hi_j] and mapped
 * onto [−1, 1] — (clamp(x_j) − (lo_j + hi_j)/2) / ((hi_j − lo_j)/2), the map of
 * `dpd_plr_fit_with_ranges` — before its gradient is computed and clipped; the map is public
 * and per record, so the noise and the accounting are unchanged. θ is on the mapped scale;
 * `dpd_iterative_trainer_predict` maps raw rows the same way. `n_ranges` = 0 (`lo`, `hi` may
 * be NULL) removes the ranges. Errors: `DPD_ERR_INVALID_ARGUMENT` naming the first bad 0-based
 * column, `DPD_ERR_NULL_POINTER` (`lo` or `hi` NULL with `n_ranges` > 0),
 * `DPD_ERR_INVALID_STATE` (the settings are not logistic regression's); unchanged on error.
 *
 * # Safety
 * `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently; `lo` and
 * `hi` NULL only with `n_ranges == 0`, else readable for `n_ranges` doubles each.
 */
enum dpd_status dpd_iterative_config_set_ranges(struct dpd_iterative_config *config,
                                                const double *lo,
                                                const double *hi,
                                                size_t n_ranges);

/**
 * Poisson sampling: every client joins each iteration's batch independently with probability
 * `rate` in (0, 1], flipping its own coin (nobody, not even the trainer, learns the batch).
 * Guarantee for add/remove-one client. The released sum is divided by rate·N.
 *
 * # Safety
 * `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
 */
enum dpd_status dpd_iterative_config_set_poisson(struct dpd_iterative_config *config, double rate);

/**
 * Fixed-size sampling: the trainer draws exactly `batch` >= 1 of the N clients uniformly
 * without replacement each iteration (`batch` <= N is checked when the trainer is created).
 * Guarantee for replace-one client, against everyone but the trainer (which knows the batch;
 * use Poisson sampling when the trainer is not trusted).
 *
 * # Safety
 * As `dpd_iterative_config_set_poisson`.
 */
enum dpd_status dpd_iterative_config_set_fixed_size(struct dpd_iterative_config *config,
                                                    size_t batch);

/**
 * Plain SGD: θ ← θ − `learning_rate`·g (learning rate > 0).
 *
 * # Safety
 * As `dpd_iterative_config_set_poisson`.
 */
enum dpd_status dpd_iterative_config_set_sgd(struct dpd_iterative_config *config,
                                             double learning_rate);

/**
 * Adam with bias correction: learning rate > 0, β₁ and β₂ in [0, 1), `epsilon` > 0 (the
 * denominator's constant, not a privacy parameter).
 *
 * # Safety
 * As `dpd_iterative_config_set_poisson`.
 */
enum dpd_status dpd_iterative_config_set_adam(struct dpd_iterative_config *config,
                                              double learning_rate,
                                              double beta1,
                                              double beta2,
                                              double epsilon);

/**
 * C > 0: every client's gradient is scaled to ℓ2 norm <= C (ignored by a non-private run).
 *
 * # Safety
 * As `dpd_iterative_config_set_poisson`.
 */
enum dpd_status dpd_iterative_config_set_clip_norm(struct dpd_iterative_config *config,
                                                   double clip_norm);

/**
 * Each iteration is one DCA round with `n_nodes` >= 2 compute nodes that tolerates at most
 * `max_dropped` missing or colluding clients (its noise is calibrated so that the N − T − 1
 * honest shares alone carry σ_total; N − T − 1 >= 1 is checked when the trainer is created).
 *
 * # Safety
 * As `dpd_iterative_config_set_poisson`.
 */
enum dpd_status dpd_iterative_config_set_dca(struct dpd_iterative_config *config,
                                             uint32_t n_nodes,
                                             size_t max_dropped);

/**
 * A private run: every round adds noise σ_total = `noise_multiplier`·C per coordinate and is
 * charged to a Rényi-DP accountant with budget (ε, δ) (ε > 0, δ in (0, 1)); an iteration that
 * would exceed it is refused before anything is released. `noise_multiplier` z > 0 — get the
 * smallest z that lasts a planned number of iterations from
 * `dpd_iterative_calibrate_noise_multiplier`.
 *
 * # Safety
 * As `dpd_iterative_config_set_poisson`.
 */
enum dpd_status dpd_iterative_config_set_private(struct dpd_iterative_config *config,
                                                 double epsilon,
                                                 double delta,
                                                 double noise_multiplier);

/**
 * A non-private run (no noise, no clipping, ε = ∞) over the same DCA rounds: for baselines and
 * tests only.
 *
 * # Safety
 * As `dpd_iterative_config_set_poisson`.
 */
enum dpd_status dpd_iterative_config_set_non_private(struct dpd_iterative_config *config);

/**
 * Frees settings; NULL is a no-op.
 *
 * # Safety
 * `config` must be NULL or a handle from a `dpd_iterative_config_new_*` not freed before.
 */
void dpd_iterative_config_free(struct dpd_iterative_config *config);

/**
 * Creates a trainer for `n_clients` clients (one record each) with `dim` features, with the
 * settings of `config` (whose privacy must have been chosen, else `DPD_ERR_INVALID_STATE`).
 * Masks, noise and (fixed-size) batches come from `rng` — `dpd_rng_new_os` in production.
 * Errors: `DPD_ERR_INVALID_ARGUMENT` (batch > N, N − T − 1 < 1, dim = 0, public ranges
 * (`dpd_iterative_config_set_ranges`) whose count is not `dim`, ...); `rng` does not move on
 * error.
 *
 * # Safety
 * `config`, `rng` NULL (→ error) or live handles (`rng` not used concurrently); `out` NULL
 * (→ error) or a writable `dpd_iterative_trainer*`.
 */
enum dpd_status dpd_iterative_trainer_new(const struct dpd_iterative_config *config,
                                          size_t n_clients,
                                          size_t dim,
                                          struct dpd_rng *rng,
                                          struct dpd_iterative_trainer **out);

/**
 * One iteration on the clients' records (`n` must equal the trainer's N): check the budget,
 * run the DCA round (clients listed in `dropped[0..n_dropped]` send nothing; at most T), update
 * θ. `*out_info` (may be NULL) describes the release. Errors: `DPD_ERR_BUDGET_EXCEEDED` or
 * `DPD_ERR_TOO_MANY_DROPPED` before anything is released or spent; `DPD_ERR_NUMERICAL` if
 * θ would become non-finite (lower the learning rate). On any error θ, the optimizer state and
 * the iteration count are unchanged.
 *
 * # Safety
 * `trainer` NULL (→ error) or a live handle not used concurrently; arrays NULL only with
 * length 0, else readable; `out_info` NULL or writable.
 */
enum dpd_status dpd_iterative_trainer_step(struct dpd_iterative_trainer *trainer,
                                           const double *x,
                                           size_t x_len,
                                           const double *y,
                                           size_t n,
                                           const size_t *dropped,
                                           size_t n_dropped,
                                           struct dpd_iterative_step_info *out_info);

/**
 * Up to `iterations` iterations without dropouts; stops early, successfully, when the next one
 * would exceed the budget. The number done is written to `*out_done` (0 when the budget was
 * already spent). Records as `dpd_iterative_trainer_step`.
 *
 * # Safety
 * As `dpd_iterative_trainer_step`; `out_done` NULL (→ error) or writable.
 */
enum dpd_status dpd_iterative_trainer_fit(struct dpd_iterative_trainer *trainer,
                                          const double *x,
                                          size_t x_len,
                                          const double *y,
                                          size_t n,
                                          uint64_t iterations,
                                          uint64_t *out_done);

/**
 * Copies the public parameters θ into `out` (query-size pattern): the d weights of logistic
 * regression, then its intercept b when `dpd_iterative_config_set_intercept` asked for one
 * (d + 1 values); for DP-VI BLR the 2d values (m_1..m_d, ln s_1..ln s_d) of the posterior
 * N(m, diag(s²)).
 *
 * # Safety
 * `trainer` NULL (→ error) or a live handle; `(out, out_cap, out_len)` per the output-array
 * rule.
 */
enum dpd_status dpd_iterative_trainer_params(const struct dpd_iterative_trainer *trainer,
                                             double *out,
                                             size_t out_cap,
                                             size_t *out_len);

/**
 * Copies the last iteration's released sum — Σ over the sampled, present clients of their
 * clipped gradients plus the round's noise, as every party of the DCA round saw it — into `out`
 * (query-size pattern; as many values as `dpd_iterative_trainer_params` has). Written by
 * `dpd_iterative_trainer_step` and by each iteration of `dpd_iterative_trainer_fit`; length 0
 * before the first iteration. Public information: reading it costs no privacy.
 *
 * # Safety
 * `trainer` NULL (→ error) or a live handle; `(out, out_cap, out_len)` per the output-array
 * rule.
 */
enum dpd_status dpd_iterative_trainer_last_release(const struct dpd_iterative_trainer *trainer,
                                                   double *out,
                                                   size_t out_cap,
                                                   size_t *out_len);

/**
 * Describes the run: iterations done, number of features d and of parameters (d, or 2d for
 * DP-VI BLR), and the noise multiplier z (0 when non-private). Any out-pointer may be NULL.
 *
 * # Safety
 * `trainer` NULL (→ error) or a live handle; each out-pointer NULL or writable.
 */
enum dpd_status dpd_iterative_trainer_info(const struct dpd_iterative_trainer *trainer,
                                           uint64_t *out_iterations,
                                           size_t *out_dim,
                                           size_t *out_n_params,
                                           double *out_noise_multiplier);

/**
 * The privacy the accountant has charged so far, (ε, δ): ε at the budget's δ (ε = 0 before
 * the first iteration; ε = INFINITY, δ = 0 for a non-private run). Either pointer may be NULL.
 *
 * # Safety
 * `trainer` NULL (→ error) or a live handle; each out-pointer NULL or writable.
 */
enum dpd_status dpd_iterative_trainer_spent(const struct dpd_iterative_trainer *trainer,
                                            double *out_epsilon,
                                            double *out_delta);

/**
 * Predictions for the rows of `x` (row-major, `x_len` a positive multiple of d), one per row
 * into `out` (query-size pattern): P(y = 1 | x) = σ(wᵀx), or σ(wᵀx + b) with an intercept, for
 * logistic regression, the posterior mean xᵀm for DP-VI BLR. With public ranges
 * (`dpd_iterative_config_set_ranges`) each raw row is first clamped and mapped as the records
 * were in training. Uses only θ, which is public: costs no privacy.
 *
 * # Safety
 * `trainer` NULL (→ error) or a live handle; `x` NULL only with `x_len == 0`, else readable;
 * `(out, out_cap, out_len)` per the output-array rule.
 */
enum dpd_status dpd_iterative_trainer_predict(const struct dpd_iterative_trainer *trainer,
                                              const double *x,
                                              size_t x_len,
                                              double *out,
                                              size_t out_cap,
                                              size_t *out_len);

/**
 * Frees a trainer; NULL is a no-op.
 *
 * # Safety
 * `trainer` must be NULL or a handle from `dpd_iterative_trainer_new` not freed before.
 */
void dpd_iterative_trainer_free(struct dpd_iterative_trainer *trainer);

/**
 * Creates an accountant with budget (ε, δ): ε ∈ [1e-6, 100], δ = 0 or δ ∈ [2.2e-308, 0.01]
 * (`DPD_ERR_INVALID_PRIVACY_PARAMETER` otherwise). Gaussian rounds compose exactly (μ-GDP,
 * Dong–Roth–Su 2019).
 *
 * # Safety
 * `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `dpd_accountant*`.
 */
enum dpd_status dpd_accountant_new(double epsilon, double delta, struct dpd_accountant **out);

/**
 * Creates an accountant with budget (ε, δ) that composes Gaussian rounds as μ²/2-zCDP and
 * converts with Bun & Steinke's bound (looser than `dpd_accountant_new`; for plans written in
 * zCDP).
 *
 * # Safety
 * As `dpd_accountant_new`.
 */
enum dpd_status dpd_accountant_new_zcdp(double epsilon, double delta, struct dpd_accountant **out);

/**
 * Charges a Gaussian round of ℓ2-sensitivity Δ₂ and noise σ: μ = Δ₂/σ, composed exactly in
 * μ-GDP (or as ρ = μ²/2 in zCDP, see `dpd_accountant_new_zcdp`). For the discrete Gaussian of
 * DCA charge `dpd_accountant_charge_zcdp` with ρ = Δ₂²/(2σ²) in grid units: that is the bound
 * proven for the discrete mechanism. Δ₂ ∈ [1e-12, 1e12] and σ ∈ [1e-15, 1e20], else
 * `DPD_ERR_INVALID_PRIVACY_PARAMETER`.
 * `DPD_ERR_BUDGET_EXCEEDED` (nothing charged) if the total would exceed the budget.
 *
 * # Safety
 * `accountant` must be NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
 */
enum dpd_status dpd_accountant_charge_gaussian(struct dpd_accountant *accountant,
                                               double l2_sensitivity,
                                               double sigma);

/**
 * Charges a ρ-zCDP round, ρ ∈ [5e-13, 5000] (ε_min²/2 to ε_max²/2; a zero-cost charge is
 * refused with `DPD_ERR_INVALID_PRIVACY_PARAMETER`).
 *
 * # Safety
 * As `dpd_accountant_charge_gaussian`.
 */
enum dpd_status dpd_accountant_charge_zcdp(struct dpd_accountant *accountant, double rho);

/**
 * Charges an ε-DP round (e.g. Laplace), ε ∈ [1e-6, 100]; ε = 0 (a zero-cost charge) and
 * anything else outside the range is refused (`DPD_ERR_INVALID_PRIVACY_PARAMETER`).
 *
 * # Safety
 * As `dpd_accountant_charge_gaussian`.
 */
enum dpd_status dpd_accountant_charge_pure(struct dpd_accountant *accountant, double epsilon);

/**
 * Charges an (ε, δ)-DP round (basic composition): ε = 0 or in [1e-6, 100], δ = 0 or in
 * [2.2e-308, 0.01], not both 0 (a zero-cost charge); otherwise
 * `DPD_ERR_INVALID_PRIVACY_PARAMETER`.
 *
 * # Safety
 * As `dpd_accountant_charge_gaussian`.
 */
enum dpd_status dpd_accountant_charge_approx(struct dpd_accountant *accountant,
                                             double epsilon,
                                             double delta);

/**
 * Writes the total (ε, δ) spent so far and the number of rounds charged. Any of the three
 * out-pointers may be NULL (that value is then not reported).
 *
 * # Safety
 * `accountant` must be NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; each out-pointer
 * must be NULL or writable.
 */
enum dpd_status dpd_accountant_spent(const struct dpd_accountant *accountant,
                                     double *out_epsilon,
                                     double *out_delta,
                                     size_t *out_rounds);

/**
 * Frees an accountant; NULL is a no-op.
 *
 * # Safety
 * `accountant` must be NULL or a handle from `dpd_accountant_new` not freed before.
 */
void dpd_accountant_free(struct dpd_accountant *accountant);

/**
 * σ of the classic Gaussian mechanism: sqrt(2 ln(1.25/δ))·Δ₂/ε. Proven only for ε < 1:
 * ε >= 1 returns `DPD_ERR_INVALID_ARGUMENT` (use `dpd_gaussian_sigma_analytic`).
 * Other errors: ε <= 0, δ outside (0, 1), Δ₂ <= 0 → `DPD_ERR_INVALID_ARGUMENT`;
 * NaN/inf → `DPD_ERR_NON_FINITE`.
 *
 * # Safety
 * `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `double`.
 */
enum dpd_status dpd_gaussian_sigma_classic(double epsilon,
                                           double delta,
                                           double l2_sensitivity,
                                           double *out);

/**
 * σ of the analytic Gaussian mechanism (Balle & Wang 2018), valid for every ε > 0: the
 * smallest σ with Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) <= δ. Errors as
 * `dpd_gaussian_sigma_classic` (without the ε < 1 restriction).
 *
 * # Safety
 * `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `double`.
 */
enum dpd_status dpd_gaussian_sigma_analytic(double epsilon,
                                            double delta,
                                            double l2_sensitivity,
                                            double *out);

/**
 * Per-client σ of distributed Gaussian noise: σ_total / sqrt(N − T − 1) (DCA paper, Thm 1),
 * for N clients of which at most T drop out or collude. N − T − 1 < 1 →
 * `DPD_ERR_INVALID_ARGUMENT`.
 *
 * # Safety
 * `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `double`.
 */
enum dpd_status dpd_distributed_sigma(double sigma_total,
                                      size_t n_clients,
                                      size_t max_dropped,
                                      double *out);

/**
 * Scale b = Δ₁/ε of the Laplace mechanism (ε-DP).
 *
 * # Safety
 * `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `double`.
 */
enum dpd_status dpd_laplace_scale(double epsilon, double l1_sensitivity, double *out);

/**
 * Fills `out[0..len]` with exact discrete Gaussian samples N_Z(0, σ²) (Canonne, Kamath &
 * Steinke 2020), σ in integer units, σ ∈ [2^-8, 2^52]. Invalid σ → `DPD_ERR_INVALID_ARGUMENT`
 * (`DPD_ERR_NON_FINITE` for NaN/inf).
 *
 * # Safety
 * `rng` must be NULL or a live `dpd_rng` not used concurrently; `out` must be NULL with
 * `len == 0` or point to `len` writable `int64_t`.
 */
enum dpd_status dpd_sample_discrete_gaussian(struct dpd_rng *rng,
                                             double sigma_units,
                                             int64_t *out,
                                             size_t len);

/**
 * Fills `out[0..len]` with exact discrete Laplace samples, P(y) ∝ exp(−|y|/b), b in integer
 * units, b ∈ [2^-32, 2^52].
 *
 * # Safety
 * As `dpd_sample_discrete_gaussian`.
 */
enum dpd_status dpd_sample_discrete_laplace(struct dpd_rng *rng,
                                            double scale_units,
                                            int64_t *out,
                                            size_t len);

/**
 * Fills `out[0..len]` with N(0, σ²) floating-point samples (trusted-aggregator path; DCA
 * clients use the exact discrete sampler instead). σ must be finite and > 0.
 *
 * # Safety
 * `rng` as `dpd_sample_discrete_gaussian`; `out` must be NULL with `len == 0` or point to
 * `len` writable `double`.
 */
enum dpd_status dpd_sample_gaussian(struct dpd_rng *rng, double sigma, double *out, size_t len);

/**
 * Fills `out[0..len]` with Laplace(0, b) floating-point samples. b must be finite and > 0.
 *
 * # Safety
 * As `dpd_sample_gaussian`.
 */
enum dpd_status dpd_sample_laplace(struct dpd_rng *rng, double scale, double *out, size_t len);

/**
 * Fills `out[0..d]` with an objective-perturbation noise vector b of density
 * ∝ exp(−ε′‖b‖/2): ‖b‖ ~ Gamma(d, 2/ε′), direction uniform on the sphere. d >= 1, ε′ > 0.
 *
 * # Safety
 * As `dpd_sample_gaussian` with `len = d`.
 */
enum dpd_status dpd_sample_objective_perturbation(struct dpd_rng *rng,
                                                  double epsilon_prime,
                                                  double *out,
                                                  size_t d);

/**
 * Copies a data set: `x` holds `n_rows` rows of `n_features` values, row-major
 * (`x_len = n_rows·n_features`); `labels[0..n_rows]` are all in {0, 1} or all in {−1, +1}.
 * Errors: `DPD_ERR_LENGTH_MISMATCH`, `DPD_ERR_NON_FINITE`, `DPD_ERR_INVALID_ARGUMENT` (bad or
 * mixed labels, one class only, empty).
 *
 * # Safety
 * `x`, `labels` NULL only with length 0, else readable for their lengths; `out` NULL (→ error)
 * or a writable `dpd_dataset*`.
 */
enum dpd_status dpd_dataset_new(const double *x,
                                size_t x_len,
                                size_t n_features,
                                const double *labels,
                                size_t n_rows,
                                struct dpd_dataset **out);

/**
 * Frees a data set; NULL is a no-op.
 *
 * # Safety
 * `dataset` must be NULL or a handle from `dpd_dataset_new` not freed before.
 */
void dpd_dataset_free(struct dpd_dataset *dataset);

/**
 * Builds feature groups: `group_of_feature[j]` (j < n_features) is the group (0..n_groups) of
 * feature j, or `DPD_FEATURE_UNUSED`; `importance[0..n_groups]` are the q_k (>= 0, summing to 1).
 * Importances must come from side information, never from the private data. Every group must
 * be non-empty. Errors: `DPD_ERR_INVALID_ARGUMENT`, `DPD_ERR_LENGTH_MISMATCH`.
 *
 * # Safety
 * Arrays NULL only with length 0, else readable for their lengths; `out` NULL (→ error) or a
 * writable `dpd_feature_groups*`.
 */
enum dpd_status dpd_feature_groups_new(const uint32_t *group_of_feature,
                                       size_t n_features,
                                       const double *importance,
                                       size_t n_groups,
                                       struct dpd_feature_groups **out);

/**
 * Frees feature groups; NULL is a no-op.
 *
 * # Safety
 * `groups` must be NULL or a handle from `dpd_feature_groups_new` not freed before.
 */
void dpd_feature_groups_free(struct dpd_feature_groups *groups);

/**
 * Fits PLR by objective perturbation: ε ∈ [1e-6, 100] (or INFINITY; otherwise
 * `DPD_ERR_INVALID_PRIVACY_PARAMETER`), λ > 0. Rows are projected to
 * ‖x‖ <= 1. Errors: `DPD_ERR_INVALID_ARGUMENT` (ε, λ), `DPD_ERR_NUMERICAL` (no convergence).
 *
 * # Safety
 * `dataset`, `rng` NULL (→ error) or live handles (`rng` not used concurrently); `out` NULL
 * (→ error) or a writable `dpd_plr_model*`.
 */
enum dpd_status dpd_plr_fit(const struct dpd_dataset *dataset,
                            double epsilon,
                            double lambda,
                            struct dpd_rng *rng,
                            struct dpd_plr_model **out);

/**
 * As `dpd_plr_fit`, with `intercept` = 1 to estimate an intercept b, P(y = 1 | x) =
 * σ(wᵀx̃ + b) (`dpd_plr_model_intercept` reads it), or 0 for none (then exactly
 * `dpd_plr_fit`). With an intercept each row is projected to ‖x̃‖ <= 1/√2 and the solver sees
 * (x̃, 1/√2), so the norm bound of the privacy calibration still holds. Any other `intercept`
 * → `DPD_ERR_INVALID_ARGUMENT`, nothing drawn and nothing made.
 *
 * # Safety
 * As `dpd_plr_fit`.
 */
enum dpd_status dpd_plr_fit_with_intercept(const struct dpd_dataset *dataset,
                                           double epsilon,
                                           double lambda,
                                           uint32_t intercept,
                                           struct dpd_rng *rng,
                                           struct dpd_plr_model **out);

/**
 * As `dpd_plr_fit_with_intercept`, with public feature ranges: `lo[j] < hi[j]`, both finite,
 * one pair per feature (`n_ranges` = the data set's number of features), known without looking
 * at the private data (codebooks, physical limits). Each value is clamped into
 * [lo_j, hi_j] and mapped onto [−1, 1], φ_j(x) = (clamp(x_j, lo_j, hi_j) − m_j)/h_j with
 * centre m_j = (lo_j + hi_j)/2 and half-width h_j = (hi_j − lo_j)/2; the mapped row is then
 * projected to ‖φ(x)‖ <= r (r/√2 with an intercept), r the input radius. The fitted model
 * predicts through the same map (`dpd_plr_model_ranges` reads the ranges back;
 * `dpd_plr_model_from_weights_and_ranges` re-imports such a model). Bad ranges (a non-finite
 * end, lo >= hi) → `DPD_ERR_INVALID_ARGUMENT` naming the (0-based) column; a wrong count →
 * `DPD_ERR_INVALID_ARGUMENT` naming `n_ranges`; `lo` or `hi` NULL with `n_ranges` > 0 →
 * `DPD_ERR_NULL_POINTER`. Like a bad `intercept`, nothing is drawn from `rng` and nothing is
 * made.
 *
 * # Safety
 * As `dpd_plr_fit`; `lo` and `hi` NULL only with `n_ranges == 0`, else readable for
 * `n_ranges` doubles each.
 */
enum dpd_status dpd_plr_fit_with_ranges(const struct dpd_dataset *dataset,
                                        double epsilon,
                                        double lambda,
                                        uint32_t intercept,
                                        const double *lo,
                                        const double *hi,
                                        size_t n_ranges,
                                        struct dpd_rng *rng,
                                        struct dpd_plr_model **out);

/**
 * Fits PST-S: the low-level share (1 − `high_fraction`) of the rows cut into `n_parts` >= 1
 * disjoint parts, a PLR (λ = `lambda`) on each, and a PLR (λ = `lambda_high`) on the rest over
 * the low-level outputs. `high_fraction` in (0, 1); the paper uses 0.5.
 *
 * # Safety
 * As `dpd_plr_fit`.
 */
enum dpd_status dpd_pst_s_fit(const struct dpd_dataset *dataset,
                              size_t n_parts,
                              double epsilon,
                              double lambda,
                              double lambda_high,
                              double high_fraction,
                              struct dpd_rng *rng,
                              struct dpd_plr_model **out);

/**
 * As `dpd_pst_s_fit`, with `intercept` = 1 for an intercept in every low-level model and in
 * the high-level model (`dpd_plr_model_intercept` reads the high-level one, which is the
 * stack's: P(y = 1 | x) = σ(vᵀz + b) over the low-level outputs z;
 * `dpd_plr_model_low_level_intercept` reads the others), or 0 for none (then exactly
 * `dpd_pst_s_fit`). Any other `intercept` → `DPD_ERR_INVALID_ARGUMENT`, nothing drawn.
 *
 * # Safety
 * As `dpd_plr_fit`.
 */
enum dpd_status dpd_pst_s_fit_with_intercept(const struct dpd_dataset *dataset,
                                             size_t n_parts,
                                             double epsilon,
                                             double lambda,
                                             double lambda_high,
                                             double high_fraction,
                                             uint32_t intercept,
                                             struct dpd_rng *rng,
                                             struct dpd_plr_model **out);

/**
 * As `dpd_pst_s_fit_with_intercept`, with public feature ranges `lo[0..n_ranges]`,
 * `hi[0..n_ranges]`, one pair per column of the data (`n_ranges` = its number of features),
 * as for `dpd_plr_fit_with_ranges`: every low-level model clamps and maps each column onto
 * [−1, 1] by its range before projecting the row onto its input ball, and predicts through the
 * same map (`dpd_plr_model_low_level_ranges` reads model k's ranges). The high-level model
 * reads the low-level outputs, which need no ranges. Bad ranges → `DPD_ERR_INVALID_ARGUMENT`
 * naming the (0-based) column, a wrong count naming `n_ranges`, `lo` or `hi` NULL with
 * `n_ranges` > 0 → `DPD_ERR_NULL_POINTER`; like a bad `intercept`, nothing is drawn from `rng`
 * and nothing is made.
 *
 * # Safety
 * As `dpd_plr_fit_with_ranges`.
 */
enum dpd_status dpd_pst_s_fit_with_ranges(const struct dpd_dataset *dataset,
                                          size_t n_parts,
                                          double epsilon,
                                          double lambda,
                                          double lambda_high,
                                          double high_fraction,
                                          uint32_t intercept,
                                          const double *lo,
                                          const double *hi,
                                          size_t n_ranges,
                                          struct dpd_rng *rng,
                                          struct dpd_plr_model **out);

/**
 * Fits PST-F: one low-level PLR per feature group (rows of group k scaled to ‖x_(k)‖ <= q_k,
 * jointly calibrated) and a high-level PLR over their outputs. Parameters as `dpd_pst_s_fit`.
 *
 * # Safety
 * As `dpd_plr_fit`; `groups` NULL (→ error) or a live handle.
 */
enum dpd_status dpd_pst_f_fit(const struct dpd_dataset *dataset,
                              const struct dpd_feature_groups *groups,
                              double epsilon,
                              double lambda,
                              double lambda_high,
                              double high_fraction,
                              struct dpd_rng *rng,
                              struct dpd_plr_model **out);

/**
 * As `dpd_pst_f_fit`, with `intercept` = 1 for an intercept in every low-level model and in
 * the high-level model (read as for `dpd_pst_s_fit_with_intercept`), or 0 for none (then
 * exactly `dpd_pst_f_fit`). Any other `intercept` → `DPD_ERR_INVALID_ARGUMENT`, nothing drawn.
 *
 * # Safety
 * As `dpd_pst_f_fit`.
 */
enum dpd_status dpd_pst_f_fit_with_intercept(const struct dpd_dataset *dataset,
                                             const struct dpd_feature_groups *groups,
                                             double epsilon,
                                             double lambda,
                                             double lambda_high,
                                             double high_fraction,
                                             uint32_t intercept,
                                             struct dpd_rng *rng,
                                             struct dpd_plr_model **out);

/**
 * As `dpd_pst_f_fit_with_intercept`, with public feature ranges, one pair per column of the
 * data, as `dpd_pst_s_fit_with_ranges`: low-level model k maps the columns of group k, in the
 * group's order, by their ranges, then projects the row to ‖φ(x_(k))‖ <= q_k (q_k/√2 with an
 * intercept), so the joint calibration's norm bound holds. Errors as for
 * `dpd_pst_s_fit_with_ranges`; nothing drawn and nothing made.
 *
 * # Safety
 * As `dpd_pst_f_fit`; `lo` and `hi` NULL only with `n_ranges == 0`, else readable for
 * `n_ranges` doubles each.
 */
enum dpd_status dpd_pst_f_fit_with_ranges(const struct dpd_dataset *dataset,
                                          const struct dpd_feature_groups *groups,
                                          double epsilon,
                                          double lambda,
                                          double lambda_high,
                                          double high_fraction,
                                          uint32_t intercept,
                                          const double *lo,
                                          const double *hi,
                                          size_t n_ranges,
                                          struct dpd_rng *rng,
                                          struct dpd_plr_model **out);

/**
 * Fits PST-H (transfer): per-group source models on `source` at ε_source, then PST-F on
 * `target` at ε_target with each low-level model pulled towards its source model (strength
 * `lambda_target`). Returns the target's stacked model; its `dpd_plr_model_info` ε is the
 * target's guarantee (the source data has (ε_source, 0)-DP).
 *
 * # Safety
 * As `dpd_pst_f_fit`, with two data sets.
 */
enum dpd_status dpd_pst_h_fit(const struct dpd_dataset *source,
                              const struct dpd_dataset *target,
                              const struct dpd_feature_groups *groups,
                              double epsilon_source,
                              double epsilon_target,
                              double lambda_source,
                              double lambda_target,
                              double lambda_high,
                              double high_fraction,
                              struct dpd_rng *rng,
                              struct dpd_plr_model **out);

/**
 * As `dpd_pst_h_fit`, with `intercept` = 1 for an intercept in every source model, every
 * low-level model and the high-level model (each target low-level model's intercept is pulled
 * towards its source model's like its weights), or 0 for none (then exactly `dpd_pst_h_fit`).
 * The returned target stack's intercepts are read as for `dpd_pst_s_fit_with_intercept`. Any
 * other `intercept` → `DPD_ERR_INVALID_ARGUMENT`, nothing drawn.
 *
 * # Safety
 * As `dpd_pst_h_fit`.
 */
enum dpd_status dpd_pst_h_fit_with_intercept(const struct dpd_dataset *source,
                                             const struct dpd_dataset *target,
                                             const struct dpd_feature_groups *groups,
                                             double epsilon_source,
                                             double epsilon_target,
                                             double lambda_source,
                                             double lambda_target,
                                             double lambda_high,
                                             double high_fraction,
                                             uint32_t intercept,
                                             struct dpd_rng *rng,
                                             struct dpd_plr_model **out);

/**
 * As `dpd_pst_h_fit_with_intercept`, with public feature ranges, one pair per column (the
 * source and the target have the same columns; `n_ranges` = the target's number of features),
 * as `dpd_pst_f_fit_with_ranges`: every source model and every target low-level model maps the
 * columns of its group by their ranges, so a source model's weights are read on the target's
 * scale. Errors as for `dpd_pst_s_fit_with_ranges`; nothing drawn and nothing made.
 *
 * # Safety
 * As `dpd_pst_h_fit`; `lo` and `hi` NULL only with `n_ranges == 0`, else readable for
 * `n_ranges` doubles each.
 */
enum dpd_status dpd_pst_h_fit_with_ranges(const struct dpd_dataset *source,
                                          const struct dpd_dataset *target,
                                          const struct dpd_feature_groups *groups,
                                          double epsilon_source,
                                          double epsilon_target,
                                          double lambda_source,
                                          double lambda_target,
                                          double lambda_high,
                                          double high_fraction,
                                          uint32_t intercept,
                                          const double *lo,
                                          const double *hi,
                                          size_t n_ranges,
                                          struct dpd_rng *rng,
                                          struct dpd_plr_model **out);

/**
 * AUC of `scores[0..n]` against `labels[0..n_labels]` (n_labels must equal n; labels in
 * {0, 1} or {−1, +1}): the Mann–Whitney statistic, ties counting ½.
 *
 * # Safety
 * Arrays NULL only with length 0, else readable; `out` NULL (→ error) or a writable `double`.
 */
enum dpd_status dpd_auc(const double *scores,
                        size_t n,
                        const double *labels,
                        size_t n_labels,
                        double *out);

/**
 * Predicted probabilities P(y = 1 | x) for the rows of `x` (row-major, `x_len` a positive
 * multiple of the model's number of features), one per row into `out` (query-size pattern).
 * Rows are mapped as in training: through the public ranges when the model has them
 * (`dpd_plr_fit_with_ranges`), then projected onto the model's input ball.
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; `x` NULL only with `x_len == 0`, else readable;
 * `out` NULL with `out_cap == 0` or `out_cap` writable doubles; `out_len` NULL (→ error) or
 * writable.
 */
enum dpd_status dpd_plr_model_predict_proba(const struct dpd_plr_model *model,
                                            const double *x,
                                            size_t x_len,
                                            double *out,
                                            size_t out_cap,
                                            size_t *out_len);

/**
 * Describes a model: its kind (a `dpd_plr_model_kind` value), number of input features,
 * number K of low-level models (0 for a single model) and the ε of its training data's
 * guarantee (δ = 0; `INFINITY` for a non-private fit, NaN when unknown, i.e. imported).
 * Any out-pointer may be NULL.
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; each out-pointer NULL or writable.
 */
enum dpd_status dpd_plr_model_info(const struct dpd_plr_model *model,
                                   uint32_t *out_kind,
                                   size_t *out_n_features,
                                   size_t *out_n_low_level,
                                   double *out_epsilon);

/**
 * Exports the weights of a single model, or of the high-level model of a stack (one per
 * low-level model), into `out` (query-size pattern), and its input radius r (rows are
 * projected to ‖x‖ <= r before wᵀx; to ‖x‖ <= r/√2 when the model has an intercept, which
 * `dpd_plr_model_intercept` reads) into `*out_input_radius` (may be NULL). A model fitted
 * with public ranges (`dpd_plr_fit_with_ranges`) applies wᵀ to the mapped row φ(x), not to x:
 * its weights and radius alone do not describe it, `dpd_plr_model_ranges` gives the ranges,
 * and only `dpd_plr_model_from_weights_and_ranges` re-imports it faithfully (the other
 * `from_weights` functions make a model without ranges).
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; `(out, out_cap, out_len)` per the output-array
 * rule; `out_input_radius` NULL or writable.
 */
enum dpd_status dpd_plr_model_weights(const struct dpd_plr_model *model,
                                      double *out,
                                      size_t out_cap,
                                      size_t *out_len,
                                      double *out_input_radius);

/**
 * Exports low-level model `k` (0..K) of a stack: the indices of the input features it reads
 * into `out_features` (query-size pattern on `features_cap`, length written to
 * `*out_n_features`), its weights into `out_weights` (same length; `weights_cap` must be at
 * least that) and its input radius into `*out_input_radius` (may be NULL). A single model →
 * `DPD_ERR_INVALID_ARGUMENT`. On `DPD_ERR_BUFFER_TOO_SMALL` only `*out_n_features` is written.
 * A stack fitted with public ranges applies the weights to the mapped row φ(x_(k)):
 * `dpd_plr_model_low_level_ranges` gives the ranges of model k's features.
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; output arrays NULL only with capacity 0, else
 * writable for their capacities; `out_n_features` NULL (→ error) or writable;
 * `out_input_radius` NULL or writable.
 */
enum dpd_status dpd_plr_model_low_level(const struct dpd_plr_model *model,
                                        size_t k,
                                        uint64_t *out_features,
                                        size_t features_cap,
                                        double *out_weights,
                                        size_t weights_cap,
                                        size_t *out_n_features,
                                        double *out_input_radius);

/**
 * Imports a single logistic model from exported weights `weights[0..d]` and input radius r > 0
 * (its privacy guarantee is unknown to the library: `dpd_plr_model_info` reports ε = NaN).
 *
 * # Safety
 * `weights` NULL only with `d == 0`, else readable; `out` NULL (→ error) or a writable
 * `dpd_plr_model*`.
 */
enum dpd_status dpd_plr_model_from_weights(const double *weights,
                                           size_t d,
                                           double input_radius,
                                           struct dpd_plr_model **out);

/**
 * The intercept b of a single model, or of the high-level model of a stack (the stack's
 * intercept: P(y = 1 | x) = σ(vᵀz + b) over the low-level outputs z), into `*out`. In margin
 * units: P(y = 1 | x) = σ(wᵀx̃ + b), x̃ the row projected to ‖x̃‖ <= r/√2 (r the input radius
 * of `dpd_plr_model_weights`; for a model with public ranges the row is first mapped as
 * `dpd_plr_model_ranges` describes, and b is the margin at the ranges' centres). A model
 * fitted or imported without intercept → `DPD_ERR_INVALID_STATE` (its margin is wᵀx̃ alone),
 * `*out` untouched.
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; `out` NULL (→ error) or writable.
 */
enum dpd_status dpd_plr_model_intercept(const struct dpd_plr_model *model,
                                        double *out);

/**
 * The intercept of low-level model `k` (0..K) of a stack into `*out` (margin units, as
 * `dpd_plr_model_intercept`). A single model → `DPD_ERR_INVALID_ARGUMENT`; a stack fitted
 * without intercepts → `DPD_ERR_INVALID_STATE`; `*out` untouched on any error.
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; `out` NULL (→ error) or writable.
 */
enum dpd_status dpd_plr_model_low_level_intercept(const struct dpd_plr_model *model,
                                                  size_t k,
                                                  double *out);

/**
 * Imports a single logistic model with an intercept from exported weights `weights[0..d]`, its
 * intercept b (`dpd_plr_model_intercept`) and input radius r > 0: P(y = 1 | x) = σ(wᵀx̃ + b),
 * x̃ the row projected to ‖x̃‖ <= r/√2 — the model `dpd_plr_fit_with_intercept` fitted. Privacy
 * unknown (ε = NaN), as `dpd_plr_model_from_weights`. Errors: `DPD_ERR_NON_FINITE` (a weight,
 * b or r), `DPD_ERR_INVALID_ARGUMENT` (d = 0, r < 0); nothing made.
 *
 * # Safety
 * As `dpd_plr_model_from_weights`.
 */
enum dpd_status dpd_plr_model_from_weights_and_intercept(const double *weights,
                                                         size_t d,
                                                         double intercept,
                                                         double input_radius,
                                                         struct dpd_plr_model **out);

/**
 * The public ranges a single model (or the high-level model of a stack) maps its inputs from:
 * `lo[j]` into `out_lo`, `hi[j]` into `out_hi`, one pair per feature (query-size pattern on
 * `cap`, the capacity of each array; the length is written to `*out_len`). The model predicts
 * σ(wᵀx̃ + b) with x̃ the row φ(x), φ_j(x) = (clamp(x_j, lo_j, hi_j) − m_j)/h_j (m_j the
 * centre, h_j the half-width of range j), projected to ‖x̃‖ <= r (r/√2 with an intercept). A
 * model fitted or imported without ranges → `DPD_ERR_INVALID_STATE` (its rows are projected
 * as they are), nothing written.
 *
 * # Safety
 * `model` NULL (→ error) or a live handle; `out_lo`, `out_hi` NULL only with `cap == 0`,
 * else writable for `cap` doubles; `out_len` NULL (→ error) or writable.
 */
enum dpd_status dpd_plr_model_ranges(const struct dpd_plr_model *model,
                                     double *out_lo,
                                     double *out_hi,
                                     size_t cap,
                                     size_t *out_len);

/**
 * The public ranges low-level model `k` (0..K) of a stack maps its inputs from, one pair per
 * feature it reads, in the order of its feature indices (`dpd_plr_model_low_level`):
 * `lo` into `out_lo`, `hi` into `out_hi` (query-size pattern on `cap`, the capacity of each
 * array; the length is written to `*out_len`). Model k predicts from φ(x_(k)), each of its
 * columns mapped as `dpd_plr_model_ranges` describes, projected to its input ball. A single
 * model → `DPD_ERR_INVALID_ARGUMENT`; a stack fitted without ranges →
 * `DPD_ERR_INVALID_STATE`; nothing written on any error.
 *
 * # Safety
 * As `dpd_plr_model_ranges`.
 */
enum dpd_status dpd_plr_model_low_level_ranges(const struct dpd_plr_model *model,
                                               size_t k,
                                               double *out_lo,
                                               double *out_hi,
                                               size_t cap,
                                               size_t *out_len);

/**
 * Imports a single logistic model with public ranges from exported parts: weights
 * `weights[0..d]`, `intercept` = 1 with its intercept `b` or 0 for none (then `b` must be 0),
 * the ranges `lo[0..n_ranges]`, `hi[0..n_ranges]` (`dpd_plr_model_ranges`; `n_ranges` = d) and
 * input radius r — the model `dpd_plr_fit_with_ranges` fitted. Privacy unknown (ε = NaN), as
 * `dpd_plr_model_from_weights`. Errors: `DPD_ERR_NON_FINITE` (a weight, b or r),
 * `DPD_ERR_INVALID_ARGUMENT` (d = 0, r < 0, `intercept` not 0 or 1, b ≠ 0 without intercept,
 * bad ranges as for `dpd_plr_fit_with_ranges`, naming the column); nothing made.
 *
 * # Safety
 * As `dpd_plr_model_from_weights`; `lo` and `hi` NULL only with `n_ranges == 0`, else readable
 * for `n_ranges` doubles each.
 */
enum dpd_status dpd_plr_model_from_weights_and_ranges(const double *weights,
                                                      size_t d,
                                                      uint32_t intercept,
                                                      double b,
                                                      const double *lo,
                                                      const double *hi,
                                                      size_t n_ranges,
                                                      double input_radius,
                                                      struct dpd_plr_model **out);

/**
 * Frees a model; NULL is a no-op.
 *
 * # Safety
 * `model` must be NULL or a model handle not freed before.
 */
void dpd_plr_model_free(struct dpd_plr_model *model);

/**
 * Creates a generator keyed from the operating system's CSPRNG — the one to use in
 * production. Free it with `dpd_rng_free`.
 *
 * # Safety
 * `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `dpd_rng*`.
 */
enum dpd_status dpd_rng_new_os(struct dpd_rng **out);

/**
 * Creates a deterministic generator from `seed`. INSECURE: for tests and reproducible
 * experiments only — anyone who knows the seed can unmask every share and remove every noise
 * value drawn from it. Free it with `dpd_rng_free`.
 *
 * # Safety
 * `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `dpd_rng*`.
 */
enum dpd_status dpd_rng_new_insecure_fixed_seed(uint64_t seed, struct dpd_rng **out);

/**
 * Frees a generator; NULL is a no-op.
 *
 * # Safety
 * `rng` must be NULL or a handle from `dpd_rng_new_*` not freed before.
 */
void dpd_rng_free(struct dpd_rng *rng);

/**
 * The name of a status code (e.g. `"DPD_ERR_NULL_POINTER"`) as a static NUL-terminated string;
 * `"DPD_UNKNOWN_STATUS"` for a value that is not a `dpd_status`. Never fails; never free it.
 */
const char *dpd_status_name(uint32_t status);

/**
 * Builds the global worker pool with `n` threads (`n = 0`: one per core; at most
 * `DPD_MAX_THREADS`, else `DPD_ERR_INVALID_ARGUMENT`).
 *
 * Must be called before any other dpdist call that computes; the pool can be built only once
 * per process. Returns `DPD_ERR_ALREADY_INITIALIZED` (changing nothing) if it already exists,
 * because an earlier call built it, an earlier computation did, or another rayon user in the
 * same process did.
 */
enum dpd_status dpd_set_num_threads(size_t n);

/**
 * Writes the number of worker threads dpdist uses (building the default pool if none exists
 * yet, after which `dpd_set_num_threads` fails).
 *
 * # Safety
 * `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `size_t`.
 */
enum dpd_status dpd_num_threads(size_t *out);

/**
 * The library version (e.g. `"0.1.0"`) as a static NUL-terminated string. Never free it.
 */
const char *dpd_version(void);

/**
 * The ABI version the library was built with; equals `DPD_ABI_VERSION` of a matching header.
 */
uint32_t dpd_abi_version(void);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* DPDIST_H */
