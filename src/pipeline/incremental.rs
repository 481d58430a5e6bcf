//! The render journal and the incremental render: what the last full render read and wrote,
//! replayed to skip a render whose inputs and output are unchanged, or to re-render only the
//! components whose files changed (docs/scale.md).

use super::*;

/// What a journal holds besides its plan records.
pub(super) struct JournalParts<'a> {
    pub(super) load_reads: Vec<crate::cache::Read>,
    pub(super) component_reads: Vec<crate::cache::ComponentReads>,
    pub(super) root: PathBuf,
    pub(super) sources: Vec<PathBuf>,
    pub(super) plans: usize,
    /// In path order.
    pub(super) files: Vec<crate::write::Written>,
    pub(super) expressions: &'a [crate::kargo::expressions::ExpressionInManifest],
    pub(super) secrets: Vec<(String, String)>,
    pub(super) warnings: Vec<crate::cache::Replayed>,
    pub(super) crd_kinds: Vec<(String, String)>,
}

/// Writes the journal of a render whose tree is now in `opts.write_to`: `outputs` become
/// its plan records, their reads one sorted list the records index into. Best effort.
pub(super) fn store_journal(
    slot: &crate::cache::JournalSlot,
    opts: &RenderOptions,
    parts: JournalParts,
    outputs: Vec<PlanOutput>,
) {
    // Each distinct read cloned once (every environment of a component reads the same).
    let distinct: std::collections::BTreeSet<&crate::cache::Read> =
        outputs.iter().flat_map(|o| o.reads.iter()).collect();
    let render_reads: Vec<crate::cache::Read> = distinct.into_iter().cloned().collect();
    let index = |v: Result<usize, usize>| v.ok().and_then(|i| u32::try_from(i).ok());
    let mut records = Vec::with_capacity(outputs.len());
    for o in outputs {
        let reads: Option<Vec<u32>> = o
            .reads
            .iter()
            .map(|r| index(render_reads.binary_search(r)))
            .collect();
        let files: Option<Vec<u32>> = o
            .files
            .iter()
            .map(|p| index(parts.files.binary_search_by(|w| w.path.as_str().cmp(p))))
            .collect();
        let (Some(reads), Some(files)) = (reads, files) else {
            // A plan file missing from the tree (a selection wrote nothing): no journal.
            return;
        };
        records.push(crate::cache::PlanRecord {
            project: o.project,
            environment: o.environment,
            component: o.component,
            dir: o.dir,
            key: o.key,
            facts: o.facts,
            images: o.images,
            reads,
            files,
            cluster_kinds: o.cluster_kinds,
            warnings: o.warnings,
            unvalidated: o.unvalidated,
            cel_skipped: o.cel_skipped,
        });
    }
    write_journal(slot, opts, parts, render_reads, records);
}

/// Writes a journal of `parts`, `render_reads` (sorted) and `records` (indexing into it and
/// into `parts.files`). Best effort.
pub(super) fn write_journal(
    slot: &crate::cache::JournalSlot,
    opts: &RenderOptions,
    parts: JournalParts,
    render_reads: Vec<crate::cache::Read>,
    records: Vec<crate::cache::PlanRecord>,
) {
    let Ok(marker) = crate::fs::read_regular(&opts.write_to.join(crate::marker::MARKER_FILE))
    else {
        return;
    };
    let _ = slot.store(crate::cache::Journal {
        key: String::new(),
        load_reads: parts.load_reads,
        component_reads: parts.component_reads,
        render_reads,
        root: parts.root,
        sources: parts.sources,
        plans: parts.plans,
        records,
        files: parts.files,
        marker: kiln_base::digest::sha256_hex(&marker),
        expressions: parts
            .expressions
            .iter()
            .map(|e| {
                [
                    e.file.clone(),
                    e.resource.clone(),
                    e.pointer.clone(),
                    e.text.clone(),
                ]
            })
            .collect(),
        secrets: parts.secrets,
        warnings: parts.warnings,
        crd_kinds: parts.crd_kinds,
    });
}

