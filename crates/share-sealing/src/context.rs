//! What a sealed share is bound to: its associated data.

/// HPKE `info` of every seal: names the protocol and its version, so keys of this protocol
/// cannot be confused with another use of the same X25519 key.
pub const HPKE_INFO: &[u8] = b"dpdist dca share v1";

/// First bytes of the associated data (domain separation from any other AAD layout).
pub const AAD_LABEL: &[u8; 8] = b"dpdshr01";

/// Length of [`SealContext::aad`]: label 8 + round 8 + config hash 32 + client 8 + node 2.
pub const AAD_LEN: usize = 8 + 8 + 32 + 8 + 2;

/// The slot a share belongs to. Every field goes into the AEAD's associated data, so a share
/// opens only in exactly this slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealContext {
    /// Round id.
    pub round: u64,
    /// SHA-256 of the round's canonical configuration (binds dimension, mode, N, T, noise, keys).
    pub config_hash: [u8; 32],
    /// Client id within the round.
    pub client: u64,
    /// Index of the compute node the share is for.
    pub node: u16,
}

impl SealContext {
    /// The associated data: `AAD_LABEL ‖ round (u64 BE) ‖ config_hash ‖ client (u64 BE) ‖ node
    /// (u16 BE)` — fixed length, so no two contexts encode to the same bytes.
    pub fn aad(&self) -> [u8; AAD_LEN] {
        let mut out = [0u8; AAD_LEN];
        out[..8].copy_from_slice(AAD_LABEL);
        out[8..16].copy_from_slice(&self.round.to_be_bytes());
        out[16..48].copy_from_slice(&self.config_hash);
        out[48..56].copy_from_slice(&self.client.to_be_bytes());
        out[56..58].copy_from_slice(&self.node.to_be_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aad_layout_is_fixed_big_endian() {
        let ctx = SealContext {
            round: 0x0102_0304_0506_0708,
            config_hash: [0xAB; 32],
            client: 0x1112_1314_1516_1718,
            node: 0x2122,
        };
        let aad = ctx.aad();
        assert_eq!(&aad[..8], b"dpdshr01");
        assert_eq!(&aad[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(aad[16..48].iter().all(|&b| b == 0xAB));
        assert_eq!(
            &aad[48..56],
            &[0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18]
        );
        assert_eq!(&aad[56..58], &[0x21, 0x22]);
    }
}
