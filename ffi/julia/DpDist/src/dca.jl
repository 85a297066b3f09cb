# DCA, the secure summation round. Ids are the protocol's and 0-based: clients 0..N-1,
# compute nodes 0..M-1.

share_mode(mode::Symbol) =
    mode === :seed ? DPD_SHARE_MODE_SEED :
    mode === :full ? DPD_SHARE_MODE_FULL :
    argument_error("mode must be :seed or :full, got :$mode")

"""
    RoundConfig(; round, n_clients, n_nodes, max_dropped, dim, bound, mode=:seed,
                noise_sigma_total, frac_bits=nothing)
    RoundConfig(; round, n_clients, n_nodes, max_dropped, dim, bound, mode=:seed,
                non_private=true, frac_bits=nothing)

Configuration of one round; every party builds it from the same arguments. `max_dropped` (T) is
how many clients may drop out or collude; `|x| <= bound` for every element; `:seed` sends nodes
1..M-1 a 16-byte seed, `:full` every share in full; `frac_bits = nothing` picks the fixed-point
precision. Give exactly one of `noise_sigma_total` > 0 (a differentially private round; 0, a
negative value or NaN is refused) and `non_private=true` (the EXACT sum, NON-PRIVATE:
`dpd_round_config_new_exact`).
"""
mutable struct RoundConfig
    ptr::Ptr{dpd_round_config}
    function RoundConfig(; round::Integer, n_clients::Integer, n_nodes::Integer,
                         max_dropped::Integer, dim::Integer, bound::Real, mode::Symbol=:seed,
                         noise_sigma_total::Union{Nothing,Real}=nothing,
                         non_private::Bool=false,
                         frac_bits::Union{Nothing,Integer}=nothing)
        if non_private == (noise_sigma_total !== nothing)
            throw(DpDistError(:DPD_ERR_INVALID_PRIVACY_PARAMETER, 20,
                              "give exactly one of noise_sigma_total (> 0, a private round) " *
                              "and non_private=true (an exact, NON-PRIVATE sum)"))
        end
        fb = frac_bits === nothing ? DPD_FRAC_BITS_AUTO : UInt32(frac_bits)
        out = Ref{Ptr{dpd_round_config}}(C_NULL)
        if non_private
            check(@ccall libdpdist.dpd_round_config_new_exact(
                round::UInt64, n_clients::Csize_t, n_nodes::UInt32, max_dropped::Csize_t,
                dim::Csize_t, bound::Cdouble, share_mode(mode)::UInt32,
                fb::UInt32, out::Ref{Ptr{dpd_round_config}})::Cint)
        else
            check(@ccall libdpdist.dpd_round_config_new(
                round::UInt64, n_clients::Csize_t, n_nodes::UInt32, max_dropped::Csize_t,
                dim::Csize_t, bound::Cdouble, share_mode(mode)::UInt32,
                noise_sigma_total::Cdouble, fb::UInt32, out::Ref{Ptr{dpd_round_config}})::Cint)
        end
        return finalizer(free!, new(out[]))
    end
end

function free!(x::RoundConfig)
    @ccall libdpdist.dpd_round_config_free(x.ptr::Ptr{dpd_round_config})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_round_config}}, x::RoundConfig) = checked_ptr(x, "RoundConfig")

"""`(frac_bits=…, sigma_client=…, dim=…)` of a configuration."""
function config_info(cfg::RoundConfig)
    frac_bits = Ref{UInt32}(0)
    sigma_client = Ref{Cdouble}(0)
    dim = Ref{Csize_t}(0)
    check(@ccall libdpdist.dpd_round_config_info(cfg::Ptr{dpd_round_config},
                                                 frac_bits::Ref{UInt32},
                                                 sigma_client::Ref{Cdouble},
                                                 dim::Ref{Csize_t})::Cint)
    return (frac_bits=Int(frac_bits[]), sigma_client=sigma_client[], dim=Int(dim[]))
end

