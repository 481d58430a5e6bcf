//! Kubernetes objects validated as the API server would, offline (issue 36, ADRs 0020 and
//! 0021): every object of a built-in kind against the schema of its cluster's Kubernetes
//! version ([`builtin`], tables written from k8s-openapi), every custom resource against
//! the CRDs the platform renders or names ([`Crds`]), with their CEL rules ([`cel`]), and the
//! conflicts only the whole platform shows ([`conflict`]).
//!
//! The crate knows no platform, chart or source file: it takes JSON values and returns
//! [`Finding`]s at JSON Pointers; the pipeline maps each pointer back to the line that
//! produced it. Same input, same findings, in document order then field order.
//!
//! Layers (ARCHITECTURE.md): `cel`, `schema`, `check`, `builtin`, `server`, `conflict` below
//! this root.

// The seeded-defect suite builds its CRD with one `json!`.
#![cfg_attr(test, recursion_limit = "512")]

pub mod builtin;
pub mod cel;
pub mod check;
pub mod conflict;
pub mod schema;
pub mod server;

use builtin::Builtin;
use schema::{Dialect, NodeId, Schemas};
use serde_json::Value;
use std::collections::BTreeMap;

/// A rule of validation; its [`Code::as_str`] is the diagnostic code's last part
/// (`kiln::k8s::unknown_field`) and the name a platform uses to turn it into a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    /// A field the schema does not have (strict field validation).
    UnknownField,
    /// A value of the wrong JSON type (a boolean in `EnvVar.value`).
    WrongType,
    /// An integer outside int32 or int64.
    IntegerRange,
    /// A string that is not a `resource.Quantity`.
    InvalidQuantity,
    /// A byte string that is not base64.
    InvalidBase64,
    /// A string that is not an RFC 3339 date-time.
    InvalidDateTime,
    /// A string that is not a full-date.
    InvalidDate,
    /// A required field is missing.
    RequiredField,
    /// A value outside `enum`.
    Enum,
    /// A string that does not match `pattern`.
    Pattern,
    Minimum,
    Maximum,
    MinLength,
    MaxLength,
    MinItems,
    MaxItems,
    MinProperties,
    MaxProperties,
    /// A value twice in an `x-kubernetes-list-type: set`.
    DuplicateSetItem,
    /// Two entries with one key in an `x-kubernetes-list-type: map`.
    DuplicateMapKey,
    AnyOf,
    OneOf,
    Not,
    /// An `x-kubernetes-embedded-resource` without `apiVersion`, `kind` or `metadata`.
    EmbeddedResource,
    /// An `x-kubernetes-validations` rule that evaluated to false.
    CelRule,
    /// An `x-kubernetes-validations` rule that failed to evaluate.
    CelError,
    /// An object without `apiVersion` or `kind`.
    MissingKind,
    /// An object without `metadata.name` (nor `generateName`).
    MissingName,
    /// A built-in group or a CRD's group that does not serve this version of the kind.
    UnservedVersion,
    /// A CRD that cannot be compiled (a bad pattern, a rule that does not parse).
    InvalidCrd,
    /// A kind with no schema (a warning, an error with `--strict`).
    NoSchema,
    /// One object emitted by two Argo CD Applications (Argo CD's SharedResourceWarning).
    SharedResource,
    /// A namespaced object with no namespace where its Application names none.
    MissingNamespace,
    /// A cluster-scoped object emitted into two environments of one cluster, differently.
    ClusterScopedConflict,
    /// A ConfigMap or Secret whose data is over 1 MiB (`data_too_long`).
    DataTooLong,
    /// An object name, container name or ConfigMap/Secret key the server's Go validation
    /// refuses ([`server`]).
    InvalidName,
    /// A workload whose `selector` does not match its template's labels ([`server`]).
    SelectorMismatch,
}

impl Code {
    /// Every rule, in the order of this enum.
    pub const ALL: [Code; 37] = [
        Code::UnknownField,
        Code::WrongType,
        Code::IntegerRange,
        Code::InvalidQuantity,
        Code::InvalidBase64,
        Code::InvalidDateTime,
        Code::InvalidDate,
        Code::RequiredField,
        Code::Enum,
        Code::Pattern,
        Code::Minimum,
        Code::Maximum,
        Code::MinLength,
        Code::MaxLength,
        Code::MinItems,
        Code::MaxItems,
        Code::MinProperties,
        Code::MaxProperties,
        Code::DuplicateSetItem,
        Code::DuplicateMapKey,
        Code::AnyOf,
        Code::OneOf,
        Code::Not,
        Code::EmbeddedResource,
        Code::CelRule,
        Code::CelError,
        Code::MissingKind,
        Code::MissingName,
        Code::UnservedVersion,
        Code::InvalidCrd,
        Code::NoSchema,
        Code::SharedResource,
        Code::MissingNamespace,
        Code::ClusterScopedConflict,
        Code::DataTooLong,
        Code::InvalidName,
        Code::SelectorMismatch,
    ];

