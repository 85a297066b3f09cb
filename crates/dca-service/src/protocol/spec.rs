//! The round configuration all parties agree on, and its hash (the round's resource id).

use dp_noise::discrete::distributed_zcdp_rho;
use fixedpoint_shares::{RoundConfig, RoundId, RoundParams, ShareMode, wire};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use share_sealing::NodePublicKey;

use crate::protocol::validity::{Validity, ValiditySpec};
pub use crate::secret::token_hash;
use crate::{Error, MEDIA_ROUND_CONFIG, Result, hex};

/// How every output about a round without noise is marked (CLI lines, the aggregator's log and
/// its published release): such a round releases the exact sum, which is not differentially
/// private.
pub const NON_PRIVATE_MARK: &str = "NON-PRIVATE: exact sum, no noise";

/// Everything that defines a round but its client token list: the spec of a round config.
/// Its canonical JSON (this struct serialized by serde_json, fields in this order, no
/// whitespace) travels in the round config ([`fixedpoint_shares::wire::read_round_spec`])
/// followed by the token list in binary; the round's id is [`round_id`] of the two.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundSpec {
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
    /// Hex SHA-256 of each client's bearer token, index = client id. Never written in the
    /// JSON: it travels as the round config's binary token list. Read from JSON only so that
    /// records of older versions (which listed it inline) can still be read.
    #[serde(default, skip_serializing)]
    pub client_token_sha256: Vec<String>,
    /// The validity mode, or absent (the default: then the spec's JSON, its id and every share
    /// are as without the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<ValiditySpec>,
}

/// The round id of the round config with spec `spec_json` (its canonical JSON) and the
/// `n_clients` token hashes `tokens`: SHA-256 of the round config's bytes
/// ([`wire::encode_round_config`]), whose magic and version separate it from every other
/// hash in the system (a new envelope version is a new derivation). Streamed: the hashes are
/// read once and not kept.
///
/// # Errors
/// [`Error::InvalidSpec`] if `tokens` yields another number of hashes than `n_clients`; what
/// `tokens` fails with.
pub fn round_id(
    spec_json: &[u8],
    n_clients: usize,
    tokens: impl IntoIterator<Item = Result<[u8; 32]>>,
) -> Result<[u8; 32]> {
    let mut h = Sha256::new();
    h.update(wire::round_config_header(spec_json.len())?);
    h.update(spec_json);
    h.update(wire::token_list_header(n_clients)?);
    let mut k = 0usize;
    for t in tokens {
        h.update(t?);
        k += 1;
    }
    if k != n_clients {
        return Err(Error::InvalidSpec(format!(
            "{k} client token hashes for {n_clients} clients"
        )));
    }
    Ok(h.finalize().into())
}

/// The id a round had before round configs carried their token list in binary: SHA-256 of the
/// spec's canonical JSON with `client_token_sha256` as its last field, a list of lower-case
/// hex strings. Only for recognising rounds recorded by such versions.
pub fn legacy_json_round_id(
    spec: &RoundSpec,
    tokens: impl IntoIterator<Item = Result<[u8; 32]>>,
) -> Result<[u8; 32]> {
    let json = spec.canonical_json();
    let mut h = Sha256::new();
    h.update(&json[..json.len().saturating_sub(1)]);
    h.update(b",\"client_token_sha256\":[");
    let mut buf = [0u8; 64];
    for (i, t) in tokens.into_iter().enumerate() {
        if i > 0 {
            h.update(b",");
        }
        h.update(b"\"");
        h.update(hex::encode_into(&t?, &mut buf));
        h.update(b"\"");
    }
    h.update(b"]}");
    Ok(h.finalize().into())
}

/// Reads the client token hashes of a hex list.
fn decode_token_list(hex_list: &[String]) -> Result<Vec<[u8; 32]>> {
    // Sized up front: collecting through `Result` would grow by doubling and keep up to
    // twice the 32 bytes per client for the round's lifetime.
    let mut token_hashes = Vec::with_capacity(hex_list.len());
    for (i, h) in hex_list.iter().enumerate() {
        token_hashes.push(hex::decode_array::<32>(h).ok_or_else(|| {
            Error::InvalidSpec(format!("client {i}'s token hash is not 64 hex digits"))
        })?);
    }
    Ok(token_hashes)
}

