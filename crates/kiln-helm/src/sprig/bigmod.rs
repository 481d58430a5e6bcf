//! Fixed-width Montgomery arithmetic for the Miller-Rabin rounds of RSA key generation
//! ([`crate::sprig::keygen`]).
//!
//! Mirrors Go's `crypto/internal/fips140/bigmod/nat.go` (Go 1.26, what Helm v4.2.3 builds
//! with): `NewModulus` (−n⁻¹ mod 2⁶⁴, R mod n), `montgomeryMul` and `Exp`, whose inner rows Go
//! runs in assembly for 1024- and 2048-bit moduli (`addMulVVW1024`, `addMulVVW2048`). Here the
//! width is a const parameter (`N` 64-bit limbs: 16 for a 1024-bit candidate, 32 for a
//! 2048-bit one), so the compiler unrolls the rows; the product is CIOS (Koç, Acar and
//! Kaliski, "Analyzing and comparing Montgomery multiplication algorithms", 1996), one pass of
//! multiply and reduce per limb. Unlike Go's, nothing here is constant-time: the numbers are
//! random candidates, tested once, and the search is deterministic from the render's seed
//! anyway (ADR 0026).

/// An odd modulus `n` below R = 2^(64·N), with what Montgomery products modulo it need.
pub(crate) struct Modulus<const N: usize> {
    /// `n`, little-endian limbs.
    n: [u64; N],
    /// −n⁻¹ mod 2⁶⁴.
    n0: u64,
    /// R mod n: 1 in Montgomery form.
    one: [u64; N],
    /// n − (R mod n): n − 1 in Montgomery form.
    minus_one: [u64; N],
}

/// `a · b + c + d`, which never overflows 128 bits (`b` < 2⁶⁴). Wrapping operations, because
/// tests run unoptimized and an overflow check per limb product triples their time.
#[inline(always)]
#[allow(clippy::cast_lossless)]
fn mul_add(a: u64, b: u128, c: u64, d: u64) -> u128 {
    (a as u128)
        .wrapping_mul(b)
        .wrapping_add(c as u128)
        .wrapping_add(d as u128)
}

/// `a - b` and whether it borrowed.
fn sub<const N: usize>(a: &[u64; N], b: &[u64; N]) -> ([u64; N], bool) {
    let mut out = [0u64; N];
    let mut borrow = false;
    for i in 0..N {
        let (d, b1) = a[i].overflowing_sub(b[i]);
        let (d, b2) = d.overflowing_sub(u64::from(borrow));
        out[i] = d;
        borrow = b1 | b2;
    }
    (out, borrow)
}

