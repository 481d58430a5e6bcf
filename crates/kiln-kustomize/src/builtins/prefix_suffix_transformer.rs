//! `PrefixSuffixTransformer`, `PrefixTransformer`, `SuffixTransformer` (kustomize
//! `api/builtins/PrefixSuffixTransformer.go`, `PrefixTransformer.go`, `SuffixTransformer.go`).

use crate::filters::prefix_suffix;
use crate::types::fieldspec::FieldSpec;
use crate::types::kustomization::nullable_fields;
use kiln_base::resource::Resource;
use serde::Deserialize;
use serde_json::Value;

nullable_fields! {
    /// The config: the affixes and the fields that get them.
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct PrefixSuffixTransformer {
        #[nullable]
        pub prefix: String,
        #[nullable]
        pub suffix: String,
        #[nullable]
        pub field_specs: Vec<FieldSpec>,
    }
}

impl PrefixSuffixTransformer {
    /// Applies the affixes at the config's field specs.
    pub fn apply(&self, res: &mut [Resource]) {
        affix_fields(res, &self.prefix, &self.suffix, &self.field_specs);
    }
}

/// Affixes at explicit field specs: `metadata/name` renames (with history) the objects a spec
/// selects; any other path gets the affixes on its string.
pub fn affix_fields(res: &mut [Resource], prefix: &str, suffix: &str, specs: &[FieldSpec]) {
    for spec in specs {
        for r in res.iter_mut().filter(|r| spec.applies_to(r)) {
            if spec.path == "metadata/name" {
                if prefix_suffix::is_rename_exempt(r) {
                    continue;
                }
                prefix_suffix::apply_name_prefix(std::slice::from_mut(r), prefix);
                prefix_suffix::apply_name_suffix(std::slice::from_mut(r), suffix);
            } else {
                crate::filters::fieldspec::visit_path_mut(
                    &mut r.value,
                    &spec.path,
                    spec.create,
                    &mut |v| {
                        if let Value::String(s) = v {
                            *s = format!("{prefix}{s}{suffix}");
                        }
                    },
                );
            }
        }
    }
}
