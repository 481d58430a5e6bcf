//! Sprig's network function, after Masterminds/sprig v3.3.0 `network.go`: `getHostByName`
//! answers the empty string, as `helm template` (no cluster, no DNS lookup) does.

use super::*;

pub(super) fn register(f: &mut Funcs) {
    f.add("getHostByName", |_, _| Ok(Value::from("")));
}
