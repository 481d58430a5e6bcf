//! The transformer phase of one kustomization: each field of `kustomization.yaml` becomes a
//! call into its transformer module, in kustomize's fixed order
//! (`kusttarget_configplugin.go`, v5.5): `patchesStrategicMerge`, `patches`, `namespace`,
//! `namePrefix`/`nameSuffix`, `labels` then `commonLabels`, `commonAnnotations`,
//! `patchesJson6902`, `replicas`, `images`, `replacements`; then the builtin transformer
//! configs of `transformers:` in their listed order.
//!
//! Where it sits: step 5 of `build::accumulate_target`. This file owns no transformation
//! itself: it adapts our kustomization types to each module's API, reads the files entries
//! name (through the loader, so load restrictions hold), and wraps every module error with
//! the kustomization entry (file, line, field) that configured it.

use super::build::{Accumulator, TransformerConfig, convert};
use super::error::{KustomizeError, Site};
use super::fieldspec::UserFieldSpec;
use super::load::{KustFile, Loader};
use super::name_reference::{self, NameReference, Referrer};
use super::patches::{
    self, ParsedPatch, PatchEntry, PatchError, PatchOptions, PatchSource, PatchStrategicMerge,
};
use super::{images, labels, name_prefix_suffix, namespace, replacements, replicas, target};
use crate::resource::Resource;
use crate::yaml;
use indexmap::IndexMap;
use serde_json::Value;

/// A patch error at `site`; a patch *file* that is not YAML is reported at the patch file's
/// own line (the kustomization entry is named in the message).
fn patch_error(site: Site, e: PatchError) -> KustomizeError {
    if let PatchError::PatchInvalidYaml(y) = &e
        && y.line.is_some()
        && !y.file.starts_with(&format!("{}: ", site.at.file))
    {
        let line = y.line.unwrap_or(0);
        let inner = Site {
            at: super::error::Location {
                file: y.file.clone(),
                doc: 0,
                pointer: String::new(),
                line,
                column: 1,
            },
            src: y.src.clone(),
            span: y.span,
        };
        return KustomizeError::transformer_msg(
            inner,
            format!(
                "the patch named at {} does not parse: {}",
                site.at, y.message
            ),
            "fix the YAML of the patch file",
        );
    }
    KustomizeError::transformer(site, &e)
}

/// Reads a patch's text: the file (relative to the kustomization) or the inline text.
/// Returns the text and the name YAML errors should carry.
fn patch_text(
    ldr: &Loader<'_>,
    kf: &KustFile,
    source: PatchSource<'_>,
    pointer: &str,
) -> Result<(String, String), KustomizeError> {
    match source {
        PatchSource::Path(path) => {
            let (file, text) = ldr
                .read_file(path)
                .map_err(|issue| ldr.error(issue, kf.site(pointer), "patch file", path))?;
            Ok((text, ldr.display(&file)))
        }
        PatchSource::Inline(text) => Ok((
            text.to_string(),
            format!(
                "{}: {}.patch",
                kf.display,
                super::error::pointer_to_field(pointer)
            ),
        )),
    }
}

/// Applies one patch. A target that names one object and matches nothing is accepted by
/// kustomize; kiln warns (the name is likely a typo or a stale rename), or fails under
/// `--strict`.
fn apply(
    ldr: &Loader<'_>,
    res: &mut Vec<Resource>,
    patch: &ParsedPatch,
    target: Option<&target::Selector>,
    options: &PatchOptions,
    site: impl Fn() -> Site,
) -> Result<(), KustomizeError> {
    let session = ldr.session();
    let options = PatchOptions {
        list_order: session.options.fixes.merge_order,
        ..*options
    };
    if matches!(patch, ParsedPatch::StrategicMerge(_)) {
        session.note_builtin_schema_use();
    }
    let openapi = session.openapi();
    let n = patches::apply_patch_with(res, patch, target, &options, openapi.as_ref())
        .map_err(|e| patch_error(site(), e))?;
    if n == 0
        && let Some(t) = target
        && t.names_single_object()
    {
        let e = PatchError::PatchTargetMissing {
            target: t.to_string(),
        };
        if session.options.strict {
            return Err(patch_error(site(), e));
        }
        session.warn(format!(
            "{}: {e} (kustomize applies it to nothing)",
            site().at
        ));
    }
    Ok(())
}

