//! Kubernetes' IP library (k8s.io/apiserver `pkg/cel/library/ip.go`): `ip`, `isIP`,
//! `ip.isCanonical`, `family`, `isUnspecified`, `isLoopback`, `isLinkLocalMulticast`,
//! `isLinkLocalUnicast`, `isGlobalUnicast`, `string`. Addresses parse as Go's
//! `netip.ParseAddr` (no leading zeros in IPv4 octets, as Rust's parser), then ip.go's
//! `parseIPAddr` refuses zones and IPv4-mapped IPv6 addresses; the predicates are netip's.

use super::{Out, boolean, error, integer, own, string, text, typed};
use cel::common::types::STRING_TYPE;
use cel::common::value::CowVal;
use cel::{DeclarationError, Env};
use std::net::IpAddr;

/// A parsed address (`apiservercel.IP`, equal when the addresses are).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ip(pub(crate) IpAddr);

super::opaque!(Ip, "net.IP");

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    let i = super::type_of::<Ip>;
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], to_ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload(
        "ip.isCanonical",
        "ip_is_canonical",
        vec![STRING_TYPE],
        is_canonical,
    )?;
    env.add_overload("string", "ip_to_string", vec![i()], to_string)?;
    env.add_member_overload("family", "ip_family", i(), vec![], family)?;
    let predicates: [(&str, super::Function); 5] = [
        ("isUnspecified", |a| predicate(a, |ip| ip.is_unspecified())),
        ("isLoopback", |a| predicate(a, |ip| ip.is_loopback())),
        ("isLinkLocalMulticast", |a| {
            predicate(a, link_local_multicast)
        }),
        ("isLinkLocalUnicast", |a| predicate(a, link_local_unicast)),
        ("isGlobalUnicast", |a| predicate(a, global_unicast)),
    ];
    for (name, f) in predicates {
        env.add_member_overload(name, &format!("ip_{name}"), i(), vec![], f)?;
    }
    Ok(())
}

/// ip.go's `parseIPAddr`, its errors worded as there.
pub(crate) fn parse(raw: &str) -> Result<IpAddr, String> {
    if raw.contains('%') {
        return Err(format!("IP address {raw:?} with zone value is not allowed"));
    }
    let addr: IpAddr = raw.parse().map_err(|e| {
        format!("IP Address {raw:?} parse error during conversion from string: {e}")
    })?;
    if let IpAddr::V6(v6) = addr
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(addr)
}

fn to_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    own(Ip(parse(string(&args, 0)?).map_err(|e| error("ip", e))?))
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(parse(string(&args, 0)?).is_ok())
}

/// `Addr.String()` is the one canonical form (RFC 5952 for IPv6, as Rust's `Display`).
fn is_canonical<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let raw = string(&args, 0)?;
    let addr = parse(raw).map_err(|e| error("ip.isCanonical", e))?;
    boolean(addr.to_string() == raw)
}

fn to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    text(typed::<Ip>(&args, 0)?.0.to_string())
}

fn family<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    integer(if typed::<Ip>(&args, 0)?.0.is_ipv4() {
        4
    } else {
        6
    })
}

fn predicate<'b, 'v>(args: Vec<CowVal<'b, 'v>>, test: fn(&IpAddr) -> bool) -> Out<'b, 'v> {
    boolean(test(&typed::<Ip>(&args, 0)?.0))
}

/// netip: 224.0.0.0/24, or ff02::/16 with any flags (`v6u16(0)&0xff0f == 0xff02`).
fn link_local_multicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

/// netip: 169.254.0.0/16, or fe80::/10.
fn link_local_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// netip's `IsGlobalUnicast`: private and ULA addresses included.
fn global_unicast(ip: &IpAddr) -> bool {
    if let IpAddr::V4(v4) = ip
        && (v4.is_unspecified() || v4.is_broadcast())
    {
        return false;
    }
    !ip.is_unspecified() && !ip.is_loopback() && !ip.is_multicast() && !link_local_unicast(ip)
}

#[cfg(test)]
mod tests {
    use crate::cel::tests::eval;

    #[test]
    fn the_library_as_the_upstream_examples_give_it() {
        for rule in [
            "isIP('127.0.0.1') && isIP('::1')",
            "!isIP('127.0.0.256') && !isIP(':::1') && !isIP('127.0.0.01')",
            "!isIP('::ffff:1.2.3.4') && !isIP('fe80::1%eth0')",
            "ip.isCanonical('127.0.0.1') && ip.isCanonical('2001:db8::abcd')",
            "!ip.isCanonical('2001:DB8::ABCD') && !ip.isCanonical('2001:db8::0:0:0:abcd')",
            "ip('127.0.0.1').family() == 4 && ip('::1').family() == 6",
            "ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified() && !ip('::1').isUnspecified()",
            "ip('127.0.0.1').isLoopback() && !ip('192.168.0.1').isLoopback() && ip('::1').isLoopback()",
            "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast()",
            "ip('ff02::1').isLinkLocalMulticast() && !ip('fd00::1').isLinkLocalMulticast()",
            "ip('169.254.169.254').isLinkLocalUnicast() && !ip('192.168.0.1').isLinkLocalUnicast()",
            "ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()",
            "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()",
            "ip('2001:db8::abcd').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()",
            "ip('127.0.0.1') == ip('127.0.0.1') && ip('::1') != ip('127.0.0.1')",
            "string(ip('2001:db8:0:0:0:0:0:abcd')) == '2001:db8::abcd'",
        ] {
            assert_eq!(eval(rule), Ok(cel::Value::Bool(true)), "{rule}");
        }
        assert!(eval("ip('127.0.0.256') == ip('127.0.0.1')").is_err());
    }
}
