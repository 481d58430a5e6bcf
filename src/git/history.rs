//! `kiln history`: the audit trail. Walks a branch of the write repository (newest first, by
//! commit time) and reads kiln's trailers back: when, which commit, who, which components and
//! environments changed, and the image references they ran. [`deployed_at`] answers "what was
//! deployed at time T": the newest kiln commit at or before T and its full image state (every
//! kiln commit records all components' images, not only the changed ones).
//!
//! Sits beside `publish`, reads Git only. Commits without kiln's trailers (promotions, hand
//! edits, merges) are listed with the units their paths touch against their first parent;
//! those `kiln promote` or `kiln bootstrap` made carry a `Kiln-Promote` stamp that matches
//! what they change, every other one (Kargo's, a hand edit, a copy of kiln's message) is
//! listed as not made by kiln. Dates are parsed here ([`parse_date`]: RFC 3339 or
//! `YYYY-MM-DD`), without a date crate.
//!
//! Invariant: output order is the revwalk's (topological, then time: newest first, also for
//! commits made within one second, as `git log`), never a hash order.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Serialize, Serializer};

use super::trailers::{
    AppCommit, Classifier, KilnTrailers, Unit, UnitChange, WriteLayout, change_digest,
    images_by_unit, parse_message, promote_stamp,
};
use super::{GitError, Identity, RemoteAuth, lg, open_for_reading, read_all_files, resolve_commit};
use crate::artifact::ArtifactSet;

/// A point in time: seconds since the Unix epoch and the UTC offset it was recorded in.
/// Displays and serialises as RFC 3339 (`2026-11-29T16:07:18+01:00`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp {
    pub seconds: i64,
    pub offset_minutes: i32,
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let local = self.seconds + i64::from(self.offset_minutes) * 60;
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            secs / 3600,
            secs % 3600 / 60,
            secs % 60
        )?;
        if self.offset_minutes == 0 {
            f.write_str("Z")
        } else {
            let sign = if self.offset_minutes < 0 { '-' } else { '+' };
            let off = self.offset_minutes.unsigned_abs();
            write!(f, "{sign}{:02}:{:02}", off / 60, off % 60)
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Parses `--since`/`--at`: RFC 3339 (`2026-11-29T15:07:18Z`, `…+01:00`, fractional seconds
/// ignored) or a plain date `YYYY-MM-DD`, read as midnight UTC. Returns Unix seconds.
///
/// Errors: [`GitError::InvalidDate`].
pub fn parse_date(input: &str) -> Result<i64, GitError> {
    parse_date_inner(input.trim()).ok_or_else(|| GitError::InvalidDate {
        input: input.to_string(),
    })
}

/// [`parse_date`], or a time relative to `now` (Unix seconds, passed in by the CLI: nothing
/// here reads the clock): `now`, `today` and `yesterday` (midnight UTC), or `<N><unit>` with
/// an optional ` ago` (`2d`, `36h`, `1w`, `90m`, `30s`, `2d ago`).
///
/// Errors: [`GitError::InvalidDate`].
pub fn parse_when(input: &str, now: i64) -> Result<i64, GitError> {
    let s = input.trim();
    let midnight = now.div_euclid(86_400) * 86_400;
    let relative = match s {
        "now" => Some(now),
        "today" => Some(midnight),
        "yesterday" => Some(midnight - 86_400),
        _ => {
            let s = s.strip_suffix(" ago").unwrap_or(s).trim();
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            let unit = match s[digits..].trim() {
                "s" => Some(1),
                "m" | "min" => Some(60),
                "h" => Some(3600),
                "d" => Some(86_400),
                "w" => Some(7 * 86_400),
                _ => None,
            };
            match (s[..digits].parse::<i64>().ok(), unit) {
                (Some(n), Some(unit)) => n.checked_mul(unit).and_then(|d| now.checked_sub(d)),
                _ => None,
            }
        }
    };
    match relative {
        Some(t) => Ok(t),
        None => parse_date(input).map_err(|_| GitError::InvalidDate {
            input: input.to_string(),
        }),
    }
}

fn parse_date_inner(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(range)?;
        if part.bytes().all(|c| c.is_ascii_digit()) && !part.is_empty() {
            part.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    if b.len() == 10 {
        return Some(days * 86_400);
    }
    if !matches!(b[10], b'T' | b't' | b' ') || b.len() < 19 || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // 60 is a leap second in RFC 3339; Unix time has none, so it folds into the next minute.
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let rb = rest.as_bytes();
            if rb.len() != 6 || !matches!(rb[0], b'+' | b'-') || rb[3] != b':' {
                return None;
            }
            let oh: i64 = rest[1..3].parse().ok()?;
            let om: i64 = rest[4..6].parse().ok()?;
            if oh > 23 || om > 59 {
                return None;
            }
            let sign = if rb[0] == b'-' { -1 } else { 1 };
            sign * (oh * 3600 + om * 60)
        }
    };
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant, "chrono-Compatible
/// Low-Level Date Algorithms", `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`] (Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Which history entries to keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryFilter {
    /// Only changes touching this component.
    pub component: Option<String>,
    /// Only changes touching this environment.
    pub environment: Option<String>,
    /// Only commits at or after this Unix time (see [`parse_date`]).
    pub since: Option<i64>,
}

impl HistoryFilter {
    fn keeps_unit(&self, unit: &Unit) -> bool {
        let component_ok = match &self.component {
            Some(c) => unit.component() == Some(c.as_str()),
            None => true,
        };
        let environment_ok = match &self.environment {
            Some(e) => unit.environment() == Some(e.as_str()),
            None => true,
        };
        component_ok && environment_ok
    }
}

/// Image references of one component in one environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentImages {
    pub project: String,
    pub environment: String,
    pub component: String,
    pub images: Vec<String>,
}

