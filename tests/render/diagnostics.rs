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
