//! Rendering a processed chart, after Helm v4.2.3 `pkg/engine/engine.go` (template
//! collection per chart with scoped `.Values`, parse and execution order, `include`/`tpl`/
//! `required`/`fail`, the `<no value>` clean-up and error reformatting) and
//! `pkg/engine/files.go` (`.Files`).

use super::chart::ignore::glob_match_double;
use super::chart::{Chart, ChartFiles, FileData, read_deferred};
use super::template::exec::{Exec, Funcs, TemplateSet};
use super::template::fmt::{self, s};
use super::template::parse;
use super::template::value::{Cx, Map, Marshaled, Object, Value, new_map};
use super::yaml;
use crate::sprig::{self, Seed};
use crate::template::value::Dict;
use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

pub mod capabilities;
pub mod files;
pub mod funcs;
pub mod toml;

use capabilities::capabilities;
use files::Files;
use funcs::helm_funcs;

const WARN_START: &str = "HELM_ERR_START";
const WARN_END: &str = "HELM_ERR_END";

/// A rendering failure, already in Helm's words.
#[derive(Debug, Clone)]
pub struct RenderError {
    /// The template file (`chart/templates/x.yaml`).
    pub file: String,
    /// `file:line[:col]` when known.
    pub location: Option<String>,
    pub message: String,
    pub kind: RenderErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderErrorKind {
    Parse,
    Exec,
    UnknownFunction,
    Fail,
}

/// What the templates see of the release and the cluster.
#[derive(Clone)]
pub struct Context {
    pub release_name: String,
    pub namespace: String,
    pub kube_version: String,
    pub api_versions: Vec<String>,
    pub is_upgrade: bool,
    /// The instant Sprig's `now` (and `ago`, `date` of a non-date, …) reads, in seconds
    /// since the epoch: a parameter, never the clock.
    pub now: i64,
    /// The render's budget of template steps and output bytes.
    pub budget: super::template::exec::Budget,
    /// Record which values paths the templates read ([`Output::reads`]).
    pub record_reads: bool,
    /// With `record_reads`: record them per action too
    /// ([`super::template::reads::ValueReads::traced`]).
    pub trace_reads: bool,
}

/// What [`render`] gives: path → output, and the values paths read when
/// [`Context::record_reads`] asked for them.
pub struct Output {
    pub files: BTreeMap<String, String>,
    pub reads: Option<Box<super::template::reads::ValueReads>>,
}

/// `.Chart`: Chart.yaml under Go's field names.
fn chart_value(c: &Chart, is_root: bool) -> Value {
    let Value::Map(meta) = &c.meta else {
        return Value::map(Dict::new());
    };
    let meta = meta.borrow();
    let mut m = Dict::new();
    let fields = [
        ("name", "Name"),
        ("home", "Home"),
        ("version", "Version"),
        ("description", "Description"),
        ("icon", "Icon"),
        ("apiVersion", "APIVersion"),
        ("condition", "Condition"),
        ("tags", "Tags"),
        ("appVersion", "AppVersion"),
        ("kubeVersion", "KubeVersion"),
        ("type", "Type"),
    ];
    for (yk, gk) in fields {
        m.insert(
            gk.to_string(),
            meta.get(yk).cloned().unwrap_or(Value::from("")),
        );
    }
    m.insert("Name", Value::from(c.name.clone()));
    // Helm v4 gives the lists as empty ones when Chart.yaml has none (`[]` when printed).
    let list = |yk: &str| match meta.get(yk) {
        Some(Value::List(l)) => Value::List(l.clone()),
        _ => Value::list(Vec::new()),
    };
    m.insert("Sources", list("sources"));
    m.insert("Keywords", list("keywords"));
    // A maintainer is Go's `chart.Maintainer`: its three fields under their Go names.
    let maintainers = match list("maintainers") {
        Value::List(l) => l
            .iter()
            .map(|item| {
                let Value::Map(im) = item else {
                    return item.clone();
                };
                let im = im.borrow();
                let field = |k: &str| im.get(k).cloned().unwrap_or(Value::from(""));
                let mut mm = Dict::new();
                mm.insert("Name", field("name"));
                mm.insert("Email", field("email"));
                mm.insert("URL", field("url"));
                Value::map(mm)
            })
            .collect(),
        _ => Vec::new(),
    };
    m.insert("Maintainers", Value::list(maintainers));
    m.insert(
        "Dependencies",
        Value::list(c.deps.iter().map(dependency_value).collect()),
    );
    m.insert(
        "Annotations",
        meta.get("annotations").cloned().unwrap_or(Value::Nil),
    );
    let deprecated = meta.get("deprecated").is_some_and(|v| s(v) == "true");
    m.insert("Deprecated", Value::Bool(deprecated));
    m.insert("IsRoot", Value::Bool(is_root));
    Value::map(m)
}

/// One of `.Chart.Dependencies`: Go's `chart.Dependency` after Helm's processing
/// (pkg/chart/v2/util/dependencies.go): the disabled ones are gone, `Name` is the alias, and
/// `ImportValues` is each entry's `child`/`parent` pair (a string `x` is `exports.x` into `.`).
fn dependency_value(d: &super::chart::Dependency) -> Value {
    let imports = d
        .import_values
        .iter()
        .filter_map(|iv| {
            let (child, parent) = match iv {
                Value::Map(im) => {
                    let im = im.borrow();
                    let field = |k: &str| im.get(k).map_or("<nil>".to_string(), fmt::strval);
                    (field("child"), field("parent"))
                }
                Value::Str(x) => (format!("exports.{x}"), ".".to_string()),
                _ => return None,
            };
            let mut pair = Dict::new();
            pair.insert("child", Value::from(child));
            pair.insert("parent", Value::from(parent));
            Some(Value::map(pair))
        })
        .collect();
    let mut m = Dict::new();
    m.insert("Name", Value::from(d.name.clone()));
    m.insert("Version", Value::from(d.version.clone()));
    m.insert("Repository", Value::from(d.repository.clone()));
    m.insert("Condition", Value::from(d.condition.clone()));
    m.insert(
        "Tags",
        Value::list(d.tags.iter().map(|t| Value::from(t.clone())).collect()),
    );
    m.insert("Enabled", Value::Bool(true));
    m.insert("ImportValues", Value::list(imports));
    m.insert("Alias", Value::from(d.alias.clone()));
    Value::map(m)
}

/// A template to render; its text (and its parse, when done ahead) is the chart's.
struct Renderable<'a> {
    slot: &'a parse::Slot,
    vals: Map,
    base_path: String,
}