/// One kiln commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub commit: String,
    pub time: Timestamp,
    pub author: Identity,
    /// The commit's subject line.
    pub summary: String,
    /// Units changed (only those the filter keeps).
    pub changes: Vec<UnitChange>,
    pub components: Vec<String>,
    pub environments: Vec<String>,
    /// Images of the changed components (the filter applied).
    pub images: Vec<ComponentImages>,
    pub source_commit: Option<String>,
    pub kiln_version: String,
    pub spec_digest: Option<String>,
    /// The remote sources it was rendered from (`Kiln-App-Commit`:
    /// `[<project>/<env>/<component> ]<url>@<commit>`); with a component or environment
    /// filter, only the kept cells' own and those of the whole publish.
    pub sources: Vec<String>,
    /// `false` for a commit kiln did not make (a Kargo promotion, a hand edit). For it, and
    /// for `kiln promote`'s commits, the changes are the units its paths touch, compared
    /// with its first parent.
    pub made_by_kiln: bool,
}

impl fmt::Display for HistoryEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::new();
        self.write_text(&mut text)?;
        f.write_str(&printable(&text))
    }
}

impl HistoryEntry {
    /// The entry as text, raw: [`fmt::Display`] makes it [`printable`].
    fn write_text(&self, f: &mut String) -> fmt::Result {
        use fmt::Write as _;
        writeln!(
            f,
            "{} {} {} <{}>",
            &self.commit[..self.commit.len().min(12)],
            self.time,
            self.author.name,
            self.author.email
        )?;
        if self.made_by_kiln {
            writeln!(f, "    {}", self.summary)?;
        } else {
            writeln!(f, "    (not made by kiln) {}", self.summary)?;
        }
        for change in &self.changes {
            writeln!(f, "    {change}")?;
        }
        for c in &self.images {
            writeln!(
                f,
                "    images {}/{}/{}: {}",
                c.project,
                c.environment,
                c.component,
                c.images.join(" ")
            )?;
        }
        if let Some(source) = &self.source_commit {
            writeln!(f, "    source {source}")?;
        }
        for source in &self.sources {
            writeln!(f, "    from {source}")?;
        }
        Ok(())
    }
}

/// kiln's commits on a branch, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct History {
    pub repo: String,
    pub branch: String,
    pub entries: Vec<HistoryEntry>,
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.entries.is_empty() {
            return writeln!(f, "no commits on {}@{}", self.repo, self.branch);
        }
        for (i, entry) in self.entries.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{entry}")?;
        }
        Ok(())
    }
}

/// `text` safe to print on a terminal: every control character but newline and tab (ESC,
/// carriage return, backspace, C1 controls such as CSI) and the Unicode bidirectional
/// overrides and isolates are shown escaped (`\u{1b}`), so a commit subject, an author name,
/// a path or a file's content read from Git cannot move the cursor, erase a line kiln
/// printed or reorder what it says. Every text printer of data read from Git goes through it
/// (`history`, `--at`, `status`, `diff`, `verify`); JSON and HTML escape by themselves.
pub fn printable(text: &str) -> Cow<'_, str> {
    escaped(text, |c| {
        (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
    })
}

/// One field from Git (a path, a name) for a line of text output: [`printable`], and a
/// newline or tab escaped too, since Git allows them in paths and one would start a line of
/// kiln's own output.
pub fn printable_field(field: &str) -> Cow<'_, str> {
    escaped(field, |c| c.is_control() || is_bidi_control(c))
}

/// `text` with each character `unsafe_char` holds written as its Rust escape.
fn escaped(text: &str, unsafe_char: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// U+202A–U+202E (embeddings, overrides) and U+2066–U+2069 (isolates): they reorder how a
/// terminal shows the text around them ("Trojan Source", CVE-2021-42574).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// What was deployed at a point in time: the newest kiln commit at or before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployedState {
    pub repo: String,
    pub branch: String,
    pub at: Timestamp,
    /// `None` when the branch had no commit yet at that time.
    pub commit: Option<String>,
    pub time: Option<Timestamp>,
    /// Where the images were read from (`None` without a commit).
    pub source: Option<StateSource>,
    /// Every component's images in that commit (filter applied).
    pub images: Vec<ComponentImages>,
    /// Who made that commit, and its subject: for a commit kiln did not make, that is what
    /// was deployed (a Kargo promotion, a hand edit).
    pub author: Option<Identity>,
    pub summary: Option<String>,
    pub made_by_kiln: bool,
    /// The tree holds Kargo Stages but no platform was given: which folders they write (and
    /// so what runs) is not known, and nothing is listed (`--platform`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub needs_platform: bool,
}

