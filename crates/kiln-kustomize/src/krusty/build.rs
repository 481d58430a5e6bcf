//! The build orchestration of the kustomize engine: a kustomization directory in, the
//! resources kustomize would print out — in kustomize's order of operations
//! (`api/internal/target/kusttarget.go`, v5.5):
//!
//! 1. **accumulate** the `resources` (and legacy `bases`): files are read, directories are
//!    built recursively, each into its own accumulator, then appended (duplicate ids are an
//!    error);
//! 2. read `configurations` (custom field specs), merged into the accumulator's config;
//! 3. run the **generators** (`configMapGenerator`, then `secretGenerator`, then
//!    `helmCharts` through kiln's Helm engine), absorbing their output with
//!    `behavior: create|merge|replace`;
//! 4. apply the **components**, in order, to the *same* accumulator (a component sees and
//!    changes everything accumulated so far);
//! 5. run the **transformers** in kustomize's fixed order: `patchesStrategicMerge`, `patches`,
//!    `namespace`, `namePrefix`/`nameSuffix`, `labels` then `commonLabels`,
//!    `commonAnnotations`, `patchesJson6902`, `replicas`, `images`, `replacements`; then the
//!    builtin transformer configs listed under `transformers:`;
//! 6. remember `vars`;
//!
//! and only at the very top, once: the **hash suffix** of generated names, the **name
//! reference** fix-up, **vars** substitution, dropping `local-config` objects, and the
//! **sort** (`sortOptions`, legacy order by default).
//!
//! Invariant: everything read goes through [`kiln_base::fs::FileSystem`] and the load restrictor;
//! no step depends on the clock or the environment, so a build is a pure function of its
//! files. Lookups by id go through an index, so the build is linear in the number of objects.

use crate::builtins::sort_order_transformer;
use crate::error::{KustomizeError, Site};
use crate::filters::namespace::Scope;
use crate::filters::patch_strategic_merge::ListOrder;
use crate::filters::refvar::VarDecl;
use crate::hash;
use crate::konfig::openapi::{CustomSchema, OpenApi};
pub use crate::konfig::transformer_config::{NameBackReference, TransformerConfig};
use crate::krusty::load::{
    Entry, KustFile, LoadRestrictor, Loader, is_remote, load_kustomization, parse_resources,
};
use crate::types::kustomization::Kustomization;
use crate::utils::{ORIGIN_ANNOTATION, TRANSFORMATIONS_ANNOTATION, set_annotation};
use kiln_base::fs::FileSystem;
use kiln_base::resource::{ResId, Resource};
use kiln_base::yaml;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// The value of `app.kubernetes.io/managed-by` under `buildMetadata: [managedByLabel]`:
/// kustomize writes its own build version, which inside `kubectl kustomize` (the reference)
/// is `(devel)`, so this is what kubectl prints.
const MANAGED_BY: &str = "kustomize-(devel)";

/// How to build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Which files a kustomization may read (`--load-restrictor`).
    pub load_restrictor: LoadRestrictor,
    /// `--strict`: a patch target naming one object that matches nothing is an error (by
    /// default a warning; kustomize accepts it silently).
    pub strict: bool,
    /// `--fixes`: kiln's fixes of kustomize behaviour, all off by default (ADR 0003).
    pub fixes: Fixes,
    /// `--enable-helm`: `helmCharts:` may be rendered (kiln's own Helm engine, no helm
    /// binary). Off, a kustomization with charts fails as kubectl's does, before any of its
    /// generators runs; `kiln render` turns it on for the kustomizations it writes.
    pub enable_helm: bool,
    /// The charts `helmCharts[].repo` names, already pulled by the caller (kiln's source
    /// stage); a chart with `repo` and no vendored copy that is missing here is refused.
    pub pulled_charts: std::sync::Arc<crate::types::helmchartargs::PulledCharts>,
    /// The fetched trees of the remote targets the build may meet (`resources:` and
    /// `components:` URLs); the engine never fetches (ADR 0023).
    pub remotes: std::sync::Arc<crate::git::RemoteTrees>,
}

/// Where kiln may deliberately print something other than kubectl (ADR 0003, `--fixes`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fixes {
    /// `merge-order`: strategic merge patches order lists as Kubernetes' apimachinery does.
    pub merge_order: ListOrder,
    /// `cluster-scope`: the `namespace:` transformer knows newer built-in and well-known
    /// custom cluster-scoped kinds.
    pub scope: Scope,
}

impl Fixes {
    /// The names `--fixes` accepts.
    pub const NAMES: &[&str] = &["merge-order", "cluster-scope", "all"];

