//! The Stage of one (component, environment): Freight requested from the component's
//! Warehouse — `direct: true` for a root environment, `stages: [...]` (the same component's
//! Stages of the upstream environments) otherwise — and the promotion template of
//! [`super::steps`].

use super::{KARGO_API, Pair, SYNC_WAVE, naming, object, pair_labels, steps, wave};
use crate::resource::Resource;
use serde_json::json;

/// Builds the Stage of `p`.
pub(super) fn stage(input: &super::KargoInput, p: &Pair<'_>) -> Resource {
    let sources = if p.env.from.is_empty() {
        json!({ "direct": true })
    } else {
        let upstream: Vec<String> = p
            .env
            .from
            .iter()
            .map(|up| naming::stage_name(&p.component.name, up))
            .collect();
        json!({ "stages": upstream })
    };
    let template = steps::promotion_template(input, p);
    object(
        KARGO_API,
        "Stage",
        json!({
            "name": p.stage,
            "namespace": p.project.name,
            "labels": pair_labels(p),
            "annotations": { SYNC_WAVE: wave::STAGE },
        }),
        Some(json!({
            "requestedFreight": [{
                "origin": { "kind": "Warehouse", "name": naming::warehouse_name(&p.component.name) },
                "sources": sources,
            }],
            "promotionTemplate": { "spec": template },
        })),
    )
}