impl fmt::Display for DeployedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::new();
        self.write_text(&mut text)?;
        f.write_str(&printable(&text))
    }
}

impl DeployedState {
    /// The state as text, raw: [`fmt::Display`] makes it [`printable`].
    fn write_text(&self, f: &mut String) -> fmt::Result {
        use fmt::Write as _;
        let (Some(commit), Some(time)) = (&self.commit, &self.time) else {
            return writeln!(f, "nothing on {}@{} at {}", self.repo, self.branch, self.at);
        };
        let short = &commit[..commit.len().min(12)];
        if self.made_by_kiln {
            writeln!(f, "deployed at {} ({short}, published {time}):", self.at)?;
        } else {
            let who = self
                .author
                .as_ref()
                .map(|a| format!("{} <{}>", a.name, a.email))
                .unwrap_or_default();
            writeln!(
                f,
                "deployed at {} ({short}, committed {time} by {who}, not made by kiln: {}):",
                self.at,
                self.summary.as_deref().unwrap_or_default()
            )?;
        }
        if self.needs_platform {
            writeln!(
                f,
                "  (the branch holds Kargo Stages: which folders they write, and so what runs, comes from the platform; pass --platform DIR)"
            )?;
        }
        for c in &self.images {
            let images = match c.images.is_empty() {
                true => "(no image)".to_string(),
                false => c.images.join(" "),
            };
            writeln!(
                f,
                "  {}/{}/{}: {images}",
                c.project, c.environment, c.component
            )?;
        }
        Ok(())
    }
}

/// A commit read from the walk: kiln's (with its trailers) or anyone else's (with the units
/// its paths touch).
struct KilnCommit {
    id: String,
    time: Timestamp,
    author: Identity,
    summary: String,
    trailers: KilnTrailers,
    made_by_kiln: bool,
}

/// Walks `branch` from its tip by commit time (newest first) and yields kiln's commits.
fn kiln_commits(
    repo: &git2::Repository,
    display: &str,
    branch: &str,
    layout: &WriteLayout,
) -> Result<Vec<KilnCommit>, GitError> {
    let known = layout.for_branch(branch);
    let tip = resolve_commit(repo, display, branch)?;
    let mut walk = repo.revwalk().map_err(lg("walking history"))?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
        .map_err(lg("walking history"))?;
    walk.push(tip.id()).map_err(lg("walking history"))?;
    let mut out = Vec::new();
    for id in walk {
        let id = id.map_err(lg("walking history"))?;
        let commit = repo.find_commit(id).map_err(lg("reading a commit"))?;
        let message = String::from_utf8_lossy(commit.message_bytes());
        let (trailers, made_by_kiln) = match parse_message(&message) {
            Some(trailers) => (trailers, true),
            None => {
                // What a promotion (or a hand edit) deployed is in the tree it left: the
                // images of the folders it changed, read from the manifests there.
                let changes = touched_units(repo, &commit, branch, &known)?;
                let tree = commit.tree().map_err(lg("reading a commit's tree"))?;
                let files = read_all_files(repo, &tree, "")?;
                let touched: BTreeSet<&Unit> = changes.iter().map(|c| &c.unit).collect();
                // With the Stages' folders known, only they count (as in `deployed_at`): the
                // rendered tree beside them is what Stages read, not what this commit deployed.
                let images = if known.is_empty() {
                    images_from_tree(&files, branch.strip_prefix("stage/"), &known)
                } else {
                    stage_folder_images(&files, &known)
                };
                let promotion = PromotionLines::parse(&message);
                let images = images
                    .into_iter()
                    .filter(|(unit, _)| touched.contains(unit))
                    .map(|(unit, refs)| (unit, promotion.pin(refs)))
                    .collect();
                (
                    KilnTrailers {
                        changes,
                        images,
                        source_commit: promotion.source_commit,
                        app_commits: promotion.app_commits,
                        ..KilnTrailers::default()
                    },
                    stamped_by_kiln(repo, &commit, &message)?,
                )
            }
        };
        let (time, author) = super::state::when_and_who(&commit);
        out.push(KilnCommit {
            id: id.to_string(),
            time,
            author,
            summary: message.lines().next().unwrap_or_default().to_string(),
            trailers,
            made_by_kiln,
        });
    }
    Ok(out)
}

/// Whether `kiln promote` or `kiln bootstrap` made `commit`: its `Kiln-Promote` stamp is the
/// digest of what it changes against its first parent. A hand commit that copies the message
/// (or amends kiln's commit) changes something else, so its stamp does not match.
fn stamped_by_kiln(
    repo: &git2::Repository,
    commit: &git2::Commit<'_>,
    message: &str,
) -> Result<bool, GitError> {
    let Some(stamp) = promote_stamp(message) else {
        return Ok(false);
    };
    let tree = commit.tree().map_err(lg("reading a commit's tree"))?;
    let parent = match commit.parent(0) {
        Ok(parent) => Some(parent.tree().map_err(lg("reading a commit's tree"))?),
        Err(_) => None,
    };
    let digest = change_digest(repo, parent.as_ref(), &tree)
        .map_err(lg("comparing a commit with its parent"))?;
    Ok(digest == stamp)
}

