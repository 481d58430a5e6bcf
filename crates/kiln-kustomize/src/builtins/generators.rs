//! `configMapGenerator` and `secretGenerator`: kustomization entries in, ConfigMap and Secret
//! resources out, plus the `behavior: merge|replace` step that folds a generated object into
//! one that came from a base.
//!
//! Where it sits: the engine runs generators after loading `resources` (and components) of a
//! kustomization and before its transformers; every generated object goes through
//! [`absorb_generated`] into the resources accumulated so far (kustomize's
//! `resWrangler.appendReplaceOrMerge`). File access goes through a caller-supplied reader so
//! the engine keeps its load restrictions and tests stay in memory.
//!
//! Invariants: output is deterministic (data keys are sorted by the emitter, maps here are
//! ordered); generated objects carry `meta.needs_hash_suffix` (unless disabled) and
//! `meta.generator_behavior`, and never an origin. Sources: kustomize `api/kv/kv.go`
//! (env files, literals), `api/internal/generators/{configmap,secret,utils}.go`,
//! `kyaml/yaml/datamap.go` (UTF-8 → `data`, otherwise `binaryData`; base64 wrapped at 70
//! columns), `api/types/generatoroptions.go` (`MergeGlobalOptionsIntoLocal`) and
//! `api/resmap/reswrangler.go` (`appendReplaceOrMerge`). Facts checked against
//! `kubectl kustomize` v5.5.0: keys are not validated (kubectl wires a no-op validator), a
//! bare `KEY` line in an env file yields `KEY: ""`, and the merged object keeps its hash
//! suffix only when both the base and the overlay generator want one.

pub use crate::types::configmapargs::ConfigMapArgs;
pub use crate::types::generatoroptions::GeneratorOptions;
pub use crate::types::secretargs::SecretArgs;
use kiln_base::resource::{BuildMeta, Resource};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Reads a file named in a generator (`files`, `envs`, `env`), relative to the kustomization
/// directory; the engine enforces load restrictions. `Err` carries a human-readable reason.
pub type FileReader<'a> = &'a dyn Fn(&str) -> Result<Vec<u8>, String>;

/// Generator `behavior`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    /// Make a new object; an existing one with the same id is an error.
    Create,
    /// Merge data, labels and annotations into the existing object.
    Merge,
    /// Replace the existing object's body, keeping its identity and merging metadata.
    Replace,
}

impl Behavior {
    /// The kustomization spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Behavior::Create => "create",
            Behavior::Merge => "merge",
            Behavior::Replace => "replace",
        }
    }

    /// Parses `merge`/`replace`; kustomize's `NewGenerationBehavior` takes any other word
    /// (`""`, `create`, but also `add` or a typo) as `BehaviorUnspecified`, which generates
    /// like `create` (case n30).
    pub fn parse(s: &str) -> Behavior {
        match s {
            "merge" => Behavior::Merge,
            "replace" => Behavior::Replace,
            _ => Behavior::Create,
        }
    }
}

/// Errors of the generators and of the merge step. Each names the generator (`name`) and, where
/// it helps, the field (`literals`, `files`, `envs`, `env`); the engine adds file and line.
#[derive(Debug, thiserror::Error, miette::Diagnostic, PartialEq, Eq)]
pub enum GeneratorError {
    #[error("{kind} generator entry has no `name`")]
    #[diagnostic(
        code(kiln::kustomize::generator_name_missing),
        help("add `name: <object name>` to the entry")
    )]
    NameMissing { kind: String },

    #[error(
        "invalid literal `{literal}` in `literals` of {kind} generator `{generator}`: expected KEY=VALUE"
    )]
    #[diagnostic(
        code(kiln::kustomize::generator_literal_invalid),
        help("write the literal as `KEY=VALUE` with a non-empty key, e.g. `LOG_LEVEL=info`")
    )]
    LiteralInvalid {
        kind: String,
        generator: String,
        literal: String,
    },

    #[error(
        "invalid file source `{source_text}` in `files` of {kind} generator `{generator}`: {reason}"
    )]
    #[diagnostic(
        code(kiln::kustomize::generator_file_source_invalid),
        help("write `path/to/file` (the key is the file name) or `key=path/to/file`")
    )]
    FileSourceInvalid {
        kind: String,
        generator: String,
        source_text: String,
        reason: String,
    },

    #[error("cannot read `{path}` (from `{field}` of {kind} generator `{generator}`): {reason}")]
    #[diagnostic(
        code(kiln::kustomize::generator_file_unreadable),
        help(
            "paths are relative to the kustomization directory and must stay inside the build root"
        )
    )]
    FileUnreadable {
        kind: String,
        generator: String,
        field: String,
        path: String,
        reason: String,
    },

    #[error(
        "line {line} of env file `{path}` (in {kind} generator `{generator}`) is not valid UTF-8"
    )]
    #[diagnostic(
        code(kiln::kustomize::generator_env_line_invalid_utf8),
        help("env files must be UTF-8 text; put binary content in `files` instead")
    )]
    EnvLineInvalidUtf8 {
        kind: String,
        generator: String,
        path: String,
        line: usize,
    },

    #[error("{kind} generator `{generator}` repeats the key `{key}`")]
    #[diagnostic(
        code(kiln::kustomize::generator_key_repeated),
        help("each key may come from only one of `envs`, `literals` and `files`, once")
    )]
    KeyRepeated {
        kind: String,
        generator: String,
        key: String,
    },

    #[error("{kind} `{name}` already exists, so generator behavior `create` cannot make it again")]
    #[diagnostic(
        code(kiln::kustomize::generator_target_exists),
        help("set `behavior: merge` or `behavior: replace` to change the object from the base")
    )]
    TargetExists {
        kind: String,
        name: String,
        namespace: Option<String>,
    },

    #[error(
        "{kind} `{name}` does not exist, so generator behavior `{behavior}` has nothing to {behavior}"
    )]
    #[diagnostic(
        code(kiln::kustomize::generator_target_missing),
        help(
            "merge/replace need an object of the same kind and name from a base; use `create` otherwise"
        )
    )]
    TargetMissing {
        kind: String,
        name: String,
        namespace: Option<String>,
        behavior: String,
    },

    #[error(
        "{kind} `{name}` matches {count} objects, so generator behavior `{behavior}` is ambiguous"
    )]
    #[diagnostic(
        code(kiln::kustomize::generator_target_ambiguous),
        help(
            "several objects were once called `{name}` in this namespace; rename one of them first"
        )
    )]
    TargetAmbiguous {
        kind: String,
        name: String,
        behavior: String,
        count: usize,
    },
}

