//! Sprig's crypto functions (`genCA`, `genSelfSignedCert`, `genSignedCert`, `genPrivateKey`,
//! `bcrypt`, `htpasswd`, `derivePassword`, `encryptAES`, …) made deterministic.
//!
//! Certificates and keys are real: after Sprig v3.3.0 `crypto.go` (`getBaseCertTemplate`,
//! `generateCertificateAuthorityWithKeyInternal`, `getCertAndKey`, `pemBlockForKey`,
//! `parsePrivateKeyPEM`), `genCA`/`genSelfSignedCert`/`genSignedCert` make an RSA-2048 key
//! and an X.509 v3 certificate (CN, 128-bit serial, DNS and IP SANs, key usage
//! digitalSignature + keyEncipherment (+ keyCertSign for a CA), extended key usage server +
//! client auth, basic constraints), signed with SHA-256 (`genSignedCert` by the given CA).
//! Keys come from a ChaCha20 generator seeded from the render's [`Seed`] (chart, release,
//! values), so the same input gives the same bytes. Two deliberate differences from Helm,
//! both in docs/adr/0008-deterministic-x509.md and tests/helm/DIVERGENCES.md: the validity
//! runs from kiln's fixed clock (2000-01-01) to 9999-12-31 (a render cannot know today), and
//! anyone with the chart inputs can re-derive the private key.
//! `bcrypt`, `htpasswd`, `derivePassword`, `encryptAES` remain shaped placeholders.

use super::*;
use crate::sprig::Seed;
use crate::sprig::encode::b64;
use crate::template::exec::Funcs;
use crate::template::fmt::s;
use crate::template::value::{Cx, Marshaled, Object, Value};
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::SeedableRng;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyIdMethod, KeyUsagePurpose, PublicKeyData, SanType, SerialNumber, SignatureAlgorithm,
    SigningKey,
};
use std::cell::RefCell;
use std::rc::Rc;

/// `.Cert` and `.Key` of a generated certificate (Sprig's `certificate` struct).
struct CertObj {
    cert: String,
    key: String,
}

impl Object for CertObj {
    fn type_name(&self) -> &str {
        "sprig.certificate"
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Cert" => Some(Value::from(self.cert.clone())),
            "Key" => Some(Value::from(self.key.clone())),
            _ => None,
        }
    }
    fn call(&self, _: &Cx, _: &str, _: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    fn display(&self) -> String {
        format!("{{{} {}}}", self.cert, self.key)
    }
    fn marshal(&self) -> Option<Marshaled> {
        Some(Marshaled::Fields(vec![
            ("Cert", Value::from(self.cert.clone())),
            ("Key", Value::from(self.key.clone())),
        ]))
    }
}