/// A spec that passed every check, with what the parties derive from it.
#[derive(Debug, Clone)]
pub struct Round {
    /// The spec (its hex token list empty on a party that does not keep it).
    pub spec: RoundSpec,
    /// The round id: [`round_id`] of the spec and token list.
    pub hash: [u8; 32],
    /// The DCA configuration.
    pub config: RoundConfig,
    /// Parsed node keys.
    pub node_keys: Vec<NodePublicKey>,
    /// Parsed token hashes (empty on a party that keeps them elsewhere: a compute node).
    pub token_hashes: Vec<[u8; 32]>,
    /// The checked validity mode, if the spec has one.
    pub validity: Option<Validity>,
}

impl RoundSpec {
    /// The canonical JSON of the spec (without the token list): the spec part of the round
    /// config.
    pub fn canonical_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The spec of a round config, as its spec part is parsed: a spec that lists the token
    /// hashes inline is refused, since the id covers the binary list only.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] naming the cause.
    pub fn from_config_json(json: &[u8]) -> Result<Self> {
        let spec: RoundSpec = serde_json::from_slice(json)
            .map_err(|e| Error::InvalidSpec(format!("round spec: {e}")))?;
        if !spec.client_token_sha256.is_empty() {
            return Err(Error::InvalidSpec(format!(
                "round spec lists client_token_sha256 inline; a round config ({MEDIA_ROUND_CONFIG}) \
                 carries the token hashes in binary after the spec"
            )));
        }
        Ok(spec)
    }

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

    /// Checks everything but the token list and derives the DCA configuration and the node
    /// keys.
    fn check(&self) -> Result<(RoundConfig, Vec<NodePublicKey>)> {
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

    /// Checks everything and derives the DCA configuration; the round keeps the token
    /// hashes decoded (`token_hashes`) as well as the spec's hex list.
    pub fn validate(mut self) -> Result<Round> {
        let token_hashes = decode_token_list(&self.client_token_sha256)?;
        let hex_list = std::mem::take(&mut self.client_token_sha256);
        let mut round = self.validate_with_tokens(token_hashes)?;
        round.spec.client_token_sha256 = hex_list;
        Ok(round)
    }

    /// As [`RoundSpec::validate`] for a spec without its list and the token hashes decoded.
    ///
    /// # Errors
    /// As [`RoundSpec::validate`].
    pub fn validate_with_tokens(self, token_hashes: Vec<[u8; 32]>) -> Result<Round> {
        let mut round = self.validate_streamed(token_hashes.iter().copied().map(Ok))?;
        round.token_hashes = token_hashes;
        Ok(round)
    }

    /// As [`RoundSpec::validate`] for a spec without its list, whose token hashes `tokens`
    /// yields in order: they are read once, to derive the id, and not kept (the round's
    /// `token_hashes` is empty).
    ///
    /// # Errors
    /// As [`RoundSpec::validate`]; what `tokens` fails with; [`Error::InvalidSpec`] if it
    /// yields another number of hashes than the spec's clients, or the spec lists its own.
    pub fn validate_streamed(
        self,
        tokens: impl IntoIterator<Item = Result<[u8; 32]>>,
    ) -> Result<Round> {
        if !self.client_token_sha256.is_empty() {
            return Err(Error::InvalidSpec(
                "the spec lists its token hashes and is given others".into(),
            ));
        }
        let (config, node_keys) = self.check()?;
        let validity = self.validity.map(|v| v.check(&config)).transpose()?;
        let hash = round_id(&self.canonical_json(), self.n_clients, tokens)?;
        Ok(Round {
            spec: self,
            hash,
            config,
            node_keys,
            token_hashes: Vec::new(),
            validity,
        })
    }
}

impl Round {
    /// The round config as it travels: header, the spec's canonical JSON, the token list.
    /// Its SHA-256 is the round id.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for a round that does not hold its token hashes (a compute
    /// node's).
    pub fn config_bytes(&self) -> Result<Vec<u8>> {
        if self.token_hashes.len() != self.config.n_clients() {
            return Err(Error::InvalidSpec(
                "this party does not hold the round's token list".into(),
            ));
        }
        Ok(wire::encode_round_config(
            &self.spec.canonical_json(),
            &wire::TokenList(self.token_hashes.clone()),
        )?)
    }

    /// Frees the spec's hex token list (a `String` per client, ~100 bytes each with the
    /// allocator's overhead); `token_hashes` keeps the 32 bytes per client that
    /// authentication and [`Round::config_bytes`] need.
    pub fn drop_token_list(&mut self) {
        self.spec.client_token_sha256 = Vec::new();
    }