/// Collects every template of `c` and its subcharts (`recAllTpls`), keyed by full path;
/// returns the scope `c`'s templates see, which is its parent's `.Subcharts.<name>`.
fn collect<'a>(
    c: &'a Chart,
    parent_path: Option<&str>,
    parent_vals: Option<&Map>,
    top: &Value,
    caps: &Value,
    release: &Value,
    out: &mut BTreeMap<String, Renderable<'a>>,
) -> Map {
    let full = match parent_path {
        None => c.name.clone(),
        Some(p) => format!("{p}/charts/{}", c.name),
    };
    let next = new_map();
    {
        let mut n = next.borrow_mut();
        n.insert("Chart", chart_value(c, parent_path.is_none()));
        n.insert("Files", Value::Object(Rc::new(Files::new(c.files.clone()))));
        n.insert("Release", release.clone());
        n.insert("Capabilities", caps.clone());
        let values = match parent_vals {
            None => match top {
                Value::Map(_) => top.clone(),
                _ => Value::Map(new_map()),
            },
            Some(pv) => match pv.borrow().get(&c.name) {
                Some(v @ Value::Map(_)) => v.clone(),
                _ => Value::Map(new_map()),
            },
        };
        n.insert("Values", values);
    }
    let subs = new_map();
    let my_values = match next.borrow().get("Values") {
        Some(Value::Map(m)) => m.clone(),
        _ => new_map(),
    };
    // Helm v4 gives each subchart's whole scope (`.Subcharts.<name>.Values`, `.Chart`, …),
    // the same maps that subchart's templates see.
    for sub in &c.subcharts {
        let scope = collect(sub, Some(&full), Some(&my_values), top, caps, release, out);
        subs.borrow_mut()
            .insert(sub.name.clone(), Value::Map(scope));
    }
    next.borrow_mut().insert("Subcharts", Value::Map(subs));
    for (name, slot) in &c.templates {
        // A library chart contributes only its partials.
        if c.kind_library && !name.rsplit('/').next().unwrap_or("").starts_with('_') {
            continue;
        }
        out.insert(
            format!("{full}/{name}"),
            Renderable {
                slot,
                vals: next.clone(),
                base_path: format!("{full}/templates"),
            },
        );
    }
    next
}