/// A render after a change that reached only some BuildPlans: load's calls for the
/// platform itself all give the same results (see [`crate::cache::Journal`]), so the
/// platform's own model is the journal's. `changes` names what did change:
/// - calls of the render of some BuildPlans (a file of a kustomize tree, a chart): those
///   BuildPlans are the journal's; each is checked to have the cache key recorded (so it
///   is the one of the full evaluation);
/// - calls of the load of some components (their `component.yaml`, a `files:` manifest, a
///   generator file): those components are loaded, validated and evaluated again, and
///   their BuildPlans must have the recorded ids (project, environment, instance: no plan
///   added or gone) and [`crate::cache::plan_facts`] (what the Kargo and Argo CD objects
///   read of them besides images), so those objects are the journal's; where their images
///   changed, the Kargo and Argo CD files of their project are generated again, from that
///   project's BuildPlans (its other components are loaded and evaluated for that, each
///   BuildPlan checked to have the recorded key), and must be the files it had.
///
/// Only the components of those BuildPlans are loaded ([`crate::load::LoadOptions::only`]) and
/// only their BuildPlans rendered, their files replacing the ones they wrote before; the
/// rest of the tree is reused from the previous write without reading it (the write checks
/// each reused file's `stat`).
///
/// `None`, and nothing written, whenever that is not provably what a full render would
/// produce; the caller then renders in full: a component that fails to load, validate or
/// evaluate (the full render reports the error), BuildPlans that evaluate differently than
/// allowed above, cluster-scoped kinds that change (they are in the Argo CD AppProject), a
/// file path another plan also writes, a Secret under `spec.secrets: forbid`, an output
/// file changed by hand; and a component's load change under a selection or `--shard`
/// (which BuildPlans the full render would then keep is not known from a partial load).
pub(super) fn render_incremental(
    opts: &RenderOptions,
    slot: &crate::cache::JournalSlot,
    j: &crate::cache::Journal,
    recorded: std::time::SystemTime,
    changes: &crate::cache::Changes,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Option<RenderSummary>, KilnError> {
    let mut timings = Timings::default();
    let reloaded = &changes.components;
    if !reloaded.is_empty() && (opts.selection != Selection::default() || opts.shard.is_some()) {
        return Ok(None);
    }
    let affected = j.affected(changes);
    if affected.is_empty() {
        return Ok(None);
    }
    let t = Instant::now();
    let fs = opts.fs.as_ref();
    // The changed components are loaded even when no plan of theirs is recorded: a full
    // render would load (and so check) them too.
    // So are all components of their projects, whose Kargo objects are generated again if
    // the images of the changed components changed (a project is a few components, so this
    // costs little even when the images did not change).
    let projects: BTreeSet<&str> = j
        .records
        .iter()
        .filter(|r| reloaded.contains(&r.dir))
        .map(|r| r.project.as_str())
        .collect();
    let only: BTreeSet<PathBuf> = affected
        .iter()
        .map(|&i| j.records[i].dir.clone())
        .chain(reloaded.iter().cloned())
        .chain(
            j.records
                .iter()
                .filter(|r| projects.contains(r.project.as_str()))
                .map(|r| r.dir.clone()),
        )
        .collect();
    let load_fs = crate::cache::Recorder::new(fs);
    let load_opts = LoadOptions {
        root: opts.root.as_deref(),
        only: Some(&only),
        scopes: Some(&load_fs),
        sources: None,
        parsed: None,
    };
    let Ok(loaded) = load(&load_fs, &opts.platform_dir, &load_opts) else {
        return Ok(None);
    };
    timings.load = t.elapsed();
    let t = Instant::now();
    let Ok(platform) = validate(loaded) else {
        return Ok(None);
    };
    timings.spec = t.elapsed();
    let t = Instant::now();
    // The selection as given, less the component names (the instances left out of the
    // platform would be unknown); it only narrows what is evaluated.
    let selection = Selection {
        components: Vec::new(),
        ..opts.selection.clone()
    };
    let Ok(evaluated) = evaluate(&platform, &selection) else {
        return Ok(None);
    };
    let Some(cache) = open_cache(opts) else {
        return Ok(None);
    };
    let mut by_id: std::collections::BTreeMap<(&str, &str, &str), &BuildPlan> = Default::default();
    for p in &evaluated {
        by_id.insert((&p.project, &p.environment, &p.component), p);
    }
    let mut plans = Vec::with_capacity(affected.len());
    // Projects whose Kargo and Argo CD files are generated again.
    let mut regenerate: BTreeSet<String> = BTreeSet::new();
    let mut images_now: std::collections::BTreeMap<usize, String> = Default::default();
    for &i in &affected {
        let r = &j.records[i];
        let Some(p) = by_id.get(&(
            r.project.as_str(),
            r.environment.as_str(),
            r.component.as_str(),
        )) else {
            return Ok(None);
        };
        let same = if reloaded.contains(&r.dir) {
            if crate::cache::plan_images(p) != r.images {
                regenerate.insert(r.project.clone());
            }
            p.source.dir == r.dir && crate::cache::plan_facts(p) == r.facts
        } else {
            cache.key(p) == r.key
        };
        if !same {
            return Ok(None);
        }
        images_now.insert(i, crate::cache::plan_images(p));
        plans.push((*p).clone());
    }
    // Every BuildPlan of a reloaded component is one of the recorded ones matched above
    // (ids are unique), so none was added.
    let recorded_reloaded = affected
        .iter()
        .filter(|&&i| reloaded.contains(&j.records[i].dir))
        .count();
    let evaluated_reloaded = evaluated
        .iter()
        .filter(|p| reloaded.contains(&p.source.dir))
        .count();
    if recorded_reloaded != evaluated_reloaded {
        return Ok(None);
    }
    let Some(kargo) = regenerate_kargo(
        opts,
        j,
        &platform,
        &evaluated,
        &regenerate,
        reloaded,
        &cache,
    ) else {
        return Ok(None);
    };
    timings.evaluate = t.elapsed();

    let t = Instant::now();
    let rooted = crate::fs::RootedFs::new(fs, platform.root.clone());
    // The journal is used only by platforms without remote sources or bases.
    let Ok(emitted) = render_plans(
        &mut plans,
        &platform.sources,
        // Only a platform without remote sources renders incrementally.
        (&rooted, Default::default()),
        Some(&cache),
        opts.layout,
        progress,
        &mut timings,
    ) else {
        return Ok(None);
    };
    timings.render = t.elapsed();

    let t = Instant::now();
    // Which files of the previous tree each plan owned; a file two plans wrote (the later
    // one won) cannot be split between them.
    let mut owners = vec![0u8; j.files.len()];
    for r in &j.records {
        for &f in &r.files {
            if let Some(o) = owners.get_mut(f as usize) {
                *o = o.saturating_add(1);
            }
        }
    }
    let mut old: BTreeSet<usize> = BTreeSet::new();
    for (&i, e) in affected.iter().zip(&emitted) {
        let mut before = BTreeSet::new();
        for &f in &j.records[i].files {
            let Some(w) = j.files.get(f as usize) else {
                return Ok(None);
            };
            if owners[f as usize] != 1 {
                return Ok(None);
            }
            old.insert(f as usize);
            before.insert(w.path.as_str());
        }
        // Only new contents of the same files: a plan that now writes other files (a kind
        // added or gone) goes through the full render and its pruning.
        let after: BTreeSet<&str> = e.files.iter().map(|(p, _)| p.as_str()).collect();
        if before != after {
            return Ok(None);
        }
    }
    let affected_set: BTreeSet<usize> = affected.iter().copied().collect();
    let kinds_before: BTreeSet<&(String, String)> =
        j.records.iter().flat_map(|r| &r.cluster_kinds).collect();
    let mut kinds_after: BTreeSet<&(String, String)> = j
        .records
        .iter()
        .enumerate()
        .filter(|(i, _)| !affected_set.contains(i))
        .flat_map(|(_, r)| &r.cluster_kinds)
        .collect();
    kinds_after.extend(emitted.iter().flat_map(|e| &e.cluster_kinds));
    if kinds_before != kinds_after {
        return Ok(None);
    }
    // The re-rendered plans' warnings, the others' as recorded.
    let mut plan_warnings: Vec<Vec<Replayed>> = emitted
        .iter()
        .map(|e| e.warnings.iter().map(Replayed::from).collect())
        .collect();
    let mut fresh = ArtifactSet::new();
    for e in &emitted {
        for (path, bytes) in &e.files {
            fresh.insert(path.clone(), bytes.clone());
        }
    }
    let mut plan_unvalidated: Vec<Vec<(String, usize)>> = vec![Vec::new(); emitted.len()];
    let mut plan_skipped: Vec<usize> = vec![0; emitted.len()];
    let mut crd_kinds: BTreeSet<(String, String)> = j.crd_kinds.iter().cloned().collect();
    if opts.validate {
        let checked = validate_fresh(&fresh, &platform, &plans, &emitted, opts)?;
        for (file, w) in checked.warnings {
            let on = emitted
                .iter()
                .position(|e| e.files.iter().any(|(p, _)| *p == file));
            if let Some(ws) = on.and_then(|i| plan_warnings.get_mut(i)) {
                ws.push(w);
            }
        }
        crd_kinds.extend(checked.crd_kinds);
        // A custom resource whose CRD another component renders has its schema in the full
        // render: not counted here.
        let has_crd = |key: &str| {
            let (group, kind) = crate::conform::group_kind(key);
            crd_kinds.contains(&(group.to_string(), kind.to_string()))
        };
        for ((of_plan, skipped), counts) in plan_unvalidated
            .iter_mut()
            .zip(plan_skipped.iter_mut())
            .zip(checked.counts)
        {
            let kinds = counts.unvalidated.into_iter();
            *of_plan = kinds.filter(|(k, _)| !has_crd(k)).collect();
            *skipped = counts.skipped_rules;
        }
    }
    let mut warnings: Vec<Replayed> = Vec::new();
    let mut unvalidated: std::collections::BTreeMap<String, usize> = Default::default();
    let mut skipped_rules = 0;
    let mut fresh_warnings = plan_warnings
        .iter()
        .zip(&plan_unvalidated)
        .zip(&plan_skipped);
    for (i, r) in j.records.iter().enumerate() {
        let (of_plan, kinds, skipped) = match affected_set.contains(&i) {
            true => fresh_warnings
                .next()
                .map_or((&[][..], &[][..], 0), |((w, k), s)| {
                    (w.as_slice(), k.as_slice(), *s)
                }),
            false => (
                r.warnings.as_slice(),
                r.unvalidated.as_slice(),
                r.cel_skipped,
            ),
        };
        skipped_rules += skipped;
        for (kind, n) in kinds {
            *unvalidated.entry(kind.clone()).or_default() += n;
        }
        for w in of_plan {
            // One line per value and place: every environment of a component says the same.
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
    }
    // The counts first, as a full render prints them.
    let counts = crate::conform::summary_lines(&unvalidated, skipped_rules);
    let counted = counts.into_iter().map(|line| Replayed { line, json: None });
    warnings.splice(0..0, counted);
    // The regenerated Kargo and Argo CD files replace exactly the ones their projects had:
    // files no plan wrote, under the project's directory.
    let regenerated_before = j
        .files
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            owners[*i] == 0
                && regenerate.iter().any(|p| {
                    w.path
                        .strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('/'))
                })
        })
        .count();
    if regenerated_before != kargo.len() {
        return Ok(None);
    }
    for (path, bytes) in kargo.files {
        let Ok(i) = j.files.binary_search_by(|w| w.path.as_str().cmp(&path)) else {
            return Ok(None);
        };
        if owners[i] != 0 || fresh.files.contains_key(&path) {
            return Ok(None);
        }
        old.insert(i);
        fresh.insert(path, bytes);
    }
    let mut set = ArtifactSet::new();
    let mut reused = BTreeSet::new();
    let mut digests: std::collections::BTreeMap<String, String> = Default::default();
    for (i, w) in j.files.iter().enumerate() {
        if old.contains(&i) {
            continue;
        }
        if fresh.files.contains_key(&w.path) {
            // A new file of a re-rendered plan where another plan (or Kargo) writes.
            return Ok(None);
        }
        set.insert(w.path.clone(), Vec::new());
        reused.insert(w.path.clone());
        digests.insert(w.path.clone(), w.digest.clone());
    }
    for (path, bytes) in &fresh.files {
        digests.insert(path.clone(), kiln_base::digest::sha256_hex(bytes));
        set.insert(path.clone(), bytes.clone());
    }
    let new_secrets = secrets_by_file(&fresh);
    if platform.secrets == crate::spec::SecretPolicy::Forbid && !new_secrets.is_empty() {
        return Ok(None);
    }
    // Findings of the files rewritten or removed are replaced by those of the new files.
    let replaced =
        |file: &str| fresh.files.contains_key(file) || old.iter().any(|&i| j.files[i].path == file);
    let mut secrets: Vec<(String, String)> = j
        .secrets
        .iter()
        .filter(|(f, _)| !replaced(f))
        .cloned()
        .chain(new_secrets)
        .collect();
    secrets.sort_by(|a, b| a.0.cmp(&b.0));
    let mut expressions: Vec<crate::kargo::expressions::ExpressionInManifest> = j
        .expressions
        .iter()
        .filter(|e| !replaced(&e[0]))
        .map(
            |[file, resource, pointer, text]| crate::kargo::expressions::ExpressionInManifest {
                file: file.clone(),
                resource: resource.clone(),
                pointer: pointer.clone(),
                text: text.clone(),
            },
        )
        .chain(crate::kargo::expressions::scan(&fresh))
        .collect();
    expressions.sort_by(|a, b| a.file.cmp(&b.file));
    timings.emit = t.elapsed();

    let t = Instant::now();
    crate::write::check_target(&opts.write_to, &j.root, &j.sources).map_err(KilnError::Write)?;
    let scope = slice_scope(set.paths(), &opts.selection);
    let known = crate::write::Known {
        files: j.files.iter().map(|w| (w.path.as_str(), w)).collect(),
        recorded: Some(recorded),
        digests: Some(&digests),
        reused: Some(&reused),
    };
    slot.forget();
    let environments = platform.environment_names();
    let write_opts = WriteOptions {
        scope,
        known,
        environments: &environments,
    };
    let report = match write(&set, &opts.write_to, &write_opts) {
        Ok(r) => r,
        Err(crate::write::WriteError::ChangedDuringRender { .. }) => return Ok(None),
        Err(e) => return Err(KilnError::Write(e)),
    };
    // The journal of the new tree: the reused files' records, the new files' stamps.
    if let Ok(new_files) = crate::write::written(&fresh, &opts.write_to, &digests) {
        let mut files: Vec<crate::write::Written> = j
            .files
            .iter()
            .enumerate()
            .filter(|(i, _)| !old.contains(i))
            .map(|(_, w)| w.clone())
            .chain(new_files)
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        // The files are the recorded paths (each re-rendered plan and each regenerated
        // Kargo file wrote the files it had), so the records' file indexes still hold.
        if files.len() == j.files.len() {
            let (render_reads, mut records) =
                incremental_records(j, &affected, emitted, &images_now);
            let fresh = plan_warnings
                .into_iter()
                .zip(plan_unvalidated)
                .zip(plan_skipped);
            for (&i, ((w, kinds), skipped)) in affected.iter().zip(fresh) {
                if let Some(r) = records.get_mut(i) {
                    r.warnings = w;
                    r.unvalidated = kinds;
                    r.cel_skipped = skipped;
                }
            }
            // The reloaded components' load calls as made now; the others' as recorded.
            let mut component_reads = load_fs.scoped_reads();
            let now: BTreeSet<PathBuf> = component_reads.iter().map(|c| c.dir.clone()).collect();
            component_reads.extend(
                j.component_reads
                    .iter()
                    .filter(|c| !now.contains(&c.dir))
                    .cloned(),
            );
            component_reads.sort_by(|a, b| a.dir.cmp(&b.dir));
            write_journal(
                slot,
                opts,
                JournalParts {
                    load_reads: j.load_reads.clone(),
                    component_reads,
                    root: j.root.clone(),
                    sources: j.sources.clone(),
                    plans: j.plans,
                    files,
                    expressions: &expressions,
                    secrets: secrets.clone(),
                    warnings: warnings.clone(),
                    crd_kinds: crd_kinds.into_iter().collect(),
                },
                render_reads,
                records,
            );
        }
    }
    timings.write = t.elapsed();
    let (validation_warnings, validation_findings) = printed(&warnings);
    Ok(Some(RenderSummary {
        validation_warnings,
        validation_findings,
        plans: j.plans,
        files: set.len(),
        report,
        timings,
        cache: cache.stats(),
        expressions,
        secrets: secrets.into_iter().map(|(_, s)| s).collect(),
        journal: false,
        incremental: Some(plans.len()),
    }))
}