/// The generator inputs kustomize shares between ConfigMaps and Secrets.
struct Sources<'a> {
    kind: &'static str,
    name: &'a str,
    literals: &'a [String],
    files: &'a [String],
    envs: &'a [String],
    env: &'a str,
}

/// Generates every entry of `configMapGenerator` then `secretGenerator` (kustomize's order),
/// with `generatorOptions` merged into each entry's options.
///
/// Errors: the first [`GeneratorError`] met, in entry order.
pub fn generate(
    config_maps: &[ConfigMapArgs],
    secrets: &[SecretArgs],
    global: Option<&GeneratorOptions>,
    read: FileReader<'_>,
) -> Result<Vec<Resource>, GeneratorError> {
    let mut out = Vec::with_capacity(config_maps.len() + secrets.len());
    for args in config_maps {
        out.push(generate_config_map(args, global, read)?);
    }
    for args in secrets {
        out.push(generate_secret(args, global, read)?);
    }
    Ok(out)
}

/// One ConfigMap: UTF-8 values go to `data`, others (base64) to `binaryData`.
pub fn generate_config_map(
    args: &ConfigMapArgs,
    global: Option<&GeneratorOptions>,
    read: FileReader<'_>,
) -> Result<Resource, GeneratorError> {
    const KIND: &str = "ConfigMap";
    let behavior = check_name_and_behavior(KIND, &args.name, &args.behavior)?;
    let pairs = load_pairs(
        &Sources {
            kind: KIND,
            name: &args.name,
            literals: &args.literals,
            files: &args.files,
            envs: &args.envs,
            env: &args.env,
        },
        read,
    )?;
    let mut data = Map::new();
    let mut binary = Map::new();
    for (k, v) in pairs {
        match String::from_utf8(v) {
            Ok(s) => data.insert(k, Value::String(s)),
            Err(e) => binary.insert(k, Value::String(encode_base64(e.as_bytes()))),
        };
    }
    let opts = GeneratorOptions::merged_with_global(args.options.as_ref(), global);
    let mut obj = base_object(KIND, &args.name, &args.namespace, &opts);
    if !data.is_empty() {
        obj.insert("data".into(), Value::Object(data));
    }
    if !binary.is_empty() {
        obj.insert("binaryData".into(), Value::Object(binary));
    }
    if opts.immutable {
        obj.insert("immutable".into(), Value::Bool(true));
    }
    Ok(finish(obj, &opts, behavior))
}

/// One Secret: every value base64-encoded into `data`; `type` defaults to `Opaque`.
pub fn generate_secret(
    args: &SecretArgs,
    global: Option<&GeneratorOptions>,
    read: FileReader<'_>,
) -> Result<Resource, GeneratorError> {
    const KIND: &str = "Secret";
    let behavior = check_name_and_behavior(KIND, &args.name, &args.behavior)?;
    let pairs = load_pairs(
        &Sources {
            kind: KIND,
            name: &args.name,
            literals: &args.literals,
            files: &args.files,
            envs: &args.envs,
            env: &args.env,
        },
        read,
    )?;
    let opts = GeneratorOptions::merged_with_global(args.options.as_ref(), global);
    let mut obj = base_object(KIND, &args.name, &args.namespace, &opts);
    let data: Map<String, Value> = pairs
        .into_iter()
        .map(|(k, v)| (k, Value::String(encode_base64(&v))))
        .collect();
    // Unlike a ConfigMap, a Secret always gets `data`, `{}` when empty (kubectl kustomize
    // prints `data: {}` and hashes `"data":{}`).
    obj.insert("data".into(), Value::Object(data));
    let ty = if args.secret_type.is_empty() {
        "Opaque"
    } else {
        args.secret_type.as_str()
    };
    obj.insert("type".into(), Value::String(ty.into()));
    if opts.immutable {
        obj.insert("immutable".into(), Value::Bool(true));
    }
    Ok(finish(obj, &opts, behavior))
}

