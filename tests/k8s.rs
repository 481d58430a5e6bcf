//! Kubernetes validation (issue 36, `kiln-k8s`) on real output: every object kubectl
//! kustomize rendered for the corpus and real Helm rendered for the charts validates clean,
//! but for the findings listed in [`KNOWN`], each a real invalidity.

use crate::support::{shared_dir, shared_required};
use kiln::yaml::parse_stream_as_applied;
use kiln_k8s::{Crds, Validator};
use std::path::{Path, PathBuf};

/// Real invalidities in the reference outputs: (file suffix, pointer, why it is real). The
/// same list, with the same reasons, is in docs/validation.md.
const KNOWN: &[(&str, &str, &str)] = &[
    (
        "infrastructure-docker/main/cluster-template-ipv6.expected.yaml",
        "/data",
        "a clusterctl template: `data: ${CNI_RESOURCES}` is an envsubst placeholder, substituted \
         before apply; as written, ConfigMap `data` is a string and the API server refuses it",
    ),
    (
        "infrastructure-docker/main/cluster-template-topology-kcp-only.expected.yaml",
        "/data",
        "the same clusterctl placeholder `data: ${CNI_RESOURCES}`",
    ),
    (
        "examples/transformerconfigs/crd.expected.yaml",
        "\"Bee\" \"test-bee\" /apiVersion",
        "kustomize's example uses `apiVersion: v1beta1`, the core group, which serves no kind \
         `Bee` (the example's CRD is for kustomize's transformer configs, never applied)",
    ),
    (
        "traefik/expected/full.yaml",
        "\"PodDisruptionBudget\" \"rel-traefik\" /apiVersion",
        "`helm template` offline has no `policy/v1/PodDisruptionBudget` capability, so the chart \
         falls back to `policy/v1beta1`, which Kubernetes stopped serving in 1.25",
    ),
    (
        "velero/expected/ci-test.yaml",
        "\"PodDisruptionBudget\" \"rel-velero\" /apiVersion",
        "the same fallback to `policy/v1beta1` PodDisruptionBudget, removed in 1.25",
    ),
    (
        "nats/expected/cluster-jetstream.yaml",
        "\"ConfigMap\" \"\" /metadata",
        "the values give `extraResources[0].metadata.name` as `$tplYaml`, which the chart does not \
         expand there, so the ConfigMap renders with `name: ''` and the API server needs a name",
    ),
];

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "yaml") {
            out.push(p);
        }
    }
}

/// Every finding of every stream under the reference outputs, as `file pointer: message`,
/// each read as `kiln validate` reads it: as applied, every plain scalar typed.
fn findings_of(files: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let Ok(docs) = parse_stream_as_applied(&file.display().to_string(), &text) else {
            continue;
        };
        let mut validator = Validator::new(kiln_k8s::builtin::DEFAULT_VERSION).unwrap();
        for doc in docs.iter().filter(|d| Crds::is_crd(d)) {
            for f in validator.crds.add(doc) {
                out.push(format!(
                    "{} CRD {}: {} {}",
                    file.display(),
                    doc["metadata"]["name"],
                    f.pointer,
                    f.message
                ));
            }
        }
        for (i, doc) in docs.iter().enumerate() {
            for f in validator.validate(doc).findings {
                out.push(format!(
                    "{} #{i} {} {} {}: {}",
                    file.display(),
                    doc["kind"],
                    doc["metadata"]["name"],
                    f.pointer,
                    f.message
                ));
            }
        }
    }
    out
}