"""A client of the round with id `client_id`; `rng` supplies its masks and noise."""
mutable struct Client
    ptr::Ptr{dpd_client}
    function Client(cfg::RoundConfig, client_id::Integer, rng::Rng=Rng())
        out = Ref{Ptr{dpd_client}}(C_NULL)
        check(@ccall libdpdist.dpd_client_new(cfg::Ptr{dpd_round_config}, client_id::UInt64,
                                              rng::Ptr{dpd_rng}, out::Ref{Ptr{dpd_client}})::Cint)
        return finalizer(free!, new(out[]))
    end
end

function free!(x::Client)
    @ccall libdpdist.dpd_client_free(x.ptr::Ptr{dpd_client})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_client}}, x::Client) = checked_ptr(x, "Client")

"""
    shard(client, values) -> Vector{Vector{UInt8}}

Encodes `values`, adds the client's noise and splits it into one share per compute node:
element `k + 1` holds the wire bytes for node `k`.
"""
function shard(client::Client, values::AbstractVector{<:Real})
    v = convert(Vector{Cdouble}, values)
    shares = Ref{Ptr{dpd_shares}}(C_NULL)
    check(@ccall libdpdist.dpd_client_shard(client::Ptr{dpd_client}, v::Ptr{Cdouble},
                                            length(v)::Csize_t,
                                            shares::Ref{Ptr{dpd_shares}})::Cint)
    try
        count = Ref{Csize_t}(0)
        check(@ccall libdpdist.dpd_shares_count(shares[]::Ptr{dpd_shares},
                                                count::Ref{Csize_t})::Cint)
        return [share_message(shares[], UInt32(k)) for k in 0:Int(count[])-1]
    finally
        @ccall libdpdist.dpd_shares_free(shares[]::Ptr{dpd_shares})::Cvoid
    end
end

function share_message(shares::Ptr{dpd_shares}, node::UInt32)
    len = Ref{Csize_t}(0)
    status = @ccall libdpdist.dpd_shares_message(shares::Ptr{dpd_shares}, node::UInt32,
                                                 C_NULL::Ptr{UInt8}, 0::Csize_t,
                                                 len::Ref{Csize_t})::Cint
    status == DPD_ERR_BUFFER_TOO_SMALL || check(status)
    bytes = Vector{UInt8}(undef, len[])
    check(@ccall libdpdist.dpd_shares_message(shares::Ptr{dpd_shares}, node::UInt32,
                                              bytes::Ptr{UInt8}, length(bytes)::Csize_t,
                                              len::Ref{Csize_t})::Cint)
    return bytes
end

"""
    RoundLedger()

The round ids a party has taken part in: a `Node` or `Aggregator` created with `ledger=` refuses
(`:DPD_ERR_WRONG_ROUND`, nothing created) a round id the ledger saw with another configuration.
"""
mutable struct RoundLedger
    ptr::Ptr{dpd_round_ledger}
    function RoundLedger()
        out = Ref{Ptr{dpd_round_ledger}}(C_NULL)
        check(@ccall libdpdist.dpd_round_ledger_new(out::Ref{Ptr{dpd_round_ledger}})::Cint)
        return finalizer(free!, new(out[]))
    end
end

function free!(x::RoundLedger)
    @ccall libdpdist.dpd_round_ledger_free(x.ptr::Ptr{dpd_round_ledger})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_round_ledger}}, x::RoundLedger) = checked_ptr(x, "RoundLedger")

"""`true` for a new round id, `false` for the same round again; throws
`:DPD_ERR_WRONG_ROUND` (ledger unchanged) for a reused id with another configuration."""
function admit!(ledger::RoundLedger, cfg::RoundConfig)
    is_new = Ref{UInt32}(0)
    check(@ccall libdpdist.dpd_round_ledger_admit(ledger::Ptr{dpd_round_ledger},
                                                  cfg::Ptr{dpd_round_config},
                                                  is_new::Ref{UInt32})::Cint)
    return is_new[] != 0
end

