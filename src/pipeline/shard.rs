//! `--shard I/N` and `kiln merge`: a shard's record of what it rendered, and the merge of
//! every shard's tree into the one an unsharded render writes (docs/scale.md).

use super::*;

/// Why `kiln merge` failed. Codes `kiln::merge::<condition>`.
#[derive(Debug, Error, Diagnostic)]
pub enum MergeError {
    /// A shard directory holds no readable ownership marker.
    #[error("`{dir}` is not a rendered shard: {reason}")]
    #[diagnostic(
        code(kiln::merge::not_a_shard),
        help("pass the directories `kiln render --shard i/N --write-to DIR` wrote")
    )]
    NotAShard { dir: String, reason: String },

    /// Two shards hold the same file with different bytes: they come from different inputs.
    #[error("`{path}` differs between shards `{first}` and `{second}`")]
    #[diagnostic(
        code(kiln::merge::conflict),
        help("render every shard from the same commit of the platform, with the same flags")
    )]
    Conflict {
        path: String,
        first: String,
        second: String,
    },

    /// The shards given are not all the shards of one render.
    #[error("the shards given are not every shard of one render (have: {have})")]
    #[diagnostic(
        code(kiln::merge::incomplete),
        help(
            "pass the output of every `kiln render --shard i/N` job, rendered with the same platform and flags"
        )
    )]
    Incomplete { have: String },

    /// The platform loaded for the Kargo and Argo CD objects is not the one the shards were
    /// rendered from.
    #[error(
        "the platform at `{platform_dir}` is not the one the shards were rendered from: its Kargo and Argo CD objects would not match their manifests"
    )]
    #[diagnostic(
        code(kiln::merge::inputs_changed),
        help(
            "run `kiln merge` in a checkout of the commit the shard jobs rendered, from the directory they ran in (the platform directory is recorded as given to `kiln render`)"
        )
    )]
    InputsChanged { platform_dir: String },
}

/// One of `count` deterministic, balanced parts of a render (`--shard index/count`,
/// `index` from 1, as CI systems number parallel jobs).
///
/// Every BuildPlan of one component instance goes to the same shard (its environments share
/// a kustomize build); instances are dealt, in BuildPlan order, to the shard with the fewest
/// BuildPlans so far. Shard 1 also carries the Kargo and Argo CD objects. `kiln merge` puts
/// the shards' trees back together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || {
            format!("`{s}` is not a shard: write INDEX/COUNT with 1 <= INDEX <= COUNT, e.g. 2/4")
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse::<usize>().map_err(|_| bad())?,
            n.trim().parse::<usize>().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Which of `plans` belong to this shard (see [`Shard`]).
    pub fn select(&self, plans: Vec<BuildPlan>) -> Vec<BuildPlan> {
        // At most one shard per instance group gets any: a count beyond that (`--shard
        // 1/4294967296`) must not allocate a slot per shard.
        let groups = plans.len().max(1);
        let mut load = vec![0usize; self.count.min(groups)];
        let mut owner: std::collections::BTreeMap<(String, String), usize> = Default::default();
        let mut sizes: Vec<((String, String), usize)> = Vec::new();
        for p in &plans {
            let k = (p.project.clone(), p.component.clone());
            match sizes.iter_mut().find(|(g, _)| g == &k) {
                Some((_, n)) => *n += 1,
                None => sizes.push((k, 1)),
            }
        }
        for (group, n) in sizes {
            let (least, _) = load
                .iter()
                .enumerate()
                .min_by_key(|(i, l)| (**l, *i))
                .unwrap_or((0, &0));
            load[least] += n;
            owner.insert(group, least);
        }
        plans
            .into_iter()
            .filter(|p| {
                owner.get(&(p.project.clone(), p.component.clone())) == Some(&(self.index - 1))
            })
            .collect()
    }
}

pub(super) const SHARD_FORMAT: &str = "kiln.shard/v3";

/// What `kiln merge` needs from each shard to finish the render: which shard it is, the
/// options it was rendered with, and the cluster-scoped kinds it produced.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ShardInfo {
    pub(super) format: String,
    pub(super) index: usize,
    pub(super) count: usize,
    pub(super) platform_dir: PathBuf,
    pub(super) root: Option<PathBuf>,
    /// `true` for the cluster layout.
    pub(super) layout: bool,
    pub(super) selection: SelectionInfo,
    pub(super) cluster_kinds: BTreeSet<(String, String)>,
    /// [`crate::cache::pipeline_inputs`] of the render the shard belongs to.
    pub(super) pipeline_inputs: String,
    /// Every file the shard's load and render read (path relative to the repository root →
    /// `sha256:` of its bytes, as [`Built::inputs`]): `kiln merge` reads each again, so a
    /// checkout where only a component's file differs is refused (issue 39, item 14).
    pub(super) inputs: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct SelectionInfo {
    pub(super) projects: Vec<String>,
    pub(super) environments: Vec<String>,
    pub(super) components: Vec<String>,
    pub(super) labels: Vec<String>,
}