    /// Parses a comma-separated `--fixes` list.
    pub fn parse(list: &str) -> Result<Fixes, String> {
        let mut fixes = Fixes::default();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "merge-order" => fixes.merge_order = ListOrder::Apimachinery,
                "cluster-scope" => fixes.scope = Scope::Kiln,
                "all" => {
                    fixes.merge_order = ListOrder::Apimachinery;
                    fixes.scope = Scope::Kiln;
                }
                other => {
                    return Err(format!(
                        "unknown fix `{other}` (known: {})",
                        Fixes::NAMES.join(", ")
                    ));
                }
            }
        }
        Ok(fixes)
    }
}

/// One build's options and what it noticed on the way (warnings), shared by every loader of
/// the build.
#[derive(Debug, Default)]
pub struct Session {
    pub options: BuildOptions,
    warnings: std::cell::RefCell<Vec<String>>,
    /// The next kustomization id (`BuildMeta::scopes`).
    next_scope: std::cell::Cell<u32>,
    /// The `openapi:` schema, once a kustomization set it (global to the build, as in
    /// kustomize: see `openapi.rs`).
    openapi: std::cell::RefCell<Option<std::rc::Rc<CustomSchema>>>,
    /// Whether kyaml would have parsed its builtin schema before `openapi` was set.
    builtin_schema_used: std::cell::Cell<bool>,
    /// The root kustomization has `buildMetadata`: kustomize then tracks origins and
    /// transformations through the whole build (`kusttarget.go` `makeCustomizedResMap`).
    build_metadata: std::cell::Cell<bool>,
}

impl Session {
    /// A session with `options`.
    pub fn new(options: BuildOptions) -> Self {
        Session {
            options,
            warnings: Default::default(),
            next_scope: Default::default(),
            openapi: Default::default(),
            builtin_schema_used: Default::default(),
            build_metadata: Default::default(),
        }
    }

    /// Whether transformations are recorded (the root kustomization has `buildMetadata`).
    pub fn tracks_build_metadata(&self) -> bool {
        self.build_metadata.get()
    }

    /// The schema strategic merges use now: `None` while no `openapi:` schema was read.
    pub fn openapi(&self) -> Option<OpenApi> {
        self.openapi.borrow().as_ref().map(|schema| OpenApi {
            schema: schema.clone(),
            builtin_too: self.builtin_schema_used.get(),
        })
    }

    /// Records that kyaml would parse its builtin schema now (a strategic merge, or an object
    /// of a kind it does not precompute), which matters once a custom schema is set later.
    pub fn note_builtin_schema_use(&self) {
        if self.openapi.borrow().is_none() {
            self.builtin_schema_used.set(true);
        }
    }

    /// A fresh kustomization id, unique in this build.
    pub fn next_scope(&self) -> u32 {
        let id = self.next_scope.get();
        self.next_scope.set(id + 1);
        id
    }

    /// Records a warning for stderr.
    pub fn warn(&self, message: String) {
        self.warnings.borrow_mut().push(message);
    }

    /// The warnings so far, in the order they were noticed.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut self.warnings.borrow_mut())
    }
}

/// A build's resources in output order, and its warnings.
#[derive(Debug, Default)]
pub struct Build {
    pub resources: Vec<Resource>,
    pub warnings: Vec<String>,
}

/// Builds the kustomization in `dir` and returns its resources in output order.
///
/// Errors: any [`KustomizeError`]; each names the kustomization file and the line of the
/// entry that caused it.
pub fn build(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &BuildOptions,
) -> Result<Vec<Resource>, KustomizeError> {
    build_report(fs, dir, options).map(|b| b.resources)
}

/// [`build`], with the warnings of the build.
pub fn build_report(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &BuildOptions,
) -> Result<Build, KustomizeError> {
    let session = Session::new(options.clone());
    let resources = build_in(fs, dir, &session)?;
    Ok(Build {
        resources,
        warnings: session.take_warnings(),
    })
}