"""
    ledger_entries(ledger) -> Vector{Tuple{UInt64,Vector{UInt8}}}

The admitted rounds as (round id, 16-byte configuration digest), in increasing id: what a party
stores so that, after a restart, `admit!(ledger, round, digest)` restores its ledger.
"""
function ledger_entries(ledger::RoundLedger)
    len = Ref{Csize_t}(0)
    status = @ccall libdpdist.dpd_round_ledger_entries(ledger::Ptr{dpd_round_ledger},
                                                       C_NULL::Ptr{UInt64}, C_NULL::Ptr{UInt8},
                                                       0::Csize_t, len::Ref{Csize_t})::Cint
    status == DPD_ERR_BUFFER_TOO_SMALL || check(status)
    rounds = Vector{UInt64}(undef, len[])
    digests = Vector{UInt8}(undef, DPD_CONFIG_DIGEST_LEN * len[])
    check(@ccall libdpdist.dpd_round_ledger_entries(ledger::Ptr{dpd_round_ledger},
                                                    rounds::Ptr{UInt64}, digests::Ptr{UInt8},
                                                    length(rounds)::Csize_t,
                                                    len::Ref{Csize_t})::Cint)
    return [(rounds[i], digests[(i - 1) * DPD_CONFIG_DIGEST_LEN + 1:i * DPD_CONFIG_DIGEST_LEN])
            for i in 1:len[]]
end

"""As `admit!(ledger, cfg)`, from a (round id, digest) pair saved by `ledger_entries`."""
function admit!(ledger::RoundLedger, round::Integer, digest::AbstractVector{UInt8})
    bytes = Vector{UInt8}(digest)
    is_new = Ref{UInt32}(0)
    check(@ccall libdpdist.dpd_round_ledger_admit_digest(ledger::Ptr{dpd_round_ledger},
                                                         UInt64(round)::UInt64,
                                                         bytes::Ptr{UInt8},
                                                         length(bytes)::Csize_t,
                                                         is_new::Ref{UInt32})::Cint)
    return is_new[] != 0
end

"""Compute node `node` (0-based) of the round, admitted through `ledger` when one is given."""
mutable struct Node
    ptr::Ptr{dpd_node}
    function Node(cfg::RoundConfig, node::Integer; ledger::Union{RoundLedger,Nothing}=nothing)
        out = Ref{Ptr{dpd_node}}(C_NULL)
        if ledger === nothing
            check(@ccall libdpdist.dpd_node_new(cfg::Ptr{dpd_round_config}, node::UInt32,
                                                out::Ref{Ptr{dpd_node}})::Cint)
        else
            check(@ccall libdpdist.dpd_node_new_admitted(ledger::Ptr{dpd_round_ledger},
                                                         cfg::Ptr{dpd_round_config},
                                                         node::UInt32,
                                                         out::Ref{Ptr{dpd_node}})::Cint)
        end
        return finalizer(free!, new(out[]))
    end
end

function free!(x::Node)
    @ccall libdpdist.dpd_node_free(x.ptr::Ptr{dpd_node})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_node}}, x::Node) = checked_ptr(x, "Node")

"""Adds one share message (wire bytes) to the node's sum; on error the node is unchanged."""
function absorb!(node::Node, bytes::Vector{UInt8})
    check(@ccall libdpdist.dpd_node_absorb(node::Ptr{dpd_node}, bytes::Ptr{UInt8},
                                           length(bytes)::Csize_t)::Cint)
    return node
end

"""Takes back an absorbed full-mode share of a client outside the agreed set."""
function retract!(node::Node, bytes::Vector{UInt8})
    check(@ccall libdpdist.dpd_node_retract(node::Ptr{dpd_node}, bytes::Ptr{UInt8},
                                            length(bytes)::Csize_t)::Cint)
    return node
end

