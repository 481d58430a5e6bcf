//! Values checked against each chart's values.schema.json, after Helm v4.2.3
//! `pkg/chart/common/util/jsonschema.go` (`ValidateAgainstSchema`): the chart's own schema on
//! all its values, then each subchart's on its section, depth first; every failure in one
//! report. The schemas were compiled ahead where the loader could ([`Schema`]).

use crate::chart::{Chart, Schema};
use crate::template::value::{Map, Value};
use std::sync::Arc;

/// `ValidateAgainstSchema`'s work list: (chart name, its schema, the values it judges),
/// the chart's own first, then each subchart's on its section, depth first.
pub type SchemaJob = (String, Arc<Schema>, serde_json::Value);

pub fn schema_jobs(c: &Chart, vals: &Map, out: &mut Vec<SchemaJob>) {
    if let Some(schema) = &c.schema {
        out.push((
            c.name.clone(),
            schema.clone(),
            Value::Map(vals.clone()).to_json(),
        ));
    }
    for sub in &c.subcharts {
        if let Some(Value::Map(sv)) = vals.borrow().get(&sub.name) {
            schema_jobs(sub, sv, out);
        }
    }
}

/// Checks the values against every schema; all failures in one report, as Helm gives it
/// (the message of its error).
pub fn check_schemas(jobs: Vec<SchemaJob>) -> Result<(), String> {
    let mut report = String::new();
    for (name, schema, instance) in jobs {
        match schema.validator() {
            Ok(v) => {
                let errors: Vec<String> = v
                    .iter_errors(&instance)
                    .map(|e| format!("- at '{}': {}", e.instance_path(), e))
                    .collect();
                if !errors.is_empty() {
                    report.push_str(&format!("{name}:\n{}\n", errors.join("\n")));
                }
            }
            Err(e) => report.push_str(&format!("{name}:\n- invalid values.schema.json: {e}\n")),
        }
    }
    if report.is_empty() {
        return Ok(());
    }
    Err(format!(
        "values don't meet the specifications of the schema(s) in the following chart(s):\n{}",
        report.trim_end()
    ))
}
