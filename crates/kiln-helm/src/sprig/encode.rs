//! Small encodings the function library needs (base64/base32, hex, SHA-1, Adler-32, URL
//! parts, Go's `path` functions). base64 encoding and SHA-1 are the `base64` and `sha1`
//! crates; the decoders stay here, as Go's error offsets are part of the output.

use crate::template::value::Dict;
use crate::template::value::Value;

/// Standard base64 with padding (Go's `base64.StdEncoding`).
pub fn b64(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Standard base64 decoding (padding required as Go's StdEncoding).
/// Go's `base64.StdEncoding.DecodeString` (encoding/base64 `decodeQuantum`): the bytes, or
/// the offset that `illegal base64 data at input byte N` names. Newlines are skipped
/// anywhere; padding is checked as Go checks it.
pub fn b64_decode(text: &str) -> Result<Vec<u8>, usize> {
    let src = text.as_bytes();
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let skip_newlines = |mut si: usize| {
        while si < src.len() && matches!(src[si], b'\n' | b'\r') {
            si += 1;
        }
        si
    };
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    loop {
        let mut dbuf = [0u8; 4];
        let mut dlen = 4;
        let mut j = 0;
        let mut trailing = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if let Some(v) = val(c) {
                dbuf[j] = v;
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' || j < 2 {
                return Err(si - 1);
            }
            if j == 2 {
                // "==" is expected; the first "=" is read.
                si = skip_newlines(si);
                if si == src.len() {
                    return Err(src.len());
                }
                if src[si] != b'=' {
                    return Err(si - 1);
                }
                si += 1;
            }
            si = skip_newlines(si);
            if si < src.len() {
                trailing = Some(si);
            }
            dlen = j;
            break;
        }
        let v = u32::from(dbuf[0]) << 18
            | u32::from(dbuf[1]) << 12
            | u32::from(dbuf[2]) << 6
            | u32::from(dbuf[3]);
        out.extend_from_slice(&[(v >> 16) as u8, (v >> 8) as u8, v as u8][..dlen - 1]);
        if let Some(at) = trailing {
            return Err(at);
        }
        if dlen < 4 {
            return Ok(out);
        }
    }
}

/// Go's `base32.StdEncoding.DecodeString` (encoding/base32 `decode`, after stripping `\r`
/// and `\n`): the bytes, or the offset that `illegal base32 data at input byte N` names.
pub fn b32_decode(text: &str) -> Result<Vec<u8>, usize> {
    let src: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\n' | b'\r'))
        .collect();
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'2'..=b'7' => Some(c - b'2' + 26),
        _ => None,
    };
    let olen = src.len();
    let mut rest = &src[..];
    let mut out = Vec::with_capacity(olen / 8 * 5);
    let mut end = false;
    while !rest.is_empty() && !end {
        let mut dbuf = [0u8; 8];
        let mut dlen = 8;
        let mut j = 0;
        while j < 8 {
            let Some((&c, tail)) = rest.split_first() else {
                // The end, with padding missing.
                return Err(olen - j);
            };
            rest = tail;
            if c == b'=' && j >= 2 && rest.len() < 8 {
                if rest.len() + j < 7 {
                    return Err(olen);
                }
                for k in 0..7 - j {
                    if rest.len() > k && rest[k] != b'=' {
                        return Err(olen - rest.len() + k - 1);
                    }
                }
                dlen = j;
                end = true;
                // 1, 3 and 6 characters carry no whole byte (RFC 4648, section 6).
                if matches!(dlen, 1 | 3 | 6) {
                    return Err(olen - rest.len() - 1);
                }
                break;
            }
            match val(c) {
                Some(v) => dbuf[j] = v,
                None => return Err(olen - rest.len() - 1),
            }
            j += 1;
        }
        let n = dbuf.iter().fold(0u64, |acc, &v| (acc << 5) | u64::from(v));
        let bytes = [
            (n >> 32) as u8,
            (n >> 24) as u8,
            (n >> 16) as u8,
            (n >> 8) as u8,
            n as u8,
        ];
        let keep = match dlen {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            _ => 1,
        };
        out.extend_from_slice(&bytes[..keep]);
    }
    Ok(out)
}

