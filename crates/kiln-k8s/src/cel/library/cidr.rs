//! Kubernetes' CIDR library (k8s.io/apiserver `pkg/cel/library/cidr.go`): `cidr`, `isCIDR`,
//! `containsIP`, `containsCIDR`, `ip`, `masked`, `prefixLength`, `string`. Prefixes parse as
//! Go's `netip.ParsePrefix` (bits in decimal without leading zeros or sign, no zone, the
//! address as written, not masked); IPv4-mapped IPv6 addresses are refused.

use super::ip::{Ip, parse as parse_ip};
use super::{Out, boolean, error, integer, own, string, text, typed};
use cel::common::types::STRING_TYPE;
use cel::common::value::CowVal;
use cel::{DeclarationError, Env};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A parsed prefix (`apiservercel.CIDR`): its address as written, and its bits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cidr {
    addr: IpAddr,
    bits: u8,
}

super::opaque!(Cidr, "net.CIDR");

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    let (c, i) = (super::type_of::<Cidr>, super::type_of::<Ip>);
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], to_cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("string", "cidr_to_string", vec![c()], to_string)?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_string",
        c(),
        vec![STRING_TYPE],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_ip",
        c(),
        vec![i()],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        c(),
        vec![STRING_TYPE],
        contains_cidr,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr",
        c(),
        vec![c()],
        contains_cidr,
    )?;
    env.add_member_overload("ip", "cidr_ip", c(), vec![], address)?;
    env.add_member_overload("masked", "cidr_masked", c(), vec![], masked)?;
    env.add_member_overload(
        "prefixLength",
        "cidr_prefix_length",
        c(),
        vec![],
        prefix_length,
    )?;
    Ok(())
}

/// cidr.go's `parseCIDR` over `netip.ParsePrefix`.
fn parse(raw: &str) -> Result<Cidr, String> {
    let wrap =
        |e: String| format!("network address parse error during conversion from string: {e}");
    let Some((addr, bits)) = raw.split_once('/') else {
        return Err(wrap(format!("netip.ParsePrefix({raw:?}): no '/'")));
    };
    if addr.contains('%') {
        return Err(wrap(format!(
            "netip.ParsePrefix({raw:?}): IPv6 zones cannot be present in a prefix"
        )));
    }
    let addr: IpAddr = addr
        .parse()
        .map_err(|e| wrap(format!("netip.ParsePrefix({raw:?}): {e}")))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let digits = !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit());
    let leading_zero = bits.len() > 1 && bits.starts_with('0');
    let bits = match bits.parse::<u8>() {
        Ok(b) if digits && !leading_zero && b <= max => b,
        _ => {
            return Err(wrap(format!(
                "netip.ParsePrefix({raw:?}): bad bits after slash: {bits:?}"
            )));
        }
    };
    if let IpAddr::V6(v6) = addr
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(Cidr { addr, bits })
}

impl Cidr {
    /// `Prefix.Masked()`.
    fn masked(&self) -> Cidr {
        let addr = match self.addr {
            IpAddr::V4(v4) => {
                let mask = u32::MAX.checked_shl(32 - self.bits as u32).unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX.checked_shl(128 - self.bits as u32).unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
            }
        };
        Cidr {
            addr,
            bits: self.bits,
        }
    }

    /// `Prefix.Contains`: same family, same masked bits.
    fn contains(&self, ip: &IpAddr) -> bool {
        self.addr.is_ipv4() == ip.is_ipv4()
            && Cidr {
                addr: *ip,
                bits: self.bits,
            }
            .masked()
                == self.masked()
    }
}

fn to_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    own(parse(string(&args, 0)?).map_err(|e| {
        error(
            "cidr",
            format!("network address parse error during conversion from string: {e}"),
        )
    })?)
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(parse(string(&args, 0)?).is_ok())
}

fn to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let c = typed::<Cidr>(&args, 0)?;
    text(format!("{}/{}", c.addr, c.bits))
}

fn contains_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let cidr = typed::<Cidr>(&args, 0)?;
    let ip = match string(&args, 1) {
        Ok(s) => parse_ip(s).map_err(|e| error("containsIP", e))?,
        Err(_) => typed::<Ip>(&args, 1)?.0,
    };
    boolean(cidr.contains(&ip))
}

/// cidr.go: `other` is inside when its address masked to this prefix's bits is this
/// prefix's, and it is no wider.
fn contains_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let cidr = typed::<Cidr>(&args, 0)?;
    let other = match string(&args, 1) {
        Ok(s) => parse(s).map_err(|e| {
            error(
                "containsCIDR",
                format!("network address parse error during conversion from string: {e}"),
            )
        })?,
        Err(_) => typed::<Cidr>(&args, 1)?.clone(),
    };
    let same_family = cidr.addr.is_ipv4() == other.addr.is_ipv4();
    let equal_masked = same_family
        && Cidr {
            addr: other.addr,
            bits: cidr.bits,
        }
        .masked()
            == cidr.masked();
    boolean(equal_masked && cidr.bits <= other.bits)
}

fn address<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    own(Ip(typed::<Cidr>(&args, 0)?.addr))
}

fn masked<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    own(typed::<Cidr>(&args, 0)?.masked())
}

fn prefix_length<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    integer(typed::<Cidr>(&args, 0)?.bits as i64)
}

#[cfg(test)]
mod tests {
    use crate::cel::tests::eval;

    #[test]
    fn the_library_as_the_upstream_examples_give_it() {
        for rule in [
            "isCIDR('192.168.0.0/16') && isCIDR('::1/128') && isCIDR('192.168.0.1/24')",
            "!isCIDR('192.168.0.0/33') && !isCIDR('192.168.0.0') && !isCIDR('10.0.0.0/08')",
            "!isCIDR('::ffff:1.2.3.4/120') && !isCIDR('fe80::1%eth0/64')",
            "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))",
            "!cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))",
            "cidr('192.168.0.0/24').containsIP('192.168.0.1')",
            "!cidr('192.168.0.0/24').containsIP('::1')",
            "cidr('2001:db8::/32').containsIP('2001:db8::1')",
            "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))",
            "cidr('192.168.0.0/24').containsCIDR('192.168.0.0/24')",
            "!cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')",
            "cidr('192.168.0.1/24').ip() == ip('192.168.0.1')",
            "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
            "cidr('192.168.0.0/16').prefixLength() == 16 && cidr('::1/128').prefixLength() == 128",
            "string(cidr('2001:db8:0:0::1/64')) == '2001:db8::1/64'",
            "cidr('0.0.0.0/0').containsIP('255.255.255.255')",
        ] {
            assert_eq!(eval(rule), Ok(cel::Value::Bool(true)), "{rule}");
        }
        assert!(eval("cidr('192.168.0.0/33') == cidr('192.168.0.0/24')").is_err());
    }
}