/// One `patches:`-shaped entry (also used by `PatchTransformer` configs).
fn run_patch_entry(
    ldr: &Loader<'_>,
    kf: &KustFile,
    res: &mut Vec<Resource>,
    entry: &PatchEntry,
    pointer: &str,
    json_only: bool,
) -> Result<(), KustomizeError> {
    // Located only on error: locating parses the kustomization file, and a kustomization
    // with many patches would pay that once per entry (quadratic in its size).
    let site = || kf.site(pointer);
    let source = entry.source().map_err(|e| patch_error(site(), e))?;
    let sub = match source {
        PatchSource::Path(_) => format!("{pointer}/path"),
        PatchSource::Inline(_) => format!("{pointer}/patch"),
    };
    let (text, name) = patch_text(ldr, kf, source, &sub)?;
    let parsed = if json_only {
        patches::parse_json6902(&name, &text)
    } else {
        patches::parse_patch(&name, &text)
    }
    .map_err(|e| patch_error(kf.site(&sub), e))?;
    apply(
        ldr,
        res,
        &parsed,
        entry.target.as_ref(),
        &entry.options,
        site,
    )
}

fn patch_entry_of(
    kf: &KustFile,
    p: &super::kustomization::Patch,
    pointer: &str,
) -> Result<PatchEntry, KustomizeError> {
    convert(p).map_err(|m| {
        KustomizeError::invalid(
            kf.site(pointer),
            m,
            "a patch entry has `path` or `patch`, an optional `target` and `options`",
        )
    })
}

/// Runs the transformers of `kf` over everything accumulated in `acc`.
pub fn run_transformers(
    ldr: &Loader<'_>,
    kf: &KustFile,
    acc: &mut Accumulator,
) -> Result<(), KustomizeError> {
    let k = &kf.kustomization;
    let config = &acc.config;
    let res = &mut acc.resources;

    for (i, item) in k.patches_strategic_merge.iter().enumerate() {
        let pointer = format!("/patchesStrategicMerge/{i}");
        let source = PatchStrategicMerge(item.clone());
        let (text, name) = patch_text(ldr, kf, source.source(), &pointer)?;
        let parsed = patches::parse_strategic_merge(&name, &text)
            .map_err(|e| patch_error(kf.site(&pointer), e))?;
        apply(ldr, res, &parsed, None, &PatchOptions::default(), || {
            kf.site(&pointer)
        })?;
    }
    for (i, p) in k.patches.iter().enumerate() {
        let pointer = format!("/patches/{i}");
        let entry = patch_entry_of(kf, p, &pointer)?;
        run_patch_entry(ldr, kf, res, &entry, &pointer, false)?;
    }

    let ns = namespace::NamespaceOptions {
        namespace: k.namespace.clone(),
        scope: ldr.session().options.fixes.scope,
        ..Default::default()
    };
    namespace::apply_namespace_with(res, &ns)
        .map_err(|e| KustomizeError::transformer(kf.site("/namespace"), &e))?;
    affix(res, &k.name_prefix, "", &config.name_prefix);
    affix(res, "", &k.name_suffix, &config.name_suffix);

    for (i, label) in k.labels.iter().enumerate() {
        let pointer = format!("/labels/{i}");
        let entry: labels::Label = convert(label).map_err(|m| {
            KustomizeError::invalid(kf.site(&pointer), m, "see kustomize's `labels` reference")
        })?;
        labels::apply_labels(res, &entry, &config.common_labels, &config.template_labels)
            .map_err(|e| KustomizeError::transformer(kf.site(&pointer), &e))?;
    }
    if !k.common_labels.is_empty() {
        labels::apply_common_labels(res, &k.common_labels, &config.common_labels)
            .map_err(|e| KustomizeError::transformer(kf.site("/commonLabels"), &e))?;
    }
    if !k.common_annotations.is_empty() {
        labels::apply_common_annotations(res, &k.common_annotations, &config.common_annotations)
            .map_err(|e| KustomizeError::transformer(kf.site("/commonAnnotations"), &e))?;
    }

    for (i, p) in k.patches_json6902.iter().enumerate() {
        let pointer = format!("/patchesJson6902/{i}");
        let entry = patch_entry_of(kf, p, &pointer)?;
        run_patch_entry(ldr, kf, res, &entry, &pointer, true)?;
    }

    for (i, r) in k.replicas.iter().enumerate() {
        let pointer = format!("/replicas/{i}");
        let entry: replicas::Replica = convert(r).map_err(|m| {
            KustomizeError::invalid(
                kf.site(&pointer),
                m,
                "a replicas entry has `name` and `count`",
            )
        })?;
        replicas::apply_replicas(res, std::slice::from_ref(&entry))
            .map_err(|e| KustomizeError::transformer(kf.site(&pointer), &e))?;
    }

    // `imageTags` is the legacy spelling; kustomize appends it to `images`.
    let image_entries = k
        .images
        .iter()
        .enumerate()
        .map(|(i, im)| (format!("/images/{i}"), im))
        .chain(
            k.image_tags
                .iter()
                .enumerate()
                .map(|(i, im)| (format!("/imageTags/{i}"), im)),
        );
    for (pointer, im) in image_entries {
        images::apply_images(res, std::slice::from_ref(im), &config.images)
            .map_err(|e| KustomizeError::transformer(kf.site(&pointer), &e))?;
    }

    for (i, r) in k.replacements.iter().enumerate() {
        let pointer = format!("/replacements/{i}");
        let list = if !r.path.is_empty() {
            load_replacements(ldr, kf, &r.path, &format!("{pointer}/path"))?
        } else {
            let inline = serde_json::json!({"source": r.source, "targets": r.targets});
            vec![convert::<replacements::Replacement>(&inline).map_err(|m| {
                KustomizeError::invalid(
                    kf.site(&pointer),
                    m,
                    "see kustomize's `replacements` reference",
                )
            })?]
        };
        replacements::apply_replacements(res, &list)
            .map_err(|e| KustomizeError::transformer(kf.site(&pointer), &e))?;
    }

    for (i, t) in k.transformers.iter().enumerate() {
        let pointer = format!("/transformers/{i}");
        for doc in transformer_configs(ldr, kf, t, &pointer)? {
            run_builtin(ldr, kf, res, &doc, &pointer)?;
        }
    }
    Ok(())
}

