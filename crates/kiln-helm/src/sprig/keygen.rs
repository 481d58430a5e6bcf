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
//!
//! Where the CPU has AVX-512 IFMA the base-2 rounds run on eight sieve survivors at once
//! (`sprig::bigmod_x8`), and a candidate's random-base rounds in one batch; the survivors are
//! still judged in order, so the prime found, and the generator's draws, are what the
//! one-at-a-time search finds (tested: the same keys either way, ADR 0026 amended).
//! RSA signatures (`private_op`) use the same arithmetic for their two CRT halves.

use crate::sprig::bigmod::{Modulus, split_twos};
use crate::sprig::bigmod_x8;
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rsa::BigUint;
use std::sync::atomic::{AtomicBool, Ordering};

/// The public exponent Go and Sprig use.
const E: u32 = 65_537;

/// How far the sieve looks past one random start before drawing a new one. Primes near 2^1024
/// are about 710 apart on average, so a window of 8192 rarely holds none.
const WINDOW: u64 = 1 << 13;

/// How many odd primes lie below 2^14.
const SMALL_PRIMES: usize = 1899;

/// The odd primes below 2^14: trial division's table, made by the compiler (a sieve of
/// Eratosthenes), so no process spends time on it.
static SMALL_PRIME_TABLE: [u32; SMALL_PRIMES] = {
    const LIMIT: usize = 1 << 14;
    let mut composite = [false; LIMIT];
    let mut out = [0u32; SMALL_PRIMES];
    let (mut i, mut count) = (3, 0);
    while i < LIMIT {
        if !composite[i] {
            out[count] = i as u32;
            count += 1;
            let mut j = i * i;
            while j < LIMIT {
                composite[j] = true;
                j += i;
            }
        }
        i += 2;
    }
    assert!(count == SMALL_PRIMES);
    out
};

/// The odd primes below 2^14.
fn small_primes() -> &'static [u32] {
    &SMALL_PRIME_TABLE
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

/// `x` (below 2^(64·N)) as N little-endian 64-bit words.
pub(crate) fn limbs<const N: usize>(x: &BigUint) -> [u64; N] {
    let mut out = [0u64; N];
    for (l, w) in out.iter_mut().zip(words(x)) {
        *l = w;
    }
    out
}

/// The most 32-bit halves a candidate has (a 2048-bit prime, for RSA-4096).
const HALVES: usize = 64;

/// 2^(32·k) mod p for every prime p of [`small_primes`] and k < [`HALVES`], prime by prime:
/// with them a candidate's residues are sums of products, one division per prime instead of
/// one per half (most of the sieve's time before). Made by the compiler, like the primes:
/// computed at start it took a third of a millisecond of every process that makes a key.
static HALF_POWERS: [[u16; HALVES]; SMALL_PRIMES] = {
    let mut out = [[0u16; HALVES]; SMALL_PRIMES];
    let mut i = 0;
    while i < SMALL_PRIMES {
        let p = SMALL_PRIME_TABLE[i] as u64;
        let mut power = 1 % p;
        let mut k = 0;
        while k < HALVES {
            out[i][k] = power as u16;
            power = (power << 32) % p;
            k += 1;
        }
        i += 1;
    }
    out
};

/// The table above, prime by prime.
fn half_powers() -> &'static [[u16; HALVES]] {
    &HALF_POWERS
}

/// `x mod p` for every prime p of [`small_primes`], in their order, from `x`'s little-endian
/// 64-bit words (at most [`HALVES`] / 2 of them). Each term is below 2^32 · 2^14 and there
/// are at most 64, so the sum fits 64 bits.
fn small_residues(words: &[u64], out: &mut Vec<u32>) {
    let halves: Vec<u64> = words
        .iter()
        .flat_map(|&w| [w & 0xffff_ffff, w >> 32])
        .collect();
    out.clear();
    for (&p, row) in small_primes().iter().zip(half_powers()) {
        let sum: u64 = halves
            .iter()
            .zip(row.iter())
            .map(|(&h, &q)| h * u64::from(q))
            .sum();
        out.push((sum % u64::from(p)) as u32);
    }
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

/// Which arithmetic runs the base-2 rounds: eight candidates at once (AVX-512 IFMA,
/// [`bigmod_x8`]) or one at a time ([`Modulus`]). Both give the same verdicts, so the same
/// keys; tests run both.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Lanes {
    Eight,
    One,
}

