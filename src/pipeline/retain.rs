//! What a render keeps of each BuildPlan from its render to the end of the run (issue 38,
//! item 8): the plan's provenance (where each object of its `.gen.yaml` came from, read by
//! the validation's findings at the end) and its reads (for the journal).
//!
//! Both were the largest part of what a render held per plan: at 10,000 × 10, about 8 KB of
//! provenance (each object's fields set by the spec, four strings each) and 2 KB of reads per
//! plan, 1 GB in all, kept from each plan's render to the end. Every environment of a
//! component instance mostly gives the same values (the same files, the same patches), so a
//! value equal to one already kept for the same component is shared ([`Retained::keep`]):
//! the same value, one allocation. Reads are not kept at all when no journal will be stored.

use crate::cache::Read;
use crate::resource::Provenance;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A plan's provenance, one entry per document of its `.gen.yaml`.
pub(super) type Provenances = Arc<[Option<Provenance>]>;

/// What is kept of one plan: its provenance and reads, shared with the other plans of its
/// component that have the same.
#[derive(Debug, Clone)]
pub(super) struct Kept {
    pub(super) provenance: Provenances,
    pub(super) reads: Arc<[Read]>,
}

impl Kept {
    /// `e`'s provenance and reads, moved out of it, shared with nothing (a shard's render).
    pub(super) fn unshared(e: &mut crate::cache::Emitted) -> Kept {
        Kept {
            provenance: std::mem::take(&mut e.provenance).into(),
            reads: std::mem::take(&mut e.reads).into(),
        }
    }
}

/// How many distinct values of one component are looked through before a new one is kept
/// unshared: a component's environments rarely differ in more than a few ways, and each
/// comparison walks the whole value.
const DISTINCT: usize = 8;

/// The values kept so far, by component directory (see the module docs).
pub(super) struct Retained {
    /// Whether reads are kept (a journal will be stored).
    reads: bool,
    by_component: Mutex<BTreeMap<PathBuf, Distinct>>,
}

/// The distinct values kept for one component.
#[derive(Default)]
struct Distinct {
    provenance: Vec<Provenances>,
    reads: Vec<Arc<[Read]>>,
}

impl Retained {
    /// Keeps reads only when `reads` (a journal will be stored).
    pub(super) fn new(reads: bool) -> Self {
        Retained {
            reads,
            by_component: Mutex::default(),
        }
    }

    /// The provenance and reads of `e`, a plan of the component in `dir`, moved out of it:
    /// each shared with an equal value kept earlier for the same component. Reads are
    /// dropped when none are kept.
    pub(super) fn keep(&self, dir: &Path, e: &mut crate::cache::Emitted) -> Kept {
        let provenance = std::mem::take(&mut e.provenance);
        let reads = match self.reads {
            true => std::mem::take(&mut e.reads),
            false => {
                e.reads = Vec::new();
                Vec::new()
            }
        };
        // Poisoned only by a panic elsewhere, which ends the run anyway.
        let mut all = self.by_component.lock().unwrap_or_else(|e| e.into_inner());
        let distinct = match all.get_mut(dir) {
            Some(d) => d,
            None => all.entry(dir.to_path_buf()).or_default(),
        };
        Kept {
            provenance: share(&mut distinct.provenance, provenance),
            reads: share(&mut distinct.reads, reads),
        }
    }
}

/// `value`, or an equal one of `seen`; a new value is added to `seen` (up to [`DISTINCT`]).
fn share<T: PartialEq>(seen: &mut Vec<Arc<[T]>>, value: Vec<T>) -> Arc<[T]> {
    if let Some(same) = seen.iter().find(|s| ***s == *value) {
        return same.clone();
    }
    let value: Arc<[T]> = value.into();
    if seen.len() < DISTINCT {
        seen.push(value.clone());
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::FieldSet;

    fn emitted(file: &str, by: &str) -> crate::cache::Emitted {
        let set = FieldSet {
            pointer: "/metadata/labels/app".into(),
            file: "components/a/component.yaml".into(),
            at: "/spec/transformers/0/labels/app".into(),
            by: by.into(),
        };
        crate::cache::Emitted {
            key: String::new(),
            files: Vec::new(),
            cluster_kinds: Default::default(),
            reads: vec![Read {
                op: "read".into(),
                path: file.into(),
                result: "0".repeat(64),
            }],
            provenance: vec![Some(Provenance {
                file: Some(file.into()),
                document: 0,
                template: false,
                set: vec![set],
                chart: None,
            })],
            warnings: Vec::new(),
        }
    }

    /// Issue 38, item 8: the environments of a component with the same provenance and reads
    /// hold one copy of each, however many there are; a different value is kept as it is.
    #[test]
    fn equal_values_of_a_component_are_held_once() {
        let retained = Retained::new(true);
        let dir = Path::new("/r/components/a");
        let kept: Vec<Kept> = (0..10)
            .map(|_| retained.keep(dir, &mut emitted("components/a/cm.yaml", "labels")))
            .collect();
        for k in &kept[1..] {
            assert!(Arc::ptr_eq(&k.provenance, &kept[0].provenance));
            assert!(Arc::ptr_eq(&k.reads, &kept[0].reads));
        }
        // Ten plans, one value: the kept one and the ten plans' references.
        assert_eq!(Arc::strong_count(&kept[0].provenance), 11);
        let other = retained.keep(dir, &mut emitted("components/a/cm.yaml", "jsonPatch"));
        assert!(!Arc::ptr_eq(&other.provenance, &kept[0].provenance));
        assert_eq!(other.provenance[0].as_ref().unwrap().set[0].by, "jsonPatch");
        assert!(Arc::ptr_eq(&other.reads, &kept[0].reads));
        // Another component never shares, even with equal values.
        let b = retained.keep(
            Path::new("/r/components/b"),
            &mut emitted("components/a/cm.yaml", "labels"),
        );
        assert!(!Arc::ptr_eq(&b.provenance, &kept[0].provenance));
        assert_eq!(b.provenance, kept[0].provenance);
    }

    /// Without a journal the reads are not kept at all.
    #[test]
    fn reads_are_dropped_without_a_journal() {
        let retained = Retained::new(false);
        let mut e = emitted("components/a/cm.yaml", "labels");
        let k = retained.keep(Path::new("/r/components/a"), &mut e);
        assert!(k.reads.is_empty() && e.reads.is_empty());
        assert_eq!(k.provenance.len(), 1);
        assert!(e.provenance.is_empty(), "moved out, not copied");
    }

    #[test]
    fn a_component_keeps_a_bounded_number_of_distinct_values() {
        let mut seen = Vec::new();
        for i in 0..20 {
            share(&mut seen, vec![i]);
        }
        assert_eq!(seen.len(), DISTINCT);
        let again = share(&mut seen, vec![3]);
        assert!(Arc::ptr_eq(&again, &seen[3]));
    }
}
