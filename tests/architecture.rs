//! The house rules that the compiler alone cannot hold, read from the documents that state
//! them, so the rule and its check never drift apart:
//! - the layer table of `ARCHITECTURE.md`: inside each crate, a module imports only modules
//!   of its own layer or below (Cargo already refuses an arrow from a crate to one above it);
//! - the I/O boundary of `clippy.toml`: the files that may touch the disk, the environment
//!   or the clock are exactly the ones it names;
//! - the "each concept once" table of `ARCHITECTURE.md`: a concept's tell-tale text appears
//!   only in its home.

use crate::support::repo_root;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The source directories of the workspace: the root package's and each crate's.
fn source_dirs() -> Vec<(String, PathBuf)> {
    let root = repo_root();
    let mut dirs = vec![("kiln".to_string(), root.join("src"))];
    let mut crates: Vec<_> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    crates.sort();
    for c in crates {
        let name = c.file_name().unwrap().to_string_lossy().into_owned();
        dirs.push((name, c.join("src")));
    }
    dirs
}

/// The layer table: crate → module → layer number (lowest first).
fn layer_table() -> BTreeMap<String, BTreeMap<String, u32>> {
    let doc = std::fs::read_to_string(repo_root().join("ARCHITECTURE.md")).unwrap();
    let start = doc
        .find("<!-- layers -->")
        .expect("ARCHITECTURE.md has its layer table after <!-- layers -->");
    let mut table: BTreeMap<String, BTreeMap<String, u32>> = BTreeMap::new();
    for line in doc[start..].lines().skip(1) {
        let line = line.trim();
        if line.is_empty() {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [krate, layer, modules, ..] = cells[..] else {
            continue;
        };
        let Ok(layer) = layer.parse::<u32>() else {
            continue; // the header and its rule
        };
        for m in modules.split(',') {
            let m = m.trim().trim_matches('`');
            let krate = krate.trim_matches('`').to_string();
            let old = table.entry(krate).or_default().insert(m.to_string(), layer);
            assert!(old.is_none(), "{m} is in the layer table twice");
        }
    }
    assert!(table.len() >= 4, "the layer table names every crate");
    table
}

/// The top-level modules of `krate` that `text` (one file's code, its tests cut off) names:
/// `crate::m`, `crate::{m, …}`, and `super::…::m` chains that climb to the crate root.
fn imports(text: &str, depth: usize, modules: &BTreeMap<String, u32>) -> Vec<String> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            found.extend(group.split(',').map(|g| ident(g.trim())));
        } else {
            found.push(ident(rest));
        }
    }
    // `super::` from a file `depth` modules below the root: `depth` of them reach the root.
    if depth > 0 {
        let climb = "super::".repeat(depth);
        for (i, _) in code.match_indices(&climb) {
            if i >= "super::".len() && code[..i].ends_with("super::") {
                continue;
            }
            found.push(ident(&code[i + climb.len()..]));
        }
    }
    found.retain(|m| modules.contains_key(m));
    found.sort();
    found.dedup();
    found
}

