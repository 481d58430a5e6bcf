//! What the API server refuses in its Go validation of built-in kinds, beyond the OpenAPI
//! schema (which k8s-openapi writes without these `enum`s and formats): the sets of values a
//! field supports, object and container names, ports, replica counts and ConfigMap keys.
//!
//! Mirrors k8s.io/kubernetes `pkg/apis/core/validation/validation.go` (`supportedServiceType`,
//! `supportedPortProtocols`, `supportedPullPolicies`, the restart policies of
//! `validateRestartPolicy` and of the workload templates, `validateContainers`' DNS-1123
//! label names, `validateContainerPorts`, `ValidateServiceName`, `ValidateNamespaceName`,
//! `ValidateConfigMap` and `ValidateSecret` keys), `pkg/apis/apps/validation/validation.go`
//! (`ValidateDeploymentStrategy`, non-negative `replicas`) and k8s.io/apimachinery
//! `pkg/util/validation/validation.go` (`IsDNS1123Subdomain`, `IsDNS1123Label`,
//! `IsDNS1035Label`, `IsConfigMapKey`, `IsValidPortNum`). An empty or absent value is left
//! alone: the server's defaulting fills it before it validates.

use crate::{Code, Finding};
use serde_json::Value;

/// How the server checks an object's `metadata.name` (`ValidateObjectMeta`'s `nameFn`).
#[derive(Clone, Copy)]
enum NameRule {
    Subdomain,
    Label,
    Dns1035,
}