/// The units a commit kiln did not make touches, against its first parent: its changed
/// paths classified as kiln classifies its own (component directories, `<project>/kargo`,
/// `<project>/argocd`; on a `stage/<env>` branch the environment comes from the name).
fn touched_units(
    repo: &git2::Repository,
    commit: &git2::Commit<'_>,
    branch: &str,
    known: &BTreeMap<String, Unit>,
) -> Result<Vec<UnitChange>, GitError> {
    let tree = commit.tree().map_err(lg("reading a commit's tree"))?;
    let parent_tree = match commit.parent(0) {
        Ok(parent) => Some(parent.tree().map_err(lg("reading a commit's tree"))?),
        Err(_) => None,
    };
    let diff = repo
        .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None)
        .map_err(lg("comparing a commit with its parent"))?;
    let mut old = BTreeMap::new();
    let mut new = BTreeMap::new();
    for delta in diff.deltas() {
        if let Some(p) = delta.old_file().path()
            && !delta.old_file().id().is_zero()
        {
            old.insert(p.to_string_lossy().into_owned(), delta.old_file().id());
        }
        if let Some(p) = delta.new_file().path()
            && !delta.new_file().id().is_zero()
        {
            new.insert(p.to_string_lossy().into_owned(), delta.new_file().id());
        }
    }
    let mut paths = Vec::new();
    for t in parent_tree.iter().chain(std::iter::once(&tree)) {
        t.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                paths.push(format!("{dir}{}", entry.name().unwrap_or_default()));
            }
            git2::TreeWalkResult::Ok
        })
        .map_err(lg("walking a tree"))?;
    }
    let environment = branch.strip_prefix("stage/");
    let classifier =
        Classifier::new(paths.iter().map(String::as_str), environment).with_known(known.clone());
    Ok(super::trailers::unit_changes(&classifier, &old, &new))
}

