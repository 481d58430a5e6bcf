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

use crate::builtins::Builtin;
use crate::builtins::patch_transformer::{
    self, ParsedPatch, Patch, PatchError, PatchOptions, PatchSource, PatchStrategicMerge,
    TargetIndex,
};
use crate::builtins::prefix_suffix_transformer::affix_fields;
use crate::error::{KustomizeError, Site};
use crate::filters::nameref::{self, NameReference, Referrer};
use crate::filters::{imagetag, labels, namespace, prefix_suffix, replacement, replica_count};
use crate::krusty::build::{Accumulator, TransformerConfig};
use crate::krusty::load::{KustFile, Loader};
use crate::types::fieldspec::FieldSpec;
use crate::types::selector;
use crate::utils::{ORIGIN_ANNOTATION, TRANSFORMATIONS_ANNOTATION, set_annotation};
use kiln_base::resource::Resource;
use kiln_base::yaml;
use serde_json::Value;
use std::borrow::Cow;

/// A patch error at `site`; a patch *file* that is not YAML is reported at the patch file's
/// own line (the kustomization entry is named in the message).
fn patch_error(site: Site, e: PatchError) -> KustomizeError {
    if let PatchError::PatchInvalidYaml(y) = &e
        && y.line.is_some()
        && !y.file.starts_with(&format!("{}: ", site.at.file))
    {
        let line = y.line.unwrap_or(0);
        let inner = Site {
            at: kiln_base::diag::Loc {
                line,
                column: 1,
                ..kiln_base::diag::Loc::new(y.file.clone(), "")
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

/// A patch *file* (`name`, `text`) that does not parse, named at `site`: a JSON patch whose
/// operation is malformed (unknown `op`, missing `path`, …) is reported at that operation's
/// line and field in the file, the kustomization entry named in the message (repro A2: the
/// entry alone left the user to search the file); anything else as [`patch_error`].
fn patch_file_error(site: Site, e: PatchError, name: &str, text: &str) -> KustomizeError {
    use miette::Diagnostic as _;
    let PatchError::JsonPatchInvalid(j) = &e else {
        return patch_error(site, e);
    };
    let Some((index, member)) = j.invalid_member() else {
        return patch_error(site, e);
    };
    let pointer = match member {
        "" => format!("/{index}"),
        m => format!("/{index}/{m}"),
    };
    let inner = Site::new(name, text, 0, &pointer, false);
    let help = j.help().map(|h| h.to_string()).unwrap_or_default();
    let code = j.code().map(|c| format!(" [{c}]")).unwrap_or_default();
    KustomizeError::transformer_msg(
        inner,
        format!("the patch named at {} is invalid: {j}{code}", site.at),
        help,
    )
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
                kiln_base::pointer::field_path(pointer)
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
    target: Option<&selector::Selector>,
    options: &PatchOptions,
    index: Option<&mut TargetIndex>,
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
    let n =
        patch_transformer::apply_patch_with(res, patch, target, &options, openapi.as_ref(), index)
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
    entry: &Patch,
    pointer: &str,
    json_only: bool,
    index: Option<&mut TargetIndex>,
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
        patch_transformer::parse_json6902(&name, &text)
    } else {
        patch_transformer::parse_patch(&name, &text)
    }
    .map_err(|e| match source {
        PatchSource::Path(_) => patch_file_error(kf.site(&sub), e, &name, &text),
        PatchSource::Inline(_) => patch_error(kf.site(&sub), e),
    })?;
    apply(
        ldr,
        res,
        &parsed,
        entry.target.as_ref(),
        &entry.options,
        index,
        site,
    )
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
    let ran = |res: &mut [Resource], kind: &str| note_builtin(ldr, res, &kf.display, kind);

    for (i, item) in k.patches_strategic_merge.iter().enumerate() {
        let pointer = format!("/patchesStrategicMerge/{i}");
        let source = PatchStrategicMerge(item.clone());
        let (text, name) = patch_text(ldr, kf, source.source(), &pointer)?;
        let parsed = patch_transformer::parse_strategic_merge(&name, &text)
            .map_err(|e| patch_error(kf.site(&pointer), e))?;
        apply(
            ldr,
            res,
            &parsed,
            None,
            &PatchOptions::default(),
            None,
            || kf.site(&pointer),
        )?;
    }
    if !k.patches_strategic_merge.is_empty() {
        ran(res, "PatchStrategicMergeTransformer");
    }
    // One target index for all `patches:` entries (nothing else changes the objects between
    // them): a kustomization with N entries naming one object each is linear, not N × objects.
    let mut index = TargetIndex::default();
    for (i, p) in k.patches.iter().enumerate() {
        let pointer = format!("/patches/{i}");
        run_patch_entry(ldr, kf, res, p, &pointer, false, Some(&mut index))?;
        ran(res, "PatchTransformer");
    }

    let ns = namespace::NamespaceOptions {
        namespace: k.namespace.clone(),
        scope: ldr.session().options.fixes.scope,
        field_specs: config.namespace.clone(),
        ..Default::default()
    };
    namespace::apply_namespace_with(res, &ns)
        .map_err(|e| KustomizeError::transformer(kf.site("/namespace"), &e))?;
    if !k.namespace.is_empty() {
        ran(res, "NamespaceTransformer");
    }
    affix(res, &k.name_prefix, "", &config.name_prefix);
    if !k.name_prefix.is_empty() {
        ran(res, "PrefixTransformer");
    }
    affix(res, "", &k.name_suffix, &config.name_suffix);
    if !k.name_suffix.is_empty() {
        ran(res, "SuffixTransformer");
    }

    for (i, label) in k.labels.iter().enumerate() {
        let pointer = format!("/labels/{i}");
        // kustomize lets a field spec go without `path`; kiln refuses it at the entry.
        if label.fields.iter().any(|fs| fs.path.is_empty()) {
            return Err(KustomizeError::invalid(
                kf.site(&pointer),
                "missing field `path`",
                "see kustomize's `labels` reference",
            ));
        }
        labels::apply_labels(res, label, &config.common_labels, &config.template_labels)
            .map_err(|e| KustomizeError::transformer(kf.site(&pointer), &e))?;
        ran(res, "LabelTransformer");
    }
    if !k.common_labels.is_empty() {
        labels::apply_common_labels(res, &k.common_labels, &config.common_labels)
            .map_err(|e| KustomizeError::transformer(kf.site("/commonLabels"), &e))?;
    }
    // kustomize configures one LabelTransformer per `labels` entry plus one for
    // `commonLabels`, which runs (empty) whenever `labels` is set.
    if !k.labels.is_empty() || !k.common_labels.is_empty() {
        ran(res, "LabelTransformer");
    }
    if !k.common_annotations.is_empty() {
        labels::apply_common_annotations(res, &k.common_annotations, &config.common_annotations)
            .map_err(|e| KustomizeError::transformer(kf.site("/commonAnnotations"), &e))?;
        ran(res, "AnnotationsTransformer");
    }

    let mut index = TargetIndex::default();
    for (i, p) in k.patches_json6902.iter().enumerate() {
        let pointer = format!("/patchesJson6902/{i}");
        run_patch_entry(ldr, kf, res, p, &pointer, true, Some(&mut index))?;
        ran(res, "PatchJson6902Transformer");
    }

    for (i, r) in k.replicas.iter().enumerate() {
        let pointer = format!("/replicas/{i}");
        if r.name.is_empty() {
            return Err(KustomizeError::invalid(
                kf.site(&pointer),
                "missing field `name`",
                "a replicas entry has `name` and `count`",
            ));
        }
        replica_count::apply_replicas(res, std::slice::from_ref(r))
            .map_err(|e| KustomizeError::transformer(kf.site(&pointer), &e))?;
        ran(res, "ReplicaCountTransformer");
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
        imagetag::apply_images(res, std::slice::from_ref(im), &config.images)
            .map_err(|e| KustomizeError::transformer(kf.site(&pointer), &e))?;
        ran(res, "ImageTagTransformer");
    }

    for (i, r) in k.replacements.iter().enumerate() {
        let pointer = format!("/replacements/{i}");
        let list = if !r.path.is_empty() {
            load_replacements(ldr, kf, &r.path, &format!("{pointer}/path"))?
        } else {
            vec![r.inline()]
        };
        replacement::apply_replacements(res, &list)
            .map_err(|e| KustomizeError::transformer(kf.site(&pointer), &e))?;
    }
    // One ReplacementTransformer holds every entry.
    if !k.replacements.is_empty() {
        ran(res, "ReplacementTransformer");
    }

    for (i, t) in k.transformers.iter().enumerate() {
        let pointer = format!("/transformers/{i}");
        let inline = t.contains('\n');
        for doc in transformer_configs(ldr, kf, t, &pointer)? {
            run_builtin(ldr, kf, res, &doc, &pointer)?;
            // `OriginFromCustomPlugin`: the config's own file (the kustomization for an
            // inline config) and its apiVersion, kind, name and namespace.
            let meta = |f: &str| {
                doc.value
                    .get("metadata")
                    .and_then(|m| m.get(f))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let field = |f: &str| doc.value.get(f).and_then(Value::as_str).unwrap_or("");
            let configured_in = if inline { &kf.display } else { &doc.display };
            note(
                ldr,
                res,
                configured_in,
                [
                    field("apiVersion"),
                    field("kind"),
                    &meta("name"),
                    &meta("namespace"),
                ],
            );
        }
    }
    Ok(())
}

/// kustomize's `multiTransformer.Transform` (`api/internal/target/multitransformer.go`):
/// under `buildMetadata`, after each transformer, its origin is added to *every* object of
/// the accumulator (`AddTransformerAnnotation`), whether it changed the object or not. A
/// builtin's origin is the kustomization file and `{apiVersion: builtin, kind}`
/// (`kusttarget_configplugin.go` `configureBuiltinTransformers`).
fn note_builtin(ldr: &Loader<'_>, res: &mut [Resource], configured_in: &str, kind: &str) {
    note(ldr, res, configured_in, ["builtin", kind, "", ""]);
}

/// Adds one kyaml-marshalled `Origin` (`configuredIn`, then `configuredBy`'s non-empty
/// `apiVersion`, `kind`, `name`, `namespace`) to every object: as an item of its
/// transformations annotation, or, when the object has no origin annotation (a JSON patch
/// replaced its annotations), as its origin (`AddTransformerAnnotation`).
fn note(ldr: &Loader<'_>, res: &mut [Resource], configured_in: &str, by: [&str; 4]) {
    if !ldr.session().tracks_build_metadata() {
        return;
    }
    let mut origin = format!("configuredIn: {configured_in}\nconfiguredBy:\n");
    for (key, value) in ["apiVersion", "kind", "name", "namespace"].iter().zip(by) {
        if !value.is_empty() {
            origin.push_str(&format!("  {key}: {value}\n"));
        }
    }
    let item: String = origin
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{}{l}\n", if i == 0 { "- " } else { "  " }))
        .collect();
    for r in res {
        if r.annotation(ORIGIN_ANNOTATION).is_none() {
            set_annotation(r, ORIGIN_ANNOTATION, origin.clone());
            continue;
        }
        let list = r.annotation(TRANSFORMATIONS_ANNOTATION).unwrap_or("");
        let text = format!("{list}{item}");
        set_annotation(r, TRANSFORMATIONS_ANNOTATION, text);
    }
}

fn load_replacements(
    ldr: &Loader<'_>,
    kf: &KustFile,
    path: &str,
    pointer: &str,
) -> Result<Vec<replacement::Replacement>, KustomizeError> {
    let (file, text) = ldr
        .read_file(path)
        .map_err(|issue| ldr.error(issue, kf.site(pointer), "replacements file", path))?;
    let display = ldr.display(&file);
    let mut out = Vec::new();
    for doc in yaml::parse_stream(&display, &text).map_err(Box::new)? {
        out.extend(
            replacement::replacements_from_value(&display, &doc)
                .map_err(|e| KustomizeError::transformer(kf.site(pointer), &e))?,
        );
    }
    Ok(out)
}

/// One document of a `transformers:` entry, with what is needed to locate its fields.
struct ConfigDoc {
    /// The file as shown to the user (or the entry, for inline YAML).
    display: String,
    text: String,
    index: usize,
    value: Value,
}

/// The documents of a `transformers:` entry: inline YAML (kustomize first tries to read the
/// string as resources) or a file.
fn transformer_configs(
    ldr: &Loader<'_>,
    kf: &KustFile,
    entry: &str,
    pointer: &str,
) -> Result<Vec<ConfigDoc>, KustomizeError> {
    let docs = |display: String, text: String, values: Vec<Value>| {
        values
            .into_iter()
            .enumerate()
            .map(|(index, value)| ConfigDoc {
                display: display.clone(),
                text: text.clone(),
                index,
                value,
            })
            .collect()
    };
    if entry.contains('\n')
        && let Ok(values) = yaml::parse_stream("inline transformer", entry)
        && values.iter().all(|d| d.get("kind").is_some())
    {
        let display = format!(
            "{}: {}",
            kf.display,
            kiln_base::pointer::field_path(pointer)
        );
        return Ok(docs(display, entry.to_string(), values));
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
    let display = ldr.display(&file);
    let values = yaml::parse_stream(&display, &text).map_err(Box::new)?;
    Ok(docs(display, text, values))
}

/// One builtin transformer config (`apiVersion: builtin`, kustomize's plugin form), decoded
/// strictly by [`Builtin::from_config`]: a bad field is reported at its line in the config.
fn run_builtin(
    ldr: &Loader<'_>,
    kf: &KustFile,
    res: &mut Vec<Resource>,
    doc: &ConfigDoc,
    pointer: &str,
) -> Result<(), KustomizeError> {
    let kind = doc.value.get("kind").and_then(Value::as_str).unwrap_or("");
    let site = kf.site(pointer);
    let builtin = Builtin::from_config(&doc.value).map_err(|e| {
        KustomizeError::invalid(
            Site::new(&doc.display, &doc.text, doc.index, &e.pointer, true),
            format!("{kind}: {}", e.message),
            "see kustomize's builtin plugin reference for this kind's fields",
        )
    })?;
    let failed = |e: &dyn miette::Diagnostic| KustomizeError::transformer(site.clone(), e);
    match builtin {
        Some(Builtin::Patch(entry)) => run_patch_entry(ldr, kf, res, &entry, pointer, false, None),
        Some(Builtin::PatchJson6902(cfg)) => {
            run_patch_entry(ldr, kf, res, &cfg.patch(), pointer, true, None)
        }
        Some(Builtin::PatchStrategicMerge(cfg)) => {
            let mut texts = Vec::new();
            for p in &cfg.paths {
                texts.push(patch_text(ldr, kf, PatchSource::Path(p), pointer)?);
            }
            if !cfg.patches.trim().is_empty() {
                texts.push((
                    cfg.patches.clone(),
                    format!(
                        "{}: {}.patches",
                        kf.display,
                        kiln_base::pointer::field_path(pointer)
                    ),
                ));
            }
            for (text, name) in texts {
                let parsed = patch_transformer::parse_strategic_merge(&name, &text)
                    .map_err(|e| patch_error(site.clone(), e))?;
                apply(
                    ldr,
                    res,
                    &parsed,
                    None,
                    &PatchOptions::default(),
                    None,
                    || site.clone(),
                )?;
            }
            Ok(())
        }
        Some(Builtin::PrefixSuffix(cfg)) => {
            cfg.apply(res);
            Ok(())
        }
        Some(Builtin::Label(cfg)) => cfg.apply(res).map_err(|e| failed(&e)),
        Some(Builtin::Annotations(cfg)) => cfg.apply(res).map_err(|e| failed(&e)),
        Some(Builtin::Namespace(cfg)) => cfg
            .apply(res, ldr.session().options.fixes.scope)
            .map_err(|e| failed(&e)),
        Some(Builtin::ImageTag(cfg)) => cfg.apply(res).map_err(|e| failed(&e)),
        Some(Builtin::ReplicaCount(cfg)) => match cfg.apply(res) {
            Some(r) => r.map_err(|e| failed(&e)),
            None => Err(KustomizeError::invalid(
                site.clone(),
                format!("{kind}: missing `replica`"),
                "see kustomize's builtin plugin reference",
            )),
        },
        Some(Builtin::Replacement(cfg)) => {
            let list = match &cfg.replacements {
                Some(v) => {
                    replacement::replacements_from_value(&kf.display, v).map_err(|e| failed(&e))?
                }
                None => load_replacements(ldr, kf, &cfg.path, pointer)?,
            };
            replacement::apply_replacements(res, &list).map_err(|e| failed(&e))
        }
        None => Err(KustomizeError::unsupported(
            site.clone(),
            "transformers",
            format!(
                "transformer `{kind}` is not a kustomize builtin (exec, container and Go plugins are not run)"
            ),
            "use one of the builtin transformer kinds (PatchTransformer, PrefixSuffixTransformer, LabelTransformer, …) or commit the transformed output",
        )),
    }
}

/// `namePrefix`/`nameSuffix`: the name itself through the prefix/suffix module (which keeps
/// the rename history), plus any custom `namePrefix`/`nameSuffix` field specs of
/// `configurations` (plain string edits, as kustomize's PrefixSuffixTransformer does there).
fn affix(res: &mut [Resource], prefix: &str, suffix: &str, extra: &[FieldSpec]) {
    if prefix.is_empty() && suffix.is_empty() {
        return;
    }
    prefix_suffix::apply_name_prefix(res, prefix);
    prefix_suffix::apply_name_suffix(res, suffix);
    let extra: Vec<FieldSpec> = extra
        .iter()
        .filter(|fs| fs.path != "metadata/name")
        .cloned()
        .collect();
    affix_fields(res, prefix, suffix, &extra);
}

/// kustomize's `FixBackReferences`: after every rename, references to renamed objects are
/// rewritten, with the builtin table extended by `configurations`' `nameReference` entries.
pub fn fix_name_references(
    resources: &mut [Resource],
    config: &TransformerConfig,
) -> Result<(), String> {
    if config.name_reference.is_empty() {
        return nameref::fix_name_references(resources).map_err(|e| e.to_string());
    }
    let table = extended_table(config);
    nameref::fix_name_references_with(resources, &table).map_err(|e| e.to_string())
}

/// The builtin name-reference table plus custom entries (owned, for this build only).
fn extended_table(config: &TransformerConfig) -> Vec<NameReference> {
    let owned = |s: &str| Cow::Owned(s.to_string());
    let mut table: Vec<NameReference> = nameref::NAME_REFERENCES.to_vec();
    for nbr in &config.name_reference {
        let custom: Vec<Referrer> = nbr
            .field_specs
            .iter()
            .map(|fs| Referrer {
                group: owned(&fs.group),
                version: owned(&fs.version),
                kind: owned(&fs.kind),
                path: owned(&fs.path),
            })
            .collect();
        match table
            .iter_mut()
            .find(|t| t.kind == nbr.kind && (nbr.group.is_empty() || t.group == nbr.group))
        {
            Some(t) => {
                let all = t.referrers.to_mut();
                for c in custom {
                    if !all.contains(&c) {
                        all.push(c);
                    }
                }
            }
            None => table.push(NameReference {
                group: owned(&nbr.group),
                version: owned(&nbr.version),
                kind: owned(&nbr.kind),
                referrers: Cow::Owned(custom),
            }),
        }
    }
    table
}