#[test]
fn corpus_and_charts_outputs_validate_clean() {
    let shared = shared_dir();
    if !shared.join("corpus").is_dir() {
        assert!(
            !shared_required(),
            "REQUIRE_SHARED=1 but {} is missing",
            shared.display()
        );
        return;
    }
    let mut files = Vec::new();
    yaml_files(&shared.join("corpus/_expected"), &mut files);
    let charts = shared.join("charts");
    for chart in std::fs::read_dir(&charts).unwrap() {
        yaml_files(&chart.unwrap().path().join("expected"), &mut files);
    }
    assert!(files.len() > 100, "{} reference outputs", files.len());
    let findings = findings_of(&files);
    for (file, pointer, _) in KNOWN {
        assert!(
            findings
                .iter()
                .any(|f| f.contains(file) && f.contains(pointer)),
            "the known finding {file} {pointer} is gone: remove it here and in docs/validation.md"
        );
    }
    let unexpected: Vec<String> = findings
        .into_iter()
        .filter(|f| {
            !KNOWN
                .iter()
                .any(|(file, pointer, _)| f.contains(file) && f.contains(pointer))
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "{} findings on real output:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}

// Validation inside `kiln render` (issue 36): the four newcomer findings, each platform-wide
// conflict and `spec.validation.crds`, on the render fixture of `render::cli_errors`.

use crate::render::cli_errors::{Fixture, assert_fails, line_of};

const PLATFORM: &str = "repo/platforms/p/platform.yaml";
const COMPONENT: &str = "repo/components/web/component.yaml";

/// Renders with `args`, asserts success, returns stderr.
fn renders(f: &Fixture, args: &[&str]) -> String {
    let out = f.render(args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    stderr
}

/// Renders with `args`, asserts the render failed with nothing written, and that stderr
/// holds every one of `needles`; returns stderr.
fn refused(f: &Fixture, args: &[&str], needles: &[&str]) -> String {
    let err = assert_fails(f, &f.render(args), &[]);
    // miette wraps long lines at any width, behind a `|` border: compare without either.
    let squash = |t: &str| {
        t.chars()
            .filter(|c| !c.is_whitespace() && *c != '|')
            .collect::<String>()
    };
    for n in needles {
        assert!(squash(&err).contains(&squash(n)), "no `{n}` in:\n{err}");
    }
    err
}

/// Declares a boolean parameter `debug` and adds an env var `DEBUG` with `value` (as
/// written in the patch) to the Deployment.
fn debug_env(f: &Fixture, value: &str) {
    f.edit(
        COMPONENT,
        "      replicas:",
        "      debug: {type: boolean, default: true}\n      replicas:",
    );
    f.edit(
        COMPONENT,
        "      - {op: replace",
        &format!("      - {{op: add, path: /spec/template/spec/containers/0/env, value: [{{name: DEBUG, value: {value}}}]}}\n      - {{op: replace"),
    );
}

/// Newcomer 1: a boolean parameter placed whole in `EnvVar.value` renders `value: true`,
/// which the API server refuses.
#[test]
fn render_refuses_a_boolean_in_an_env_var() {
    let f = Fixture::new();
    debug_env(&f, "\"${params.debug}\"");
    refused(
        &f,
        &[],
        &[
            "kiln::k8s::wrong_type",
            "web/dev/web/web.gen.yaml:20: Deployment/web-dev/web",
            "must be a string, not boolean `true`",
        ],
    );
    // Quoted inside a longer string it is a string, and the render passes.
    f.edit(
        COMPONENT,
        "\"${params.debug}\"",
        "\"debug=${params.debug}\"",
    );
    renders(&f, &[]);
}

/// Newcomer 2: a JSON Patch `replace` on a mistyped path no longer adds a field.
#[test]
fn render_refuses_a_json_patch_replace_of_a_missing_path() {
    let f = Fixture::new();
    f.edit(COMPONENT, "path: /spec/replicas,", "path: /spec/replica,");
    let err = assert_fails(
        &f,
        &f.render(&[]),
        &[(
            "components/web/component.yaml",
            line_of(&f, COMPONENT, "/spec/replica,"),
        )],
    );
    assert!(
        err.contains("kiln::render::json_patch_path_missing")
            && err.contains("did you mean `/spec/replicas`?"),
        "{err}"
    );
}

/// Newcomer 3: two instances of one component render the same Deployment into one
/// namespace, owned by two Argo CD Applications; a rule named in `spec.validation.warn`
/// prints instead.
#[test]
fn render_refuses_one_object_owned_by_two_applications() {
    let f = Fixture::new();
    f.edit(
        PLATFORM,
        "    - path: ../../components/web\n",
        "    - path: ../../components/web\n      name: web2\n      parameters: {replicas: 2}\n    - path: ../../components/web\n",
    );
    refused(&f, &[], &["kiln::k8s::shared_resource", "web-web2-dev"]);
    f.edit(
        PLATFORM,
        "  clusters:\n",
        "  validation:\n    warn: [shared_resource]\n  clusters:\n",
    );
    let out = renders(&f, &[]);
    assert!(out.contains("warning[kiln::k8s::shared_resource]"), "{out}");
}

/// A cluster-scoped object rendered into two environments of one cluster, differently.
#[test]
fn render_refuses_a_cluster_scoped_object_that_differs_between_environments() {
    let f = Fixture::new();
    f.write(
        "repo/components/web/manifests/role.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: web-reader\nrules: []\n",
    );
    f.edit(
        COMPONENT,
        "  - jsonPatch:",
        "  - labels: {env: \"${env.name}\"}\n  - jsonPatch:",
    );
    refused(
        &f,
        &[],
        &["kiln::k8s::cluster_scoped_conflict", "web-reader"],
    );
    // The same content in both environments is one object, applied twice: no conflict.
    f.edit(COMPONENT, "\"${env.name}\"", "web");
    renders(&f, &[]);
}

/// `spec.validation.crds`: a custom resource is validated against a CRD file the platform
/// names; without it the kind is counted as not validated, and `--strict` refuses it.
#[test]
fn render_validates_custom_resources_against_spec_validation_crds() {
    let f = Fixture::new();
    f.write(
        "repo/components/web/manifests/widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 20\n",
    );
    let out = renders(&f, &[]);
    assert!(
        out.contains("not validated: 1 kinds with no schema: example.com/v1 Widget"),
        "{out}"
    );
    std::fs::remove_dir_all(f.path("repo/deploy")).unwrap();
    refused(&f, &["--strict"], &["kiln::k8s::no_schema"]);
    f.write(
        "repo/platforms/p/crds/widget.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size: {type: integer, maximum: 10}\n",
    );
    f.edit(
        PLATFORM,
        "  clusters:\n",
        "  validation:\n    crds: [crds/widget.yaml]\n  clusters:\n",
    );
    refused(&f, &[], &["kiln::k8s::maximum", "/spec/size"]);
    f.edit("repo/components/web/manifests/widget.yaml", "20", "5");
    renders(&f, &["--strict"]);
}

/// A chart `ledger` in the web component, rendered by a `helm` generator with `values`.
fn with_ledger_chart(f: &Fixture, values: &str) {
    f.write(
        "repo/components/web/chart/Chart.yaml",
        "apiVersion: v2\nname: ledger\nversion: 1.0.0\n",
    );
    f.write(
        "repo/components/web/chart/values.yaml",
        "replicaCount: 1\ningress:\n  enabled: false\n  host: \"\"\n",
    );
    f.write(
        "repo/components/web/chart/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ledger\ndata:\n  replicas: \"{{ .Values.replicaCount }}\"\n{{- if .Values.ingress.enabled }}\n  host: {{ .Values.ingress.host | quote }}\n{{- end }}\n",
    );
    f.edit(
        COMPONENT,
        "  - files: [manifests]\n",
        &format!("  - files: [manifests]\n  - helm:\n      chart: chart\n      values:\n{values}"),
    );
}

/// Newcomer 4 (item 6): a typo in a Helm value is a warning naming the value, the chart and
/// the value the templates read; a value read only under a disabled `if` is reported, and
/// not once the branch is enabled.
#[test]
fn render_warns_of_helm_values_no_template_reads() {
    let f = Fixture::new();
    with_ledger_chart(
        &f,
        "        replicaCont: 3\n        ingress:\n          host: web.example.com\n",
    );
    let out = renders(&f, &[]);
    let typo = format!(
        "warning[kiln::render::unused_value]: components/web/component.yaml:{}:9: value replicaCont is not used by chart ledger; did you mean replicaCount?",
        line_of(&f, COMPONENT, "replicaCont:")
    );
    assert!(out.contains(&typo), "no `{typo}` in:\n{out}");
    assert!(
        out.contains("value ingress.host is not used by chart ledger"),
        "{out}"
    );
    // Every environment renders the chart; the warning is said once.
    assert_eq!(out.matches("value replicaCont").count(), 1, "{out}");
    f.edit(
        COMPONENT,
        "        ingress:\n",
        "        ingress:\n          enabled: true\n",
    );
    let out = renders(&f, &[]);
    assert!(out.contains("value replicaCont is not used"), "{out}");
    assert!(!out.contains("ingress.host"), "{out}");
}

/// Newcomer 4 (issue 38, item 10): one manifest line that is invalid in every environment
/// (each its own namespace) is one error naming the environments, on stderr and in `-o json`.
#[test]
fn one_invalid_manifest_line_is_one_error_for_every_environment() {
    let f = Fixture::new();
    f.write(
        "repo/components/web/manifests/svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: settings\nspec:\n  ports:\n  - port: \"80\"\n",
    );
    let err = refused(
        &f,
        &[],
        &[
            "Service/web-dev/settings at `/spec/ports/0/port`: must be an integer, not string; from components/web/manifests/svc.yaml:7 (manifest)",
            "in environments: dev, prod",
        ],
    );
    assert_eq!(err.matches("kiln::k8s::wrong_type").count(), 1, "{err}");
    let out = f.render(&["-o", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = report["findings"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["places"], "in environments: dev, prod");
}

/// Newcomer 4 (issue 36, item 2): the CRDs of `kiln validate --schema-dir` validate custom
/// resources in the Kubernetes half too: a CR that matches its CRD passes `--strict`, one
/// that breaks its CEL rule is refused.
#[test]
fn validate_checks_custom_resources_against_the_schema_dir_crds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("schemas");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("widget.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            x-kubernetes-validations: [{rule: \"self.mode == 'a'\"}]\n            properties: {mode: {type: string}}\n",
    )
    .unwrap();
    let cr = |mode: &str| {
        let file = tmp.path().join(format!("{mode}.yaml"));
        std::fs::write(
            &file,
            format!("apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w, namespace: n}}\nspec: {{mode: {mode}}}\n"),
        )
        .unwrap();
        file
    };
    let validate = |file: &Path, strict: &[&str]| {
        crate::support::run(
            crate::support::kiln_bin()
                .arg("validate")
                .args(strict)
                .arg("--schema-dir")
                .arg(&dir)
                .arg(file),
        )
    };
    let out = validate(&cr("a"), &["--strict"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("no problems in 1 object checked"),
        "{}",
        out.stderr
    );
    let out = validate(&cr("zz"), &[]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("/spec"), "{}", out.stderr);
}

/// Newcomer 4 (issue 36, item 7): `kiln validate -o json` gives each Kubernetes finding's
/// line, column and help, as the render's findings do.
#[test]
fn validate_json_findings_have_line_column_and_help() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: n}\nspec:\n  ports:\n  - port: \"80\"\n",
    )
    .unwrap();
    let out = crate::support::run(
        crate::support::kiln_bin()
            .arg("validate")
            .arg(&file)
            .args(["-o", "json"]),
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let f = &report["kubernetes"]["findings"][0];
    assert_eq!(f["code"], "kiln::k8s::wrong_type", "{report:#}");
    assert_eq!(
        (&f["line"], &f["column"], &f["document"]),
        (&6.into(), &11.into(), &0.into())
    );
    assert!(
        f["help"].as_str().is_some_and(|h| h.contains("quote")),
        "{report:#}"
    );
}

/// Newcomer 4 (issue 36, item 7): a `kubeVersion` kiln has no schemas for and a rule
/// `spec.validation.warn` does not know are refused at their line, the rule with a
/// did-you-mean.
#[test]
fn an_unknown_kube_version_or_rule_is_refused_at_its_line() {
    let f = Fixture::new();
    f.edit(
        PLATFORM,
        "    server: https://c.example.com\n",
        "    server: https://c.example.com\n    kubeVersion: \"1.30\"\n",
    );
    let line = line_of(&f, PLATFORM, "kubeVersion");
    refused(
        &f,
        &[],
        &[
            "kiln::validate::unknown_kube_version",
            &format!(
                "platforms/p/platform.yaml:{line}:18: no Kubernetes API schemas for `kubeVersion: 1.30`"
            ),
            "1.33, 1.34",
        ],
    );
    f.edit(PLATFORM, "\"1.30\"", "\"1.36\"");
    f.edit(
        PLATFORM,
        "  clusters:\n",
        "  validation:\n    warn: [wrong_typ]\n  clusters:\n",
    );
    let line = line_of(&f, PLATFORM, "wrong_typ");
    refused(
        &f,
        &[],
        &[
            "kiln::validate::unknown_rule",
            &format!(
                "platforms/p/platform.yaml:{line}:12: `spec.validation.warn` names no rule `wrong_typ`"
            ),
            "did you mean `wrong_type`?",
        ],
    );
}

/// Newcomer 4 (issue 36, item 7): a label the API server refuses, written in a manifest, is
/// refused at the manifest's line, not at the component.
#[test]
fn an_invalid_label_in_a_manifest_is_refused_at_its_line() {
    let f = Fixture::new();
    f.write(
        "repo/components/web/manifests/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {n: 1}\ndata: {a: b}\n",
    );
    let err = refused(
        &f,
        &[],
        &[
            "kiln::render::invalid_object_meta",
            "components/web/manifests/cm.yaml:5:15: ConfigMap `cm` of `web/dev/web` has an invalid metadata.labels.n",
        ],
    );
    assert!(!err.contains("component.yaml"), "{err}");
}

/// Adds the values file `name` (in the web component, with `text`) to the ledger chart's
/// `valuesFiles` ([`with_ledger_chart`]).
fn with_values_file(f: &Fixture, name: &str, text: &str) {
    f.write(&format!("repo/components/web/{name}"), text);
    f.edit(
        COMPONENT,
        "      values:\n",
        &format!("      valuesFiles: [{name}]\n      values:\n"),
    );
}

/// Newcomer 4 (issue 36, item 7): a value no template reads, given in a values file, is
/// reported at that file's line, not at the `helm` generator.
#[test]
fn an_unused_value_from_a_values_file_is_reported_at_its_line() {
    let f = Fixture::new();
    with_ledger_chart(&f, "        replicaCount: 2\n");
    with_values_file(&f, "values-extra.yaml", "# extra values\nreplicaCont: 3\n");
    let out = renders(&f, &[]);
    assert!(
        out.contains("warning[kiln::render::unused_value]: components/web/values-extra.yaml:2:1: value replicaCont is not used by chart ledger"),
        "{out}"
    );
}

/// The `findings` of `kiln render -o json` with `args`, which must succeed.
fn json_findings(f: &Fixture, args: &[&str]) -> Vec<serde_json::Value> {
    let out = f.render(&[&["-o", "json"], args].concat());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["findings"].as_array().unwrap().clone()
}

/// Newcomer 4 (issue 36, item 7): the unused value warning is one of `-o json`'s findings,
/// with its file, line and column, as on stderr.
#[test]
fn render_json_gives_the_unused_value_warning() {
    let f = Fixture::new();
    with_ledger_chart(&f, "        replicaCont: 3\n");
    let found = json_findings(&f, &["--no-cache"]);
    let unused: Vec<_> = found
        .iter()
        .filter(|v| v["code"] == "kiln::render::unused_value")
        .collect();
    assert_eq!(unused.len(), 1, "{found:#?}");
    let u = unused[0];
    assert_eq!(u["severity"], "warning");
    assert_eq!(u["file"], "components/web/component.yaml");
    assert_eq!(u["line"], line_of(&f, COMPONENT, "replicaCont:"));
    assert_eq!(u["column"], 9);
    assert_eq!(
        u["message"],
        "value replicaCont is not used by chart ledger; did you mean replicaCount?"
    );
}

/// Newcomer 4 (issue 36, item 7): a render the journal skips (unchanged input and output,
/// what CI with a restored cache runs) repeats the warnings of the render it skips, on
/// stderr and in `-o json`: the unused value, a rule turned into a warning, the kinds not
/// validated.
#[test]
fn a_skipped_render_repeats_its_warnings() {
    let f = Fixture::new();
    with_ledger_chart(&f, "        replicaCont: 3\n");
    f.write(
        "repo/components/web/manifests/gadget.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n---\napiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: p\nspec:\n  minAvailable: 1\n",
    );
    f.edit(
        PLATFORM,
        "  clusters:\n",
        "  validation:\n    warn: [unserved_version]\n  clusters:\n",
    );
    let warnings = |err: &str| -> Vec<String> {
        err.lines()
            .filter(|l| l.starts_with("warning"))
            .map(str::to_string)
            .collect()
    };
    let first = warnings(&renders(&f, &[]));
    for needle in ["unused_value", "not validated", "unserved_version"] {
        assert!(first.iter().any(|l| l.contains(needle)), "{first:#?}");
    }
    let out = f.render(&[]);
    assert_eq!(warnings(&String::from_utf8_lossy(&out.stderr)), first);
    let found = json_findings(&f, &[]);
    let codes: Vec<&str> = found.iter().filter_map(|v| v["code"].as_str()).collect();
    assert!(
        codes.contains(&"kiln::render::unused_value")
            && codes.contains(&"kiln::k8s::unserved_version"),
        "{found:#?}"
    );
    // The same as the render that did the work.
    assert_eq!(found, json_findings(&f, &["--no-cache"]));
}

/// Item 4: a non-string parameter placed whole in a string field names the parameter, its
/// type and its definition, and the help shows both ways out.
#[test]
fn render_names_the_parameter_a_wrong_type_came_from() {
    let f = Fixture::new();
    debug_env(&f, "\"${params.debug}\"");
    let defined = line_of(&f, COMPONENT, "debug: {type");
    refused(
        &f,
        &[],
        &[
            "kiln::k8s::wrong_type",
            &format!(
                "it is parameter `debug` (boolean, defined at components/web/component.yaml:{defined}), placed whole by `${{params.debug}}`"
            ),
            "\"${params.debug}\"",
            "string parameter",
        ],
    );
}

/// Item 7: each finding names its source: the manifest's line, the patch in
/// component.yaml, the chart template's line; `-o json` gives them as `source`.
#[test]
fn render_findings_point_at_the_manifest_the_patch_and_the_template() {
    let f = Fixture::new();
    f.write(
        "repo/components/web/manifests/svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: settings\nspec:\n  ports:\n  - port: \"80\"\n",
    );
    debug_env(&f, "true");
    with_ledger_chart(&f, "        replicaCount: 2\n");
    f.write(
        "repo/components/web/chart/templates/bad.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: bad\nspec:\n  ports:\n  - port: \"{{ .Values.replicaCount }}\"\n",
    );
    let patch = line_of(&f, COMPONENT, "name: DEBUG");
    refused(
        &f,
        &[],
        &[
            "Service/web-dev/settings at `/spec/ports/0/port`: must be an integer, not string; from components/web/manifests/svc.yaml:7 (manifest)",
            &format!(
                "Deployment/web-dev/web at `/spec/template/spec/containers/0/env/0/value`: must be a string, not boolean `true`; from components/web/component.yaml:{patch} (jsonPatch)"
            ),
            "Service/web-dev/bad at `/spec/ports/0/port`: must be an integer, not string; from components/web/chart/templates/bad.yaml:7 (template)",
        ],
    );
    let out = f.render(&["-o", "json"]);
    assert_ne!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let source_of = |object: &str| {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["object"] == object)
            .unwrap_or_else(|| panic!("no finding on {object}: {report}"))["source"]
            .clone()
    };
    assert_eq!(
        source_of("Service/web-dev/settings"),
        serde_json::json!({"kind": "manifest", "file": "components/web/manifests/svc.yaml", "line": 7})
    );
    assert_eq!(
        source_of("Deployment/web-dev/web"),
        serde_json::json!({"kind": "jsonPatch", "file": "components/web/component.yaml", "line": patch,
            "pointer": "/spec/transformers/1/jsonPatch/patch/0/value/0/value"})
    );
    assert_eq!(
        source_of("Service/web-dev/bad"),
        serde_json::json!({"kind": "template", "file": "components/web/chart/templates/bad.yaml", "line": 7,
            "values": [{"path": "replicaCount", "kind": "values", "file": "components/web/component.yaml",
                "line": line_of(&f, COMPONENT, "replicaCount: 2")}]})
    );
}

/// The ledger chart ([`with_ledger_chart`]) with a Deployment whose template quotes
/// `replicas` (`replicas: {{ .Values.replicas | quote }}`, line 6), so that every value of
/// `replicas` renders a string where Kubernetes wants an integer; `replicas: 1` in the
/// chart's values.yaml (line 2), and `values` inline.
fn with_quoted_replicas(f: &Fixture, values: &str) {
    with_ledger_chart(f, values);
    f.write(
        "repo/components/web/chart/values.yaml",
        "replicaCount: 1\nreplicas: 1\ningress:\n  enabled: false\n  host: \"\"\n",
    );
    f.write(
        "repo/components/web/chart/templates/dep.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ledger\nspec:\n  replicas: {{ .Values.replicas | quote }}\n  selector: {matchLabels: {app: l}}\n  template:\n    metadata: {labels: {app: l}}\n    spec:\n      containers: [{name: l, image: nginx}]\n",
    );
}

/// The `source` of the one `wrong_type` finding of `kiln render -o json`, which must fail.
fn wrong_type_source(f: &Fixture) -> serde_json::Value {
    let out = f.render(&["-o", "json"]);
    assert_ne!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "kiln::k8s::wrong_type")
        .collect();
    assert_eq!(found.len(), 1, "{report:#}");
    found[0]["source"].clone()
}

/// Newcomer 4, repro 21 (issue 36, item 7): a finding in a chart's output names the chart
/// template's line and the values file the value came from, with its line, on stderr and in
/// `-o json`'s `source.values`.
#[test]
fn a_template_finding_names_the_values_file_the_value_came_from() {
    let f = Fixture::new();
    with_quoted_replicas(&f, "        replicaCount: 1\n");
    with_values_file(&f, "values-prod.yaml", "# prod values\nreplicas: 3\n");
    refused(
        &f,
        &[],
        &[
            "kiln::k8s::wrong_type",
            "at `/spec/replicas`: must be an integer, not string; from components/web/chart/templates/dep.yaml:6 (template); value `replicas` from components/web/values-prod.yaml:2",
        ],
    );
    assert_eq!(
        wrong_type_source(&f),
        serde_json::json!({"kind": "template", "file": "components/web/chart/templates/dep.yaml", "line": 6,
            "values": [{"path": "replicas", "kind": "valuesFile", "file": "components/web/values-prod.yaml", "line": 2}]})
    );
}

/// Item 7: a map a template prints whole (`toYaml .Values.resources | nindent`, on the line
/// below its key) is named at the value under it that the field is, in the values file
/// that set it.
#[test]
fn a_template_finding_names_the_value_inside_a_map_printed_whole() {
    let f = Fixture::new();
    with_ledger_chart(&f, "        replicaCount: 1\n");
    f.write(
        "repo/components/web/chart/templates/dep.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ledger\nspec:\n  selector: {matchLabels: {app: l}}\n  template:\n    metadata: {labels: {app: l}}\n    spec:\n      containers:\n      - name: l\n        image: nginx\n        resources:\n          {{- toYaml .Values.resources | nindent 10 }}\n",
    );
    with_values_file(
        &f,
        "values-prod.yaml",
        "resources:\n  limits:\n    cpu: [1]\n",
    );
    let source = wrong_type_source(&f);
    assert_eq!(
        source,
        serde_json::json!({"kind": "template", "file": "components/web/chart/templates/dep.yaml", "line": 13,
            "values": [{"path": "resources.limits.cpu", "kind": "valuesFile", "file": "components/web/values-prod.yaml", "line": 3}]})
    );
}

/// Item 7: a value given inline in component.yaml is named at its line there; one only the
/// chart sets is the chart's default, at its line in the chart's values.yaml.
#[test]
fn a_template_finding_names_inline_values_and_chart_defaults() {
    let f = Fixture::new();
    with_quoted_replicas(&f, "        replicas: 4\n");
    let inline = line_of(&f, COMPONENT, "replicas: 4");
    refused(
        &f,
        &[],
        &[&format!(
            "dep.yaml:6 (template); value `replicas` from components/web/component.yaml:{inline} (values)"
        )],
    );
    assert_eq!(
        wrong_type_source(&f)["values"],
        serde_json::json!([{"path": "replicas", "kind": "values", "file": "components/web/component.yaml", "line": inline}])
    );
    f.edit(
        COMPONENT,
        "        replicas: 4\n",
        "        replicaCount: 1\n",
    );
    refused(
        &f,
        &[],
        &[
            "dep.yaml:6 (template); value `replicas` from components/web/chart/values.yaml:2 (chart default)",
        ],
    );
    assert_eq!(
        wrong_type_source(&f)["values"],
        serde_json::json!([{"path": "replicas", "kind": "chartDefault", "file": "components/web/chart/values.yaml", "line": 2}])
    );
}

/// Item 7: an object a `kustomize:` generator builds names the manifest of the
/// kustomization tree that declared it, a base's included, from the repository root.
#[test]
fn render_findings_on_kustomize_objects_point_at_their_manifest() {
    let f = Fixture::new();
    f.write(
        "repo/components/web/kust/base/kustomization.yaml",
        "resources: [svc.yaml]\n",
    );
    f.write(
        "repo/components/web/kust/base/svc.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: settings\nspec:\n  ports:\n  - port: \"80\"\n",
    );
    f.write(
        "repo/components/web/kust/kustomization.yaml",
        "resources: [base, cm.yaml]\nnamePrefix: k-\n",
    );
    f.write(
        "repo/components/web/kust/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\nspec: {}\n",
    );
    f.edit(
        COMPONENT,
        "  - files: [manifests]\n",
        "  - files: [manifests]\n  - kustomize: kust\n",
    );
    refused(
        &f,
        &[],
        &[
            "Service/web-dev/k-settings at `/spec/ports/0/port`: must be an integer, not string; from components/web/kust/base/svc.yaml:12 (manifest)",
            "ConfigMap/web-dev/k-conf at `/spec`: unknown field `spec`; from components/web/kust/cm.yaml:5 (manifest)",
        ],
    );
}

/// A render after an edit renders only the changed plans (the journal): those are validated
/// too, so an invalid edit is refused and nothing is written (it was written unchecked).
#[test]
fn an_incremental_render_validates_what_it_renders_again() {
    let f = Fixture::new();
    renders(&f, &[]);
    let gen_yaml = f.path("repo/deploy/web/dev/web/web.gen.yaml");
    let before = std::fs::read(&gen_yaml).unwrap();
    debug_env(&f, "true");
    let out = f.render(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("kiln::k8s::wrong_type"), "{err}");
    assert_eq!(std::fs::read(&gen_yaml).unwrap(), before, "nothing written");
}

/// `kiln validate`'s summary (issue 36): each half counts what it checked, in text and in
/// JSON; the Kargo and Argo CD objects checked against kiln's model are counted as checked,
/// not as "metadata only", and a Deployment is the Kubernetes half's.
#[test]
fn validate_counts_what_each_check_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("all.yaml");
    std::fs::write(
        &file,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: n}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c, image: x}]\n---\napiVersion: kargo.akuity.io/v1alpha1\nkind: Warehouse\nmetadata: {name: w, namespace: n}\nspec:\n  subscriptions:\n  - image: {repoURL: nginx}\n---\napiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\nspec:\n  project: default\n  source: {repoURL: 'https://x', path: p, targetRevision: HEAD}\n  destination: {server: 'https://kubernetes.default.svc', namespace: n}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: n}\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let out = crate::support::run(crate::support::kiln_bin().args(["validate", path]));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        out.stderr.lines().last(),
        Some(
            "kiln: Kargo and Argo CD: no problems in 2 objects checked against their Kargo and Argo CD schemas; Kubernetes: no problems in 1 object checked against the Kubernetes 1.36 API schemas (1 of kinds with no schema)"
        ),
        "{}",
        out.stderr
    );
    let out = crate::support::run(crate::support::kiln_bin().args([
        "validate",
        path,
        "-o",
        "json",
        "--kube-version",
        "1.33",
    ]));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (
            &report["clean"],
            &report["objects"],
            &report["metaOnly"],
            &report["kubernetes"]["objects"],
            &report["kubernetes"]["noSchema"],
            &report["kubernetes"]["version"],
        ),
        (
            &true.into(),
            &2.into(),
            &0.into(),
            &1.into(),
            &1.into(),
            &"1.33".into()
        ),
        "{report:#}"
    );
    assert!(
        report["summary"].as_str().unwrap().ends_with(
            "1 object checked against the Kubernetes 1.33 API schemas (1 of kinds with no schema)"
        ),
        "{report:#}"
    );
}

