//! Legacy `vars`: `$(NAME)` in selected fields is replaced by a field of another object
//! (kustomize's `MergeVars`, `ResolveVars` and `refvar` filter, deprecated in favour of
//! `replacements` but still common in real trees).
//!
//! Where it sits: [`bind_vars`] runs when a kustomization finishes accumulating (each var is
//! bound to the one object its `objref` selects by *original* id among what that
//! kustomization has built); [`resolve_vars`] runs once at the top, after hash suffixes and
//! name references, so a var sees the final name. Invariant: only the `varReference` fields
//! (kustomize's defaults plus `configurations`) change; `$$` escapes a `$`; a var that is
//! never used is not an error (kustomize only logs it).

use crate::error::{KustomizeError, Site};
use crate::konfig::transformer_config::TransformerConfig;
pub use crate::konfig::var_reference::default_var_reference;
use crate::types::fieldspec::FieldSpec;
use crate::types::kustomization::Var;
use kiln_base::resource::Resource;
use serde_json::Value;
use std::collections::BTreeMap;

/// A var with the site of its declaration.
pub struct VarDecl {
    pub var: Var,
    pub site: Site,
}

/// The original (namespace, name) of an object: before any prefix, suffix, namespace or
/// hash renamed it.
fn original(res: &Resource) -> (Option<&str>, &str) {
    match res.meta.previous_names.first() {
        Some((ns, name)) => (ns.as_deref(), name.as_str()),
        None => (res.namespace(), res.name()),
    }
}

/// Whether `res` is what `decl`'s `objref` names (original name, kind, and group/version and
/// namespace when given).
fn selects(decl: &VarDecl, res: &Resource) -> bool {
    let o = &decl.var.objref;
    let (mut group, mut version) = (o.group.as_str(), o.version.as_str());
    if !o.api_version.is_empty() {
        match o.api_version.rsplit_once('/') {
            Some((g, v)) => (group, version) = (g, v),
            None => (group, version) = ("", o.api_version.as_str()),
        }
    }
    let (ns, name) = original(res);
    name == o.name
        && (o.kind.is_empty() || o.kind == res.kind())
        && (group.is_empty() || group == res.group())
        && (version.is_empty() || version == res.version())
        && (o.namespace.is_empty() || Some(o.namespace.as_str()) == ns)
}

/// Binds each var of `decls` to the object it selects among `resources` (kustomize's
/// `MergeVars`). A var selecting nothing here stays unbound (it fails at resolution unless an
/// object binds it later); more than one match is an error at the var's entry.
pub fn bind_vars(resources: &mut [Resource], decls: &[VarDecl]) -> Result<(), KustomizeError> {
    for decl in decls {
        let matched: Vec<usize> = (0..resources.len())
            .filter(|&i| selects(decl, &resources[i]))
            .collect();
        if matched.len() > 1 {
            let ids: Vec<String> = matched
                .iter()
                .map(|&i| format!("`{}`", resources[i].id()))
                .collect();
            return Err(KustomizeError::transformer_msg(
                decl.site.clone(),
                format!(
                    "var `{}` matches {} objects: {}",
                    decl.var.name,
                    matched.len(),
                    ids.join(", ")
                ),
                "add `namespace` or `apiVersion` to the var's `objref` so it selects one object",
            ));
        }
        if let Some(&i) = matched.first()
            && !resources[i].meta.ref_vars.contains(&decl.var.name)
        {
            resources[i].meta.ref_vars.push(decl.var.name.clone());
        }
    }
    Ok(())
}

