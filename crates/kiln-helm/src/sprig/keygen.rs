//! RSA key generation for Sprig's `genCA`, `genSelfSignedCert`, `genSignedCert` and
//! `genPrivateKey "rsa"`, from the render's seeded generator (ADR 0008).
//!
//! Mirrors Go's `crypto/internal/fips140/rsa/keygen.go` (Go 1.24+, what Helm v4 calls through
//! `rsa.GenerateKey`): two random primes of half the modulus size with their top two bits set,
//! each checked by trial division and then by Miller-Rabin with Go's number of rounds for the
//! size (`isPrime`: 5 for 1024-bit primes, 4 for 2048-bit ones), the key rebuilt from p and q.
//! Go draws a fresh number per candidate and trial-divides by 74 primes; here one draw is
//! followed by a sieved search upwards (as OpenSSL does), which is cheaper for the same result:
//! a sieve over the odd numbers after one random start with every prime below 2^14 (about 9 in
//! 10 odd candidates never reach an exponentiation), one base-2 round that rejects nearly every
//! composite, and the remaining rounds only on the prime found. The exponentiations, nearly all
//! of the time, run on fixed-width Montgomery arithmetic (`sprig::bigmod`, Go's
//! `bigmod`); `rsa::RsaPrivateKey::new` (`num-bigint-dig`'s `gen_prime`) is Go's older
//! algorithm, 20 Miller-Rabin rounds and a Lucas test on every prime (issue 37, ADR 0026).

use crate::sprig::bigmod::Modulus;
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rsa::BigUint;
use std::sync::OnceLock;

/// The public exponent Go and Sprig use.
const E: u32 = 65_537;

/// How far the sieve looks past one random start before drawing a new one. Primes near 2^1024
/// are about 710 apart on average, so a window of 8192 rarely holds none.
const WINDOW: u64 = 1 << 13;

/// The odd primes below 2^14 (1899 of them): trial division's table.
fn small_primes() -> &'static [u32] {
    static PRIMES: OnceLock<Vec<u32>> = OnceLock::new();
    PRIMES.get_or_init(|| {
        const LIMIT: usize = 1 << 14;
        let mut composite = vec![false; LIMIT];
        let mut out = Vec::new();
        for i in 3..LIMIT {
            if composite[i] || i % 2 == 0 {
                continue;
            }
            out.push(i as u32);
            let mut j = i * i;
            while j < LIMIT {
                composite[j] = true;
                j += i;
            }
        }
        out
    })
}

/// `x`'s little-endian 64-bit words.
pub(crate) fn words(x: &BigUint) -> Vec<u64> {
    x.to_bytes_le()
        .chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect()
}

/// `x mod p` for a small `p` (below 2^32), from `x`'s little-endian 64-bit words: 32 bits at a
/// time, so every step is one 64-bit division (a 128-bit remainder is a library call).
fn rem_small(words: &[u64], p: u32) -> u32 {
    let p = u64::from(p);
    let mut r = 0u64;
    for &w in words.iter().rev() {
        r = ((r << 32) | (w >> 32)) % p;
        r = ((r << 32) | (w & 0xffff_ffff)) % p;
    }
    r as u32
}

/// Miller-Rabin rounds for a random candidate of `bits` bits: Go's table in `isPrime`
/// (after BoringSSL's, for randomly chosen candidates).
fn rounds(bits: usize) -> usize {
    match bits {
        3747.. => 3,
        1345.. => 4,
        476.. => 5,
        400.. => 6,
        347.. => 7,
        308.. => 8,
        55.. => 27,
        _ => 34,
    }
}

