//! The generator phase of one kustomization: `configMapGenerator` then `secretGenerator`
//! (kustomize's builtin generator order), each entry merged with `generatorOptions` and its
//! output absorbed into the accumulator with its `behavior` (`create`, `merge`, `replace`),
//! as kustomize's `ResMap.AbsorbAll` does.
//!
//! Where it sits: step 3 of `build::accumulate_target`, after resources, before components.

use super::build::Accumulator;
use super::error::KustomizeError;
use super::load::{KustFile, Loader};

/// Runs the generators of `kf`, absorbing their output into `acc`.
pub fn run_generators(_ldr: &Loader<'_>, kf: &KustFile, _acc: &mut Accumulator) -> Result<(), KustomizeError> {
    let k = &kf.kustomization;
    for (field, present) in [("configMapGenerator", !k.config_map_generator.is_empty()), ("secretGenerator", !k.secret_generator.is_empty())] {
        if present {
            return Err(KustomizeError::unsupported(
                kf.key_site(&format!("/{field}")),
                field,
                "generators are not available in this build of kiln yet",
                "remove the field or build with kubectl kustomize for now",
            ));
        }
    }
    Ok(())
}
