//! The seeded-defect suite (issue 36): one invalid object per rule, each with the finding
//! it must give, and a valid twin that differs only in the defect and must give none.

use crate::conflict::{Identity, Placement, conflicts};
use crate::{Code, Crds, Finding, MAX_DATA_SIZE, Validator};
use serde_json::{Value, json};

/// A CRD exercising every value validation a structural schema has.
fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["size"],
                            "x-kubernetes-validations": [
                                {"rule": "!has(self.low) || !has(self.high) || self.low <= self.high", "message": "low must not exceed high"},
                                {"rule": "!has(self.mode) || self.mode != 'off' || !has(self.tags)", "messageExpression": "'tags are unused when mode is ' + self.mode"},
                                {"rule": "!has(self.ratio) || self.ratio / self.zero > 0"},
                                {"rule": "!has(self.size) || timestamp('2020-01-01T00:00:00Z') < timestamp('2021-01-01T00:00:00Z')"},
                                {"rule": "self == oldSelf"}
                            ],
                            "properties": {
                                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                                "low": {"type": "integer", "exclusiveMinimum": true, "minimum": 0},
                                "high": {"type": "integer"},
                                "ratio": {"type": "integer"},
                                "zero": {"type": "integer"},
                                "mode": {"type": "string", "enum": ["on", "off"]},
                                "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 8},
                                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2, "x-kubernetes-list-type": "set"},
                                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                                          "items": {"type": "object", "properties": {"port": {"type": "integer"}, "name": {"type": "string"}}}},
                                "labels": {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1, "maxProperties": 2},
                                "since": {"type": "string", "format": "date"},
                                "at": {"type": "string", "format": "date-time"},
                                "blob": {"type": "string", "format": "byte"},
                                "count": {"type": "integer", "format": "int32"},
                                "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[a-z]+$"}]},
                                "target": {"type": "object", "oneOf": [{"required": ["ref"]}, {"required": ["selector"]}],
                                           "properties": {"ref": {"type": "string"}, "selector": {"type": "string"}}},
                                "policy": {"type": "string", "not": {"enum": ["forbidden"]}},
                                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                            }
                        }
                    }
                }}},
                {"name": "v0", "served": false, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}}
            ]
        }
    })
}

fn validator() -> Validator {
    let mut v = Validator::new("1.33").unwrap();
    assert_eq!(v.crds.add(&widget_crd()), Vec::<Finding>::new());
    v
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": spec})
}

fn deployment(container: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}}
        }
    })
}

fn container(extra: Value) -> Value {
    let mut c = json!({"name": "web", "image": "nginx:1.27"});
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

/// A seeded defect: the rule, the invalid object, the pointer and a piece of the message
/// it must give, and its valid twin.
struct Case {
    code: Code,
    invalid: Value,
    pointer: &'static str,
    message: &'static str,
    valid: Value,
}

fn case(
    code: Code,
    invalid: Value,
    pointer: &'static str,
    message: &'static str,
    valid: Value,
) -> Case {
    Case {
        code,
        invalid,
        pointer,
        message,
        valid,
    }
}

fn with_spec(spec: Value) -> Value {
    let mut base = json!({"size": 3});
    for (k, v) in spec.as_object().unwrap() {
        base[k] = v.clone();
    }
    widget(base)
}

fn secret(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}, "data": data})
}