/// PEM as Go's `pem.Encode` writes it: 64-character base64 lines.
fn pem(label: &str, der: &[u8]) -> String {
    let body = b64(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The first PEM block of `text` (Go's `pem.Decode`): its label and bytes.
fn pem_decode(text: &str) -> Option<(String, Vec<u8>)> {
    let start = text.find("-----BEGIN ")?;
    let rest = &text[start + 11..];
    let label_end = rest.find("-----")?;
    let label = &rest[..label_end];
    let body = &rest[label_end + 5..];
    let end = body.find(&format!("-----END {label}-----"))?;
    let b64: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
    Some((
        label.to_string(),
        crate::sprig::encode::b64_decode(&b64).ok()?,
    ))
}

/// A private key of a type Sprig generates or reads.
enum Key {
    Rsa(Box<rsa::RsaPrivateKey>),
    Ec(p256::ecdsa::SigningKey),
    Ed(ed25519_dalek::SigningKey),
}

/// A generator for one key, seeded from the render's generator.
fn rng(seed: &RefCell<Seed>) -> ChaCha20Rng {
    let mut r = seed.borrow_mut();
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&r.next_u64().to_le_bytes());
    }
    ChaCha20Rng::from_seed(bytes)
}

impl Key {
    fn rsa(seed: &RefCell<Seed>, bits: usize) -> Result<Key, String> {
        crate::sprig::keygen::rsa_key(&mut rng(seed), bits).map(|k| Key::Rsa(Box::new(k)))
    }

    fn ecdsa(seed: &RefCell<Seed>) -> Key {
        Key::Ec(p256::ecdsa::SigningKey::random(&mut rng(seed)))
    }

    fn ed25519(seed: &RefCell<Seed>) -> Key {
        use rand_chacha::rand_core::RngCore;
        let mut secret = [0u8; 32];
        rng(seed).fill_bytes(&mut secret);
        Key::Ed(ed25519_dalek::SigningKey::from_bytes(&secret))
    }

    /// Sprig's `parsePrivateKeyPEM`.
    fn from_pem(text: &str) -> Result<Key, String> {
        use p256::pkcs8::DecodePrivateKey;
        use rsa::pkcs1::DecodeRsaPrivateKey;
        let (label, der) = pem_decode(text).ok_or("no PEM data in input")?;
        match label.as_str() {
            "PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs8_der(&der)
                .map(|k| Key::Rsa(Box::new(k)))
                .or_else(|_| p256::ecdsa::SigningKey::from_pkcs8_der(&der).map(Key::Ec))
                .or_else(|_| ed25519_dalek::SigningKey::from_pkcs8_der(&der).map(Key::Ed))
                .map_err(|e| format!("decoding PEM as PKCS#8: {e}")),
            "RSA PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs1_der(&der)
                .map(|k| Key::Rsa(Box::new(k)))
                .map_err(|e| e.to_string()),
            "EC PRIVATE KEY" => p256::SecretKey::from_sec1_der(&der)
                .map(|k| Key::Ec(k.into()))
                .map_err(|e| e.to_string()),
            l if l.ends_with(" PRIVATE KEY") => Err(format!("invalid private key type {l}")),
            l => Err(format!("no private key data in PEM block of type {l}")),
        }
    }

    /// Sprig's `pemBlockForKey`: PKCS#1 for RSA, SEC 1 for ECDSA, PKCS#8 otherwise.
    fn to_pem(&self) -> Result<String, String> {
        use p256::pkcs8::EncodePrivateKey;
        use rsa::pkcs1::EncodeRsaPrivateKey;
        match self {
            Key::Rsa(k) => k
                .to_pkcs1_der()
                .map(|d| pem("RSA PRIVATE KEY", d.as_bytes()))
                .map_err(|e| e.to_string()),
            Key::Ec(k) => {
                // With the named curve, as Go's MarshalECPrivateKey writes it (and its
                // parser requires); the crate's own `to_sec1_der` leaves it out.
                use sec1::der::Encode;
                let secret = k.to_bytes();
                let point = k.verifying_key().to_encoded_point(false);
                sec1::EcPrivateKey {
                    private_key: &secret,
                    parameters: Some(sec1::EcParameters::NamedCurve(
                        sec1::der::asn1::ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7"),
                    )),
                    public_key: Some(point.as_bytes()),
                }
                .to_der()
                .map(|d| pem("EC PRIVATE KEY", &d))
                .map_err(|e| e.to_string())
            }
            Key::Ed(k) => {
                // PKCS#8 v1 (no public key), as Go's MarshalPKCS8PrivateKey writes it.
                let pair = ed25519_dalek::pkcs8::KeypairBytes {
                    secret_key: k.to_bytes(),
                    public_key: None,
                };
                pair.to_pkcs8_der()
                    .map(|d| pem("PRIVATE KEY", d.as_bytes()))
                    .map_err(|e| e.to_string())
            }
        }
    }

    fn signer(self) -> Result<Signer, String> {
        use rsa::pkcs1::EncodeRsaPublicKey;
        let (public, alg): (Vec<u8>, &'static SignatureAlgorithm) = match &self {
            Key::Rsa(k) => (
                k.to_public_key()
                    .to_pkcs1_der()
                    .map_err(|e| e.to_string())?
                    .into_vec(),
                &rcgen::PKCS_RSA_SHA256,
            ),
            Key::Ec(k) => (
                k.verifying_key()
                    .to_encoded_point(false)
                    .as_bytes()
                    .to_vec(),
                &rcgen::PKCS_ECDSA_P256_SHA256,
            ),
            Key::Ed(k) => (k.verifying_key().to_bytes().to_vec(), &rcgen::PKCS_ED25519),
        };
        Ok(Signer {
            key: self,
            public,
            alg,
        })
    }
}

/// A key with its public half, as rcgen signs with it (all three signatures are
/// deterministic: PKCS#1 v1.5, RFC 6979 ECDSA, Ed25519).
struct Signer {
    key: Key,
    public: Vec<u8>,
    alg: &'static SignatureAlgorithm,
}

impl PublicKeyData for Signer {
    fn der_bytes(&self) -> &[u8] {
        &self.public
    }
    fn algorithm(&self) -> &'static SignatureAlgorithm {
        self.alg
    }
}