"""
    received(node) -> Vector{Tuple{UInt64,UInt64}}

The (client id, shard id) pairs whose shares the node has absorbed, ascending by client. The
nodes agree on the pairs every node holds (`reduce(intersect, received.(nodes))`): a client
whose nodes hold different sharding attempts (it sharded twice) drops out of that intersection.
"""
function received(node::Node)
    len = Ref{Csize_t}(0)
    status = @ccall libdpdist.dpd_node_received(node::Ptr{dpd_node}, C_NULL::Ptr{UInt64},
                                                C_NULL::Ptr{UInt64}, 0::Csize_t,
                                                len::Ref{Csize_t})::Cint
    status == DPD_ERR_BUFFER_TOO_SMALL || check(status)
    ids = Vector{UInt64}(undef, len[])
    shards = Vector{UInt64}(undef, len[])
    if !isempty(ids)
        check(@ccall libdpdist.dpd_node_received(node::Ptr{dpd_node}, ids::Ptr{UInt64},
                                                 shards::Ptr{UInt64}, length(ids)::Csize_t,
                                                 len::Ref{Csize_t})::Cint)
    end
    return collect(zip(ids, shards))
end

"""A compute node's sum over an agreed client set."""
mutable struct NodeSum
    ptr::Ptr{dpd_node_sum}
    NodeSum(ptr::Ptr{dpd_node_sum}) = finalizer(free!, new(ptr))
end

function free!(x::NodeSum)
    @ccall libdpdist.dpd_node_sum_free(x.ptr::Ptr{dpd_node_sum})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_node_sum}}, x::NodeSum) = checked_ptr(x, "NodeSum")

"""
    finalize_sum(node, agreed) -> NodeSum

The node's sum over exactly the `agreed` (client id, shard id) pairs (the intersection of what
every node received, see `received`). Throws `:DPD_ERR_TOO_MANY_DROPPED` if more than T clients
are missing, `:DPD_ERR_INVALID_ARGUMENT` if a pair names another attempt than the node absorbed.
"""
function finalize_sum(node::Node, agreed::AbstractVector{<:Tuple{Integer,Integer}})
    ids = UInt64[p[1] for p in agreed]
    shards = UInt64[p[2] for p in agreed]
    out = Ref{Ptr{dpd_node_sum}}(C_NULL)
    check(@ccall libdpdist.dpd_node_finalize(node::Ptr{dpd_node}, ids::Ptr{UInt64},
                                             shards::Ptr{UInt64}, length(ids)::Csize_t,
                                             out::Ref{Ptr{dpd_node_sum}})::Cint)
    return NodeSum(out[])
end

"""The aggregator of a round: `add!` every node's sum, then `release`."""
mutable struct Aggregator
    ptr::Ptr{dpd_aggregator}
    dim::Int
    function Aggregator(cfg::RoundConfig; ledger::Union{RoundLedger,Nothing}=nothing)
        out = Ref{Ptr{dpd_aggregator}}(C_NULL)
        if ledger === nothing
            check(@ccall libdpdist.dpd_aggregator_new(cfg::Ptr{dpd_round_config},
                                                      out::Ref{Ptr{dpd_aggregator}})::Cint)
        else
            check(@ccall libdpdist.dpd_aggregator_new_admitted(ledger::Ptr{dpd_round_ledger},
                                                               cfg::Ptr{dpd_round_config},
                                                               out::Ref{Ptr{dpd_aggregator}})::Cint)
        end
        return finalizer(free!, new(out[], config_info(cfg).dim))
    end
end

function free!(x::Aggregator)
    @ccall libdpdist.dpd_aggregator_free(x.ptr::Ptr{dpd_aggregator})::Cvoid
    x.ptr = C_NULL
    return nothing
end

Base.unsafe_convert(::Type{Ptr{dpd_aggregator}}, x::Aggregator) = checked_ptr(x, "Aggregator")

function add!(agg::Aggregator, sum::NodeSum)
    check(@ccall libdpdist.dpd_aggregator_add(agg::Ptr{dpd_aggregator},
                                              sum::Ptr{dpd_node_sum})::Cint)
    return agg
end

