//! `kiln diff`: what a render would change, compared with a directory or a committed tree.
//! Files are added, removed or changed; changed YAML files are compared per resource (matched
//! by kind/namespace/name across the documents of the stream) with a unified line diff of each
//! resource, so a reordered stream or one edited Deployment shows as exactly that.
//!
//! Sits after `emit` (the new side is an [`ArtifactSet`]) and reads the old side from disk or
//! Git only in [`load_dir`] and [`load_tree`]. The comparison itself ([`diff_sets`]) is pure.
//!
//! Invariant: reports are deterministic (paths sorted, resources in stream order) and
//! [`DiffReport::has_differences`] is true exactly when the two sets differ byte-wise.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{GitError, MARKER_FILE, RemoteAuth, lg, open_for_reading};
use crate::artifact::ArtifactSet;

/// Lines of context around each change, as `diff -u`.
const CONTEXT: usize = 3;

/// Beyond this many differing lines the diff is shown as a full replacement: Myers' trace
/// grows with the square of the edit distance.
const MAX_EDIT_DISTANCE: usize = 2000;

/// At most this many diff lines are printed per file (`kiln diff`, `kiln verify`): a stale
/// or new file of thousands of lines is summed up in one line after them (issue 39, item 20).
/// `-o json` keeps every line.
pub const SHOWN_LINES_PER_FILE: usize = 40;

/// Prints a file's diff lines, each after `indent`, up to [`SHOWN_LINES_PER_FILE`] of them
/// over every call for one file (`shown` counts them); the rest are counted in `hidden`.
pub(crate) fn write_bounded(
    f: &mut impl fmt::Write,
    text: &str,
    indent: &str,
    shown: &mut usize,
    hidden: &mut usize,
) -> fmt::Result {
    for line in text.lines() {
        if *shown < SHOWN_LINES_PER_FILE {
            *shown += 1;
            writeln!(f, "{indent}{line}")?;
        } else {
            *hidden += 1;
        }
    }
    Ok(())
}

/// The line after a file whose diff was cut: how much is not shown, and where it is.
pub(crate) fn write_hidden(f: &mut impl fmt::Write, indent: &str, hidden: usize) -> fmt::Result {
    if hidden > 0 {
        let s = if hidden == 1 { "" } else { "s" };
        writeln!(
            f,
            "{indent}… {hidden} more line{s} (`-o json` shows every line)"
        )?;
    }
    Ok(())
}

/// How a file or resource differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Added,
    Removed,
    Changed,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Removed => "removed",
            Status::Changed => "changed",
        }
    }
}

/// A resource's identity in a YAML stream.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceKey {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl fmt::Display for ResourceKey {
    /// `kind/namespace/name`, `kind/name` for cluster-scoped resources, `kind` for unnamed
    /// documents (a kustomization).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.is_empty() {
            return f.write_str(&self.kind);
        }
        match &self.namespace {
            Some(ns) => write!(f, "{}/{}/{}", self.kind, ns, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// One resource that differs inside a YAML file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDiff {
    pub status: Status,
    pub resource: ResourceKey,
    /// Unified diff of the resource's YAML (hunks only, no file header).
    pub diff: String,
}

/// One file that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    pub path: String,
    pub status: Status,
    /// Per-resource differences, for YAML streams that parse.
    pub resources: Vec<ResourceDiff>,
    /// Whole-file unified diff, for text files that are not (parseable) YAML.
    pub text_diff: Option<String>,
    /// The file is not UTF-8; only its presence/bytes are compared.
    pub binary: bool,
}

/// The difference between two artifact sets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffReport {
    pub files: Vec<FileDiff>,
}

impl DiffReport {
    /// `true` when anything differs (`kiln diff` then exits 1).
    pub fn has_differences(&self) -> bool {
        !self.files.is_empty()
    }
}

impl fmt::Display for DiffReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::new();
        self.write_text(&mut text)?;
        // Paths and contents come from Git (a committed tree, a hand edit): shown escaped.
        f.write_str(&super::history::printable(&text))
    }
}