impl SigningKey for Signer {
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        use rsa::signature::{SignatureEncoding, Signer as _};
        Ok(match &self.key {
            Key::Rsa(k) => rsa_sign_sha256(k, msg).unwrap_or_else(|| {
                rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new((**k).clone())
                    .sign(msg)
                    .to_vec()
            }),
            Key::Ec(k) => {
                let sig: p256::ecdsa::Signature = k.sign(msg);
                sig.to_der().as_bytes().to_vec()
            }
            Key::Ed(k) => k.sign(msg).to_bytes().to_vec(),
        })
    }
}

/// The DER prefix of a SHA-256 `DigestInfo` (RFC 8017 §9.2, note 1).
const SHA256_DIGEST_INFO: [u8; 19] = [
    0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05,
    0x00, 0x04, 0x20,
];

/// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8017 §8.2.1): the bytes `rsa`'s
/// `pkcs1v15::SigningKey<Sha256>` makes, with the private-key operation on kiln's Montgomery
/// arithmetic (`keygen::private_op`; `rsa`'s generic one took a sixth of a chart's render
/// with two certificates). `None` where that operation does not take the key.
fn rsa_sign_sha256(key: &rsa::RsaPrivateKey, msg: &[u8]) -> Option<Vec<u8>> {
    use rsa::traits::PublicKeyParts;
    use sha2::Digest;
    let k = key.size();
    let hashed = sha2::Sha256::digest(msg);
    let t_len = SHA256_DIGEST_INFO.len() + hashed.len();
    if k < t_len + 11 {
        return None;
    }
    // EM = 0x00 || 0x01 || PS (0xff…) || 0x00 || DigestInfo || hash
    let mut em = vec![0xff; k];
    em[0] = 0;
    em[1] = 1;
    em[k - t_len - 1] = 0;
    em[k - t_len..k - hashed.len()].copy_from_slice(&SHA256_DIGEST_INFO);
    em[k - hashed.len()..].copy_from_slice(&hashed);
    let s = crate::sprig::keygen::private_op(key, &rsa::BigUint::from_bytes_be(&em))?;
    let bytes = s.to_bytes_be();
    let mut out = vec![0u8; k.checked_sub(bytes.len())?];
    out.extend_from_slice(&bytes);
    Some(out)
}

/// What a certificate is for: Sprig's three templates.
enum Kind<'a> {
    Ca,
    SelfSigned,
    SignedBy(&'a Value),
}

