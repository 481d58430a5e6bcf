//! One `replicas:` entry (kustomize `api/types/replica.go`): a workload name and the replica
//! count to set. Applying it is `filters::replica_count`.

use super::kustomization::{nullable, nullable_fields};
use serde::{Deserialize, Deserializer, Serialize};

/// One `replicas:` entry (kustomize `types.Replica`). Decoded strictly, both fields required,
/// as a `ReplicaCountTransformer` config is; a kustomization's `replicas:` list is read with
/// [`lenient`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replica {
    /// Name of the workload (current or original name).
    pub name: String,
    /// The replica count to set.
    pub count: i64,
}

/// Reads a kustomization's `replicas:` list as kustomize does: `name` and `count` optional
/// (empty and 0), an explicit `null` name read as empty; unknown fields are still rejected,
/// with the same message as [`Replica`]'s.
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Replica>, D::Error> {
    nullable_fields! {
        /// The decoding shape only: the fields of [`Replica`], each optional.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Written {
            #[nullable]
            name: String,
            #[serde(default)]
            count: i64,
        }
    }
    let written: Vec<Written> = nullable(d)?;
    Ok(written
        .into_iter()
        .map(|w| Replica {
            name: w.name,
            count: w.count,
        })
        .collect())
}