impl DiffReport {
    /// The report as text, raw: [`fmt::Display`] makes it printable.
    fn write_text(&self, f: &mut String) -> fmt::Result {
        use fmt::Write as _;
        if self.files.is_empty() {
            return writeln!(f, "no differences");
        }
        for file in &self.files {
            // A path or a resource's name may hold a newline: escaped as a field, so it never
            // starts a line of its own (the whole text is made printable after).
            let path = super::history::printable_field(&file.path);
            writeln!(f, "{} {path}", file.status.word())?;
            let (mut shown, mut hidden) = (0, 0);
            for resource in &file.resources {
                let key = resource.resource.to_string();
                let key = super::history::printable_field(&key);
                writeln!(f, "  {} {key}", resource.status.word())?;
                write_bounded(f, &resource.diff, "    ", &mut shown, &mut hidden)?;
            }
            if let Some(text) = &file.text_diff {
                write_bounded(f, text, "    ", &mut shown, &mut hidden)?;
            }
            write_hidden(f, "    ", hidden)?;
            if file.binary && file.status == Status::Changed {
                writeln!(f, "    binary content differs")?;
            }
        }
        Ok(())
    }
}

/// Compares `old` (what is there) with `new` (the render).
pub fn diff_sets(old: &ArtifactSet, new: &ArtifactSet) -> DiffReport {
    let mut files = Vec::new();
    let paths: std::collections::BTreeSet<&String> =
        old.files.keys().chain(new.files.keys()).collect();
    for path in paths {
        let (a, b) = (old.files.get(path), new.files.get(path));
        if a == b {
            continue;
        }
        let status = match (a, b) {
            (None, _) => Status::Added,
            (_, None) => Status::Removed,
            _ => Status::Changed,
        };
        files.push(diff_file(path, status, a, b));
    }
    DiffReport { files }
}

fn diff_file(path: &str, status: Status, old: Option<&Vec<u8>>, new: Option<&Vec<u8>>) -> FileDiff {
    fn text(b: Option<&Vec<u8>>) -> Option<&str> {
        match b {
            None => Some(""),
            Some(bytes) => std::str::from_utf8(bytes).ok(),
        }
    }
    let mut out = FileDiff {
        path: path.to_string(),
        status,
        resources: Vec::new(),
        text_diff: None,
        binary: false,
    };
    let (Some(a), Some(b)) = (text(old), text(new)) else {
        out.binary = true;
        return out;
    };
    let is_yaml = path.ends_with(".yaml") || path.ends_with(".yml");
    if is_yaml && let (Some(da), Some(db)) = (split_documents(a), split_documents(b)) {
        out.resources = diff_documents(&da, &db);
        if !out.resources.is_empty() {
            return out;
        }
        // Same resources, different bytes (comments, separators): fall through to a text diff.
    }
    out.text_diff = Some(unified(a, b));
    out
}

/// One document of a YAML stream.
struct Document {
    key: ResourceKey,
    text: String,
    /// Lines of the file before the document's first line, for hunk headers.
    first_line: usize,
}

/// The string at `pointer` in `value`, if it is a string.
fn string_at(value: &serde_json::Value, pointer: &str) -> Option<String> {
    value.pointer(pointer)?.as_str().map(str::to_string)
}

/// Splits a YAML stream at `---` lines and names each document by kind/namespace/name.
/// `None` when a document does not parse (the caller then diffs the whole file as text).
fn split_documents(text: &str) -> Option<Vec<Document>> {
    let mut raw: Vec<(String, usize)> = vec![(String::new(), 0)];
    for (number, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" {
            raw.push((String::new(), number + 1));
            continue;
        }
        // `--- {inline: doc}` or `--- !tag`: the document starts on the marker line.
        if let Some(rest) = bare.strip_prefix("--- ") {
            raw.push((format!("{rest}\n"), number));
            continue;
        }
        if let Some((current, _)) = raw.last_mut() {
            current.push_str(line);
        }
    }
    let mut docs = Vec::new();
    let mut seen: BTreeMap<ResourceKey, usize> = BTreeMap::new();
    for (doc, first_line) in raw {
        let meaningful = doc
            .lines()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        if !meaningful {
            continue;
        }
        // Read with kiln's Kubernetes typing, so a name like `on` stays the string it is.
        let value = crate::yaml::parse_one("document", &doc).ok()?;
        let kind = string_at(&value, "/kind");
        let mut key = match (kind, string_at(&value, "/metadata/name")) {
            (Some(kind), Some(name)) => ResourceKey {
                kind,
                namespace: string_at(&value, "/metadata/namespace"),
                name,
            },
            // A kustomization or other unnamed document: known by its kind.
            (kind, _) => ResourceKey {
                kind: kind.unwrap_or_else(|| "document".to_string()),
                namespace: None,
                name: String::new(),
            },
        };
        // The same resource twice in one stream: number the repeats so both are compared.
        let count = seen.entry(key.clone()).or_insert(0);
        *count += 1;
        if *count > 1 {
            key.name = if key.name.is_empty() {
                format!("#{count}")
            } else {
                format!("{} (#{count})", key.name)
            };
        }
        docs.push(Document {
            key,
            text: doc,
            first_line,
        });
    }
    Some(docs)
}