/// Sprig's `getBaseCertTemplate` plus the CA bits, signed and PEM-encoded.
fn certificate(
    seed: &RefCell<Seed>,
    cn: &str,
    ips: &Value,
    dns: &Value,
    kind: Kind<'_>,
    key: Option<&str>,
) -> Result<Value, String> {
    // Sprig generates the key first, then the serial.
    let key = match key {
        Some(pem) => Key::from_pem(pem).map_err(|e| format!("parsing private key: {e}"))?,
        None => Key::rsa(seed, 2048)?,
    };
    let key_pem = key.to_pem()?;
    let signee = key.signer()?;
    let mut serial = [0u8; 16];
    {
        let mut r = seed.borrow_mut();
        serial[..8].copy_from_slice(&r.next_u64().to_be_bytes());
        serial[8..].copy_from_slice(&r.next_u64().to_be_bytes());
    }
    let mut p = CertificateParams::default();
    p.serial_number = Some(SerialNumber::from_slice(&serial));
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, cn);
    p.distinguished_name = name;
    // Go writes DNS names, then IP addresses.
    for d in list(dns) {
        let d = s(&d);
        let ia5 = d
            .clone()
            .try_into()
            .map_err(|_| format!("error processing alternate dns name: {d}"))?;
        p.subject_alt_names.push(SanType::DnsName(ia5));
    }
    for ip in list(ips) {
        let text = s(&ip);
        let addr = text
            .parse()
            .map_err(|_| format!("error parsing ip: {text}"))?;
        p.subject_alt_names.push(SanType::IpAddress(addr));
    }
    p.not_before = rcgen::date_time_ymd(2000, 1, 1);
    p.not_after = rcgen::date_time_ymd(9999, 12, 31);
    p.key_usages = vec![
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_identifier_method = KeyIdMethod::PreSpecified(key_id(signee.der_bytes()));
    let cert = match kind {
        Kind::Ca => {
            p.key_usages.push(KeyUsagePurpose::KeyCertSign);
            p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            p.self_signed(&signee)
        }
        Kind::SelfSigned => p.self_signed(&signee),
        Kind::SignedBy(ca) => {
            let field = |f: &str| match ca {
                Value::Object(o) => o.field(f).map(|v| s(&v)).unwrap_or_default(),
                Value::Map(m) => m.borrow().get(f).map(s).unwrap_or_default(),
                _ => String::new(),
            };
            let ca_key = Key::from_pem(&field("Key"))
                .map_err(|e| format!("error parsing private key: {e}"))?
                .signer()?;
            let issuer = ca_issuer(&field("Cert"), ca_key)?;
            p.use_authority_key_identifier_extension = true;
            p.signed_by(&signee, &issuer)
        }
    }
    .map_err(|e| format!("error creating certificate: {e}"))?;
    Ok(Value::Object(Rc::new(CertObj {
        cert: pem("CERTIFICATE", cert.der()),
        key: key_pem,
    })))
}

/// The issuer for `genSignedCert`'s CA (any PEM certificate, as Sprig takes it): its
/// subject, re-encoded attribute by attribute with the same string types so the signed
/// certificate's issuer is byte-equal to it (Go's chain building compares the raw bytes),
/// and its subject key identifier. After rcgen's `DistinguishedName::from_name`, which its
/// `x509-parser` feature gates behind ring.
fn ca_issuer(cert_pem: &str, key: Signer) -> Result<Issuer<'static, Signer>, String> {
    use x509_parser::der_parser::asn1_rs::Tag;
    use x509_parser::extensions::ParsedExtension;
    let bad = |e: &dyn std::fmt::Display| format!("error parsing certificate: {e}");
    let (_, der) = pem_decode(cert_pem)
        .filter(|(label, _)| label == "CERTIFICATE")
        .ok_or("unable to decode certificate")?;
    let (_, ca) = x509_parser::parse_x509_certificate(&der).map_err(|e| bad(&e))?;
    let mut name = DistinguishedName::new();
    for attr in ca.subject().iter_attributes() {
        let oid: Vec<u64> = attr
            .attr_type()
            .iter()
            .ok_or_else(|| bad(&"an attribute OID too large"))?
            .collect();
        let data = attr.attr_value().data;
        let text = || std::str::from_utf8(data).map_err(|e| bad(&e));
        let value = match attr.attr_value().header.tag() {
            Tag::PrintableString => {
                rcgen::DnValue::PrintableString(text()?.try_into().map_err(|e| bad(&e))?)
            }
            Tag::Ia5String => rcgen::DnValue::Ia5String(text()?.try_into().map_err(|e| bad(&e))?),
            Tag::T61String => {
                rcgen::DnValue::TeletexString(text()?.try_into().map_err(|e| bad(&e))?)
            }
            Tag::BmpString => rcgen::DnValue::BmpString(
                rcgen::string::BmpString::from_utf16be(data.to_vec()).map_err(|e| bad(&e))?,
            ),
            Tag::UniversalString => rcgen::DnValue::UniversalString(
                rcgen::string::UniversalString::from_utf32be(data.to_vec()).map_err(|e| bad(&e))?,
            ),
            _ => rcgen::DnValue::Utf8String(text()?.to_string()),
        };
        name.push(DnType::from_oid(&oid), value);
    }
    let ski = ca
        .extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0.to_vec()),
            _ => None,
        })
        .unwrap_or_else(|| key_id(&ca.public_key().subject_public_key.data));
    let mut p = CertificateParams::default();
    p.distinguished_name = name;
    p.key_identifier_method = KeyIdMethod::PreSpecified(ski);
    Ok(Issuer::new(p, key))
}

