//! Sprig's crypto functions (`genCA`, `genSelfSignedCert`, `genSignedCert`, `genPrivateKey`,
//! `bcrypt`, `htpasswd`, `derivePassword`, `encryptAES`, …) made deterministic.
//!
//! Real Helm returns fresh keys and certificates on every render, so no two renders agree
//! and the comparison with Helm masks these values. kiln must give the same bytes for the
//! same input, and it does not carry an X.509 implementation: these functions return
//! PEM-framed blocks drawn from the seeded generator. They have the right shape (a chart
//! can `b64enc` them, template `.Cert`/`.Key`) but are not parseable certificates; a chart
//! whose webhook must really serve TLS needs its certificate from cert-manager or values.
//! Listed in tests/helm/DIVERGENCES.md.

use crate::helm::encode::b64;
use crate::helm::funcs::Seed;
use crate::helm::funcs::conv::s;
use crate::helm::template::exec::Funcs;
use crate::helm::template::value::{Object, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// `.Cert` and `.Key` of a generated certificate.
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
    fn call(&self, _: &str, _: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    fn display(&self) -> String {
        format!("{{{} {}}}", self.cert, self.key)
    }
}

fn pem(label: &str, seed: &RefCell<Seed>, n: usize) -> String {
    let bytes: Vec<u8> = {
        let mut r = seed.borrow_mut();
        (0..n).map(|_| r.next_u64() as u8).collect()
    };
    let body = b64(&bytes);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn cert(seed: &RefCell<Seed>) -> Value {
    Value::Object(Rc::new(CertObj {
        cert: pem("CERTIFICATE", seed, 780),
        key: pem("RSA PRIVATE KEY", seed, 1190),
    }))
}

pub fn register(f: &mut Funcs, seed: Rc<RefCell<Seed>>) {
    for name in [
        "genCA",
        "genCAWithKey",
        "genSelfSignedCert",
        "genSelfSignedCertWithKey",
        "genSignedCert",
        "genSignedCertWithKey",
    ] {
        let sd = seed.clone();
        f.add(name, move |_, _| Ok(cert(&sd)));
    }
    f.add("buildCustomCert", |_, a| {
        Ok(Value::Object(Rc::new(CertObj {
            cert: a
                .first()
                .map(s)
                .and_then(|c| crate::helm::encode::b64_decode(&c))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default(),
            key: a
                .get(1)
                .map(s)
                .and_then(|c| crate::helm::encode::b64_decode(&c))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default(),
        })))
    });
    let sd = seed.clone();
    f.add("genPrivateKey", move |_, _| {
        Ok(Value::from(pem("RSA PRIVATE KEY", &sd, 1190)))
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