/// The Kargo and Argo CD files of `projects` generated again for an incremental render
/// ([`render_incremental`]) from `platform`, which holds every component of those projects,
/// and `evaluated`. Each BuildPlan of those projects must be one the journal recorded, and
/// have its recorded cache key unless its component is `reloaded` (the caller checked
/// those): so they are the BuildPlans a full render would give these objects. `None` when
/// that does not check out or generation fails (the full render reports why).
pub(super) fn regenerate_kargo(
    opts: &RenderOptions,
    j: &crate::cache::Journal,
    platform: &Platform,
    evaluated: &[BuildPlan],
    projects: &BTreeSet<String>,
    reloaded: &BTreeSet<PathBuf>,
    cache: &crate::cache::Cache,
) -> Option<ArtifactSet> {
    if projects.is_empty() {
        return Some(ArtifactSet::new());
    }
    let recorded: std::collections::BTreeMap<(&str, &str, &str), &crate::cache::PlanRecord> = j
        .records
        .iter()
        .filter(|r| projects.contains(&r.project))
        .map(|r| {
            (
                (
                    r.project.as_str(),
                    r.environment.as_str(),
                    r.component.as_str(),
                ),
                r,
            )
        })
        .collect();
    let plans: Vec<BuildPlan> = evaluated
        .iter()
        .filter(|p| projects.contains(&p.project))
        .cloned()
        .collect();
    if plans.len() != recorded.len() {
        return None;
    }
    for p in &plans {
        let r = recorded.get(&(
            p.project.as_str(),
            p.environment.as_str(),
            p.component.as_str(),
        ))?;
        if r.dir != p.source.dir || (!reloaded.contains(&r.dir) && cache.key(p) != r.key) {
            return None;
        }
    }
    let kargo = crate::kargo::KargoOptions {
        layout: opts.layout,
        projects: projects.iter().cloned().collect(),
        cluster_kinds: j
            .records
            .iter()
            .flat_map(|r| r.cluster_kinds.iter().cloned())
            .collect(),
        environment_branches: opts.environment_branches.clone(),
    };
    emit(ArtifactSet::new(), platform, &plans, Some(&kargo)).ok()
}

