//! Go's `map[string]interface{}` as templates hold it: [`Dict`], the map behind every
//! [`Value::Map`].
//!
//! [`Value::Map`]: super::value::Value::Map
//!
//! Go ranges over a map's keys in sorted order, and encoding/json and sigs.k8s.io/yaml
//! sort them too, so sorted is the only order Helm ever shows: a `Dict` keeps its entries
//! sorted by key bytes, unique.
//!
//! A small map is a sorted vector rather than a `BTreeMap<String, _>` because of what
//! templates do with maps (issue 37, nats: `dict` with five keys per node of a values walk,
//! then `get` and `hasKey` on it, then dropped):
//! - most maps are small: a `dict` call, a `fromJson` patch, a manifest's `metadata`. One
//!   allocation holds every entry, and a lookup in a map of up to eight keys compares
//!   lengths before bytes, where a B-tree compares every key it passes byte by byte;
//! - keys are `Rc<str>`: `dict "path" $p` keeps the template constant's own string, and a
//!   copy of a map (`deepCopy`, `merge`, a coalesced values tree) shares its keys, where a
//!   `String` key was allocated and copied each time;
//! - readers (YAML, JSON) collect a mapping's entries and sort once
//!   ([`FromIterator`]); an insert checks the end first, so keys that arrive sorted (what
//!   encoding/json writes) are appended.
//!
//! An insert into the middle of a vector moves the entries after it, so a map that grows
//! past 128 entries that way becomes a B-tree of the same keys: building a map one
//! `set` at a time in any order stays n log n (a chart's 50,000 `set`s in reverse order
//! took 1.1 s as a vector alone, 0.04 s so, as with the `BTreeMap` before).

use super::value::Value;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Up to this many entries a lookup scans; past it, it bisects.
const LINEAR: usize = 8;

/// The most entries a map keeps in a vector when a key goes into its middle.
const SMALL: usize = 128;

/// A Go `map[string]interface{}`: entries sorted by key bytes, keys unique.
#[derive(Clone)]
pub struct Dict(Repr);

#[derive(Clone)]
enum Repr {
    /// Sorted by key bytes, unique.
    Small(Vec<(Rc<str>, Value)>),
    Large(BTreeMap<Rc<str>, Value>),
}

impl Default for Dict {
    fn default() -> Dict {
        Dict(Repr::Small(Vec::new()))
    }
}

/// Where a key is in a small map (`Ok`), or where it would go (`Err`).
#[inline]
fn find(entries: &[(Rc<str>, Value)], key: &str) -> Result<usize, usize> {
    if entries.len() <= LINEAR {
        for (i, (k, _)) in entries.iter().enumerate() {
            // Equal lengths first: most keys of a small map differ in length, and then no
            // byte is compared.
            if k.len() == key.len() && **k == *key {
                return Ok(i);
            }
        }
        return Err(entries.partition_point(|(k, _)| **k < *key));
    }
    entries.binary_search_by(|(k, _)| (**k).cmp(key))
}

impl Dict {
    pub fn new() -> Dict {
        Dict::default()
    }

    pub fn with_capacity(n: usize) -> Dict {
        Dict(Repr::Small(Vec::with_capacity(n)))
    }

    #[inline]
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Small(v) => v.len(),
            Repr::Large(m) => m.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, key: &str) -> Option<&Value> {
        match &self.0 {
            Repr::Small(v) => find(v, key).ok().map(|i| &v[i].1),
            Repr::Large(m) => m.get(key),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        match &mut self.0 {
            Repr::Small(v) => find(v, key).ok().map(|i| &mut v[i].1),
            Repr::Large(m) => m.get_mut(key),
        }
    }

    /// The key as the map holds it, and its value.
    #[inline]
    pub fn get_key_value(&self, key: &str) -> Option<(&Rc<str>, &Value)> {
        match &self.0 {
            Repr::Small(v) => find(v, key).ok().map(|i| (&v[i].0, &v[i].1)),
            Repr::Large(m) => m.get_key_value(key),
        }
    }

    #[inline]
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `v`; the value it had, if it had one (the key stays as it was).
    pub fn insert<K: AsRef<str> + Into<Rc<str>>>(&mut self, key: K, v: Value) -> Option<Value> {
        let entries = match &mut self.0 {
            Repr::Small(entries) => entries,
            Repr::Large(m) => {
                return match m.get_mut(key.as_ref()) {
                    Some(old) => Some(std::mem::replace(old, v)),
                    None => m.insert(key.into(), v),
                };
            }
        };
        // Keys that arrive in order (encoding/json's output read back) go on the end.
        if let Some((last, _)) = entries.last()
            && **last < *key.as_ref()
        {
            entries.push((key.into(), v));
            return None;
        }
        match find(entries, key.as_ref()) {
            Ok(i) => Some(std::mem::replace(&mut entries[i].1, v)),
            Err(_) if entries.len() >= SMALL => {
                let mut m: BTreeMap<Rc<str>, Value> = std::mem::take(entries).into_iter().collect();
                m.insert(key.into(), v);
                self.0 = Repr::Large(m);
                None
            }
            Err(i) => {
                entries.insert(i, (key.into(), v));
                None
            }
        }
    }

    /// The value at `key`, inserted from `make` when the map has none.
    pub fn get_or_insert_with<K: AsRef<str> + Into<Rc<str>>>(
        &mut self,
        key: K,
        make: impl FnOnce() -> Value,
    ) -> &mut Value {
        if !self.contains_key(key.as_ref()) {
            let name: Rc<str> = key.into();
            self.insert(name.clone(), make());
            return self.get_mut(&name).expect("just inserted");
        }
        self.get_mut(key.as_ref()).expect("present")
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        match &mut self.0 {
            Repr::Small(v) => find(v, key).ok().map(|i| v.remove(i).1),
            Repr::Large(m) => m.remove(key),
        }
    }

    /// Keeps the entries `keep` says to keep, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &mut Value) -> bool) {
        match &mut self.0 {
            Repr::Small(v) => v.retain_mut(|(k, v)| keep(k, v)),
            Repr::Large(m) => m.retain(|k, v| keep(k, v)),
        }
    }

    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        match &self.0 {
            Repr::Small(v) => Iter::Small(v.iter()),
            Repr::Large(m) => Iter::Large(m.iter()),
        }
    }

    pub fn iter_mut(&mut self) -> IterMut<'_> {
        match &mut self.0 {
            Repr::Small(v) => IterMut::Small(v.iter_mut()),
            Repr::Large(m) => IterMut::Large(m.iter_mut()),
        }
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Rc<str>> + ExactSizeIterator {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.iter().map(|(_, v)| v)
    }

    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut Value> {
        self.iter_mut().map(|(_, v)| v)
    }
}