fn build_in(
    fs: &dyn FileSystem,
    dir: &Path,
    session: &Session,
) -> Result<Vec<Resource>, KustomizeError> {
    let ldr = Loader::new_root(fs, dir, session)?;
    let kf = load_kustomization(&ldr)?;
    let metadata = |option: &str| kf.kustomization.build_metadata.iter().any(|o| o == option);
    session
        .build_metadata
        .set(!kf.kustomization.build_metadata.is_empty());
    let mut acc = Accumulator::default();
    accumulate_target(&ldr, &kf, &mut acc)?;
    let mut resources = acc.resources;

    // kustomize's makeCustomizedResMap: these run once, at the top, never per base.
    hash::apply_hash_suffixes(&mut resources)
        .map_err(|e| KustomizeError::transformer(kf.site(""), &e))?;
    crate::krusty::transform::fix_name_references(&mut resources, &acc.config).map_err(|e| {
        KustomizeError::transformer_msg(kf.site(""), e, "check the references between the objects")
    })?;
    crate::filters::refvar::resolve_vars(&mut resources, &acc.vars, &acc.config)?;
    // buildMetadata: the origin and transformations annotations were kept through the build
    // (read on the root kustomization, as kustomize does: `krusty/kustomizer.go` removes the
    // ones not asked for).
    for (option, key) in [
        ("originAnnotations", ORIGIN_ANNOTATION),
        ("transformerAnnotations", TRANSFORMATIONS_ANNOTATION),
    ] {
        if !metadata(option) {
            for r in &mut resources {
                if let Some(a) = r
                    .value
                    .pointer_mut("/metadata/annotations")
                    .and_then(Value::as_object_mut)
                {
                    a.shift_remove(key);
                }
            }
        }
    }
    // buildMetadata `managedByLabel` (root kustomization only, as kustomize reads it there).
    if metadata("managedByLabel") {
        for r in &mut resources {
            r.string_map_mut("labels").insert(
                "app.kubernetes.io/managed-by".into(),
                Value::String(MANAGED_BY.into()),
            );
        }
    }
    // IgnoreLocal: objects annotated `config.kubernetes.io/local-config: "true"` are dropped.
    resources.retain(|r| r.annotation("config.kubernetes.io/local-config") != Some("true"));

    let sort_options = kf.kustomization.sort_options.as_ref();
    if let Some(s) = sort_options {
        s.sort_order().map_err(|m| {
            KustomizeError::invalid(
                kf.site("/sortOptions"),
                m,
                "use `order: legacy` or `order: fifo`",
            )
        })?;
    }
    sort_order_transformer::sort_resources(&mut resources, sort_options)
        .map_err(|e| KustomizeError::transformer(kf.site("/sortOptions"), &e))?;
    strip_internal(&mut resources);
    Ok(resources)
}

/// Builds and prints the result as `kubectl kustomize` does (see [`yaml::to_yaml_stream`]).
pub fn build_yaml(
    fs: &dyn FileSystem,
    dir: &Path,
    options: &BuildOptions,
) -> Result<String, KustomizeError> {
    let resources = build(fs, dir, options)?;
    let values: Vec<Value> = resources.into_iter().map(|r| r.value).collect();
    Ok(yaml::to_yaml_stream(&values))
}

/// `kiln kustomize DIR`: builds `dir` from the real file system and returns the YAML stream
/// `kubectl kustomize DIR` would print, with the build's warnings (for stderr); errors come
/// back as reports with their source spans.
pub fn run_kustomize(
    dir: &Path,
    options: &BuildOptions,
) -> Result<(String, Vec<String>), miette::Report> {
    let b = build_report(&kiln_base::fs::RealFs, dir, options).map_err(miette::Report::new)?;
    let values: Vec<Value> = b.resources.into_iter().map(|r| r.value).collect();
    Ok((yaml::to_yaml_stream(&values), b.warnings))
}

/// kustomize's `config.kubernetes.io/origin` (`api/resource/origin.go`, kyaml-marshalled
/// `Origin`): `path:` of the file an object was read from, relative to the root kustomization
/// directory, or `configuredIn:` + `configuredBy:` of the builtin generator that made it.
/// Objects of `helmCharts:` are the HelmChartInflationGenerator's.
///
/// Under `buildMetadata` (any option) kustomize keeps it as a real annotation from the moment
/// an object is read or generated (`kusttarget.go` `accumulateFile`, `runGenerators`'
/// `AddOriginAnnotation`, which skips objects that already have one), so patches see it and
/// may remove it (then the next transformer's origin takes its place, see
/// `transform::note`); `build_in` removes it at the end unless `originAnnotations` is asked.
pub fn annotate_origin(session: &Session, r: &mut Resource) {
    if !session.tracks_build_metadata() || r.annotation(ORIGIN_ANNOTATION).is_some() {
        return;
    }
    let text = match (&r.meta.generated_in, &r.origin) {
        (Some((file, kind)), _) => {
            format!("configuredIn: {file}\nconfiguredBy:\n  apiVersion: builtin\n  kind: {kind}\n")
        }
        (None, Some(o)) if is_manifest_file(&o.file) => format!("path: {}\n", o.file),
        _ => return,
    };
    set_annotation(r, ORIGIN_ANNOTATION, text);
}

fn is_manifest_file(file: &str) -> bool {
    [".yaml", ".yml", ".json"].iter().any(|e| file.ends_with(e))
}