/// The render reads and plan records of the journal after an incremental render: the
/// recorded ones, with the `affected` plans' (in order, `emitted` for each) replaced. The
/// recorded reads list is kept and merged with the new reads, its indexes remapped, rather
/// than rebuilt from every plan's reads: that rebuild (100,000 reads cloned, sorted and
/// looked up at 10,000 BuildPlans) cost more than the rest of an incremental render.
/// Reads no record uses any more are dropped, so replaying the journal checks only live ones.
pub(super) fn incremental_records(
    j: &crate::cache::Journal,
    affected: &[usize],
    emitted: Vec<crate::cache::Emitted>,
    images_now: &std::collections::BTreeMap<usize, String>,
) -> (Vec<crate::cache::Read>, Vec<crate::cache::PlanRecord>) {
    use crate::cache::Read;
    let is_affected: BTreeSet<usize> = affected.iter().copied().collect();
    let mut used = vec![false; j.render_reads.len()];
    for (i, r) in j.records.iter().enumerate() {
        if !is_affected.contains(&i) {
            for &k in &r.reads {
                if let Some(u) = used.get_mut(k as usize) {
                    *u = true;
                }
            }
        }
    }
    let mut extra: Vec<Read> = Vec::new();
    for e in &emitted {
        for r in &e.reads {
            match j.render_reads.binary_search(r) {
                Ok(k) => used[k] = true,
                Err(_) => extra.push(r.clone()),
            }
        }
    }
    extra.sort();
    extra.dedup();
    // Merge the used recorded reads and the new ones, both sorted.
    let (mut old_at, mut extra_at) = (vec![u32::MAX; used.len()], vec![0u32; extra.len()]);
    let mut merged: Vec<Read> = Vec::with_capacity(used.len() + extra.len());
    let (mut a, mut b) = (0, 0);
    let index = |v: &Vec<Read>| u32::try_from(v.len()).unwrap_or(u32::MAX);
    loop {
        while a < used.len() && !used[a] {
            a += 1;
        }
        let take_old = match (j.render_reads.get(a), extra.get(b)) {
            (Some(o), Some(n)) => o < n,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if take_old {
            old_at[a] = index(&merged);
            merged.push(j.render_reads[a].clone());
            a += 1;
        } else {
            extra_at[b] = index(&merged);
            merged.push(extra[b].clone());
            b += 1;
        }
    }
    let at = |r: &Read| match j.render_reads.binary_search(r) {
        Ok(k) => old_at[k],
        Err(_) => extra.binary_search(r).map_or(u32::MAX, |x| extra_at[x]),
    };
    let mut emitted = emitted.into_iter();
    let records = j
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if !is_affected.contains(&i) {
                return crate::cache::PlanRecord {
                    reads: r.reads.iter().map(|&k| old_at[k as usize]).collect(),
                    ..r.clone()
                };
            }
            let e = emitted.next().unwrap_or_default();
            let mut reads: Vec<u32> = e.reads.iter().map(&at).collect();
            reads.sort_unstable();
            reads.dedup();
            crate::cache::PlanRecord {
                key: e.key,
                images: images_now.get(&i).cloned().unwrap_or_default(),
                cluster_kinds: e.cluster_kinds.into_iter().collect(),
                reads,
                ..r.clone()
            }
        })
        .collect();
    (merged, records)
}