fn diff_documents(old: &[Document], new: &[Document]) -> Vec<ResourceDiff> {
    let old_by_key: BTreeMap<&ResourceKey, &Document> = old.iter().map(|d| (&d.key, d)).collect();
    let new_keys: std::collections::BTreeSet<&ResourceKey> = new.iter().map(|d| &d.key).collect();
    let mut out = Vec::new();
    for doc in new {
        match old_by_key.get(&doc.key) {
            Some(before) if before.text == doc.text => {}
            Some(before) => out.push(ResourceDiff {
                status: Status::Changed,
                resource: doc.key.clone(),
                diff: unified_at(&before.text, before.first_line, &doc.text, doc.first_line),
            }),
            None => out.push(ResourceDiff {
                status: Status::Added,
                resource: doc.key.clone(),
                diff: unified_at("", 0, &doc.text, doc.first_line),
            }),
        }
    }
    for doc in old.iter().filter(|d| !new_keys.contains(&d.key)) {
        out.push(ResourceDiff {
            status: Status::Removed,
            resource: doc.key.clone(),
            diff: unified_at(&doc.text, doc.first_line, "", 0),
        });
    }
    out
}

/// One step of an edit script: indices into the old (`a`) and new (`b`) lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    Equal(usize, usize),
    Delete(usize),
    Insert(usize),
}

/// Shortest edit script between two line sequences (Myers 1986, "An O(ND) Difference
/// Algorithm"), after stripping the common prefix and suffix. Beyond
/// [`MAX_EDIT_DISTANCE`] the middle is reported as deleted then inserted.
fn edit_script(a: &[&str], b: &[&str]) -> Vec<Edit> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut script: Vec<Edit> = (0..prefix).map(|i| Edit::Equal(i, i)).collect();
    match myers(am, bm) {
        Some(middle) => script.extend(middle.into_iter().map(|e| match e {
            Edit::Equal(i, j) => Edit::Equal(i + prefix, j + prefix),
            Edit::Delete(i) => Edit::Delete(i + prefix),
            Edit::Insert(j) => Edit::Insert(j + prefix),
        })),
        None => {
            script.extend((0..am.len()).map(|i| Edit::Delete(i + prefix)));
            script.extend((0..bm.len()).map(|j| Edit::Insert(j + prefix)));
        }
    }
    let (sa, sb) = (a.len() - suffix, b.len() - suffix);
    script.extend((0..suffix).map(|i| Edit::Equal(sa + i, sb + i)));
    script
}

fn myers(a: &[&str], b: &[&str]) -> Option<Vec<Edit>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    // trace[d][k + d] = furthest x on diagonal k after d edits.
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let mut found = None;
    for d in 0..=(n + m) {
        if d as usize > MAX_EDIT_DISTANCE {
            return None;
        }
        let mut v = vec![0isize; (2 * d + 1) as usize];
        for k in (-d..=d).step_by(2) {
            let mut x = if d == 0 {
                0
            } else {
                let prev = &trace[(d - 1) as usize];
                let at = |k: isize| prev[(k + d - 1) as usize];
                if k == -d || (k != d && at(k - 1) < at(k + 1)) {
                    at(k + 1)
                } else {
                    at(k - 1) + 1
                }
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(k + d) as usize] = x;
            if x >= n && y >= m {
                found = Some(d);
            }
        }
        trace.push(v);
        if found.is_some() {
            break;
        }
    }
    let d_end = found?;
    let mut edits = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..=d_end).rev() {
        let prev = &trace[(d - 1) as usize];
        let at = |k: isize| prev[(k + d - 1) as usize];
        let k = x - y;
        let prev_k = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            edits.push(Edit::Equal(x as usize, y as usize));
        }
        if x == prev_x {
            y -= 1;
            edits.push(Edit::Insert(y as usize));
        } else {
            x -= 1;
            edits.push(Edit::Delete(x as usize));
        }
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        edits.push(Edit::Equal(x as usize, y as usize));
    }
    edits.reverse();
    Some(edits)
}