/// Standard base32 with padding.
pub fn b32(data: &[u8]) -> String {
    const A: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let n = buf.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let chars = [2, 4, 5, 7, 8][chunk.len() - 1];
        for i in 0..8 {
            if i < chars {
                out.push(A[((n >> (35 - i * 5)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub use kiln_base::digest::hex;

/// SHA-1 (FIPS 180-4), for Sprig's `sha1sum`.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    use sha1::Digest;
    sha1::Sha1::digest(data).into()
}

pub fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16) | a
}

/// Sprig's `urlParse`: scheme, host, path, query, fragment, userinfo, opaque.
pub fn url_parse(u: &str) -> Value {
    let mut m = Dict::new();
    let (rest, fragment) = u.split_once('#').unwrap_or((u, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, rest) = match rest.split_once("://") {
        Some((s, r)) => (s, r),
        None => ("", rest),
    };
    let (authority, path) = if scheme.is_empty() {
        ("", rest.to_string())
    } else {
        match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, String::new()),
        }
    };
    let (userinfo, host) = authority.rsplit_once('@').unwrap_or(("", authority));
    // net/url's Hostname: the host without its port, an IPv6 literal without brackets.
    let hostname = match host.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or(v6, |(h, _)| h),
        None => host.split_once(':').map_or(host, |(h, _)| h),
    };
    for (k, v) in [
        ("scheme", scheme),
        ("host", host),
        ("hostname", hostname),
        ("path", &path),
        ("query", query),
        ("fragment", fragment),
        ("userinfo", userinfo),
        ("opaque", ""),
    ] {
        m.insert(k.to_string(), Value::from(v));
    }
    Value::map(m)
}

pub fn url_join(m: &Dict) -> String {
    let g = |k: &str| m.get(k).map(crate::template::fmt::s).unwrap_or_default();
    let mut out = String::new();
    if !g("scheme").is_empty() {
        out.push_str(&g("scheme"));
        out.push_str("://");
    }
    if !g("userinfo").is_empty() {
        out.push_str(&g("userinfo"));
        out.push('@');
    }
    out.push_str(&g("host"));
    out.push_str(&g("path"));
    if !g("query").is_empty() {
        out.push('?');
        out.push_str(&g("query"));
    }
    if !g("fragment").is_empty() {
        out.push('#');
        out.push_str(&g("fragment"));
    }
    out
}

/// Go's `path.Clean`.
pub fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// Go's `path.Base`.
pub fn path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

/// Go's `path.Dir`.
pub fn path_dir(p: &str) -> String {
    let dir = match p.rfind('/') {
        Some(i) => &p[..=i],
        None => "",
    };
    path_clean(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::fmt::{go_bytes, go_text, is_byte_escape};

    #[test]
    fn bytes_that_are_not_utf8_survive_as_go_strings() {
        let raw = b"\x00\x01\xff\xfeA\xc3\xa9\xe2\x82";
        let t = go_text(raw);
        assert_eq!(t.chars().filter(|&c| is_byte_escape(c)).count(), 4);
        assert!(t.contains("A\u{e9}"));
        assert_eq!(&*go_bytes(&t), raw);
        assert_eq!(b64(&go_bytes(&t)), "AAH//kHDqeKC");
        // Valid text is itself both ways.
        assert_eq!(go_text("héllo".as_bytes()), "héllo");
        assert!(matches!(go_bytes("héllo"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn encodings() {
        assert_eq!(b64(b"hello"), "aGVsbG8=");
        assert_eq!(b64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(
            hex(&sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        // Padding and the `+/` alphabet as Go's StdEncoding; SHA-1 across block boundaries.
        assert_eq!(b64(b""), "");
        assert_eq!(b64(b"a"), "YQ==");
        assert_eq!(b64(b"ab"), "YWI=");
        assert_eq!(b64(&[0xfb, 0xff]), "+/8=");
        assert_eq!(hex(&sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            hex(&sha1(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        assert_eq!(b32(b"hi"), "NBUQ====");
        assert_eq!(b32_decode("NBUQ====").unwrap(), b"hi");
        assert_eq!(b32_decode("NBSWY3DP").unwrap(), b"hello");
        assert_eq!(b32_decode("NBSW\nY3DP").unwrap(), b"hello");
        assert_eq!(path_dir("a/b/c.yaml"), "a/b");
    }

    /// Go's offsets in `illegal base64 data at input byte N` / `illegal base32 …` (each
    /// checked against Helm 4.2.3's `b64dec` and `b32dec`).
    #[test]
    fn decoding_errors_name_gos_offsets() {
        assert_eq!(b64_decode("aGVsbA==").unwrap(), b"hell");
        assert_eq!(b64_decode("aGVs\nbG8=").unwrap(), b"hello");
        assert_eq!(b64_decode(""), Ok(vec![]));
        assert_eq!(b64_decode("aGVsbG8"), Err(4));
        assert_eq!(b64_decode("aGVs!G8="), Err(4));
        assert_eq!(b64_decode("aGVsbG8=x"), Err(8));
        assert_eq!(b64_decode("aGVsbA="), Err(7));
        assert_eq!(b64_decode("a==="), Err(1));
        assert_eq!(b32_decode("nbswy3dp"), Err(0));
        assert_eq!(b32_decode("NBSWY3D"), Err(0));
        assert_eq!(b32_decode("NBUQ==="), Err(7));
        assert_eq!(b32_decode("NBUQ=x=="), Err(4));
        assert_eq!(b32_decode("NBSWY3DPEE======").unwrap(), b"hello!");
        assert_eq!(b32_decode("NBSWY3DPEE=====x"), Err(14));
        assert_eq!(b64_decode("aGVsbA=\n=").unwrap(), b"hell");
        assert_eq!(b32_decode("NB======"), Ok(b"h".to_vec()));
        assert_eq!(b32_decode("NBU====="), Err(3));
        assert_eq!(path_clean("a/../b/./c"), "b/c");
    }
}