fn cases() -> Vec<Case> {
    let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": data});
    vec![
        // Built-in kinds: the API server's strict decoding.
        case(
            Code::WrongType,
            deployment(container(
                json!({"env": [{"name": "DEBUG", "value": true}]}),
            )),
            "/spec/template/spec/containers/0/env/0/value",
            "must be a string, not boolean `true`",
            deployment(container(
                json!({"env": [{"name": "DEBUG", "value": "true"}]}),
            )),
        ),
        case(
            Code::WrongType,
            cm(json!({"port": 8080})),
            "/data/port",
            "must be a string, not integer",
            cm(json!({"port": "8080"})),
        ),
        case(
            Code::WrongType,
            deployment(container(json!({"ports": [{"containerPort": "80"}]}))),
            "/spec/template/spec/containers/0/ports/0/containerPort",
            "must be an integer, not string",
            deployment(container(json!({"ports": [{"containerPort": 80}]}))),
        ),
        case(
            Code::WrongType,
            deployment(container(json!({"stdin": "yes"}))),
            "/spec/template/spec/containers/0/stdin",
            "must be a boolean",
            deployment(container(json!({"stdin": true}))),
        ),
        case(
            Code::WrongType,
            deployment(container(json!({"args": "--verbose"}))),
            "/spec/template/spec/containers/0/args",
            "must be an array",
            deployment(container(json!({"args": ["--verbose"]}))),
        ),
        case(
            Code::WrongType,
            deployment(container(json!({"securityContext": "privileged"}))),
            "/spec/template/spec/containers/0/securityContext",
            "must be an object",
            deployment(container(json!({"securityContext": {"privileged": false}}))),
        ),
        case(
            Code::WrongType,
            deployment(container(
                json!({"livenessProbe": {"httpGet": {"port": true}}}),
            )),
            "/spec/template/spec/containers/0/livenessProbe/httpGet/port",
            "an integer or a string",
            deployment(container(
                json!({"livenessProbe": {"httpGet": {"port": "http"}}}),
            )),
        ),
        case(
            Code::UnknownField,
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                                        "spec": {"replicas": 1, "replica": 4, "selector": {}, "template": {}}}),
            "/spec/replica",
            "unknown field `replica`; did you mean `replicas`?",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                    "spec": {"replicas": 4, "selector": {}, "template": {}}}),
        ),
        case(
            Code::IntegerRange,
            deployment(container(
                json!({"ports": [{"containerPort": 4_294_967_296_u64}]}),
            )),
            "/spec/template/spec/containers/0/ports/0/containerPort",
            "out of range for int32",
            deployment(container(json!({"ports": [{"containerPort": 65535}]}))),
        ),
        case(
            Code::InvalidQuantity,
            deployment(container(
                json!({"resources": {"limits": {"memory": "1 GB"}}}),
            )),
            "/spec/template/spec/containers/0/resources/limits/memory",
            "`1 GB` is not a quantity",
            deployment(container(
                json!({"resources": {"limits": {"memory": "1G", "cpu": 0.5}}}),
            )),
        ),
        case(
            Code::InvalidBase64,
            secret(json!({"token": "not base64!"})),
            "/data/token",
            "not valid base64",
            secret(json!({"token": "bm90IGJhc2U2NCE="})),
        ),
        // Go's decoder drops `\r` and `\n` anywhere (what `base64 FILE` wraps at 76
        // columns), and nothing else: a space is still an error.
        case(
            Code::InvalidBase64,
            secret(json!({"multi": "aGVsbG8gd29y bGQ="})),
            "/data/multi",
            "not valid base64",
            secret(json!({"multi": "aGVsbG8gd29y\r\nbGQ=\n"})),
        ),
        // Not `Strict`: nonzero trailing bits pass (`aGl=` decodes to `hi`); padding is
        // still needed.
        case(
            Code::InvalidBase64,
            secret(json!({"short": "aGl"})),
            "/data/short",
            "not valid base64",
            secret(json!({"short": "aGl="})),
        ),
        // The API server's Go validation beyond the schema (`server`): supported values.
        case(
            Code::Enum,
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "Foo"}}),
            "/spec/type",
            "\"Foo\" is not one of \"ClusterIP\", \"NodePort\", \"LoadBalancer\", \"ExternalName\"",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "NodePort"}}),
        ),
        case(
            Code::Enum,
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "protocol": "XYZ"}]}}),
            "/spec/ports/0/protocol",
            "\"XYZ\" is not one of \"TCP\", \"UDP\", \"SCTP\"",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "protocol": "UDP"}]}}),
        ),
        case(
            Code::Enum,
            deployment(container(json!({"imagePullPolicy": "Sometimes"}))),
            "/spec/template/spec/containers/0/imagePullPolicy",
            "\"Sometimes\" is not one of \"Always\", \"IfNotPresent\", \"Never\"",
            deployment(container(json!({"imagePullPolicy": "IfNotPresent"}))),
        ),
        case(
            Code::Enum,
            {
                let mut d = deployment(container(json!({})));
                d["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
                d
            },
            "/spec/template/spec/restartPolicy",
            "\"OnFailure\" is not one of \"Always\"",
            {
                let mut d = deployment(container(json!({})));
                d["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
                d
            },
        ),
        case(
            Code::Enum,
            {
                let mut d = deployment(container(json!({})));
                d["spec"]["strategy"] = json!({"type": "Fast"});
                d
            },
            "/spec/strategy/type",
            "\"Fast\" is not one of \"Recreate\", \"RollingUpdate\"",
            {
                let mut d = deployment(container(json!({})));
                d["spec"]["strategy"] = json!({"type": "Recreate"});
                d
            },
        ),
        case(
            Code::SelectorMismatch,
            {
                let mut d = deployment(container(json!({})));
                d["spec"]["selector"] = json!({"matchLabels": {"app": "x"}});
                d
            },
            "/spec/template/metadata/labels",
            "`selector` does not match template `labels`",
            {
                let mut d = deployment(container(json!({})));
                d["spec"]["selector"] =
                    json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]});
                d
            },
        ),
        // Names, ports, replicas.
        case(
            Code::InvalidName,
            {
                let mut d = deployment(container(json!({})));
                d["metadata"]["name"] = json!("My_App");
                d
            },
            "/metadata/name",
            "`My_App`: a Deployment's name must be a DNS-1123 subdomain",
            {
                let mut d = deployment(container(json!({})));
                d["metadata"]["name"] = json!("my-app.v2");
                d
            },
        ),
        case(
            Code::InvalidName,
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1web"}}),
            "/metadata/name",
            "a DNS-1035 label",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web1"}}),
        ),
        case(
            Code::InvalidName,
            deployment(json!({"name": "Main_C", "image": "nginx"})),
            "/spec/template/spec/containers/0/name",
            "container name `Main_C` must be a DNS-1123 label",
            deployment(json!({"name": "main-c", "image": "nginx"})),
        ),
        case(
            Code::InvalidName,
            cm(json!({"bad/key": "x"})),
            "/data/bad~1key",
            "key `bad/key` must be",
            cm(json!({"good.key_1": "x"})),
        ),
        case(
            Code::Minimum,
            {
                let mut d = deployment(container(json!({})));
                d["spec"]["replicas"] = json!(-3);
                d
            },
            "/spec/replicas",
            "-3 must be >= 0 (replicas)",
            {
                let mut d = deployment(container(json!({})));
                d["spec"]["replicas"] = json!(0);
                d
            },
        ),
        case(
            Code::Maximum,
            deployment(container(json!({"ports": [{"containerPort": 70000}]}))),
            "/spec/template/spec/containers/0/ports/0/containerPort",
            "70000 must be <= 65535 (a port number)",
            deployment(container(json!({"ports": [{"containerPort": 65535}]}))),
        ),
        // ValidateConfigMap's and ValidateSecret's 1 MiB (values only, decoded).
        case(
            Code::DataTooLong,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                   "data": {"a": "x".repeat(MAX_DATA_SIZE - 2)}, "binaryData": {"b": "eHh4"}}),
            "/data",
            "ConfigMap's `data` and `binaryData` total 1048577 bytes; the API server refuses more than 1048576 bytes",
            // Exactly 1 MiB passes: the server refuses only more.
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                   "data": {"a": "x".repeat(MAX_DATA_SIZE - 2)}, "binaryData": {"b": "eHg="}}),
        ),
        case(
            Code::DataTooLong,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                   "data": {"a": "eHh4eA==", "b": "AAAA"}, "stringData": {"c": "y".repeat(MAX_DATA_SIZE - 6)}}),
            "/data",
            "Secret's `data` and `stringData` (decoded) total 1048577 bytes",
            // `stringData.b` replaces `data.b`: one byte less.
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                   "data": {"a": "eHh4eA==", "b": "AAAA"}, "stringData": {"b": "zz", "c": "y".repeat(MAX_DATA_SIZE - 6)}}),
        ),
        case(
            Code::InvalidDateTime,
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "creationTimestamp": "yesterday"}, "spec": {"template": {}}}),
            "/metadata/creationTimestamp",
            "not an RFC 3339 date-time",
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "creationTimestamp": "2026-01-02T03:04:05Z"}, "spec": {"template": {}}}),
        ),
        case(
            Code::RequiredField,
            deployment(json!({"image": "nginx"})),
            "/spec/template/spec/containers/0/name",
            "required field `name` is missing",
            deployment(container(json!({}))),
        ),
        case(
            Code::MissingKind,
            json!({"apiVersion": "v1", "metadata": {"name": "x"}}),
            "",
            "no `kind`",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x"}}),
        ),
        case(
            Code::MissingName,
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {}}),
            "/metadata",
            "no `metadata.name`",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"generateName": "sa-"}}),
        ),
        case(
            Code::UnservedVersion,
            json!({"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "i"}}),
            "/apiVersion",
            "serves no kind `Ingress` in `extensions`",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"}}),
        ),
        case(
            Code::UnservedVersion,
            json!({"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": {"name": "d"}}),
            "/apiVersion",
            "does not serve `apps/v1beta2` Deployment; it serves `apps/v1`",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
        ),
        // Custom resources: structural schemas, value validations and CEL.
        case(
            Code::UnknownField,
            with_spec(json!({"colour": "red"})),
            "/spec/colour",
            "unknown field `colour`",
            with_spec(json!({"extra": {"colour": "red"}})),
        ),
        case(
            Code::RequiredField,
            widget(json!({"mode": "on"})),
            "/spec/size",
            "required field `size` is missing",
            with_spec(json!({"mode": "on"})),
        ),
        case(
            Code::WrongType,
            with_spec(json!({"high": "9"})),
            "/spec/high",
            "must be an integer",
            with_spec(json!({"high": 9})),
        ),
        case(
            Code::Enum,
            with_spec(json!({"mode": "auto"})),
            "/spec/mode",
            "\"auto\" is not one of \"on\", \"off\"",
            with_spec(json!({"mode": "off"})),
        ),
        case(
            Code::Pattern,
            with_spec(json!({"name": "Web1"})),
            "/spec/name",
            "does not match `^[a-z]+$`",
            with_spec(json!({"name": "web"})),
        ),
        case(
            Code::Minimum,
            widget(json!({"size": 0})),
            "/spec/size",
            "0 must be >= 1",
            widget(json!({"size": 1})),
        ),
        case(
            Code::Maximum,
            widget(json!({"size": 11})),
            "/spec/size",
            "11 must be <= 10",
            widget(json!({"size": 10})),
        ),
        case(
            Code::Minimum,
            with_spec(json!({"low": 0})),
            "/spec/low",
            "0 must be > 0",
            with_spec(json!({"low": 1})),
        ),
        case(
            Code::MinLength,
            with_spec(json!({"name": "a"})),
            "/spec/name",
            "has 1 characters, fewer than 2",
            with_spec(json!({"name": "ab"})),
        ),
        case(
            Code::MaxLength,
            with_spec(json!({"name": "abcdefghi"})),
            "/spec/name",
            "more than 8",
            with_spec(json!({"name": "abcdefgh"})),
        ),
        case(
            Code::MinItems,
            with_spec(json!({"tags": []})),
            "/spec/tags",
            "fewer than 1",
            with_spec(json!({"tags": ["a"]})),
        ),
        case(
            Code::MaxItems,
            with_spec(json!({"tags": ["a", "b", "c"]})),
            "/spec/tags",
            "more than 2",
            with_spec(json!({"tags": ["a", "b"]})),
        ),
        case(
            Code::MinProperties,
            with_spec(json!({"labels": {}})),
            "/spec/labels",
            "fewer than 1",
            with_spec(json!({"labels": {"a": "b"}})),
        ),
        case(
            Code::MaxProperties,
            with_spec(json!({"labels": {"a": "1", "b": "2", "c": "3"}})),
            "/spec/labels",
            "more than 2",
            with_spec(json!({"labels": {"a": "1", "b": "2"}})),
        ),
        case(
            Code::DuplicateSetItem,
            with_spec(json!({"tags": ["a", "a"]})),
            "/spec/tags/1",
            "duplicate value \"a\"",
            with_spec(json!({"tags": ["a", "b"]})),
        ),
        case(
            Code::DuplicateMapKey,
            with_spec(json!({"ports": [{"port": 80, "name": "a"}, {"port": 80, "name": "b"}]})),
            "/spec/ports/1",
            "duplicate entry for key port=80",
            with_spec(json!({"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "b"}]})),
        ),
        case(
            Code::InvalidDate,
            with_spec(json!({"since": "2026-13"})),
            "/spec/since",
            "not a full-date",
            with_spec(json!({"since": "2026-12-01"})),
        ),
        case(
            Code::InvalidDateTime,
            with_spec(json!({"at": "2026-12-01 10:00"})),
            "/spec/at",
            "not an RFC 3339",
            with_spec(json!({"at": "2026-12-01T10:00:00+01:00"})),
        ),
        case(
            Code::InvalidBase64,
            with_spec(json!({"blob": "%%%"})),
            "/spec/blob",
            "not valid base64",
            with_spec(json!({"blob": "AAEC"})),
        ),
        case(
            Code::IntegerRange,
            with_spec(json!({"count": 3_000_000_000_u64})),
            "/spec/count",
            "out of range for int32",
            with_spec(json!({"count": 3})),
        ),
        case(
            Code::AnyOf,
            with_spec(json!({"port": "HTTP"})),
            "/spec/port",
            "matches none of the schemas of `anyOf`",
            with_spec(json!({"port": "http"})),
        ),
        case(
            Code::WrongType,
            with_spec(json!({"port": 1.5})),
            "/spec/port",
            "an integer or a string",
            with_spec(json!({"port": 8080})),
        ),
        case(
            Code::OneOf,
            with_spec(json!({"target": {"ref": "a", "selector": "b"}})),
            "/spec/target",
            "matches 2",
            with_spec(json!({"target": {"ref": "a"}})),
        ),
        case(
            Code::Not,
            with_spec(json!({"policy": "forbidden"})),
            "/spec/policy",
            "must not match",
            with_spec(json!({"policy": "allowed"})),
        ),
        case(
            Code::EmbeddedResource,
            with_spec(json!({"template": {"kind": "Pod", "metadata": {}}})),
            "/spec/template",
            "needs `apiVersion`",
            with_spec(json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {}}})),
        ),
        case(
            Code::CelRule,
            with_spec(json!({"low": 5, "high": 2})),
            "/spec",
            "low must not exceed high",
            with_spec(json!({"low": 2, "high": 5})),
        ),
        case(
            Code::CelRule,
            with_spec(json!({"mode": "off", "tags": ["a"]})),
            "/spec",
            "tags are unused when mode is off",
            with_spec(json!({"mode": "on", "tags": ["a"]})),
        ),
        case(
            Code::CelError,
            with_spec(json!({"ratio": 1, "zero": 0})),
            "/spec",
            "division by zero evaluating rule: !has(self.ratio) || self.ratio / self.zero > 0",
            with_spec(json!({"ratio": 1, "zero": 1})),
        ),
        case(
            Code::UnservedVersion,
            json!({"apiVersion": "example.com/v0", "kind": "Widget", "metadata": {"name": "w"}}),
            "/apiVersion",
            "does not serve `example.com/v0`; it serves `example.com/v1`",
            widget(json!({"size": 2})),
        ),
        case(
            Code::UnknownField,
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labelz": {}}, "spec": {"size": 2}}),
            "/metadata/labelz",
            "did you mean `labels`?",
            widget(json!({"size": 2})),
        ),
    ]
}