/// A unified diff (`@@ -l,s +l,s @@` hunks, three lines of context, as `diff -u`) of two texts.
/// Empty when they are equal.
pub fn unified(old: &str, new: &str) -> String {
    unified_at(old, 0, new, 0)
}

/// [`unified`] for texts that start after `old_first`/`new_first` lines of their file (one
/// resource of a stream), so hunk headers give file line numbers.
pub fn unified_at(old: &str, old_first: usize, new: &str, new_first: usize) -> String {
    // Lines keep their `\n`, so a missing final newline is a difference, shown as diff does.
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let script = edit_script(&a, &b);
    // The script is computed on the real lines (a changed Secret value is a change), the lines
    // printed are the concealed ones (the value is not: CI logs keep diffs).
    let (a_shown, b_shown) = (concealed_lines(old), concealed_lines(new));
    let (a, b): (Vec<&str>, Vec<&str>) = (
        a_shown.iter().map(|l| l.as_ref()).collect(),
        b_shown.iter().map(|l| l.as_ref()).collect(),
    );
    let changed: Vec<usize> = script
        .iter()
        .enumerate()
        .filter(|(_, e)| !matches!(e, Edit::Equal(..)))
        .map(|(i, _)| i)
        .collect();
    let mut out = String::new();
    let mut i = 0;
    while i < changed.len() {
        // Grow a hunk while the next change is within two contexts of the previous one.
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = changed[i];
        while i + 1 < changed.len() && changed[i + 1] <= end + 2 * CONTEXT + 1 {
            i += 1;
            end = changed[i];
        }
        let end = (end + CONTEXT + 1).min(script.len());
        let hunk = &script[start..end];
        let (mut a_start, mut a_len, mut b_start, mut b_len) = (None, 0, None, 0);
        for e in hunk {
            match *e {
                Edit::Equal(x, y) => {
                    a_start.get_or_insert(x);
                    b_start.get_or_insert(y);
                    a_len += 1;
                    b_len += 1;
                }
                Edit::Delete(x) => {
                    a_start.get_or_insert(x);
                    a_len += 1;
                }
                Edit::Insert(y) => {
                    b_start.get_or_insert(y);
                    b_len += 1;
                }
            }
        }
        // diff -u numbers lines from 1 and uses the line before for an empty side.
        let a_line = a_start.map_or(position_before(hunk, true), |s| s + 1) + old_first;
        let b_line = b_start.map_or(position_before(hunk, false), |s| s + 1) + new_first;
        out.push_str(&format!("@@ -{a_line},{a_len} +{b_line},{b_len} @@\n"));
        for e in hunk {
            match *e {
                Edit::Equal(x, _) => push_line(&mut out, ' ', a[x]),
                Edit::Delete(x) => push_line(&mut out, '-', a[x]),
                Edit::Insert(y) => push_line(&mut out, '+', b[y]),
            }
        }
        i += 1;
    }
    out
}

/// What a diff prints in place of a Secret's value.
pub const SECRET_HIDDEN: &str = "<secret value hidden>";