/// The entries of a [`Dict`], by key.
#[derive(Clone)]
pub enum Iter<'a> {
    Small(std::slice::Iter<'a, (Rc<str>, Value)>),
    Large(std::collections::btree_map::Iter<'a, Rc<str>, Value>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Rc<str>, &'a Value);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(i) => i.next().map(|(k, v)| (k, v)),
            Iter::Large(i) => i.next(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Small(i) => i.size_hint(),
            Iter::Large(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(i) => i.next_back().map(|(k, v)| (k, v)),
            Iter::Large(i) => i.next_back(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// The entries of a [`Dict`], by key, their values mutable.
pub enum IterMut<'a> {
    Small(std::slice::IterMut<'a, (Rc<str>, Value)>),
    Large(std::collections::btree_map::IterMut<'a, Rc<str>, Value>),
}

impl<'a> Iterator for IterMut<'a> {
    type Item = (&'a Rc<str>, &'a mut Value);
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            IterMut::Small(i) => i.next().map(|(k, v)| (&*k, v)),
            IterMut::Large(i) => i.next(),
        }
    }
}

impl DoubleEndedIterator for IterMut<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            IterMut::Small(i) => i.next_back().map(|(k, v)| (&*k, v)),
            IterMut::Large(i) => i.next_back(),
        }
    }
}