/// `kiln validate` of `text` (one file), as (exit code, stderr, stdout).
fn validate_text(text: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.yaml");
    std::fs::write(&file, text).unwrap();
    let out = crate::support::run(
        crate::support::kiln_bin()
            .arg("validate")
            .arg(&file)
            .args(args)
            .env("NO_COLOR", "1"),
    );
    (out.code, out.stderr, out.stdout)
}

/// Item 4 (ConfigMap `data`, annotations): an integer parameter placed whole in a
/// ConfigMap's `data` renders `port: 8080`, a number the API server refuses; the rendered
/// bytes are validated as they are applied, not with the text kept as kiln reads its input.
#[test]
fn render_refuses_an_integer_parameter_in_configmap_data() {
    let f = Fixture::new();
    f.write(
        "repo/components/web/manifests/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n",
    );
    f.edit(
        COMPONENT,
        "  - jsonPatch:",
        "  - mergePatch:\n      target: {kind: ConfigMap}\n      patch: {data: {port: \"${params.replicas}\"}}\n  - jsonPatch:",
    );
    refused(
        &f,
        &[],
        &[
            "kiln::k8s::wrong_type",
            "ConfigMap/web-dev/cm at `/data/port`",
            "must be a string, not integer `2`",
            "it is parameter `replicas`",
        ],
    );
    // Inside a longer string it is a string, and the render passes.
    f.edit(
        COMPONENT,
        "\"${params.replicas}\"}}",
        "\"p${params.replicas}\"}}",
    );
    renders(&f, &[]);
}