fn load_replacements(
    ldr: &Loader<'_>,
    kf: &KustFile,
    path: &str,
    pointer: &str,
) -> Result<Vec<replacements::Replacement>, KustomizeError> {
    let (file, text) = ldr
        .read_file(path)
        .map_err(|issue| ldr.error(issue, kf.site(pointer), "replacements file", path))?;
    let display = ldr.display(&file);
    let mut out = Vec::new();
    for doc in yaml::parse_stream(&display, &text).map_err(Box::new)? {
        out.extend(
            replacements::replacements_from_value(&display, &doc)
                .map_err(|e| KustomizeError::transformer(kf.site(pointer), &e))?,
        );
    }
    Ok(out)
}

/// The documents of a `transformers:` entry: inline YAML (kustomize first tries to read the
/// string as resources) or a file.
fn transformer_configs(
    ldr: &Loader<'_>,
    kf: &KustFile,
    entry: &str,
    pointer: &str,
) -> Result<Vec<Value>, KustomizeError> {
    if entry.contains('\n')
        && let Ok(docs) = yaml::parse_stream("inline transformer", entry)
        && docs.iter().all(|d| d.get("kind").is_some())
    {
        return Ok(docs);
    }
    if super::load::is_remote(entry) {
        return Err(KustomizeError::unsupported(
            kf.site(pointer),
            "transformers",
            format!("remote target `{entry}`"),
            "vendor the transformer config into the repository",
        ));
    }
    let (file, text) = ldr
        .read_file(entry)
        .map_err(|issue| ldr.error(issue, kf.site(pointer), "transformer config", entry))?;
    Ok(yaml::parse_stream(&ldr.display(&file), &text).map_err(Box::new)?)
}

