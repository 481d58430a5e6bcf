//! Kubernetes validation (issue 36, `kiln-k8s`) on real output: every object kubectl
//! kustomize rendered for the corpus and real Helm rendered for the charts validates clean,
//! but for the findings listed in [`KNOWN`], each a real invalidity.

use crate::support::{shared_dir, shared_required};
use kiln::yaml::parse_stream;
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

/// Every finding of every stream under the reference outputs, as `file pointer: message`.
fn findings_of(files: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let Ok(docs) = parse_stream(&file.display().to_string(), &text) else {
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