fn component_images<'a>(
    images: impl Iterator<Item = (&'a Unit, &'a Vec<String>)>,
    filter: &HistoryFilter,
) -> Vec<ComponentImages> {
    images
        .filter(|(unit, _)| filter.keeps_unit(unit))
        .filter_map(|(unit, refs)| match unit {
            Unit::Component {
                project,
                environment,
                component,
            } => Some(ComponentImages {
                project: project.clone(),
                environment: environment.clone(),
                component: component.clone(),
                images: refs.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// Every (Stage, Freight) promoted on `branch` of `repo`: the commits whose message has
/// kiln's `stage: …` and `freight: …` lines after its subject (what Kargo's `git-commit` step
/// writes from kiln's template, and `kiln promote` too; the check `kiln promote` makes before
/// it warns, `crate::promote::unverified_warning`). One walk answers every question about
/// the branch. A branch that does not exist holds none.
///
/// Errors: as [`history`], but a missing branch.
pub fn promotions_on(
    repo: &str,
    branch: &str,
    auth: &RemoteAuth,
) -> Result<BTreeSet<(String, String)>, GitError> {
    let mut promoted = BTreeSet::new();
    let opened = open_for_reading(repo, auth)?;
    let Ok(tip) = resolve_commit(&opened.repo, &opened.display, branch) else {
        return Ok(promoted);
    };
    let mut walk = opened.repo.revwalk().map_err(lg("walking history"))?;
    walk.push(tip.id()).map_err(lg("walking history"))?;
    for id in walk {
        let id = id.map_err(lg("walking history"))?;
        let commit = opened
            .repo
            .find_commit(id)
            .map_err(lg("reading a commit"))?;
        let message = String::from_utf8_lossy(commit.message_bytes());
        promoted.extend(promotions_in(&message));
    }
    Ok(promoted)
}

/// The branches of `repo` (local path or URL), by name: its own, and `origin`'s
/// remote-tracking ones (without the `origin/`), once each, in name order.
pub fn branch_names(repo: &str, auth: &RemoteAuth) -> Result<Vec<String>, GitError> {
    let opened = open_for_reading(repo, auth)?;
    let mut names = BTreeSet::new();
    let branches = opened.repo.branches(None).map_err(lg("listing branches"))?;
    for branch in branches {
        let (branch, kind) = branch.map_err(lg("listing branches"))?;
        let Ok(Some(name)) = branch.name() else {
            continue;
        };
        let name = match kind {
            git2::BranchType::Local => name,
            git2::BranchType::Remote => match name.strip_prefix("origin/") {
                Some(n) if n != "HEAD" => n,
                _ => continue,
            },
        };
        names.insert(name.to_string());
    }
    Ok(names.into_iter().collect())
}

/// The (Stage, Freight) pairs one commit message records: its `stage: …` and `freight: …`
/// lines after the subject ([`promotions_on`]; [`crate::git::read_branch`] collects them on
/// its walk).
pub(crate) fn promotions_in(message: &str) -> Vec<(String, String)> {
    let (mut stages, mut freights) = (Vec::new(), Vec::new());
    for line in message.lines().skip(1) {
        if let Some(stage) = line.strip_prefix("stage: ") {
            stages.push(stage.trim());
        } else if let Some(freight) = line.strip_prefix("freight: ") {
            freights.push(freight.trim());
        }
    }
    let mut out = Vec::new();
    for stage in &stages {
        for freight in &freights {
            out.push((stage.to_string(), freight.to_string()));
        }
    }
    out
}

/// kiln's commits on `branch` of `repo` (local path or URL), newest first, filtered.
/// A commit is kept when it is at or after `since` and one of its changes matches the
/// component and environment filters. Commits kiln did not make are classified with `layout`
/// (empty: kiln's own `<project>/<env>/<component>` layout only).
///
/// Errors: [`GitError::RepositoryNotFound`], [`GitError::RemoteUnreachable`],
/// [`GitError::RefNotFound`].
pub fn history(
    repo: &str,
    branch: &str,
    filter: &HistoryFilter,
    layout: &WriteLayout,
    auth: &RemoteAuth,
) -> Result<History, GitError> {
    let opened = open_for_reading(repo, auth)?;
    let mut entries = Vec::new();
    for commit in kiln_commits(&opened.repo, &opened.display, branch, layout)? {
        if filter
            .since
            .is_some_and(|since| commit.time.seconds < since)
        {
            continue;
        }
        let changes: Vec<UnitChange> = commit
            .trailers
            .changes
            .iter()
            .filter(|c| filter.keeps_unit(&c.unit))
            .cloned()
            .collect();
        let filtered = filter.component.is_some() || filter.environment.is_some();
        if filtered && changes.is_empty() {
            continue;
        }
        let touched: BTreeSet<&Unit> = changes.iter().map(|c| &c.unit).collect();
        let images = component_images(
            commit
                .trailers
                .images
                .iter()
                .filter(|(unit, _)| touched.contains(unit)),
            filter,
        );
        let components: BTreeSet<String> = changes
            .iter()
            .filter_map(|c| c.unit.component().map(str::to_string))
            .collect();
        let environments: BTreeSet<String> = changes
            .iter()
            .filter_map(|c| c.unit.environment().map(str::to_string))
            .collect();
        entries.push(HistoryEntry {
            commit: commit.id,
            time: commit.time,
            author: commit.author,
            summary: commit.summary,
            changes,
            components: components.into_iter().collect(),
            environments: environments.into_iter().collect(),
            images,
            source_commit: commit.trailers.source_commit,
            kiln_version: commit.trailers.kiln_version,
            spec_digest: commit.trailers.spec_digest,
            // A cell's own app commits (and the publish's unattributed sources) only.
            sources: commit
                .trailers
                .app_commits
                .iter()
                .map(|v| AppCommit::parse(v))
                .filter(|a| !filtered || a.concerns(|u| filter.keeps_unit(u)))
                .map(|a| a.to_string())
                .collect(),
            made_by_kiln: commit.made_by_kiln,
        });
    }
    Ok(History {
        repo: opened.display.clone(),
        branch: branch.to_string(),
        entries,
    })
}

/// Where a [`DeployedState`]'s images were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StateSource {
    /// The `Kiln-Images` trailers of a kiln commit.
    Trailers,
    /// The commit's tree: kustomization `images:` and container images of rendered manifests
    /// (a commit kiln did not write: a Kargo promotion, a hand edit).
    Tree,
}

/// What was deployed on `branch` at Unix time `at`: the newest commit whose commit time is at
/// or before `at`, with every component's images (component/environment filters apply; `since`
/// is ignored). For a kiln commit the images come from its trailers. For any other commit (a
/// Kargo promotion into `stage/<env>`, a hand edit after kiln's last publish) they are read
/// from the tree, because that tree is what Argo CD synced: the kustomizations' `images:`
/// (as kiln's trailers) plus the container images of rendered manifests outside component
/// directories, grouped by their top-level directory (Kargo's `kustomize-build` writes
/// `<component>/`), the environment taken from a `stage/<env>` branch name.
///
/// Errors: as [`history`].
pub fn deployed_at(
    repo: &str,
    branch: &str,
    at: i64,
    filter: &HistoryFilter,
    layout: &WriteLayout,
    auth: &RemoteAuth,
) -> Result<DeployedState, GitError> {
    let opened = open_for_reading(repo, auth)?;
    let tip = resolve_commit(&opened.repo, &opened.display, branch)?;
    let mut walk = opened.repo.revwalk().map_err(lg("walking history"))?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
        .map_err(lg("walking history"))?;
    walk.push(tip.id()).map_err(lg("walking history"))?;
    let mut found = None;
    for id in walk {
        let id = id.map_err(lg("walking history"))?;
        let commit = opened
            .repo
            .find_commit(id)
            .map_err(lg("reading a commit"))?;
        if commit.time().seconds() <= at {
            found = Some(commit);
            break;
        }
    }
    let mut state = DeployedState {
        repo: opened.display.clone(),
        branch: branch.to_string(),
        at: Timestamp {
            seconds: at,
            offset_minutes: 0,
        },
        commit: None,
        time: None,
        source: None,
        images: Vec::new(),
        author: None,
        summary: None,
        made_by_kiln: false,
        needs_platform: false,
    };
    let Some(commit) = found else {
        return Ok(state);
    };
    state.commit = Some(commit.id().to_string());
    state.time = Some(Timestamp {
        seconds: commit.time().seconds(),
        offset_minutes: commit.time().offset_minutes(),
    });
    let message = String::from_utf8_lossy(commit.message_bytes());
    let author = commit.author();
    state.author = Some(Identity {
        name: String::from_utf8_lossy(author.name_bytes()).into_owned(),
        email: String::from_utf8_lossy(author.email_bytes()).into_owned(),
    });
    state.summary = Some(message.lines().next().unwrap_or_default().to_string());
    let trailers = parse_message(&message);
    state.made_by_kiln = trailers.is_some() || stamped_by_kiln(&opened.repo, &commit, &message)?;
    let tree = commit.tree().map_err(lg("reading a commit's tree"))?;
    let files = read_all_files(&opened.repo, &tree, "")?;
    let known = layout.for_branch(branch);
    // With Kargo, the rendered tree is what Stages read, not what runs: only the folders a
    // Stage writes count (and, without the layout, nothing of the rendered tree).
    let kargo = !layout.is_empty() || holds_stages(&files);
    match trailers {
        Some(trailers) if !kargo => {
            state.source = Some(StateSource::Trailers);
            // `Kiln-Images` names components with images only: the others from the tree.
            let mut images = trailers.images.clone();
            let classifier = Classifier::new(files.paths(), branch.strip_prefix("stage/"))
                .with_known(known.clone());
            for path in files.files.keys() {
                if let unit @ Unit::Component { .. } = classifier.classify(path) {
                    images.entry(unit).or_default();
                }
            }
            state.images = component_images(images.iter(), filter);
        }
        _ if kargo => {
            state.source = Some(StateSource::Tree);
            state.needs_platform = layout.is_empty();
            let images = stage_folder_images(&files, &known);
            state.images = component_images(images.iter(), filter);
        }
        _ => {
            let environment = branch.strip_prefix("stage/");
            let images = images_from_tree(&files, environment, &known);
            state.source = Some(StateSource::Tree);
            state.images = component_images(images.iter(), filter);
        }
    }
    Ok(state)
}

/// The images of every folder a Stage writes (`known`: folder → cell) that exists in
/// `files`, read from the folder alone ([`folder_images`]). A folder without images is
/// deployed all the same (an empty list).
fn stage_folder_images(
    files: &ArtifactSet,
    known: &BTreeMap<String, Unit>,
) -> BTreeMap<Unit, Vec<String>> {
    let mut images = BTreeMap::new();
    for (dir, unit) in known {
        let prefix = if dir.is_empty() || dir == "." {
            String::new()
        } else {
            format!("{}/", dir.trim_end_matches('/'))
        };
        let mut folder = ArtifactSet::new();
        for (path, bytes) in &files.files {
            if let Some(rel) = path.strip_prefix(&prefix) {
                folder.insert(rel.to_string(), bytes.clone());
            }
        }
        if !folder.files.is_empty() {
            images.insert(unit.clone(), folder_images(&folder));
        }
    }
    images
}

/// What a promotion's `git-commit` message records (`src/kargo/steps.rs` `commit_message`:
/// `image: <repo>:<tag>@<digest>` lines, then `source: <url>@<commit>` lines, the source
/// repository's first). Empty for any other message.
#[derive(Debug, Default)]
struct PromotionLines {
    images: Vec<String>,
    source_commit: Option<String>,
    /// The further `source:` lines (application repositories), as `<url>@<commit>`.
    app_commits: Vec<String>,
}

impl PromotionLines {
    fn parse(message: &str) -> Self {
        let mut out = PromotionLines::default();
        if !message.starts_with("kiln: promote ") {
            return out;
        }
        for line in message.lines() {
            if let Some(image) = line.strip_prefix("image: ") {
                out.images.push(image.trim().to_string());
            } else if let Some(source) = line.strip_prefix("source: ") {
                let source = source.trim();
                match (&out.source_commit, source.rsplit_once('@')) {
                    (None, Some((_, commit))) if !commit.is_empty() => {
                        out.source_commit = Some(commit.to_string());
                    }
                    (Some(_), Some(_)) => out.app_commits.push(source.to_string()),
                    _ => {}
                }
            }
        }
        out
    }

    /// `refs` read from the promoted manifests, each replaced by the promotion's `image:`
    /// line for the same image (same repository, and the same tag or digest where the
    /// manifest has one): the manifests may name the tag alone, the commit records the digest
    /// the Freight resolved it to.
    fn pin(&self, refs: Vec<String>) -> Vec<String> {
        refs.into_iter()
            .map(|r| {
                let (name, tag, digest) = split_reference(&r);
                self.images
                    .iter()
                    .find(|line| {
                        let (n, t, d) = split_reference(line);
                        n == name
                            && (tag.is_none() || tag == t)
                            && (digest.is_none() || digest == d)
                    })
                    .cloned()
                    .unwrap_or(r)
            })
            .collect()
    }
}

/// `<name>[:<tag>][@<digest>]` split into its parts (a registry's `host:port/` is part of
/// the name).
fn split_reference(reference: &str) -> (&str, Option<&str>, Option<&str>) {
    let (rest, digest) = match reference.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (reference, None),
    };
    match rest.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, Some(tag), digest),
        _ => (rest, None, digest),
    }
}

/// Whether a tree holds Kargo Stages (kiln's `<project>/kargo/` files): its rendered
/// component folders are then what Stages read, never what runs.
fn holds_stages(files: &ArtifactSet) -> bool {
    files.files.iter().any(|(path, bytes)| {
        path.contains("kargo/")
            && (path.ends_with(".yaml") || path.ends_with(".yml"))
            && bytes.windows(12).any(|w| w == b"\nkind: Stage")
    })
}

/// Image references in a tree (see [`deployed_at`]).
fn images_from_tree(
    files: &ArtifactSet,
    environment: Option<&str>,
    known: &BTreeMap<String, Unit>,
) -> BTreeMap<Unit, Vec<String>> {
    // On a `stage/<env>` branch the paths do not name the environment (`<project>/<component>`
    // after `publish --per-environment`): classify them as publish did.
    let classifier = Classifier::new(files.paths(), environment).with_known(known.clone());
    let mut out = images_by_unit(files, &classifier);
    for (path, bytes) in &files.files {
        let is_yaml = path.ends_with(".yaml") || path.ends_with(".yml");
        let known = classifier.known_unit(path);
        if !is_yaml || (known.is_none() && classifier.component_depth(path).is_some()) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            continue;
        };
        let Ok(docs) = crate::yaml::parse_stream(path, text) else {
            continue;
        };
        let mut images = Vec::new();
        for doc in &docs {
            container_images(doc, &mut images);
        }
        if images.is_empty() {
            continue;
        }
        let component = match path.split_once('/') {
            Some((dir, _)) => dir,
            None => path
                .rsplit_once('.')
                .map_or(path.as_str(), |(stem, _)| stem),
        };
        let unit = known.cloned().unwrap_or_else(|| Unit::Component {
            project: "-".to_string(),
            environment: environment.unwrap_or("-").to_string(),
            component: component.to_string(),
        });
        let refs = out.entry(unit).or_default();
        for image in images {
            if !refs.contains(&image) {
                refs.push(image);
            }
        }
    }
    out
}