/// Helm's parse/execution order: deeper paths first, then reverse lexicographic.
fn sort_templates(keys: &mut [String]) {
    // The depth is counted once per key, not in every comparison (2 % of a render).
    let mut by: Vec<(usize, String)> = keys
        .iter_mut()
        .map(|k| (k.matches('/').count(), std::mem::take(k)))
        .collect();
    by.sort_by(|(da, a), (db, b)| db.cmp(da).then_with(|| b.cmp(a)));
    for (k, (_, v)) in keys.iter_mut().zip(by) {
        *k = v;
    }
}

/// The functions a chart's templates have: Sprig's as Helm has them, with `seed` for the
/// random ones, then Helm's own.
fn chart_funcs(seed: u64, now: i64) -> Funcs {
    let mut funcs = Funcs::default();
    sprig::register(&mut funcs, Rc::new(RefCell::new(Seed::new(seed))), now);
    helm_funcs(&mut funcs);
    funcs
}

/// Resolves a function name of a chart template to its id in `chart_funcs`'s table. The
/// table is built in one order whatever the seed, so its names are kept once for the
/// process: a chart's templates are parsed while it loads, before any render has a table.
pub fn resolve(name: &str) -> Option<parse::FuncId> {
    static NAMES: std::sync::OnceLock<super::template::exec::FxMap<&'static str, parse::FuncId>> =
        std::sync::OnceLock::new();
    super::template::exec::FuncNames::of(
        NAMES.get_or_init(|| chart_funcs(0, sprig::date::FIXED_NOW).into_names()),
    )
    .id(name)
}

/// Renders every template; returns path → output (partials skipped, NOTES included).
/// `fs` is the file system `c` was loaded through: `.Files` reads what the load deferred
/// from it.
pub fn render(
    fs: &dyn kiln_base::fs::FileSystem,
    c: &Chart,
    values: &Map,
    ctx: &Context,
    seed: u64,
) -> Result<Output, RenderError> {
    let caps = capabilities(ctx).map_err(|m| RenderError {
        file: String::new(),
        location: None,
        message: m,
        kind: RenderErrorKind::Exec,
    })?;
    let mut rel = Dict::new();
    rel.insert("Name", Value::from(ctx.release_name.clone()));
    rel.insert("Namespace", Value::from(ctx.namespace.clone()));
    rel.insert("IsUpgrade", Value::Bool(ctx.is_upgrade));
    rel.insert("IsInstall", Value::Bool(!ctx.is_upgrade));
    rel.insert("Revision", Value::Int(1));
    rel.insert("Service", Value::from("Helm"));
    let release = Value::map(rel);
    let mut tpls = BTreeMap::new();
    collect(
        c,
        None,
        None,
        &Value::Map(values.clone()),
        &caps,
        &release,
        &mut tpls,
    );

    let funcs = Rc::new(chart_funcs(seed, ctx.now));

    let mut keys: Vec<String> = tpls.keys().cloned().collect();
    sort_templates(&mut keys);
    let mut set = TemplateSet::default();
    // Taken in Helm's order, each parsed ahead while the chart loaded or parsed now
    // (parse::Slot); the first error in that order is the one reported.
    for k in &keys {
        let parsed = tpls[k].slot.take(k, &resolve).map_err(|e| RenderError {
            file: k.clone(),
            location: Some(format!("{}:{}", e.name, e.line)),
            kind: if e.message.starts_with("function \"") {
                RenderErrorKind::UnknownFunction
            } else {
                RenderErrorKind::Parse
            },
            // Helm's cleanupParseError keeps the last part of Go's message after ": "
            // (`bad number syntax: "1x"` prints as `"1x"`).
            message: format!(
                "parse error at ({}:{}): {}",
                e.name,
                e.line,
                e.message.rsplit(": ").next().unwrap_or_default()
            ),
        })?;
        set.add(k, k, parsed);
    }
    let set = Rc::new(set);
    let mut exec = Exec::new(set, funcs, Rc::new(()));
    exec.cx = Cx { fs: Some(fs) };
    exec.set_budget(ctx.budget);
    if ctx.trace_reads {
        exec.reads = Some(Box::new(super::template::reads::ValueReads::traced(values)));
    } else if ctx.record_reads {
        exec.reads = Some(Box::new(super::template::reads::ValueReads::new(values)));
    }
    let mut out = BTreeMap::new();
    for k in &keys {
        if k.rsplit('/').next().unwrap_or("").starts_with('_') {
            continue;
        }
        let r = &tpls[k];
        let mut t = Dict::new();
        t.insert("Name", Value::from(k.clone()));
        t.insert("BasePath", Value::from(r.base_path.clone()));
        r.vals.borrow_mut().insert("Template", Value::map(t));
        let text = exec
            .execute(k, Value::Map(r.vals.clone()))
            .map_err(|e| reformat(k, &e))?;
        out.insert(k.clone(), strip_no_value(text));
    }
    // Freeing the trees is off the render's path: a pool thread drops them while this one
    // sorts and prints (inside `kiln render` it is one more small job for the pool).
    let reads = exec.reads.take();
    let trees = exec.into_trees();
    if !trees.is_empty() {
        rayon::spawn(move || drop(trees));
    }
    Ok(Output { files: out, reads })
}

