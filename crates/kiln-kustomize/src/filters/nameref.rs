//! kustomize's name-reference transformer: after objects were renamed (prefix, suffix, hash)
//! or moved (namespace), every field that refers to one of them by name is rewritten to the
//! new name — a Deployment's `envFrom[].configMapRef.name`, a RoleBinding's `roleRef.name`
//! and `subjects`, an HPA's `scaleTargetRef.name`, a webhook's `clientConfig.service`, …
//!
//! Where it sits: last, once per build, after the hash suffixes (kustomize's
//! `ResAccumulator.FixBackReferences` in `KustTarget.makeCustomizedResMap`). It relies on the
//! rename history each transformer records in `meta.previous_names`.
//!
//! The table ([`NAME_REFERENCES`]) is a complete port of kustomize v5.5's
//! `api/internal/konfig/builtinpluginconsts/namereference.go`, quirks included (e.g. the IngressClass
//! entry names the group `networking.k8s.io/v1`, so `ingressClassName` never follows a
//! renamed IngressClass, and Knative Services only have their `secretKeyRef` followed —
//! both checked against `kubectl kustomize` v5.5.0, cases n13 and n26), plus one fix: the
//! Secrets of `azureFile` and CSI pod volumes, which kustomize misses (n32). The matching
//! rules are `api/filters/nameref/nameref.go` and `resWrangler.SubsetThatCouldBeReferencedByResource`:
//! 1. candidates: objects the referrer can see — everything for a cluster-scoped referrer;
//!    otherwise cluster-scoped objects, objects in the referrer's namespace (absent =
//!    `default`) and, for a RoleBinding, objects in the namespaces its ServiceAccount subjects
//!    name;
//! 2. a candidate matches when one of its *previous* names equals the reference, its kind fits
//!    the table entry (and, for `roleRef/name`, the roleRef's `apiGroup`/`kind`), and it is in
//!    the referrer's namespace unless it or the referrer is cluster-scoped or it is a
//!    ServiceAccount;
//! 3. one match wins; with several, those whose prefix/suffix history ends like the
//!    referrer's are kept; still several with the same new name (and namespace) → the first;
//!    else an error;
//! 4. a reference that is a map with `name` (and maybe `namespace`) — RBAC subjects, webhook
//!    services — first narrows candidates to that namespace (by *original* namespace, then by
//!    current one), and gets the referral's namespace written too.
//!
//! Invariant: only reference fields change; objects never renamed match nothing.

use crate::filters::fieldspec::{split_path, visit};
use crate::filters::namespace::is_cluster_scoped;
pub use crate::konfig::name_references::{NAME_REFERENCES, NameReference, Referrer};
use kiln_base::resource::Resource;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Errors of the name-reference transformer.
#[derive(Debug, thiserror::Error, miette::Diagnostic, PartialEq, Eq)]
pub enum NameReferenceError {
    /// A reference could mean several renamed objects.
    #[error(
        "`{field}` of {referrer} refers to `{name}`, which matches several objects: {candidates}"
    )]
    #[diagnostic(
        code(kiln::kustomize::name_reference_ambiguous),
        help(
            "objects of the same kind and original name were renamed differently; give them distinct names or namespaces"
        )
    )]
    Ambiguous {
        referrer: String,
        field: String,
        name: String,
        candidates: String,
    },
    /// A map-shaped reference (RBAC subject, webhook service) has no `name`.
    #[error("`{field}` of {referrer} has an entry without `name`")]
    #[diagnostic(
        code(kiln::kustomize::name_reference_name_missing),
        help("every subject / service reference needs a `name`; kustomize rejects it as well")
    )]
    NameFieldMissing { referrer: String, field: String },
}

/// What the matcher needs to know about each object, taken before any reference changes.
struct Candidate {
    group: String,
    version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
    previous: Vec<(Option<String>, String)>,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
    cluster_scoped: bool,
    scopes: Vec<u32>,
    rename_scopes: Vec<u32>,
}