"""
    release(agg) -> (sum, info::ReleaseInfo)

The released (noisy) sum once every node's sum was added.
"""
function release(agg::Aggregator)
    out = Vector{Cdouble}(undef, agg.dim)
    len = Ref{Csize_t}(0)
    info = Ref{dpd_release_info}()
    check(@ccall libdpdist.dpd_aggregator_release(agg::Ptr{dpd_aggregator}, out::Ptr{Cdouble},
                                                  length(out)::Csize_t, len::Ref{Csize_t},
                                                  info::Ref{dpd_release_info})::Cint)
    return (sum=out[1:len[]], info=info[])
end

"""Header of share-message bytes; malformed bytes throw `:DPD_ERR_MALFORMED`."""
function wire_inspect(bytes::Vector{UInt8})
    out = Ref{dpd_wire_header}()
    check(@ccall libdpdist.dpd_wire_inspect(bytes::Ptr{UInt8}, length(bytes)::Csize_t,
                                            out::Ref{dpd_wire_header})::Cint)
    return out[]
end

"""
    simulate_round(cfg, inputs, dropped, rng) -> (sum, info)

Runs a whole round in process: row `i` of `inputs` (N × d) is client `i-1`'s vector; the
clients in `dropped` (0-based ids) never send.
"""
function simulate_round(cfg::RoundConfig, inputs::AbstractMatrix{<:Real},
                        dropped::AbstractVector{<:Integer}=Int[], rng::Rng=Rng())
    # The C ABI wants N × d row-major, which is the memory of the d × N transpose.
    rows = convert(Matrix{Cdouble}, permutedims(inputs))
    drop = convert(Vector{UInt64}, dropped)
    d = config_info(cfg).dim
    out = Vector{Cdouble}(undef, d)
    len = Ref{Csize_t}(0)
    info = Ref{dpd_release_info}()
    check(@ccall libdpdist.dpd_simulate_round(cfg::Ptr{dpd_round_config}, rows::Ptr{Cdouble},
                                              length(rows)::Csize_t, drop::Ptr{UInt64},
                                              length(drop)::Csize_t, rng::Ptr{dpd_rng},
                                              out::Ptr{Cdouble}, length(out)::Csize_t,
                                              len::Ref{Csize_t},
                                              info::Ref{dpd_release_info})::Cint)
    return (sum=out[1:len[]], info=info[])
end

"""
    dca_simulate_round(inputs; bound, n_nodes=2, max_dropped=0, mode=:seed, sigma_total,
                       dropped=Int[], round=1, rng=Rng())
    dca_simulate_round(inputs; bound, ..., non_private=true)

One-call round over the rows of `inputs`. `bound` must come from side knowledge, never from
the private data. Exactly one of `sigma_total` > 0 and `non_private=true` (NON-PRIVATE: the
exact sum).
"""
function dca_simulate_round(inputs::AbstractMatrix{<:Real}; bound::Real, n_nodes::Integer=2,
                            max_dropped::Integer=0, mode::Symbol=:seed,
                            sigma_total::Union{Nothing,Real}=nothing, non_private::Bool=false,
                            dropped::AbstractVector{<:Integer}=Int[], round::Integer=1,
                            frac_bits::Union{Nothing,Integer}=nothing, rng::Rng=Rng())
    cfg = RoundConfig(; round, n_clients=size(inputs, 1), n_nodes, max_dropped,
                      dim=size(inputs, 2), bound, mode, noise_sigma_total=sigma_total,
                      non_private, frac_bits)
    return simulate_round(cfg, inputs, dropped, rng)
end