fn check_name_and_behavior(
    kind: &str,
    name: &str,
    behavior: &str,
) -> Result<Behavior, GeneratorError> {
    if name.is_empty() {
        return Err(GeneratorError::NameMissing { kind: kind.into() });
    }
    Ok(Behavior::parse(behavior))
}

fn base_object(
    kind: &str,
    name: &str,
    namespace: &str,
    opts: &GeneratorOptions,
) -> Map<String, Value> {
    let mut md = Map::new();
    md.insert("name".into(), Value::String(name.into()));
    if !namespace.is_empty() {
        md.insert("namespace".into(), Value::String(namespace.into()));
    }
    if !opts.labels.is_empty() {
        md.insert("labels".into(), string_map(&opts.labels));
    }
    if !opts.annotations.is_empty() {
        md.insert("annotations".into(), string_map(&opts.annotations));
    }
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), Value::String("v1".into()));
    obj.insert("kind".into(), Value::String(kind.into()));
    obj.insert("metadata".into(), Value::Object(md));
    obj
}

fn string_map(m: &BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn finish(obj: Map<String, Value>, opts: &GeneratorOptions, behavior: Behavior) -> Resource {
    let mut res = Resource::new(Value::Object(obj), None);
    res.meta.needs_hash_suffix = !opts.disable_name_suffix_hash;
    res.meta.generator_behavior = Some(behavior.as_str().to_string());
    res
}

/// Loads key/value pairs in kustomize's order — env files (`envs`, then the legacy `env`,
/// which kustomize's `FixKustomization` appends to `envs`), literals, files — rejecting a
/// repeated key. Values are raw bytes (files may be binary).
fn load_pairs(
    src: &Sources<'_>,
    read: FileReader<'_>,
) -> Result<Vec<(String, Vec<u8>)>, GeneratorError> {
    let mut pairs: Vec<(String, Vec<u8>)> = Vec::new();
    let env_files = src
        .envs
        .iter()
        .map(|p| ("envs", p.as_str()))
        .chain(std::iter::once(("env", src.env)).filter(|(_, p)| !p.is_empty()));
    for (field, path) in env_files {
        let content = read_file(src, field, path, read)?;
        let lines =
            parse_env_file(&content).map_err(|line| GeneratorError::EnvLineInvalidUtf8 {
                kind: src.kind.into(),
                generator: src.name.into(),
                path: path.into(),
                line,
            })?;
        pairs.extend(lines.into_iter().map(|(k, v)| (k, v.into_bytes())));
    }
    for lit in src.literals {
        let (k, v) = parse_literal(lit).ok_or_else(|| GeneratorError::LiteralInvalid {
            kind: src.kind.into(),
            generator: src.name.into(),
            literal: lit.clone(),
        })?;
        pairs.push((k, v.into_bytes()));
    }
    for source in src.files {
        let (key, path) =
            parse_file_source(source).map_err(|reason| GeneratorError::FileSourceInvalid {
                kind: src.kind.into(),
                generator: src.name.into(),
                source_text: source.clone(),
                reason,
            })?;
        let content = read_file(src, "files", &path, read)?;
        pairs.push((key, content));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (k, _) in &pairs {
        if !seen.insert(k.as_str()) {
            return Err(GeneratorError::KeyRepeated {
                kind: src.kind.into(),
                generator: src.name.into(),
                key: k.clone(),
            });
        }
    }
    Ok(pairs)
}

fn read_file(
    src: &Sources<'_>,
    field: &str,
    path: &str,
    read: FileReader<'_>,
) -> Result<Vec<u8>, GeneratorError> {
    read(path).map_err(|reason| GeneratorError::FileUnreadable {
        kind: src.kind.into(),
        generator: src.name.into(),
        field: field.into(),
        path: path.into(),
        reason,
    })
}

/// Parses an env file as kustomize's `kv.keyValuesFromLines`: lines split like Go's
/// `bufio.ScanLines` (a trailing `\r` is dropped), a UTF-8 BOM is stripped from the first line
/// only, leading whitespace is trimmed, empty lines and `#` comments are skipped, the line is
/// split at the first `=`; a line without `=` gives an empty value (kustomize v5 no longer
/// reads the process environment), a line with an empty key is skipped. Values are kept
/// verbatim: no quote stripping, no trailing-space trimming.
///
/// Errors: the 1-based number of the first line that is not valid UTF-8.
pub fn parse_env_file(content: &[u8]) -> Result<Vec<(String, String)>, usize> {
    let mut out = Vec::new();
    let mut lines: Vec<&[u8]> = content.split(|b| *b == b'\n').collect();
    // ScanLines yields no empty token after a final newline.
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    for (i, raw) in lines.into_iter().enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Ok(mut line) = std::str::from_utf8(raw) else {
            return Err(i + 1);
        };
        if i == 0 {
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((line, ""));
        if key.is_empty() {
            continue;
        }
        out.push((key.to_string(), value.to_string()));
    }
    Ok(out)
}

/// `KEY=VALUE` → `(KEY, VALUE)`, split at the first `=`; a value surrounded by a matching pair
/// of `"` or `'` loses that pair (kustomize's `removeQuotes`). `None` when the key is empty
/// or there is no `=`.
pub fn parse_literal(source: &str) -> Option<(String, String)> {
    let (k, v) = source.split_once('=')?;
    if k.is_empty() {
        return None;
    }
    let b = v.as_bytes();
    // kustomize compares first and last *bytes*; a lone quote character (length 1) would make
    // Go slice out of range and panic, so kiln keeps it as it is.
    let v = if b.len() >= 2 && b[0] == b[b.len() - 1] && (b[0] == b'"' || b[0] == b'\'') {
        &v[1..v.len() - 1]
    } else {
        v
    };
    Some((k.to_string(), v.to_string()))
}

/// `files` entry → `(key, path)`: `path` alone uses the file's base name as the key,
/// `key=path` names it (kustomize's `ParseFileSource`). Errors: a reason text.
pub fn parse_file_source(source: &str) -> Result<(String, String), String> {
    match source.matches('=').count() {
        0 => Ok((go_path_base(source), source.to_string())),
        1 if source.starts_with('=') => {
            Err(format!("missing key name for file path `{}`", &source[1..]))
        }
        1 if source.ends_with('=') => Err(format!(
            "missing file path for key `{}`",
            &source[..source.len() - 1]
        )),
        1 => {
            let (k, p) = source.split_once('=').unwrap_or((source, ""));
            Ok((k.to_string(), p.to_string()))
        }
        _ => Err("the key name or file path contains `=`".to_string()),
    }
}

/// Go's `path.Base`: the last element after dropping trailing slashes; `""` → `"."`, all
/// slashes → `"/"`.
fn go_path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// kyaml's `encodeBase64`: standard base64, and when the encoding is 70 characters or longer
/// it is cut into 70-character lines, each ending in `\n` (so the YAML emitter prints a
/// literal block). The line breaks are part of the value and of the hash.
pub fn encode_base64(data: &[u8]) -> String {
    use base64::Engine;
    let enc = base64::engine::general_purpose::STANDARD.encode(data);
    const LINE: usize = 70;
    // kyaml computes `lines := encLen/70 + 1` and breaks only when `lines > 1`.
    if enc.len() < LINE {
        return enc;
    }
    let mut out = String::with_capacity(enc.len() + enc.len() / LINE + 1);
    for piece in enc.as_bytes().chunks(LINE) {
        // base64 output is ASCII, so byte chunks are valid UTF-8.
        out.push_str(std::str::from_utf8(piece).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// Adds generated objects to the accumulated resources one by one with [`absorb_one`]
/// (kustomize's `ResAccumulator.AbsorbAll`).
pub fn absorb_generated(
    resources: &mut Vec<Resource>,
    generated: Vec<Resource>,
) -> Result<(), GeneratorError> {
    for g in generated {
        absorb_one(resources, g)?;
    }
    Ok(())
}

/// Folds one generated object into `resources` according to its `meta.generator_behavior`
/// (kustomize's `appendReplaceOrMerge`):
/// - the target is the object whose current or any previous id equals the generated one
///   (same apiVersion, kind, name; namespaces equal with absent = `default`) — so an overlay
///   generator without `namespace` still finds a base object that the base's `namespace:`
///   moved, through its previous id;
/// - no target: `create` appends, `merge`/`replace` fail with [`GeneratorError::TargetMissing`];
/// - one target: `create` fails with [`GeneratorError::TargetExists`]; `merge` and `replace`
///   put the generated object in the target's place, keeping the target's name, namespace,
///   origin and rename history, with labels and annotations merged (generated wins); `merge`
///   also merges `data` and `binaryData` (generated wins). The hash suffix survives only when
///   both objects want it (checked against `kubectl kustomize` v5.5.0);
/// - several targets: [`GeneratorError::TargetAmbiguous`].
pub fn absorb_one(
    resources: &mut Vec<Resource>,
    generated: Resource,
) -> Result<(), GeneratorError> {
    let behavior = match generated.meta.generator_behavior.as_deref() {
        Some("merge") => Behavior::Merge,
        Some("replace") => Behavior::Replace,
        _ => Behavior::Create,
    };
    let gid = generated.id();
    // Current and previous ids count (a base may already have renamed or moved the object);
    // the namespace must match — kubectl kustomize v5.5 has no namespace-blind fallback.
    // Runs over every object for every generated one: compares borrowed strings (no copies
    // of names and rename histories) and checks the cheap type test first.
    let (api_version, want_ns) = (
        generated.api_version(),
        effective_ns(gid.namespace.as_deref()),
    );
    let any_id_matches = |r: &Resource| {
        let same_type = r.kind() == gid.kind && r.api_version() == api_version;
        let id_matches =
            |ns: Option<&str>, name: &str| name == gid.name && effective_ns(ns) == want_ns;
        same_type
            && (id_matches(r.namespace(), r.name())
                || r.meta
                    .previous_names
                    .iter()
                    .any(|(ns, name)| id_matches(ns.as_deref(), name)))
    };
    let matches: Vec<usize> = (0..resources.len())
        .filter(|&i| any_id_matches(&resources[i]))
        .collect();
    match (matches.as_slice(), behavior) {
        ([], Behavior::Create) => {
            resources.push(generated);
            Ok(())
        }
        ([], b) => Err(GeneratorError::TargetMissing {
            kind: gid.kind,
            name: gid.name,
            namespace: gid.namespace,
            behavior: b.as_str().into(),
        }),
        ([i], Behavior::Create) => Err(GeneratorError::TargetExists {
            kind: gid.kind,
            name: gid.name,
            namespace: resources[*i].namespace().map(str::to_string),
        }),
        ([i], b) => {
            let old = &resources[*i];
            // `buildMetadata`: a merge keeps the old object's origin (kustomize
            // `reswrangler.go` `appendReplaceOrMerge`: "ensure the origin annotation doesn't get
            // overwritten"); a replace takes the generator's.
            let old_origin = old
                .annotation(crate::utils::ORIGIN_ANNOTATION)
                .map(str::to_string);
            let mut merged = merge_into(old, generated, b == Behavior::Merge);
            if b == Behavior::Merge
                && let Some(origin) = old_origin
            {
                crate::utils::set_annotation(&mut merged, crate::utils::ORIGIN_ANNOTATION, origin);
            }
            resources[*i] = merged;
            Ok(())
        }
        (many, b) => Err(GeneratorError::TargetAmbiguous {
            kind: gid.kind,
            name: gid.name,
            behavior: b.as_str().into(),
            count: many.len(),
        }),
    }
}

fn effective_ns(ns: Option<&str>) -> &str {
    match ns {
        None | Some("") => "default",
        Some(s) => s,
    }
}

/// kustomize's `CopyMergeMetaDataFieldsFrom` (+ `MergeDataMapFrom`/`MergeBinaryDataMapFrom`
/// for merge): the new body, old identity.
fn merge_into(old: &Resource, mut new: Resource, merge_data: bool) -> Resource {
    for field in ["labels", "annotations"] {
        let merged = merged_map(
            old.value.pointer(&format!("/metadata/{field}")),
            new.value.pointer(&format!("/metadata/{field}")),
        );
        let md = new.metadata_mut();
        if merged.is_empty() {
            md.remove(field);
        } else {
            md.insert(field.into(), Value::Object(merged));
        }
    }
    new.set_name(old.name());
    match old.namespace() {
        Some(ns) => new.set_namespace(ns),
        None => {
            new.metadata_mut().remove("namespace");
        }
    }
    if merge_data {
        for field in ["data", "binaryData"] {
            let merged = merged_map(old.value.get(field), new.value.get(field));
            if let Some(obj) = new.value.as_object_mut() {
                if merged.is_empty() {
                    obj.remove(field);
                } else {
                    obj.insert(field.into(), Value::Object(merged));
                }
            }
        }
    }
    new.origin = old.origin.clone();
    new.meta = BuildMeta {
        needs_hash_suffix: old.meta.needs_hash_suffix && new.meta.needs_hash_suffix,
        generator_behavior: new.meta.generator_behavior.take(),
        ..old.meta.clone()
    };
    new
}

/// `base ∪ over`, `over` winning, in `base` order then new keys.
fn merged_map(base: Option<&Value>, over: Option<&Value>) -> Map<String, Value> {
    let mut out = base.and_then(Value::as_object).cloned().unwrap_or_default();
    if let Some(o) = over.and_then(Value::as_object) {
        for (k, v) in o {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash;
    use serde_json::json;

    fn files(entries: &[(&str, &[u8])]) -> impl Fn(&str) -> Result<Vec<u8>, String> + use<> {
        let map: BTreeMap<String, Vec<u8>> = entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect();
        move |p: &str| {
            map.get(p)
                .cloned()
                .ok_or_else(|| format!("no such file `{p}`"))
        }
    }

    fn no_files(p: &str) -> Result<Vec<u8>, String> {
        Err(format!("unexpected read of `{p}`"))
    }

    fn cm_args(yaml_json: Value) -> ConfigMapArgs {
        serde_json::from_value(yaml_json).unwrap()
    }

    #[test]
    fn env_file_parsing_matches_kustomize() {
        let content = b"\xef\xbb\xbf# comment\n  \nA=1\nB= spaced  \nBARE\nQ=\"quoted\"\nC=x=y\r\n=skipped\nexport D=4";
        let got = parse_env_file(content).unwrap();
        let want: Vec<(String, String)> = [
            ("A", "1"),
            ("B", " spaced  "),
            ("BARE", ""),
            ("Q", "\"quoted\""),
            ("C", "x=y"),
            ("export D", "4"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
        assert_eq!(parse_env_file(b"A=1\nB=\xff\n"), Err(2));
    }

    #[test]
    fn literal_quotes_are_stripped_only_in_pairs() {
        let p = |s: &str| parse_literal(s).map(|(k, v)| format!("{k}|{v}"));
        assert_eq!(p("A=\"a b\"").as_deref(), Some("A|a b"));
        assert_eq!(p("B='c d'").as_deref(), Some("B|c d"));
        assert_eq!(p("C=\"e").as_deref(), Some("C|\"e"));
        assert_eq!(p("D=").as_deref(), Some("D|"));
        assert_eq!(p("E=\"").as_deref(), Some("E|\""));
        assert_eq!(p("F=a=b").as_deref(), Some("F|a=b"));
        assert_eq!(p("=x"), None);
        assert_eq!(p("noeq"), None);
    }

    #[test]
    fn file_sources() {
        assert_eq!(
            parse_file_source("dir/app.properties").unwrap(),
            ("app.properties".into(), "dir/app.properties".into())
        );
        assert_eq!(
            parse_file_source("k=dir/f").unwrap(),
            ("k".into(), "dir/f".into())
        );
        assert!(parse_file_source("=f").is_err());
        assert!(parse_file_source("k=").is_err());
        assert!(parse_file_source("a=b=c").is_err());
    }

    #[test]
    fn base64_wraps_at_70_columns_like_kyaml() {
        assert_eq!(encode_base64(b"admin"), "YWRtaW4=");
        assert_eq!(encode_base64(&[0, 1, 0xff]), "AAH/");
        assert_eq!(encode_base64(b""), "");
        // kubectl kustomize: 52 × 'x' → 72 base64 chars, two lines, each ending in \n.
        let got = encode_base64(&[b'x'; 52]);
        assert_eq!(
            got,
            "eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eA\n==\n"
        );
        // 52 bytes → 72 chars; 51 bytes → 68 chars: one line, no newline.
        assert!(!encode_base64(&[b'x'; 51]).contains('\n'));
    }

    #[test]
    fn k06_generates_the_expected_objects() {
        let cm = cm_args(
            json!({"name": "greeting", "literals": ["MESSAGE=Grüße & <welcome>", "EMOJI=🚀"]}),
        );
        let sec: SecretArgs = serde_json::from_value(
            json!({"name": "creds", "literals": ["USER=admin"], "type": "Opaque"}),
        )
        .unwrap();
        let mut out = generate(&[cm], &[sec], None, &no_files).unwrap();
        assert!(
            out.iter()
                .all(|r| r.meta.needs_hash_suffix && r.origin.is_none())
        );
        hash::apply_hash_suffixes(&mut out).unwrap();
        assert_eq!(
            out[0].value,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "greeting-59h595f882"},
                "data": {"MESSAGE": "Grüße & <welcome>", "EMOJI": "🚀"}})
        );
        assert_eq!(
            out[1].value,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds-248m72gbcd"},
                "data": {"USER": "YWRtaW4="}, "type": "Opaque"})
        );
    }

    #[test]
    fn files_envs_binary_and_options() {
        // Names checked against kubectl kustomize v5.5.0 on the same input:
        // envs-t99dt8b978, bin-9247c92m6f, s-td2b65gdb7, s2-t9d76m777g.
        let read = files(&[
            (
                "app.env",
                b"# comment\n  \nA=1\nB= spaced  \nBARE\nQ=\"quoted\"\nC=x=y\r\nexport D=4\n",
            ),
            ("bin.dat", &[0, 1, 0xff]),
            ("ctl.txt", "hello\u{2028} <&>\"\\\t\n".as_bytes()),
        ]);
        let global = GeneratorOptions {
            labels: [("gen".to_string(), "yes".to_string())].into(),
            annotations: [("ga".to_string(), "1".to_string())].into(),
            ..Default::default()
        };
        let cms = vec![
            cm_args(json!({"name": "envs", "envs": ["app.env"]})),
            cm_args(json!({"name": "bin", "files": ["bin.dat", "named=ctl.txt"]})),
            cm_args(json!({"name": "lit", "literals": ["A=\"a b\""],
                "options": {"disableNameSuffixHash": true, "immutable": true, "labels": {"z": "1", "gen": "mine"}}})),
        ];
        let secrets: Vec<SecretArgs> = serde_json::from_value(json!([
            {"name": "s", "type": "kubernetes.io/tls", "literals": ["tls.crt=abc", "tls.key=def"], "options": {"immutable": true}},
            {"name": "s2", "files": ["bin.dat"]}
        ]))
        .unwrap();
        let mut out = generate(&cms, &secrets, Some(&global), &read).unwrap();
        hash::apply_hash_suffixes(&mut out).unwrap();
        let names: Vec<&str> = out.iter().map(Resource::name).collect();
        assert_eq!(
            names,
            [
                "envs-t99dt8b978",
                "bin-9247c92m6f",
                "lit",
                "s-td2b65gdb7",
                "s2-t9d76m777g"
            ]
        );
        assert_eq!(out[1].value["binaryData"], json!({"bin.dat": "AAH/"}));
        assert_eq!(out[2].value["immutable"], json!(true));
        assert_eq!(
            out[2].value["metadata"]["labels"],
            json!({"gen": "mine", "z": "1"})
        );
        assert_eq!(out[2].value["metadata"]["annotations"], json!({"ga": "1"}));
        assert_eq!(out[3].value["type"], json!("kubernetes.io/tls"));
        assert_eq!(out[4].value["data"], json!({"bin.dat": "AAH/"}));
        assert_eq!(out[4].value["type"], json!("Opaque"));
    }

    #[test]
    fn args_serialize_only_what_is_set() {
        let args =
            cm_args(json!({"name": "x", "literals": ["a=1"], "options": {"immutable": true}}));
        let v = serde_json::to_value(&args).unwrap();
        assert_eq!(
            v,
            json!({"name": "x", "literals": ["a=1"], "options": {"immutable": true}})
        );
        assert_eq!(cm_args(v), args);
        let sec: SecretArgs =
            serde_json::from_value(json!({"name": "s", "type": "kubernetes.io/tls"})).unwrap();
        assert_eq!(
            serde_json::to_value(&sec).unwrap(),
            json!({"name": "s", "type": "kubernetes.io/tls"})
        );
    }

    #[test]
    fn generator_errors_name_the_generator() {
        let e = generate(
            &[cm_args(json!({"literals": ["a=1"]}))],
            &[],
            None,
            &no_files,
        )
        .unwrap_err();
        assert_eq!(
            e,
            GeneratorError::NameMissing {
                kind: "ConfigMap".into()
            }
        );
        let e = generate(
            &[cm_args(json!({"name": "x", "literals": ["a=1", "a=2"]}))],
            &[],
            None,
            &no_files,
        )
        .unwrap_err();
        assert!(
            matches!(e, GeneratorError::KeyRepeated { ref generator, ref key, .. } if generator == "x" && key == "a")
        );
        let e = generate(
            &[cm_args(json!({"name": "x", "literals": ["=x"]}))],
            &[],
            None,
            &no_files,
        )
        .unwrap_err();
        assert!(matches!(e, GeneratorError::LiteralInvalid { .. }));
        let e = generate(
            &[cm_args(json!({"name": "x", "files": ["missing.txt"]}))],
            &[],
            None,
            &no_files,
        )
        .unwrap_err();
        assert!(
            matches!(e, GeneratorError::FileUnreadable { ref field, ref path, .. } if field == "files" && path == "missing.txt")
        );
        // kustomize generates an unknown behavior like `create`.
        assert_eq!(Behavior::parse("add"), Behavior::Create);
        assert_eq!(Behavior::parse("merge"), Behavior::Merge);
        assert!(
            serde_json::from_value::<ConfigMapArgs>(json!({"name": "x", "literal": []})).is_err()
        );
        assert!(
            serde_json::from_value::<ConfigMapArgs>(json!({"name": "x", "type": "Opaque"}))
                .is_err()
        );
        let e = generate(
            &[cm_args(
                json!({"name": "x", "env": "a.env", "envs": ["b.env"]}),
            )],
            &[],
            None,
            &files(&[("a.env", b"A=1"), ("b.env", b"A=2")]),
        )
        .unwrap_err();
        assert!(matches!(e, GeneratorError::KeyRepeated { .. }));
    }

    #[test]
    fn empty_generators_configmap_without_data_secret_with_empty_data() {
        let secret: SecretArgs = serde_json::from_value(json!({"name": "empty-secret"})).unwrap();
        let mut out =
            generate(&[cm_args(json!({"name": "x"}))], &[secret], None, &no_files).unwrap();
        assert!(out[0].value.get("data").is_none());
        assert_eq!(out[1].value["data"], json!({}));
        hash::apply_hash_suffixes(&mut out).unwrap();
        // kubectl kustomize v5.5.0 (case n22).
        assert_eq!(out[0].name(), "x-6ct58987ht");
        assert_eq!(out[1].name(), "empty-secret-46f8b28mk5");
    }

    fn gen_cm(args: Value) -> Resource {
        generate_config_map(&cm_args(args), None, &no_files).unwrap()
    }

    #[test]
    fn merge_keeps_identity_and_merges_data_and_metadata() {
        let mut base = gen_cm(
            json!({"name": "cm", "namespace": "b-ns", "literals": ["a=1", "b=2"],
            "options": {"labels": {"bl": "1"}, "annotations": {"ba": "1"}}}),
        );
        base.meta.previous_names.push((None, "cm".into()));
        let mut rs = vec![base];
        let over = gen_cm(
            json!({"name": "cm", "behavior": "merge", "literals": ["b=3", "c=4"], "options": {"labels": {"ol": "1"}}}),
        );
        absorb_one(&mut rs, over).unwrap();
        assert_eq!(rs.len(), 1);
        assert_eq!(rs[0].value["data"], json!({"a": "1", "b": "3", "c": "4"}));
        assert_eq!(
            rs[0].value["metadata"]["labels"],
            json!({"bl": "1", "ol": "1"})
        );
        assert_eq!(rs[0].value["metadata"]["annotations"], json!({"ba": "1"}));
        assert_eq!(rs[0].namespace(), Some("b-ns"));
        assert_eq!(rs[0].meta.previous_names, vec![(None, "cm".to_string())]);
        hash::apply_hash_suffixes(&mut rs).unwrap();
        // kubectl kustomize of the same base/overlay: cm-fbcmkbc66h.
        assert_eq!(rs[0].name(), "cm-fbcmkbc66h");
    }

    #[test]
    fn replace_drops_old_data_and_hash_needs_both_sides() {
        for (old_disable, new_disable) in
            [(true, true), (true, false), (false, true), (false, false)]
        {
            let mut rs = vec![gen_cm(
                json!({"name": "cm", "literals": ["a=1"], "options": {"disableNameSuffixHash": old_disable}}),
            )];
            let new = gen_cm(
                json!({"name": "cm", "behavior": "replace", "literals": ["b=1"],
                "options": {"disableNameSuffixHash": new_disable}}),
            );
            absorb_one(&mut rs, new).unwrap();
            assert_eq!(rs[0].value["data"], json!({"b": "1"}));
            hash::apply_hash_suffixes(&mut rs).unwrap();
            let want = if !old_disable && !new_disable {
                "cm-k2572242mg"
            } else {
                "cm"
            };
            assert_eq!(
                rs[0].name(),
                want,
                "old_disable={old_disable} new_disable={new_disable}"
            );
        }
    }

    #[test]
    fn merge_into_plain_resource_matches_by_previous_id() {
        let mut plain = Resource::new(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "base-cm", "namespace": "x", "labels": {"x": "y"}}, "data": {"a": "1"}}),
            None,
        );
        // The base renamed it (prefix) after moving it (namespace): previous ids (None, cm)
        // and (x, cm).
        plain.meta.previous_names.push((None, "cm".into()));
        plain
            .meta
            .previous_names
            .push((Some("x".into()), "cm".into()));
        let mut rs = vec![plain];
        absorb_one(
            &mut rs,
            gen_cm(json!({"name": "cm", "behavior": "merge", "literals": ["b=1"]})),
        )
        .unwrap();
        assert_eq!(rs[0].name(), "base-cm");
        assert_eq!(rs[0].namespace(), Some("x"));
        assert_eq!(rs[0].value["data"], json!({"a": "1", "b": "1"}));
        assert_eq!(rs[0].value["metadata"]["labels"], json!({"x": "y"}));
        assert!(!rs[0].meta.needs_hash_suffix);
    }

    #[test]
    fn create_on_existing_and_merge_on_missing_fail() {
        let mut rs = vec![gen_cm(json!({"name": "cm"}))];
        let e =
            absorb_one(&mut rs, gen_cm(json!({"name": "cm", "literals": ["b=3"]}))).unwrap_err();
        assert!(matches!(e, GeneratorError::TargetExists { ref name, .. } if name == "cm"));
        let e = absorb_one(
            &mut rs,
            gen_cm(json!({"name": "nope", "behavior": "merge"})),
        )
        .unwrap_err();
        assert!(
            matches!(e, GeneratorError::TargetMissing { ref behavior, .. } if behavior == "merge")
        );
        // The namespace must match (kubectl kustomize v5.5: "does not exist; cannot merge")...
        let e = absorb_one(
            &mut rs,
            gen_cm(json!({"name": "cm", "namespace": "other", "behavior": "merge"})),
        )
        .unwrap_err();
        assert!(matches!(e, GeneratorError::TargetMissing { .. }));
        // ...so `create` in another namespace is a new object, and `default` equals absent.
        absorb_one(&mut rs, gen_cm(json!({"name": "cm", "namespace": "other"}))).unwrap();
        absorb_one(
            &mut rs,
            gen_cm(json!({"name": "cm", "namespace": "default", "behavior": "merge"})),
        )
        .unwrap();
        assert_eq!(rs.len(), 2);
        // Two objects sharing one id (e.g. an earlier rename made them collide) are ambiguous.
        let mut twin = gen_cm(json!({"name": "renamed"}));
        twin.meta.previous_names.push((None, "cm".into()));
        rs.push(twin);
        let e =
            absorb_one(&mut rs, gen_cm(json!({"name": "cm", "behavior": "merge"}))).unwrap_err();
        assert!(matches!(
            e,
            GeneratorError::TargetAmbiguous { count: 2, .. }
        ));
        // A secret never merges into a ConfigMap of the same name.
        let sec = generate_secret(
            &serde_json::from_value(json!({"name": "cm", "behavior": "replace"})).unwrap(),
            None,
            &no_files,
        )
        .unwrap();
        assert!(matches!(
            absorb_one(&mut rs, sec),
            Err(GeneratorError::TargetMissing { .. })
        ));
    }
}