/// The journal of a render with `opts` (see [`crate::cache::Journal`]): only with a cache,
/// and not with `--schema-dir` (its schemas are read outside the recorded calls).
pub(super) fn journal_slot(opts: &RenderOptions) -> Option<crate::cache::JournalSlot> {
    let dir = cache_dir(opts)?;
    if opts.schema_dir.is_some() {
        return None;
    }
    let out = crate::write::resolved_target(&opts.write_to)?;
    // Every option that can change the output.
    let options = format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        opts.fs.canonicalize(&opts.platform_dir).ok()?,
        opts.root,
        opts.layout,
        opts.selection,
        opts.shard,
        opts.environment_branches
    );
    Some(crate::cache::JournalSlot::new(
        dir,
        &options,
        &out,
        crate::cache::CacheKey::for_file(opts.cache_key.as_deref()),
    ))
}

/// The summary of a render skipped because the journal proves it would change nothing:
/// every recorded call gives the same result (checked by the caller), and the tree on disk
/// is the one recorded.
/// `None`: render in full.
pub(super) fn replay_journal(
    opts: &RenderOptions,
    j: &crate::cache::Journal,
    recorded: std::time::SystemTime,
) -> Result<Option<RenderSummary>, KilnError> {
    crate::write::check_target(&opts.write_to, &j.root, &j.sources).map_err(KilnError::Write)?;
    if !crate::write::verify_unchanged(&opts.write_to, &j.files, &j.marker, recorded) {
        return Ok(None);
    }
    let (validation_warnings, validation_findings) = printed(&j.warnings);
    Ok(Some(RenderSummary {
        validation_warnings,
        validation_findings,
        plans: j.plans,
        files: j.files.len(),
        report: WriteReport {
            unchanged: j.files.iter().map(|w| w.path.clone()).collect(),
            ..Default::default()
        },
        timings: Timings::default(),
        cache: Default::default(),
        expressions: j
            .expressions
            .iter()
            .map(|[file, resource, pointer, text]| {
                crate::kargo::expressions::ExpressionInManifest {
                    file: file.clone(),
                    resource: resource.clone(),
                    pointer: pointer.clone(),
                    text: text.clone(),
                }
            })
            .collect(),
        secrets: j.secrets.iter().map(|(_, s)| s.clone()).collect(),
        journal: true,
        incremental: None,
    }))
}

