//! CPU per HPKE open and seal: `share_sealing::open`/`seal` (which wrap the `hpke` crate) against
//! the `hpke` crate (0.15) called directly, same suite, same key, same share length: what the
//! wrapping costs. (Until the own RFC 9180 path was retired, `--features fast-open` measured it
//! here against `hpke`; see `docs/src/results/crates-vs-own.md`.) Blocks of each alternate (hpke,
//! share-sealing, hpke, …) so that both see the same machine; the time is the thread's own CPU
//! time (`/proc/thread-self/schedstat`, nanoseconds on a CPU). Reports, never asserts.
//!
//! ```text
//! cargo run --release -p share-sealing --example open_cost -- --reps 2000 --rounds 7
//! ```

use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::X25519HkdfSha256;
use hpke::{Deserializable, OpModeR, OpModeS, Serializable};
use share_sealing::{ENC_LEN, HPKE_INFO, NodeKeyPair, SealContext, open, seal};

type Kem = X25519HkdfSha256;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().expect("a number"))
        .unwrap_or(default)
}

/// Nanoseconds this thread has spent on a CPU.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .expect("/proc/thread-self/schedstat (Linux)")
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .expect("schedstat's first field")
}

/// µs of thread CPU per call of `f`, over `reps` calls.
fn per_call_us(reps: usize, mut f: impl FnMut()) -> f64 {
    let t0 = thread_cpu_ns();
    for _ in 0..reps {
        f();
    }
    (thread_cpu_ns() - t0) as f64 / 1e3 / reps as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let len = arg("--len", 64);
    let reps = arg("--reps", 2000);
    let rounds = arg("--rounds", 9);
    let kp = NodeKeyPair::generate();
    let ctx = SealContext {
        round: 1,
        config_hash: [7; 32],
        client: 5,
        node: 1,
    };
    let aad = ctx.aad();
    let share = vec![0x42u8; len];
    let sealed = seal(&kp.public, &ctx, &share).expect("seal");
    let (enc_bytes, ct) = sealed.split_at(ENC_LEN);
    // The `hpke` crate's single-shot open and seal, called directly.
    let old_sk = <Kem as hpke::Kem>::PrivateKey::from_bytes(&kp.secret.to_bytes()).expect("sk");
    let old_pk = <Kem as hpke::Kem>::PublicKey::from_bytes(&kp.public.to_bytes()).expect("pk");
    let old_open = || {
        let enc = <Kem as hpke::Kem>::EncappedKey::from_bytes(enc_bytes).expect("enc");
        let pt = hpke::single_shot_open::<ChaCha20Poly1305, HkdfSha256, Kem>(
            &OpModeR::Base,
            &old_sk,
            &enc,
            HPKE_INFO,
            ct,
            &aad,
        )
        .expect("old open");
        assert_eq!(pt.len(), len);
    };
    let new_open = || {
        let pt = open(&kp.secret, &ctx, &sealed).expect("new open");
        assert_eq!(pt.len(), len);
    };
    let old_seal = || {
        let (enc, ct) = hpke::single_shot_seal::<ChaCha20Poly1305, HkdfSha256, Kem>(
            &OpModeS::Base,
            &old_pk,
            HPKE_INFO,
            &share,
            &aad,
        )
        .expect("old seal");
        assert_eq!(enc.to_bytes().len() + ct.len(), sealed.len());
    };
    let new_seal = || {
        let s = seal(&kp.public, &ctx, &share).expect("new seal");
        assert_eq!(s.len(), sealed.len());
    };
    // Warm-up.
    per_call_us(reps / 10 + 1, old_open);
    per_call_us(reps / 10 + 1, new_open);
    let (mut oo, mut no, mut os, mut ns) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut ro, mut rs) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let a = per_call_us(reps, old_open);
        let b = per_call_us(reps, new_open);
        let c = per_call_us(reps, old_seal);
        let d = per_call_us(reps, new_seal);
        ro.push(b / a);
        rs.push(d / c);
        oo.push(a);
        no.push(b);
        os.push(c);
        ns.push(d);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "share {len} B, {reps} calls per block, {rounds} rounds (hpke, share-sealing alternating); load {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("thread CPU µs per call, median (min–max) over rounds:");
    for (name, v) in [
        ("open, hpke 0.15", &oo),
        ("open, share-sealing", &no),
        ("seal, hpke 0.15", &os),
        ("seal, share-sealing", &ns),
    ] {
        let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = v.iter().cloned().fold(0.0, f64::max);
        println!(
            "  {name:<22} {:7.1}  ({min:.1}–{max:.1})",
            median(v.clone())
        );
    }
    println!(
        "share-sealing/hpke, median of the per-round ratios: open {:.3}, seal {:.3}",
        median(ro),
        median(rs)
    );
}
