//! Scale features of `kiln render` (issue 13), on small platforms from the synthetic
//! generator `examples/synth.rs` (included here as a module): the generator itself, the
//! shared kustomize build, the render cache (hits, invalidation, corrupt entries), sharding
//! and `kiln merge`, `--timings`. Speed itself is measured in docs/BENCHMARKS.md, never here.
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

#[path = "../examples/synth.rs"]
#[allow(dead_code)]
pub(crate) mod synth;

use kiln::pipeline::{RenderOptions, Shard, build, run_merge, run_render};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const N: usize = 8;
const E: usize = 3;

fn generate(dir: &Path, components: usize, environments: usize) {
    synth::generate(&synth::Args::new(components, environments, dir));
}

fn platform() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    generate(t.path(), N, E);
    t
}

fn opts(root: &Path, out: &str, cache: Option<&str>) -> RenderOptions {
    let mut o = RenderOptions::new(root.join("platforms/synth"));
    o.root = Some(root.to_path_buf());
    o.write_to = root.join(out);
    o.cache_dir = cache.map(|c| root.join(c));
    // The key lives beside the tree, outside the cache directory (the CLI keeps it in the
    // user's cache home).
    o.cache_key = cache.map(|_| root.join("cache-key"));
    o
}

/// `body` behind the tag line the cache writes: HMAC-SHA256 under the key `opts` set up in
/// `root`, for `purpose` (`entry`, `journal`). Tests that must get past the tag use it.
fn seal(root: &Path, purpose: &str, body: &[u8]) -> Vec<u8> {
    use hmac::Mac;
    let hexkey = std::fs::read_to_string(root.join("cache-key")).unwrap();
    let key: Vec<u8> = (0..64)
        .step_by(2)
        .map(|i| u8::from_str_radix(&hexkey[i..i + 2], 16).unwrap())
        .collect();
    let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    m.update(purpose.as_bytes());
    m.update(b"\n");
    m.update(body);
    let mut out = format!("{}\n", kiln_base::digest::hex(&m.finalize().into_bytes())).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Every file under `dir` (relative path → bytes).
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Asserts two trees are equal, naming the paths that differ (never printing the bytes).
fn assert_same(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>, what: &str) {
    let differ: Vec<&String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .collect();
    assert!(differ.is_empty(), "{what}: these files differ: {differ:?}");
}

fn render(o: &RenderOptions) -> kiln::pipeline::RenderSummary {
    run_render(o, &|_, _| {}).unwrap_or_else(|e| panic!("{:?}", miette::Report::new(e)))
}

#[test]
fn synth_is_deterministic_mixes_every_shape_and_renders() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    generate(a.path(), N, E);
    generate(b.path(), N, E);
    let files = tree(a.path());
    assert_same(&files, &tree(b.path()), "same arguments, same bytes");

    let all_components: String = files
        .iter()
        .filter(|(p, _)| p.ends_with("component.yaml"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    for shape in [
        "- files:",
        "- kustomize: base",
        "- kustomize: overlay",
        "- resources:",
        "- configMapGenerator:",
        "- secretGenerator:",
        "- jsonPatch:",
        "- mergePatch:",
        "- strategicMergePatch:",
        "    environments: [",
        "    digest: \"sha256:",
    ] {
        assert!(all_components.contains(shape), "no component has `{shape}`");
    }
    let kustomizations: String = files
        .iter()
        .filter(|(p, _)| p.ends_with("kustomization.yaml"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert!(
        kustomizations.contains("patches:") && kustomizations.contains("resources:\n- ../base")
    );
    let platform = String::from_utf8_lossy(&files["platforms/synth/platform.yaml"]).into_owned();
    // Parameter layers 2-6: platform, environment, project, instance, instance-per-environment.
    for layer in [
        "spec:\n  source:",
        "  parameters:\n    domain:",
        "    parameters:\n      domain: dev.",
        "    parameters:\n      team: team-",
        "      parameters:\n        replicas:",
        "          parameters:\n            replicas:",
    ] {
        assert!(platform.contains(layer), "platform.yaml lacks `{layer}`");
    }

    let s = render(&opts(a.path(), "deploy", None));
    assert_eq!(s.plans, N * E);
    let deploy = tree(&a.path().join("deploy"));
    assert!(deploy.contains_key("p0000/dev/c00001/c00001.gen.yaml"));
    let gen_yaml =
        String::from_utf8_lossy(&deploy["p0000/stage/c00002/c00002.gen.yaml"]).into_owned();
    assert!(
        gen_yaml.contains("name: o-c00002-config-"),
        "overlay prefix and hash suffix"
    );
    assert!(
        gen_yaml.contains("topologySpreadConstraints"),
        "last-environment patch"
    );
}

#[test]
fn a_kustomize_base_is_built_once_for_all_environments() {
    let t = platform();
    let (platform, mut plans) = kiln::pipeline::plan(
        &kiln::fs::RealFs,
        &t.path().join("platforms/synth"),
        Some(t.path()),
        &Default::default(),
    )
    .unwrap();
    let fs = Watched::default();
    let out = kiln::render::render(&mut plans, &platform.sources, &fs, &|p, render| {
        render().map(|r| (p.key(), r.resources.len()))
    })
    .unwrap();
    assert_eq!(out.len(), N * E);
    assert_eq!(out[0].0, plans[0].key(), "results in plan order");
    let calls = fs.0.lock().unwrap();
    let base = calls
        .iter()
        .filter(|(op, p)| *op == "read" && p.ends_with("components/c00001/base/kustomization.yaml"))
        .count();
    assert_eq!(base, 1, "built once, not once per environment: {calls:?}");
}

#[test]
fn a_no_op_render_is_all_cache_hits_and_one_change_misses_only_its_plans() {
    let t = platform();
    let o = opts(t.path(), "deploy", Some("cache"));
    let first = render(&o);
    assert_eq!((first.cache.hits, first.cache.misses), (0, N * E));
    // Unchanged input: the journal skips every stage.
    let again = render(&o);
    assert!(again.journal && again.report.is_noop());
    assert_eq!((again.cache.hits, again.cache.misses), (0, 0));
    // Without the journal, every BuildPlan is a cache hit.
    std::fs::remove_dir_all(t.path().join("cache/journal")).unwrap();
    let again = render(&o);
    assert!(!again.journal);
    assert_eq!((again.cache.hits, again.cache.misses), (N * E, 0));
    assert!(again.report.is_noop());

    // A file of a kustomize base: not in the key, found by replaying the recorded reads.
    let svc = t.path().join("components/c00001/base/service.yaml");
    let text = std::fs::read_to_string(&svc).unwrap();
    std::fs::write(&svc, text.replace("port: 80", "port: 81")).unwrap();
    let changed = render(&o);
    // Only the render read it: the journal re-renders that component's plans alone.
    assert_eq!(changed.incremental, Some(E));
    assert_eq!((changed.cache.hits, changed.cache.misses), (0, E));
    let fresh = opts(t.path(), "fresh", None);
    render(&fresh);
    assert_same(
        &tree(&o.write_to),
        &tree(&fresh.write_to),
        "cached vs fresh",
    );
    assert!(
        String::from_utf8_lossy(&tree(&o.write_to)["p0000/dev/c00001/c00001.gen.yaml"])
            .contains("port: 81")
    );

    // A plain file of another component: in the key.
    let dep = t.path().join("components/c00000/deployment.yaml");
    let text = std::fs::read_to_string(&dep).unwrap();
    std::fs::write(&dep, text.replace("memory: 128Mi", "memory: 192Mi")).unwrap();
    let changed = render(&o);
    assert_eq!(changed.cache.misses, E);
}

#[test]
fn corrupt_or_stale_cache_entries_never_change_the_output() {
    let t = platform();
    let o = opts(t.path(), "deploy", Some("cache"));
    render(&o);
    let expected = tree(&o.write_to);
    let cache = t.path().join("cache");
    let entries: Vec<PathBuf> = tree(&cache)
        .keys()
        .filter(|k| !k.starts_with("journal/"))
        .map(|k| cache.join(k))
        .collect();
    assert_eq!(entries.len(), N * E);
    let other = std::fs::read(&entries[1]).unwrap();
    for (i, e) in entries.iter().enumerate() {
        let bytes = std::fs::read(e).unwrap();
        let corrupt: Vec<u8> = match i % 6 {
            // A flipped byte in the body.
            0 => {
                let mut b = bytes.clone();
                let at = b.len() - 20;
                b[at] ^= 0x20;
                b
            }
            1 => bytes[..bytes.len() / 2].to_vec(),
            2 => Vec::new(),
            3 => b"not a cache entry".to_vec(),
            // Another entry's intact bytes under this key.
            4 => other.clone(),
            // A correct tag over a body of the wrong shape.
            _ => {
                let key = e.file_stem().unwrap().to_string_lossy().into_owned();
                let body = format!("{{\"key\": \"{key}\", \"files\": 7}}");
                seal(t.path(), "entry", body.as_bytes())
            }
        };
        std::fs::write(e, corrupt).unwrap();
    }
    let o2 = opts(t.path(), "deploy2", Some("cache"));
    let s = render(&o2);
    // Every entry but those holding another entry's bytes is unusable; those are refused
    // because the key inside does not match.
    assert_eq!((s.cache.hits, s.cache.misses), (0, N * E), "{:?}", s.cache);
    assert_same(&tree(&o2.write_to), &expected, "after corrupting the cache");
    // The misses were re-stored: the next render (without its journal) hits everything.
    std::fs::remove_dir_all(cache.join("journal")).unwrap();
    assert_eq!(render(&o2).cache.hits, N * E);
}

/// Issue 39, item 2: an entry rewritten with a plain SHA-256 digest line (all that
/// authenticated it before) is a miss: the forged files never reach the output.
#[test]
fn a_forged_cache_entry_with_a_recomputed_digest_is_a_miss() {
    let t = platform();
    let o = opts(t.path(), "deploy", Some("cache"));
    render(&o);
    let expected = tree(&o.write_to);
    let cache = t.path().join("cache");
    std::fs::remove_dir_all(cache.join("journal")).unwrap();
    for (k, bytes) in tree(&cache) {
        let body = &bytes[bytes.iter().position(|b| *b == b'\n').unwrap() + 1..];
        let mut v: serde_json::Value = serde_json::from_slice(body).unwrap();
        for f in v["files"].as_array_mut().unwrap() {
            f[1] =
                serde_json::json!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: forged\n");
        }
        let body = serde_json::to_vec(&v).unwrap();
        // A forger without the key writes a plain SHA-256 where the HMAC goes.
        let mut forged = format!("{}\n", kiln_base::digest::sha256_hex(&body)).into_bytes();
        forged.extend_from_slice(&body);
        std::fs::write(cache.join(k), forged).unwrap();
    }
    let o2 = opts(t.path(), "deploy2", Some("cache"));
    let s = render(&o2);
    assert_eq!(s.cache.hits, 0, "{:?}", s.cache);
    assert_same(&tree(&o2.write_to), &expected, "after forging the cache");
}

/// Issue 39, item 2: a journal forged with a plain digest (its recorded calls dropped, so
/// that nothing would be replayed) does not skip the render of a changed spec.
#[test]
fn a_forged_journal_does_not_skip_a_changed_spec() {
    let t = platform();
    let root = t.path();
    let o = opts(root, "deploy", Some("cache"));
    render(&o);
    let journal = std::fs::read_dir(root.join("cache/journal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let bytes = std::fs::read(&journal).unwrap();
    let body = &bytes[bytes.iter().position(|b| *b == b'\n').unwrap() + 1..];
    let mut v: serde_json::Value = serde_json::from_slice(body).unwrap();
    v["load_reads"] = serde_json::json!([]);
    v["component_reads"] = serde_json::json!([]);
    v["render_reads"] = serde_json::json!([]);
    let body = serde_json::to_vec(&v).unwrap();
    let mut forged = format!("{}\n", kiln_base::digest::sha256_hex(&body)).into_bytes();
    forged.extend_from_slice(&body);
    std::fs::write(&journal, forged).unwrap();
    edit(
        root,
        "components/c00001/base/deployment.yaml",
        "memory: 128Mi",
        "memory: 999Mi",
    );
    let s = render(&o);
    assert!(!s.journal, "a forged journal skipped the render");
    assert_same(
        &tree(&o.write_to),
        &no_cache(root, "fresh"),
        "after the change",
    );
}

/// The real disk, noting every call asked of it: the operation and the path.
#[derive(Debug, Default)]
struct Watched(std::sync::Mutex<Vec<(&'static str, PathBuf)>>);

impl Watched {
    fn note(&self, op: &'static str, p: &Path) {
        self.0.lock().unwrap().push((op, p.to_path_buf()));
    }
}

impl kiln::fs::FileSystem for Watched {
    fn read(&self, p: &Path) -> std::io::Result<Vec<u8>> {
        self.note("read", p);
        kiln::fs::RealFs.read(p)
    }
    fn is_dir(&self, p: &Path) -> bool {
        self.note("is_dir", p);
        kiln::fs::RealFs.is_dir(p)
    }
    fn is_file(&self, p: &Path) -> bool {
        self.note("is_file", p);
        kiln::fs::RealFs.is_file(p)
    }
    fn read_dir(&self, p: &Path) -> std::io::Result<Vec<PathBuf>> {
        self.note("read_dir", p);
        kiln::fs::RealFs.read_dir(p)
    }
    fn canonicalize(&self, p: &Path) -> std::io::Result<PathBuf> {
        self.note("canonicalize", p);
        kiln::fs::RealFs.canonicalize(p)
    }
}

/// Issue 39, item 2: a journal naming a file outside the root (here with a valid tag: the
/// confinement is a wall of its own) is dropped before any of its paths is opened.
#[test]
fn a_journal_naming_a_path_outside_the_root_opens_nothing() {
    let t = platform();
    let root = t.path();
    let mut o = opts(root, "deploy", Some("cache"));
    render(&o);
    let outside = tempfile::tempdir().unwrap();
    let shadow = outside.path().join("shadow");
    std::fs::write(&shadow, "root:$6$FAKE:19000:0:99999:7:::\n").unwrap();
    for part in ["load_reads", "render_reads"] {
        let path = shadow.display().to_string();
        rewrite_journal(&root.join("cache"), &|v| {
            v[part].as_array_mut().unwrap().push(serde_json::json!({
                "op": "read", "path": path, "result": "0".repeat(64)
            }));
        });
        let watched = std::sync::Arc::new(Watched::default());
        o.fs = watched.clone();
        let s = render(&o);
        assert!(!s.journal, "{part}");
        let seen = watched.0.lock().unwrap();
        assert!(
            !seen.iter().any(|(_, p)| p.starts_with(outside.path())),
            "{part}: {seen:?}"
        );
    }
}

#[test]
fn shards_are_balanced_and_merge_byte_identical_to_a_full_render() {
    let t = tempfile::tempdir().unwrap();
    generate(t.path(), 11, E);
    let full = opts(t.path(), "full", None);
    render(&full);
    let count = 3;
    let mut dirs = Vec::new();
    let mut seen = Vec::new();
    for index in 1..=count {
        let mut o = opts(t.path(), &format!("shard-{index}"), None);
        o.shard = Some(Shard { index, count });
        let b = build(&o, &|_, _| {}).unwrap();
        seen.extend(b.plans.iter().map(|p| p.key()));
        // 11 instances of 3 environments over 3 shards: 4, 4, 3 instances.
        assert!(
            b.plans.len() == 12 || b.plans.len() == 9,
            "{}",
            b.plans.len()
        );
        render(&o);
        dirs.push(o.write_to.clone());
    }
    seen.sort();
    let total = seen.len();
    seen.dedup();
    assert_eq!(
        (total, seen.len()),
        (11 * E, 11 * E),
        "each plan in exactly one shard"
    );

    let merged = t.path().join("merged");
    run_merge(&dirs, &merged, Default::default()).unwrap();
    let (a, b) = (tree(&full.write_to), tree(&merged));
    assert_same(&a, &b, "merged vs unsharded");
    // The AppProject allows the cluster-scoped kinds of every shard, not only the first's.
    let all: String = a
        .values()
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    assert!(all.contains("kind: AppProject"));
    let project = String::from_utf8_lossy(&a["bootstrap/appproject.yaml"]).into_owned();
    assert!(
        project.contains("kind: ClusterRole\n") && project.contains("kind: PriorityClass\n"),
        "{project}"
    );
    assert!(a.contains_key(".kiln-owned.json"));
    // Merging again is a no-op, like rendering again.
    assert!(
        run_merge(&dirs, &merged, Default::default())
            .unwrap()
            .report
            .is_noop()
    );
}

/// Renders the platform under `root` as shards 1/2 and 2/2; their directories.
fn render_two_shards(root: &Path) -> Vec<PathBuf> {
    (1..=2)
        .map(|index| {
            let mut o = opts(root, &format!("s{index}"), None);
            o.shard = Some(Shard { index, count: 2 });
            render(&o);
            o.write_to
        })
        .collect()
}

#[test]
fn merge_refuses_conflicting_shards_and_directories_without_a_marker() {
    let t = platform();
    let dirs = render_two_shards(t.path());
    // The same file in both shards with different bytes.
    let s1 = tree(&dirs[0]);
    let (path, _) = s1.iter().find(|(p, _)| p.ends_with(".gen.yaml")).unwrap();
    std::fs::create_dir_all(dirs[1].join(path).parent().unwrap()).unwrap();
    std::fs::write(dirs[1].join(path), "other\n").unwrap();
    let marker = dirs[1].join(".kiln-owned.json");
    let m = std::fs::read_to_string(&marker).unwrap();
    std::fs::write(
        &marker,
        m.replacen("\"files\": [", &format!("\"files\": [\n    \"{path}\","), 1),
    )
    .unwrap();
    let err = run_merge(&dirs, &t.path().join("m"), Default::default()).unwrap_err();
    let code = miette::Diagnostic::code(&err).map(|c| c.to_string());
    assert_eq!(code.as_deref(), Some("kiln::merge::conflict"), "{err}");
    assert!(!t.path().join("m").exists(), "nothing written");

    let err = run_merge(
        &[t.path().join("components")],
        &t.path().join("m"),
        Default::default(),
    )
    .unwrap_err();
    let code = miette::Diagnostic::code(&err).map(|c| c.to_string());
    assert_eq!(code.as_deref(), Some("kiln::merge::not_a_shard"));
}

/// Issue 39, item 4: a shard tree is input. A manifest that is a link to a file outside
/// (a Secret), a linked directory, or a link in place of the marker is never followed: merge
/// refuses the shard and writes nothing.
#[cfg(unix)]
#[test]
fn merge_never_follows_links_in_shard_trees() {
    let t = platform();
    let outside = tempfile::tempdir().unwrap();
    let secret =
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: stolen\ndata:\n  token: Z2hwX0ZBS0U=\n";
    std::fs::write(outside.path().join("secret.yaml"), secret).unwrap();
    let dirs = render_two_shards(t.path());
    let files: Vec<String> = tree(&dirs[1])
        .into_keys()
        .filter(|p| p.ends_with(".gen.yaml"))
        .collect();
    let victim = dirs[1].join(&files[0]);
    let saved = std::fs::read(&victim).unwrap();
    // A manifest replaced by a link to the outside file.
    std::fs::remove_file(&victim).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.yaml"), &victim).unwrap();
    let out = t.path().join("m");
    let err = run_merge(&dirs, &out, Default::default()).unwrap_err();
    let code = miette::Diagnostic::code(&err).map(|c| c.to_string());
    assert_eq!(code.as_deref(), Some("kiln::merge::not_a_shard"), "{err}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(!out.exists(), "nothing written");
    std::fs::remove_file(&victim).unwrap();
    std::fs::write(&victim, &saved).unwrap();
    // Its directory replaced by a link to a copy of it outside.
    let dir = victim.parent().unwrap();
    let copy = outside.path().join("copy");
    std::fs::rename(dir, &copy).unwrap();
    std::fs::write(copy.join(victim.file_name().unwrap()), secret).unwrap();
    std::os::unix::fs::symlink(&copy, dir).unwrap();
    let err = run_merge(&dirs, &out, Default::default()).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(!out.exists(), "nothing written");
    // The marker itself a link.
    let marker = dirs[0].join(".kiln-owned.json");
    std::fs::rename(&marker, outside.path().join("marker.json")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("marker.json"), &marker).unwrap();
    let err = run_merge(&dirs, &out, Default::default()).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(!out.exists(), "nothing written");
}

/// Merge loads the platform again for the Kargo and Argo CD objects: from a checkout that
/// differs from the one the shards were rendered from (here `spec.source.branch`, which every
/// Warehouse and Stage reads) it refuses, writing nothing, instead of mixing the two.
#[test]
fn merge_refuses_a_platform_that_changed_since_the_shards_were_rendered() {
    let t = tempfile::tempdir().unwrap();
    generate(t.path(), 4, E);
    let dirs = render_two_shards(t.path());
    let platform = t.path().join("platforms/synth/platform.yaml");
    let original = std::fs::read_to_string(&platform).unwrap();
    let code =
        |err: &kiln::pipeline::KilnError| miette::Diagnostic::code(err).map(|c| c.to_string());
    let edited = if original.contains("branch:") {
        original.replacen("branch: main", "branch: release", 1)
    } else {
        original.replacen("source:\n", "source:\n    branch: release\n", 1)
    };
    assert_ne!(edited, original, "the test edits spec.source");
    std::fs::write(&platform, &edited).unwrap();
    let err = run_merge(&dirs, &t.path().join("m"), Default::default()).unwrap_err();
    assert_eq!(
        code(&err).as_deref(),
        Some("kiln::merge::inputs_changed"),
        "{err}"
    );
    assert!(!t.path().join("m").exists(), "nothing written");
    std::fs::write(&platform, &original).unwrap();
    run_merge(&dirs, &t.path().join("m"), Default::default()).unwrap();
}

#[test]
fn shard_flag_rejects_bad_values() {
    for bad in ["0/2", "3/2", "1", "a/b", "1/0"] {
        assert!(bad.parse::<Shard>().is_err(), "{bad}");
    }
    assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
}

#[test]
fn timings_name_every_stage() {
    let t = platform();
    let xdg = tempfile::tempdir().unwrap();
    let out = crate::support::kiln_bin()
        .env("XDG_CACHE_HOME", xdg.path())
        .current_dir(t.path())
        .args([
            "render",
            "platforms/synth",
            "--timings",
            "--write-to",
            "deploy",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for stage in [
        "source", "load", "spec", "evaluate", "render", "emit", "validate", "write", "total",
    ] {
        assert!(
            err.lines().any(|l| l.trim_start().starts_with(stage)),
            "no `{stage}` line in:\n{err}"
        );
    }
    assert!(
        err.contains(&format!("cache: 0 hits, {} misses", N * E)),
        "{err}"
    );
    // The default cache is outside the checkout, under the user's cache home, with its key.
    assert!(!t.path().join(".kiln").exists(), "no cache in the checkout");
    let home = xdg.path().join("kiln");
    let dirs: Vec<String> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        dirs.iter()
            .any(|d| d.len() == 64 && home.join(d).join("journal").is_dir()),
        "{dirs:?}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(home.join("key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the key is the user's alone");
    let again = crate::support::kiln_bin()
        .env("XDG_CACHE_HOME", xdg.path())
        .current_dir(t.path())
        .args([
            "render",
            "platforms/synth",
            "--timings",
            "--write-to",
            "deploy",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("skipped: the journal"), "{err}");
}

#[test]
fn the_journal_skips_a_render_only_when_inputs_and_output_are_unchanged() {
    let t = platform();
    let o = opts(t.path(), "deploy", Some("cache"));
    assert!(!render(&o).journal);
    let expected = tree(&o.write_to);
    assert!(render(&o).journal, "unchanged input and output: skipped");

    // An output file edited by hand, same size, its mtime put back: the stamp (ctime,
    // inode) still tells, the render runs and restores it.
    let out_file = o.write_to.join("p0000/dev/c00001/c00001.gen.yaml");
    let before = std::fs::metadata(&out_file).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&out_file).unwrap();
    std::fs::write(&out_file, text.replace("kind: Service", "kind: Sxrvice")).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&out_file)
        .unwrap()
        .set_modified(before)
        .unwrap();
    let s = render(&o);
    assert!(!s.journal && s.report.written == ["p0000/dev/c00001/c00001.gen.yaml"]);
    assert_same(&tree(&o.write_to), &expected, "edited output restored");

    // A deleted output file: restored.
    std::fs::remove_file(&out_file).unwrap();
    assert!(!render(&o).journal);
    assert_same(&tree(&o.write_to), &expected, "deleted output restored");
    assert!(render(&o).journal);

    // A corrupt journal (each way) is ignored; the output stays the same.
    let journal_dir = t.path().join("cache/journal");
    let journal = std::fs::read_dir(&journal_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let good = std::fs::read(&journal).unwrap();
    let mut flipped = good.clone();
    let at = flipped.len() - 30;
    flipped[at] ^= 0x01;
    for bad in [flipped, good[..good.len() / 2].to_vec(), b"{}".to_vec()] {
        std::fs::write(&journal, bad).unwrap();
        assert!(!render(&o).journal);
        assert_same(
            &tree(&o.write_to),
            &expected,
            "after corrupting the journal",
        );
    }

    // A changed input of one component (a file of its kustomize base, read only by the
    // render): not skipped; only that component's BuildPlans are rendered again, and the
    // tree is byte for byte a cold render's.
    let svc = t.path().join("components/c00001/base/service.yaml");
    let text = std::fs::read_to_string(&svc).unwrap();
    std::fs::write(&svc, text.replace("port: 80", "port: 82")).unwrap();
    let s = render(&o);
    assert!(!s.journal);
    assert_eq!(s.incremental, Some(E));
    assert_eq!((s.cache.hits, s.cache.misses), (0, E));
    let cold = opts(t.path(), "cold", None);
    render(&cold);
    assert_same(
        &tree(&o.write_to),
        &tree(&cold.write_to),
        "incremental vs cold",
    );
    assert!(render(&o).journal);

    // A new file where load looks (a component directory listing is an input too): a file
    // next to `component.yaml` that nothing reads does not matter, a changed platform does.
    let pf = t.path().join("platforms/synth/platform.yaml");
    let text = std::fs::read_to_string(&pf).unwrap();
    std::fs::write(&pf, format!("{text}\n")).unwrap();
    assert!(!render(&o).journal, "platform.yaml changed");
}

/// Replaces `from` by `to` in the file `rel` under `root` (which must contain it).
fn edit(root: &Path, rel: &str, from: &str, to: &str) {
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{rel} has no `{from}`");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

/// A render without cache into `out`, its tree.
fn no_cache(root: &Path, out: &str) -> BTreeMap<String, Vec<u8>> {
    let o = opts(root, out, None);
    render(&o);
    tree(&o.write_to)
}

#[test]
fn an_incremental_render_after_a_one_component_change_is_a_no_cache_render() {
    // Three projects, so that evaluating one component alone leaves projects out.
    let t = tempfile::tempdir().unwrap();
    synth::generate(&synth::Args {
        projects: 3,
        ..synth::Args::new(N, E, t.path())
    });
    let root = t.path();
    let o = opts(root, "deploy", Some("cache"));
    render(&o);
    let before = tree(&o.write_to);

    // A file of one component's kustomize base, read by the render only: its BuildPlans
    // alone are rendered again, only its changed files written.
    edit(
        root,
        "components/c00001/base/deployment.yaml",
        "memory: 128Mi",
        "memory: 160Mi",
    );
    let s = render(&o);
    assert_eq!(s.incremental, Some(E), "{:?}", s.report);
    assert_eq!((s.cache.hits, s.cache.misses), (0, E));
    assert!(!s.report.written.is_empty());
    assert!(
        s.report.written.iter().all(|p| p.contains("/c00001/")),
        "{:?}",
        s.report.written
    );
    let after = tree(&o.write_to);
    assert_same(&after, &no_cache(root, "fresh1"), "kustomize base changed");
    assert_ne!(after, before);
    assert!(
        render(&o).journal,
        "the incremental render left a journal of its tree"
    );

    // The same component again, with another plan's output edited by hand meanwhile: the
    // reused file no longer is what was written, so the render runs in full and restores it.
    edit(
        root,
        "components/c00001/base/deployment.yaml",
        "memory: 160Mi",
        "memory: 176Mi",
    );
    let other = o.write_to.join("p0000/dev/c00000/c00000.gen.yaml");
    let text = std::fs::read_to_string(&other).unwrap();
    std::fs::write(&other, format!("{text}# edited\n")).unwrap();
    let s = render(&o);
    assert_eq!(s.incremental, None);
    assert_same(
        &tree(&o.write_to),
        &no_cache(root, "fresh2"),
        "edited output",
    );

    // A component's own component.yaml (a parameter default): load read it for that
    // component alone, so only that component is loaded, evaluated and rendered again;
    // same bytes as no cache.
    edit(
        root,
        "components/c00002/component.yaml",
        "default: \"off\"",
        "default: \"on\"",
    );
    let s = render(&o);
    assert_eq!(s.incremental, Some(E), "{:?}", s.report);
    assert_eq!((s.cache.hits, s.cache.misses), (0, E));
    assert!(
        !s.report.written.is_empty() && s.report.written.iter().all(|p| p.contains("c00002")),
        "{:?}",
        s.report.written
    );
    assert_same(
        &tree(&o.write_to),
        &no_cache(root, "fresh3"),
        "component.yaml changed",
    );
    assert!(render(&o).journal);
}

#[test]
fn a_param_layer_or_platform_change_invalidates_every_plan_it_reaches() {
    let t = platform();
    let root = t.path();
    let o = opts(root, "deploy", Some("cache"));
    render(&o);

    // An environment's parameter layer in platform.yaml: every component in that
    // environment changes; nothing incremental, every such plan rendered again.
    edit(
        root,
        "platforms/synth/platform.yaml",
        "logLevel: debug",
        "logLevel: error",
    );
    let s = render(&o);
    assert_eq!(s.incremental, None);
    assert_eq!(
        s.cache.misses, N,
        "every component of the first environment"
    );
    let dev: Vec<&String> = s
        .report
        .written
        .iter()
        .filter(|p| p.contains("/dev/"))
        .collect();
    assert!(dev.len() >= N, "{:?}", s.report.written);
    assert_same(
        &tree(&o.write_to),
        &no_cache(root, "fresh1"),
        "environment layer",
    );

    // A project's layer reaches its components in every environment.
    edit(
        root,
        "platforms/synth/platform.yaml",
        "team: team-0\n",
        "team: team-zero\n",
    );
    let s = render(&o);
    assert_eq!(s.incremental, None);
    assert!(s.cache.misses >= E, "{:?}", s.cache);
    assert_same(
        &tree(&o.write_to),
        &no_cache(root, "fresh2"),
        "project layer",
    );

    // Then a render-only change: incremental again, on the journal the full renders left.
    edit(
        root,
        "components/c00001/base/deployment.yaml",
        "memory: 128Mi",
        "memory: 160Mi",
    );
    assert_eq!(render(&o).incremental, Some(E));
    assert_same(
        &tree(&o.write_to),
        &no_cache(root, "fresh3"),
        "after the layers",
    );
}

/// The journal's body rewritten by `change`, with a correct tag (so that only the checks of
/// the content can refuse it); the key is `cache`'s sibling `cache-key`.
fn rewrite_journal(cache: &Path, change: &dyn Fn(&mut serde_json::Value)) {
    let dir = cache.join("journal");
    let path = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let body = &bytes[bytes.iter().position(|b| *b == b'\n').unwrap() + 1..];
    let mut v: serde_json::Value = serde_json::from_slice(body).unwrap();
    change(&mut v);
    let body = serde_json::to_vec(&v).unwrap();
    std::fs::write(&path, seal(cache.parent().unwrap(), "journal", &body)).unwrap();
}

#[test]
fn journal_records_that_do_not_check_out_never_change_the_output() {
    let t = platform();
    let root = t.path();
    let o = opts(root, "deploy", Some("cache"));
    let cache = root.join("cache");
    render(&o);
    let plan = |v: &serde_json::Value, c: &str| -> usize {
        v["records"]
            .as_array()
            .unwrap()
            .iter()
            .position(|r| r["component"] == c && r["environment"] == "dev")
            .unwrap()
    };
    // Each way a plan record can be wrong for the plans a change reaches: another key (the
    // BuildPlan evaluated again is not the one recorded), files of another plan, no files,
    // a file index past the end.
    type Break<'a> = (&'a str, &'a dyn Fn(&mut serde_json::Value));
    let breaks: [Break; 4] = [
        ("key", &|v| {
            let i = plan(v, "c00001");
            v["records"][i]["key"] = serde_json::json!("0".repeat(64));
        }),
        ("files of another plan", &|v| {
            let (i, k) = (plan(v, "c00001"), plan(v, "c00003"));
            v["records"][i]["files"] = v["records"][k]["files"].clone();
        }),
        ("no files", &|v| {
            let i = plan(v, "c00001");
            v["records"][i]["files"] = serde_json::json!([]);
        }),
        ("index past the end", &|v| {
            let i = plan(v, "c00001");
            v["records"][i]["files"] = serde_json::json!([u32::MAX]);
        }),
    ];
    for (n, (what, change)) in breaks.iter().enumerate() {
        rewrite_journal(&cache, change);
        let memory = [
            "memory: 128Mi",
            "memory: 144Mi",
            "memory: 160Mi",
            "memory: 176Mi",
        ];
        let next = [
            "memory: 144Mi",
            "memory: 160Mi",
            "memory: 176Mi",
            "memory: 192Mi",
        ];
        edit(
            root,
            "components/c00001/base/deployment.yaml",
            memory[n],
            next[n],
        );
        let s = render(&o);
        assert_eq!(s.incremental, None, "{what}");
        assert_same(
            &tree(&o.write_to),
            &no_cache(root, &format!("fresh{n}")),
            what,
        );
    }
}

/// Three projects, a full render with a cache into `deploy`: the journal is written.
fn incremental_platform() -> (tempfile::TempDir, RenderOptions) {
    let t = tempfile::tempdir().unwrap();
    synth::generate(&synth::Args {
        projects: 3,
        ..synth::Args::new(N, E, t.path())
    });
    let o = opts(t.path(), "deploy", Some("cache"));
    render(&o);
    (t, o)
}

/// Renders `o` after a change, expects `incremental` and a tree byte-identical to a render
/// without cache, and then a no-op render skipped by the journal the render left.
fn expect_after(o: &RenderOptions, incremental: Option<usize>, what: &str, n: usize) {
    let root = o.write_to.parent().unwrap();
    let s = render(o);
    assert_eq!(s.incremental, incremental, "{what}: {:?}", s.report);
    assert_same(
        &tree(&o.write_to),
        &no_cache(root, &format!("fresh{n}")),
        what,
    );
    assert!(
        render(o).journal,
        "{what}: the render left a journal of its tree"
    );
}

#[test]
fn a_component_load_change_renders_only_that_component_and_equals_a_no_cache_render() {
    let (t, o) = incremental_platform();
    let root = t.path();
    let cy = "components/c00002/component.yaml";

    // Its namespace transformer: only its manifests change.
    edit(
        root,
        cy,
        "namespace: \"${env.namespace}\"",
        "namespace: \"${env.namespace}-x\"",
    );
    expect_after(&o, Some(E), "namespace transformer", 0);

    // A `files:` manifest, read by load: that component alone.
    edit(
        root,
        "components/c00004/serviceaccount.yaml",
        "app: c00004",
        "app: c00004-sa",
    );
    expect_after(&o, Some(E), "files: manifest", 1);

    // A file under one component's directory read by another's `files:`: the reader is
    // one of the components that change, then both when the file changes.
    edit(
        root,
        "components/c00003/component.yaml",
        "files: [deployment.yaml]",
        "files: [deployment.yaml, ../c00004/serviceaccount.yaml]",
    );
    expect_after(&o, Some(E), "files: naming another component's file", 2);
    edit(
        root,
        "components/c00004/serviceaccount.yaml",
        "app: c00004-sa",
        "app: c00004-shared",
    );
    expect_after(&o, Some(2 * E), "a file two components' loads read", 3);
    let gen3 =
        std::fs::read_to_string(o.write_to.join("p0000/dev/c00003/c00003.gen.yaml")).unwrap();
    assert!(gen3.contains("c00004-shared"), "{gen3}");

    // Its images: its project's Warehouse and promotion steps read them, so that project's
    // Kargo and Argo CD files are generated again (and only those); same bytes as no cache.
    let kargo = o.write_to.join("p0002/kargo/c00002.yaml");
    let warehouse = std::fs::read_to_string(&kargo).unwrap();
    edit(root, cy, "constraint: \"^1.0.0\"", "constraint: \"^1.2.0\"");
    edit(root, cy, "tag: \"1.2.2\"", "tag: \"1.2.3\"");
    let s = render(&o);
    assert_eq!(s.incremental, Some(E), "images: {:?}", s.report);
    assert!(
        s.report.written.iter().all(|p| p.starts_with("p0002/")),
        "{:?}",
        s.report.written
    );
    assert_ne!(std::fs::read_to_string(&kargo).unwrap(), warehouse);
    assert_same(&tree(&o.write_to), &no_cache(root, "fresh4"), "images");
    assert!(render(&o).journal);

    // Its `metadata.name`, which names its instances: the BuildPlans' ids change, so the
    // render is a full one (Kargo objects, file paths), same bytes as no cache.
    edit(root, cy, "name: c00002\n", "name: c00002x\n");
    expect_after(&o, None, "metadata.name", 5);
    edit(root, cy, "name: c00002x\n", "name: c00002\n");
    expect_after(&o, None, "metadata.name back", 6);

    // A component added to a project and removed again (platform.yaml): a full render.
    let pf = "platforms/synth/platform.yaml";
    // A second instance of a component in one namespace owns the same objects as the first
    // (kiln::k8s::shared_resource, a real conflict): this step is about the journal, so the
    // platform turns the rule into a warning while the instance is there.
    let warn = "  validation:\n    warn: [shared_resource, cluster_scoped_conflict]\n  clusters:\n";
    edit(root, pf, "  clusters:\n", warn);
    edit(
        root,
        pf,
        "    - path: ../../components/c00003\n",
        "    - path: ../../components/c00004\n      name: extra\n    - path: ../../components/c00003\n",
    );
    expect_after(&o, None, "component added", 7);
    assert!(o.write_to.join("p0000/dev/extra").is_dir());
    edit(
        root,
        pf,
        "    - path: ../../components/c00004\n      name: extra\n",
        "",
    );
    edit(root, pf, warn, "  clusters:\n");
    expect_after(&o, None, "component removed", 8);
    assert!(!o.write_to.join("p0000/dev/extra").exists());

    // And a parameter default again: incremental on the journal the full renders left.
    edit(root, cy, "default: \"off\"", "default: \"on\"");
    expect_after(&o, Some(E), "parameter default", 9);
}

#[test]
fn a_component_change_that_fails_writes_nothing_and_keeps_the_journal() {
    let (t, o) = incremental_platform();
    let root = t.path();
    let before = tree(&o.write_to);
    let cy = "components/c00002/component.yaml";
    // A default its own schema refuses (evaluate), an unknown field (load's schema check),
    // a `files:` entry that does not exist (load): each an error, nothing written.
    use kiln::pipeline::KilnError;
    let breaks = [
        (
            "feature: {type: string,",
            "feature: {type: integer,",
            "evaluate",
        ),
        ("  generators:\n", "  colour: blue\n  generators:\n", "load"),
        (
            "files: [serviceaccount.yaml]",
            "files: [missing.yaml]",
            "load",
        ),
    ];
    for (from, to, stage) in breaks {
        edit(root, cy, from, to);
        let err = run_render(&o, &|_, _| {}).expect_err(to);
        let got = match err {
            KilnError::Load(_) => "load",
            KilnError::Evaluate(_) => "evaluate",
            _ => "other",
        };
        assert_eq!(got, stage, "{to}: {err}");
        assert_same(&tree(&o.write_to), &before, to);
        edit(root, cy, to, from);
        // Back as it was: the journal of the last good render still describes the tree.
        assert!(render(&o).journal, "{to}: journal kept");
    }
    // And it still drives an incremental render.
    edit(root, cy, "default: \"off\"", "default: \"on\"");
    expect_after(&o, Some(E), "after the errors", 0);
}

#[test]
fn journal_component_records_that_do_not_check_out_never_change_the_output() {
    let (t, o) = incremental_platform();
    let root = t.path();
    let cache = root.join("cache");
    let cy = "components/c00002/component.yaml";
    // Recorded facts that are not those of the re-evaluated BuildPlans, and a recorded
    // plan of the changed component that no longer exists: a full render, same bytes.
    type Break<'a> = (&'a str, &'a dyn Fn(&mut serde_json::Value));
    let breaks: [Break; 2] = [
        ("facts", &|v| {
            for r in v["records"].as_array_mut().unwrap() {
                if r["component"] == "c00002" {
                    r["facts"] = serde_json::json!("0".repeat(64));
                }
            }
        }),
        ("a plan that is not evaluated", &|v| {
            let records = v["records"].as_array_mut().unwrap();
            let i = records
                .iter()
                .position(|r| r["component"] == "c00002")
                .unwrap();
            let mut extra = records[i].clone();
            extra["environment"] = serde_json::json!("nowhere");
            extra["files"] = serde_json::json!([]);
            records.push(extra);
        }),
    ];
    // The journal as written does drive an incremental render of that change.
    edit(root, cy, "default: \"off\"", "default: \"no\"");
    expect_after(&o, Some(E), "journal as written", 9);
    edit(root, cy, "default: \"no\"", "default: \"off\"");
    expect_after(&o, Some(E), "journal as written, back", 10);
    let values = ["\"off\"", "\"on\"", "\"maybe\""];
    for (n, (what, change)) in breaks.iter().enumerate() {
        rewrite_journal(&cache, change);
        edit(
            root,
            cy,
            &format!("default: {}", values[n]),
            &format!("default: {}", values[n + 1]),
        );
        let s = render(&o);
        assert_eq!(s.incremental, None, "{what}");
        assert_same(
            &tree(&o.write_to),
            &no_cache(root, &format!("fresh{n}")),
            what,
        );
    }
}

/// Issue 38, item 8: the streamed render (each piece of BuildPlans rendered and released as
/// it is evaluated) writes the component files that evaluating every BuildPlan first and then
/// rendering them writes, byte for byte, on a platform of more than one piece (540 plans).
#[test]
fn a_streamed_render_equals_evaluating_every_plan_first() {
    let t = tempfile::tempdir().unwrap();
    generate(t.path(), 180, 3);
    let o = opts(t.path(), "deploy", None);
    let streamed = build(&o, &|_, _| {}).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(streamed.plans.len(), 540);
    let fs = kiln::fs::RealFs;
    let (platform, mut plans) = kiln::pipeline::plan(
        &fs,
        &o.platform_dir,
        Some(t.path()),
        &kiln::evaluate::Selection::default(),
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let whole = kiln::render::render(&mut plans, &platform.sources, &fs, &|_, r| {
        Ok(kiln::emit::emit_plan(&r()?, o.layout))
    })
    .unwrap_or_else(|e| panic!("{e:?}"));
    let whole: BTreeMap<String, Vec<u8>> = whole.into_iter().flatten().collect();
    assert!(whole.len() > 1000);
    for (path, bytes) in &whole {
        assert!(
            streamed.set.files.get(path) == Some(bytes),
            "{path} differs"
        );
    }
    let keys = |p: &[kiln::evaluate::BuildPlan]| p.iter().map(|p| p.key()).collect::<Vec<_>>();
    assert_eq!(keys(&streamed.plans), keys(&plans));
}