/// kustomize quirk: every object carries internal annotations while it builds, and they are
/// removed at the end with `SetAnnotations`, which drops the field when nothing is left — so
/// an input `annotations: {}` or `annotations:` (null) never reaches the output. (`labels`
/// get no such treatment: `labels: null` survives, as in kustomize.)
///
/// The same `SetAnnotations` writes every remaining annotation back as a string of its value's
/// node text (`api/resource/resource.go` `RemoveBuildAnnotations`, kyaml `getMapFromMeta`):
/// a value a JSON patch added as `010` or `1e3` (typed by the patch's YAML) prints as `"8"`
/// or `"1000"`, a null as `"null"`, a map or list as `""` (case y10). A value read from a
/// file is already its text (`yaml::read` keeps annotation text).
fn strip_internal(resources: &mut [Resource]) {
    for r in resources {
        let Some(md) = r.value.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        match md.get_mut("annotations") {
            Some(Value::Object(a)) if !a.is_empty() => {
                for v in a.values_mut() {
                    if !v.is_string() {
                        *v = Value::String(node_text(v));
                    }
                }
            }
            Some(Value::Object(_) | Value::Null) => {
                md.shift_remove("annotations");
            }
            _ => {}
        }
    }
}

/// The text kyaml's node holds for a value after kustomize's JSON round trip.
fn node_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => yaml::number_text(n),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::Array(_) | Value::Object(_) => String::new(),
    }
}

/// What a kustomization (with its bases and components) has built so far
/// (kustomize's `ResAccumulator`).
#[derive(Default)]
pub struct Accumulator {
    pub resources: Vec<Resource>,
    pub config: TransformerConfig,
    pub vars: Vec<VarDecl>,
}

/// The id key kustomize compares when appending (namespace `""` and `default` are equal).
fn id_key(id: &ResId) -> (String, String, String, String, String) {
    let ns = match id.namespace.as_deref() {
        None | Some("") | Some("default") => String::new(),
        Some(n) => n.to_string(),
    };
    (
        id.group.clone(),
        id.version.clone(),
        id.kind.clone(),
        ns,
        id.name.clone(),
    )
}

/// Where `r` came from, by file name alone (see [`Loader::origin_position`]).
pub(crate) fn origin_text(r: &Resource) -> String {
    match &r.origin {
        Some(o) => format!("`{}`", o.file),
        None => "a generator".to_string(),
    }
}

/// Ids already in an accumulator → their position, for duplicate checks while appending.
pub type IdIndex = HashMap<(String, String, String, String, String), usize>;

impl Accumulator {
    /// Appends `new` (kustomize's `AppendAll`): an object whose id is already present is an
    /// error reported at `site`. Linear: one index of the current ids per call.
    pub fn append_all(&mut self, new: Vec<Resource>, site: &Site) -> Result<(), KustomizeError> {
        let mut index = self.id_index();
        self.append_indexed(&mut index, new, || site.clone(), &origin_text)
    }

    /// The id index of what is accumulated so far, for [`Accumulator::append_indexed`].
    pub fn id_index(&self) -> IdIndex {
        let mut index = IdIndex::with_capacity(self.resources.len());
        for (i, r) in self.resources.iter().enumerate() {
            index.insert(id_key(&r.id()), i);
        }
        index
    }

    /// [`Accumulator::append_all`] against an index kept by the caller across appends, and
    /// with the error site computed only on error. Why: a kustomization listing one file per
    /// object appends thousands of times; rebuilding the index per append, or locating the
    /// `resources` entry (a YAML span index of the whole kustomization file) per append, made
    /// the build quadratic (8,000 objects: ~25 s, now well under a second).
    /// `index` must describe `self.resources` exactly (nothing else may change them between
    /// calls); it is kept up to date here. `origin` names where an object is defined, for
    /// the error (both of a duplicate: [`Loader::origin_position`]).
    pub fn append_indexed(
        &mut self,
        index: &mut IdIndex,
        new: Vec<Resource>,
        site: impl FnOnce() -> Site,
        origin: &dyn Fn(&Resource) -> String,
    ) -> Result<(), KustomizeError> {
        index.reserve(new.len());
        for r in new {
            let key = id_key(&r.id());
            if let Some(&i) = index.get(&key) {
                return Err(KustomizeError::duplicate(
                    site(),
                    r.id().to_string(),
                    origin(&self.resources[i]),
                    origin(&r),
                ));
            }
            index.insert(key, self.resources.len());
            self.resources.push(r);
        }
        Ok(())
    }
}

/// Stack kept free at each level of bases and components, and the heap segment added when
/// less is left (`stacker`, ADR 0015 and ADR 0029). A level's own frames are small, but below
/// them a level runs every transformer, YAML reads (up to 255 nestings deep) and Helm charts,
/// so the red zone is large: a chain of 1,500 bases overflowed the main thread's 8 MiB.
const STACK_RED_ZONE: usize = 1024 * 1024;
const STACK_SEGMENT: usize = 8 * 1024 * 1024;

