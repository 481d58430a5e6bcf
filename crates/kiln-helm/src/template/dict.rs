//! Go's `map[string]interface{}` as templates hold it: [`Dict`], the map behind every
//! [`Value::Map`].
//!
//! [`Value::Map`]: super::value::Value::Map
//!
//! Go ranges over a map's keys in sorted order, and encoding/json and sigs.k8s.io/yaml
//! sort them too, so sorted is the only order Helm ever shows: a `Dict` keeps its entries
//! sorted by key bytes, unique.
//!
//! It is a sorted vector rather than a `BTreeMap<String, _>` because of what templates do
//! with maps (issue 37, nats: `dict` with five keys per node of a values walk, then `get`
//! and `hasKey` on it, then dropped):
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
//! An insert into the middle moves the entries after it: building a map of n keys one
//! `set` at a time in reverse order costs n²/2 moves (about 0.1 s at 10,000 keys), where
//! Go's hash map costs n. Charts build such maps with tens of keys.

use super::value::Value;
use std::rc::Rc;

/// Up to this many entries a lookup scans; past it, it bisects.
const LINEAR: usize = 8;

/// A Go `map[string]interface{}`: entries sorted by key bytes, keys unique.
#[derive(Clone, Default)]
pub struct Dict {
    entries: Vec<(Rc<str>, Value)>,
}

impl Dict {
    pub fn new() -> Dict {
        Dict::default()
    }

    pub fn with_capacity(n: usize) -> Dict {
        Dict {
            entries: Vec::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Where `key` is (`Ok`), or where it would go (`Err`).
    fn find(&self, key: &str) -> Result<usize, usize> {
        if self.entries.len() <= LINEAR {
            for (i, (k, _)) in self.entries.iter().enumerate() {
                // Equal lengths first: most keys of a small map differ in length, and then
                // no byte is compared.
                if k.len() == key.len() && **k == *key {
                    return Ok(i);
                }
            }
            return Err(self.entries.partition_point(|(k, _)| **k < *key));
        }
        self.entries.binary_search_by(|(k, _)| (**k).cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.find(key).ok().map(|i| &mut self.entries[i].1)
    }

    /// The key as the map holds it, and its value.
    pub fn get_key_value(&self, key: &str) -> Option<(&Rc<str>, &Value)> {
        self.find(key)
            .ok()
            .map(|i| (&self.entries[i].0, &self.entries[i].1))
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key` to `v`; the value it had, if it had one (the key stays as it was).
    pub fn insert<K: AsRef<str> + Into<Rc<str>>>(&mut self, key: K, v: Value) -> Option<Value> {
        // Keys that arrive in order (encoding/json's output read back) go on the end.
        if let Some((last, _)) = self.entries.last()
            && **last < *key.as_ref()
        {
            self.entries.push((key.into(), v));
            return None;
        }
        match self.find(key.as_ref()) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, v)),
            Err(i) => {
                self.entries.insert(i, (key.into(), v));
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
        let i = match self.find(key.as_ref()) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (key.into(), make()));
                i
            }
        };
        &mut self.entries[i].1
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.find(key).ok().map(|i| self.entries.remove(i).1)
    }

    /// Keeps the entries `keep` says to keep, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &mut Value) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter(self.entries.iter())
    }

    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = (&Rc<str>, &mut Value)> {
        self.entries.iter_mut().map(|(k, v)| (&*k, v))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Rc<str>> + ExactSizeIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.entries.iter().map(|(_, v)| v)
    }

    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut Value> {
        self.entries.iter_mut().map(|(_, v)| v)
    }
}

/// The entries of a [`Dict`], by key.
#[derive(Clone)]
pub struct Iter<'a>(std::slice::Iter<'a, (Rc<str>, Value)>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Rc<str>, &'a Value);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, v))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Dict {
    type Item = (&'a Rc<str>, &'a Value);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for Dict {
    type Item = (Rc<str>, Value);
    type IntoIter = std::vec::IntoIter<(Rc<str>, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

/// As a `BTreeMap` collects: sorted, and of equal keys the last value wins.
impl<K: Into<Rc<str>>> FromIterator<(K, Value)> for Dict {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Dict {
        let mut entries: Vec<(Rc<str>, Value)> =
            iter.into_iter().map(|(k, v)| (k.into(), v)).collect();
        if entries.windows(2).all(|w| w[0].0 < w[1].0) {
            return Dict { entries };
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
        Dict { entries: out }
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
        for (seed, n) in [(1, 3), (2, 8), (3, 9), (4, 40), (5, 300)] {
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