impl Lanes {
    /// Eight where the CPU has them.
    fn best() -> Self {
        if bigmod_x8::available() {
            Lanes::Eight
        } else {
            Lanes::One
        }
    }
}

/// Miller-Rabin's base-2 round for `n` (odd, above 3): whether `n` is a strong probable prime
/// to base 2. Go runs it as its first round too, since the base's doublings are cheap.
fn strong_base2<const N: usize>(n: &[u64; N]) -> bool {
    let Some(m) = Modulus::<N>::new(n) else {
        return false;
    };
    let mut n_minus_1 = *n;
    n_minus_1[0] -= 1;
    let (d, s) = split_twos(&n_minus_1);
    strong_probable_prime(&m, m.exp2(&d), s)
}

/// The rounds after base 2 (Table B.1's count for `bits`) with random bases in [2, n − 2]:
/// whether `n` (a strong probable prime to base 2) passes them all. Every base is drawn
/// before the first is tried, so the draws do not depend on which round fails.
fn random_rounds<const N: usize, const L: usize, const T: usize>(
    rng: &mut ChaCha20Rng,
    n: &[u64; N],
    bits: usize,
    lanes: Lanes,
) -> bool {
    // Also the guard that n is odd and above 1, so at least 3 and n − 3 is no underflow.
    let Some(m) = Modulus::<N>::new(n) else {
        return false;
    };
    let two = BigUint::from(2u32);
    let n_minus_3 = big(n) - 3u32;
    let bases: Vec<[u64; N]> = (1..rounds(bits))
        .map(|_| {
            loop {
                // Rejection sampling keeps the base uniform in [2, n - 2].
                let b = random_bits(rng, bits);
                if b < n_minus_3 {
                    break limbs(&(b + &two));
                }
            }
        })
        .collect();
    if lanes == Lanes::Eight {
        let at_once: Option<Vec<bool>> = bases
            .chunks(bigmod_x8::LANES)
            .map(|chunk| bigmod_x8::strong_rounds::<N, L, T>(n, chunk))
            .collect();
        if let Some(verdicts) = at_once {
            return verdicts.into_iter().all(|v| v);
        }
    }
    let mut n_minus_1 = *n;
    n_minus_1[0] -= 1;
    let (d, s) = split_twos(&n_minus_1);
    let rr = m.r_squared();
    bases
        .iter()
        .all(|base| strong_probable_prime(&m, m.exp(&m.mul(base, &rr), &d), s))
}

/// Whether `n` (odd, past trial division, at most N limbs) is a probable prime: base 2, then
/// Table B.1's rounds with random bases in [2, n - 2].
#[cfg(test)]
fn probable_prime<const N: usize>(rng: &mut ChaCha20Rng, n: &BigUint, bits: usize) -> bool {
    let n_limbs = limbs::<N>(n);
    n.bits() > 2
        && strong_base2(&n_limbs)
        && random_rounds::<N, 20, 40>(rng, &n_limbs, bits, Lanes::One)
}

/// The number whose little-endian 64-bit words are `x`.
fn big(x: &[u64]) -> BigUint {
    let bytes: Vec<u8> = x.iter().flat_map(|w| w.to_le_bytes()).collect();
    BigUint::from_bytes_le(&bytes)
}

/// The base-2 verdicts of up to eight candidates of `bits` bits: at once where `lanes` is
/// [`Lanes::Eight`], one by one otherwise.
fn base2_verdicts<const N: usize, const L: usize, const T: usize>(
    candidates: &[[u64; N]],
    bits: usize,
    lanes: Lanes,
) -> [bool; bigmod_x8::LANES] {
    if lanes == Lanes::Eight
        && let Some(v) = bigmod_x8::strong_base2::<N, L, T>(candidates, bits)
    {
        return v;
    }
    let mut out = [false; bigmod_x8::LANES];
    for (o, c) in out.iter_mut().zip(candidates) {
        *o = strong_base2(c);
    }
    out
}