/// Accumulates one kustomization (or component) into `acc`. Bases and components recurse
/// here, at most `load::MAX_DEPTH` deep, each level on the stack left or a fresh heap segment.
fn accumulate_target(
    ldr: &Loader<'_>,
    kf: &KustFile,
    acc: &mut Accumulator,
) -> Result<(), KustomizeError> {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
        accumulate_here(ldr, kf, acc)
    })
}

/// [`accumulate_target`] on the stack it was given.
fn accumulate_here(
    ldr: &Loader<'_>,
    kf: &KustFile,
    acc: &mut Accumulator,
) -> Result<(), KustomizeError> {
    let k = &kf.kustomization;
    reject_unsupported(kf)?;
    for option in &k.build_metadata {
        // Applied in `build_in`. kustomize ignores other options (but still tracks origins,
        // as for any non-empty list); kiln warns, as it is likely a typo.
        if ![
            "managedByLabel",
            "originAnnotations",
            "transformerAnnotations",
        ]
        .contains(&option.as_str())
        {
            ldr.session().warn(format!(
                "{}: `buildMetadata` option `{option}` is unknown and ignored (known: `managedByLabel`, `originAnnotations`, `transformerAnnotations`)",
                kf.display
            ));
        }
    }
    // A component works on its parent's objects, so its renames are the parent's.
    let scope = (!k.is_component()).then(|| ldr.session().next_scope());
    // `openapi: {path}`: the first kustomization to name a schema sets it for the rest of
    // the build (kustomize's `openapi.SetSchema`, global and set once; the root's first).
    if let Some(path) = k.openapi.get("path")
        && ldr.session().openapi.borrow().is_none()
    {
        let site = kf.site("/openapi/path");
        if is_remote(path) {
            return Err(KustomizeError::unsupported(
                site,
                "openapi",
                format!("remote schema `{path}`"),
                "kiln builds offline: commit the schema file and give its path",
            ));
        }
        let (file, text) = ldr
            .read_file(path)
            .map_err(|issue| ldr.error(issue, site.clone(), "OpenAPI schema file", path))?;
        let schema = CustomSchema::parse(&ldr.display(&file), &text).map_err(|m| {
            KustomizeError::invalid(
                site,
                m,
                "give a Swagger 2 document with `definitions` (e.g. from `kustomize openapi fetch`)",
            )
        })?;
        *ldr.session().openapi.borrow_mut() = Some(std::rc::Rc::new(schema));
    }

    // 1. resources, then the legacy `bases` (kustomize appends bases to resources).
    let entries = k
        .resources
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("/resources/{i}"), p))
        .chain(
            k.bases
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("/bases/{i}"), p)),
        );
    // Only `append_indexed` touches `acc.resources` in this loop, so one index serves it all.
    let mut index = acc.id_index();
    for (pointer, path) in entries {
        // Located lazily: locating parses the kustomization file, which is hot when it lists
        // thousands of files (see `append_indexed`).
        let site = || kf.site(&pointer);
        // kustomize's accumulateResources: a file first, then `ldr.New`, which takes a
        // Git-like URL (`git.NewRepoSpecFromURL`) before a local directory.
        let entry = ldr.entry(path);
        let remote = match &entry {
            Ok(Entry::File(_)) => None,
            _ => crate::git::RepoSpec::parse(path).ok(),
        };
        if let Some(spec) = remote {
            let child = ldr
                .remote_child(&spec)
                .map_err(|issue| ldr.error(issue, site(), "resource", path))?;
            accumulate_base(&child, path, site, acc, &mut index)?;
            continue;
        }
        match entry {
            Ok(Entry::File(file)) => {
                let display = ldr.display(&file);
                let text = ldr
                    .fs()
                    .read_to_string(&file)
                    .map_err(|e| KustomizeError::Io {
                        path: display.clone(),
                        source: e,
                    })?;
                let mut resources = parse_resources(&display, &text)?;
                for r in &mut resources {
                    annotate_origin(ldr.session(), r);
                }
                if resources
                    .iter()
                    .any(|r| !crate::konfig::merge_keys::is_builtin_group(r.group()))
                {
                    ldr.session().note_builtin_schema_use();
                }
                acc.append_indexed(&mut index, resources, site, &|r| ldr.origin_position(r))?;
            }
            Ok(Entry::Dir(dir)) => {
                let child = ldr
                    .child(&dir)
                    .map_err(|issue| ldr.error(issue, site(), "resource", path))?;
                accumulate_base(&child, path, site, acc, &mut index)?;
            }
            Err(issue) => return Err(ldr.error(issue, site(), "resource", path)),
        }
    }

    // 2. configurations (and crds, which only add field specs in kustomize).
    for (i, path) in k.configurations.iter().enumerate() {
        let site = kf.site(&format!("/configurations/{i}"));
        let (file, text) = ldr
            .read_file(path)
            .map_err(|issue| ldr.error(issue, site.clone(), "configuration file", path))?;
        let display = ldr.display(&file);
        for doc in yaml::parse_stream(&display, &text).map_err(Box::new)? {
            let tc = TransformerConfig::from_value(&doc).map_err(|m| KustomizeError::invalid(site.clone(), m, "a configurations file holds field specs (`namePrefix`, `commonLabels`, `nameReference`, `varReference`, …)"))?;
            acc.config.merge(&tc);
        }
    }
    for (i, path) in k.crds.iter().enumerate() {
        let site = kf.site(&format!("/crds/{i}"));
        let (file, text) = ldr
            .read_file(path)
            .map_err(|issue| ldr.error(issue, site.clone(), "CRD file", path))?;
        let tc = super::crds::config_from_openapi(&ldr.display(&file), &text).map_err(|m| {
            KustomizeError::invalid(
                site,
                m,
                "a `crds` file maps Go type names to OpenAPI definitions (`{\"<pkg>.<Kind>\": {\"Schema\": …}}`, as openapi-gen writes them)",
            )
        })?;
        acc.config.merge(&tc);
    }

    // 3. generators.
    crate::krusty::generate::run_generators(ldr, kf, acc)?;

    // 4. components, on the same accumulator.
    for (i, path) in k.components.iter().enumerate() {
        let site = kf.site(&format!("/components/{i}"));
        // kustomize's accumulateComponents: `ldr.New`, a Git-like URL first.
        let child = if let Ok(spec) = crate::git::RepoSpec::parse(path) {
            ldr.remote_child(&spec)
                .map_err(|issue| ldr.error(issue, site.clone(), "component", path))?
        } else {
            local_component(ldr, path, &site)?
        };
        let ckf = load_kustomization(&child)?;
        if !ckf.kustomization.is_component() {
            return Err(KustomizeError::kind_mismatch(
                site,
                path,
                "a Kustomization",
                "a Component (`kind: Component`)",
            ));
        }
        accumulate_target(&child, &ckf, acc)?;
    }

    // 5. transformers, in kustomize's order.
    crate::krusty::transform::run_transformers(ldr, kf, acc)?;
    if let Some(scope) = scope {
        record_scope(&mut acc.resources, scope);
    }

    // 6. vars: bound now to what this kustomization built, resolved at the top.
    let mut fresh: Vec<VarDecl> = Vec::new();
    for (i, var) in k.vars.iter().enumerate() {
        let site = kf.site(&format!("/vars/{i}"));
        if let Some(prev) = acc
            .vars
            .iter()
            .chain(&fresh)
            .find(|d| d.var.name == var.name)
        {
            // kustomize's MergeVars: the same var declared twice is an error unless identical.
            if prev.var != *var {
                return Err(KustomizeError::invalid(
                    site,
                    format!(
                        "var `{}` is already defined (at {})",
                        var.name, prev.site.at
                    ),
                    "give the var another name",
                ));
            }
            continue;
        }
        fresh.push(VarDecl {
            var: var.clone(),
            site,
        });
    }
    crate::filters::refvar::bind_vars(&mut acc.resources, &fresh)?;
    acc.vars.extend(fresh);
    Ok(())
}