/// `text`'s lines (with their `\n`) as a diff may print them: the values under a Secret's
/// `data:`/`stringData:` (and a `secretGenerator`'s literals) replaced by [`SECRET_HIDDEN`],
/// keys kept, so a reader sees which entry changed and never what it holds. The masking is
/// `diag::redact_secrets`', the one rule for every place kiln shows a Secret's source.
fn concealed_lines(text: &str) -> Vec<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    let lines = text.split_inclusive('\n');
    // A Secret's kind may be written with an escape (`"Secr\u0065t"`).
    if !text.contains("Secret") && !text.contains("secretGenerator") && !text.contains('\\') {
        return lines.map(Cow::Borrowed).collect();
    }
    let masked = crate::diag::redact_secrets(text);
    lines
        .zip(masked.split_inclusive('\n'))
        .map(|(line, mask)| {
            if line == mask {
                return Cow::Borrowed(line);
            }
            // redact_secrets masks whole characters (ASCII `*` over their bytes), so the
            // common prefix ends on a character boundary; from the first masked one, the
            // rest of the line is hidden (a JSON line may hold several values).
            let keep = line
                .bytes()
                .zip(mask.bytes())
                .take_while(|(x, y)| x == y)
                .count();
            let eol = if line.ends_with('\n') { "\n" } else { "" };
            Cow::Owned(format!(
                "{}{SECRET_HIDDEN}{eol}",
                line.get(..keep).unwrap_or("")
            ))
        })
        .collect()
}

fn push_line(out: &mut String, prefix: char, line: &str) {
    out.push(prefix);
    match line.strip_suffix('\n') {
        Some(text) => {
            out.push_str(text);
            out.push('\n');
        }
        None => {
            out.push_str(line);
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}

/// For a hunk with no lines on one side: the number of that side's lines before it.
fn position_before(hunk: &[Edit], old_side: bool) -> usize {
    hunk.iter()
        .find_map(|e| match (*e, old_side) {
            (Edit::Insert(y), true) => Some(y),
            (Edit::Delete(x), false) => Some(x),
            _ => None,
        })
        .unwrap_or(0)
}

/// Reads a directory as an artifact set (paths relative to `dir`, `/`-separated, `.git`
/// skipped). When `dir` holds a kiln marker, only the files it lists are read: files kiln
/// did not write are not part of the comparison.
pub fn load_dir(dir: &Path) -> Result<ArtifactSet, GitError> {
    let io = |operation, path: &Path| {
        let path = path.to_path_buf();
        move |source| GitError::Io {
            operation,
            path,
            source,
        }
    };
    let marker_path = dir.join(MARKER_FILE);
    if marker_path.is_file() {
        let bytes = std::fs::read(&marker_path).map_err(io("read", &marker_path))?;
        let marker = super::parse_marker(&marker_path.display().to_string(), &bytes)?;
        let mut set = ArtifactSet::new();
        for file in marker.files {
            let path = dir.join(&file);
            match std::fs::read(&path) {
                Ok(bytes) => set.insert(file, bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("read", &path)(e)),
            }
        }
        return Ok(set);
    }
    let mut set = ArtifactSet::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, rel)) = stack.pop() {
        let entries = std::fs::read_dir(&path).map_err(io("read directory", &path))?;
        for entry in entries {
            let entry = entry.map_err(io("read directory", &path))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".git" {
                continue;
            }
            let child = entry.path();
            let child_rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let kind = entry.file_type().map_err(io("inspect", &child))?;
            if kind.is_dir() {
                stack.push((child, child_rel));
            } else if kind.is_file() {
                let bytes = std::fs::read(&child).map_err(io("read", &child))?;
                set.insert(child_rel, bytes);
            }
        }
    }
    Ok(set)
}

/// Reads the tree at `reference` (branch, tag or commit) of `repo` (local path or URL), at
/// `path`, as an artifact set. Marker-aware like [`load_dir`]: with a marker, only kiln's
/// files; without, every file under `path`.
pub fn load_tree(
    repo: &str,
    reference: &str,
    path: Option<&str>,
    auth: &RemoteAuth,
) -> Result<ArtifactSet, GitError> {
    let opened = open_for_reading(repo, auth)?;
    let commit = super::resolve_commit(&opened.repo, &opened.display, reference)?;
    let tree = commit.tree().map_err(lg("reading a commit's tree"))?;
    let path = super::normalize_managed_path(path)?;
    match super::read_owned_files(&opened.repo, &tree, &path)? {
        Some(set) => Ok(set),
        None => super::read_all_files(&opened.repo, &tree, &path),
    }
}