/// The end of one Miller-Rabin round (Go's `millerRabinIteration`) of `n` (odd,
/// `n - 1 = d * 2^s`), given `y = base^d` in Montgomery form: false when the base witnesses
/// that `n` is composite.
fn strong_probable_prime<const N: usize>(m: &Modulus<N>, mut y: [u64; N], s: u64) -> bool {
    if y == *m.one() || y == *m.minus_one() {
        return true;
    }
    for _ in 1..s {
        y = m.square(&y);
        if y == *m.minus_one() {
            return true;
        }
        if y == *m.one() {
            return false;
        }
    }
    false
}

/// A uniformly random `bits`-bit number (`bits` > 0) below 2^bits.
fn random_bits(rng: &mut ChaCha20Rng, bits: usize) -> BigUint {
    let mut bytes = vec![0u8; bits.div_ceil(8)];
    rng.fill_bytes(&mut bytes);
    let extra = bytes.len() * 8 - bits;
    bytes[0] &= 0xff >> extra;
    BigUint::from_bytes_be(&bytes)
}

/// Whether `n` (odd, past trial division, at most N limbs) is a probable prime: base 2, then
/// Table B.1's rounds with random bases in [2, n - 2].
fn probable_prime<const N: usize>(rng: &mut ChaCha20Rng, n: &BigUint, bits: usize) -> bool {
    let Some(m) = Modulus::<N>::new(&words(n)) else {
        return false;
    };
    let n_minus_1 = n - 1u32;
    let s = n_minus_1.trailing_zeros().unwrap_or(0) as u64;
    let d = words(&(&n_minus_1 >> s as usize));
    if !strong_probable_prime(&m, m.exp2(&d), s) {
        return false;
    }
    let two = BigUint::from(2u32);
    let n_minus_3 = n - 3u32;
    for _ in 1..rounds(bits) {
        // Rejection sampling keeps the base uniform in [2, n - 2].
        let base = loop {
            let b = random_bits(rng, bits);
            if b < n_minus_3 {
                break b + &two;
            }
        };
        let mut limbs = [0u64; N];
        for (l, w) in limbs.iter_mut().zip(words(&base)) {
            *l = w;
        }
        if !strong_probable_prime(&m, m.exp(&m.to_montgomery(&limbs), &d), s) {
            return false;
        }
    }
    true
}

/// A random prime of exactly `bits` bits (`bits` ≥ 16) whose top two bits are set (so two of
/// them multiply to a full-size modulus) and with `p - 1` prime to [`E`]; `bits` ≤ 64·N.
fn prime<const N: usize>(rng: &mut ChaCha20Rng, bits: usize) -> BigUint {
    let primes = small_primes();
    // `sieve[i]` is `start + 2i`; true once a small prime divides it.
    let slots = (WINDOW / 2) as usize;
    let mut sieve = vec![false; slots];
    loop {
        let mut start = random_bits(rng, bits);
        start |= BigUint::from(3u32) << (bits - 2);
        start |= BigUint::from(1u32);
        let words = words(&start);
        sieve.fill(false);
        let mut strike = |p: u64, first: u64| {
            // `first` is the smallest offset with start + first ≡ 0 (mod p); the odd
            // numbers are every second one, so step to an even offset, then by 2p.
            let first = if first % 2 == 1 { first + p } else { first };
            let mut i = (first / 2) as usize;
            while i < slots {
                sieve[i] = true;
                i += p as usize;
            }
        };
        for &p in primes {
            let r = u64::from(rem_small(&words, p));
            strike(u64::from(p), (u64::from(p) - r) % u64::from(p));
        }
        // p ≡ 1 (mod e) would make e share a factor with p - 1.
        let r = u64::from(rem_small(&words, E));
        strike(u64::from(E), (u64::from(E) + 1 - r) % u64::from(E));
        for (i, _) in sieve.iter().enumerate().filter(|(_, struck)| !**struck) {
            let candidate = &start + 2 * i as u64;
            if candidate.bits() != bits {
                break;
            }
            if probable_prime::<N>(rng, &candidate, bits) {
                return candidate;
            }
        }
    }
}