    /// The rule's name: `unknown_field`, `wrong_type`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Code::UnknownField => "unknown_field",
            Code::WrongType => "wrong_type",
            Code::IntegerRange => "integer_range",
            Code::InvalidQuantity => "invalid_quantity",
            Code::InvalidBase64 => "invalid_base64",
            Code::InvalidDateTime => "invalid_date_time",
            Code::InvalidDate => "invalid_date",
            Code::RequiredField => "required_field",
            Code::Enum => "enum",
            Code::Pattern => "pattern",
            Code::Minimum => "minimum",
            Code::Maximum => "maximum",
            Code::MinLength => "min_length",
            Code::MaxLength => "max_length",
            Code::MinItems => "min_items",
            Code::MaxItems => "max_items",
            Code::MinProperties => "min_properties",
            Code::MaxProperties => "max_properties",
            Code::DuplicateSetItem => "duplicate_set_item",
            Code::DuplicateMapKey => "duplicate_map_key",
            Code::AnyOf => "any_of",
            Code::OneOf => "one_of",
            Code::Not => "not",
            Code::EmbeddedResource => "embedded_resource",
            Code::CelRule => "cel_rule",
            Code::CelError => "cel_error",
            Code::MissingKind => "missing_kind",
            Code::MissingName => "missing_name",
            Code::UnservedVersion => "unserved_version",
            Code::InvalidCrd => "invalid_crd",
            Code::NoSchema => "no_schema",
            Code::SharedResource => "shared_resource",
            Code::MissingNamespace => "missing_namespace",
            Code::ClusterScopedConflict => "cluster_scoped_conflict",
            Code::DataTooLong => "data_too_long",
            Code::InvalidName => "invalid_name",
            Code::SelectorMismatch => "selector_mismatch",
        }
    }

    /// The rule named `name`.
    pub fn parse(name: &str) -> Option<Code> {
        Code::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

/// One violation: the rule, where in the object (a JSON Pointer from the object's root,
/// `""` for the object itself) and a lower-case message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub code: Code,
    pub pointer: String,
    pub message: String,
}

/// What validating one object gave.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub findings: Vec<Finding>,
    /// `group/version Kind` when no schema covers the object.
    pub unvalidated: Option<String>,
    /// CEL rules not evaluated.
    pub skipped_rules: usize,
}

/// One kind a CRD defines.
#[derive(Debug, Clone)]
struct CrdKind {
    namespaced: bool,
    /// version → its schema root (`None` when the version has no schema: any content).
    versions: BTreeMap<String, (bool, Option<NodeId>)>,
}

/// The CRDs in scope of a validation: compiled once each, shared by every object.
#[derive(Debug, Default)]
pub struct Crds {
    schemas: Schemas,
    /// (group, kind) → kind.
    kinds: BTreeMap<(String, String), CrdKind>,
}

impl Crds {
    /// `true` for an `apiextensions.k8s.io` CustomResourceDefinition.
    pub fn is_crd(object: &Value) -> bool {
        object["kind"] == "CustomResourceDefinition"
            && object["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
    }

    /// `true` when a CRD added defines `kind` of `group`.
    pub fn defines(&self, group: &str, kind: &str) -> bool {
        self.kinds
            .contains_key(&(group.to_string(), kind.to_string()))
    }

    /// Adds a CRD (`apiextensions.k8s.io/v1`; `v1beta1`'s top-level `validation` too). A CRD
    /// that does not compile gives [`Code::InvalidCrd`] findings and defines nothing; a
    /// second CRD for one group and kind replaces the first (the server keeps one).
    pub fn add(&mut self, crd: &Value) -> Vec<Finding> {
        let spec = &crd["spec"];
        let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str())
        else {
            return vec![Finding {
                code: Code::InvalidCrd,
                pointer: "/spec".to_string(),
                message: "a CustomResourceDefinition needs `spec.group` and `spec.names.kind`"
                    .to_string(),
            }];
        };
        let mut out = CrdKind {
            namespaced: spec["scope"] != "Cluster",
            versions: BTreeMap::new(),
        };
        let mut findings = Vec::new();
        let shared = spec.pointer("/validation/openAPIV3Schema");
        for (i, version) in spec["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let Some(name) = version["name"].as_str() else {
                continue;
            };
            let served = version["served"].as_bool().unwrap_or(true);
            let schema = version.pointer("/schema/openAPIV3Schema").or(shared);
            let root = match schema {
                Some(s) => match self.schemas.compile(
                    s,
                    Dialect::Crd,
                    &format!("/spec/versions/{i}/schema/openAPIV3Schema"),
                ) {
                    Ok(id) => Some(id),
                    Err(e) => {
                        findings.push(Finding {
                            code: Code::InvalidCrd,
                            pointer: e.pointer,
                            message: e.message,
                        });
                        continue;
                    }
                },
                None => None,
            };
            out.versions.insert(name.to_string(), (served, root));
        }
        if let (Some(v), Some(s)) = (spec["version"].as_str(), shared)
            && !out.versions.contains_key(v)
        {
            match self
                .schemas
                .compile(s, Dialect::Crd, "/spec/validation/openAPIV3Schema")
            {
                Ok(id) => {
                    out.versions.insert(v.to_string(), (true, Some(id)));
                }
                Err(e) => findings.push(Finding {
                    code: Code::InvalidCrd,
                    pointer: e.pointer,
                    message: e.message,
                }),
            }
        }
        if findings.is_empty() {
            self.kinds
                .insert((group.to_string(), kind.to_string()), out);
        }
        findings
    }
}

