//! The round configuration all parties agree on, and its hash (the round's resource id).

use dp_noise::discrete::distributed_zcdp_rho;
use fixedpoint_shares::{RoundConfig, RoundId, RoundParams, ShareMode};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use share_sealing::NodePublicKey;

use crate::{Error, Result, hex};

/// How every output about a round without noise is marked (CLI lines, the aggregator's log and
/// its published release): such a round releases the exact sum, which is not differentially
/// private.
pub const NON_PRIVATE_MARK: &str = "NON-PRIVATE: exact sum, no noise";

/// Everything that defines a round. Its canonical JSON (this struct serialized by serde_json,
/// fields in this order, no whitespace) is hashed with SHA-256; that hash, in hex, is the
/// round's id in every URL and goes into every sealed share's associated data.
pub type RoundSpec = RoundSpecOf<Vec<String>>;

/// A round spec whose client token list is held as `L`: hex strings ([`RoundSpec`]), or
/// decoded 32-byte hashes ([`TokenHashes`], what a compute node parses the config into).
/// Both serialize to the same canonical JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundSpecOf<L> {
    /// Numeric round id (inside share messages).
    pub round: u64,
    /// N.
    pub n_clients: usize,
    /// M.
    pub n_nodes: u16,
    /// T: most clients that may be missing.
    pub max_dropped: usize,
    /// d.
    pub dim: usize,
    /// |x| <= bound for every input element.
    pub bound: f64,
    /// "full" or "seed".
    pub mode: String,
    /// σ of the released sum's noise (value units), or null for an exact sum.
    pub noise_sigma_total: Option<f64>,
    /// ℓ2 sensitivity the noise was calibrated for (charged to the aggregator's accountant as
    /// a Gaussian round); required when there is noise.
    pub l2_sensitivity: Option<f64>,
    /// Fixed-point fractional bits, or null for the most that are safe.
    pub frac_bits: Option<u32>,
    /// Unix time (ms) after which nodes accept no more shares and the aggregator closes.
    pub deadline_unix_ms: u64,
    /// Hex X25519 public key of each node, index = node index.
    pub node_keys: Vec<String>,
    /// Hex SHA-256 of each client's bearer token, index = client id.
    pub client_token_sha256: L,
}

/// The clients' token hashes, decoded from the config's hex strings as they are parsed (no
/// `String` per client); serialized back as lower-case hex, so only lower-case hex is accepted
/// (anything else would not hash to the aggregator's round id).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenHashes(pub Vec<[u8; 32]>);

impl Serialize for TokenHashes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        let mut buf = [0u8; 64];
        for h in &self.0 {
            seq.serialize_element(hex::encode_into(h, &mut buf))?;
        }
        seq.end()
    }
}

/// One token hash: 64 lower-case hex digits, decoded as it is read.
struct HashSeed;

impl<'de> serde::de::DeserializeSeed<'de> for HashSeed {
    type Value = [u8; 32];
    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<[u8; 32], D::Error> {
        struct One;
        impl serde::de::Visitor<'_> for One {
            type Value = [u8; 32];
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("64 lower-case hex digits")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<[u8; 32], E> {
                if v.bytes().any(|b| b.is_ascii_uppercase()) {
                    return Err(E::invalid_value(serde::de::Unexpected::Str(v), &self));
                }
                hex::decode_array::<32>(v)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(v), &self))
            }
        }
        d.deserialize_str(One)
    }
}

/// Reads a JSON list of token hashes, handing each decoded hash to `sink` (which may fail
/// with a message); returns how many there were.
fn visit_token_list<'de, A: serde::de::SeqAccess<'de>>(
    mut seq: A,
    mut sink: impl FnMut([u8; 32]) -> std::result::Result<(), String>,
) -> std::result::Result<usize, A::Error> {
    let mut i = 0usize;
    loop {
        match seq
            .next_element_seed(HashSeed)
            .map_err(|e| serde::de::Error::custom(format!("client {i}'s token hash: {e}")))?
        {
            Some(h) => sink(h).map_err(serde::de::Error::custom)?,
            None => return Ok(i),
        }
        i += 1;
    }
}

impl<'de> Deserialize<'de> for TokenHashes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct List;
        impl<'de> serde::de::Visitor<'de> for List {
            type Value = TokenHashes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of client token hashes")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> std::result::Result<TokenHashes, A::Error> {
                // The length is rarely known up front (JSON): the vector grows by doubling
                // and is trimmed to 32 bytes per client at the end.
                let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
                visit_token_list(seq, |h| {
                    v.push(h);
                    Ok(())
                })?;
                v.shrink_to_fit();
                Ok(TokenHashes(v))
            }
        }
        d.deserialize_seq(List)
    }
}