/// RFC 7093 method 1 (SHA-256, leftmost 160 bits) of a public key, the key identifier.
fn key_id(public_key: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(public_key)[..20].to_vec()
}

/// A template list argument (`nil` is empty).
fn list(v: &Value) -> Vec<Value> {
    match v {
        Value::List(l) => l.iter().cloned().collect(),
        _ => Vec::new(),
    }
}

/// Sprig's `generatePrivateKey`.
fn private_key(seed: &RefCell<Seed>, typ: &str) -> Result<Value, String> {
    let key = match typ {
        "" | "rsa" => Key::rsa(seed, 4096)?,
        "ecdsa" => Key::ecdsa(seed),
        "ed25519" => Key::ed25519(seed),
        "dsa" => return Err("genPrivateKey: kiln does not generate DSA keys".into()),
        other => return Ok(Value::from(format!("Unknown type {other}"))),
    };
    key.to_pem().map(Value::from)
}

fn certs(f: &mut Funcs, seed: Rc<RefCell<Seed>>) {
    let arg = |a: &[Value], i: usize| a.get(i).cloned().unwrap_or(Value::Nil);
    let sd = seed.clone();
    f.add("genCA", move |_, a| {
        certificate(
            &sd,
            &s(&arg(a, 0)),
            &Value::Nil,
            &Value::Nil,
            Kind::Ca,
            None,
        )
    });
    let sd = seed.clone();
    f.add("genCAWithKey", move |_, a| {
        let key = s(&arg(a, 2));
        certificate(
            &sd,
            &s(&arg(a, 0)),
            &Value::Nil,
            &Value::Nil,
            Kind::Ca,
            Some(&key),
        )
    });
    let sd = seed.clone();
    f.add("genSelfSignedCert", move |_, a| {
        let (ips, dns) = (arg(a, 1), arg(a, 2));
        certificate(&sd, &s(&arg(a, 0)), &ips, &dns, Kind::SelfSigned, None)
    });
    let sd = seed.clone();
    f.add("genSelfSignedCertWithKey", move |_, a| {
        let (ips, dns, key) = (arg(a, 1), arg(a, 2), s(&arg(a, 4)));
        certificate(
            &sd,
            &s(&arg(a, 0)),
            &ips,
            &dns,
            Kind::SelfSigned,
            Some(&key),
        )
    });
    let sd = seed.clone();
    f.add("genSignedCert", move |_, a| {
        let (ips, dns, ca) = (arg(a, 1), arg(a, 2), arg(a, 4));
        certificate(&sd, &s(&arg(a, 0)), &ips, &dns, Kind::SignedBy(&ca), None)
    });
    let sd = seed.clone();
    f.add("genSignedCertWithKey", move |_, a| {
        let (ips, dns, ca, key) = (arg(a, 1), arg(a, 2), arg(a, 4), s(&arg(a, 5)));
        certificate(
            &sd,
            &s(&arg(a, 0)),
            &ips,
            &dns,
            Kind::SignedBy(&ca),
            Some(&key),
        )
    });
    f.add("buildCustomCert", |_, a| {
        Ok(Value::Object(Rc::new(CertObj {
            cert: a
                .first()
                .map(s)
                .and_then(|c| crate::sprig::encode::b64_decode(&c).ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default(),
            key: a
                .get(1)
                .map(s)
                .and_then(|c| crate::sprig::encode::b64_decode(&c).ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default(),
        })))
    });
    let sd = seed.clone();
    f.add("genPrivateKey", move |_, a| {
        private_key(&sd, &s(&arg(a, 0)))
    });
    let sd = seed.clone();
    f.add("bcrypt", move |_, _| Ok(Value::from(bcrypt_like(&sd))));
    let sd = seed.clone();
    f.add("htpasswd", move |_, a| {
        let user = a.first().map(s).unwrap_or_default();
        Ok(Value::from(format!("{user}:{}", bcrypt_like(&sd))))
    });
    let sd = seed.clone();
    f.add("derivePassword", move |_, _| {
        let mut r = sd.borrow_mut();
        let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        Ok(Value::from(
            (0..20)
                .map(|_| alphabet[(r.next_u64() % 62) as usize] as char)
                .collect::<String>(),
        ))
    });
    let sd = seed;
    f.add("encryptAES", move |_, a| {
        let text = a.get(1).map(s).unwrap_or_default();
        let mut r = sd.borrow_mut();
        let bytes: Vec<u8> = (0..16 + text.len().div_ceil(16) * 16)
            .map(|_| r.next_u64() as u8)
            .collect();
        Ok(Value::from(b64(&bytes)))
    });
    f.add("decryptAES", |_, _| Ok(Value::from("")));
}

/// A `$2a$10$…` string of bcrypt's length from the seeded generator.
fn bcrypt_like(seed: &RefCell<Seed>) -> String {
    let alphabet = b"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut r = seed.borrow_mut();
    let body: String = (0..53)
        .map(|_| alphabet[(r.next_u64() % 64) as usize] as char)
        .collect();
    format!("$2a$10${body}")
}

/// Sprig's digests (crypto.go: `sha256sum`, `sha512sum`, `sha1sum`, `adler32sum`), over Go's
/// bytes of the string, in lower-case hex.
pub(super) fn hashes(f: &mut Funcs) {
    use super::encode;
    f.add1("sha256sum", |_, a0| {
        Ok(Value::from(kiln_base::digest::sha256_hex(
            &crate::template::fmt::go_bytes(&s_ref(a0)),
        )))
    });
    f.add1("sha512sum", |_, a0| {
        use sha2::Digest;
        Ok(Value::from(encode::hex(&sha2::Sha512::digest(
            crate::template::fmt::go_bytes(&s_ref(a0)),
        ))))
    });
    f.add1("sha1sum", |_, a0| {
        Ok(Value::from(encode::hex(&encode::sha1(
            &crate::template::fmt::go_bytes(&s_ref(a0)),
        ))))
    });
    f.add1("adler32sum", |_, a0| {
        Ok(Value::from(
            encode::adler32(&crate::template::fmt::go_bytes(&s_ref(a0))).to_string(),
        ))
    });
}

/// Sprig's random functions (strings.go `randAlphaNum`, `randAlpha`, `randNumeric`, `randAscii`;
/// crypto.go `randBytes`; functions.go `randInt`, `uuidv4`; xstrings' `shuffle`), then the key
/// and certificate generators, all drawing from `seed`.
pub(super) fn random(f: &mut Funcs, seed: Rc<RefCell<Seed>>) {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const NUM: &[u8] = b"0123456789";
    let ascii: Vec<u8> = (32u8..127).collect();
    for (name, alphabet) in [
        ("randAlphaNum", ALNUM.to_vec()),
        ("randAlpha", ALPHA.to_vec()),
        ("randNumeric", NUM.to_vec()),
        ("randAscii", ascii),
    ] {
        let seed = seed.clone();
        f.add1(name, move |_, a0| {
            let n = to_i64(a0).max(0);
            bound_text(name, n as u128)?;
            Ok(Value::from(
                seed.borrow_mut().string_from(&alphabet, n as usize),
            ))
        });
    }
    let sd = seed.clone();
    f.add2("randInt", move |_, a0, a1| {
        let (lo, hi) = (to_i64(a0), to_i64(a1));
        Ok(Value::Int(
            lo + sd.borrow_mut().below((hi - lo).max(1) as u64) as i64,
        ))
    });
    let sd = seed.clone();
    f.add1("randBytes", move |_, a0| {
        let b = sd.borrow_mut().bytes(to_i64(a0).max(0) as usize);
        Ok(Value::from(crate::sprig::encode::b64(&b)))
    });
    let sd = seed.clone();
    f.add1("shuffle", move |_, a0| {
        let mut c: Vec<char> = s(a0).chars().collect();
        let mut r = sd.borrow_mut();
        for i in (1..c.len()).rev() {
            let j = r.below(i as u64 + 1) as usize;
            c.swap(i, j);
        }
        Ok(Value::from(c.into_iter().collect::<String>()))
    });
    let sd = seed.clone();
    f.add("uuidv4", move |_, _| {
        let mut b = sd.borrow_mut().bytes(16);
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let h = crate::sprig::encode::hex(&b);
        Ok(Value::from(format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )))
    });
    certs(f, seed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

    fn seed(n: u64) -> RefCell<Seed> {
        RefCell::new(Seed::new(n))
    }

    fn fields(v: &Value) -> (String, String) {
        let Value::Object(o) = v else {
            panic!("not a certificate: {v:?}")
        };
        (s(&o.field("Cert").unwrap()), s(&o.field("Key").unwrap()))
    }

    fn list_of(items: &[&str]) -> Value {
        Value::List(Rc::new(items.iter().map(|i| Value::from(*i)).collect()))
    }

    fn der(pem_text: &str) -> Vec<u8> {
        let (label, der) = pem_decode(pem_text).unwrap();
        assert_eq!(label, "CERTIFICATE");
        der
    }

    /// Checks `cert`'s signature with `issuer`'s public key, as a verifier does.
    fn verify(cert: &X509Certificate<'_>, issuer: &X509Certificate<'_>) {
        use rsa::pkcs1::DecodeRsaPublicKey;
        use rsa::signature::Verifier;
        assert_eq!(cert.issuer().as_raw(), issuer.subject().as_raw());
        let tbs = cert.tbs_certificate.as_ref();
        let sig = &cert.signature_value.data;
        let public = &issuer.public_key().subject_public_key.data;
        match issuer
            .public_key()
            .algorithm
            .algorithm
            .to_id_string()
            .as_str()
        {
            "1.2.840.113549.1.1.1" => {
                let key = rsa::RsaPublicKey::from_pkcs1_der(public).unwrap();
                let sig = rsa::pkcs1v15::Signature::try_from(sig.as_ref()).unwrap();
                rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(key)
                    .verify(tbs, &sig)
                    .expect("the CA's RSA signature verifies");
            }
            "1.2.840.10045.2.1" => {
                let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(public).unwrap();
                let sig = p256::ecdsa::Signature::from_der(sig).unwrap();
                key.verify(tbs, &sig)
                    .expect("the CA's ECDSA signature verifies");
            }
            other => panic!("unexpected issuer key {other}"),
        }
    }

    #[test]
    fn the_ca_signs_the_signed_certificate() {
        let sd = seed(7);
        let ca = certificate(&sd, "web-ca", &Value::Nil, &Value::Nil, Kind::Ca, None).unwrap();
        let (ips, dns) = (list_of(&["10.0.0.1", "::1"]), list_of(&["web.ns.svc"]));
        let leaf = certificate(&sd, "web", &ips, &dns, Kind::SignedBy(&ca), None).unwrap();
        let (ca_pem, _) = fields(&ca);
        let (leaf_pem, leaf_key) = fields(&leaf);
        let (ca_der, leaf_der) = (der(&ca_pem), der(&leaf_pem));
        let (_, ca_x) = X509Certificate::from_der(&ca_der).unwrap();
        let (_, leaf_x) = X509Certificate::from_der(&leaf_der).unwrap();

        verify(&ca_x, &ca_x);
        verify(&leaf_x, &ca_x);
        assert!(ca_x.is_ca());
        assert!(!leaf_x.is_ca());
        assert_eq!(ca_x.subject().to_string(), "CN=web-ca");
        assert_eq!(leaf_x.subject().to_string(), "CN=web");
        let ku = ca_x.key_usage().unwrap().unwrap().value;
        assert!(ku.key_cert_sign() && ku.digital_signature() && ku.key_encipherment());
        let san = leaf_x.subject_alternative_name().unwrap().unwrap().value;
        let names: Vec<String> = san
            .general_names
            .iter()
            .map(|n| match n {
                GeneralName::DNSName(d) => d.to_string(),
                GeneralName::IPAddress(ip) => format!("{ip:?}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
        assert_eq!(names[0], "web.ns.svc");
        assert_eq!(names[1], "[10, 0, 0, 1]");
        assert!(
            leaf_x
                .validity()
                .is_valid_at(x509_parser::time::ASN1Time::now())
        );
        assert!(leaf_x.serial.bits() <= 128);
        // The key is the certificate's: 2048-bit RSA, PKCS#1 as Sprig writes it.
        assert!(leaf_key.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
        let key = Key::from_pem(&leaf_key).unwrap();
        let Key::Rsa(k) = &key else { panic!("not RSA") };
        use rsa::traits::PublicKeyParts;
        assert_eq!(k.size() * 8, 2048);
        assert_eq!(
            leaf_x.public_key().subject_public_key.data.as_ref(),
            key.signer().unwrap().der_bytes()
        );
    }

    #[test]
    fn certificates_are_deterministic_per_seed() {
        let make = |n| {
            let sd = seed(n);
            let dns = list_of(&["a.example"]);
            fields(&certificate(&sd, "x", &Value::Nil, &dns, Kind::SelfSigned, None).unwrap())
        };
        assert_eq!(make(1), make(1));
        assert_ne!(make(1).0, make(2).0);
        assert_ne!(make(1).1, make(2).1);
    }

    /// kiln's RSA signatures are the bytes `rsa`'s PKCS#1 v1.5 signer makes, for primes of
    /// both arithmetic widths (RSA-1024 and RSA-2048 on 16 limbs, RSA-3000 on 32).
    #[test]
    fn rsa_signatures_are_rsas() {
        use rsa::signature::{SignatureEncoding, Signer as _};
        for (bits, seed) in [(1024, 1u8), (2048, 2), (2048, 3), (3000, 4)] {
            let key = crate::sprig::keygen::rsa_key(
                &mut <rand_chacha::ChaCha20Rng as rand_chacha::rand_core::SeedableRng>::from_seed(
                    [seed; 32],
                ),
                bits,
            )
            .unwrap();
            let theirs = rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new(key.clone());
            for msg in [&b""[..], b"kiln", &[0u8; 1000]] {
                let ours = rsa_sign_sha256(&key, msg).expect("kiln signs");
                assert_eq!(ours, theirs.sign(msg).to_vec(), "{bits} bits");
            }
        }
    }

    #[test]
    fn given_keys_of_every_type_sign() {
        let sd = seed(3);
        let ec = s(&private_key(&sd, "ecdsa").unwrap());
        let ed = s(&private_key(&sd, "ed25519").unwrap());
        assert!(ec.starts_with("-----BEGIN EC PRIVATE KEY-----\n"), "{ec}");
        assert!(ed.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{ed}");
        let ca = certificate(&sd, "ec-ca", &Value::Nil, &Value::Nil, Kind::Ca, Some(&ec)).unwrap();
        let leaf = certificate(
            &sd,
            "ed",
            &Value::Nil,
            &Value::Nil,
            Kind::SignedBy(&ca),
            Some(&ed),
        )
        .unwrap();
        let (ca_pem, ca_key) = fields(&ca);
        assert_eq!(ca_key, ec, "the given key is the certificate's");
        let (ca_der, leaf_der) = (der(&ca_pem), der(&fields(&leaf).0));
        let (_, ca_x) = X509Certificate::from_der(&ca_der).unwrap();
        let (_, leaf_x) = X509Certificate::from_der(&leaf_der).unwrap();
        verify(&ca_x, &ca_x);
        verify(&leaf_x, &ca_x);
        assert_eq!(
            leaf_x.public_key().algorithm.algorithm.to_id_string(),
            "1.3.101.112"
        );
    }

    #[test]
    fn bad_input_is_sprigs_error() {
        let sd = seed(1);
        let err = |r: Result<Value, String>| r.err().unwrap_or_default();
        let ips = list_of(&["not-an-ip"]);
        let e = err(certificate(
            &sd,
            "x",
            &ips,
            &Value::Nil,
            Kind::SelfSigned,
            None,
        ));
        assert!(e.contains("error parsing ip: not-an-ip"), "{e}");
        let e = err(certificate(
            &sd,
            "x",
            &Value::Nil,
            &Value::Nil,
            Kind::Ca,
            Some("junk"),
        ));
        assert!(e.contains("no PEM data in input"), "{e}");
        assert_eq!(s(&private_key(&sd, "rsa3").unwrap()), "Unknown type rsa3");
        assert!(private_key(&sd, "dsa").is_err());
    }
}
