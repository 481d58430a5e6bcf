//! Values checked against each chart's values.schema.json, after Helm v4.2.3
//! `pkg/chart/common/util/jsonschema.go` (`ValidateAgainstSchema`): the chart's own schema on
//! all its values, then each subchart's on its section, depth first; every failure in one
//! report. The schemas were parsed ahead where the loader could ([`Schema`]); values the
//! [`proof`] vouches for need no compile, the others are judged by jsonschema.

pub mod proof;

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
        let compiled = schema.json().and_then(|json| {
            if proof::proves_valid(&json, &instance) {
                Ok(None)
            } else {
                Schema::compile(&json).map(Some)
            }
        });
        match compiled {
            Ok(None) => {}
            Ok(Some(v)) => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// Each shared chart with a values schema, on its default values: every schema job is
    /// proven valid without a compile (so `helm template` of these charts compiles none),
    /// and jsonschema agrees.
    #[test]
    fn shared_charts_default_values_are_proven_without_a_compile() {
        let Some(root) = crate::testutil::shared("charts") else {
            return;
        };
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
            .expect("charts")
            .filter_map(|e| e.ok().map(|e| e.path().join("chart")))
            .filter(|d| d.join("Chart.yaml").is_file())
            .collect();
        dirs.sort();
        let fs = kiln_base::fs::RealFs;
        let (mut jobs_seen, mut unproven) = (0, Vec::new());
        for dir in &dirs {
            let Ok(mut chart) =
                crate::chart::loader::load_with(&fs, Path::new(dir), crate::engine::resolve)
            else {
                continue;
            };
            let user = crate::template::value::new_map();
            crate::chartutil::dependencies::process_dependencies(&mut chart, &user);
            let vals = crate::chartutil::coalesce::coalesce_values(&chart, &user);
            let mut jobs = Vec::new();
            schema_jobs(&chart, &vals, &mut jobs);
            for (name, schema, instance) in jobs {
                jobs_seen += 1;
                let json = schema.json().expect("JSON");
                let proven = proof::proves_valid(&json, &instance);
                let valid = Schema::compile(&json).is_ok_and(|v| v.is_valid(&instance));
                assert!(
                    !proven || valid,
                    "{}: {name} proven but invalid",
                    dir.display()
                );
                if valid && !proven {
                    unproven.push(format!("{} ({name})", dir.display()));
                }
            }
        }
        assert!(jobs_seen >= 10, "{jobs_seen} schema jobs");
        assert!(unproven.is_empty(), "not proven: {unproven:#?}");
    }
}
