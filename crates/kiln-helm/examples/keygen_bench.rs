//! RSA key generation (`genCA`, `genSignedCert`, `genPrivateKey "rsa"`) timed alone, for the
//! comparison with Go's in docs/BENCHMARKS.md (scripts/bench-keygen.py runs both sides).
//!
//!     cargo build --release -p kiln-helm --example keygen_bench
//!     target/release/examples/keygen_bench BITS KEYS
//!
//! Makes KEYS keys of BITS bits from the seeds 0, 1, … (as a render's generator would) and
//! prints `bits keys seconds ms_per_key`; the modulus of the last key is folded into a
//! checksum so nothing is optimized away and two builds can be compared for the same bytes.

use kiln_helm::sprig::keygen::rsa_key;
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::SeedableRng;
use rsa::traits::PublicKeyParts;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let bits: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2048);
    let keys: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(16);
    let start = Instant::now();
    let mut checksum = 0u8;
    for i in 0..keys {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&i.to_le_bytes());
        let key = match rsa_key(&mut ChaCha20Rng::from_seed(seed), bits) {
            Ok(key) => key,
            Err(e) => {
                eprintln!("keygen_bench: {e}");
                std::process::exit(1);
            }
        };
        checksum ^= key.n().to_bytes_be().iter().fold(0, |a, b| a ^ b);
    }
    let secs = start.elapsed().as_secs_f64();
    let per_key = if keys == 0 {
        0.0
    } else {
        secs * 1000.0 / keys as f64
    };
    println!("{bits} {keys} {secs:.3} {per_key:.1} {checksum:02x}");
}