/// Item 4, in `kiln validate`: unquoted numbers and booleans in ConfigMap `data`, Secret
/// `stringData` and annotations are what kubectl sends the server, which refuses them.
#[test]
fn validate_refuses_non_strings_in_string_maps() {
    let (code, err, _) = validate_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: n, annotations: {x: 1}}\ndata: {a: 1, b: true}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\nstringData: {a: 1}\n",
        &[],
    );
    assert_eq!(code, Some(1), "{err}");
    for at in [
        "ConfigMap/n/cm at `/metadata/annotations/x`",
        "ConfigMap/n/cm at `/data/a`",
        "ConfigMap/n/cm at `/data/b`",
        "Secret/n/s at `/stringData/a`",
    ] {
        assert!(err.contains(at), "no `{at}` in:\n{err}");
    }
    // The valid twin: the same values quoted.
    let (code, err, _) = validate_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: n, annotations: {x: '1'}}\ndata: {a: '1', b: 'true'}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\nstringData: {a: '1'}\n",
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
}

/// A Secret's value is never printed: an unquoted number in its `stringData` (or `data`) is
/// a `wrong_type` whose message, on stderr and in `-o json`, masks the value as the snippet
/// does (newcomer 5's repro 01).
#[test]
fn validate_never_prints_a_secret_value_in_a_message() {
    let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\ntype: Opaque\nstringData:\n  password: 987654321\ndata:\n  pin: 24680\n";
    let (code, err, _) = validate_text(text, &[]);
    assert_eq!(code, Some(1), "{err}");
    let (code, _, json) = validate_text(text, &["-o", "json"]);
    assert_eq!(code, Some(1), "{json}");
    for out in [&err, &json] {
        assert!(out.contains("kiln::k8s::wrong_type"), "{out}");
        assert!(out.contains("not integer `*********`"), "{out}");
        for value in ["987654321", "24680"] {
            assert!(
                !out.contains(value),
                "the Secret's value {value} printed:\n{out}"
            );
        }
    }
}