/// The Kubernetes validation of an incremental render: the objects of the re-rendered plans,
/// each against its schema (a render that skipped it wrote what the API server refuses). The
/// platform-wide conflicts are seen only among these plans, and a custom resource whose CRD
/// another component renders is left unvalidated, not refused: the full render
/// (`--no-cache`) checks those.
fn validate_fresh(
    fresh: &ArtifactSet,
    platform: &crate::validate::Platform,
    plans: &[BuildPlan],
    emitted: &[crate::cache::Emitted],
    opts: &RenderOptions,
) -> Result<FreshValidation, KilnError> {
    let files: Vec<Vec<String>> = emitted
        .iter()
        .map(|e| e.files.iter().map(|(p, _)| p.clone()).collect())
        .collect();
    let provenance: Vec<&[Option<crate::resource::Provenance>]> =
        emitted.iter().map(|e| e.provenance.as_slice()).collect();
    let report = crate::conform::validate_render(
        fresh,
        platform,
        plans,
        (&files, &provenance),
        opts.fs.as_ref(),
        false,
    )
    .map_err(KilnError::ConformSetup)?;
    conform_errors(&report, files.iter().zip(plans))?;
    let warnings = report_warnings(&report)
        .into_iter()
        .filter_map(|(file, w)| Some((file?.to_string(), w)))
        .filter(|(_, w)| {
            let code = w.json.as_ref().and_then(|j| j["code"].as_str());
            code != Some("kiln::k8s::no_schema")
        })
        .collect();
    Ok(FreshValidation {
        warnings,
        counts: report.by_plan,
        crd_kinds: report.crd_kinds,
    })
}

/// What [`validate_fresh`] found.
struct FreshValidation {
    /// The warnings, each with the file it is on.
    warnings: Vec<(String, Replayed)>,
    /// Each re-rendered plan's counts (its kinds with no schema among these plans' CRDs).
    counts: Vec<crate::conform::PlanCounts>,
    /// The (group, kind) of the CRDs among these plans.
    crd_kinds: BTreeSet<(String, String)>,
}