"""
    set_validity!(cfg, kind=:linf; truncation_delta=1e-9, data_norm=nothing) -> cfg

Issue 43's validity check, off by default (`kind=:none` turns it off again). With `:linf`, each
client clamps its noise slice into [−τ, τ] (τ such that clamping changes anything with
probability ≤ `truncation_delta`) and proves that every coordinate of its contribution lies
within ±B; a client whose proof fails is left out like a dropout and named. With `:l2` (and
`data_norm`, the bound on the L2 norm of each client's data row, value units), each client
proves that its contribution has L2 norm at most R = ⌈data_norm·2^frac_bits⌉ + τ₂ (a longer
noise slice is scaled back to τ₂, with probability ≤ `truncation_delta`); a client whose row is
longer refuses, and the round throws `DPD_ERR_INVALID_ARGUMENT` naming it. So far only
[`simulate_round_verified`](@ref) runs such a round: clients, nodes, aggregators and
`simulate_round` refuse the config. A bad setting throws and leaves `cfg` unchanged.
"""
function set_validity!(cfg::RoundConfig, kind::Symbol=:linf; truncation_delta::Real=1e-9,
                       data_norm::Union{Real,Nothing}=nothing)
    if kind === :l2
        data_norm === nothing && argument_error("kind :l2 needs `data_norm`")
        check(@ccall libdpdist.dpd_round_config_set_validity_l2(cfg::Ptr{dpd_round_config},
                                                                data_norm::Cdouble,
                                                                truncation_delta::Cdouble)::Cint)
        return cfg
    end
    k = kind === :linf ? DPD_VALIDITY_LINF :
        kind === :none ? DPD_VALIDITY_NONE :
        argument_error("kind must be :linf, :l2 or :none, got :$kind")
    check(@ccall libdpdist.dpd_round_config_set_validity(cfg::Ptr{dpd_round_config}, k::UInt32,
                                                         truncation_delta::Cdouble)::Cint)
    return cfg
end

"""
    validity_info(cfg) -> ValidityInfo

The validity mode (`kind`: `DPD_VALIDITY_NONE`, `DPD_VALIDITY_LINF` or `DPD_VALIDITY_L2`) and
its bound in grid units: `data_units`, `slice_units` (τ; τ₂ in L2), `bound_units` (B; R in L2),
and `truncation_delta` (δ_t).
"""
function validity_info(cfg::RoundConfig)
    out = Ref{dpd_validity_info}()
    check(@ccall libdpdist.dpd_round_config_validity_info(cfg::Ptr{dpd_round_config},
                                                          out::Ref{dpd_validity_info})::Cint)
    return out[]
end

"""
    verified_total_delta(epsilon, delta, truncation_delta) -> Float64

δ + (1 + e^ε)·δ_t: the δ of a verified round whose round without clamping is (ε, δ)-DP.
"""
function verified_total_delta(epsilon::Real, delta::Real, truncation_delta::Real)
    out = Ref{Cdouble}(0.0)
    check(@ccall libdpdist.dpd_verified_total_delta(epsilon::Cdouble, delta::Cdouble,
                                                    truncation_delta::Cdouble,
                                                    out::Ref{Cdouble})::Cint)
    return out[]
end

function _simulate_verified(cfg::RoundConfig, inputs::AbstractMatrix{<:Real},
                            dropped::AbstractVector{<:Integer},
                            malicious::AbstractVector{<:Integer}, rng::Rng)
    rows = convert(Matrix{Cdouble}, permutedims(inputs))
    drop = convert(Vector{UInt64}, dropped)
    cheats = convert(Vector{UInt64}, malicious)
    d = config_info(cfg).dim
    out = Vector{Cdouble}(undef, d)
    # At most T < N clients are left out of a round that releases.
    invalid = Vector{UInt64}(undef, size(inputs, 1) + 1)
    len = Ref{Csize_t}(0)
    n_invalid = Ref{Csize_t}(0)
    info = Ref{dpd_release_info}()
    dt = Ref{Cdouble}(0.0)
    if isempty(cheats)
        check(@ccall libdpdist.dpd_simulate_round_verified(
            cfg::Ptr{dpd_round_config}, rows::Ptr{Cdouble}, length(rows)::Csize_t,
            drop::Ptr{UInt64}, length(drop)::Csize_t, rng::Ptr{dpd_rng}, out::Ptr{Cdouble},
            length(out)::Csize_t, len::Ref{Csize_t}, invalid::Ptr{UInt64},
            length(invalid)::Csize_t, n_invalid::Ref{Csize_t}, info::Ref{dpd_release_info},
            dt::Ref{Cdouble})::Cint)
    else
        check(@ccall libdpdist.dpd_simulate_round_verified_testing_malicious(
            cfg::Ptr{dpd_round_config}, rows::Ptr{Cdouble}, length(rows)::Csize_t,
            drop::Ptr{UInt64}, length(drop)::Csize_t, cheats::Ptr{UInt64},
            length(cheats)::Csize_t, rng::Ptr{dpd_rng}, out::Ptr{Cdouble},
            length(out)::Csize_t, len::Ref{Csize_t}, invalid::Ptr{UInt64},
            length(invalid)::Csize_t, n_invalid::Ref{Csize_t}, info::Ref{dpd_release_info},
            dt::Ref{Cdouble})::Cint)
    end
    return (sum=out[1:len[]], info=info[], invalid=invalid[1:n_invalid[]],
            truncation_delta=dt[])