impl Candidate {
    fn of(res: &Resource) -> Self {
        Candidate {
            group: res.group().to_string(),
            version: res.version().to_string(),
            kind: res.kind().to_string(),
            namespace: res.namespace().map(str::to_string),
            name: res.name().to_string(),
            previous: res.meta.previous_names.clone(),
            prefixes: res.meta.name_prefixes.clone(),
            suffixes: res.meta.name_suffixes.clone(),
            cluster_scoped: is_cluster_scoped(res.group(), res.kind()),
            scopes: res.meta.scopes.clone(),
            rename_scopes: res.meta.rename_scopes.clone(),
        }
    }

    /// The name this object had when it entered the innermost kustomization that also built
    /// `referrer` — the name the referrer's author could see (`None`: no common one, e.g.
    /// objects built outside a kustomization).
    /// Also answers how far out that kustomization is from the referrer (0: the referrer's
    /// own).
    fn name_where_met(&self, referrer: &Candidate) -> Option<(usize, &str)> {
        let (out, met) = referrer
            .scopes
            .iter()
            .enumerate()
            .find(|(_, s)| self.scopes.contains(s))?;
        let at = self.scopes.iter().position(|s| s == met)?;
        for (i, (_, name)) in self.previous.iter().enumerate() {
            // Renames without a scope were made at the top of the build, after every scope.
            let made_at = self
                .rename_scopes
                .get(i)
                .and_then(|s| self.scopes.iter().position(|x| x == s))
                .unwrap_or(usize::MAX);
            if made_at >= at {
                return Some((out, name));
            }
        }
        Some((out, &self.name))
    }

    /// kustomize's `EffectiveNamespace` of the current id (cluster-scoped objects have none).
    fn effective_ns(&self) -> Option<&str> {
        (!self.cluster_scoped).then(|| effective(self.namespace.as_deref()))
    }

    /// Namespace of the original id (first previous id, else current), `default` when absent.
    fn original_effective_ns(&self) -> Option<&str> {
        if self.cluster_scoped {
            return None;
        }
        let ns = self
            .previous
            .first()
            .map_or(self.namespace.as_deref(), |(ns, _)| ns.as_deref());
        Some(effective(ns))
    }

    fn gvk_selected(&self, group: &str, version: &str, kind: &str) -> bool {
        (group.is_empty() || group == self.group)
            && (version.is_empty() || version == self.version)
            && (kind.is_empty() || kind == self.kind)
    }

    fn id_string(&self) -> String {
        let mut s = String::new();
        if !self.group.is_empty() {
            s.push_str(&self.group);
            s.push('/');
        }
        s.push_str(&self.kind);
        s.push('/');
        if let Some(ns) = &self.namespace {
            s.push_str(ns);
            s.push('/');
        }
        s.push_str(&self.name);
        s
    }
}

fn effective(ns: Option<&str>) -> &str {
    match ns {
        None | Some("") => "default",
        Some(s) => s,
    }
}

/// Rewrites every name reference to a renamed or moved object (see the module docs for the
/// rules). Run once, after all renames of the build.
///
/// Errors: [`NameReferenceError::Ambiguous`] when a reference matches differently renamed
/// objects; [`NameReferenceError::NameFieldMissing`] for a subject/service map without `name`.
pub fn fix_name_references(resources: &mut [Resource]) -> Result<(), NameReferenceError> {
    // The builtin table's paths are split once per process: every build of every BuildPlan
    // uses it (splitting it per build was 3 % of a render's CPU).
    static BUILTIN: std::sync::OnceLock<Vec<Vec<Vec<String>>>> = std::sync::OnceLock::new();
    let segs = BUILTIN.get_or_init(|| split_table(NAME_REFERENCES));
    fix_with_segments(resources, NAME_REFERENCES, segs)
}

/// Each referrer path of `table`, split into segments.
fn split_table(table: &[NameReference]) -> Vec<Vec<Vec<String>>> {
    table
        .iter()
        .map(|t| t.referrers.iter().map(|s| split_path(&s.path)).collect())
        .collect()
}

/// [`fix_name_references`] with a custom table (kustomize's `configurations:` can extend it).
///
/// Linear in the number of objects (times the references each holds): kustomize re-scans every
/// object for every reference, which is what makes it quadratic. Here the candidates for a
/// reference come from an index by previous name (`Lookup`), and "visible to the referrer"
/// is a predicate (`Visible`) instead of a list built per referrer. The order of candidates
/// (ascending object position) and every rule of the scan are kept, so the result is the same.
pub fn fix_name_references_with(
    resources: &mut [Resource],
    table: &[NameReference],
) -> Result<(), NameReferenceError> {
    // Paths split once per build, not once per (object, field spec).
    fix_with_segments(resources, table, &split_table(table))
}