/// The name of a parsed `--name-template` in Helm's messages (`template.New("name-template")`).
const NAME_TEMPLATE: &str = "name-template";

/// Helm's `action.TemplateName` (pkg/action/install.go, v4.2.3): `--name-template` is a Go
/// template with Sprig's functions (not Helm's own: no `include`, `tpl`, `toYaml`), run
/// with no data. Sprig's random functions draw from a seed of the template's text, so one
/// name template gives one name, as every other kiln output is the same for the same input.
pub fn name_template(text: &str) -> Result<String, RenderError> {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    let seed = u64::from_le_bytes(digest[..8].try_into().unwrap_or_default());
    let mut funcs = Funcs::default();
    sprig::register(
        &mut funcs,
        Rc::new(RefCell::new(Seed::new(seed))),
        sprig::date::FIXED_NOW,
    );
    let funcs = Rc::new(funcs);
    let is_func = |n: &str| funcs.id(n);
    let parsed = parse::parse(NAME_TEMPLATE, text, &is_func).map_err(|e| RenderError {
        file: NAME_TEMPLATE.into(),
        location: Some(format!("{}:{}", e.name, e.line)),
        kind: if e.message.starts_with("function \"") {
            RenderErrorKind::UnknownFunction
        } else {
            RenderErrorKind::Parse
        },
        message: e.to_string(),
    })?;
    let mut set = TemplateSet::default();
    set.add(NAME_TEMPLATE, NAME_TEMPLATE, parsed);
    let mut exec = Exec::new(Rc::new(set), funcs, Rc::new(()));
    exec.execute(NAME_TEMPLATE, Value::Nil)
        .map_err(|e| reformat(NAME_TEMPLATE, &e))
}

/// Helm's `strings.ReplaceAll(out, "<no value>", "")` on a rendered text, without copying
/// the (usually clean, sometimes megabytes long) text when there is nothing to remove.
fn strip_no_value(text: String) -> String {
    if text.contains("<no value>") {
        text.replace("<no value>", "")
    } else {
        text
    }
}

/// Helm's `reformatExecErrorMsg`: a `fail`/`required` message at the outermost location.
fn reformat(file: &str, e: &super::template::exec::ExecError) -> RenderError {
    let text = e.to_string();
    if let (Some(a), Some(b)) = (text.find(WARN_START), text.rfind(WARN_END))
        && a + WARN_START.len() <= b
    {
        {
            let msg = &text[a + WARN_START.len()..b];
            return RenderError {
                file: file.to_string(),
                location: Some(e.location.clone()),
                message: format!("execution error at ({}): {msg}", e.location),
                kind: RenderErrorKind::Fail,
            };
        }
    }
    RenderError {
        file: file.to_string(),
        location: Some(e.location.clone()),
        message: traceable(&text).unwrap_or(text),
        kind: RenderErrorKind::Exec,
    }
}

