//! The errors a new user met (issue 38, item 10): each is reported once, where it is, with
//! what was meant. Every test checks exit code 1, file and line, and that nothing was
//! written (`cli_errors::assert_fails`).

use super::cli_errors::{Fixture, assert_fails, line_of};

/// Diagnostics (lines starting with a code) in stderr.
fn count(stderr: &str, code: &str) -> usize {
    stderr.lines().filter(|l| l.contains(code)).count()
}

#[test]
fn an_unknown_field_in_another_case_is_one_error_with_a_did_you_mean() {
    let f = Fixture::new();
    let c = "repo/components/web/component.yaml";
    f.edit(c, "  - jsonPatch:", "  - jsonpatch:");
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[("components/web/component.yaml", line_of(&f, c, "jsonpatch"))],
    );
    assert_eq!(
        count(&stderr, "kiln::load::schema_violation"),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("unknown field `jsonpatch` in")
            && stderr.contains("`spec.transformers[1]`")
            && stderr.contains("did you mean `jsonPatch`?")
            && !stderr.contains("needs exactly one of"),
        "{stderr}"
    );
}

/// The fixture with a third environment, `test`, between `dev` and `prod`.
fn three_environments() -> Fixture {
    let f = Fixture::new();
    f.edit(
        "repo/platforms/p/platform.yaml",
        "  - name: prod\n    tier: prod\n    cluster: c\n    from: [dev]\n",
        "  - name: test\n    tier: nonprod\n    cluster: c\n    from: [dev]\n  - name: prod\n    tier: prod\n    cluster: c\n    from: [test]\n",
    );
    f
}

/// Adds component `name` (its `component.yaml` is `spec`, under `metadata.name`) to project
/// `web`, with `files` beside it.
fn add_component(f: &Fixture, name: &str, spec: &str, files: &[(&str, &str)]) {
    f.edit(
        "repo/platforms/p/platform.yaml",
        "    components:\n",
        &format!("    components:\n    - path: ../../components/{name}\n"),
    );
    f.write(
        &format!("repo/components/{name}/component.yaml"),
        &format!(
            "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: {name}\nspec:\n{spec}"
        ),
    );
    for (rel, text) in files {
        f.write(&format!("repo/components/{name}/{rel}"), text);
    }
}

#[test]
fn one_cause_in_three_environments_is_one_error_naming_them_in_spec_order() {
    let f = three_environments();
    let c = "repo/components/web/component.yaml";
    f.edit(
        c,
        "target: {kind: Deployment, name: web}",
        "target: {kind: Deployment, name: wbe}",
    );
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[("components/web/component.yaml", line_of(&f, c, "name: wbe"))],
    );
    assert_eq!(
        count(&stderr, "kiln::render::patch_target_missing"),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("in environments: dev, test, prod"),
        "{stderr}"
    );
}

#[test]
fn a_kustomize_error_in_a_base_two_levels_down_names_it_from_the_repository_root() {
    let f = three_environments();
    add_component(
        &f,
        "cart",
        "  generators:\n  - kustomize: overlays/dev\n",
        &[
            (
                "overlays/dev/kustomization.yaml",
                "resources:\n- ../../base\n",
            ),
            ("base/kustomization.yaml", "resources:\n- deep\n"),
            (
                "base/deep/kustomization.yaml",
                "resources:\n- cm.yaml\npatches:\n- path: missing.yaml\n",
            ),
            (
                "base/deep/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cart\n",
            ),
        ],
    );
    let out = f.render(&[]);
    let base = "repo/components/cart/base/deep/kustomization.yaml";
    let stderr = assert_fails(
        &f,
        &out,
        &[
            ("components/cart/component.yaml", 7),
            (
                "components/cart/base/deep/kustomization.yaml",
                line_of(&f, base, "missing.yaml"),
            ),
        ],
    );
    assert!(
        stderr.contains("[components/cart/base/deep/kustomization.yaml:4:9]")
            && !stderr.contains("../../base"),
        "{stderr}"
    );
    assert_eq!(
        count(&stderr, "kiln::render::generator_failed"),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("in environments: dev, test, prod"),
        "{stderr}"
    );
}

#[test]
fn a_chart_failing_in_two_environments_names_both() {
    let f = three_environments();
    add_component(
        &f,
        "shop",
        "  generators:\n  - helm:\n      chart: chart\n      values: {tier: \"${env.tier}\"}\n",
        &[
            (
                "chart/Chart.yaml",
                "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
            ),
            (
                "chart/templates/cm.yaml",
                "{{- if eq .Values.tier \"nonprod\" }}{{ required \"size is required\" .Values.size }}{{ end }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\n",
            ),
        ],
    );
    let out = f.render(&[]);
    let stderr = assert_fails(&f, &out, &[("components/shop/component.yaml", 7)]);
    assert_eq!(
        count(&stderr, "kiln::render::generator_failed"),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("size is required") && stderr.contains("in environments: dev, test\n"),
        "{stderr}"
    );
}

#[test]
fn an_invalid_parameter_in_three_environments_is_one_error_naming_them() {
    let f = three_environments();
    let p = "repo/platforms/p/platform.yaml";
    f.edit(p, "        replicas: 2\n", "        replicas: 0\n");
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[("platforms/p/platform.yaml", line_of(&f, p, "replicas: 0"))],
    );
    assert_eq!(
        count(&stderr, "kiln::evaluate::parameter_invalid"),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("in environments: dev, test, prod"),
        "{stderr}"
    );
    // One environment is one place: no list.
    let f = three_environments();
    f.edit(p, "        replicas: 2\n", "        replicas: 2\n      environments:\n        test:\n          parameters:\n            replicas: 0\n");
    let stderr = String::from_utf8_lossy(&f.render(&[]).stderr).to_string();
    assert!(
        stderr.contains("kiln::evaluate::parameter_invalid") && !stderr.contains("in environments"),
        "{stderr}"
    );
}
