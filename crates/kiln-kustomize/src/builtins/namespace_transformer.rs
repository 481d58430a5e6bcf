//! `NamespaceTransformer` (kustomize `api/builtins/NamespaceTransformer.go`): the namespace
//! comes from the config's `metadata.namespace`.

use crate::filters::namespace::{
    self, NamespaceError, NamespaceOptions, RoleBindingSubjects, Scope,
};
use crate::types::fieldspec::FieldSpec;
use crate::types::kustomization::nullable_fields;
use kiln_base::resource::Resource;
use serde::Deserialize;

nullable_fields! {
    /// The config.
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct NamespaceTransformer {
        /// From `metadata.namespace` (set by `Builtin::from_config`).
        #[serde(skip)]
        pub namespace: String,
        #[serde(default)]
        pub unset_only: bool,
        /// `defaultOnly` (default), `allServiceAccounts`, `none`.
        #[nullable]
        pub set_role_binding_subjects: String,
        #[nullable]
        pub field_specs: Vec<FieldSpec>,
    }
}

impl NamespaceTransformer {
    /// Sets the namespace; `scope` is the build's cluster-scope table.
    pub fn apply(&self, res: &mut [Resource], scope: Scope) -> Result<(), NamespaceError> {
        let subjects = match self.set_role_binding_subjects.as_str() {
            "allServiceAccounts" => RoleBindingSubjects::AllServiceAccounts,
            "none" => RoleBindingSubjects::None,
            _ => RoleBindingSubjects::DefaultOnly,
        };
        let opts = NamespaceOptions {
            namespace: self.namespace.clone(),
            unset_only: self.unset_only,
            role_binding_subjects: subjects,
            scope,
            field_specs: self.field_specs.clone(),
        };
        namespace::apply_namespace_with(res, &opts)
    }
}