/// The `--against` argument: a directory, or `REPO@REF` (split at the last `@`, so
/// `git@host:org/repo.git@main` works; a ref is required when the repository is a URL with a
/// user name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Against {
    Dir(std::path::PathBuf),
    Repo { repo: String, reference: String },
}

impl Against {
    /// Parses `--against`; an existing directory wins over the `@` form.
    ///
    /// Errors: [`GitError::InvalidAgainst`] when `spec` is neither an existing directory nor
    /// `REPO@REF` (comparing with a directory that is not there would report every file as
    /// added and hide the mistake), or the ref holds a `:` (`repo@main:apps/x`: the path goes
    /// into `--path`).
    pub fn parse(spec: &str) -> Result<Self, GitError> {
        if Path::new(spec).is_dir() {
            return Ok(Self::Dir(spec.into()));
        }
        let invalid = |reason: &str| GitError::InvalidAgainst {
            against: super::redact(spec),
            reason: reason.to_string(),
        };
        match spec.rsplit_once('@') {
            Some((repo, reference)) if !repo.is_empty() && !reference.is_empty() => {
                if reference.contains(':') {
                    return Err(invalid(
                        "the ref contains `:`; `REPO@REF:PATH` is not a form kiln reads (pass --path PATH), and a repository URL needs `@REF`",
                    ));
                }
                Ok(Self::Repo {
                    repo: repo.to_string(),
                    reference: reference.to_string(),
                })
            }
            _ => Err(invalid("no such directory, and not of the form REPO@REF")),
        }
    }

    /// The default old side, `deploy/`: a directory that may not exist yet (the first render).
    pub fn default_dir() -> Self {
        Self::Dir("deploy".into())
    }

    /// Loads the old side of the comparison.
    pub fn load(&self, path: Option<&str>, auth: &RemoteAuth) -> Result<ArtifactSet, GitError> {
        match self {
            Self::Dir(dir) => {
                let dir = match path {
                    Some(p) => dir.join(super::normalize_managed_path(Some(p))?),
                    None => dir.clone(),
                };
                if !dir.exists() {
                    return Ok(ArtifactSet::new());
                }
                load_dir(&dir)
            }
            Self::Repo { repo, reference } => load_tree(repo, reference, path, auth),
        }
    }
}