/// The rest of Helm v4's `reformatExecErrorMsg` (pkg/engine/engine.go): the error and each
/// one it wraps, as `TraceableError`s (consecutive equal ones once), each on its lines:
/// `LOCATION`, `  executing "NAME" at <NODE>:`, `    MESSAGE`. text/template wraps only a
/// called function's error (`error calling F: %w`), so the chain is read off the text: an
/// `include` that failed inside carries its template's error on. A link that is not a
/// template error (a function's own) makes Helm keep Go's one-line error: `None`.
fn traceable(text: &str) -> Option<String> {
    let mut chain: Vec<Traceable> = Vec::new();
    let mut cur = text;
    loop {
        let (tr, wrapped) = parse_traceable(cur)?;
        if chain.last() != Some(&tr) {
            chain.push(tr);
        }
        match wrapped {
            Some(next) => cur = next,
            None => break,
        }
    }
    let mut out = String::new();
    for t in &chain {
        if !t.location.is_empty() {
            out.push_str(t.location);
            out.push_str("\n  ");
        }
        if !t.function.is_empty() {
            out.push_str(&t.function);
            out.push_str("\n    ");
        }
        if !t.message.is_empty() {
            out.push_str(t.message);
            out.push('\n');
        }
    }
    Some(out.trim().to_string())
}

/// Helm's `TraceableError`.
#[derive(PartialEq)]
struct Traceable<'a> {
    location: &'a str,
    message: &'a str,
    function: String,
}