/// [`fix_name_references_with`], the paths of `table` already split (`segs`, as
/// [`split_table`]).
fn fix_with_segments(
    resources: &mut [Resource],
    table: &[NameReference],
    segs: &[Vec<Vec<String>>],
) -> Result<(), NameReferenceError> {
    let all: Vec<Candidate> = resources.iter().map(Candidate::of).collect();
    let lookup = Lookup::of(&all);
    for (ri, res) in resources.iter_mut().enumerate() {
        let referrer = &all[ri];
        let mut visible: Option<Visible> = None;
        for (target, target_segs) in table.iter().zip(segs) {
            for (spec, segs) in target.referrers.iter().zip(target_segs) {
                if !referrer.gvk_selected(&spec.group, &spec.version, &spec.kind) {
                    continue;
                }
                let visible = visible.get_or_insert_with(|| Visible::of(referrer, &res.value));
                let role_ref = role_ref_gvk(&res.value);
                let ctx = Ctx {
                    all: &all,
                    lookup: &lookup,
                    visible,
                    referrer,
                    role_ref: role_ref.as_ref(),
                    target,
                    spec,
                };
                let mut err = None;
                // The walk hands over a `null` at the end of the path; it names nothing.
                visit(&mut res.value, segs, false, &mut |node| {
                    if err.is_none()
                        && !node.is_null()
                        && let Err(e) = ctx.set(node)
                    {
                        err = Some(e);
                    }
                });
                if let Some(e) = err {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// Indexes over the candidates, built once per build (they never change during the fix-up).
struct Lookup<'a> {
    /// Previous name → positions of the objects that once had it, ascending, no repeats.
    /// Only renamed or moved objects can be referrals, and only under a previous name, so
    /// this is exactly the set kustomize's scan would keep after `previousNameMatches`.
    by_previous_name: HashMap<&'a str, Vec<usize>>,
    /// Current name → positions, ascending.
    by_name: HashMap<&'a str, Vec<usize>>,
    /// Original effective namespaces of namespaced objects, alone and paired with the
    /// current effective / raw namespace: answers "does any visible object have this
    /// original namespace?" (`filterMapCandidatesByNamespace`) without a scan.
    original: HashSet<&'a str>,
    original_by_effective: HashSet<(&'a str, &'a str)>,
    original_by_raw: HashSet<(&'a str, &'a str)>,
}

impl<'a> Lookup<'a> {
    fn of(all: &'a [Candidate]) -> Self {
        let mut by_previous_name: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut original = HashSet::new();
        let mut original_by_effective = HashSet::new();
        let mut original_by_raw = HashSet::new();
        for (i, c) in all.iter().enumerate() {
            by_name.entry(c.name.as_str()).or_default().push(i);
            for (_, name) in &c.previous {
                let list = by_previous_name.entry(name.as_str()).or_default();
                // An object can carry the same name in several previous ids (moved, then
                // prefixed): list it once, as the scan would.
                if list.last() != Some(&i) {
                    list.push(i);
                }
            }
            if let (Some(orig), Some(eff)) = (c.original_effective_ns(), c.effective_ns()) {
                original.insert(orig);
                original_by_effective.insert((orig, eff));
                original_by_raw.insert((orig, c.namespace.as_deref().unwrap_or("")));
            }
        }
        Lookup {
            by_previous_name,
            by_name,
            original,
            original_by_effective,
            original_by_raw,
        }
    }
}

/// kustomize's `SubsetThatCouldBeReferencedByResource`, as a membership test: everything for
/// a cluster-scoped referrer; otherwise cluster-scoped objects, objects in the referrer's
/// effective namespace, and, for a RoleBinding, objects in the namespaces its ServiceAccount
/// subjects name (compared with the raw current namespace, "" when absent:
/// `getNamespacesForRoleBinding`).
struct Visible {
    everything: bool,
    namespace: Option<String>,
    role_binding_namespaces: Vec<String>,
}

impl Visible {
    fn of(referrer: &Candidate, referrer_value: &Value) -> Self {
        let mut role_binding_namespaces = Vec::new();
        if referrer.kind == "RoleBinding"
            && let Some(subjects) = referrer_value.get("subjects").and_then(Value::as_array)
        {
            for s in subjects {
                if s.get("kind").and_then(Value::as_str) == Some("ServiceAccount")
                    && let Some(ns) = s.get("namespace").and_then(Value::as_str)
                {
                    role_binding_namespaces.push(ns.to_string());
                }
            }
        }
        Visible {
            everything: referrer.cluster_scoped,
            namespace: referrer.effective_ns().map(str::to_string),
            role_binding_namespaces,
        }
    }

    fn contains(&self, c: &Candidate) -> bool {
        self.everything
            || c.cluster_scoped
            || c.effective_ns() == self.namespace.as_deref()
            || self
                .role_binding_namespaces
                .iter()
                .any(|n| n == c.namespace.as_deref().unwrap_or(""))
    }

    /// Whether some visible object has original effective namespace `ns` (only namespaced
    /// objects have one).
    fn has_original_namespace(&self, lookup: &Lookup<'_>, ns: &str) -> bool {
        if self.everything {
            return lookup.original.contains(ns);
        }
        self.namespace
            .as_deref()
            .is_some_and(|eff| lookup.original_by_effective.contains(&(ns, eff)))
            || self
                .role_binding_namespaces
                .iter()
                .any(|raw| lookup.original_by_raw.contains(&(ns, raw.as_str())))
    }
}

/// `roleRef.apiGroup` and `roleRef.kind`, when both are present.
fn role_ref_gvk(value: &Value) -> Option<(String, String)> {
    let rr = value.get("roleRef")?;
    let group = rr.get("apiGroup")?.as_str()?.to_string();
    let kind = rr.get("kind")?.as_str()?.to_string();
    Some((group, kind))
}

struct Ctx<'a> {
    all: &'a [Candidate],
    lookup: &'a Lookup<'a>,
    /// Which objects the referrer can see.
    visible: &'a Visible,
    referrer: &'a Candidate,
    /// The referrer's roleRef group and kind (used for `roleRef/name` fields).
    role_ref: Option<&'a (String, String)>,
    target: &'a NameReference,
    spec: &'a Referrer,
}

impl Ctx<'_> {
    fn field_error_context(&self) -> (String, String) {
        (
            self.referrer.id_string(),
            self.spec.path.replace("\\/", "/"),
        )
    }

    /// nameref `Filter.set`: scalar, map, or a list of either.
    fn set(&self, node: &mut Value) -> Result<(), NameReferenceError> {
        match node {
            Value::String(_) => self.set_scalar(node),
            Value::Object(_) => self.set_mapping(node),
            Value::Array(items) => {
                for it in items.iter_mut() {
                    match it {
                        Value::String(_) => self.set_scalar(it)?,
                        Value::Object(_) => self.set_mapping(it)?,
                        _ => {}
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn set_scalar(&self, node: &mut Value) -> Result<(), NameReferenceError> {
        let Some(old) = node.as_str() else {
            return Ok(());
        };
        let Some(i) = self.select(old, &|c| self.visible.contains(c), false)? else {
            return Ok(());
        };
        let new = &self.all[i].name;
        if new != old {
            *node = Value::String(new.clone());
        }
        Ok(())
    }

    fn set_mapping(&self, node: &mut Value) -> Result<(), NameReferenceError> {
        let Some(map) = node.as_object_mut() else {
            return Ok(());
        };
        let old = match map.get("name") {
            None => {
                let (referrer, field) = self.field_error_context();
                return Err(NameReferenceError::NameFieldMissing { referrer, field });
            }
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Ok(()),
        };
        let selected = match map.get("namespace") {
            None => self.select(&old, &|c| self.visible.contains(c), true)?,
            Some(ns) => {
                let ns = ns.as_str().unwrap_or("");
                // kustomize's `filterMapCandidatesByNamespace`: original namespace first
                // (when any visible object has it), then current; keys are effective
                // namespaces (absent = `default`).
                if self.visible.has_original_namespace(self.lookup, ns) {
                    self.select(
                        &old,
                        &|c| self.visible.contains(c) && c.original_effective_ns() == Some(ns),
                        true,
                    )?
                } else {
                    self.select(
                        &old,
                        &|c| self.visible.contains(c) && c.effective_ns() == Some(ns),
                        true,
                    )?
                }
            }
        };
        let Some(i) = selected else {
            return Ok(());
        };
        let referral = &self.all[i];
        let new_ns = referral.namespace.as_deref().unwrap_or("");
        if referral.name == old && new_ns.is_empty() {
            return Ok(());
        }
        map.insert("name".into(), Value::String(referral.name.clone()));
        // An empty namespace is a wildcard here, not `default`: never write "".
        if !new_ns.is_empty() {
            map.insert("namespace".into(), Value::String(new_ns.to_string()));
        }
        Ok(())
    }

    /// nameref `selectReferral` over the objects `candidate` accepts. `with_namespace` selects
    /// the identity test used to accept several equivalent candidates (name, or name and
    /// namespace).
    fn select(
        &self,
        old: &str,
        candidate: &dyn Fn(&Candidate) -> bool,
        with_namespace: bool,
    ) -> Result<Option<usize>, NameReferenceError> {
        // An object never renamed or moved needs no rewrite: the reference already names it.
        Ok(self
            .select_any(old, candidate, with_namespace)?
            .filter(|&i| !self.all[i].previous.is_empty()))
    }

    /// [`Ctx::select`], also answering objects never renamed.
    fn select_any(
        &self,
        old: &str,
        candidate: &dyn Fn(&Candidate) -> bool,
        with_namespace: bool,
    ) -> Result<Option<usize>, NameReferenceError> {
        let t = self.target;
        let is_role_ref = self.spec.path.ends_with("roleRef/name");
        let fits = |c: &Candidate| {
            candidate(c)
                && c.gvk_selected(&t.group, &t.version, &t.kind)
                && (!is_role_ref || self.role_ref.is_none_or(|(g, k)| c.gvk_selected(g, "", k)))
                && (self.referrer.cluster_scoped
                    || c.cluster_scoped
                    || c.kind == "ServiceAccount"
                    || c.effective_ns() == self.referrer.effective_ns())
        };
        // Divergence (tests/kustomize/n31, DIVERGENCES.md): objects that were named `old`
        // where the referrer first met them are what the reference means, renamed or not.
        // kustomize matches any previous name instead, so a Deployment renamed by an
        // `allowNameChange` patch in one base captures the references of a sibling base to
        // its own, unrenamed Deployment of the same name. Only when no object was named
        // `old` there (an overlay naming a base's object by its name before the base's
        // prefix) does kustomize's rule apply.
        // The innermost such kustomization wins: a base's own object over a sibling's.
        let mut met: Vec<(usize, usize)> = [&self.lookup.by_previous_name, &self.lookup.by_name]
            .iter()
            .filter_map(|index| index.get(old))
            .flatten()
            .filter_map(|&i| {
                let c = &self.all[i];
                match c.name_where_met(self.referrer) {
                    Some((out, name)) if name == old && fits(c) => Some((out, i)),
                    _ => None,
                }
            })
            .collect();
        let innermost = met.iter().map(|&(out, _)| out).min();
        met.retain(|&(out, _)| Some(out) == innermost);
        let mut met: Vec<usize> = met.into_iter().map(|(_, i)| i).collect();
        met.sort_unstable();
        met.dedup();
        let sieved: Vec<usize> = if !met.is_empty() {
            met
        } else {
            // Only objects that once were named `old` can pass the sieve below, so start
            // from the index instead of scanning every object (ascending, like the scan).
            let named_old = self
                .lookup
                .by_previous_name
                .get(old)
                .map_or(&[][..], Vec::as_slice);
            named_old
                .iter()
                .copied()
                .filter(|&i| {
                    let c = &self.all[i];
                    // `previousNameMatches` and `previousIdSelectedByGvk` look at previous
                    // ids only: an object never renamed or moved is never a referral.
                    fits(c) && c.previous.iter().any(|(_, n)| n == old)
                })
                .collect()
        };
        if sieved.len() == 1 {
            return Ok(Some(sieved[0]));
        }
        let sieved: Vec<usize> = sieved
            .into_iter()
            .filter(|&i| {
                let c = &self.all[i];
                same_ending(&c.prefixes, &self.referrer.prefixes)
                    && same_ending(&c.suffixes, &self.referrer.suffixes)
            })
            .collect();
        match sieved.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            [first, rest @ ..] => {
                let f = &self.all[*first];
                let identical = rest.iter().all(|&i| {
                    self.all[i].name == f.name
                        && (!with_namespace || self.all[i].namespace == f.namespace)
                });
                if identical {
                    return Ok(Some(*first));
                }
                let (referrer, field) = self.field_error_context();
                let candidates = sieved
                    .iter()
                    .map(|&i| self.all[i].id_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                Err(NameReferenceError::Ambiguous {
                    referrer,
                    field,
                    name: old.to_string(),
                    candidates,
                })
            }
        }
    }
}

/// kustomize's `SameEndingSubSlice`: the shorter list equals the tail of the longer one; an
/// empty list only equals an empty list.
fn same_ending(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return long.is_empty();
    }
    long[long.len() - short.len()..] == *short
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::{namespace, prefix_suffix as name_prefix_suffix};
    use crate::hash;
    use serde_json::json;

    fn res(v: Value) -> Resource {
        Resource::new(v, None)
    }

    #[test]
    fn path_splitting_and_walking() {
        assert_eq!(
            split_path("metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret"),
            [
                "metadata",
                "annotations",
                "nginx.ingress.kubernetes.io/auth-secret"
            ]
        );
        let mut v = json!({"rules": [{"resourceNames": ["a", "b"]}, {"verbs": ["get"]}]});
        let mut seen = vec![];
        visit(
            &mut v,
            &split_path("rules/resourceNames"),
            false,
            &mut |n| seen.push(n.clone()),
        );
        assert_eq!(seen, [json!(["a", "b"])]);
        assert!(same_ending(&["a".into(), "b".into()], &["b".into()]));
        assert!(!same_ending(&["a".into()], &[]));
        assert!(same_ending(&[], &[]));
    }

    /// k01-rbac-subject-namespace end to end: namespace transformer, then name references.
    #[test]
    fn k01_rbac_subjects_follow_the_service_account() {
        let sa = res(
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "worker"}}),
        );
        let crb = res(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "worker-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
            "subjects": [
                {"kind": "ServiceAccount", "name": "worker", "namespace": "default"},
                {"kind": "ServiceAccount", "name": "external-agent", "namespace": "monitoring"},
                {"kind": "ServiceAccount", "name": "worker"}]}),
        );
        let rb = res(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "worker-edit"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "editor"},
            "subjects": [
                {"kind": "ServiceAccount", "name": "worker", "namespace": "other"},
                {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
        );
        let probe = res(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "probe"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
            "subjects": [
                {"kind": "ServiceAccount", "name": "default", "namespace": "somewhere"},
                {"kind": "ServiceAccount", "name": "default"},
                {"kind": "ServiceAccount", "name": "unknown-sa2", "namespace": "default"}]}),
        );
        let mut rs = vec![sa, crb, rb, probe];
        namespace::apply_namespace(&mut rs, "team-blue").unwrap();
        fix_name_references(&mut rs).unwrap();
        // /work/shared/cases/k01-rbac-subject-namespace/expected.yaml
        assert_eq!(rs[0].namespace(), Some("team-blue"));
        assert_eq!(
            rs[1].value["subjects"],
            json!([
                {"kind": "ServiceAccount", "name": "worker", "namespace": "team-blue"},
                {"kind": "ServiceAccount", "name": "external-agent", "namespace": "monitoring"},
                {"kind": "ServiceAccount", "name": "worker", "namespace": "team-blue"}])
        );
        assert_eq!(rs[1].namespace(), None);
        assert_eq!(
            rs[2].value["subjects"],
            json!([
                {"kind": "ServiceAccount", "name": "worker", "namespace": "other"},
                {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}])
        );
        assert_eq!(rs[2].namespace(), Some("team-blue"));
        assert_eq!(
            rs[3].value["subjects"],
            json!([
                {"kind": "ServiceAccount", "name": "default", "namespace": "team-blue"},
                {"kind": "ServiceAccount", "name": "default", "namespace": "team-blue"},
                {"kind": "ServiceAccount", "name": "unknown-sa2", "namespace": "default"}])
        );
    }

    /// k05: the overlay's pieces in kustomize's order — generated ConfigMaps (the base one
    /// already merged), namespace, prefix, suffix, hash, name references.
    #[test]
    fn k05_generated_names_reach_every_reference() {
        let mut settings = res(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-settings"},
            "data": {"LOG_LEVEL": "warn", "FEATURE_X": "off"}}),
        );
        settings.meta.needs_hash_suffix = true;
        let mut files = res(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-files"},
            "data": {"app.properties": "timeout=30\nretries=3\n"}}),
        );
        files.meta.needs_hash_suffix = true;
        let deploy = res(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"},
            "spec": {"template": {"spec": {
                "containers": [{"name": "app",
                    "env": [{"name": "LEVEL_FROM_SETTINGS", "valueFrom": {"configMapKeyRef": {"name": "app-settings", "key": "LOG_LEVEL"}}}],
                    "envFrom": [{"configMapRef": {"name": "app-settings"}}]}],
                "volumes": [{"name": "files", "configMap": {"name": "app-files"}}]}}}}),
        );
        let mut rs = vec![deploy, settings, files];
        namespace::apply_namespace(&mut rs, "shop-prod").unwrap();
        name_prefix_suffix::apply_name_prefix(&mut rs, "prod-");
        name_prefix_suffix::apply_name_suffix(&mut rs, "-v2");
        hash::apply_hash_suffixes(&mut rs).unwrap();
        fix_name_references(&mut rs).unwrap();
        let spec = &rs[0].value["spec"]["template"]["spec"];
        assert_eq!(rs[0].name(), "prod-app-v2");
        assert_eq!(
            spec["containers"][0]["envFrom"][0]["configMapRef"]["name"],
            "prod-app-settings-v2-7mh5hth542"
        );
        assert_eq!(
            spec["containers"][0]["env"][0]["valueFrom"]["configMapKeyRef"]["name"],
            "prod-app-settings-v2-7mh5hth542"
        );
        assert_eq!(
            spec["volumes"][0]["configMap"]["name"],
            "prod-app-files-v2-bh4ckb66bc"
        );
    }

    #[test]
    fn role_ref_respects_kind_and_namespaces() {
        let role = res(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r", "namespace": "a"}}),
        );
        let cr = res(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}),
        );
        let rb_role = res(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "b1", "namespace": "a"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}),
        );
        let rb_cr = res(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "b2", "namespace": "a"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"}}),
        );
        let rb_other_ns = res(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "b3", "namespace": "z"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}),
        );
        let mut rs = vec![role, cr, rb_role, rb_cr, rb_other_ns];
        // Rename only the Role and the ClusterRole, differently.
        rs[0]
            .meta
            .previous_names
            .push((Some("a".into()), "r".into()));
        rs[0].set_name("role-r");
        rs[1].meta.previous_names.push((None, "r".into()));
        rs[1].set_name("cluster-r");
        fix_name_references(&mut rs).unwrap();
        assert_eq!(rs[2].value["roleRef"]["name"], "role-r");
        assert_eq!(rs[3].value["roleRef"]["name"], "cluster-r");
        assert_eq!(
            rs[4].value["roleRef"]["name"], "r",
            "a Role in another namespace is not visible"
        );
    }

    #[test]
    fn a_reference_means_the_object_named_so_where_the_referrer_met_it() {
        // n31: scopes 1 (canary) and 2 (stable) under the overlay 0.
        let deploy = |name: &str, scopes: Vec<u32>| {
            let mut d = res(
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}}),
            );
            d.meta.scopes = scopes;
            d
        };
        let hpa = |scopes: Vec<u32>| {
            let mut h = res(
                json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}}}),
            );
            h.meta.scopes = scopes;
            h
        };
        let mut canary = deploy("web-canary", vec![1, 0]);
        canary.meta.previous_names.push((None, "web".into()));
        canary.meta.rename_scopes.push(1);
        let target = |r: &Resource| r.value["spec"]["scaleTargetRef"]["name"].clone();
        let mut rs = vec![
            canary.clone(),
            deploy("web", vec![2, 0]),
            hpa(vec![1, 0]),
            hpa(vec![2, 0]),
        ];
        fix_name_references(&mut rs).unwrap();
        assert_eq!(
            target(&rs[2]),
            "web-canary",
            "the canary base's own HPA follows"
        );
        assert_eq!(
            target(&rs[3]),
            "web",
            "the stable base's HPA keeps its Deployment"
        );
        // An overlay object naming the base's object by its name before the rename still
        // follows it (kustomize's rule, when nothing else carried the name).
        let mut rs = vec![canary, hpa(vec![0])];
        fix_name_references(&mut rs).unwrap();
        assert_eq!(target(&rs[1]), "web-canary");
    }

    #[test]
    fn ambiguous_references_fail_and_prefix_history_breaks_ties() {
        let mk = |ns: &str, new: &str, prefix: &str| {
            let mut c = res(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": new, "namespace": ns}}),
            );
            c.meta.previous_names.push((Some(ns.into()), "cm".into()));
            c.meta.name_prefixes.push(prefix.into());
            c
        };
        let pod = |prefixes: Vec<String>| {
            let mut p = res(
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "x"},
                "spec": {"volumes": [{"configMap": {"name": "cm"}}]}}),
            );
            p.meta.name_prefixes = prefixes;
            p
        };
        let mut rs = vec![
            mk("x", "a-cm", "a-"),
            mk("x", "b-cm", "b-"),
            pod(vec!["b-".into()]),
        ];
        fix_name_references(&mut rs).unwrap();
        assert_eq!(
            rs[2].value["spec"]["volumes"][0]["configMap"]["name"],
            "b-cm"
        );
        let mut rs = vec![
            mk("x", "a-cm", "a-"),
            mk("x", "b-cm", "a-"),
            pod(vec!["a-".into()]),
        ];
        let e = fix_name_references(&mut rs).unwrap_err();
        assert!(matches!(e, NameReferenceError::Ambiguous { ref name, .. } if name == "cm"));
    }

    #[test]
    fn webhook_service_and_role_resource_names_and_annotations() {
        let svc =
            res(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "webhook"}}));
        let sec = res(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "auth"}}));
        let mwc = res(
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "m"},
            "webhooks": [
                {"name": "a", "clientConfig": {"service": {"name": "webhook", "namespace": "default"}}},
                {"name": "b", "clientConfig": {"service": {"name": "webhook", "namespace": "elsewhere"}}},
                {"name": "c", "clientConfig": {"url": "https://x"}}]}),
        );
        let role = res(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
            "rules": [{"resources": ["secrets"], "resourceNames": ["auth", "unrelated"]}]}),
        );
        let ing = res(
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i",
            "annotations": {"nginx.ingress.kubernetes.io/auth-secret": "auth"}}, "spec": {"ingressClassName": "nginx"}}),
        );
        let ic = res(
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"}}),
        );
        let mut rs = vec![svc, sec, mwc, role, ing, ic];
        namespace::apply_namespace(&mut rs, "sys").unwrap();
        name_prefix_suffix::apply_name_prefix(&mut rs, "p-");
        fix_name_references(&mut rs).unwrap();
        assert_eq!(
            rs[2].value["webhooks"][0]["clientConfig"]["service"],
            json!({"name": "p-webhook", "namespace": "sys"})
        );
        assert_eq!(
            rs[2].value["webhooks"][1]["clientConfig"]["service"],
            json!({"name": "webhook", "namespace": "elsewhere"})
        );
        assert_eq!(
            rs[3].value["rules"][0]["resourceNames"],
            json!(["p-auth", "unrelated"])
        );
        assert_eq!(
            rs[4].value["metadata"]["annotations"]["nginx.ingress.kubernetes.io/auth-secret"],
            "p-auth"
        );
        // kustomize quirk: IngressClass references are never updated.
        assert_eq!(rs[5].name(), "p-nginx");
        assert_eq!(rs[4].value["spec"]["ingressClassName"], "nginx");
    }

    #[test]
    fn subject_without_name_is_an_error() {
        let mut sa =
            res(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x"}}));
        sa.meta.previous_names.push((None, "y".into()));
        let crb = res(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "c"},
            "subjects": [{"kind": "Group"}]}),
        );
        let mut rs = vec![sa, crb];
        let e = fix_name_references(&mut rs).unwrap_err();
        assert!(
            matches!(e, NameReferenceError::NameFieldMissing { ref field, .. } if field == "subjects")
        );
    }
}