/// A local `components` entry's loader: a directory.
fn local_component<'a>(
    ldr: &Loader<'a>,
    path: &str,
    site: &crate::error::Site,
) -> Result<Loader<'a>, KustomizeError> {
    let dir = match ldr.entry(path) {
        Ok(Entry::Dir(dir)) => dir,
        Ok(Entry::File(_)) => {
            return Err(KustomizeError::kind_mismatch(
                site.clone(),
                path,
                "a file",
                "a directory with a `kind: Component` kustomization",
            ));
        }
        Err(issue) => return Err(ldr.error(issue, site.clone(), "component", path)),
    };
    ldr.child(&dir)
        .map_err(|issue| ldr.error(issue, site.clone(), "component", path))
}

/// A `resources` entry naming a kustomization (a local directory or a remote target),
/// accumulated into `acc` (kustomize's `accumulateDirectory`).
fn accumulate_base(
    child: &Loader<'_>,
    path: &str,
    site: impl Fn() -> crate::error::Site,
    acc: &mut Accumulator,
    index: &mut IdIndex,
) -> Result<(), KustomizeError> {
    let ckf = load_kustomization(child)?;
    if ckf.kustomization.is_component() {
        return Err(KustomizeError::kind_mismatch(
            site(),
            path,
            "a Component",
            "a Kustomization (components go under `components`)",
        ));
    }
    let mut sub = Accumulator::default();
    accumulate_target(child, &ckf, &mut sub)?;
    acc.append_indexed(index, sub.resources, site, &|r| child.origin_position(r))?;
    acc.config.merge(&sub.config);
    acc.vars.extend(sub.vars);
    Ok(())
}