impl<const N: usize> Modulus<N> {
    /// `n` from its little-endian limbs; `None` unless `n` is odd, above 1 and fits N limbs.
    pub(crate) fn new(limbs: &[u64]) -> Option<Self> {
        if limbs.len() > N || limbs.first().is_none_or(|l| l & 1 == 0) {
            return None;
        }
        let mut n = [0u64; N];
        n[..limbs.len()].copy_from_slice(limbs);
        let top = n.iter().rposition(|&l| l != 0)?;
        let bits = 64 * top + 64 - n[top].leading_zeros() as usize;
        if bits < 2 {
            return None;
        }
        // Newton's iteration doubles the correct low bits of n⁻¹ mod 2⁶⁴ each step; an odd
        // n is its own inverse modulo 8 (3 bits), so five steps reach 96.
        let mut inv = n[0];
        for _ in 0..5 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(n[0].wrapping_mul(inv)));
        }
        let mut m = Modulus {
            n,
            n0: inv.wrapping_neg(),
            one: [0; N],
            minus_one: [0; N],
        };
        // R mod n: 2^(bits−1) < n, doubled up to 2^(64·N) (once when n fills the N limbs).
        let mut r = [0u64; N];
        r[(bits - 1) / 64] = 1 << ((bits - 1) % 64);
        for _ in bits - 1..64 * N {
            r = m.double(&r);
        }
        m.minus_one = sub(&m.n, &r).0;
        m.one = r;
        Some(m)
    }

    /// −n⁻¹ mod 2⁶⁴.
    pub(crate) fn n0(&self) -> u64 {
        self.n0
    }

    /// 1 in Montgomery form.
    pub(crate) fn one(&self) -> &[u64; N] {
        &self.one
    }

    /// n − 1 in Montgomery form.
    pub(crate) fn minus_one(&self) -> &[u64; N] {
        &self.minus_one
    }

    /// `2a mod n`, for `a < n`.
    pub(crate) fn double(&self, a: &[u64; N]) -> [u64; N] {
        let mut out = [0u64; N];
        let mut carry = 0u64;
        for i in 0..N {
            out[i] = (a[i] << 1) | carry;
            carry = a[i] >> 63;
        }
        self.reduce_once(out, carry != 0)
    }

    /// `t mod n` for `t < 2n`, where `t` is `over · R + t`.
    fn reduce_once(&self, t: [u64; N], over: bool) -> [u64; N] {
        let (d, borrow) = sub(&t, &self.n);
        if over || !borrow { d } else { t }
    }

    /// The Montgomery product `a · b · R⁻¹ mod n` of `a, b < n` (CIOS). Written with `while`
    /// and `as` so that tests' unoptimized builds call no iterator or conversion per limb.
    #[allow(clippy::cast_lossless)]
    pub(crate) fn mul(&self, a: &[u64; N], b: &[u64; N]) -> [u64; N] {
        let mut t = [0u64; N];
        // The word above t's N limbs.
        let mut t_n: u64 = 0;
        let mut i = 0;
        while i < N {
            // t += a · b[i]
            let bi = b[i] as u128;
            let mut c: u64 = 0;
            let mut j = 0;
            while j < N {
                let x = mul_add(a[j], bi, t[j], c);
                t[j] = x as u64;
                c = (x >> 64) as u64;
                j += 1;
            }
            let x = t_n as u128 + c as u128;
            t_n = x as u64;
            let t_n1 = (x >> 64) as u64;
            // t = (t + m · n) / 2⁶⁴, with m chosen so the low limb becomes 0.
            let m = t[0].wrapping_mul(self.n0) as u128;
            let x = mul_add(self.n[0], m, t[0], 0);
            let mut c = (x >> 64) as u64;
            let mut j = 1;
            while j < N {
                let x = mul_add(self.n[j], m, t[j], c);
                t[j - 1] = x as u64;
                c = (x >> 64) as u64;
                j += 1;
            }
            let x = t_n as u128 + c as u128;
            t[N - 1] = x as u64;
            t_n = t_n1 + (x >> 64) as u64;
            i += 1;
        }
        // t < 2n here.
        self.reduce_once(t, t_n != 0)
    }

    /// `a` (below n) in Montgomery form: a · R mod n, through R² mod n.
    pub(crate) fn to_montgomery(&self, a: &[u64; N]) -> [u64; N] {
        self.mul(a, &self.r_squared())
    }

    /// R² mod n (R in Montgomery form), from 2^k · R by squarings: a Montgomery square of
    /// 2^a · R is 2^(2a) · R, so with 64·N = k · 2^t, k doublings of R and t squarings reach
    /// 2^(64·N) · R (for 16 limbs one doubling and ten squarings, where doubling all the way
    /// took 1024 doublings, the cost of about fifty products).
    pub(crate) fn r_squared(&self) -> [u64; N] {
        let width = 64 * N;
        let t = width.trailing_zeros();
        let mut x = self.one;
        for _ in 0..width >> t {
            x = self.double(&x);
        }
        for _ in 0..t {
            x = self.mul(&x, &x);
        }
        x
    }

    /// `base^e` in Montgomery form, `base` in Montgomery form and `e` little-endian limbs
    /// (Go's `Exp`: fixed 4-bit windows over a table of base⁰…base¹⁵).
    pub(crate) fn exp(&self, base: &[u64; N], e: &[u64]) -> [u64; N] {
        let mut table = [self.one; 16];
        for i in 1..16 {
            table[i] = self.mul(&table[i - 1], base);
        }
        let mut out = self.one;
        let mut started = false;
        for &limb in e.iter().rev() {
            for k in (0..16).rev() {
                let window = ((limb >> (4 * k)) & 15) as usize;
                if started {
                    for _ in 0..4 {
                        out = self.mul(&out, &out);
                    }
                    if window != 0 {
                        out = self.mul(&out, &table[window]);
                    }
                } else if window != 0 {
                    out = table[window];
                    started = true;
                }
            }
        }
        out
    }

    /// `2^e` in Montgomery form: square and double, since doubling costs a shift where a
    /// product with the base costs a Montgomery product (Miller-Rabin's base-2 round, which
    /// nearly every candidate that passes the sieve stops at).
    pub(crate) fn exp2(&self, e: &[u64]) -> [u64; N] {
        let mut out = self.one;
        let mut started = false;
        for &limb in e.iter().rev() {
            for k in (0..64).rev() {
                let bit = (limb >> k) & 1 == 1;
                if started {
                    out = self.mul(&out, &out);
                }
                if bit {
                    out = self.double(&out);
                    started = true;
                }
            }
        }
        out
    }

    /// `a²` in Montgomery form.
    pub(crate) fn square(&self, a: &[u64; N]) -> [u64; N] {
        self.mul(a, a)
    }
}

