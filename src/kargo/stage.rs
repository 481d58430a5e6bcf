//! The Stage of one promotion unit in one environment: Freight requested from the unit's
//! Warehouse — `direct: true` for a root environment, `stages: [...]` (the unit's Stages of
//! the upstream environments) otherwise — and the promotion template of [`super::steps`].
//! The unit is a component, or the whole project in project mode (then the Stage moves every
//! component of the project at once).

use super::{KARGO_API, Pair, SYNC_WAVE, naming, object, pair_labels, steps, wave};
use crate::resource::Resource;
use serde_json::json;

/// Builds the Stage of unit `unit` for `pairs` (one environment; one pair per component of
/// the unit, at least one).
pub(super) fn stage(input: &super::Input<'_>, unit: &str, pairs: &[&Pair<'_>]) -> Resource {
    let first = pairs[0];
    let sources = if first.env.from.is_empty() {
        json!({ "direct": true })
    } else {
        let upstream: Vec<String> = first
            .env
            .from
            .iter()
            .map(|up| naming::stage_name(unit, up))
            .collect();
        json!({ "stages": upstream })
    };
    let template = steps::promotion_template(input, pairs);
    let mut labels = pair_labels(first);
    if pairs.len() > 1 || first.project.promotion == crate::spec::PromotionUnit::Project {
        // A project Stage belongs to no single component.
        if let Some(m) = labels.as_object_mut() {
            m.remove("kiln.dev/component");
        }
    }
    object(
        KARGO_API,
        "Stage",
        json!({
            "name": first.stage,
            "namespace": first.project.name,
            "labels": labels,
            "annotations": { SYNC_WAVE: wave::STAGE },
        }),
        Some(json!({
            "requestedFreight": [{
                "origin": { "kind": "Warehouse", "name": naming::warehouse_name(unit) },
                "sources": sources,
            }],
            "promotionTemplate": { "spec": template },
        })),
    )
}