/// A random prime of exactly `bits` bits (`bits` ≥ 16) whose top two bits are set (so two of
/// them multiply to a full-size modulus) and with `p - 1` prime to [`E`]; `bits` ≤ 64·N, and
/// L 52-bit limbs hold 64·N + 4 bits (for [`bigmod_x8`]).
fn prime<const N: usize, const L: usize, const T: usize>(
    rng: &mut ChaCha20Rng,
    bits: usize,
    lanes: Lanes,
) -> BigUint {
    let primes = small_primes();
    // `sieve[i]` is `start + 2i`; true once a small prime divides it.
    let slots = (WINDOW / 2) as usize;
    let mut sieve = vec![false; slots];
    let mut batches: (Vec<[u64; N]>, Vec<[u64; N]>) = (
        Vec::with_capacity(bigmod_x8::LANES),
        Vec::with_capacity(bigmod_x8::LANES),
    );
    let mut residues = Vec::with_capacity(primes.len());
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
        small_residues(&words, &mut residues);
        for (&p, &r) in primes.iter().zip(&residues) {
            let (p, r) = (u64::from(p), u64::from(r));
            strike(p, (p - r) % p);
        }
        // p ≡ 1 (mod e) would make e share a factor with p - 1.
        let r = u64::from(rem_small(&words, E));
        strike(u64::from(E), (u64::from(E) + 1 - r) % u64::from(E));
        let mut start_limbs = [0u64; N];
        start_limbs[..words.len()].copy_from_slice(&words);
        // The survivors in order, eight at a time; the first whose base-2 round and then
        // random rounds pass is the prime, as if they were tried one by one (the random
        // rounds, which draw from `rng`, run in that order).
        let mut survivors = sieve
            .iter()
            .enumerate()
            .filter(|(_, struck)| !**struck)
            .map_while(|(i, _)| plus(&start_limbs, 2 * i as u64, bits));
        loop {
            // Two batches at once: where a core is free (the other prime's search has ended,
            // or `kiln helm template` has one) the second runs beside the first; where none
            // is, it runs after, and only if the first has no lane that passed. Either way
            // the verdicts are the same, so the prime is.
            let (first, second) = (&mut batches.0, &mut batches.1);
            first.clear();
            first.extend(survivors.by_ref().take(bigmod_x8::LANES));
            second.clear();
            second.extend(survivors.by_ref().take(bigmod_x8::LANES));
            if first.is_empty() {
                break;
            }
            let passed = AtomicBool::new(false);
            let (verdicts, then) = rayon::join(
                || {
                    let v = base2_verdicts::<N, L, T>(first, bits, lanes);
                    passed.store(v.contains(&true), Ordering::Relaxed);
                    v
                },
                || {
                    (!second.is_empty() && !passed.load(Ordering::Relaxed))
                        .then(|| base2_verdicts::<N, L, T>(second, bits, lanes))
                },
            );
            for (candidate, pass) in first.iter().zip(verdicts) {
                if pass && random_rounds::<N, L, T>(rng, candidate, bits, lanes) {
                    return big(candidate);
                }
            }
            if second.is_empty() {
                break;
            }
            let verdicts = then.unwrap_or_else(|| base2_verdicts::<N, L, T>(second, bits, lanes));
            for (candidate, pass) in second.iter().zip(verdicts) {
                if pass && random_rounds::<N, L, T>(rng, candidate, bits, lanes) {
                    return big(candidate);
                }
            }
        }
    }
}

/// `x + k` when it still has `bits` bits (`x` has `bits` bits, at most 64·N).
fn plus<const N: usize>(x: &[u64; N], k: u64, bits: usize) -> Option<[u64; N]> {
    let mut out = *x;
    let mut carry = k;
    for w in out.iter_mut() {
        let (v, c) = w.overflowing_add(carry);
        *w = v;
        carry = u64::from(c);
        if carry == 0 {
            break;
        }
    }
    let top = bits - 1;
    let fits = carry == 0
        && out[top / 64] >> (top % 64) & 1 == 1
        && (top % 64 == 63 || out[top / 64] >> (top % 64 + 1) == 0)
        && out[top / 64 + 1..].iter().all(|&w| w == 0);
    fits.then_some(out)
}

/// An RSA key of `bits` bits (a multiple of 2, ≥ 512) with e = 65537, as Go's
/// `rsa.GenerateKey`: primes p and q of half the size, distinct, the key rebuilt from them
/// (`d` modulo λ(n), the CRT values precomputed). Sprig asks for 2048 and 4096 bits; the
/// Montgomery arithmetic is compiled for primes of up to 1024 and 2048 bits.
pub fn rsa_key(rng: &mut ChaCha20Rng, bits: usize) -> Result<rsa::RsaPrivateKey, String> {
    // The two primes are searched at once, and each search tests two batches at once: work
    // for every core there is (kiln_base::pool).
    kiln_base::pool::widen();
    rsa_key_on(rng, bits, Lanes::best())
}