impl From<Selection> for SelectionInfo {
    fn from(s: Selection) -> Self {
        SelectionInfo {
            projects: s.projects,
            environments: s.environments,
            components: s.components,
            labels: s.labels,
        }
    }
}

impl ShardInfo {
    pub(super) fn to_bytes(&self) -> Vec<u8> {
        let mut b = serde_json::to_vec_pretty(self).expect("a shard record always serializes");
        b.push(b'\n');
        b
    }
}

/// What `kiln merge` did.
#[derive(Debug, Clone)]
pub struct MergeSummary {
    /// Number of files in the merged tree.
    pub files: usize,
    pub report: WriteReport,
}

/// Reads the trees `kiln render --shard` wrote (each the files its ownership marker lists)
/// and the shard records, one per shard.
///
/// Errors: [`MergeError`] for a directory without a marker or shard record, for shards of
/// different renders, for a missing shard, and for a file two shards hold with different
/// bytes.
pub(super) fn read_shards(dirs: &[PathBuf]) -> Result<(ArtifactSet, Vec<ShardInfo>), KilnError> {
    use crate::fs::FileSystem;
    let fs = RealFs;
    let mut set = ArtifactSet::new();
    let mut infos: Vec<ShardInfo> = Vec::new();
    let mut from: std::collections::BTreeMap<String, usize> = Default::default();
    for (i, dir) in dirs.iter().enumerate() {
        let not_shard = |reason: String| {
            KilnError::Merge(MergeError::NotAShard {
                dir: dir.display().to_string(),
                reason,
            })
        };
        // A shard tree is input: read without following any link (issue 39, item 4).
        let dir = &fs
            .canonicalize(dir)
            .map_err(|e| not_shard(format!("cannot open it: {e}")))?;
        let marker = crate::fs::read_beneath(&fs, dir, crate::marker::MARKER_FILE)
            .map_err(|e| not_shard(format!("cannot read {}: {e}", crate::marker::MARKER_FILE)))?;
        let marker = crate::marker::OwnedMarker::parse(&marker).map_err(|e| not_shard(e.0))?;
        let info = crate::fs::read_beneath(&fs, dir, SHARD_FILE)
            .map_err(|e| format!("cannot read {SHARD_FILE}: {e}"))
            .and_then(|b| {
                serde_json::from_slice::<ShardInfo>(&b)
                    .map_err(|e| format!("invalid {SHARD_FILE}: {e}"))
            })
            .and_then(|s| {
                (s.format == SHARD_FORMAT)
                    .then_some(s)
                    .ok_or_else(|| format!("{SHARD_FILE} is not {SHARD_FORMAT}"))
            })
            .map_err(not_shard)?;
        infos.push(info);
        for path in marker.files {
            if path == SHARD_FILE {
                continue;
            }
            crate::marker::check_rel_path(&path)
                .map_err(|e| not_shard(format!("its marker lists `{path}`: {e}")))?;
            let bytes = crate::fs::read_beneath(&fs, dir, &path)
                .map_err(|e| not_shard(format!("cannot read `{path}`: {e}")))?;
            if let Some(&j) = from.get(&path) {
                if set.files.get(&path) != Some(&bytes) {
                    return Err(KilnError::Merge(MergeError::Conflict {
                        path,
                        first: dirs[j].display().to_string(),
                        second: dir.display().to_string(),
                    }));
                }
                continue;
            }
            from.insert(path.clone(), i);
            set.insert(path, bytes);
        }
    }
    // Every shard of one render, each once. The count is checked against the shards
    // actually given before anything is sized by it (issue 39, item 7: a recorded count of
    // 2^64 - 1 or 2^32 must not allocate).
    let first = &infos[0];
    let mut indexes: Vec<usize> = infos.iter().map(|s| s.index).collect();
    indexes.sort_unstable();
    let every_index = first.count == indexes.len()
        && indexes.iter().enumerate().all(|(i, &index)| index == i + 1);
    let same_render = infos.iter().all(|s| {
        (
            &s.platform_dir,
            &s.root,
            s.layout,
            &s.selection,
            s.count,
            &s.pipeline_inputs,
        ) == (
            &first.platform_dir,
            &first.root,
            first.layout,
            &first.selection,
            first.count,
            &first.pipeline_inputs,
        )
    });
    if !same_render || !every_index {
        let have: Vec<String> = infos
            .iter()
            .map(|s| format!("{}/{}", s.index, s.count))
            .collect();
        return Err(KilnError::Merge(MergeError::Incomplete {
            have: have.join(", "),
        }));
    }
    Ok((set, infos))
}

