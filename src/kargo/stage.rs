//! The Stage of one promotion unit in one environment: Freight requested from the unit's
//! Warehouse — `direct: true` for a root environment, `stages: [...]` (the unit's Stages of
//! the upstream environments) otherwise — and the promotion template of [`super::steps`].
//! The unit is a component, or the whole project in project mode (then the Stage moves every
//! component of the project at once), or the project's environment in `environment-stage`
//! mode (then the Stage requests one Freight per component, each from its own Warehouse).

use super::{KARGO_API, Pair, SYNC_WAVE, naming, object, pair_labels, steps, wave};
use crate::resource::Resource;
use serde_json::{Value, json};

/// The environments the unit's Stage in `pair.env` takes Freight from: each upstream
/// environment (`from`) the unit is deployed to, or, for one it skips (`deployTo`), that
/// one's nearest deployed ancestors in turn; in promotion order, without repeats. Empty:
/// the Stage takes Freight from the Warehouse directly. In project mode every component is
/// deployed to the same environments (`kiln::validate::project_deploy_mismatch`).
fn deployed_upstream<'p>(platform: &'p crate::validate::Platform, pair: &Pair<'_>) -> Vec<&'p str> {
    let mut out: Vec<&str> = Vec::new();
    let mut todo: Vec<&str> = pair.env.from.iter().rev().map(String::as_str).collect();
    let mut seen = std::collections::BTreeSet::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name) {
            continue;
        }
        let Some(env) = platform.environments.iter().find(|e| e.name == name) else {
            continue;
        };
        if pair.component.deployed_in(env) {
            if !out.contains(&env.name.as_str()) {
                out.push(&env.name);
            }
        } else {
            todo.extend(env.from.iter().rev().map(String::as_str));
        }
    }
    out
}

/// `requestedFreight[]` entry of the Freight from Warehouse `warehouse` for the unit `unit`'s
/// Stage of `pair`: `sources.direct` for a root environment, else the unit's Stages of the
/// environments upstream of the pair's component.
fn request(
    input: &super::Input<'_>,
    unit: &str,
    warehouse: &str,
    pair: &Pair<'_>,
) -> serde_json::Value {
    let upstream: Vec<String> = deployed_upstream(input.platform, pair)
        .iter()
        .map(|up| naming::stage_name(unit, up))
        .collect();
    let sources = if upstream.is_empty() {
        json!({ "direct": true })
    } else {
        json!({ "stages": upstream })
    };
    json!({
        "origin": { "kind": "Warehouse", "name": naming::warehouse_name(warehouse) },
        "sources": sources,
    })
}

/// Builds the Stage of unit `unit` for `pairs` (one environment; one pair per component of
/// the unit, at least one). In `environment-stage` mode it requests Freight from each
/// component's own Warehouse, each from the Stages upstream of that component; otherwise
/// from the unit's one Warehouse.
pub(super) fn stage(input: &super::Input<'_>, unit: &str, pairs: &[&Pair<'_>]) -> Resource {
    let first = pairs[0];
    let requested: Vec<Value> =
        if first.project.promotion == crate::spec::PromotionUnit::EnvironmentStage {
            pairs
                .iter()
                .map(|p| request(input, unit, &p.component.name, p))
                .collect()
        } else {
            vec![request(input, unit, unit, first)]
        };
    let template = steps::promotion_template(input, pairs);
    let mut labels = pair_labels(first);
    if pairs.len() > 1 || first.project.promotion.stage_per_environment() {
        // A project Stage belongs to no single component.
        if let Some(m) = labels.as_object_mut() {
            m.remove("kiln.dev/component");
        }
    }
    let mut metadata = json!({
        "name": first.stage,
        "namespace": first.project.name,
        "labels": null,
        "annotations": { SYNC_WAVE: wave::STAGE },
    });
    metadata["labels"] = labels;
    // Moved in, not given to `json!` (which serializes a copy of each value it is given: the
    // promotion template copied again was a fifth of the Kargo files' time).
    let mut spec = json!({
        "requestedFreight": null,
        "promotionTemplate": { "spec": null },
    });
    spec["requestedFreight"] = Value::Array(requested);
    spec["promotionTemplate"]["spec"] = template;
    object(KARGO_API, "Stage", metadata, Some(spec))
}