/// A token list that is checked (every entry 64 lower-case hex digits) and counted as it is
/// parsed, and not kept: what a compute node parses a round config into first, in O(1) memory
/// (the hashes are read again by [`spool_token_hashes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCount(pub usize);

impl<'de> Deserialize<'de> for TokenCount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Count;
        impl<'de> serde::de::Visitor<'de> for Count {
            type Value = TokenCount;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of client token hashes")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> std::result::Result<TokenCount, A::Error> {
                visit_token_list(seq, |_| Ok(())).map(TokenCount)
            }
        }
        d.deserialize_seq(Count)
    }
}

/// Reads a round config's JSON from `config` (already parsed once into
/// `RoundSpecOf<TokenCount>`, so it is known to be well formed) and writes its client token
/// hashes to `out`, 32 raw bytes each, in order; every other field is skipped. Returns their
/// number. Memory is O(1) in the number of clients.
///
/// # Errors
/// [`Error::InvalidSpec`] for JSON that is not a config, [`Error::Io`] if `out` fails.
pub fn spool_token_hashes(
    config: impl std::io::Read,
    out: &mut impl std::io::Write,
) -> Result<usize> {
    struct Top<'a, W>(&'a mut W);
    impl<'de, W: std::io::Write> serde::de::DeserializeSeed<'de> for Top<'_, W> {
        type Value = usize;
        fn deserialize<D: serde::Deserializer<'de>>(
            self,
            d: D,
        ) -> std::result::Result<usize, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de, W: std::io::Write> serde::de::Visitor<'de> for Top<'_, W> {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a round config")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<usize, A::Error> {
            let mut n = 0;
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "client_token_sha256" {
                    n = map.next_value_seed(ListSeed(&mut *self.0))?;
                } else {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
            Ok(n)
        }
    }
    struct ListSeed<'a, W>(&'a mut W);
    impl<'de, W: std::io::Write> serde::de::DeserializeSeed<'de> for ListSeed<'_, W> {
        type Value = usize;
        fn deserialize<D: serde::Deserializer<'de>>(
            self,
            d: D,
        ) -> std::result::Result<usize, D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de, W: std::io::Write> serde::de::Visitor<'de> for ListSeed<'_, W> {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of client token hashes")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            seq: A,
        ) -> std::result::Result<usize, A::Error> {
            let out = self.0;
            visit_token_list(seq, |h| {
                out.write_all(&h)
                    .map_err(|e| format!("spooling token hashes: {e}"))
            })
        }
    }
    let mut de = serde_json::Deserializer::from_reader(config);
    let n = serde::de::DeserializeSeed::deserialize(Top(out), &mut de)
        .map_err(|e| Error::InvalidSpec(format!("round config: {e}")))?;
    de.end()
        .map_err(|e| Error::InvalidSpec(format!("round config: {e}")))?;
    Ok(n)
}

/// A token list serialized from raw 32-byte hashes read from `R` (e.g. the file
/// [`spool_token_hashes`] wrote, or a node's store), as the lower-case hex strings the config
/// carried: a spec holding it hashes to the round id without the list ever being in memory.
pub struct TokenHashReader<R> {
    source: std::cell::RefCell<R>,
    n: usize,
}

impl<R: std::io::Read> TokenHashReader<R> {
    /// `n` hashes to be read from `source`.
    pub fn new(source: R, n: usize) -> Self {
        Self {
            source: std::cell::RefCell::new(source),
            n,
        }
    }
}

impl<R: std::io::Read> Serialize for TokenHashReader<R> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeSeq};
        let mut source = self
            .source
            .try_borrow_mut()
            .map_err(|_| S::Error::custom("token hash source already in use"))?;
        let mut seq = s.serialize_seq(Some(self.n))?;
        let (mut h, mut buf) = ([0u8; 32], [0u8; 64]);
        for i in 0..self.n {
            source
                .read_exact(&mut h)
                .map_err(|e| S::Error::custom(format!("reading token hash {i}: {e}")))?;
            seq.serialize_element(hex::encode_into(&h, &mut buf))?;
        }
        seq.end()
    }
}