/// Helm's `parseTemplateExecErrorString`, and the error the text's error wraps, if any.
fn parse_traceable(s: &str) -> Option<(Traceable<'_>, Option<&str>)> {
    let rest = s.strip_prefix("template: ")?;
    if rest.starts_with("no template ") {
        let t = Traceable {
            location: "",
            message: s,
            function: String::new(),
        };
        return Some((t, None));
    }
    if let Some((name, after)) = rest.split_once(": executing ")
        && let Some(after) = after.strip_prefix('"')
        && let Some(q) = after.find('"')
        && let Some(at) = after[q + 1..].strip_prefix(" at <")
        && let Some((node, msg)) = at.split_once(">: ")
    {
        // What it wraps: a called function's error (`error calling F: ERR`).
        let inner = msg
            .strip_prefix("error calling ")
            .and_then(|m| m.split_once(": "))
            .map(|(_, e)| e);
        let t = Traceable {
            location: name,
            message: msg.find(" template:").map_or(msg, |i| &msg[..i]),
            function: format!("executing \"{}\" at <{node}>:", &after[..q]),
        };
        return Some((t, inner));
    }
    let (name, msg) = rest.rsplit_once(": ")?;
    let t = Traceable {
        location: name,
        message: msg.find(" template:").map_or(msg, |i| &msg[..i]),
        function: String::new(),
    };
    Some((t, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chart's function table holds every name Sprig v3.3.0 (what Helm v4.2.3 vendors)
    /// registers in `genericMap` (Masterminds/sprig functions.go), aliases and snake_case
    /// spellings included, less the two Helm deletes, plus Helm's own (helm/helm
    /// pkg/engine/funcs.go `funcMap`, and `include`, `tpl`, `required`, `lookup` bound at
    /// render) and Go's builtins (text/template funcs.go `builtins`), and no other name.
    #[test]
    fn the_table_is_sprigs_generic_map_helms_funcs_and_gos_builtins() {
        const SPRIG: &[&str] = &[
            "abbrev",
            "abbrevboth",
            "add",
            "add1",
            "add1f",
            "addf",
            "adler32sum",
            "ago",
            "all",
            "any",
            "append",
            "atoi",
            "b32dec",
            "b32enc",
            "b64dec",
            "b64enc",
            "base",
            "bcrypt",
            "biggest",
            "buildCustomCert",
            "camelcase",
            "cat",
            "ceil",
            "chunk",
            "clean",
            "coalesce",
            "compact",
            "concat",
            "contains",
            "date",
            "dateInZone",
            "dateModify",
            "date_in_zone",
            "date_modify",
            "decryptAES",
            "deepCopy",
            "deepEqual",
            "default",
            "derivePassword",
            "dict",
            "dig",
            "dir",
            "div",
            "divf",
            "duration",
            "durationRound",
            "empty",
            "encryptAES",
            "env",
            "expandenv",
            "ext",
            "fail",
            "first",
            "float64",
            "floor",
            "fromJson",
            "genCA",
            "genCAWithKey",
            "genPrivateKey",
            "genSelfSignedCert",
            "genSelfSignedCertWithKey",
            "genSignedCert",
            "genSignedCertWithKey",
            "get",
            "getHostByName",
            "has",
            "hasKey",
            "hasPrefix",
            "hasSuffix",
            "hello",
            "htmlDate",
            "htmlDateInZone",
            "htpasswd",
            "indent",
            "initial",
            "initials",
            "int",
            "int64",
            "isAbs",
            "join",
            "kebabcase",
            "keys",
            "kindIs",
            "kindOf",
            "last",
            "list",
            "lower",
            "max",
            "maxf",
            "merge",
            "mergeOverwrite",
            "min",
            "minf",
            "mod",
            "mul",
            "mulf",
            "mustAppend",
            "mustChunk",
            "mustCompact",
            "mustDateModify",
            "mustDeepCopy",
            "mustFirst",
            "mustFromJson",
            "mustHas",
            "mustInitial",
            "mustLast",
            "mustMerge",
            "mustMergeOverwrite",
            "mustPrepend",
            "mustPush",
            "mustRegexFind",
            "mustRegexFindAll",
            "mustRegexMatch",
            "mustRegexReplaceAll",
            "mustRegexReplaceAllLiteral",
            "mustRegexSplit",
            "mustRest",
            "mustReverse",
            "mustSlice",
            "mustToDate",
            "mustToJson",
            "mustToPrettyJson",
            "mustToRawJson",
            "mustUniq",
            "mustWithout",
            "must_date_modify",
            "nindent",
            "nospace",
            "now",
            "omit",
            "osBase",
            "osClean",
            "osDir",
            "osExt",
            "osIsAbs",
            "pick",
            "pluck",
            "plural",
            "prepend",
            "push",
            "quote",
            "randAlpha",
            "randAlphaNum",
            "randAscii",
            "randBytes",
            "randInt",
            "randNumeric",
            "regexFind",
            "regexFindAll",
            "regexMatch",
            "regexQuoteMeta",
            "regexReplaceAll",
            "regexReplaceAllLiteral",
            "regexSplit",
            "repeat",
            "replace",
            "rest",
            "reverse",
            "round",
            "semver",
            "semverCompare",
            "seq",
            "set",
            "sha1sum",
            "sha256sum",
            "sha512sum",
            "shuffle",
            "slice",
            "snakecase",
            "sortAlpha",
            "split",
            "splitList",
            "splitn",
            "squote",
            "sub",
            "subf",
            "substr",
            "swapcase",
            "ternary",
            "title",
            "toDate",
            "toDecimal",
            "toJson",
            "toPrettyJson",
            "toRawJson",
            "toString",
            "toStrings",
            "trim",
            "trimAll",
            "trimPrefix",
            "trimSuffix",
            "trimall",
            "trunc",
            "tuple",
            "typeIs",
            "typeIsLike",
            "typeOf",
            "uniq",
            "unixEpoch",
            "unset",
            "until",
            "untilStep",
            "untitle",
            "upper",
            "urlJoin",
            "urlParse",
            "uuidv4",
            "values",
            "without",
            "wrap",
            "wrapWith",
        ];
        const HELM: &[&str] = &[
            "fromJson",
            "fromJsonArray",
            "fromToml",
            "fromYaml",
            "fromYamlArray",
            "include",
            "lookup",
            "mustToJson",
            "mustToToml",
            "mustToYaml",
            "required",
            "toJson",
            "toToml",
            "toYaml",
            "toYamlPretty",
            "tpl",
        ];
        const GO: &[&str] = &[
            "and", "call", "eq", "ge", "gt", "html", "index", "js", "le", "len", "lt", "ne", "not",
            "or", "print", "printf", "println", "slice", "urlquery",
        ];
        let f = chart_funcs(0, 0);
        let helm_deletes = ["env", "expandenv"];
        let mut want: Vec<String> = (SPRIG.iter().filter(|n| !helm_deletes.contains(n)))
            .chain(HELM)
            .chain(GO)
            .map(|n| n.to_string())
            .collect();
        want.sort();
        want.dedup();
        let have = f.names();
        let missing: Vec<_> = want.iter().filter(|n| !have.contains(n)).collect();
        let extra: Vec<_> = have.iter().filter(|n| !want.contains(n)).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "missing {missing:?}, not Sprig's {extra:?}"
        );
    }

    /// `.Files` over the chart's shared list answers as the map Helm builds: names sorted,
    /// the last of a repeated name (a tar may repeat one) winning, `Glob` a narrower view.
    #[test]
    fn files_read_the_shared_list_as_a_sorted_map() {
        let list = [
            ("b/x.conf", &b"xy"[..]),
            ("a.txt", b"first"),
            ("b-y.conf", b"y"),
            ("a.txt", b"second"),
        ]
        .iter()
        .map(|(n, d)| (n.to_string(), FileData::Loaded(d.to_vec())))
        .collect();
        let f = Files::new(Rc::new(ChartFiles(list)));
        let cx = Cx::default();
        let names: Vec<&str> = f.read_all(&cx).unwrap().iter().map(|(k, _)| *k).collect();
        assert_eq!(names, ["a.txt", "b-y.conf", "b/x.conf"]);
        assert_eq!(f.get(&cx, "a.txt").unwrap(), "second");
        assert_eq!(f.get(&cx, "missing").unwrap(), "");
        let Some(Ok(Value::Object(g))) = f.call(&cx, "Glob", &[Value::from("b*/*.conf")]) else {
            panic!("Glob gives files");
        };
        // Go's `fmt` of a `[]byte`: the bytes in decimal, space-separated.
        assert_eq!(g.display(), "map[b/x.conf:[120 121]]");
        assert_eq!(g.entry_count(), Some(1));
        let Some(Ok(cfg)) = g.call(&cx, "AsConfig", &[]) else {
            panic!("AsConfig");
        };
        assert_eq!(s(&cfg), "x.conf: xy");
    }

    /// Helm v4's traceable error lines: one entry per template error in the chain (the
    /// executing error and the include's error it wraps), and Go's one line when a link is
    /// a function's own error.
    #[test]
    fn execution_errors_are_reformatted_as_helm_v4_traces_them() {
        let single = "template: c/t.yaml:4:15: executing \"c/t.yaml\" at <.Values.a.b>: nil pointer evaluating interface {}.b";
        assert_eq!(
            traceable(single).as_deref(),
            Some(
                "c/t.yaml:4:15\n  executing \"c/t.yaml\" at <.Values.a.b>:\n    nil pointer evaluating interface {}.b"
            )
        );
        let nested = "template: c/t.yaml:3:8: executing \"c/t.yaml\" at <include \"x\" .>: error calling include: template: c/_h.tpl:1:20: executing \"x\" at <.a.b>: nil pointer evaluating interface {}.b";
        assert_eq!(
            traceable(nested).as_deref(),
            Some(concat!(
                "c/t.yaml:3:8\n  executing \"c/t.yaml\" at <include \"x\" .>:\n    error calling include:\n",
                "c/_h.tpl:1:20\n  executing \"x\" at <.a.b>:\n    nil pointer evaluating interface {}.b"
            ))
        );
        let missing = "template: c/t.yaml:3:8: executing \"c/t.yaml\" at <include \"nope\" .>: error calling include: template: no template \"nope\" associated with template \"gotpl\"";
        assert!(traceable(missing).is_some_and(|t| t.ends_with(
            "error calling include:\ntemplate: no template \"nope\" associated with template \"gotpl\""
        )));
        let own = "template: c/t.yaml:6:16: executing \"c/t.yaml\" at <eq .a 1>: error calling eq: incompatible types for comparison";
        assert_eq!(traceable(own), None);
    }
}
