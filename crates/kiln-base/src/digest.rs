//! Digests as kiln writes them: SHA-256 in lower-case hex (the render cache and journal, the
//! `Kiln-Spec-Digest` trailer, kustomize's name suffixes, Helm's `sha256sum`).

use sha2::{Digest, Sha256};

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    base16ct::lower::encode_string(bytes)
}

/// SHA-256 of `bytes`, lower-case hex (64 digits).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// SHA-256 of `bytes`, the 32 bytes themselves (for digests kept by the million, where 64
/// hex digits would double their size).
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// `sha256:<hex>`, the form of an OCI digest and of the `Kiln-Spec-Digest` trailer.
pub fn sha256_tagged(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_the_empty_string() {
        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(sha256_hex(b""), empty);
        assert_eq!(hex(&sha256(b"")), empty);
        assert_eq!(sha256_tagged(b""), format!("sha256:{empty}"));
        assert_eq!(hex(&[0, 0xab, 0xff]), "00abff");
    }
}