#[test]
fn every_seeded_defect_is_found_and_its_twin_is_clean() {
    let v = validator();
    let mut failures = Vec::new();
    for (i, c) in cases().iter().enumerate() {
        let bad = v.validate(&c.invalid).findings;
        let hit = bad
            .iter()
            .any(|f| f.code == c.code && f.pointer == c.pointer && f.message.contains(c.message));
        if !hit || bad.len() != 1 {
            failures.push(format!(
                "case {i} ({}): expected one `{}` at `{}`, got {bad:#?}",
                c.code.as_str(),
                c.message,
                c.pointer
            ));
        }
        let twin = v.validate(&c.valid);
        if !twin.findings.is_empty() || twin.unvalidated.is_some() {
            failures.push(format!(
                "case {i} ({}): the valid twin gave {twin:#?}",
                c.code.as_str()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases().len() >= 40);
}

#[test]
fn every_object_rule_has_a_seeded_defect() {
    let seeded: Vec<Code> = cases().iter().map(|c| c.code).collect();
    // The rest are covered below (CRDs, kinds with no schema, conflicts).
    let elsewhere = [
        Code::InvalidCrd,
        Code::NoSchema,
        Code::SharedResource,
        Code::MissingNamespace,
        Code::ClusterScopedConflict,
    ];
    for code in Code::ALL {
        assert!(
            seeded.contains(&code) || elsewhere.contains(&code),
            "no seeded defect for `{}`",
            code.as_str()
        );
    }
}

#[test]
fn cel_rules_outside_cel_rust_and_transition_rules_are_counted_not_failed() {
    // A timestamp (kiln's cel-rust has no chrono) and `oldSelf` are on every Widget.
    assert_eq!(
        validator()
            .validate(&widget(json!({"size": 3})))
            .skipped_rules,
        2
    );
}

/// A CRD whose `spec` needs `mode` and reads `replicas` in a rule, both defaulted
/// (`defaults: false` leaves the defaults out: the same CR then fails).
fn thing_crd(defaults: bool) -> Value {
    let mut spec = json!({
        "type": "object",
        "required": ["mode"],
        "x-kubernetes-validations": [{"rule": "self.replicas >= 1 && self.limits.cpu == 'low'"}],
        "properties": {
            "mode": {"type": "string", "default": "a"},
            "replicas": {"type": "integer", "default": 1},
            "hint": {"type": "string", "nullable": true, "default": "x"},
            "limits": {"type": "object", "default": {},
                       "properties": {"cpu": {"type": "string", "default": "low"}}},
            "ports": {"type": "array", "items": {"type": "object", "required": ["protocol"],
                      "properties": {"port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}}
        }
    });
    if !defaults {
        for p in ["mode", "replicas", "limits"] {
            spec["properties"][p]
                .as_object_mut()
                .unwrap()
                .remove("default");
        }
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "Thing", "plural": "things"}, "scope": "Namespaced",
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}
    })
}

#[test]
fn crd_defaults_are_applied_before_required_and_cel() {
    let thing = |spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t", "namespace": "n"}, "spec": spec});
    let codes = |defaults: bool, spec: Value| -> Vec<(Code, String)> {
        let mut v = Validator::new("1.33").unwrap();
        assert_eq!(v.crds.add(&thing_crd(defaults)), Vec::<Finding>::new());
        v.validate(&thing(spec))
            .findings
            .into_iter()
            .map(|f| (f.code, f.pointer))
            .collect()
    };
    // The server defaults `mode`, `replicas`, `limits` and then `limits.cpu` inside the
    // copied default, a non-nullable `null` and each list item, then validates: clean.
    assert_eq!(codes(true, json!({})), vec![]);
    assert_eq!(
        codes(
            true,
            json!({"mode": null, "hint": null, "ports": [{"port": 80}]})
        ),
        vec![]
    );
    // A value given is kept: `limits.cpu: high` fails the rule.
    assert_eq!(
        codes(true, json!({"limits": {"cpu": "high"}})),
        vec![(Code::CelRule, "/spec".to_string())]
    );
    // Without the defaults the same CR fails, as it would on the server.
    let found = codes(false, json!({}));
    assert!(
        found.contains(&(Code::RequiredField, "/spec/mode".to_string())),
        "{found:?}"
    );
    assert!(found.iter().any(|(c, _)| *c == Code::CelError), "{found:?}");
}

#[test]
fn invalid_crd_is_reported_and_defines_nothing() {
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["name"]
        ["pattern"] = json!("([");
    let mut crds = Crds::default();
    let found = crds.add(&crd);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].code, Code::InvalidCrd);
    assert!(
        found[0].pointer.ends_with("/properties/name"),
        "{}",
        found[0].pointer
    );
    assert!(crds.add(&widget_crd()).is_empty());
}

#[test]
fn kinds_with_no_schema_are_counted_not_passed() {
    let v = validator();
    let out = v.validate(&json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "m"}}));
    assert!(out.findings.is_empty());
    assert_eq!(
        out.unvalidated.as_deref(),
        Some("monitoring.coreos.com/v1 ServiceMonitor")
    );
    let out = v.validate(&widget(json!({"size": 2})));
    assert_eq!(out.unvalidated, None);
}

