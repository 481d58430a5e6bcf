//! Dependency processing, after Helm v4.2.3 `pkg/chart/v2/util/dependencies.go`
//! (`ProcessDependenciesWithMerge`): aliases, `tags`, `condition`, disabled subcharts
//! removed, then `import-values` (child `exports` or explicit child/parent paths) merged under
//! the parent's own values.

use super::coalesce::*;
use super::*;

/// `ProcessDependenciesWithMerge`: decides which subcharts are enabled and applies
/// `import-values`. Changes `c` (its subcharts and values), as Helm changes the chart.
pub fn process_dependencies(c: &mut Chart, user: &Map) {
    process_enabled(c, user, "");
    process_import_values(c);
}

pub(super) fn compatible(constraint: &str, version: &str) -> bool {
    match semver::Version::parse(version) {
        Ok(v) => semver::satisfies(constraint, &v).unwrap_or(false),
        Err(_) => false,
    }
}

pub(super) fn process_enabled(c: &mut Chart, v: &Map, path: &str) {
    if c.deps.is_empty() {
        return;
    }
    let existing = std::mem::take(&mut c.subcharts);
    let mut chosen: Vec<Chart> = existing
        .iter()
        .filter(|e| {
            !c.deps
                .iter()
                .any(|r| e.name == r.name && compatible(&r.version, &e.version))
        })
        .cloned()
        .collect();
    for r in &mut c.deps {
        if let Some(found) = existing
            .iter()
            .find(|e| e.name == r.name && compatible(&r.version, &e.version))
        {
            let mut copy = found.clone();
            if !r.alias.is_empty() {
                copy.name = r.alias.clone();
            }
            chosen.push(copy);
        }
        if !r.alias.is_empty() {
            r.name = r.alias.clone();
        }
    }
    c.subcharts = chosen;
    let cvals = coalesce_values(c, v);
    // Tags, then conditions (a condition that resolves overrides the tags).
    let tags = table(&cvals, "tags");
    let mut enabled: Vec<bool> = vec![true; c.deps.len()];
    for (i, r) in c.deps.iter().enumerate() {
        if let Some(tags) = &tags {
            let (mut has_true, mut has_false) = (false, false);
            for k in &r.tags {
                match tags.borrow().get(k) {
                    Some(Value::Bool(true)) => has_true = true,
                    Some(Value::Bool(false)) => has_false = true,
                    _ => {}
                }
            }
            if !has_true && has_false {
                enabled[i] = false;
            }
        }
        for cond in r.condition.trim().split(',') {
            if cond.is_empty() {
                continue;
            }
            if let Some(Value::Bool(b)) = path_value(&cvals, &format!("{path}{cond}")) {
                enabled[i] = b;
                break;
            }
        }
    }
    let removed: Vec<String> = c
        .deps
        .iter()
        .zip(&enabled)
        .filter(|(_, e)| !**e)
        .map(|(r, _)| r.name.clone())
        .collect();
    c.subcharts.retain(|s| !removed.contains(&s.name));
    let mut i = 0;
    c.deps.retain(|_| {
        i += 1;
        enabled[i - 1]
    });
    for sub in &mut c.subcharts {
        let sub_path = format!("{path}{}.", sub.name);
        process_enabled(sub, &cvals, &sub_path);
    }
}

pub(super) fn process_import_values(c: &mut Chart) {
    for sub in &mut c.subcharts {
        process_import_values(sub);
    }
    if c.deps.is_empty() {
        return;
    }
    let cvals = merge_values(c, &new_map());
    let b = new_map();
    for r in &c.deps {
        for iv in &r.import_values {
            match iv {
                Value::Map(m) => {
                    let g = |k: &str| {
                        m.borrow()
                            .get(k)
                            .map(crate::template::fmt::strval)
                            .unwrap_or_default()
                    };
                    let (child, parent) = (g("child"), g("parent"));
                    let Some(vv) = table(&cvals, &format!("{}.{child}", r.name)) else {
                        continue;
                    };
                    merge_tables(&b, &path_to_map(&parent, &copy_map(&vv)));
                }
                Value::Str(s) => {
                    let Some(vm) = table(&cvals, &format!("{}.exports.{s}", r.name)) else {
                        continue;
                    };
                    merge_tables(&b, &copy_map(&vm));
                }
                _ => {}
            }
        }
    }
    // `cvals` is this function's own copy (`merge_values` copies every table it takes in,
    // and what went into `b` was copied out of it), so it is merged into as it is rather
    // than copied once more.
    merge_tables(&cvals, &b);
    c.values = Value::Map(cvals);
}

pub(super) fn path_to_map(path: &str, data: &Map) -> Map {
    if path == "." {
        return data.clone();
    }
    let mut cur = data.clone();
    for part in path.split('.').filter(|p| !p.is_empty()).rev() {
        let m = new_map();
        m.borrow_mut().insert(part.to_string(), Value::Map(cur));
        cur = m;
    }
    cur
}