fn field_specs_of(doc: &Value, key: &str) -> Vec<UserFieldSpec> {
    doc.get(key)
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

fn string_map(doc: &Value, key: &str) -> IndexMap<String, String> {
    doc.get(key)
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// One builtin transformer config (`apiVersion: builtin`, kustomize's plugin form).
fn run_builtin(
    ldr: &Loader<'_>,
    kf: &KustFile,
    res: &mut Vec<Resource>,
    doc: &Value,
    pointer: &str,
) -> Result<(), KustomizeError> {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let site = kf.site(pointer);
    let invalid = |m: String| {
        KustomizeError::invalid(
            site.clone(),
            format!("{kind}: {m}"),
            "see kustomize's builtin plugin reference",
        )
    };
    let str_of = |key: &str| {
        doc.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match kind {
        "PatchTransformer" => {
            let mut cfg = doc.clone();
            if let Some(m) = cfg.as_object_mut() {
                for k in ["apiVersion", "kind", "metadata"] {
                    m.shift_remove(k);
                }
            }
            let entry: PatchEntry =
                serde_json::from_value(cfg).map_err(|e| invalid(e.to_string()))?;
            run_patch_entry(ldr, kf, res, &entry, pointer, false)
        }
        "PatchJson6902Transformer" => {
            let target: Option<target::Selector> = doc
                .get("target")
                .cloned()
                .map(serde_json::from_value)
                .transpose()
                .map_err(|e| invalid(e.to_string()))?;
            let entry = PatchEntry {
                path: Some(str_of("path")).filter(|s| !s.is_empty()),
                patch: Some(str_of("jsonOp")).filter(|s| !s.is_empty()),
                target,
                options: PatchOptions::default(),
            };
            run_patch_entry(ldr, kf, res, &entry, pointer, true)
        }
        "PatchStrategicMergeTransformer" => {
            let mut sources: Vec<String> = doc
                .get("paths")
                .cloned()
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default();
            let inline = str_of("patches");
            let mut texts = Vec::new();
            for p in sources.drain(..) {
                texts.push(patch_text(ldr, kf, PatchSource::Path(&p), pointer)?);
            }
            if !inline.trim().is_empty() {
                texts.push((
                    inline,
                    format!(
                        "{}: {}.patches",
                        kf.display,
                        super::error::pointer_to_field(pointer)
                    ),
                ));
            }
            for (text, name) in texts {
                let parsed = patches::parse_strategic_merge(&name, &text)
                    .map_err(|e| patch_error(site.clone(), e))?;
                apply(ldr, res, &parsed, None, &PatchOptions::default(), || {
                    site.clone()
                })?;
            }
            Ok(())
        }
        "PrefixSuffixTransformer" | "PrefixTransformer" | "SuffixTransformer" => {
            let specs = field_specs_of(doc, "fieldSpecs");
            affix_fields(res, &str_of("prefix"), &str_of("suffix"), &specs);
            Ok(())
        }
        "LabelTransformer" => {
            let entry = labels::Label {
                pairs: string_map(doc, "labels"),
                fields: field_specs_of(doc, "fieldSpecs"),
                ..Default::default()
            };
            labels::apply_labels(res, &entry, &[], &[])
                .map_err(|e| KustomizeError::transformer(site.clone(), &e))
        }
        "AnnotationsTransformer" => labels::apply_common_annotations(
            res,
            &string_map(doc, "annotations"),
            &field_specs_of(doc, "fieldSpecs"),
        )
        .map_err(|e| KustomizeError::transformer(site.clone(), &e)),
        "NamespaceTransformer" => {
            let ns = doc
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let subjects = match str_of("setRoleBindingSubjects").as_str() {
                "allServiceAccounts" => namespace::RoleBindingSubjects::AllServiceAccounts,
                "none" => namespace::RoleBindingSubjects::None,
                _ => namespace::RoleBindingSubjects::DefaultOnly,
            };
            let opts = namespace::NamespaceOptions {
                namespace: ns,
                unset_only: doc
                    .get("unsetOnly")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                role_binding_subjects: subjects,
                scope: ldr.session().options.fixes.scope,
            };
            namespace::apply_namespace_with(res, &opts)
                .map_err(|e| KustomizeError::transformer(site.clone(), &e))
        }
        "ImageTagTransformer" => {
            let image: images::Image = doc
                .get("imageTag")
                .cloned()
                .map(serde_json::from_value)
                .transpose()
                .map_err(|e| invalid(e.to_string()))?
                .unwrap_or_default();
            images::apply_images(res, &[image], &field_specs_of(doc, "fieldSpecs"))
                .map_err(|e| KustomizeError::transformer(site.clone(), &e))
        }
        "ReplicaCountTransformer" => {
            let replica: replicas::Replica = doc
                .get("replica")
                .cloned()
                .map(serde_json::from_value)
                .transpose()
                .map_err(|e| invalid(e.to_string()))?
                .ok_or_else(|| invalid("missing `replica`".into()))?;
            replicas::apply_replicas(res, &[replica])
                .map_err(|e| KustomizeError::transformer(site.clone(), &e))
        }
        "ReplacementTransformer" => {
            let list = match doc.get("replacements") {
                Some(v) => replacements::replacements_from_value(&kf.display, v)
                    .map_err(|e| KustomizeError::transformer(site.clone(), &e))?,
                None => load_replacements(ldr, kf, &str_of("path"), pointer)?,
            };
            replacements::apply_replacements(res, &list)
                .map_err(|e| KustomizeError::transformer(site.clone(), &e))
        }
        other => Err(KustomizeError::unsupported(
            site.clone(),
            "transformers",
            format!(
                "transformer `{other}` is not a kustomize builtin (exec, container and Go plugins are not run)"
            ),
            "use one of the builtin transformer kinds (PatchTransformer, PrefixSuffixTransformer, LabelTransformer, …) or commit the transformed output",
        )),
    }
}

/// `namePrefix`/`nameSuffix`: the name itself through the prefix/suffix module (which keeps
/// the rename history), plus any custom `namePrefix`/`nameSuffix` field specs of
/// `configurations` (plain string edits, as kustomize's PrefixSuffixTransformer does there).
fn affix(res: &mut [Resource], prefix: &str, suffix: &str, extra: &[UserFieldSpec]) {
    if prefix.is_empty() && suffix.is_empty() {
        return;
    }
    name_prefix_suffix::apply_name_prefix(res, prefix);
    name_prefix_suffix::apply_name_suffix(res, suffix);
    let extra: Vec<UserFieldSpec> = extra
        .iter()
        .filter(|fs| fs.path != "metadata/name")
        .cloned()
        .collect();
    affix_fields(res, prefix, suffix, &extra);
}

/// A builtin PrefixSuffixTransformer with explicit field specs: `metadata/name` renames
/// (with history) the objects a spec selects; any other path gets the affixes on its string.
fn affix_fields(res: &mut [Resource], prefix: &str, suffix: &str, specs: &[UserFieldSpec]) {
    for spec in specs {
        for r in res.iter_mut().filter(|r| spec.applies_to(r)) {
            if spec.path == "metadata/name" {
                if name_prefix_suffix::is_rename_exempt(r) {
                    continue;
                }
                name_prefix_suffix::apply_name_prefix(std::slice::from_mut(r), prefix);
                name_prefix_suffix::apply_name_suffix(std::slice::from_mut(r), suffix);
            } else {
                spec.visit_mut(&mut r.value, &mut |v| {
                    if let Value::String(s) = v {
                        *s = format!("{prefix}{s}{suffix}");
                    }
                });
            }
        }
    }
}

/// kustomize's `FixBackReferences`: after every rename, references to renamed objects are
/// rewritten, with the builtin table extended by `configurations`' `nameReference` entries.
pub fn fix_name_references(
    resources: &mut [Resource],
    config: &TransformerConfig,
) -> Result<(), String> {
    if config.name_reference.is_empty() {
        return name_reference::fix_name_references(resources).map_err(|e| e.to_string());
    }
    let table = extended_table(config);
    name_reference::fix_name_references_with(resources, &table).map_err(|e| e.to_string())
}

/// The builtin name-reference table plus custom entries. The module's table holds
/// `&'static str`s, so custom strings are leaked: they are few (a configuration file's worth
/// per build) and live as long as the build's output anyway.
fn extended_table(config: &TransformerConfig) -> Vec<NameReference> {
    fn leak(s: &str) -> &'static str {
        Box::leak(s.to_string().into_boxed_str())
    }
    let mut table: Vec<NameReference> = name_reference::NAME_REFERENCES.to_vec();
    for nbr in &config.name_reference {
        let custom: Vec<Referrer> = nbr
            .field_specs
            .iter()
            .map(|fs| Referrer {
                group: leak(&fs.group),
                version: leak(&fs.version),
                kind: leak(&fs.kind),
                path: leak(&fs.path),
            })
            .collect();
        match table
            .iter_mut()
            .find(|t| t.kind == nbr.kind && (nbr.group.is_empty() || t.group == nbr.group))
        {
            Some(t) => {
                let mut all = t.referrers.to_vec();
                for c in custom {
                    if !all.iter().any(|r| {
                        r.kind == c.kind
                            && r.group == c.group
                            && r.version == c.version
                            && r.path == c.path
                    }) {
                        all.push(c);
                    }
                }
                t.referrers = Box::leak(all.into_boxed_slice());
            }
            None => table.push(NameReference {
                group: leak(&nbr.group),
                version: leak(&nbr.version),
                kind: leak(&nbr.kind),
                referrers: Box::leak(custom.into_boxed_slice()),
            }),
        }
    }
    table
}