/// `object` placed by Application `app`: its identity is leaked, as a test's few are.
fn placement<'a>(
    app: &'a str,
    ns: Option<&'a str>,
    object: &Value,
    namespaced: bool,
) -> Placement<'a> {
    Placement {
        application: app,
        // Applications are named `<project>-<component>-<environment>`.
        environment: app.rsplit('-').next().unwrap_or(app),
        cluster: "prod",
        destination_namespace: ns,
        object: Box::leak(Box::new(Identity::of(object, Some(namespaced)))),
        namespaced: Some(namespaced),
    }
}

#[test]
fn one_deployment_owned_by_two_applications_is_a_shared_resource() {
    // Two instances of one component rendering the same Deployment into one namespace.
    let d = deployment(container(json!({})));
    let found = conflicts(&[
        placement("web-a-prod", Some("shop"), &d, true),
        placement("web-b-prod", Some("shop"), &d, true),
    ]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].at, 1);
    assert_eq!(found[0].finding.code, Code::SharedResource);
    assert!(
        found[0]
            .finding
            .message
            .contains("Applications `web-a-prod` and `web-b-prod`"),
        "{}",
        found[0].finding.message
    );
    // Twin: another namespace, or one Application emitting it once.
    let mut other = d.clone();
    other["metadata"]["namespace"] = json!("shop-b");
    assert!(
        conflicts(&[
            placement("web-a-prod", Some("shop"), &d, true),
            placement("web-b-prod", Some("shop"), &other, true)
        ])
        .is_empty()
    );
}