/// An RSA key of `bits` bits (a multiple of 2, ≥ 512) with e = 65537, as Go's
/// `rsa.GenerateKey`: primes p and q of half the size, distinct, the key rebuilt from them
/// (`d` modulo λ(n), the CRT values precomputed). Sprig asks for 2048 and 4096 bits; the
/// Montgomery arithmetic is compiled for primes of up to 1024 and 2048 bits.
pub fn rsa_key(rng: &mut ChaCha20Rng, bits: usize) -> Result<rsa::RsaPrivateKey, String> {
    let find: fn(&mut ChaCha20Rng, usize) -> BigUint = match bits {
        64..=2048 => prime::<16>,
        2049..=4096 => prime::<32>,
        _ => {
            return Err(format!(
                "kiln generates RSA keys of 64 to 4096 bits, not {bits}"
            ));
        }
    };
    loop {
        // p and q are searched with generators of their own, seeded from this one: the two
        // searches run at once where a core is free (a key's time about halved on two
        // cores), and give the same primes whichever thread runs which, or one runs both.
        let mut seeds = [[0u8; 32]; 2];
        for s in &mut seeds {
            rng.fill_bytes(s);
        }
        let (p, q) = rayon::join(
            || find(&mut ChaCha20Rng::from_seed(seeds[0]), bits / 2),
            || find(&mut ChaCha20Rng::from_seed(seeds[1]), bits - bits / 2),
        );
        if p == q {
            continue;
        }
        let key = rsa::RsaPrivateKey::from_p_q(p, q, BigUint::from(E))
            .map_err(|e| format!("error generating rsa key: {e}"))?;
        return Ok(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::traits::{PrivateKeyParts, PublicKeyParts};

    #[test]
    fn small_primes_are_the_odd_primes_below_2_pow_14() {
        let p = small_primes();
        assert_eq!(&p[..6], &[3, 5, 7, 11, 13, 17]);
        assert_eq!(p.len(), 1899);
        assert_eq!(*p.last().unwrap(), 16_381);
    }

    #[test]
    fn miller_rabin_tells_primes_from_composites() {
        let mut rng = ChaCha20Rng::from_seed([9; 32]);
        // 2^127 - 1 (a Mersenne prime), and a Carmichael number that fools Fermat's test.
        let m127 = (BigUint::from(1u32) << 127) - 1u32;
        assert!(probable_prime::<16>(&mut rng, &m127, 127));
        let carmichael = BigUint::from(41_041u32);
        assert!(!probable_prime::<16>(&mut rng, &carmichael, 16));
        let composite = &m127 * &m127;
        assert!(!probable_prime::<16>(&mut rng, &composite, 254));
    }

    #[test]
    fn keys_are_valid_and_deterministic_per_seed() {
        let make = |seed: u8| rsa_key(&mut ChaCha20Rng::from_seed([seed; 32]), 2048).unwrap();
        let (a, b, c) = (make(1), make(1), make(2));
        assert_eq!(a, b, "the same seed gives the same key");
        // p and q are searched at once where a thread is free: one thread or two, the
        // same key.
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            assert_eq!(pool.install(|| make(1)), a, "{threads} thread(s)");
        }
        assert_ne!(a.n(), c.n());
        assert_eq!(a.n().bits(), 2048);
        assert_eq!(a.e(), &BigUint::from(E));
        a.validate().unwrap();
        let [p, q] = a.primes() else {
            panic!("two primes")
        };
        assert_eq!((p.bits(), q.bits()), (1024, 1024));
        // The first bytes of the modulus pin the algorithm: a change to the sieve, the
        // rounds or the draws changes every key kiln renders.
        assert_eq!(
            &a.n().to_bytes_be()[..8],
            &[0xbb, 0xa3, 0x19, 0xca, 0x48, 0x33, 0xd3, 0x45],
            "{:02x?}",
            &a.n().to_bytes_be()[..8]
        );
    }
}