/// Reads a var's field (`fieldref.fieldPath`, default `metadata.name`; dotted, with
/// `[i]`/`[k=v]`-free plain segments as kustomize's vars allow).
fn field_value(res: &Resource, path: &str) -> Option<Value> {
    let path = if path.is_empty() {
        "metadata.name"
    } else {
        path
    };
    let mut v = &res.value;
    for seg in split_field_path(path) {
        v = match v {
            Value::Object(m) => m.get(&seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) => Some(v.clone()),
        _ => None,
    }
}

/// Splits `spec.template.metadata.labels.app\.kubernetes\.io/name` style paths; a segment in
/// brackets (`[app.kubernetes.io/name]`) or escaped dots stay whole.
fn split_field_path(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'.') => {
                cur.push('.');
                chars.next();
            }
            '[' => {
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '.' => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().filter(|s| !s.is_empty()).collect()
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Kubernetes' `$(VAR)` expansion (`third_party/forked/golang/expansion`): `$(NAME)` of a
/// known var becomes its value, an unknown one stays as written, `$$` becomes `$`.
fn expand(input: &str, values: &BTreeMap<&str, Value>, used: &mut Vec<String>) -> String {
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(input.len());
    let mut i = 0;
    let mut last = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && i + 1 < bytes.len() {
            match bytes[i + 1] {
                b'$' => {
                    out.push_str(&input[last..i]);
                    out.push('$');
                    i += 2;
                    last = i;
                    continue;
                }
                b'(' => {
                    if let Some(close) = input[i + 2..].find(')') {
                        let name = &input[i + 2..i + 2 + close];
                        out.push_str(&input[last..i]);
                        match values.get(name) {
                            Some(v) => {
                                out.push_str(&scalar_text(v));
                                used.push(name.to_string());
                            }
                            None => out.push_str(&input[i..i + 3 + close]),
                        }
                        i += 3 + close;
                        last = i;
                        continue;
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    out.push_str(&input[last..]);
    out
}

/// Replaces one value in place: a string exactly `$(VAR)` takes the var's value with its type
/// (kustomize keeps an integer port an integer); other strings are expanded; lists and maps of
/// strings are expanded element-wise.
fn replace_in(v: &mut Value, values: &BTreeMap<&str, Value>, used: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            if let Some(name) = s.strip_prefix("$(").and_then(|r| r.strip_suffix(')'))
                && let Some(val) = values.get(name)
            {
                used.push(name.to_string());
                *v = val.clone();
                return;
            }
            *s = expand(s, values, used);
        }
        Value::Array(items) => items.iter_mut().for_each(|x| {
            if x.is_string() {
                replace_in(x, values, used)
            }
        }),
        Value::Object(map) => map.values_mut().for_each(|x| {
            if x.is_string() {
                replace_in(x, values, used)
            }
        }),
        _ => {}
    }
}

/// Resolves every declared var against the final objects and substitutes `$(NAME)` in the
/// `varReference` fields (kustomize's `ResolveVars`).
///
/// Errors: a var bound to no object, or whose field is missing or not a scalar, at the var's
/// entry in its kustomization file.
pub fn resolve_vars(
    resources: &mut [Resource],
    decls: &[VarDecl],
    config: &TransformerConfig,
) -> Result<(), KustomizeError> {
    if decls.is_empty() {
        return Ok(());
    }
    let mut values: BTreeMap<&str, Value> = BTreeMap::new();
    for decl in decls {
        let name = decl.var.name.as_str();
        let Some(res) = resources
            .iter()
            .find(|r| r.meta.ref_vars.iter().any(|v| v == name))
        else {
            return Err(KustomizeError::transformer_msg(
                decl.site.clone(),
                format!("var `{name}` cannot be mapped to a field in the set of known resources"),
                "the var's `objref` must name an object of this build by its original name",
            ));
        };
        let Some(value) = field_value(res, &decl.var.fieldref.field_path) else {
            return Err(KustomizeError::transformer_msg(
                decl.site.clone(),
                format!(
                    "field `{}` of var `{name}` is not a scalar of `{}`",
                    decl.var.fieldref.field_path,
                    res.id()
                ),
                "point `fieldref.fieldPath` at a string, number or boolean field",
            ));
        };
        values.insert(name, value);
    }
    let mut specs: Vec<FieldSpec> = default_var_reference().to_vec();
    for fs in &config.var_reference {
        if !specs.iter().any(|s| {
            s.kind == fs.kind && s.group == fs.group && s.version == fs.version && s.path == fs.path
        }) {
            specs.push(fs.clone());
        }
    }
    let mut used = Vec::new();
    for res in resources.iter_mut() {
        for spec in specs.iter() {
            if spec.applies_to(res) {
                crate::filters::fieldspec::visit_path_mut(
                    &mut res.value,
                    &spec.path,
                    spec.create,
                    &mut |v| replace_in(v, &values, &mut used),
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Site;
    use crate::types::kustomization::{FieldSelector, Var, VarTarget};
    use serde_json::json;

    fn decl(name: &str, kind: &str, obj: &str, path: &str) -> VarDecl {
        VarDecl {
            var: Var {
                name: name.into(),
                objref: VarTarget {
                    kind: kind.into(),
                    name: obj.into(),
                    ..Default::default()
                },
                fieldref: FieldSelector {
                    field_path: path.into(),
                },
            },
            site: Site::file("kustomization.yaml"),
        }
    }

    #[test]
    fn expansion_follows_kubernetes_rules() {
        let mut values = BTreeMap::new();
        values.insert("A", json!("x"));
        values.insert("N", json!(80));
        let mut used = vec![];
        assert_eq!(
            expand("$(A)-$(B)-$$(A)-$(N)", &values, &mut used),
            "x-$(B)-$(A)-80"
        );
        let mut v = json!("$(N)");
        replace_in(&mut v, &values, &mut used);
        assert_eq!(v, json!(80));
    }

    #[test]
    fn vars_bind_by_original_name_and_resolve_final_values() {
        let mut svc = Resource::new(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "p-db"}}),
            None,
        );
        svc.meta.previous_names.push((None, "db".into()));
        let dep = Resource::new(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                   "spec": {"template": {"spec": {"containers": [{"name": "c", "args": ["--db=$(DB)"], "env": [{"name": "H", "value": "$(DB):5432"}]}]}}}}),
            None,
        );
        let mut rs = vec![svc, dep];
        let decls = vec![decl("DB", "Service", "db", "")];
        bind_vars(&mut rs, &decls).unwrap();
        resolve_vars(&mut rs, &decls, &TransformerConfig::default()).unwrap();
        let c = &rs[1].value["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["args"][0], "--db=p-db");
        assert_eq!(c["env"][0]["value"], "p-db:5432");
    }

    #[test]
    fn unbound_var_is_an_error() {
        let mut rs = vec![Resource::new(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}}),
            None,
        )];
        let decls = vec![decl("X", "Service", "missing", "")];
        bind_vars(&mut rs, &decls).unwrap();
        let err = resolve_vars(&mut rs, &decls, &TransformerConfig::default()).unwrap_err();
        assert!(err.to_string().contains("cannot be mapped"), "{err}");
    }

    #[test]
    fn field_paths_split_on_unescaped_dots() {
        assert_eq!(
            split_field_path("metadata.labels.[app.kubernetes.io/name]"),
            ["metadata", "labels", "app.kubernetes.io/name"]
        );
        assert_eq!(
            split_field_path("spec.ports.0.port"),
            ["spec", "ports", "0", "port"]
        );
    }
}