impl DiffReport {
    /// One line per differing file (`--stat`): status and path, then the total.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for file in &self.files {
            out.push_str(&format!(
                "{:<8} {}\n",
                file.status.word(),
                super::history::printable_field(&file.path)
            ));
        }
        out.push_str(&format!(
            "{} file{} differ{}\n",
            self.files.len(),
            if self.files.len() == 1 { "" } else { "s" },
            if self.files.len() == 1 { "s" } else { "" }
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39, item 20: a stale file (here a 5,000-line ConfigMap, and a 5,000-line text
    /// file) is printed as a bounded diff, the rest counted in one line; the JSON form keeps
    /// every line. `kiln verify` prints the same way.
    /// A committed path may hold any byte but `/` and NUL: `--stat` prints it escaped, a
    /// newline included, so it cannot add a line of its own or drive the terminal.
    #[test]
    fn stat_lines_escape_the_paths_they_print() {
        let mut old = ArtifactSet::new();
        old.insert("a.yaml\nno differences\u{1b}[2K", b"x: 1\n".to_vec());
        let summary = diff_sets(&old, &ArtifactSet::new()).summary();
        assert_eq!(summary.lines().count(), 2, "{summary}");
        assert!(
            summary.contains("a.yaml\\nno differences\\u{1b}[2K"),
            "{summary}"
        );
    }

    /// The full report too: a path or a resource name with a newline stays on its line.
    #[test]
    fn full_report_lines_escape_the_paths_and_names_they_print() {
        let mut old = ArtifactSet::new();
        old.insert("a.yaml\nadded b.yaml", b"x: 1\n".to_vec());
        old.insert(
            "c.gen.yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"c\\nchanged x\"\n".to_vec(),
        );
        let text = diff_sets(&old, &ArtifactSet::new()).to_string();
        let heads: Vec<&str> = text.lines().filter(|l| !l.starts_with("    ")).collect();
        assert_eq!(
            heads,
            [
                "removed a.yaml\\nadded b.yaml",
                "  removed document",
                "removed c.gen.yaml",
                "  removed ConfigMap/c\\nchanged x",
            ],
            "{text}"
        );
    }

    #[test]
    fn a_stale_file_prints_a_bounded_diff() {
        let big: String = (0..5000).map(|i| format!("  k{i}: v{i}\n")).collect();
        let mut old = ArtifactSet::new();
        old.insert(
            "p/e/c/c.gen.yaml",
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n{big}"),
        );
        old.insert("notes.txt", big.clone());
        let report = diff_sets(&old, &ArtifactSet::new());
        let text = report.to_string();
        assert!(
            text.lines().count() < 2 * (SHOWN_LINES_PER_FILE + 5),
            "{text}"
        );
        // 5,000 and 5,005 removed lines, each after its hunk header.
        assert!(text.contains("… 4961 more lines"), "{text}");
        assert!(text.contains("… 4966 more lines"), "{text}");
        let json = serde_json::to_string(&report).unwrap();
        assert!(json.contains("k4999: v4999"));
        let verify = super::super::verify::VerifyReport {
            repo: "r".into(),
            reference: "main".into(),
            commit: "0".repeat(40),
            path: String::new(),
            drift: report,
        };
        let text = verify.to_string();
        assert!(
            text.lines().count() < 2 * (SHOWN_LINES_PER_FILE + 5),
            "{text}"
        );
        assert!(
            text.contains("more lines (`-o json` shows every line)"),
            "{text}"
        );
    }

    fn apply(a: &[&str], b: &[&str], script: &[Edit]) -> Vec<String> {
        // Rebuild b from a via the script, checking every Equal really is equal.
        let mut out = Vec::new();
        for e in script {
            match *e {
                Edit::Equal(x, y) => {
                    assert_eq!(a[x], b[y]);
                    out.push(a[x].to_string());
                }
                Edit::Insert(y) => out.push(b[y].to_string()),
                Edit::Delete(_) => {}
            }
        }
        out
    }

    #[test]
    fn myers_script_rebuilds_the_new_side_minimally() {
        let a: Vec<&str> = "a b c a b b a".split(' ').collect();
        let b: Vec<&str> = "c b a b a c".split(' ').collect();
        let script = edit_script(&a, &b);
        assert_eq!(apply(&a, &b, &script), b);
        let edits = script
            .iter()
            .filter(|e| !matches!(e, Edit::Equal(..)))
            .count();
        // The paper's example has an edit distance of 5.
        assert_eq!(edits, 5);
        for (a, b) in [
            (vec![], vec!["x"]),
            (vec!["x"], vec![]),
            (vec!["x"], vec!["x"]),
        ] {
            let s = edit_script(&a, &b);
            assert_eq!(apply(&a, &b, &s), b);
        }
    }

    #[test]
    fn secret_values_never_appear_in_a_diff_but_their_change_does() {
        let secret = |pw: &str, token: &str| {
            format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: billing\n\
                 stringData:\n  password: {pw}\n  user: admin\ndata:\n  token: {token}\n\
                 type: Opaque\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n\
                 data:\n  visible: {pw}\n"
            )
        };
        let mut old = ArtifactSet::default();
        let mut new = ArtifactSet::default();
        let path = "billing/dev/db/db.gen.yaml".to_string();
        old.files.insert(
            path.clone(),
            secret("SUPERSECRET123", "U1VQRVI=").into_bytes(),
        );
        new.files.insert(
            path.clone(),
            secret("NEWSECRET999", "TkVXVE9L").into_bytes(),
        );
        let report = diff_sets(&old, &new);
        let text = report.to_string();
        let json = serde_json::to_string(&report).unwrap();
        for shown in [&text, &json] {
            for value in ["SUPERSECRET123\n  user", "U1VQRVI=", "TkVXVE9L", "admin"] {
                assert!(!shown.contains(value), "{value} shown:\n{shown}");
            }
            assert!(shown.contains("password: <secret value hidden>"), "{shown}");
        }
        assert!(
            text.contains("-  password: <secret value hidden>\n"),
            "{text}"
        );
        assert!(
            text.contains("+  password: <secret value hidden>\n"),
            "{text}"
        );
        assert!(text.contains("  user: <secret value hidden>"), "{text}");
        // Not a Secret: shown as it is.
        assert!(text.contains("+  visible: NEWSECRET999"), "{text}");
        // A whole-file text diff (a YAML stream that does not parse) is concealed too.
        let broken = |pw: &str| format!("kind: Secret\nstringData:\n  password: {pw}\n: [\n");
        let mut a = ArtifactSet::default();
        let mut b = ArtifactSet::default();
        a.files.insert(path.clone(), broken("OLDPW").into_bytes());
        b.files.insert(path, broken("NEWPW").into_bytes());
        let text = diff_sets(&a, &b).to_string();
        assert!(!text.contains("OLDPW") && !text.contains("NEWPW"), "{text}");
    }

    #[test]
    fn unified_diff_has_hunk_headers_and_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n";
        assert_eq!(
            unified(old, new),
            "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
        assert_eq!(unified("", "a\n"), "@@ -0,0 +1,1 @@\n+a\n");
        assert_eq!(unified("same\n", "same\n"), "");
        assert_eq!(
            unified("a\nb\n", "a\nb"),
            "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn yaml_files_are_compared_per_resource() {
        let mut old = ArtifactSet::new();
        old.insert(
            "app.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: n\ndata:\n  k: v\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\n",
        );
        let mut new = ArtifactSet::new();
        new.insert(
            "app.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: n\ndata:\n  k: w\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n",
        );
        new.insert("extra.txt", "x\n");
        let report = diff_sets(&old, &new);
        assert!(report.has_differences());
        assert_eq!(report.files.len(), 2);
        let app = &report.files[0];
        assert_eq!(app.status, Status::Changed);
        let shown: Vec<String> = app
            .resources
            .iter()
            .map(|r| format!("{} {}", r.status.word(), r.resource))
            .collect();
        // The reordered Service is not reported; the edited ConfigMap and new Namespace are.
        assert_eq!(shown, ["changed ConfigMap/n/a", "added Namespace/n"]);
        assert!(app.resources[0].diff.contains("-  k: v\n+  k: w\n"));
        assert_eq!(report.files[1].status, Status::Added);
        assert!(!diff_sets(&new, &new).has_differences());
    }

    #[test]
    fn resource_hunks_use_file_line_numbers() {
        let mut old = ArtifactSet::new();
        old.insert(
            "s.yaml",
            "kind: A\nmetadata:\n  name: a\n---\nkind: B\nmetadata:\n  name: b\nx: 1\n",
        );
        let mut new = ArtifactSet::new();
        new.insert(
            "s.yaml",
            "kind: A\nmetadata:\n  name: a\n---\nkind: B\nmetadata:\n  name: b\nx: 2\n",
        );
        let report = diff_sets(&old, &new);
        let r = &report.files[0].resources[0];
        assert_eq!(r.resource.to_string(), "B/b");
        assert!(r.diff.starts_with("@@ -5,4 +5,4 @@\n"), "{}", r.diff);
    }

    #[test]
    fn documents_may_start_on_the_marker_line() {
        let docs = split_documents(
            "--- {kind: A, metadata: {name: x}}\n---\nkind: B\nmetadata:\n  name: y\n",
        )
        .unwrap();
        let keys: Vec<String> = docs.iter().map(|d| d.key.to_string()).collect();
        assert_eq!(keys, ["A/x", "B/y"]);
    }

    #[test]
    fn against_parses_repo_at_ref() {
        assert_eq!(
            Against::parse("git@github.com:acme/deploy.git@stage/prod").unwrap(),
            Against::Repo {
                repo: "git@github.com:acme/deploy.git".into(),
                reference: "stage/prod".into()
            }
        );
    }

    #[test]
    fn against_refuses_what_it_cannot_read() {
        // Issue 9 item 10: these compared against nothing and reported every file added.
        for bad in [
            "/no/such/dir",
            "repo@main:apps/acme",
            "git@github.com:acme/deploy.git",
        ] {
            let err = Against::parse(bad).unwrap_err();
            assert_eq!(
                miette::Diagnostic::code(&err).unwrap().to_string(),
                "kiln::git::invalid_against",
                "{bad}"
            );
        }
    }
}