/// `true` when every file any shard read has, in the checkout at `root`, the digest the shard
/// recorded: the platform and plans alone miss a component's manifest, chart or base. A
/// component's files from another repository are read in its fetched tree (`trees`).
fn inputs_unchanged(root: &Path, trees: Vec<PathBuf>, infos: &[ShardInfo]) -> bool {
    // `source:<tree>/<path>` names a file of a fetched tree (`Recorder::inputs_with_trees`).
    let located = |path: &str| match path.strip_prefix("source:") {
        Some(rest) => {
            let (name, rel) = rest.split_once('/')?;
            let tree = trees
                .iter()
                .find(|t| t.file_name().is_some_and(|n| n.to_string_lossy() == name))?;
            Some(tree.join(rel))
        }
        None => Some(root.join(path)),
    };
    let fs = crate::fs::RootedFs::new(&RealFs, root.to_path_buf()).with_trees(trees.clone());
    infos.iter().flat_map(|s| &s.inputs).all(|(path, digest)| {
        use crate::fs::FileSystem;
        located(path)
            .and_then(|p| fs.read(&p).ok())
            .is_some_and(|b| &crate::git::spec_digest(&b) == digest)
    })
}

/// `kiln merge`: the shards' trees written into `out` as one, with the Kargo and Argo CD
/// objects and one ownership marker: byte for byte what an unsharded `kiln render` writes.
/// The platform is loaded again (from the directory the shards were rendered from) for the
/// Kargo and Argo CD objects; nothing is rendered. Components from other repositories are
/// resolved by the source stage with `sources` and `auth` (from the cache and kiln.lock as the
/// shards' renders resolved them; the lock is never stored here).
pub fn run_merge(
    dirs: &[PathBuf],
    out: &Path,
    (sources, auth): (crate::source::SourceOptions, crate::git::RemoteAuth),
) -> Result<MergeSummary, KilnError> {
    if dirs.is_empty() {
        return Err(KilnError::Merge(MergeError::Incomplete {
            have: "none".into(),
        }));
    }
    let (set, infos) = read_shards(dirs)?;
    let first = &infos[0];
    let mut opts = RenderOptions::new(&first.platform_dir);
    opts.root = first.root.clone();
    opts.layout = if first.layout {
        Layout::Cluster
    } else {
        Layout::Service
    };
    opts.selection = first.selection.clone().into();
    opts.write_to = out.to_path_buf();
    opts.sources = sources;
    opts.source_auth = auth;
    let fetched = opts.resolve_sources()?;
    let load_opts = crate::load::LoadOptions {
        root: opts.root.as_deref(),
        sources: Some(&fetched.trees),
        ..Default::default()
    };
    let loaded = crate::load::load(opts.fs.as_ref(), &opts.platform_dir, &load_opts)
        .map_err(KilnError::Load)?;
    let platform = crate::validate::validate(loaded).map_err(KilnError::Validate)?;
    let plans =
        crate::evaluate::evaluate(&platform, &opts.selection).map_err(KilnError::Evaluate)?;
    if crate::cache::pipeline_inputs(SHARD_FORMAT, &platform, &plans) != first.pipeline_inputs
        || !inputs_unchanged(&platform.root, fetched.roots(), &infos)
    {
        return Err(KilnError::Merge(MergeError::InputsChanged {
            platform_dir: first.platform_dir.display().to_string(),
        }));
    }
    let kinds = infos.iter().flat_map(|s| s.cluster_kinds.clone()).collect();
    let set = emit(
        set,
        &platform,
        &plans,
        kargo_options(&plans, &opts, kinds).as_ref(),
    )
    .map_err(KilnError::Kargo)?;
    let scope = slice_scope(set.paths(), &opts.selection);
    let environments = platform.environment_names();
    let report = write(
        &set,
        out,
        &WriteOptions {
            scope,
            environments: &environments,
            ..Default::default()
        },
    )
    .map_err(KilnError::Write)?;
    Ok(MergeSummary {
        files: set.len(),
        report,
    })
}