/// A validator for one Kubernetes version and one set of CRDs.
#[derive(Debug)]
pub struct Validator {
    builtin: &'static Builtin,
    pub crds: Crds,
}

/// `group` and `version` of an `apiVersion` (`apps/v1`, `v1`).
fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

impl Validator {
    /// A validator for Kubernetes `version` (`1.33`, `v1.34.2`). Errors: no table for it.
    pub fn new(version: &str) -> Result<Validator, String> {
        Ok(Validator {
            builtin: Builtin::get(version)?,
            crds: Crds::default(),
        })
    }

    /// The Kubernetes minor version validated against.
    pub fn version(&self) -> &'static str {
        self.builtin.version
    }

    /// `Some(true)` for a namespaced kind, `Some(false)` for a cluster-scoped one, `None` when
    /// neither the built-ins nor the CRDs know it.
    pub fn namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        let (group, version) = split_api_version(api_version);
        if let Some(k) = self.builtin.kind(group, version, kind) {
            return Some(k.namespaced);
        }
        self.crds
            .kinds
            .get(&(group.to_string(), kind.to_string()))
            .map(|k| k.namespaced)
    }

    /// The (group, kind)s whose CRDs [`Validator::validate`] and [`Validator::namespaced`]
    /// consult for `object` (itself, or a `v1 List` and its items): every kind not built in
    /// at its version. An object naming none validates the same whatever CRDs are added, so a
    /// render validates it as soon as it is rendered, before the CRDs of the whole platform
    /// are known.
    pub fn custom_kinds(&self, object: &Value) -> Vec<(String, String)> {
        let (Some(api_version), Some(kind)) =
            (object["apiVersion"].as_str(), object["kind"].as_str())
        else {
            return Vec::new();
        };
        let (group, version) = split_api_version(api_version);
        let mut out = Vec::new();
        if self.builtin.kind(group, version, kind).is_none() {
            out.push((group.to_string(), kind.to_string()));
        }
        if api_version == "v1"
            && kind == "List"
            && let Some(items) = object["items"].as_array()
        {
            for item in items {
                out.extend(self.custom_kinds(item));
            }
        }
        out
    }

    /// Validates one object (a `v1 List` item by item).
    pub fn validate(&self, object: &Value) -> Outcome {
        let mut outcome = Outcome::default();
        let finding = |code, pointer: &str, message: String| Finding {
            code,
            pointer: pointer.to_string(),
            message,
        };
        let (Some(api_version), Some(kind)) =
            (object["apiVersion"].as_str(), object["kind"].as_str())
        else {
            let missing = if object["apiVersion"].is_string() {
                "kind"
            } else {
                "apiVersion"
            };
            outcome.findings.push(finding(
                Code::MissingKind,
                "",
                format!("the object has no `{missing}`"),
            ));
            return outcome;
        };
        if api_version == "v1"
            && kind == "List"
            && let Some(items) = object["items"].as_array()
        {
            for (i, item) in items.iter().enumerate() {
                let mut inner = self.validate(item);
                for f in &mut inner.findings {
                    f.pointer = format!("/items/{i}{}", f.pointer);
                }
                outcome.findings.extend(inner.findings);
                outcome.unvalidated = outcome.unvalidated.or(inner.unvalidated);
                outcome.skipped_rules += inner.skipped_rules;
            }
            return outcome;
        }
        let meta = &object["metadata"];
        if meta["name"].as_str().is_none_or(str::is_empty)
            && meta["generateName"].as_str().is_none_or(str::is_empty)
        {
            outcome.findings.push(finding(
                Code::MissingName,
                "/metadata",
                "the object has no `metadata.name`".to_string(),
            ));
        }
        let (group, version) = split_api_version(api_version);
        let mut walk = check::Walk {
            schemas: &self.builtin.schemas,
            findings: Vec::new(),
            skipped: check::Skipped::default(),
        };
        if let Some(k) = self.builtin.kind(group, version, kind) {
            walk.check(k.root, object, &mut String::new(), true);
            outcome
                .findings
                .extend(data_too_long(api_version, kind, object));
            outcome
                .findings
                .extend(server::check(api_version, kind, object));
        } else if self.builtin.has_group(group)
            && !self
                .crds
                .kinds
                .contains_key(&(group.to_string(), kind.to_string()))
        {
            let served = self.builtin.versions_of(group, kind);
            let message = if served.is_empty() {
                format!(
                    "Kubernetes {} serves no kind `{kind}` in `{}`",
                    self.builtin.version,
                    display_group(group)
                )
            } else {
                format!(
                    "Kubernetes {} does not serve `{api_version}` {kind}; it serves {}",
                    self.builtin.version,
                    served
                        .iter()
                        .map(|v| format!("`{}`", join_api_version(group, v)))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            outcome
                .findings
                .push(finding(Code::UnservedVersion, "/apiVersion", message));
        } else if let Some(crd) = self.crds.kinds.get(&(group.to_string(), kind.to_string())) {
            match crd.versions.get(version) {
                Some((true, Some(root))) => {
                    let mut crd_walk = check::Walk {
                        schemas: &self.crds.schemas,
                        findings: Vec::new(),
                        skipped: check::Skipped::default(),
                    };
                    // The server owns apiVersion, kind and metadata of a custom resource:
                    // metadata is an ObjectMeta whatever the CRD says.
                    let mut body = object.clone();
                    if let Some(map) = body.as_object_mut() {
                        map.remove("apiVersion");
                        map.remove("kind");
                        map.remove("metadata");
                    }
                    check::apply_defaults(&self.crds.schemas, *root, &mut body);
                    crd_walk.check(*root, &body, &mut String::new(), true);
                    crd_walk.findings.retain(|f| {
                        !(f.code == Code::RequiredField
                            && matches!(f.pointer.as_str(), "/apiVersion" | "/kind" | "/metadata"))
                    });
                    if let Some(meta_root) = self
                        .builtin
                        .schemas
                        .definition("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
                    {
                        walk.check(meta_root, meta, &mut "/metadata".to_string(), true);
                    }
                    walk.findings.extend(crd_walk.findings);
                    walk.skipped.cel_rules += crd_walk.skipped.cel_rules;
                }
                Some((true, None)) => {}
                _ => {
                    let served: Vec<String> = crd
                        .versions
                        .iter()
                        .filter(|(_, (s, _))| *s)
                        .map(|(v, _)| format!("`{}`", join_api_version(group, v)))
                        .collect();
                    outcome.findings.push(finding(
                        Code::UnservedVersion,
                        "/apiVersion",
                        format!(
                            "the CRD of {kind} does not serve `{api_version}`; it serves {}",
                            served.join(", ")
                        ),
                    ));
                }
            }
        } else {
            outcome.unvalidated = Some(format!("{api_version} {kind}"));
        }
        outcome.findings.extend(walk.findings);
        outcome.skipped_rules += walk.skipped.cel_rules;
        mask_secret_values(object, &mut outcome.findings);
        outcome
    }
}

/// Masks, in the message of each finding on a Secret's `data` or `stringData`, the values
/// found there (`must be a string, not integer `*********``): kiln never prints a Secret's
/// value (README), and every consumer of a finding (`kiln validate`, render's validation, on
/// stderr and in `-o json`) prints its message. Each character becomes `*`, as the snippet's
/// masking does (`kiln_base::diag::redact_secrets`); keys stay, so the entry is still named.
fn mask_secret_values(object: &Value, findings: &mut [Finding]) {
    if object["kind"].as_str() != Some("Secret") {
        return;
    }
    for f in findings {
        let on_data = ["/data", "/stringData"].iter().any(|field| {
            f.pointer
                .strip_prefix(field)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        });
        let Some(value) = object.pointer(&f.pointer).filter(|_| on_data) else {
            continue;
        };
        let mut texts = Vec::new();
        scalar_texts(value, &mut texts);
        // The longest first: a value containing another is masked whole.
        texts.sort_by_key(|t| std::cmp::Reverse(t.len()));
        for text in texts {
            f.message = mask_token(&f.message, &text);
        }
    }
}

/// Each scalar under `value` as a message shows it: a string as it is, any other scalar as
/// JSON (`987654321`, `true`).
fn scalar_texts(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Null => {}
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| scalar_texts(v, out)),
        Value::Object(map) => map.values().for_each(|v| scalar_texts(v, out)),
        other => out.push(other.to_string()),
    }
}