/// [`rsa_key`] with the base-2 rounds on `lanes`.
fn rsa_key_on(
    rng: &mut ChaCha20Rng,
    bits: usize,
    lanes: Lanes,
) -> Result<rsa::RsaPrivateKey, String> {
    let find: fn(&mut ChaCha20Rng, usize, Lanes) -> BigUint = match bits {
        64..=2048 => prime::<16, 20, 40>,
        2049..=4096 => prime::<32, 40, 80>,
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
            || find(&mut ChaCha20Rng::from_seed(seeds[0]), bits / 2, lanes),
            || {
                find(
                    &mut ChaCha20Rng::from_seed(seeds[1]),
                    bits - bits / 2,
                    lanes,
                )
            },
        );
        if p == q {
            continue;
        }
        let key = rsa::RsaPrivateKey::from_p_q(p, q, BigUint::from(E))
            .map_err(|e| format!("error generating rsa key: {e}"))?;
        return Ok(key);
    }
}

/// `c^d mod n`, RSA's private-key operation, by the Chinese remainder theorem on the key's
/// two primes (RFC 8017 §5.1.2, as `rsa` does it): the two exponentiations on [`Modulus`] and,
/// where a core is free, at once. `None` for a key whose primes are not both of at most 1024 or
/// at most 2048 bits (a key read from PEM can be any size) or lacks its CRT values; the
/// caller then uses `rsa`'s own. The result is checked by raising it to e, as `rsa`'s
/// `rsa_decrypt_and_check` does.
pub(crate) fn private_op(key: &rsa::RsaPrivateKey, c: &BigUint) -> Option<BigUint> {
    use rsa::traits::{PrivateKeyParts, PublicKeyParts};
    let ([p, q], Some(dp), Some(dq), Some(qinv)) = (key.primes(), key.dp(), key.dq(), key.qinv())
    else {
        return None;
    };
    let qinv = qinv.to_biguint()?;
    if c >= key.n() {
        return None;
    }
    let bits = p.bits().max(q.bits());
    let pow: fn(&BigUint, &BigUint, &BigUint) -> Option<BigUint> = match bits {
        2..=1024 => pow_mod::<16>,
        1025..=2048 => pow_mod::<32>,
        _ => return None,
    };
    let (m1, m2) = rayon::join(|| pow(&(c % p), dp, p), || pow(&(c % q), dq, q));
    let (m1, m2) = (m1?, m2?);
    // h = qinv · (m1 − m2) mod p; m = m2 + h · q.
    let diff = (&m1 + p - (&m2 % p)) % p;
    let m = &m2 + (qinv * diff % p) * q;
    (m.modpow(key.e(), key.n()) == *c).then_some(m)
}