/// The images a deployed folder runs: its kustomization's `images:` when it has one (kiln's
/// rendered component folders: the manifests beside it still hold the base tags), else the
/// container images of its YAML files (what a Stage's `kustomize-build` wrote), in file and
/// document order, each once.
pub fn folder_images(files: &ArtifactSet) -> Vec<String> {
    for name in ["kustomization.yaml", "kustomization.yml", "Kustomization"] {
        if let Some(bytes) = files.files.get(name) {
            let refs = super::trailers::kustomization_images(name, bytes);
            if !refs.is_empty() {
                return refs;
            }
        }
    }
    let mut out = Vec::new();
    for (path, bytes) in &files.files {
        if !(path.ends_with(".yaml") || path.ends_with(".yml")) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            continue;
        };
        let Ok(docs) = crate::yaml::parse_stream(path, text) else {
            continue;
        };
        for doc in &docs {
            container_images(doc, &mut out);
        }
    }
    out
}

/// Collects `image` of every entry of `containers`, `initContainers` and
/// `ephemeralContainers` lists anywhere in `value` (Pods, every workload template, CronJob's
/// job template, and CRDs that embed a pod spec), in document order.
fn container_images(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, child) in map {
                if matches!(
                    key.as_str(),
                    "containers" | "initContainers" | "ephemeralContainers"
                ) && let Some(list) = child.as_array()
                {
                    for container in list {
                        if let Some(image) = container.get("image").and_then(|i| i.as_str())
                            && !out.iter().any(|seen| seen == image)
                        {
                            out.push(image.to_string());
                        }
                    }
                }
                container_images(child, out);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                container_images(item, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_parse_in_both_forms() {
        assert_eq!(parse_date("1970-01-01").unwrap(), 0);
        assert_eq!(parse_date("2000-03-01").unwrap(), 951_868_800);
        assert_eq!(parse_date("2023-11-14T22:13:20Z").unwrap(), 1_700_000_000);
        assert_eq!(
            parse_date("2023-11-14T23:13:20.123+01:00").unwrap(),
            1_700_000_000
        );
        assert_eq!(
            parse_date("2023-11-14t21:13:20-01:00").unwrap(),
            1_700_000_000
        );
        for bad in [
            "2023-02-29",
            "2023-13-01",
            "2023-1-01",
            "yesterday",
            "2023-11-14T25:00:00Z",
            "2023-11-14T22:13:20",
            "2023-11-14T22:13:20+0100",
        ] {
            assert!(parse_date(bad).is_err(), "{bad}");
        }
        assert!(parse_date("2024-02-29").is_ok());
    }

    #[test]
    fn relative_dates_count_back_from_the_given_clock() {
        let now = 1_700_000_000; // 2023-11-14T22:13:20Z
        assert_eq!(parse_when("2d", now).unwrap(), now - 2 * 86_400);
        assert_eq!(parse_when("36h ago", now).unwrap(), now - 36 * 3600);
        assert_eq!(parse_when("1w", now).unwrap(), now - 7 * 86_400);
        assert_eq!(
            parse_when("yesterday", now).unwrap(),
            parse_date("2023-11-13").unwrap()
        );
        assert_eq!(
            parse_when("today", now).unwrap(),
            parse_date("2023-11-14").unwrap()
        );
        assert_eq!(
            parse_when("2023-11-01", now).unwrap(),
            parse_date("2023-11-01").unwrap()
        );
        for bad in ["2x", "d", "tomorrow", "-2d", "99999999999999999999d"] {
            assert!(parse_when(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn timestamps_format_as_rfc3339() {
        let t = Timestamp {
            seconds: 1_700_000_000,
            offset_minutes: 60,
        };
        assert_eq!(t.to_string(), "2023-11-14T23:13:20+01:00");
        let t = Timestamp {
            seconds: 1_700_000_000,
            offset_minutes: -150,
        };
        assert_eq!(t.to_string(), "2023-11-14T19:43:20-02:30");
        assert_eq!(parse_date(&t.to_string()).unwrap(), 1_700_000_000);
        let t = Timestamp {
            seconds: -1,
            offset_minutes: 0,
        };
        assert_eq!(t.to_string(), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn container_images_are_found_in_any_pod_spec() {
        let mut files = ArtifactSet::new();
        files.insert(
            "api/manifests.yaml",
            "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: report\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          initContainers:\n          - name: init\n            image: busybox:1.36\n          containers:\n          - name: main\n            image: ghcr.io/acme/api:2.0.0\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: ghcr.io/acme/api:2.0.0\n",
        );
        files.insert("README.md", "image: not-yaml-scope\n");
        let images = images_from_tree(&files, Some("prod"), &BTreeMap::new());
        let unit = Unit::Component {
            project: "-".into(),
            environment: "prod".into(),
            component: "api".into(),
        };
        assert_eq!(images.len(), 1);
        assert_eq!(images[&unit], ["busybox:1.36", "ghcr.io/acme/api:2.0.0"]);
    }

    #[test]
    fn printable_escapes_what_a_terminal_would_obey() {
        assert!(matches!(
            printable("kiln: promote cart\tto dev\n"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            printable("hotfix\u{1b}[2K\r\u{9b}31m\u{202e}ok"),
            "hotfix\\u{1b}[2K\\r\\u{9b}31m\\u{202e}ok"
        );
    }

    /// One walk answers every (Stage, Freight) question about a branch; a message whose
    /// last line has no newline (`git commit -m`, a hand-written trailer) still counts.
    #[test]
    fn promotions_on_a_branch_are_read_in_one_walk() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let who = git2::Signature::now("t", "t@example.com").unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let mut parent: Option<git2::Oid> = None;
        for message in [
            "kiln: promote a to dev\n\nstage: p/a-dev\nfreight: f1\n",
            "kiln: promote a to test\n\nstage: p/a-test\nfreight: f2",
            "stage: p/x\nfreight: not-a-trailer\n",
        ] {
            let parents: Vec<git2::Commit> = parent
                .iter()
                .map(|p| repo.find_commit(*p).unwrap())
                .collect();
            let refs: Vec<&git2::Commit> = parents.iter().collect();
            parent = Some(
                repo.commit(Some("refs/heads/main"), &who, &who, message, &tree, &refs)
                    .unwrap(),
            );
        }
        let promoted = promotions_on(
            &dir.path().display().to_string(),
            "main",
            &RemoteAuth::default(),
        )
        .unwrap();
        let pair = |s: &str, f: &str| (s.to_string(), f.to_string());
        assert_eq!(
            promoted,
            BTreeSet::from([pair("p/a-dev", "f1"), pair("p/a-test", "f2")])
        );
        let none = promotions_on(
            &dir.path().display().to_string(),
            "nope",
            &RemoteAuth::default(),
        );
        assert!(none.unwrap().is_empty());
    }

    /// A path with a newline would add a line of its own to `diff --stat` or `verify`.
    #[test]
    fn a_field_escapes_newlines_too() {
        assert_eq!(
            printable_field("a.yaml\nno differences\u{1b}[2K"),
            "a.yaml\\nno differences\\u{1b}[2K"
        );
        assert!(matches!(
            printable_field("envs/dev/x.yaml"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn civil_round_trip_over_centuries() {
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