#[test]
fn a_namespaced_object_without_any_namespace_is_reported() {
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x"}});
    let found = conflicts(&[placement("app", None, &sa, true)]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].finding.code, Code::MissingNamespace);
    assert!(conflicts(&[placement("app", Some("ns"), &sa, true)]).is_empty());
}

#[test]
fn a_cluster_scoped_object_differing_between_environments_is_reported() {
    let a = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}, "rules": []});
    let mut b = a.clone();
    b["rules"] = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]);
    let found = conflicts(&[
        placement("web-staging", Some("a"), &a, false),
        placement("web-prod", Some("b"), &b, false),
    ]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].finding.code, Code::ClusterScopedConflict);
    assert!(
        conflicts(&[
            placement("web-staging", Some("a"), &a, false),
            placement("web-prod", Some("b"), &a, false)
        ])
        .is_empty()
    );
    // In one environment, two Applications owning it is the shared resource, whatever the
    // content.
    let found = conflicts(&[
        placement("web-a-prod", None, &a, false),
        placement("web-b-prod", None, &a, false),
    ]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].finding.code, Code::SharedResource);
    assert!(
        found[0]
            .finding
            .message
            .contains("owned by Applications `web-a-prod` and `web-b-prod`"),
        "{:?}",
        found[0].finding
    );
    // Content is compared by digest, as values: the order of keys is no difference, a
    // number written otherwise (`1.0` for `1`) is one, as it was between the values.
    let reordered = json!({"rules": [], "metadata": {"name": "r"}, "kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1"});
    assert_eq!(reordered, a);
    assert!(
        conflicts(&[
            placement("web-staging", Some("a"), &a, false),
            placement("web-prod", Some("b"), &reordered, false)
        ])
        .is_empty()
    );
    let number = |n: &str| {
        let mut r = a.clone();
        r["metadata"]["labels"] = json!({"n": serde_json::from_str::<Value>(n).unwrap()});
        r
    };
    let (one, one_point_oh) = (number("1"), number("1.0"));
    let clean = conflicts(&[
        placement("web-staging", Some("a"), &one, false),
        placement("web-prod", Some("b"), &one_point_oh, false),
    ])
    .is_empty();
    assert_eq!(clean, one == one_point_oh);
}

