//! Miller-Rabin's base-2 round for eight candidates at once, one per lane of an AVX-512
//! register, on the CPUs that have AVX-512 IFMA (`vpmadd52luq`/`vpmadd52huq`: eight 52-bit
//! products per instruction); [`crate::sprig::keygen`] asks here first and falls back to the
//! one-candidate arithmetic of [`crate::sprig::bigmod`] elsewhere.
//!
//! Nearly all of an RSA key's time is the base-2 round of the candidates that pass the sieve
//! (about 41 per 1024-bit prime, each a 1024-bit exponentiation). They are independent, so
//! eight of them run side by side: each number is held "vertically", limb `j` of the eight
//! candidates in register `j`, every lane with its own modulus, and the exponentiations walk
//! the bits in lockstep (every candidate of a size has the same top bit; a lane doubles where
//! its own exponent has a one, under a mask). This is the layout of Gueron and Krasnov's
//! "Accelerating big integer arithmetic using Intel IFMA extensions" (ARITH 2016), which
//! OpenSSL's `rsaz-avx512` (`ossl_rsaz_mod_exp_avx512_x2`) uses for RSA's two CRT halves.
//!
//! Numbers are L limbs of 52 bits with R = 2^(52·L) ≥ 16·n, so the Montgomery products need no
//! final subtraction: given inputs below 4n their result is below 2n ("almost Montgomery"
//! form), and a doubled value (below 4n) goes straight into the next square. Only the few
//! values the round compares are reduced fully, lane by lane.
//!
//! The verdicts are the same as the one-candidate round's, so keys do not depend on the CPU
//! (`keygen::tests::eight_lanes_and_one_give_the_same_verdicts`, and ADR 0026 amended).

use crate::sprig::bigmod::{Modulus, split_twos};

/// Lanes per register.
pub(crate) const LANES: usize = 8;

/// Whether this CPU has what [`strong_base2`] needs. Checked once per process by std.
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512ifma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A lane's fixed values, in 52-bit limbs.
#[derive(Clone)]
struct Lane<const L: usize> {
    /// The candidate n.
    n: [u64; L],
    /// −n⁻¹ mod 2⁵².
    n0: u64,
    /// R mod n (1 in Montgomery form) and n − (R mod n) (−1).
    one: [u64; L],
    minus_one: [u64; L],
    /// 2·R mod n: the power after the exponent's top bit.
    two: [u64; L],
    /// n − 1 = d · 2^s.
    s: usize,
}

/// `x`'s value in 52-bit limbs (`x` below 2^(52·L)).
fn to_52<const N: usize, const L: usize>(x: &[u64; N]) -> [u64; L] {
    let mut out = [0u64; L];
    for (j, limb) in out.iter_mut().enumerate() {
        let bit = 52 * j;
        let (w, k) = (bit / 64, bit % 64);
        let mut v = x.get(w).map_or(0, |&x| x >> k);
        if k > 12 {
            v |= x.get(w + 1).map_or(0, |&x| x << (64 - k));
        }
        *limb = v & MASK52;
    }
    out
}

const MASK52: u64 = (1 << 52) - 1;

/// `a ≥ b` for normalized 52-bit limbs.
fn geq<const L: usize>(a: &[u64; L], b: &[u64; L]) -> bool {
    for j in (0..L).rev() {
        if a[j] != b[j] {
            return a[j] > b[j];
        }
    }
    true
}

/// `a − b` for normalized 52-bit limbs, `a ≥ b`.
fn sub<const L: usize>(a: &[u64; L], b: &[u64; L]) -> [u64; L] {
    let mut out = [0u64; L];
    let mut borrow = 0u64;
    for j in 0..L {
        let d = a[j].wrapping_sub(b[j]).wrapping_sub(borrow);
        out[j] = d & MASK52;
        borrow = d >> 63;
    }
    out
}

/// `x` in `m`'s Montgomery form (x · 2^(64·N) mod n) moved to this module's (x · 2^(52·L)
/// mod n): doubled 52·L − 64·N times.
fn widened<const N: usize, const L: usize>(m: &Modulus<N>, x: &[u64; N]) -> [u64; N] {
    let mut x = *x;
    for _ in 64 * N..52 * L {
        x = m.double(&x);
    }
    x
}

impl<const L: usize> Lane<L> {
    /// The lane of candidate `n`; `None` unless `n` is odd and above 1.
    fn new<const N: usize>(n: &[u64; N]) -> Option<Self> {
        Some(Self::of(&Modulus::<N>::new(n)?, n))
    }