/// A spec that passed every check, with what the parties derive from it.
#[derive(Debug, Clone)]
pub struct Round {
    /// The spec.
    pub spec: RoundSpec,
    /// SHA-256 of the canonical JSON.
    pub hash: [u8; 32],
    /// The DCA configuration.
    pub config: RoundConfig,
    /// Parsed node keys.
    pub node_keys: Vec<NodePublicKey>,
    /// Parsed token hashes.
    pub token_hashes: Vec<[u8; 32]>,
}

impl<L: Serialize> RoundSpecOf<L> {
    /// The canonical bytes that are hashed.
    pub fn canonical_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// SHA-256 of [`RoundSpecOf::canonical_json`].
    pub fn hash(&self) -> [u8; 32] {
        // Serializing these fields cannot fail (a token list read from a source can: see
        // [`RoundSpecOf::try_hash`]).
        self.try_hash().unwrap_or_default()
    }

    /// As [`RoundSpecOf::hash`], for a token list that can fail to serialize
    /// ([`TokenHashReader`]).
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] with the serializer's message.
    pub fn try_hash(&self) -> Result<[u8; 32]> {
        // Streamed into the hash: the JSON (~70 bytes per client) is never held whole.
        struct HashWriter(Sha256);
        impl std::io::Write for HashWriter {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.update(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut w = HashWriter(Sha256::new());
        serde_json::to_writer(&mut w, self)
            .map_err(|e| Error::InvalidSpec(format!("hashing the config: {e}")))?;
        Ok(w.0.finalize().into())
    }
}

impl<L> RoundSpecOf<L> {
    /// The share mode.
    pub fn share_mode(&self) -> Result<ShareMode> {
        match self.mode.as_str() {
            "full" => Ok(ShareMode::Full),
            "seed" => Ok(ShareMode::Seed),
            other => Err(Error::InvalidSpec(format!(
                "mode must be \"full\" or \"seed\", not {other:?}"
            ))),
        }
    }

    /// Checks everything but the token list's contents (`n_tokens` is its length) and derives
    /// the DCA configuration and the node keys.
    fn check(&self, n_tokens: usize) -> Result<(RoundConfig, Vec<NodePublicKey>)> {
        let params = RoundParams {
            round: RoundId(self.round),
            n_clients: self.n_clients,
            n_nodes: self.n_nodes,
            max_dropped: self.max_dropped,
            dim: self.dim,
            bound: self.bound,
            mode: self.share_mode()?,
            noise_sigma_total: self.noise_sigma_total,
            frac_bits: self.frac_bits,
        };
        let config = RoundConfig::new(&params)?;
        if self.node_keys.len() != usize::from(self.n_nodes) {
            return Err(Error::InvalidSpec(format!(
                "{} node keys for {} nodes",
                self.node_keys.len(),
                self.n_nodes
            )));
        }
        if n_tokens != self.n_clients {
            return Err(Error::InvalidSpec(format!(
                "{n_tokens} client token hashes for {} clients",
                self.n_clients
            )));
        }
        if self.noise_sigma_total.is_some()
            && !self
                .l2_sensitivity
                .is_some_and(|s| s.is_finite() && s > 0.0)
        {
            return Err(Error::InvalidSpec(
                "a noisy round needs a finite positive l2_sensitivity (what the accountant charges)".into(),
            ));
        }
        let node_keys = self
            .node_keys
            .iter()
            .enumerate()
            .map(|(k, h)| {
                hex::decode_array::<32>(h)
                    .and_then(|b| NodePublicKey::from_bytes(&b).ok())
                    .ok_or_else(|| Error::InvalidSpec(format!("node key {k} is not 64 hex digits")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((config, node_keys))
    }

    /// The same spec with another token list, and the list it had.
    fn replace_tokens<M>(self, tokens: M) -> (RoundSpecOf<M>, L) {
        let RoundSpecOf {
            round,
            n_clients,
            n_nodes,
            max_dropped,
            dim,
            bound,
            mode,
            noise_sigma_total,
            l2_sensitivity,
            frac_bits,
            deadline_unix_ms,
            node_keys,
            client_token_sha256,
        } = self;
        (
            RoundSpecOf {
                round,
                n_clients,
                n_nodes,
                max_dropped,
                dim,
                bound,
                mode,
                noise_sigma_total,
                l2_sensitivity,
                frac_bits,
                deadline_unix_ms,
                node_keys,
                client_token_sha256: tokens,
            },
            client_token_sha256,
        )
    }
}

impl RoundSpec {
    /// Checks everything and derives the DCA configuration.
    pub fn validate(self) -> Result<Round> {
        let (config, node_keys) = self.check(self.client_token_sha256.len())?;
        // Sized up front: collecting through `Result` would grow by doubling and keep up to
        // twice the 32 bytes per client for the round's lifetime.
        let mut token_hashes = Vec::with_capacity(self.client_token_sha256.len());
        for (i, h) in self.client_token_sha256.iter().enumerate() {
            token_hashes.push(hex::decode_array::<32>(h).ok_or_else(|| {
                Error::InvalidSpec(format!("client {i}'s token hash is not 64 hex digits"))
            })?);
        }
        let hash = self.hash();
        Ok(Round {
            spec: self,
            hash,
            config,
            node_keys,
            token_hashes,
        })
    }
}

impl RoundSpecOf<TokenHashes> {
    /// Checks everything and derives the DCA configuration, like [`RoundSpec::validate`]; the
    /// round's `spec` keeps no token list (`token_hashes` has them). Hashes to the same id as
    /// the [`RoundSpec`] with the same lower-case hex strings.
    pub fn validate(self) -> Result<Round> {
        let (config, node_keys) = self.check(self.client_token_sha256.0.len())?;
        let hash = self.hash();
        let (spec, tokens) = self.replace_tokens(Vec::new());
        Ok(Round {
            spec,
            hash,
            config,
            node_keys,
            token_hashes: tokens.0,
        })
    }
}

impl RoundSpecOf<TokenCount> {
    /// Checks everything and derives the DCA configuration, like [`RoundSpec::validate`], for
    /// a config whose token list was only counted: `tokens` yields its hashes, 32 raw bytes
    /// each, in order (as [`spool_token_hashes`] wrote them); they are read once, streaming,
    /// to hash the config, and not kept. The round's `spec` and `token_hashes` are empty.
    ///
    /// # Errors
    /// As [`RoundSpec::validate`]; [`Error::InvalidSpec`] if `tokens` ends early or fails.
    pub fn validate_with(self, tokens: impl std::io::Read) -> Result<Round> {
        let n = self.client_token_sha256.0;
        let (config, node_keys) = self.check(n)?;
        let (spec, _) = self.replace_tokens(Vec::new());
        let (with_reader, empty) = spec.replace_tokens(TokenHashReader::new(tokens, n));
        let hash = with_reader.try_hash()?;
        Ok(Round {
            spec: with_reader.replace_tokens(empty).0,
            hash,
            config,
            node_keys,
            token_hashes: Vec::new(),
        })
    }
}

impl Round {
    /// Frees the spec's hex token list (`spec.client_token_sha256`: a `String` per client,
    /// ~100 bytes each with the allocator's overhead); `token_hashes` keeps the 32 bytes per
    /// client that authentication needs. For a party that has already hashed and stored the
    /// canonical JSON and never serializes the spec again (a compute node).
    pub fn drop_token_list(&mut self) {
        self.spec.client_token_sha256 = Vec::new();
    }

    /// The round id in URLs: hex of the config hash.
    pub fn id(&self) -> String {
        hex::encode(&self.hash)
    }
}

/// SHA-256 of a bearer token, as listed in the spec.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The round a learner planned as `dca`, under the aggregator's round number `round`: its
/// parameters, the nodes' keys and the clients' token hashes, checked to reproduce the planned
/// configuration (a difference would silently change every share).
pub fn planned_round(
    round: u64,
    dca: &fixedpoint_shares::DcaRound<'_>,
    deadline_unix_ms: u64,
    node_keys: Vec<String>,
    client_token_sha256: Vec<String>,
) -> Result<Round> {
    let params = dca.config.params();
    let round = RoundSpec {
        round,
        n_clients: params.n_clients,
        n_nodes: params.n_nodes,
        max_dropped: params.max_dropped,
        dim: params.dim,
        bound: params.bound,
        mode: match params.mode {
            ShareMode::Full => "full",
            ShareMode::Seed => "seed",
        }
        .into(),
        noise_sigma_total: params.noise_sigma_total,
        l2_sensitivity: params.noise_sigma_total.map(|_| dca.l2_sensitivity),
        frac_bits: params.frac_bits,
        deadline_unix_ms,
        node_keys,
        client_token_sha256,
    }
    .validate()?;
    if round.config.codec().frac_bits() != dca.config.codec().frac_bits()
        || round.config.noise() != dca.config.noise()
    {
        return Err(Error::InvalidSpec(
            "the round config does not reproduce the planned DCA configuration".into(),
        ));
    }
    Ok(round)
}

/// The zCDP ρ of a noisy round's release, exactly as the in-process pipeline charges it
/// (`projection::release`): the N − T − 1 honest clients' discrete Gaussians N_ℤ(0, σ_c²) in
/// grid units protect an integer vector whose ℓ2 sensitivity in grid units is Δ₂·2^f + √d
/// (encoding rounds each coordinate by at most ½ unit, so two encodings differ by at most one
/// extra unit per coordinate), which is ρ-zCDP by Kairouz–Liu–Steinke 2021, Thm 1. `None` for
/// a round without noise (it releases an exact sum and charges nothing).
pub fn round_rho(round: &Round) -> Result<Option<f64>> {
    match round.spec.l2_sensitivity {
        Some(l2) => config_rho(&round.config, l2),
        None => Ok(None),
    }
}

/// [`round_rho`] of a round configuration whose sum has ℓ2 sensitivity `l2` (value units):
/// what a job plans its noise with, before the round exists.
pub fn config_rho(config: &fixedpoint_shares::RoundConfig, l2: f64) -> Result<Option<f64>> {
    let Some(noise) = config.noise() else {
        return Ok(None);
    };
    let honest = config.n_clients() - config.max_dropped() - 1;
    let l2_units = l2 * config.codec().scale() + (config.dim() as f64).sqrt();
    distributed_zcdp_rho(l2_units, noise.sigma_client_units, honest, config.dim())
        .map(Some)
        .map_err(Error::Budget)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use share_sealing::NodeKeyPair;

    pub(crate) fn spec(n: usize, m: u16, keys: &[NodeKeyPair]) -> RoundSpec {
        RoundSpec {
            round: 5,
            n_clients: n,
            n_nodes: m,
            max_dropped: 1,
            dim: 3,
            bound: 4.0,
            mode: "seed".into(),
            noise_sigma_total: None,
            l2_sensitivity: None,
            frac_bits: None,
            deadline_unix_ms: 0,
            node_keys: keys
                .iter()
                .map(|k| hex::encode(&k.public.to_bytes()))
                .collect(),
            client_token_sha256: (0..n)
                .map(|i| hex::encode(&token_hash(&format!("t{i}"))))
                .collect(),
        }
    }

    #[test]
    fn hash_binds_every_field_and_survives_a_json_round_trip() {
        let keys = [NodeKeyPair::generate(), NodeKeyPair::generate()];
        let s = spec(4, 2, &keys);
        let back: RoundSpec = serde_json::from_slice(&s.canonical_json()).unwrap();
        assert_eq!(back.hash(), s.hash());
        // The streamed hash is the hash of the canonical bytes.
        assert_eq!(
            s.hash(),
            <[u8; 32]>::from(Sha256::digest(s.canonical_json()))
        );
        let mut other = s.clone();
        other.bound = 4.000000001;
        assert_ne!(other.hash(), s.hash());
        let mut other = s.clone();
        other.client_token_sha256.swap(0, 1);
        assert_ne!(other.hash(), s.hash());
        assert!(s.validate().is_ok());
    }

    #[test]
    fn token_hashes_parse_and_hash_like_the_hex_strings() {
        let keys = [NodeKeyPair::generate(), NodeKeyPair::generate()];
        let s = spec(5, 2, &keys);
        let json = s.canonical_json();
        let parsed: RoundSpecOf<TokenHashes> = serde_json::from_slice(&json).unwrap();
        assert_eq!(parsed.canonical_json(), json);
        assert_eq!(parsed.hash(), s.hash());
        let (a, b) = (s.clone().validate().unwrap(), parsed.validate().unwrap());
        assert_eq!(a.hash, b.hash);
        assert_eq!(a.token_hashes, b.token_hashes);
        assert_eq!(a.token_hashes.len(), 5);
        assert!(b.spec.client_token_sha256.is_empty());
        // Hashed as sent, so a swapped order is another round.
        let mut other = s.clone();
        other.client_token_sha256.swap(1, 3);
        let parsed: RoundSpecOf<TokenHashes> =
            serde_json::from_slice(&other.canonical_json()).unwrap();
        assert_eq!(parsed.hash(), other.hash());
        assert_ne!(parsed.hash(), s.hash());
        // Too few for n_clients.
        let mut short = s.clone();
        short.client_token_sha256.pop();
        let parsed: RoundSpecOf<TokenHashes> =
            serde_json::from_slice(&short.canonical_json()).unwrap();
        assert!(matches!(parsed.validate(), Err(Error::InvalidSpec(_))));
    }

    #[test]
    fn a_counted_config_spooled_and_read_back_hashes_to_the_same_id() {
        let keys = [NodeKeyPair::generate(), NodeKeyPair::generate()];
        let s = spec(37, 2, &keys);
        // Not canonical: other field order and whitespace; the id is the canonical JSON's hash.
        let mut v: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(&s.canonical_json()).unwrap();
        let tokens = v.remove("client_token_sha256").unwrap();
        let mut reordered = serde_json::Map::new();
        reordered.insert("client_token_sha256".into(), tokens);
        reordered.extend(v);
        let json = serde_json::to_vec_pretty(&reordered).unwrap();
        let counted: RoundSpecOf<TokenCount> = serde_json::from_slice(&json).unwrap();
        assert_eq!(counted.client_token_sha256, TokenCount(37));
        let mut raw = Vec::new();
        assert_eq!(spool_token_hashes(&json[..], &mut raw).unwrap(), 37);
        let expected = s.clone().validate().unwrap();
        assert_eq!(raw, expected.token_hashes.as_flattened());
        let round = counted.clone().validate_with(&raw[..]).unwrap();
        assert_eq!(round.hash, expected.hash);
        assert!(round.token_hashes.is_empty() && round.spec.client_token_sha256.is_empty());
        // Hashes that end early are an error, not a wrong id.
        assert!(matches!(
            counted.validate_with(&raw[..raw.len() - 1]),
            Err(Error::InvalidSpec(_))
        ));
        // The counting parse refuses what the full parse refuses, naming the client.
        let mut bad = s.clone();
        bad.client_token_sha256[30] = "xyz".into();
        let e = serde_json::from_slice::<RoundSpecOf<TokenCount>>(&bad.canonical_json())
            .unwrap_err()
            .to_string();
        assert!(e.contains("client 30's token hash"), "{e}");
        assert!(spool_token_hashes(&b"[1,2]"[..], &mut Vec::new()).is_err());
        assert!(spool_token_hashes(&b"{} x"[..], &mut Vec::new()).is_err());
    }

    #[test]
    fn token_hashes_refuse_what_would_not_hash_back() {
        let keys = [NodeKeyPair::generate(), NodeKeyPair::generate()];
        for bad in [
            "xyz".to_string(),
            hex::encode(&[0xab; 32]).to_ascii_uppercase(),
            hex::encode(&[0xab; 31]),
        ] {
            let mut s = spec(4, 2, &keys);
            s.client_token_sha256[2] = bad;
            let e = serde_json::from_slice::<RoundSpecOf<TokenHashes>>(&s.canonical_json())
                .unwrap_err()
                .to_string();
            assert!(e.contains("client 2's token hash"), "{e}");
        }
        let mut s = spec(4, 2, &keys);
        let json = String::from_utf8(s.canonical_json()).unwrap();
        let not_a_list = json.replace(&format!("[\"{}\"", s.client_token_sha256[0]), "[7");
        assert!(serde_json::from_str::<RoundSpecOf<TokenHashes>>(&not_a_list).is_err());
        s.client_token_sha256.clear();
        s.n_clients = 0;
        let parsed: RoundSpecOf<TokenHashes> = serde_json::from_slice(&s.canonical_json()).unwrap();
        assert_eq!(parsed.hash(), s.hash());
    }

    #[test]
    fn invalid_specs_are_refused() {
        let keys = [NodeKeyPair::generate(), NodeKeyPair::generate()];
        let mut s = spec(4, 2, &keys);
        s.node_keys.pop();
        assert!(matches!(s.validate(), Err(Error::InvalidSpec(_))));
        let mut s = spec(4, 2, &keys);
        s.mode = "fast".into();
        assert!(s.validate().is_err());
        let mut s = spec(4, 2, &keys);
        s.noise_sigma_total = Some(1.0);
        assert!(s.validate().is_err(), "noise without sensitivity");
        let mut s = spec(4, 2, &keys);
        s.client_token_sha256[2] = "xyz".into();
        assert!(s.validate().is_err());
        assert!(serde_json::from_str::<RoundSpec>(r#"{"round":1,"extra":2}"#).is_err());
    }
}