/// A CRD body is what apiextensions' own `UnmarshalJSON`s read (marshal.go): `enum`,
/// `default` and `example` hold any JSON, `items` a schema or a list of schemas,
/// `additionalProperties` a schema or a boolean. k8s-openapi's `oneOf`s and `JSON` typed as
/// an object gave thousands of findings on real CRDs before.
#[test]
fn crd_bodies_are_decoded_as_apiextensions_does() {
    let v = Validator::new("1.36").unwrap();
    let crd = |schema: Value| {
        let mut c = widget_crd();
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema;
        c["spec"]["versions"].as_array_mut().unwrap().truncate(1);
        c
    };
    let clean = crd(json!({"type": "object", "properties": {
        "phase": {"type": "string", "enum": ["Ready", "Failed"], "default": "Ready", "example": "Ready"},
        "size": {"type": "integer", "default": 3},
        "on": {"type": "boolean", "default": true},
        "list": {"type": "array", "default": [], "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "tuple": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "open": {"type": "object", "additionalProperties": true},
        "deps": {"type": "object", "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}
    }}));
    assert_eq!(v.validate(&clean).findings, Vec::<Finding>::new());
    // What the decode refuses is still found: `additionalProperties` of another type, a
    // `type` that is not a string, a dependency list of numbers.
    let bad = crd(json!({"type": "object", "properties": {
        "labels": {"type": "object", "additionalProperties": "string"},
        "size": {"type": 5},
        "deps": {"type": "object", "dependencies": {"a": [1]}}
    }}));
    let found: Vec<(Code, String)> = v
        .validate(&bad)
        .findings
        .into_iter()
        .map(|f| (f.code, f.pointer))
        .collect();
    let root = "/spec/versions/0/schema/openAPIV3Schema/properties";
    assert_eq!(
        found,
        vec![
            (
                Code::WrongType,
                format!("{root}/labels/additionalProperties")
            ),
            (Code::WrongType, format!("{root}/size/type")),
            (Code::WrongType, format!("{root}/deps/dependencies/a/0")),
        ]
    );
}

/// What a CRD could change: nothing for a built-in kind, the kind itself for any other, and
/// for a `v1 List` the List and each item's.
#[test]
fn custom_kinds_are_every_kind_not_built_in() {
    let v = validator();
    let d = deployment(container(json!({})));
    assert!(v.custom_kinds(&d).is_empty());
    let w = widget(json!({"size": 2}));
    let kind = |g: &str, k: &str| (g.to_string(), k.to_string());
    assert_eq!(v.custom_kinds(&w), [kind("example.com", "Widget")]);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [d, w]});
    assert_eq!(
        v.custom_kinds(&list),
        [kind("", "List"), kind("example.com", "Widget")]
    );
    assert!(v.custom_kinds(&json!({"kind": "Widget"})).is_empty());
    // An unserved version of a built-in group is not built in at that version.
    let pdb = json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget"});
    assert_eq!(
        v.custom_kinds(&pdb),
        [kind("policy", "PodDisruptionBudget")]
    );
}