/// `base^e mod n` for `base` below an odd `n` of at most 64·N bits.
fn pow_mod<const N: usize>(base: &BigUint, e: &BigUint, n: &BigUint) -> Option<BigUint> {
    let m = Modulus::<N>::new(&words(n))?;
    // Out of Montgomery form: a product with 1.
    let mut one = [0u64; N];
    one[0] = 1;
    Some(big(&m.mul(
        &m.exp(&m.to_montgomery(&limbs(base)), &words(e)),
        &one,
    )))
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

    /// The base-2 verdicts of `numbers` (all of `bits` bits) eight at a time against one by
    /// one; false when this CPU has no eight lanes (nothing to compare).
    fn lanes_agree<const N: usize, const L: usize, const T: usize>(
        numbers: &[BigUint],
        bits: usize,
    ) -> bool {
        let numbers: Vec<[u64; N]> = numbers.iter().map(limbs).collect();
        for chunk in numbers.chunks(bigmod_x8::LANES) {
            let Some(eight) = bigmod_x8::strong_base2::<N, L, T>(chunk, bits) else {
                return false;
            };
            let one = base2_verdicts::<N, L, T>(chunk, bits, Lanes::One);
            assert_eq!(
                eight,
                one,
                "{:x?}",
                chunk.iter().map(|c| big(c)).collect::<Vec<_>>()
            );
        }
        true
    }

    /// Keys must not depend on the CPU: the eight-lane rounds give the one-lane verdicts, on
    /// every odd 12-bit number (among them 3277 and 4033, composites that pass base 2), on
    /// primes and on random candidates of the sizes RSA-2048 and RSA-4096 use.
    #[test]
    fn eight_lanes_and_one_give_the_same_verdicts() {
        let odd_12_bit: Vec<BigUint> = (2049u32..4096).step_by(2).map(BigUint::from).collect();
        // One limb is enough for them (and checks the arithmetic at its smallest width).
        if !lanes_agree::<1, 2, 4>(&odd_12_bit, 12) {
            eprintln!("no AVX-512 IFMA on this CPU: the eight-lane rounds are not compared");
            return;
        }
        let passes: Vec<u32> = odd_12_bit
            .iter()
            .filter(|n| strong_base2::<1>(&limbs(n)))
            .map(|n| limbs::<1>(n)[0] as u32)
            .collect();
        assert!(
            passes.contains(&3277) && passes.contains(&4033),
            "pseudoprimes"
        );
        assert!(
            passes.contains(&4093) && !passes.contains(&4095),
            "{passes:?}"
        );

        let mut rng = ChaCha20Rng::from_seed([5; 32]);
        let mut sizes = Vec::new();
        for bits in [1024, 2048] {
            let top = BigUint::from(3u32) << (bits - 2);
            let mut numbers: Vec<BigUint> = (0..7)
                .map(|_| random_bits(&mut rng, bits) | &top | BigUint::from(1u32))
                .collect();
            // Two primes among them, so some lanes pass (found on eight lanes: their
            // verdicts are compared one by one below).
            numbers.insert(3, prime::<32, 40, 80>(&mut rng, bits, Lanes::best()));
            numbers.push(prime::<32, 40, 80>(&mut rng, bits, Lanes::best()));
            sizes.push((bits, numbers));
        }
        for (bits, numbers) in &sizes {
            if *bits == 1024 {
                assert!(lanes_agree::<16, 20, 40>(numbers, *bits));
            }
            assert!(lanes_agree::<32, 40, 80>(numbers, *bits));
        }
        // The random rounds: a prime passes all of them, a composite that passes base 2
        // fails, at once as one by one.
        let p = &sizes[0].1[3];
        let bases: Vec<[u64; 16]> = (0..8)
            .map(|k| limbs(&(random_bits(&mut rng, 1000) + 2u32 + k as u32)))
            .collect();
        assert_eq!(
            bigmod_x8::strong_rounds::<16, 20, 40>(&limbs(p), &bases),
            Some(true)
        );
        let psp = limbs::<16>(&BigUint::from(3277u32));
        for base in [3u64, 5, 7] {
            let mut b = [0u64; 16];
            b[0] = base;
            assert_eq!(
                bigmod_x8::strong_rounds::<16, 20, 40>(&psp, &[b]),
                Some(false)
            );
        }
        let mut two = [0u64; 16];
        two[0] = 2;
        assert_eq!(
            bigmod_x8::strong_rounds::<16, 20, 40>(&psp, &[two]),
            Some(true)
        );
    }

    #[test]
    fn keys_do_not_depend_on_the_lanes() {
        if Lanes::best() == Lanes::One {
            eprintln!("no AVX-512 IFMA on this CPU: keys are made on one lane only");
            return;
        }
        let seed = [7; 32];
        let one = rsa_key_on(&mut ChaCha20Rng::from_seed(seed), 2048, Lanes::One).unwrap();
        let eight = rsa_key_on(&mut ChaCha20Rng::from_seed(seed), 2048, Lanes::Eight).unwrap();
        assert_eq!(one, eight);
        assert_eq!(
            rsa_key(&mut ChaCha20Rng::from_seed(seed), 2048).unwrap(),
            eight
        );
    }

    #[test]
    fn small_residues_are_remainders() {
        let mut rng = ChaCha20Rng::from_seed([3; 32]);
        let mut out = Vec::new();
        for bits in [64, 1024, 2048] {
            let x = random_bits(&mut rng, bits);
            small_residues(&words(&x), &mut out);
            assert_eq!(out.len(), small_primes().len());
            for (&p, &r) in small_primes().iter().zip(&out) {
                assert_eq!(BigUint::from(r), &x % p, "{bits} bits mod {p}");
            }
        }
        let all_ones = (BigUint::from(1u32) << 2048) - 1u32;
        small_residues(&words(&all_ones), &mut out);
        assert_eq!(BigUint::from(out[0]), &all_ones % 3u32);
        assert_eq!(BigUint::from(*out.last().unwrap()), &all_ones % 16_381u32);
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