#[test]
fn no_module_imports_one_of_a_higher_layer() {
    let table = layer_table();
    let mut wrong = Vec::new();
    for (krate, dir) in source_dirs() {
        let modules = table
            .get(&krate)
            .unwrap_or_else(|| panic!("ARCHITECTURE.md's layer table has no rows for {krate}"));
        for file in rust_files(&dir) {
            let rel = file.strip_prefix(&dir).unwrap();
            let parts: Vec<String> = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(parts[..], [ref p] if p == "lib" || p == "main") {
                continue;
            }
            let top = parts[0].clone();
            let Some(&own) = modules.get(&top) else {
                wrong.push(format!("{krate}: module `{top}` is not in the layer table"));
                continue;
            };
            // A `mod.rs` is its folder's module: one level less deep.
            let depth = parts.len() - usize::from(parts.last().is_some_and(|p| p == "mod"));
            let text = std::fs::read_to_string(&file).unwrap();
            // Unit tests may reach anywhere in their crate.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for m in imports(code, depth, modules) {
                if m != top && modules[&m] > own {
                    wrong.push(format!(
                        "{krate}/src/{}: `{top}` (layer {own}) imports `{m}` (layer {})",
                        rel.display(),
                        modules[&m]
                    ));
                }
            }
        }
        for m in modules.keys() {
            let exists = dir.join(format!("{m}.rs")).is_file() || dir.join(m).is_dir();
            if !exists {
                wrong.push(format!(
                    "{krate}: the layer table names `{m}`, which is gone"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against ARCHITECTURE.md's layer table:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn imports_are_found_in_every_spelling() {
    let modules: BTreeMap<String, u32> = [("fs", 0), ("yaml", 0), ("types", 1)]
        .into_iter()
        .map(|(m, l)| (m.to_string(), l))
        .collect();
    let text = "use crate::fs::X;\nuse crate::{yaml, other};\n// crate::types\nlet t = super::super::types::A;";
    assert_eq!(imports(text, 2, &modules), ["fs", "types", "yaml"]);
    assert_eq!(imports(text, 1, &modules), ["fs", "yaml"]);
}

/// The modules that may touch the disk, the environment or the clock are exactly the ones
/// clippy.toml names (the Helm engine, for one, reads only through a `FileSystem`).
#[test]
fn only_the_documented_modules_opt_out_of_the_io_lint() {
    let root = repo_root();
    let doc = std::fs::read_to_string(root.join("clippy.toml")).unwrap();
    let mut documented: Vec<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .flat_map(|l| l.split([',', ' ', '(', ')']))
        .filter(|w| (w.starts_with("src/") || w.starts_with("crates/")) && w.ends_with(".rs"))
        .map(str::to_string)
        .collect();
    documented.sort();
    let mut found = Vec::new();
    for (_, dir) in source_dirs() {
        for p in rust_files(&dir) {
            let text = std::fs::read_to_string(&p).unwrap();
            if text
                .lines()
                .any(|l| l.starts_with("#![allow(clippy::disallowed_methods)]"))
            {
                found.push(p.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    assert_eq!(
        found, documented,
        "update clippy.toml's list, or read through a FileSystem"
    );
}

/// The dependency names of one `[dependencies]`-like table of a manifest.
fn manifest_deps(manifest: &str, table: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == format!("[{table}]");
            continue;
        }
        if !inside || line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((name, _)) = line.split_once(['=', '.']) {
            out.push(name.trim().to_string());
        }
    }
    out
}

/// Every dependency of every crate is used by the code that may use it: a `[dependencies]`
/// entry by `src/`, a `[dev-dependencies]` one by `src/` or `tests/` (an unused one costs
/// every cold build its compile time).
#[test]
fn every_dependency_is_used() {
    let root = repo_root();
    let mut crates = vec![root.clone()];
    crates.extend(
        source_dirs()
            .into_iter()
            .skip(1)
            .map(|(_, d)| d.parent().unwrap().to_path_buf()),
    );
    let mut unused = Vec::new();
    for dir in crates {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let text_of = |sub: &[&str]| -> String {
            sub.iter()
                .filter(|s| dir.join(s).is_dir())
                .flat_map(|s| rust_files(&dir.join(s)))
                .map(|f| std::fs::read_to_string(f).unwrap())
                .collect()
        };
        let src = text_of(&["src"]);
        let all = src.clone() + &text_of(&["tests", "examples"]);
        for (table, text) in [("dependencies", &src), ("dev-dependencies", &all)] {
            for dep in manifest_deps(&manifest, table) {
                let path = dep.replace('-', "_");
                let used = [
                    format!("{path}::"),
                    format!("use {path}"),
                    format!("{path} as "),
                ]
                .iter()
                .any(|p| text.contains(p.as_str()));
                if !used {
                    unused.push(format!("{}: {table}.{dep}", dir.display()));
                }
            }
        }
    }
    assert!(
        unused.is_empty(),
        "unused dependencies:\n{}",
        unused.join("\n")
    );
}

/// The "each concept once" table: (concept, home, the text a copy shows as).
fn once_table() -> Vec<(String, String, String)> {
    let doc = std::fs::read_to_string(repo_root().join("ARCHITECTURE.md")).unwrap();
    let start = doc
        .find("<!-- once -->")
        .expect("ARCHITECTURE.md has its concept table after <!-- once -->");
    let unquote = |c: &str| c.trim().trim_matches('`').to_string();
    doc[start..]
        .lines()
        .skip(3)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").collect();
            assert_eq!(cells.len(), 3, "a row of three cells: {l}");
            (
                cells[0].trim().to_string(),
                unquote(cells[1]),
                unquote(cells[2]),
            )
        })
        .collect()
}

/// Every concept of the table is written in its home only (issue 32: one source location,
/// one JSON Pointer escape, one diff, …): its tell-tale text appears in no other source file
/// of the workspace, tests included.
#[test]
fn each_concept_is_written_once() {
    let root = repo_root();
    let table = once_table();
    assert!(!table.is_empty());
    let mut files: Vec<PathBuf> = source_dirs()
        .into_iter()
        .flat_map(|(_, d)| rust_files(&d))
        .collect();
    files.extend(rust_files(&root.join("tests")));
    let this = root.join("tests/architecture.rs");
    let mut copies = Vec::new();
    for file in files.iter().filter(|f| **f != this) {
        let rel = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(file).unwrap();
        for (concept, home, tell) in &table {
            let at_home = if home.ends_with('/') {
                rel.starts_with(home.as_str())
            } else {
                rel == *home
            };
            if !at_home && text.contains(tell.as_str()) {
                copies.push(format!("{rel}: {concept} (`{tell}`; its home is {home})"));
            }
        }
    }
    assert!(
        copies.is_empty(),
        "concepts written twice:\n{}",
        copies.join("\n")
    );
}