/// Marks `resources` as built through kustomization `scope`, and the renames not marked yet
/// (made by its own transformers and its components') as made there.
fn record_scope(resources: &mut [Resource], scope: u32) {
    for r in resources {
        let m = &mut r.meta;
        m.rename_scopes.truncate(m.previous_names.len());
        m.rename_scopes.resize(m.previous_names.len(), scope);
        m.scopes.push(scope);
    }
}

/// Fields kiln does not implement: each is an error naming the field, never ignored.
fn reject_unsupported(kf: &KustFile) -> Result<(), KustomizeError> {
    let k: &Kustomization = &kf.kustomization;
    if !k.generators.is_empty() {
        return Err(KustomizeError::unsupported(
            kf.key_site("/generators"),
            "generators",
            "generator plugins (exec, container and Go plugins) are not run",
            "use `configMapGenerator`/`secretGenerator`, or commit the generated objects and list them under `resources`",
        ));
    }
    if !k.validators.is_empty() {
        return Err(KustomizeError::unsupported(
            kf.key_site("/validators"),
            "validators",
            "validator plugins are not run",
            "validate the output in CI instead",
        ));
    }
    if k.openapi.contains_key("version") {
        return Err(KustomizeError::unsupported(
            kf.key_site("/openapi/version"),
            "openapi.version",
            "builtin OpenAPI schemas of other Kubernetes versions are not bundled",
            "remove `openapi.version`, or give a schema file with `openapi.path`",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configurations_merge_without_duplicates_and_ignore_key_case() {
        let v = json!({
            "nameReference": [{"kind": "Bee", "version": "v1beta1", "fieldSpecs": [{"path": "spec/bee", "kind": "Hive"}]}],
            "varReference": [{"path": "spec/action", "kind": "Bee"}],
            "commonLabels": [{"path": "spec/selector", "create": true, "kind": "Hive"}],
            "unknown": 1
        });
        let mut tc = TransformerConfig::from_value(&v).unwrap();
        assert_eq!(tc.name_reference[0].field_specs[0].path, "spec/bee");
        assert!(tc.common_labels[0].create);
        let again = TransformerConfig::from_value(&json!({"namereference": [{"kind": "Bee", "version": "v1beta1", "FieldSpecs": [{"path": "spec/bee", "kind": "Hive"}, {"path": "spec/other"}]}]})).unwrap();
        tc.merge(&again);
        assert_eq!(tc.name_reference.len(), 1);
        assert_eq!(tc.name_reference[0].field_specs.len(), 2);
        assert!(TransformerConfig::from_value(&json!({"images": [{"kind": "X"}]})).is_err());
    }

    /// A kustomization's `labels[].fields`, `replicas` and `sortOptions` are read leniently
    /// and checked where they are used; builtin configs read the same types strictly. The
    /// messages are the ones the former twin types gave (checked against them).
    #[test]
    fn lenient_entries_are_refused_where_used_with_the_strict_messages() {
        use kiln_base::fs::MemFs;
        let app = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n";
        let cases = [
            (
                "labels:\n- pairs: {a: b}\n  fields:\n  - kind: Deployment\n",
                "missing field `path`",
            ),
            (
                "labels:\n- fields:\n  - {paht: x}\n",
                "unknown field `paht`, expected one of `group`, `version`, `kind`, `path`, `create`",
            ),
            (
                "replicas:\n- {name: null, count: 2}\n",
                "missing field `name`",
            ),
            (
                "replicas:\n- {name: web, cnt: 3}\n",
                "unknown field `cnt`, expected `name` or `count`",
            ),
            (
                "sortOptions: {order: bogus}\n",
                "unknown variant `bogus`, expected `fifo` or `legacy`",
            ),
            ("sortOptions: {}\n", "missing field `order`"),
            (
                "transformers:\n- |\n  apiVersion: builtin\n  kind: LabelTransformer\n  metadata: {name: x}\n  fieldSpecs:\n  - {group: null, path: metadata/labels}\n",
                "LabelTransformer: invalid type: null, expected a string",
            ),
            (
                "transformers:\n- |\n  apiVersion: builtin\n  kind: ReplicaCountTransformer\n  metadata: {name: x}\n  replica: {name: web}\n",
                "ReplicaCountTransformer: missing field `count`",
            ),
        ];
        for (k, message) in cases {
            let mut fs = MemFs::new();
            fs.add_file(
                "/t/kustomization.yaml",
                format!("resources: [app.yaml]\n{k}"),
            )
            .add_file("/t/app.yaml", app);
            let err = build(&fs, Path::new("/t"), &BuildOptions::default()).unwrap_err();
            let text = format!("{err:?}");
            assert!(
                text.contains(&format!("message: {message:?}")),
                "{k}: {text}"
            );
        }
    }

    #[test]
    fn remote_targets_are_read_from_the_trees_the_caller_fetched() {
        use crate::git::{RemoteTree, RemoteTrees};
        use kiln_base::fs::MemFs;
        let dep = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n";
        let url = "https://git.example/org/bases//web?ref=v1";
        let leaky = "https://git.example/org/bases//leaky?ref=v1";
        let up = "https://git.example/org/bases//up?ref=v1";
        let again = "https://git.example/org/bases//again?ref=v1";
        let mut fs = MemFs::new();
        fs.add_file(
            "/cache/t1/web/kustomization.yaml",
            "resources: [dep.yaml]\n",
        )
        .add_file("/cache/t1/web/dep.yaml", dep)
        .add_file(
            "/cache/t1/leaky/kustomization.yaml",
            "resources: [../web/dep.yaml]\n",
        )
        .add_file(
            "/cache/t1/up/kustomization.yaml",
            "resources: [../../outside]\n",
        )
        .add_file("/cache/outside/kustomization.yaml", "resources: []\n")
        .add_file(
            "/cache/t1/again/kustomization.yaml",
            format!("resources: [\"{again}\"]\n"),
        );
        let tree = RemoteTree {
            root: "/cache/t1".into(),
            label: "https://git.example/org/bases@abc".into(),
        };
        let remotes: RemoteTrees = [url, leaky, up, again]
            .iter()
            .map(|u| (u.to_string(), tree.clone()))
            .collect();
        let options = BuildOptions {
            remotes: std::sync::Arc::new(remotes),
            ..BuildOptions::default()
        };
        let with = |entry: &str| {
            let mut fs = fs.clone();
            fs.add_file(
                "/repo/app/kustomization.yaml",
                format!("namePrefix: p-\nresources: [\"{entry}\"]\n"),
            );
            build(&fs, Path::new("/repo/app"), &options)
        };
        let out = with(url).unwrap();
        assert_eq!(out[0].name(), "p-web");
        // Root-only inside the clone, whatever the restrictor; bases stay in the repository;
        // a URL already on the way is a cycle; an unfetched URL is named, never fetched.
        for (entry, want) in [
            (leaky, "outside the kustomization root"),
            (up, "outside the fetched repository"),
            (again, "cycle of bases: remote"),
            ("https://git.example/org/other//x", "was not fetched"),
        ] {
            let err = with(entry).unwrap_err().to_string();
            assert!(err.contains(want), "{entry}: {err}");
        }
    }

    #[test]
    fn builds_an_overlay_from_an_in_memory_tree() {
        use kiln_base::fs::MemFs;
        let mut fs = MemFs::new();
        fs.add_file("/t/base/kustomization.yaml", "resources: [app.yaml]\nconfigMapGenerator:\n- name: cfg\n  literals: [A=1]\n")
            .add_file(
                "/t/base/app.yaml",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx:1\n        envFrom: [{configMapRef: {name: cfg}}]\n",
            )
            .add_file("/t/prod/kustomization.yaml", "resources: [../base]\nnamespace: prod\nnamePrefix: p-\nimages: [{name: nginx, newTag: '2'}]\n");
        let out = build(&fs, Path::new("/t/prod"), &BuildOptions::default()).unwrap();
        let names: Vec<&str> = out.iter().map(Resource::name).collect();
        assert_eq!(names.len(), 2);
        let cm = names[0];
        assert!(
            cm.starts_with("p-cfg-") && cm.len() == "p-cfg-".len() + 10,
            "{cm}"
        );
        assert_eq!(names[1], "p-web");
        let c = &out[1].value["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["image"], "nginx:2");
        assert_eq!(c["envFrom"][0]["configMapRef"]["name"], cm);
        assert!(out.iter().all(|r| r.namespace() == Some("prod")));

        // The same tree with a missing resource fails at the entry's line.
        fs.add_file(
            "/t/prod/kustomization.yaml",
            "resources:\n- ../base\n- extra.yaml\n",
        );
        let err = build(&fs, Path::new("/t/prod"), &BuildOptions::default()).unwrap_err();
        let at = err.location().unwrap();
        assert_eq!((at.file.as_str(), at.line), ("kustomization.yaml", 3));
    }
}