/// `message` with each occurrence of `text` that stands alone (no letter or digit either
/// side: a value is shown between backticks or spaces) written as `*`s; a short value
/// inside a word of the message is left, as it is not the value.
fn mask_token(message: &str, text: &str) -> String {
    if text.is_empty() {
        return message.to_string();
    }
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(text) {
        let (before, after) = (&rest[..at], &rest[at + text.len()..]);
        let alone = !before
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
            && !after.chars().next().is_some_and(char::is_alphanumeric);
        out.push_str(before);
        if alone {
            out.extend(std::iter::repeat_n('*', text.chars().count()));
        } else {
            out.push_str(&rest[at..at + text.len()]);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `MaxSecretSize` (k8s.io/kubernetes `pkg/apis/core/types.go`): what the data of one
/// ConfigMap or Secret may total, in bytes.
pub const MAX_DATA_SIZE: usize = 1024 * 1024;

/// The bytes a base64 string of a `[]byte` field decodes to (Go's `encoding/json` decodes
/// with `base64.StdEncoding`, which skips `\r` and `\n`); an invalid one is
/// [`Code::InvalidBase64`] already and counts as what it would decode to at most.
fn decoded_len(s: &str) -> usize {
    let n = s.bytes().filter(|b| !matches!(b, b'\n' | b'\r')).count();
    let padding = s
        .trim_end_matches(['\n', '\r'])
        .bytes()
        .rev()
        .take_while(|&b| b == b'=')
        .count();
    (n / 4 * 3).saturating_sub(padding.min(2))
}

/// The API server's size check of a `v1` ConfigMap or Secret, beyond its schema
/// (k8s.io/kubernetes `pkg/apis/core/validation/validation.go`): `ValidateConfigMap` sums
/// the values of `data` (their UTF-8 bytes) and `binaryData` (decoded), `ValidateSecret` the
/// decoded values of `data`, into which `stringData` was merged before (a `stringData` key
/// replacing the same key of `data`, `pkg/apis/core/v1/conversion.go`), and each refuses a
/// total over [`MAX_DATA_SIZE`] (`field.TooLong`). Keys and metadata are not counted. The
/// server reports a ConfigMap's at the object's root; kiln points at `/data` (else
/// `/binaryData` or `/stringData`), where the bytes are. The message gives sizes only, never a value.
fn data_too_long(api_version: &str, kind: &str, object: &Value) -> Option<Finding> {
    if api_version != "v1" {
        return None;
    }
    let strings = |field: &str| {
        object[field]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
    };
    let (total, fields) = match kind {
        "ConfigMap" => {
            let data: usize = strings("data").map(|(_, v)| v.len()).sum();
            let binary: usize = strings("binaryData").map(|(_, v)| decoded_len(v)).sum();
            (data + binary, "`data` and `binaryData`")
        }
        "Secret" => {
            let given = object["stringData"].as_object();
            let replaced = |k: &str| given.is_some_and(|s| s.contains_key(k));
            let data: usize = strings("data")
                .filter(|(k, _)| !replaced(k))
                .map(|(_, v)| decoded_len(v))
                .sum();
            let string: usize = strings("stringData").map(|(_, v)| v.len()).sum();
            (data + string, "`data` and `stringData` (decoded)")
        }
        _ => return None,
    };
    if total <= MAX_DATA_SIZE {
        return None;
    }
    let pointer = match (object.get("data"), kind) {
        (Some(_), _) => "/data",
        (None, "ConfigMap") => "/binaryData",
        (None, _) => "/stringData",
    };
    Some(Finding {
        code: Code::DataTooLong,
        pointer: pointer.to_string(),
        message: format!(
            "the {kind}'s {fields} total {total} bytes; the API server refuses more than {MAX_DATA_SIZE} bytes (1 MiB, MaxSecretSize)"
        ),
    })
}

fn display_group(group: &str) -> &str {
    if group.is_empty() {
        "the core group"
    } else {
        group
    }
}

fn join_api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

#[cfg(test)]
mod seeded;