/// `x = d · 2^s` with d odd (x ≠ 0): (d, s).
pub(crate) fn split_twos<const N: usize>(x: &[u64; N]) -> ([u64; N], u64) {
    let s = x
        .iter()
        .enumerate()
        .find(|(_, w)| **w != 0)
        .map_or(0, |(i, w)| 64 * i as u64 + u64::from(w.trailing_zeros()));
    let (words, bits) = ((s / 64) as usize, (s % 64) as u32);
    let mut d = [0u64; N];
    for i in 0..N - words {
        d[i] = x[i + words] >> bits;
        if bits > 0 && i + words + 1 < N {
            d[i] |= x[i + words + 1] << (64 - bits);
        }
    }
    (d, s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sprig::keygen::words;
    use rsa::BigUint;

    fn limbs<const N: usize>(x: &BigUint) -> [u64; N] {
        let mut out = [0u64; N];
        for (i, d) in words(x).into_iter().enumerate() {
            out[i] = d;
        }
        out
    }

    fn big(l: &[u64]) -> BigUint {
        let bytes: Vec<u8> = l.iter().flat_map(|w| w.to_le_bytes()).collect();
        BigUint::from_bytes_le(&bytes)
    }

    /// Montgomery form, products, powers and powers of two of `Modulus<N>` for `n`, against
    /// `num-bigint-dig`'s `modpow`.
    fn agree<const N: usize>(n: &BigUint) {
        let m = Modulus::<N>::new(&words(n)).unwrap();
        let r = BigUint::from(1u32) << (64 * N);
        assert_eq!(big(m.one()), &r % n);
        assert_eq!(big(m.minus_one()), (n - 1u32) * &r % n);
        assert_eq!(big(&m.r_squared()), &r * &r % n);
        let a = n - 12_345u32;
        let b = (n >> 3) + 77u32;
        let am = m.to_montgomery(&limbs(&a));
        let bm = m.to_montgomery(&limbs(&b));
        // aR · bR · R⁻¹ = abR
        assert_eq!(big(&m.mul(&am, &bm)), &a * &b * &r % n);
        assert_eq!(big(&m.square(&am)), &a * &a * &r % n);
        let e = (n >> 1) + 5u32;
        let e_limbs = limbs::<N>(&e);
        assert_eq!(big(&m.exp(&am, &e_limbs)), a.modpow(&e, n) * &r % n);
        assert_eq!(
            big(&m.exp2(&e_limbs)),
            BigUint::from(2u32).modpow(&e, n) * &r % n
        );
        assert_eq!(big(&m.exp2(&[0])), &r % n, "2⁰ = 1");
    }

    #[test]
    fn twos_split_across_limbs() {
        assert_eq!(split_twos(&[0, 0b1011 << 3]), ([0b1011, 0], 67));
        assert_eq!(split_twos(&[12, 1]), ([(1 << 62) | 3, 0], 2));
        assert_eq!(split_twos(&[7]), ([7], 0));
    }

    /// The widths key generation uses (1024- and 2048-bit candidates), on moduli that fill
    /// the width and on one far below R.
    #[test]
    fn products_and_powers_agree_with_modpow() {
        agree::<16>(&((BigUint::from(1u32) << 1024) - 1093u32));
        agree::<16>(&BigUint::from(1_000_003u32));
        agree::<32>(&((BigUint::from(3u32) << 2046) + 1u32));
        agree::<32>(&((BigUint::from(1u32) << 1500) + 1u32));
        // 3 limbs: 192 = 3 · 2⁶, so R² takes three doublings before its squarings.
        agree::<3>(&((BigUint::from(1u32) << 190) + 35u32));
        assert!(Modulus::<16>::new(&[4]).is_none(), "even");
        assert!(Modulus::<16>::new(&[1]).is_none(), "one");
        assert!(Modulus::<1>::new(&[3, 1]).is_none(), "too wide");
    }
}