    /// The round id in URLs: hex of the config hash.
    pub fn id(&self) -> String {
        hex::encode(&self.hash)
    }
}

/// The spec and token list of the round config `bytes`, the list as hex (the spec as
/// [`RoundSpec::validate`] takes it).
///
/// # Errors
/// [`Error::InvalidSpec`] naming the cause: not a round config (e.g. JSON), a malformed
/// header, spec or token list, a list of another length than the spec's clients, bytes after it.
pub fn decode_round_config(bytes: &[u8]) -> Result<RoundSpec> {
    let config = |e: fixedpoint_shares::Error| Error::InvalidSpec(format!("round config: {e}"));
    let mut source = bytes;
    let json = wire::read_round_spec(&mut source).map_err(config)?;
    let mut spec = RoundSpec::from_config_json(&json)?;
    let mut tokens = wire::TokenListReader::open(source, spec.n_clients).map_err(config)?;
    let mut list = Vec::with_capacity(tokens.count());
    while let Some(h) = tokens.next_hash().map_err(config)? {
        list.push(hex::encode(&h));
    }
    tokens.finish().map_err(config)?;
    spec.client_token_sha256 = list;
    Ok(spec)
}

/// The round a learner planned as `dca`, under the aggregator's round number `round`: its
/// parameters, validity mode, the nodes' keys and the clients' token hashes, checked to
/// reproduce the planned configuration (a difference would silently change every share).
pub fn planned_round(
    round: u64,
    dca: &fixedpoint_shares::DcaRound<'_>,
    validity: Option<ValiditySpec>,
    deadline_unix_ms: u64,
    node_keys: Vec<String>,
    client_token_sha256: Vec<String>,
) -> Result<Round> {
    let params = dca.config.params();
    let round = RoundSpec {
        validity,
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
            validity: None,
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

    /// The spec of `tiny_config_bytes`.
    fn tiny_spec() -> RoundSpec {
        RoundSpec {
            validity: None,
            round: 1,
            n_clients: 2,
            n_nodes: 2,
            max_dropped: 0,
            dim: 1,
            bound: 1.0,
            mode: "seed".into(),
            noise_sigma_total: None,
            l2_sensitivity: None,
            frac_bits: None,
            deadline_unix_ms: 0,
            node_keys: vec!["01".repeat(32), "02".repeat(32)],
            client_token_sha256: vec!["11".repeat(32), "22".repeat(32)],
        }
    }

    /// A round config written out byte by byte (as docs/src/services/http-api.md lays it out).
    fn tiny_config_bytes() -> Vec<u8> {
        let json = format!(
            "{{\"round\":1,\"n_clients\":2,\"n_nodes\":2,\"max_dropped\":0,\"dim\":1,\
             \"bound\":1.0,\"mode\":\"seed\",\"noise_sigma_total\":null,\
             \"l2_sensitivity\":null,\"frac_bits\":null,\"deadline_unix_ms\":0,\
             \"node_keys\":[\"{}\",\"{}\"]}}",
            "01".repeat(32),
            "02".repeat(32)
        );
        assert_eq!(json.len(), 320);
        let mut v = b"DPDC\x01\x00\x00\x00\x40\x01\x00\x00\x00\x00\x00\x00".to_vec();
        v.extend_from_slice(json.as_bytes());
        v.extend_from_slice(b"DPDT\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00");
        v.extend_from_slice(&[0x11; 32]);
        v.extend_from_slice(&[0x22; 32]);
        v
    }

    /// The expected ids were computed outside this code: `sha256sum` over the bytes of
    /// [`tiny_config_bytes`] (and of the old-style JSON, and with the last byte flipped).
    #[test]
    fn a_tiny_config_has_the_id_sha256sum_gives() {
        let round = tiny_spec().validate().unwrap();
        assert_eq!(round.config_bytes().unwrap(), tiny_config_bytes());
        assert_eq!(
            round.id(),
            "df992c2451a46a51d5037616d709df0788656e1289eea76e59d017b5d4ac717e"
        );
        let back = decode_round_config(&tiny_config_bytes()).unwrap();
        assert_eq!(back, tiny_spec());
        // One byte of one token hash flipped: another round.
        let mut flipped = tiny_config_bytes();
        *flipped.last_mut().unwrap() ^= 1;
        let other = decode_round_config(&flipped).unwrap().validate().unwrap();
        assert_eq!(
            other.id(),
            "ff07fde8c4e6cff0843233854c81045fb62a16d3ef7f2ded4ac0bb7f2dad85bd"
        );
        // The id such a round had when the list was inline JSON.
        let legacy = legacy_json_round_id(&round.spec, round.token_hashes.iter().copied().map(Ok));
        assert_eq!(
            hex::encode(&legacy.unwrap()),
            "a76687d6c504f7916159428c2aee89dd5680c333bdd7f22f32ad5850269fd86c"
        );
    }

    #[test]
    fn the_id_binds_every_field_and_the_token_list_in_order() {
        let keys = [NodeKeyPair::generate(), NodeKeyPair::generate()];
        let s = spec(4, 2, &keys);
        let round = s.clone().validate().unwrap();
        let bytes = round.config_bytes().unwrap();
        assert_eq!(
            round.hash,
            <[u8; 32]>::from(Sha256::digest(&bytes)),
            "the id is the SHA-256 of the config as it travels"
        );
        let back = decode_round_config(&bytes).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.validate().unwrap().hash, round.hash);
        let mut other = s.clone();
        other.bound = 4.000000001;
        assert_ne!(other.validate().unwrap().hash, round.hash);
        let mut other = s.clone();
        other.client_token_sha256.swap(0, 1);
        assert_ne!(other.validate().unwrap().hash, round.hash);
        // Streamed hashes give the same id and keep nothing.
        let mut bare = s.clone();
        bare.client_token_sha256.clear();
        let streamed = bare
            .clone()
            .validate_streamed(round.token_hashes.iter().copied().map(Ok))
            .unwrap();
        assert_eq!(streamed.hash, round.hash);
        assert!(streamed.token_hashes.is_empty());
        // Too few or too many for n_clients.
        let e = bare
            .clone()
            .validate_streamed(round.token_hashes[..3].iter().copied().map(Ok))
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("3 client token hashes for 4 clients"),
            "{e}"
        );
        let mut short = s.clone();
        short.client_token_sha256.pop();
        assert!(matches!(short.validate(), Err(Error::InvalidSpec(_))));
        assert!(matches!(
            round.clone().spec.validate_with_tokens(vec![[0; 32]; 5]),
            Err(Error::InvalidSpec(_))
        ));
    }

