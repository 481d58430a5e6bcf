//! Scalars written unquoted in a component's files reach the rendered tree as what the API
//! server takes: a ConfigMap's `data` and an object's annotations keep the text written, as
//! strings (issue 11: QA saw `8` and `null` in the tree, with no diagnostic).

use super::cli_errors::Fixture;

const CONFIGMAP: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  annotations:
    build/sha: 1234e56
    mode: 0755
data: {a: 010, b: 0x1F, c: , d: true}
";

fn rendered_configmap(f: &Fixture) -> String {
    let out = f.render(&[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(f.path("repo/deploy/web/dev/web/web.gen.yaml")).unwrap();
    text.split("\n---\n")
        .find(|d| d.contains("kind: ConfigMap"))
        .unwrap_or_else(|| panic!("no ConfigMap in\n{text}"))
        .to_string()
}

fn assert_kept_as_written(doc: &str) {
    for line in [
        "  a: \"010\"\n",
        "  b: \"0x1F\"\n",
        "  c: \"\"\n",
        "  d: \"true\"\n",
        "    build/sha: \"1234e56\"\n",
        "    mode: \"0755\"\n",
    ] {
        assert!(doc.contains(line), "`{}` not in\n{doc}", line.trim_end());
    }
}

#[test]
fn configmap_data_and_annotations_from_component_files_keep_their_text() {
    let f = Fixture::new();
    f.write("repo/components/web/manifests/settings.yaml", CONFIGMAP);
    assert_kept_as_written(&rendered_configmap(&f));
}

#[test]
fn configmap_data_through_a_kustomize_generator_keeps_its_text() {
    let f = Fixture::new();
    f.edit(
        "repo/components/web/component.yaml",
        "  - files: [manifests]\n",
        "  - files: [manifests]\n  - kustomize: base\n",
    );
    f.write(
        "repo/components/web/base/kustomization.yaml",
        "resources:\n- settings.yaml\n",
    );
    f.write("repo/components/web/base/settings.yaml", CONFIGMAP);
    assert_kept_as_written(&rendered_configmap(&f));
}