/// Item 3, first conflict: an identical cluster-scoped object emitted by two Applications of
/// one environment is owned by both (Argo CD's SharedResourceWarning), whatever the content;
/// the same object in two environments of one cluster is the one object applied twice.
#[test]
fn render_refuses_an_identical_cluster_scoped_object_of_two_applications() {
    let f = Fixture::new();
    for c in ["ra", "rb"] {
        f.write(
            &format!("repo/components/{c}/component.yaml"),
            &format!("apiVersion: kiln/v1alpha1\nkind: Component\nmetadata: {{name: {c}}}\nspec:\n  generators:\n  - files: [manifests]\n"),
        );
        f.write(
            &format!("repo/components/{c}/manifests/role.yaml"),
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: shared-reader}\nrules: [{apiGroups: [''], resources: [pods], verbs: [get]}]\n",
        );
    }
    f.edit(
        PLATFORM,
        "    - path: ../../components/web\n",
        "    - path: ../../components/web\n    - path: ../../components/ra\n    - path: ../../components/rb\n",
    );
    refused(
        &f,
        &[],
        &[
            "kiln::k8s::shared_resource",
            "ClusterRole `shared-reader` of cluster `c` is owned by Applications `web-ra-dev` and `web-rb-dev`",
        ],
    );
    // One Application per cluster-scoped object: `ra` in both environments is clean.
    f.edit(PLATFORM, "    - path: ../../components/rb\n", "");
    renders(&f, &[]);
}

