//! The generator phase of one kustomization: `configMapGenerator`, `secretGenerator`, then
//! `helmCharts` (kustomize's builtin generator order, `builtins::helm_chart_inflation_generator`), each entry merged with `generatorOptions` and its
//! output absorbed into the accumulator with its `behavior` (`create`, `merge`, `replace`),
//! as kustomize's `ResMap.AbsorbAll` does.
//!
//! Where it sits: step 3 of `build::accumulate_target`, after resources, before components.
//! Files and env files named by an entry are read through the loader, so the load
//! restrictions hold for them too; errors name the entry's line.

use crate::builtins::generators;
use crate::error::KustomizeError;
use crate::krusty::build::Accumulator;
use crate::krusty::load::{KustFile, LoadIssue, Loader};

fn issue_text(issue: &LoadIssue) -> String {
    match issue {
        LoadIssue::Missing => "no such file".into(),
        LoadIssue::OutsideRoot => "outside the kustomization root".into(),
        LoadIssue::SymlinkEscapes { target } => format!(
            "a symlink to `{}`, outside the kustomization root",
            target.display()
        ),
        LoadIssue::Cycle { .. } => "a directory cycle".into(),
        LoadIssue::Io(e) => e.to_string(),
    }
}

/// Runs the generators of `kf`, absorbing their output into `acc`.
pub fn run_generators(
    ldr: &Loader<'_>,
    kf: &KustFile,
    acc: &mut Accumulator,
) -> Result<(), KustomizeError> {
    let k = &kf.kustomization;
    let global = k.generator_options.as_ref();
    let read = |path: &str| -> Result<Vec<u8>, String> {
        let file = ldr.resolve_file(path).map_err(|i| issue_text(&i))?;
        ldr.fs().read(&file).map_err(|e| e.to_string())
    };
    for (i, g) in k.config_map_generator.iter().enumerate() {
        // Located only on error (see `build::Accumulator::append_indexed`).
        let site = || kf.site(&format!("/configMapGenerator/{i}"));
        let mut res = generators::generate_config_map(g, global, &read)
            .map_err(|e| KustomizeError::transformer(site(), &e))?;
        res.meta.generated_in = Some((kf.display.clone(), "ConfigMapGenerator"));
        crate::krusty::build::annotate_origin(ldr.session(), &mut res);
        generators::absorb_one(&mut acc.resources, res)
            .map_err(|e| KustomizeError::transformer(site(), &e))?;
    }
    for (i, g) in k.secret_generator.iter().enumerate() {
        // Located only on error (see `build::Accumulator::append_indexed`).
        let site = || kf.site(&format!("/secretGenerator/{i}"));
        let mut res = generators::generate_secret(g, global, &read)
            .map_err(|e| KustomizeError::transformer(site(), &e))?;
        res.meta.generated_in = Some((kf.display.clone(), "SecretGenerator"));
        crate::krusty::build::annotate_origin(ldr.session(), &mut res);
        generators::absorb_one(&mut acc.resources, res)
            .map_err(|e| KustomizeError::transformer(site(), &e))?;
    }
    crate::builtins::helm_chart_inflation_generator::run_helm_charts(ldr, kf, acc)
}