/// The name rule of a built-in kind, for the kinds whose Go validation kiln mirrors; other
/// kinds (RBAC's path segments, …) are not checked.
fn name_rule(api_version: &str, kind: &str) -> Option<NameRule> {
    Some(match (api_version, kind) {
        ("v1", "Namespace") => NameRule::Label,
        ("v1", "Service") => NameRule::Dns1035,
        (
            "v1",
            "Pod"
            | "PodTemplate"
            | "ConfigMap"
            | "Secret"
            | "ServiceAccount"
            | "PersistentVolumeClaim"
            | "ReplicationController",
        )
        | ("apps/v1", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch/v1", "Job" | "CronJob") => NameRule::Subdomain,
        _ => return None,
    })
}

/// Where a workload keeps its pod spec, and the restart policies its pods may have.
fn pod_spec(api_version: &str, kind: &str) -> Option<(&'static str, &'static [&'static str])> {
    const ANY: &[&str] = &["Always", "OnFailure", "Never"];
    const ALWAYS: &[&str] = &["Always"];
    const JOB: &[&str] = &["OnFailure", "Never"];
    Some(match (api_version, kind) {
        ("v1", "Pod") => ("/spec", ANY),
        ("v1", "PodTemplate") => ("/template/spec", ANY),
        ("v1", "ReplicationController")
        | ("apps/v1", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => {
            ("/spec/template/spec", ALWAYS)
        }
        ("batch/v1", "Job") => ("/spec/template/spec", JOB),
        ("batch/v1", "CronJob") => ("/spec/jobTemplate/spec/template/spec", JOB),
        _ => return None,
    })
}

fn matches(re: &'static std::sync::OnceLock<regex::Regex>, pattern: &str, s: &str) -> bool {
    re.get_or_init(|| regex::Regex::new(pattern).expect("a valid pattern"))
        .is_match(s)
}

/// `IsDNS1123Label`: at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
fn is_dns1123_label(s: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    s.len() <= 63 && matches(&RE, r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", s)
}

/// `IsDNS1123Subdomain`: at most 253, DNS-1123 labels joined by dots.
fn is_dns1123_subdomain(s: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    s.len() <= 253
        && matches(
            &RE,
            r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
            s,
        )
}

/// `IsDNS1035Label`: a DNS-1123 label that starts with a letter.
fn is_dns1035_label(s: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    s.len() <= 63 && matches(&RE, r"^[a-z]([-a-z0-9]*[a-z0-9])?$", s)
}

/// `IsConfigMapKey`: at most 253 of `[-._a-zA-Z0-9]`, not `.` nor `..` nor `..`-prefixed.
fn is_config_map_key(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
        && s != "."
        && !s.starts_with("..")
}

struct Out(Vec<Finding>);

impl Out {
    fn push(&mut self, code: Code, pointer: String, message: String) {
        self.0.push(Finding {
            code,
            pointer,
            message,
        });
    }

    /// A non-empty string at `pointer` outside `allowed` (`field.NotSupported`).
    fn one_of(&mut self, object: &Value, pointer: String, allowed: &[&str]) {
        if let Some(s) = object.pointer(&pointer).and_then(Value::as_str)
            && !s.is_empty()
            && !allowed.contains(&s)
        {
            let shown: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
            self.push(
                Code::Enum,
                pointer,
                format!(
                    "\"{s}\" is not one of {} (the API server supports no other)",
                    shown.join(", ")
                ),
            );
        }
    }

    /// An int32 at `pointer` outside `lo..=hi` (outside int32 is `integer_range` already).
    fn range(&mut self, object: &Value, pointer: String, (lo, hi): (i64, i64), what: &str) {
        let Some(n) = object.pointer(&pointer).and_then(Value::as_i64) else {
            return;
        };
        if i32::try_from(n).is_err() {
            return;
        }
        if n < lo {
            self.push(
                Code::Minimum,
                pointer,
                format!("{n} must be >= {lo} ({what})"),
            );
        } else if n > hi {
            self.push(
                Code::Maximum,
                pointer,
                format!("{n} must be <= {hi} ({what})"),
            );
        }
    }
}

fn items<'v>(object: &'v Value, pointer: &str) -> impl Iterator<Item = (usize, &'v Value)> {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// The API server's Go checks of a built-in object, beyond its schema.
pub fn check(api_version: &str, kind: &str, object: &Value) -> Vec<Finding> {
    let mut out = Out(Vec::new());
    if let (Some(rule), Some(name)) = (
        name_rule(api_version, kind),
        object.pointer("/metadata/name").and_then(Value::as_str),
    ) && !name.is_empty()
    {
        let (ok, what) = match rule {
            NameRule::Subdomain => (
                is_dns1123_subdomain(name),
                "a DNS-1123 subdomain: lower-case letters, digits, `-` and `.`, alphanumeric at both ends, at most 253 characters",
            ),
            NameRule::Label => (
                is_dns1123_label(name),
                "a DNS-1123 label: lower-case letters, digits and `-`, alphanumeric at both ends, at most 63 characters",
            ),
            NameRule::Dns1035 => (
                is_dns1035_label(name),
                "a DNS-1035 label: lower-case letters, digits and `-`, starting with a letter, at most 63 characters",
            ),
        };
        if !ok {
            out.push(
                Code::InvalidName,
                "/metadata/name".to_string(),
                format!("`{name}`: a {kind}'s name must be {what}"),
            );
        }
    }
    match (api_version, kind) {
        ("v1", "Service") => {
            out.one_of(
                object,
                "/spec/type".to_string(),
                &["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"],
            );
            for (i, _) in items(object, "/spec/ports") {
                let at = format!("/spec/ports/{i}");
                out.one_of(object, format!("{at}/protocol"), &["TCP", "UDP", "SCTP"]);
                out.range(object, format!("{at}/port"), (1, 65535), "a port number");
            }
        }
        ("v1", "ConfigMap" | "Secret") => {
            for field in ["data", "binaryData", "stringData"] {
                for key in object[field].as_object().into_iter().flat_map(|m| m.keys()) {
                    if !is_config_map_key(key) {
                        out.push(
                            Code::InvalidName,
                            format!("/{field}/{}", kiln_base::pointer::escape(key)),
                            format!("key `{key}` must be letters, digits, `-`, `_` and `.` (not `.`, `..` or `..`-prefixed), at most 253 characters"),
                        );
                    }
                }
            }
        }
        ("apps/v1", "Deployment") => {
            out.one_of(
                object,
                "/spec/strategy/type".to_string(),
                &["Recreate", "RollingUpdate"],
            );
        }
        _ => {}
    }
    if matches!(
        (api_version, kind),
        (
            "apps/v1",
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
        )
    ) && let Some(selector) = object.pointer("/spec/selector")
        && !selects(selector, &object["spec"]["template"]["metadata"]["labels"])
    {
        out.push(
            Code::SelectorMismatch,
            "/spec/template/metadata/labels".to_string(),
            "`selector` does not match template `labels`".to_string(),
        );
    }
    if matches!(
        (api_version, kind),
        ("v1", "ReplicationController") | ("apps/v1", "Deployment" | "ReplicaSet" | "StatefulSet")
    ) {
        out.range(
            object,
            "/spec/replicas".to_string(),
            (0, i64::MAX),
            "replicas",
        );
    }
    if let Some((spec, restart)) = pod_spec(api_version, kind) {
        out.one_of(object, format!("{spec}/restartPolicy"), restart);
        for list in ["containers", "initContainers", "ephemeralContainers"] {
            for (i, c) in items(object, &format!("{spec}/{list}")) {
                let at = format!("{spec}/{list}/{i}");
                if let Some(name) = c["name"].as_str()
                    && !name.is_empty()
                    && !is_dns1123_label(name)
                {
                    out.push(
                        Code::InvalidName,
                        format!("{at}/name"),
                        format!("container name `{name}` must be a DNS-1123 label: lower-case letters, digits and `-`, alphanumeric at both ends, at most 63 characters"),
                    );
                }
                out.one_of(
                    object,
                    format!("{at}/imagePullPolicy"),
                    &["Always", "IfNotPresent", "Never"],
                );
                for (j, _) in items(object, &format!("{at}/ports")) {
                    let port = format!("{at}/ports/{j}");
                    out.range(
                        object,
                        format!("{port}/containerPort"),
                        (1, 65535),
                        "a port number",
                    );
                    out.one_of(object, format!("{port}/protocol"), &["TCP", "UDP", "SCTP"]);
                }
            }
        }
    }
    out.0
}

/// Whether the `LabelSelector` `selector` selects `labels` (`metav1.LabelSelectorAsSelector`
/// then `Matches`, as `ValidatePodTemplateSpecForReplicaSet` and the Deployment, StatefulSet
/// and DaemonSet specs check it). An empty selector, or one the server cannot convert (an
/// unknown operator: a finding of its own there), is not judged here.
fn selects(selector: &Value, labels: &Value) -> bool {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let match_labels = selector["matchLabels"].as_object();
    let expressions = selector["matchExpressions"].as_array();
    if match_labels.is_none_or(|m| m.is_empty()) && expressions.is_none_or(|e| e.is_empty()) {
        return true;
    }
    let labels_match = match_labels
        .into_iter()
        .flatten()
        .all(|(k, v)| v.as_str().is_none_or(|v| label(k) == Some(v)));
    let expressions_match = expressions.into_iter().flatten().all(|e| {
        let (Some(key), Some(op)) = (e["key"].as_str(), e["operator"].as_str()) else {
            return true;
        };
        let values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match op {
            "In" => label(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => true,
        }
    });
    labels_match && expressions_match
}

/// A `[]byte` field's string as Go's `encoding/json` decodes it (`literalStore` in
/// `encoding/json/decode.go`, kept by sigs.k8s.io/json): `base64.StdEncoding.Decode`, which
/// drops every `\r` and `\n` wherever they are (`base64 FILE` wraps at 76 columns), needs
/// the padding, and, not being `Strict`, accepts nonzero trailing bits.
pub(crate) fn is_base64(s: &str) -> bool {
    const GO_STD: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::general_purpose::PAD.with_decode_allow_trailing_bits(true),
    );
    let joined: Vec<u8> = s.bytes().filter(|b| !matches!(b, b'\n' | b'\r')).collect();
    base64::Engine::decode(&GO_STD, joined).is_ok()
}