    #[test]
    fn malformed_configs_are_refused_naming_the_cause() {
        let keys = [NodeKeyPair::generate(), NodeKeyPair::generate()];
        let round = spec(4, 2, &keys).validate().unwrap();
        let bytes = round.config_bytes().unwrap();
        let cause = |b: &[u8]| decode_round_config(b).unwrap_err().to_string();
        let e = cause(&bytes[..bytes.len() - 5]);
        assert!(e.contains("truncated"), "{e}");
        let e = cause(&[&bytes[..], b"x"].concat());
        assert!(e.contains("trailing bytes"), "{e}");
        // JSON with the token list inline is not a round config.
        let mut inline = spec(4, 2, &keys);
        let list = inline.client_token_sha256.clone();
        let mut json: serde_json::Value = serde_json::from_slice(&inline.canonical_json()).unwrap();
        json["client_token_sha256"] = serde_json::json!(list);
        let json = serde_json::to_vec(&json).unwrap();
        let e = cause(&json);
        assert!(e.contains("bad magic"), "{e}");
        let e = RoundSpec::from_config_json(&json).unwrap_err().to_string();
        assert!(e.contains("client_token_sha256 inline"), "{e}");
        inline.client_token_sha256.clear();
        let wrapped =
            wire::encode_round_config(&json, &wire::TokenList(round.token_hashes.clone())).unwrap();
        let e = cause(&wrapped);
        assert!(e.contains("client_token_sha256 inline"), "{e}");
        // A list of another length than the spec's clients.
        let other = wire::encode_round_config(
            &inline.canonical_json(),
            &wire::TokenList(round.token_hashes[..3].to_vec()),
        )
        .unwrap();
        let e = cause(&other);
        assert!(
            e.contains("client token list has length 3, expected 4"),
            "{e}"
        );
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
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("client 2's token hash"), "{e}");
        assert!(serde_json::from_str::<RoundSpec>(r#"{"round":1,"extra":2}"#).is_err());
    }
}