/// `value` with every integer written as a float (`2` as `2.0`), as a spec's `2.0` or a
/// template's float arithmetic leaves it in memory; kiln prints it as the integer.
fn floats(value: &Value) -> Value {
    match value {
        Value::Number(n) => match n.as_i64() {
            #[allow(clippy::cast_precision_loss)]
            Some(i) => serde_json::Number::from_f64(i as f64).map_or(json!(i), Value::Number),
            None => Value::Number(n.clone()),
        },
        Value::Array(items) => Value::Array(items.iter().map(floats).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), floats(v))).collect())
        }
        other => other.clone(),
    }
}

/// Issue 36 (speed): kiln validates a rendered object in memory, judged as its printed bytes
/// read back (`kiln_base::yaml::as_printed`), and parses the bytes only for the findings'
/// positions. Every seeded object and its valid twin (and the CRD), as given and with every
/// integer a float, gives the same judgement both ways: the findings, the kind left
/// unvalidated, the CEL rules skipped, the scope, the custom kinds and the conflict identity
/// (its content digest). The findings are compared as a set: the walk follows the map's key
/// order, which printing changes (kiln parses the file of an object with findings, so those
/// come in the bytes' order). Judged as they are in memory, the floats would differ.
#[test]
fn every_seeded_object_judged_as_printed_is_judged_as_its_bytes() {
    use kiln_base::yaml::{as_printed, parse_one, to_yaml};
    let v = validator();
    let judge = |o: &Value| {
        let outcome = v.validate(o);
        let mut findings = outcome.findings;
        findings.sort_by(|a, b| {
            (a.code, &a.pointer, &a.message).cmp(&(b.code, &b.pointer, &b.message))
        });
        let api_version = o["apiVersion"].as_str().unwrap_or_default();
        let namespaced = v.namespaced(api_version, o["kind"].as_str().unwrap_or_default());
        (
            findings,
            outcome.unvalidated,
            outcome.skipped_rules,
            namespaced,
            v.custom_kinds(o),
            Identity::of(o, namespaced),
        )
    };
    let mut objects = vec![widget_crd()];
    for c in cases() {
        objects.push(c.invalid);
        objects.push(c.valid);
    }
    let objects: Vec<Value> = objects
        .iter()
        .flat_map(|o| [o.clone(), floats(o)])
        .collect();
    // kiln's reader reads a number or a boolean under a ConfigMap's or Secret's `data` as its
    // text (kiln_base's `keep_string_data_text`, divergence y08), where the API server
    // refuses it; the bytes of such an object read back otherwise than printed.
    let retyped = |o: &Value| {
        ["data", "stringData", "binaryData"].iter().any(|field| {
            o[field]
                .as_object()
                .is_some_and(|m| m.values().any(|v| v.is_number() || v.is_boolean()))
        })
    };
    let mut naive = 0;
    for (i, object) in objects.iter().enumerate().filter(|(_, o)| !retyped(o)) {
        let bytes = parse_one("object.yaml", &to_yaml(object)).unwrap();
        assert_eq!(
            judge(&as_printed(object)),
            judge(&bytes),
            "object {i}: {object}"
        );
        if judge(object) != judge(&bytes) {
            naive += 1;
        }
    }
    let compared = objects.iter().filter(|o| !retyped(o)).count();
    assert!(
        compared > 80 && naive > 0,
        "{compared} objects, {naive} differ as they are"
    );
}

/// A Secret's value never reaches a finding's message: an unquoted number in `stringData`
/// or `data` is named by its type and masked, in a `v1 List` too; a ConfigMap's value is
/// shown as before.
#[test]
fn a_secret_value_is_masked_in_every_message() {
    let v = validator();
    let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
                   "stringData": {"password": 987654321, "ok": "fine"}, "data": {"x": 12345, "flag": true}});
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [s.clone()]});
    for object in [&s, &list] {
        let findings = v.validate(object).findings;
        let messages: Vec<&str> = findings.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(findings.len(), 3, "{findings:?}");
        for value in ["987654321", "12345", "true`"] {
            assert!(
                messages.iter().all(|m| !m.contains(value)),
                "{value}: {messages:?}"
            );
        }
        assert!(
            messages.contains(&"must be a string, not integer `*********`"),
            "{messages:?}"
        );
        assert!(messages.contains(&"must be a string, not boolean `****`"));
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"},
                    "data": {"port": 8080}});
    assert_eq!(
        v.validate(&cm).findings[0].message,
        "must be a string, not integer `8080`"
    );
}