/// A Widget CRD whose `spec` carries `rules` (YAML flow items), and one Widget with `spec`.
fn widget(rules: &[&str], spec: &str) -> String {
    let rules: String = rules
        .iter()
        .map(|r| format!("            - {r}\n"))
        .collect();
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: widgets.example.com}}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {{kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            x-kubernetes-validations:\n{rules}            properties:\n              mem: {{type: string}}\n              u: {{type: string}}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w, namespace: n}}\nspec: {spec}\n"
    )
}

/// Issue 36 item 2 (newcomer repro 02): rules calling Kubernetes' CEL libraries
/// (`quantity()`, `url()`) are evaluated as the API server evaluates them, and a Widget it
/// refuses is refused here, with the rules' messages; the Widget it accepts passes.
#[test]
fn validate_evaluates_kubernetes_cel_library_rules() {
    let rules = [
        "{rule: \"quantity(self.mem).isLessThan(quantity('2Gi'))\", message: \"mem lt 2Gi\"}",
        "{rule: \"url(self.u).getHost() == 'example.com'\", message: \"host\"}",
    ];
    let bad = widget(&rules, "{mem: 3Gi, u: 'https://evil.com/x'}");
    let (code, err, _) = validate_text(&bad, &[]);
    assert_eq!(code, Some(1), "{err}");
    for needle in ["mem lt 2Gi", "host", "kiln::k8s::cel_rule"] {
        assert!(err.contains(needle), "no `{needle}` in:\n{err}");
    }
    assert!(!err.contains("not evaluated"), "{err}");
    let (_, _, out) = validate_text(&bad, &["-o", "json"]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let messages: Vec<&str> = report["kubernetes"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert_eq!(messages, ["mem lt 2Gi", "host"], "{report:#}");
    assert_eq!(report["kubernetes"]["celRulesNotEvaluated"], 0);
    // What the server accepts passes: 1.5Gi is less than 2Gi, the host is the one asked for.
    let good = widget(&rules, "{mem: 1.5Gi, u: 'https://example.com/x'}");
    let (code, err, _) = validate_text(&good, &[]);
    assert_eq!(code, Some(0), "{err}");
    // A run-time error is a finding, worded as the server's.
    let bogus = widget(&rules, "{mem: bogus, u: 'https://example.com/x'}");
    let (code, err, _) = validate_text(&bogus, &[]);
    assert_eq!(code, Some(1), "{err}");
    let squashed: String = err
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '|')
        .collect();
    assert!(
        err.contains("kiln::k8s::cel_error")
            && squashed.contains("quantitiesmustmatchtheregularexpression"),
        "{err}"
    );
}

/// ADR 0021/0048: a rule kiln cannot evaluate (a transition rule; a timestamp, outside
/// kiln's CEL environment) is counted in `kiln validate`'s summary and JSON, never passed
/// silently.
#[test]
fn validate_counts_cel_rules_not_evaluated() {
    let text = widget(
        &[
            "{rule: \"self == oldSelf\"}",
            "{rule: \"timestamp(self.u) > timestamp('2020-01-01T00:00:00Z')\"}",
            "{rule: \"self.mem != ''\"}",
        ],
        "{mem: 3Gi, u: '2021-01-01T00:00:00Z'}",
    );
    let (code, err, _) = validate_text(&text, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.lines()
            .last()
            .unwrap()
            .ends_with("; 2 CEL rules not evaluated"),
        "{err}"
    );
    let (_, _, out) = validate_text(&text, &["-o", "json"]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        report["kubernetes"]["celRulesNotEvaluated"], 2,
        "{report:#}"
    );
}

/// ADR 0048: `kiln render` says how many CEL rules it did not evaluate, as `kiln validate`
/// does, and refuses a custom resource a Kubernetes-library rule refuses.
#[test]
fn render_counts_cel_rules_not_evaluated_and_evaluates_the_libraries() {
    let f = Fixture::new();
    let crd = widget(
        &[
            "{rule: \"self == oldSelf\"}",
            "{rule: \"quantity(self.mem).isLessThan(quantity('2Gi'))\", message: \"mem lt 2Gi\"}",
        ],
        "{}",
    );
    let crd = &crd[..crd.find("---").unwrap()];
    f.write("repo/platforms/p/crds/widget.yaml", crd);
    f.edit(
        PLATFORM,
        "  clusters:\n",
        "  validation:\n    crds: [crds/widget.yaml]\n  clusters:\n",
    );
    f.write(
        "repo/components/web/manifests/widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  mem: 1Gi\n",
    );
    let out = renders(&f, &[]);
    assert!(
        // One transition rule, on the Widget of each environment.
        out.lines()
            .any(|l| l.starts_with("warning: not evaluated: 2 CEL rules (transition rules")),
        "{out}"
    );
    std::fs::remove_dir_all(f.path("repo/deploy")).unwrap();
    f.edit("repo/components/web/manifests/widget.yaml", "1Gi", "3Gi");
    refused(&f, &[], &["kiln::k8s::cel_rule", "mem lt 2Gi"]);
}

/// An incremental render prints the kinds with no schema of every plan, as the full render
/// does: the re-rendered plans' counted again, the others' as recorded, and a custom
/// resource whose CRD another component renders (not re-rendered) is not counted.
#[test]
fn an_incremental_render_counts_the_kinds_with_no_schema_of_every_plan() {
    let f = Fixture::new();
    f.write(
        "repo/components/web/manifests/crs.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 1}\n",
    );
    add_component(
        &f,
        "crd",
        "crd.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size: {type: integer}\n",
    );
    let line = "warning: not validated: 1 kinds with no schema: example.com/v1 Widget (2)";
    let full = renders(&f, &[]);
    assert!(full.contains(line), "{full}");
    // Only web renders again.
    f.edit(
        COMPONENT,
        "default: web.example.com",
        "default: www.example.com",
    );
    let web = renders(&f, &[]);
    assert!(web.contains(line), "web re-rendered: {web}");
    assert!(!web.contains("Gadget"), "Gadget's CRD is crd's: {web}");
    // Only crd renders again: web's count is the recorded one.
    f.edit(
        "repo/components/crd/manifests/crd.yaml",
        "size: {type: integer}",
        "size: {type: integer, description: how many}",
    );
    let crd = renders(&f, &[]);
    assert!(crd.contains(line), "crd re-rendered: {crd}");
    assert!(!crd.contains("Gadget"), "{crd}");
}

/// An incremental render prints the count of CEL rules not evaluated, as the full render does:
/// the re-rendered plans' counted again, the others' as recorded.
#[test]
fn an_incremental_render_counts_the_cel_rules_not_evaluated() {
    let f = Fixture::new();
    f.write(
        "repo/components/web/manifests/things.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: things.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Thing, plural: things, singular: thing, listKind: ThingList}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            x-kubernetes-validations:\n            - {rule: \"self.size >= oldSelf.size\", message: never shrinks}\n            properties:\n              size: {type: integer}\n---\napiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {size: 1}\n",
    );
    add_component(
        &f,
        "other",
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {a: \"1\"}\n",
    );
    let line = "warning: not evaluated: 2 CEL rules";
    let full = renders(&f, &[]);
    assert!(full.contains(line), "{full}");
    // Only other renders again: web's count is the recorded one.
    f.edit(
        "repo/components/other/manifests/cm.yaml",
        "a: \"1\"",
        "a: \"2\"",
    );
    let other = renders(&f, &[]);
    assert!(other.contains(line), "other re-rendered: {other}");
    // Only web renders again: counted again.
    f.edit(
        COMPONENT,
        "default: web.example.com",
        "default: www.example.com",
    );
    let web = renders(&f, &[]);
    assert!(web.contains(line), "web re-rendered: {web}");
}

/// Adds component `name`, whose `manifests/` holds `file` with `text`, before web.
fn add_component(f: &Fixture, name: &str, file: &str, text: &str) {
    f.write(
        &format!("repo/components/{name}/component.yaml"),
        &format!("apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: {name}\nspec:\n  generators:\n  - files: [manifests]\n"),
    );
    f.write(&format!("repo/components/{name}/manifests/{file}"), text);
    f.edit(
        "repo/platforms/p/platform.yaml",
        "    - path: ../../components/web\n",
        &format!("    - path: ../../components/{name}\n    - path: ../../components/web\n"),
    );
}