    /// The lane of `n`, whose modulus `m` is.
    fn of<const N: usize>(m: &Modulus<N>, n: &[u64; N]) -> Self {
        let one = widened::<N, L>(m, m.one());
        let two = m.double(&one);
        let mut n_minus_one = *n;
        n_minus_one[0] -= 1;
        let s = split_twos(&n_minus_one).1 as usize;
        let one52 = to_52::<N, L>(&one);
        let n52 = to_52::<N, L>(n);
        Lane {
            n: n52,
            n0: m.n0() & MASK52,
            minus_one: sub(&n52, &one52),
            one: one52,
            two: to_52::<N, L>(&two),
            s,
        }
    }

    /// `x mod n` for `x` below 4n, normalized limbs.
    fn reduce(&self, x: &[u64; L]) -> [u64; L] {
        let mut x = *x;
        while geq(&x, &self.n) {
            x = sub(&x, &self.n);
        }
        x
    }
}

/// The base-2 round of Miller-Rabin for up to eight odd candidates of `bits` bits (all the same
/// size, each above 3, at most 64·N bits): `out[i]` is whether `candidates[i]` is a strong
/// probable prime to base 2. L is the count of 52-bit limbs, with 52·L ≥ 64·N + 4, and T = 2L
/// (the product's accumulators: generic constants cannot be computed from others yet). `None`
/// where the CPU lacks AVX-512 IFMA (see [`available`]).
pub(crate) fn strong_base2<const N: usize, const L: usize, const T: usize>(
    candidates: &[[u64; N]],
    bits: usize,
) -> Option<[bool; LANES]> {
    const { assert!(52 * L >= 64 * N + 4 && T == 2 * L && L <= 40) };
    if !available() || candidates.is_empty() || candidates.len() > LANES || bits < 3 {
        return None;
    }
    let mut lanes = Vec::with_capacity(LANES);
    for c in candidates {
        lanes.push(Lane::<L>::new(c)?);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let mut bit_of = [[0u64; N]; LANES];
        for (i, c) in candidates.iter().enumerate() {
            bit_of[i] = *c;
        }
        // SAFETY: `available()` checked that the CPU has AVX-512F and IFMA.
        Some(unsafe { x86::strong_base2::<N, L, T>(&lanes, &bit_of, bits) })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Miller-Rabin rounds of one candidate `n` (odd, above 3, at most 64·N bits) to up to eight
/// bases at once (each in [2, n − 2]): whether `n` is a strong probable prime to every one.
/// `None` where the CPU lacks AVX-512 IFMA. L and T as for [`strong_base2`].
pub(crate) fn strong_rounds<const N: usize, const L: usize, const T: usize>(
    n: &[u64; N],
    bases: &[[u64; N]],
) -> Option<bool> {
    const { assert!(52 * L >= 64 * N + 4 && T == 2 * L && L <= 40) };
    if !available() || bases.is_empty() || bases.len() > LANES {
        return None;
    }
    let m = Modulus::<N>::new(n)?;
    let lane = Lane::<L>::of(&m, n);
    // Each base in Montgomery form: b · 2^(64·N) mod n, then b · R.
    let mut bases_m = [[0u64; L]; LANES];
    let rr = m.r_squared();
    for (slot, base) in bases_m.iter_mut().zip(bases) {
        *slot = to_52::<N, L>(&widened::<N, L>(&m, &m.mul(base, &rr)));
    }
    let lanes: Vec<Lane<L>> = (0..bases.len()).map(|_| lane.clone()).collect();
    let mut n_minus_one = *n;
    n_minus_one[0] -= 1;
    let (d, _) = split_twos(&n_minus_one);
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `available()` checked that the CPU has AVX-512F and IFMA.
        Some(unsafe { x86::strong_rounds_of::<L, T>(&lanes, &bases_m, &d) })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{LANES, Lane, MASK52};
    use std::arch::x86_64::*;

    /// Eight numbers, limb j of lane i in `v[j]`'s 64-bit element i.
    type Vert<const L: usize> = [__m512i; L];

    /// Lane values into a register.
    #[inline(always)]
    fn gather<const L: usize>(lanes: &[Lane<L>], f: impl Fn(&Lane<L>) -> u64) -> __m512i {
        let mut v = [0u64; LANES];
        for (i, slot) in v.iter_mut().enumerate() {
            // Unused lanes repeat the first, so every lane has an odd modulus.
            *slot = f(&lanes[if i < lanes.len() { i } else { 0 }]);
        }
        // SAFETY: [u64; 8] and __m512i are both 64 plain bytes.
        unsafe { core::mem::transmute::<[u64; LANES], __m512i>(v) }
    }

    #[inline(always)]
    fn lanes_of(v: __m512i) -> [u64; LANES] {
        // SAFETY: as in `gather`.
        unsafe { core::mem::transmute::<__m512i, [u64; LANES]>(v) }
    }

    /// Carries every limb above 52 bits into the next one; the value must fit L limbs.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn normalize<const L: usize>(t: &mut Vert<L>) {
        let mask = _mm512_set1_epi64(MASK52 as i64);
        for j in 0..L - 1 {
            let carry = _mm512_srli_epi64::<52>(t[j]);
            t[j] = _mm512_and_si512(t[j], mask);
            t[j + 1] = _mm512_add_epi64(t[j + 1], carry);
        }
    }

    /// The Montgomery product a · b · R⁻¹ mod n of each lane, for a, b below 4n, normalized
    /// limbs: the result is below 2n, normalized. Operand scanning over 2L accumulators (T):
    /// per limb i of b, add a · b_i and m · n at limb i (m making limb i's low 52 bits 0) and
    /// carry limb i's excess up; the result is limbs L..2L. An accumulator gains at most four
    /// 52-bit halves per step over L + 1 steps, under 2^60 for L ≤ 40: no overflow.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn mont_mul<const L: usize, const T: usize>(
        a: &Vert<L>,
        b: &Vert<L>,
        n: &Vert<L>,
        n0: __m512i,
    ) -> Vert<L> {
        let zero = _mm512_setzero_si512();
        let mut t = [zero; T];
        // One row per limb of b, written out for every row index up to 40 (the rows past L
        // fall away at compile time): with every index a constant the accumulators live in
        // registers, where a loop over the rows kept them in memory (a load and a store per
        // multiply-add, about a fifth of the time).
        macro_rules! rows {
            ($($i:literal)*) => {$(
                if $i < L {
                    let bi = b[$i];
                    for j in 0..L {
                        t[$i + j] = _mm512_madd52lo_epu64(t[$i + j], a[j], bi);
                        t[$i + j + 1] = _mm512_madd52hi_epu64(t[$i + j + 1], a[j], bi);
                    }
                    let m = _mm512_madd52lo_epu64(zero, t[$i], n0);
                    for j in 0..L {
                        t[$i + j] = _mm512_madd52lo_epu64(t[$i + j], n[j], m);
                        t[$i + j + 1] = _mm512_madd52hi_epu64(t[$i + j + 1], n[j], m);
                    }
                    // Limb i ≡ 0 (mod 2⁵²) now: its excess moves up, and the limb is done.
                    t[$i + 1] = _mm512_add_epi64(t[$i + 1], _mm512_srli_epi64::<52>(t[$i]));
                }
            )*};
        }
        rows!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19
              20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39);
        let mut out: Vert<L> = core::array::from_fn(|j| t[L + j]);
        normalize(&mut out);
        out
    }

    /// What a lane's round has found so far.
    #[derive(Clone, Copy, PartialEq)]
    enum Verdict {
        Open,
        Prime,
        Composite,
    }

    /// Settles the open lanes that `at` selects, given `x` = y^(2^r) for the lane's
    /// y = base^d (r from `at`, `None` for a lane not yet at y): the end of Go's
    /// `millerRabinIteration`, y = ±1 or some later square = −1 for a probable prime.
    fn settle<const L: usize>(
        x: &Vert<L>,
        lanes: &[Lane<L>],
        verdict: &mut [Verdict; LANES],
        at: impl Fn(&Lane<L>) -> Option<usize>,
    ) {
        let limbs: [[u64; LANES]; L] = core::array::from_fn(|j| lanes_of(x[j]));
        for (i, lane) in lanes.iter().enumerate() {
            let Some(r) = at(lane) else { continue };
            if verdict[i] != Verdict::Open {
                continue;
            }
            let value = lane.reduce(&core::array::from_fn(|j| limbs[j][i]));
            if value == lane.minus_one || (r == 0 && value == lane.one) {
                verdict[i] = Verdict::Prime;
            } else if value == lane.one {
                verdict[i] = Verdict::Composite;
            }
        }
    }

    /// The lanes' fixed registers: n and −n⁻¹ mod 2⁵².
    #[target_feature(enable = "avx512f")]
    fn modulus<const L: usize>(lanes: &[Lane<L>]) -> (Vert<L>, __m512i) {
        (
            core::array::from_fn(|j| gather(lanes, |l| l.n[j])),
            gather(lanes, |l| l.n0),
        )
    }

    /// 2^(n−1) by the bits of n − 1 from the top, every lane at once; at each bit b at or
    /// below a lane's s the lane's power is 2^(d·2^(s−b)), which the round checks.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn strong_base2<const N: usize, const L: usize, const T: usize>(
        lanes: &[Lane<L>],
        numbers: &[[u64; N]; LANES],
        bits: usize,
    ) -> [bool; LANES] {
        let count = lanes.len();
        let (n, n0) = modulus(lanes);
        let mut x: Vert<L> = core::array::from_fn(|j| gather(lanes, |l| l.two[j]));
        let max_s = lanes.iter().map(|l| l.s).max().unwrap_or(0);
        let mut verdict = [Verdict::Open; LANES];
        // Bit bits−1 (set in every candidate) is x's start; bit 0 of n − 1 is 0.
        for b in (1..bits - 1).rev() {
            x = mont_mul::<L, T>(&x, &x, &n, n0);
            // n − 1 and n differ only in bit 0.
            let mut double: u8 = 0;
            for (i, number) in numbers.iter().enumerate().take(count) {
                double |= (((number[b / 64] >> (b % 64)) & 1) as u8) << i;
            }
            if double != 0 {
                for limb in x.iter_mut() {
                    *limb = _mm512_mask_add_epi64(*limb, double, *limb, *limb);
                }
                normalize(&mut x);
            }
            if b <= max_s {
                settle(&x, lanes, &mut verdict, |l| l.s.checked_sub(b));
            }
        }
        core::array::from_fn(|i| verdict[i] == Verdict::Prime)
    }

    /// base^d for every lane (bases in Montgomery form, d shared: one modulus in every lane),
    /// Go's fixed 4-bit windows over a table of base⁰…base¹⁵, then the round's squarings.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn strong_rounds<const L: usize, const T: usize>(
        lanes: &[Lane<L>],
        bases: &Vert<L>,
        d: &[u64],
    ) -> bool {
        let (n, n0) = modulus(lanes);
        let one: Vert<L> = core::array::from_fn(|j| gather(lanes, |l| l.one[j]));
        let mut table = [one; 16];
        for k in 1..16 {
            table[k] = mont_mul::<L, T>(&table[k - 1], bases, &n, n0);
        }
        let mut x = one;
        let mut started = false;
        for &limb in d.iter().rev() {
            for k in (0..16).rev() {
                let window = ((limb >> (4 * k)) & 15) as usize;
                if started {
                    for _ in 0..4 {
                        x = mont_mul::<L, T>(&x, &x, &n, n0);
                    }
                    if window != 0 {
                        x = mont_mul::<L, T>(&x, &table[window], &n, n0);
                    }
                } else if window != 0 {
                    x = table[window];
                    started = true;
                }
            }
        }
        let s = lanes.first().map_or(0, |l| l.s);
        let mut verdict = [Verdict::Open; LANES];
        for r in 0..s {
            if r > 0 {
                x = mont_mul::<L, T>(&x, &x, &n, n0);
            }
            settle(&x, lanes, &mut verdict, |_| Some(r));
        }
        verdict[..lanes.len()].iter().all(|v| *v == Verdict::Prime)
    }

    /// [`strong_rounds`] from plain lane values.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn strong_rounds_of<const L: usize, const T: usize>(
        lanes: &[Lane<L>],
        bases: &[[u64; L]; LANES],
        d: &[u64],
    ) -> bool {
        let v: Vert<L> = core::array::from_fn(|j| {
            let mut limb = [0u64; LANES];
            for (i, slot) in limb.iter_mut().enumerate() {
                *slot = bases[if i < lanes.len() { i } else { 0 }][j];
            }
            // SAFETY: [u64; 8] and __m512i are both 64 plain bytes.
            unsafe { core::mem::transmute::<[u64; LANES], __m512i>(limb) }
        });
        strong_rounds::<L, T>(lanes, &v, d)
    }
}