end

"""
    simulate_round_verified(cfg, inputs, dropped=Int[], rng=Rng())
        -> (sum, info, invalid, truncation_delta)

As [`simulate_round`](@ref) for a config with validity on ([`set_validity!`](@ref)): every
client's contribution is checked; `invalid` holds the 0-based ids of the clients left out.
"""
function simulate_round_verified(cfg::RoundConfig, inputs::AbstractMatrix{<:Real},
                                 dropped::AbstractVector{<:Integer}=Int[], rng::Rng=Rng())
    return _simulate_verified(cfg, inputs, dropped, Int[], rng)
end

"""
    simulate_round_verified_testing_malicious(cfg, inputs, dropped, malicious, rng=Rng())

TESTING ONLY: as [`simulate_round_verified`](@ref), with each client in `malicious` (0-based)
sending 10⁶ times its bound in coordinate 0 with the proof of its honest vector.
"""
function simulate_round_verified_testing_malicious(cfg::RoundConfig,
                                                   inputs::AbstractMatrix{<:Real},
                                                   dropped::AbstractVector{<:Integer},
                                                   malicious::AbstractVector{<:Integer},
                                                   rng::Rng=Rng())
    isempty(malicious) && argument_error("malicious must name at least one client")
    return _simulate_verified(cfg, inputs, dropped, malicious, rng)
end

"""Wire bytes of a node sum, for the hop from a compute node to the aggregator."""
function node_sum_bytes(sum::NodeSum)
    len = Ref{Csize_t}(0)
    status = @ccall libdpdist.dpd_node_sum_to_bytes(sum::Ptr{dpd_node_sum}, C_NULL::Ptr{UInt8},
                                                    0::Csize_t, len::Ref{Csize_t})::Cint
    status == DPD_ERR_BUFFER_TOO_SMALL || check(status)
    bytes = Vector{UInt8}(undef, len[])
    check(@ccall libdpdist.dpd_node_sum_to_bytes(sum::Ptr{dpd_node_sum}, bytes::Ptr{UInt8},
                                                 length(bytes)::Csize_t,
                                                 len::Ref{Csize_t})::Cint)
    return bytes
end

"""
Parses node-sum bytes of the round `cfg` (untrusted input; malformed bytes throw
`:DPD_ERR_MALFORMED`, bytes of another round or configuration `:DPD_ERR_WRONG_ROUND`).
"""
function node_sum_from_bytes(cfg::RoundConfig, bytes::Vector{UInt8})
    out = Ref{Ptr{dpd_node_sum}}(C_NULL)
    check(@ccall libdpdist.dpd_node_sum_from_bytes(cfg::Ptr{dpd_round_config},
                                                   bytes::Ptr{UInt8}, length(bytes)::Csize_t,
                                                   out::Ref{Ptr{dpd_node_sum}})::Cint)
    return NodeSum(out[])
end
