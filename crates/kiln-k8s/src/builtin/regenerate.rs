//! Writes the table of one Kubernetes version from k8s-openapi's `schemars` impls (ADR
//! 0020): every kind of [`super::resources`] with the definitions it reaches, descriptions
//! dropped. k8s-openapi compiles one version at a time (its `build.rs` refuses two), so a
//! table is written per run, the version chosen with `K8S_OPENAPI_ENABLED_VERSION`:
//!
//! ```text
//! for v in 1.33 1.34 1.35 1.36 1.37; do
//!   K8S_OPENAPI_ENABLED_VERSION=$v KILN_BLESS=1 cargo test -p kiln-k8s --features regenerate tables
//! done
//! ```
//!
//! Without `KILN_BLESS` the test fails when the committed table differs from the crate.

use serde_json::{Map, Value};
use std::any::TypeId;

/// Collects kinds and their definitions.
pub(super) struct Generator {
    generator: schemars::SchemaGenerator,
    kinds: Vec<Value>,
}

impl Generator {
    /// Adds kind `R` (its definition, and every one it refers to).
    pub(super) fn add<R>(&mut self)
    where
        R: k8s_openapi::Resource + schemars::JsonSchema,
        R::Scope: 'static,
    {
        self.generator.subschema_for::<R>();
        let namespaced =
            TypeId::of::<R::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>();
        self.kinds.push(Value::Array(vec![
            R::GROUP.into(),
            R::VERSION.into(),
            R::KIND.into(),
            R::schema_name().into_owned().into(),
            namespaced.into(),
        ]));
    }
}

/// The enabled k8s-openapi version, `1.NN`.
fn enabled_version() -> &'static str {
    let mut v = "";
    k8s_openapi::k8s_if_1_33! { v = "1.33"; }
    k8s_openapi::k8s_if_1_34! { v = "1.34"; }
    k8s_openapi::k8s_if_1_35! { v = "1.35"; }
    k8s_openapi::k8s_if_1_36! { v = "1.36"; }
    k8s_openapi::k8s_if_1_37! { v = "1.37"; }
    v
}

/// Drops schemas' `description`s (the largest part, and never checked), keeping properties
/// that happen to be named `description` (JSONSchemaProps has one).
fn strip(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("description");
            for (key, sub) in map.iter_mut() {
                match (key.as_str(), sub) {
                    ("properties" | "$defs" | "definitions", Value::Object(props)) => {
                        props.values_mut().for_each(strip)
                    }
                    (_, sub) => strip(sub),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

/// The table text: `{"kubernetes": "1.NN", "kinds": [[group, version, kind, definition,
/// namespaced], …], "definitions": {name: schema, …}}`, one kind and one definition per
/// line, definitions sorted by name.
fn table() -> (String, String) {
    let mut g = Generator {
        generator: schemars::SchemaGenerator::default(),
        kinds: Vec::new(),
    };
    super::resources::add_all(&mut g);
    let defs: std::collections::BTreeMap<String, Value> = g
        .generator
        .take_definitions(true)
        .into_iter()
        .map(|(k, mut v)| {
            strip(&mut v);
            (k, v)
        })
        .collect();
    let version = enabled_version();
    let mut out = format!("{{\"kubernetes\":\"{version}\",\n\"kinds\":[\n");
    for (i, kind) in g.kinds.iter().enumerate() {
        let sep = if i + 1 < g.kinds.len() { "," } else { "" };
        out.push_str(&format!("{kind}{sep}\n"));
    }
    out.push_str("],\n\"definitions\":{\n");
    for (i, (name, schema)) in defs.iter().enumerate() {
        let sep = if i + 1 < defs.len() { "," } else { "" };
        out.push_str(&format!("{}:{schema}{sep}\n", Value::String(name.clone())));
    }
    out.push_str("}}\n");
    let _: Map<String, Value> = serde_json::from_str(&out).expect("the table is JSON");
    (version.to_string(), out)
}

#[test]
#[allow(clippy::disallowed_methods)]
fn tables() {
    let (version, text) = table();
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tables/v{version}.json"));
    if std::env::var_os("KILN_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{} differs from k8s-openapi {version}; regenerate it with \
         `K8S_OPENAPI_ENABLED_VERSION={version} KILN_BLESS=1 cargo test -p kiln-k8s --features regenerate tables`",
        path.display()
    );
}