impl<'a> IntoIterator for &'a Dict {
    type Item = (&'a Rc<str>, &'a Value);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for Dict {
    type Item = (Rc<str>, Value);
    type IntoIter = Box<dyn Iterator<Item = (Rc<str>, Value)>>;
    fn into_iter(self) -> Self::IntoIter {
        match self.0 {
            Repr::Small(v) => Box::new(v.into_iter()),
            Repr::Large(m) => Box::new(m.into_iter()),
        }
    }
}

/// As a `BTreeMap` collects: sorted, and of equal keys the last value wins.
impl<K: Into<Rc<str>>> FromIterator<(K, Value)> for Dict {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Dict {
        let mut entries: Vec<(Rc<str>, Value)> =
            iter.into_iter().map(|(k, v)| (k.into(), v)).collect();
        if entries.windows(2).all(|w| w[0].0 < w[1].0) {
            return Dict(Repr::Small(entries));
        }
        // Stable: equal keys keep their order, and the last of each run is kept.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(Rc<str>, Value)> = Vec::with_capacity(entries.len());
        for e in entries {
            match out.last_mut() {
                Some(last) if last.0 == e.0 => last.1 = e.1,
                _ => out.push(e),
            }
        }
        Dict(Repr::Small(out))
    }
}

impl<K: AsRef<str> + Into<Rc<str>>> Extend<(K, Value)> for Dict {
    fn extend<I: IntoIterator<Item = (K, Value)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl std::fmt::Debug for Dict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A small deterministic generator (no clock, no randomness from outside).
    fn keys(seed: u64, n: usize, alphabet: &[&str]) -> Vec<String> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let a = alphabet[(x % alphabet.len() as u64) as usize];
                let b = alphabet[((x >> 8) % alphabet.len() as u64) as usize];
                format!("{a}{b}")
            })
            .collect()
    }

    fn as_btree(d: &Dict) -> Vec<(String, String)> {
        d.iter()
            .map(|(k, v)| (k.to_string(), v.go_string()))
            .collect()
    }

    /// Every operation, small maps and large (the scan and the bisection), against
    /// `BTreeMap` doing the same.
    #[test]
    fn a_dict_behaves_as_a_sorted_map() {
        let alphabet = ["", "a", "b", "ab", "é", "Z", "_", "10", "9", "aa", "b\u{0}"];
        for (seed, n) in [(1, 3), (2, 8), (3, 9), (4, 40), (5, 300), (6, 2000)] {
            let ks = keys(seed, n, &alphabet);
            let mut d = Dict::new();
            let mut b: BTreeMap<String, Value> = BTreeMap::new();
            for (i, k) in ks.iter().enumerate() {
                let v = Value::Int(i as i64);
                assert_eq!(
                    d.insert(k.as_str(), v.clone()).map(|v| v.go_string()),
                    b.insert(k.clone(), v).map(|v| v.go_string())
                );
            }
            let expect: Vec<(String, String)> =
                b.iter().map(|(k, v)| (k.clone(), v.go_string())).collect();
            assert_eq!(as_btree(&d), expect);
            for k in ks.iter().chain([&"zz".to_string(), &"".to_string()]) {
                assert_eq!(d.contains_key(k), b.contains_key(k));
                assert_eq!(
                    d.get(k).map(Value::go_string),
                    b.get(k).map(Value::go_string)
                );
            }
            // Collected at once: the same map, the last value of a key winning.
            let collected: Dict = ks
                .iter()
                .enumerate()
                .map(|(i, k)| (k.as_str(), Value::Int(i as i64)))
                .collect();
            assert_eq!(as_btree(&collected), expect);
            for k in ks.iter().step_by(2) {
                assert_eq!(
                    d.remove(k).map(|v| v.go_string()),
                    b.remove(k).map(|v| v.go_string())
                );
            }
            let expect: Vec<(String, String)> =
                b.iter().map(|(k, v)| (k.clone(), v.go_string())).collect();
            assert_eq!(as_btree(&d), expect);
        }
    }

    /// Past `SMALL` entries inserted out of order the map is a tree: every operation
    /// still answers as `BTreeMap`, in reverse and in scattered order, and a copy made then
    /// (`clone`, `collect`) too.
    #[test]
    fn a_large_dict_built_out_of_order_behaves_as_a_sorted_map() {
        for order in ["reverse", "scattered"] {
            let n = 3 * SMALL + 7;
            let ks: Vec<String> = (0..n)
                .map(|i| match order {
                    "reverse" => format!("k{:05}", n - i),
                    _ => format!("k{:05}", (i * 7919) % n),
                })
                .collect();
            let mut d = Dict::new();
            let mut b: BTreeMap<String, Value> = BTreeMap::new();
            for (i, k) in ks.iter().enumerate() {
                d.insert(k.as_str(), Value::Int(i as i64));
                b.insert(k.clone(), Value::Int(i as i64));
            }
            assert!(matches!(d.0, Repr::Large(_)), "{order}: a tree");
            let expect = |b: &BTreeMap<String, Value>| -> Vec<(String, String)> {
                b.iter().map(|(k, v)| (k.clone(), v.go_string())).collect()
            };
            assert_eq!(as_btree(&d), expect(&b), "{order}");
            assert_eq!(d.len(), b.len());
            assert_eq!(as_btree(&d.clone()), expect(&b));
            let collected: Dict = d.clone().into_iter().collect();
            assert_eq!(as_btree(&collected), expect(&b));
            let back: Vec<String> = d.iter().rev().map(|(k, _)| k.to_string()).collect();
            let want: Vec<String> = b.keys().rev().cloned().collect();
            assert_eq!(back, want);
            for k in ks.iter().step_by(3) {
                assert_eq!(
                    d.insert(k.as_str(), Value::Nil).map(|v| v.go_string()),
                    b.insert(k.clone(), Value::Nil).map(|v| v.go_string())
                );
                assert_eq!(d.remove(k).is_some(), b.remove(k).is_some());
                assert!(!d.contains_key(k));
            }
            d.retain(|k, _| !k.ends_with('1'));
            b.retain(|k, _| !k.ends_with('1'));
            assert_eq!(as_btree(&d), expect(&b), "{order}");
            *d.get_or_insert_with("zz", || Value::Int(-1)) = Value::Int(-2);
            assert_eq!(d.get("zz").map(Value::go_string).as_deref(), Some("-2"));
        }
    }

    #[test]
    fn an_insert_keeps_the_key_it_had() {
        let mut d = Dict::new();
        let first: Rc<str> = Rc::from("k");
        d.insert(first.clone(), Value::Int(1));
        assert!(d.insert("k", Value::Int(2)).is_some());
        let (k, v) = d.get_key_value("k").unwrap();
        assert!(Rc::ptr_eq(k, &first));
        assert_eq!(v.go_string(), "2");
    }

    #[test]
    fn get_or_insert_with_inserts_once() {
        let mut d = Dict::new();
        *d.get_or_insert_with("b", || Value::Int(1)) = Value::Int(5);
        d.get_or_insert_with("b", || unreachable!("present"));
        d.get_or_insert_with("a", || Value::Int(0));
        assert_eq!(
            as_btree(&d),
            [("a".into(), "0".into()), ("b".into(), "5".into())]
        );
    }
}
