//! The command line: clap structs that hold nothing but flags, and one `run` that calls the
//! library and prints. Printing happens here and nowhere else in the library.
#![allow(clippy::disallowed_methods)] // the edge: environment, terminal, clock

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// kiln compiles a typed platform spec into a Git-ready tree of rendered manifests,
/// kustomizations, Kargo pipelines and Argo CD Applications.
#[derive(Debug, Parser)]
#[command(name = "kiln", version, about, long_about = None, propagate_version = true)]
#[command(
    after_help = "Exit codes: 0 ok, 1 input errors, 2 usage, 101 internal error, 130 SIGINT (Ctrl-C), 143 SIGTERM; diff and verify: 0 same, 1 different, 3 error; status: 0 in sync, 1 lagging or drifted, 3 error.\nSet NO_COLOR=1 to disable colours."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render a platform into a Git-ready tree.
    #[command(
        after_help = "Examples:\n  kiln render platforms/bank\n  kiln render platforms/bank --write-to out/ --project web --environment dev\n  kiln render platforms/bank -l tier=prod"
    )]
    Render(RenderArgs),
    /// Merge the trees of sharded renders (`kiln render --shard i/N`) into one tree.
    #[command(
        after_help = "Examples:\n  kiln render platforms/bank --shard 1/2 --write-to shard-1\n  kiln render platforms/bank --shard 2/2 --write-to shard-2\n  kiln merge shard-1 shard-2 --write-to deploy"
    )]
    Merge(MergeArgs),
    /// Show the loaded platform or the evaluated BuildPlans.
    #[command(
        after_help = "Examples:\n  kiln show platform platforms/bank\n  kiln show buildplans platforms/bank -o json --environment dev"
    )]
    Show(ShowArgs),
    /// Print the JSON Schemas of the spec kinds (Platform, Component).
    #[command(
        after_help = "Examples:\n  kiln schema\n  kiln schema component > component.schema.json"
    )]
    Schema(SchemaArgs),
    /// Scaffold a platform and a first component, with the schemas their editor modelines use.
    #[command(
        after_help = "Examples:\n  kiln init shop --name shop --component cart\n  cd shop && kiln render platforms/shop"
    )]
    Init(InitArgs),
    /// Build a kustomization directory natively, like `kubectl kustomize DIR`.
    #[command(
        after_help = "Examples:\n  kiln kustomize overlays/prod\n  kiln kustomize overlays/prod > out.yaml"
    )]
    Kustomize(KustomizeArgs),
    /// Render a Helm chart natively, like `helm template` (Helm v4), without a helm binary.
    #[command(
        after_help = "Examples:\n  kiln helm template rel ./chart -n ns -f values.yaml --set image.tag=1.2\n  kiln helm template ./chart --name-template rel --include-crds --kube-version 1.30"
    )]
    Helm(HelmArgs),
    /// Validate manifests offline, as the API server would: Kubernetes objects against their
    /// API schemas, custom resources against their CRDs (CEL rules included), Kargo and Argo CD
    /// objects against theirs.
    #[command(
        after_help = "Examples:\n  kiln validate deploy/\n  kiln validate manifests/ --kube-version 1.34 --strict\n  kiln validate deploy/ --schema-dir schemas/"
    )]
    Validate(ValidateArgs),
    /// Render, then commit the tree into a Git repository and branch (and push).
    #[command(
        after_help = "Examples:\n  kiln publish platforms/bank --repo ../bank-deploy --branch main\n  kiln publish platforms/bank --repo https://git.example.com/bank/deploy.git --branch main --path rendered"
    )]
    Publish(PublishArgs),
    /// Show what a render would change against a directory or a Git ref (exit 1 on difference).
    #[command(
        after_help = "Examples:\n  kiln diff platforms/bank\n  kiln diff platforms/bank --against ../bank-deploy@main"
    )]
    Diff(DiffArgs),
    /// Fail (exit 1) when the committed tree differs from a fresh render.
    #[command(
        after_help = "Examples:\n  kiln verify platforms/bank --repo ../bank-deploy --ref main"
    )]
    Verify(VerifyArgs),
    /// Read the write repository's history: what was deployed where, and when.
    #[command(
        after_help = "Examples:\n  kiln history --repo ../bank-deploy\n  kiln history --repo ../bank-deploy --component frontend --environment prod-east\n  kiln history --repo ../bank-deploy --at 2026-11-01"
    )]
    History(HistoryArgs),
    /// Run one Stage's promotion locally, with Kargo's step semantics (exit 1 when a step fails).
    #[command(
        after_help = "Examples:\n  kiln promote frontend-dev platforms/bank --freight image=us-docker.pkg.dev/example-bank/bank/frontend:1.5.0 \\\n      --repo-map https://github.com/example/bank-platform.git=../bank-platform \\\n      --repo-map https://github.com/example/bank-web-deploy.git=../bank-web-deploy.git\n  kiln promote contacts-test --project backend --freight latest --repo-map URL=PATH -o json"
    )]
    Promote(PromoteArgs),
    /// Resolve the remote sources again and rewrite kiln.lock (as `cargo update`).
    #[command(
        after_help = "Examples:\n  kiln update platforms/shop\n  kiln update platforms/shop cart\n\nEnvironment (docs/sources.md):\n  KILN_CACHE_DIR              the source cache (default $XDG_CACHE_HOME/kiln)\n  KILN_GIT_USERNAME, KILN_GIT_PASSWORD   Git over HTTPS (or a credential helper; ssh: ssh-agent, KILN_SSH_KEY)\n  KILN_REGISTRY_<HOST>        user:password for a chart repository or registry (or ~/.docker/config.json)\n  KILN_SOURCE_TIMEOUT         seconds a server may stay silent (default 30)\n  KILN_SOURCE_MAX_BYTES, KILN_SOURCE_MAX_FILE_BYTES, KILN_SOURCE_MAX_ENTRIES   size limits per source"
    )]
    Update(UpdateArgs),
    /// Create every write branch the Stages push to (one empty commit each) before Kargo runs.
    #[command(
        after_help = "Examples:\n  kiln bootstrap platforms/bank\n  kiln bootstrap platforms/bank --repo-map https://github.com/example/bank-web-deploy.git=/srv/git/web.git"
    )]
    Bootstrap(BootstrapArgs),
    /// Draw the promotion pipeline (Warehouses, Stages, what each writes) as Mermaid, DOT or SVG.
    #[command(
        after_help = "Examples:\n  kiln graph platforms/bank\n  kiln graph platforms/bank --project backend -o svg > backend.svg\n  kiln graph platforms/bank -o svg --repo-map URL=PATH > runs.svg"
    )]
    Graph(GraphArgs),
    /// What runs in every component and environment, from Git alone (exit 1 when a cell lags
    /// its upstream or drifted: its folder is not what its Stage builds from the Freight it
    /// promoted, or what kiln publish renders from the source commit it recorded).
    #[command(
        after_help = "Examples:\n  kiln status platforms/bank --repo-map https://github.com/example/bank-web-deploy.git=../bank-web-deploy\n  kiln status platforms/bank -e prod-east -o json\n  kiln status platforms/bank -o html > status.html\n  kiln status platforms/shop --per-environment --repo-map URL=PATH   # after publish --per-environment\n\nDrift: the Stage's steps are rerun up to git-commit from the Freight its last promotion\nrecorded, and the folder compared with what they build (the source repository must be\nreachable: --repo-map). Without Kargo, the platform is rendered at the source commit the\nlast publish recorded (from this checkout's history) and compared the same way.\n\nExit codes: 0 in sync, 1 lagging or drifted, 3 error (as kubectl diff)."
    )]
    Status(StatusArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Examples:\n  kiln completions bash > /etc/bash_completion.d/kiln\n  kiln completions zsh > \"${fpath[1]}/_kiln\"\n  kiln completions fish > ~/.config/fish/completions/kiln.fish"
    )]
    Completions(CompletionsArgs),
    /// Write the manual pages (`kiln.1` and one `kiln-<command>.1` per command) into DIR.
    #[command(
        after_help = "Examples:\n  kiln man /usr/local/share/man/man1\n  kiln man target/man && man -l target/man/kiln-render.1"
    )]
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The directory to write the pages into (created if missing).
    pub dir: PathBuf,
}

/// Output format for `show` and `history`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
    Text,
}

/// Output format of `publish`, `diff` and `verify`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, Default)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
}

/// How `diff` and `verify` print a report.
#[derive(Debug, Clone, Args, Default)]
pub struct ReportFlags {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: OutputFormat,
    /// Print nothing; only the exit code tells (0 same, 1 different, 3 error).
    #[arg(short = 'q', long, conflicts_with = "stat")]
    pub quiet: bool,
    /// One line per differing file, no content.
    #[arg(long)]
    pub stat: bool,
}

/// Filters shared by the commands that render (`render`, `publish`, `diff`, `verify`): they
/// choose BuildPlans, and the command touches and compares only the slice they cover (the
/// chosen component directories and their projects' Kargo and Argo CD files).
#[derive(Debug, Clone, Args, Default)]
pub struct Selection {
    /// Only this project (repeatable).
    #[arg(long = "project", short = 'p')]
    pub projects: Vec<String>,
    /// Only this environment (repeatable).
    #[arg(long = "environment", short = 'e')]
    pub environments: Vec<String>,
    /// Only this component instance (repeatable).
    #[arg(long = "component", short = 'c')]
    pub components: Vec<String>,
    /// Only BuildPlans whose labels match this selector, written as kubectl's: requirements
    /// joined by commas, all of which must hold (`tier=nonprod,component=app`), each
    /// `key=value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key` or `!key`
    /// (repeatable, every one must match; project, environment, component, tier and cluster
    /// are labels).
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub labels: Vec<String>,
}

impl Selection {
    /// The filters as flags (`-p web -l tier=prod`), for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (flag, values) in [
            ("-p", &self.projects),
            ("-e", &self.environments),
            ("-c", &self.components),
            ("-l", &self.labels),
        ] {
            parts.extend(values.iter().map(|v| format!("{flag} {v}")));
        }
        parts.join(" ")
    }

    /// Whether any filter is given.
    pub fn is_filtered(&self) -> bool {
        !(self.projects.is_empty()
            && self.environments.is_empty()
            && self.components.is_empty()
            && self.labels.is_empty())
    }

    /// `the selection (-l tier=nope) chooses no BuildPlan` when filters are given and chose
    /// none of the `plans` BuildPlans; `None` otherwise. `render` and `publish` warn with it
    /// (they then write nothing); `diff` and `verify` refuse with it (`empty_selection`).
    pub fn chooses_nothing(&self, plans: usize) -> Option<String> {
        (plans == 0 && self.is_filtered())
            .then(|| format!("the selection ({}) chooses no BuildPlan", self.describe()))
    }
}

/// `diff` and `verify` with filters that choose no BuildPlan: an error (exit 3), not
/// "no differences" over nothing, so a mistyped filter cannot turn a CI drift check into a
/// check of nothing (as kubectl's `wait` refuses a selector matching nothing:
/// `errNoMatchingResources`, staging/src/k8s.io/kubectl/pkg/cmd/wait/wait.go).
fn empty_selection(selection: &Selection, plans: usize, what: &str) -> miette::Result<()> {
    match selection.chooses_nothing(plans) {
        Some(message) => Err(miette::miette!(
            code = "kiln::cli::empty_selection",
            help = "check the filters against the spec (`kiln graph` lists the projects, environments and components); without filters every BuildPlan is compared",
            "{message}: nothing to {what}"
        )),
        None => Ok(()),
    }
}

/// How the commands that render use `kiln.lock` and the network (issue 33).
#[derive(Debug, Clone, Args, Default)]
pub struct SourceFlags {
    /// Refuse to change kiln.lock: every remote source must already be locked (CI).
    #[arg(long)]
    pub locked: bool,
    /// Use only the source cache: no network; a source missing from it is an error.
    #[arg(long)]
    pub offline: bool,
    /// Preview another ref of a component's repository: `NAME=REF` (the instance's name as
    /// render shows it, its repository's URL, or the repository's name when unambiguous;
    /// docs/sources.md), e.g. `--source-ref cart=my-branch`. kiln.lock is left as it is. An
    /// unknown NAME is a usage error (exit 2).
    #[arg(long = "source-ref", value_name = "NAME=REF", value_parser = parse_source_ref)]
    pub source_ref: Vec<String>,
}

/// `--source-ref`'s value: `NAME=REF`, both non-empty (a usage error otherwise, exit 2).
fn parse_source_ref(value: &str) -> Result<String, String> {
    match value.split_once('=') {
        Some((name, reference)) if !name.is_empty() && !reference.is_empty() => {
            Ok(value.to_string())
        }
        _ => Err(format!(
            "`{value}` is not NAME=REF (a component's name, then the ref to preview: `cart=my-branch`)"
        )),
    }
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The platform directory (holds platform.yaml and kiln.lock).
    #[arg(default_value = DEFAULT_PLATFORM)]
    pub platform: PathBuf,
    /// Sources to update (default: every source): component instance names (as render
    /// shows them: `name:`, else the component's `metadata.name`), repository URLs, a
    /// repository's name when unambiguous, chart names. An unknown name is a usage error
    /// (exit 2).
    pub sources: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The platform directory (holds platform.yaml), or its platform.yaml.
    #[arg(default_value = DEFAULT_PLATFORM)]
    pub platform: PathBuf,
    /// Where to write the rendered tree. Default: the platform's `spec.source.renderedPath`
    /// (default `deploy`) in its repository (the nearest directory above it holding `.git`),
    /// where `kiln publish`, the Warehouses and the Applications look for it.
    #[arg(long)]
    pub write_to: Option<PathBuf>,
    /// Output layout: service repo (default) or cluster repo.
    #[arg(long, value_enum, default_value = "service")]
    pub layout: Layout,
    /// The summary: a line on stderr, or one JSON object on stdout (`plans`, `writeTo`,
    /// `files`, `written`, `unchanged`, `removed`).
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: OutputFormat,
    /// Check the generated Kargo and Argo CD objects against the schemas in this directory
    /// before writing. The CRDs come from the Kargo and Argo CD releases you deploy (Kargo's
    /// `charts/kargo/resources/crds/`, Argo CD's `manifests/crds/`), as YAML files.
    #[arg(long)]
    pub schema_dir: Option<PathBuf>,
    /// The render cache: BuildPlans whose inputs are unchanged are copied from it instead of
    /// rendered. Safe to delete at any time. Default: `$XDG_CACHE_HOME/kiln/<digest of the
    /// checkout's path>` (`~/.cache/kiln/…`), outside the checkout; its entries are
    /// authenticated with the key `$XDG_CACHE_HOME/kiln/key` (created on first use).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Render without the cache (neither read nor written).
    #[arg(long)]
    pub no_cache: bool,
    /// Render only shard INDEX of COUNT (a deterministic, balanced part of the BuildPlans,
    /// for CI matrix jobs); put the shards together with `kiln merge`.
    #[arg(long, value_name = "INDEX/COUNT")]
    pub shard: Option<crate::pipeline::Shard>,
    /// Print the time spent in each stage (load, evaluate, render, emit, write).
    #[arg(long)]
    pub timings: bool,
    /// Skip the validation of the rendered objects against the Kubernetes API (on by
    /// default: built-in schemas of each cluster's `kubeVersion`, CRDs, conflicts).
    #[arg(long)]
    pub no_validate: bool,
    /// A kind with no schema (no built-in, no CRD) is an error, not a warning.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub selection: Selection,
    #[command(flatten)]
    pub sources: SourceFlags,
}

/// `kiln merge`: the trees of `kiln render --shard` jobs, written as one.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' output directories (each holds a `.kiln-owned.json`).
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// Where to write the merged tree.
    #[arg(long, default_value = "deploy")]
    pub write_to: PathBuf,
    /// Components from other repositories, resolved as the shards' renders resolved them.
    #[command(flatten)]
    pub sources: SourceFlags,
}

/// The layout of the rendered tree.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, Default)]
pub enum Layout {
    /// `<project>/<env>/<component>/…`
    #[default]
    Service,
    /// `clusters/<cluster>/<project>/<env>/<component>/…`
    Cluster,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// What to show.
    #[arg(value_enum)]
    pub what: ShowWhat,
    /// The platform directory.
    #[arg(default_value = DEFAULT_PLATFORM)]
    pub platform: PathBuf,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "yaml")]
    pub output: Format,
    #[command(flatten)]
    pub selection: Selection,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ShowWhat {
    Platform,
    Buildplans,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which kind; both when omitted.
    #[arg(value_enum)]
    pub kind: Option<SchemaKind>,
    /// Write `platform.schema.json` and `component.schema.json` into DIR instead of printing
    /// (what a `# yaml-language-server: $schema=…` modeline outside kiln's repository points
    /// at; each schema's `$id` is stable).
    #[arg(long, value_name = "DIR")]
    pub write: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The directory to scaffold (created if missing; nothing in it is overwritten).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// The platform's name (and its first project's).
    #[arg(long, default_value = "platform")]
    pub name: String,
    /// The first component's name.
    #[arg(long, default_value = "hello")]
    pub component: String,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SchemaKind {
    Platform,
    Component,
}

#[derive(Debug, Args)]
pub struct KustomizeArgs {
    /// The kustomization directory.
    pub dir: PathBuf,
    /// Which files a kustomization may read, as kustomize's flag.
    #[arg(long, default_value = "LoadRestrictionsRootOnly", value_parser = ["LoadRestrictionsRootOnly", "LoadRestrictionsNone"])]
    pub load_restrictor: String,
    /// Fail when a patch target that names one object matches nothing (kustomize accepts it;
    /// by default kiln warns).
    #[arg(long)]
    pub strict: bool,
    /// Where to print something other than kubectl, comma-separated: `merge-order`
    /// (strategic merge lists in Kubernetes' apimachinery order), `cluster-scope` (no
    /// namespace on cluster-scoped kinds kustomize does not know), or `all`.
    /// A wrong name is a usage error (exit 2), checked by clap.
    #[arg(long, value_name = "FIX,...", value_parser = crate::kustomize::krusty::build::Fixes::parse)]
    pub fixes: Option<crate::kustomize::krusty::build::Fixes>,
    /// Render `helmCharts:` (with kiln's own Helm engine; no helm binary is run). Without it
    /// a kustomization with charts fails, as `kubectl kustomize` does.
    #[arg(long)]
    pub enable_helm: bool,
}

#[derive(Debug, Args)]
pub struct HelmArgs {
    #[command(subcommand)]
    pub command: HelmCommand,
}

#[derive(Debug, Subcommand)]
pub enum HelmCommand {
    /// Print the rendered chart as `helm template` does.
    #[command(
        after_help = "Examples:\n  kiln helm template rel ./chart -n ns -f values.yaml --set image.tag=1.2\n  kiln helm template ./chart --name-template rel --include-crds --kube-version 1.30"
    )]
    Template(HelmTemplateArgs),
}

#[derive(Debug, Args)]
pub struct HelmTemplateArgs {
    /// `[NAME] CHART`, as `helm template` takes them: the release name (default
    /// `release-name`) and the chart, a directory or a packaged `.tgz`. `CHART NAME` is
    /// understood too (kiln's earlier order) when only the first is a chart.
    #[arg(required = true, num_args = 1..=2, value_name = "[NAME] CHART")]
    pub positional: Vec<String>,
    /// The release name, as a flag.
    #[arg(long)]
    pub name_template: Option<String>,
    /// Values files, merged in order (repeatable).
    #[arg(short = 'f', long = "values")]
    pub values: Vec<PathBuf>,
    /// Values as `key=value[,key=value]`, `{a,b}` a list, typed as Helm types them
    /// (repeatable). The `--set…` flags apply after `-f`, in Helm's order: `--set-json`,
    /// `--set`, `--set-string`, `--set-file`, `--set-literal`.
    #[arg(long)]
    pub set: Vec<String>,
    /// As `--set`, every value a string (repeatable).
    #[arg(long)]
    pub set_string: Vec<String>,
    /// `key=JSON[,key=JSON]`, or one JSON object merged as a values file (repeatable).
    #[arg(long)]
    pub set_json: Vec<String>,
    /// `key=path[,key=path]`: each value the text of that file (repeatable).
    #[arg(long)]
    pub set_file: Vec<String>,
    /// One `key=value`, the value taken verbatim up to the end (repeatable).
    #[arg(long)]
    pub set_literal: Vec<String>,
    /// The release namespace.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// Print the chart's `crds/` files first.
    #[arg(long)]
    pub include_crds: bool,
    /// `.Capabilities.KubeVersion` (default v1.36.0).
    #[arg(long)]
    pub kube_version: Option<String>,
    /// Extra `.Capabilities.APIVersions` entries (repeatable).
    #[arg(short = 'a', long = "api-versions")]
    pub api_versions: Vec<String>,
    /// Print no hooks.
    #[arg(long)]
    pub no_hooks: bool,
    /// Print no `test` hooks.
    #[arg(long)]
    pub skip_tests: bool,
    /// The instant Sprig's `now` returns: seconds since the epoch or an RFC 3339 time
    /// (`2024-05-01T00:00:00Z`). Default: `SOURCE_DATE_EPOCH` if set, else
    /// 2000-01-01T00:00:00Z; never the clock (docs/helm.md, Determinism).
    #[arg(long, value_parser = parse_now)]
    pub now: Option<i64>,
    /// The most template steps the render may take (nodes, `range` iterations, function
    /// calls; a key generation costs 100,000) before it stops with an error.
    #[arg(long, default_value_t = crate::helm::template::exec::Budget::DEFAULT.steps)]
    pub max_steps: u64,
    /// The most bytes the templates may produce (printed text and function results).
    #[arg(long, default_value_t = crate::helm::template::exec::Budget::DEFAULT.output_bytes)]
    pub max_output_bytes: u64,
}

/// `--now`: seconds since the epoch, or an RFC 3339 time.
fn parse_now(text: &str) -> Result<i64, String> {
    text.parse::<i64>()
        .or_else(|_| crate::helm::sprig::date::parse("2006-01-02T15:04:05Z07:00", text))
        .map_err(|_| format!("`{text}` is neither seconds since the epoch nor an RFC 3339 time"))
}

/// The instant of `now` for a render: `--now`, else `SOURCE_DATE_EPOCH` (the
/// reproducible-builds variable: a decimal count of seconds since the epoch), else none (the
/// engine's fixed instant). Read here, the engine never reads the environment.
fn render_now(flag: Option<i64>) -> Result<Option<i64>, miette::Report> {
    if flag.is_some() {
        return Ok(flag);
    }
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.is_empty() => v.trim().parse::<i64>().map(Some).map_err(|_| {
            miette::miette!(
                code = "kiln::cli::source_date_epoch",
                help =
                    "set it to a decimal count of seconds since 1970-01-01T00:00:00Z, or unset it",
                "SOURCE_DATE_EPOCH is `{v}`, not a number of seconds"
            )
        }),
        _ => Ok(None),
    }
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Files or directories of YAML objects to check.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// CRD YAMLs or JSON Schemas (as kubeconform takes them), plus Kargo step and
    /// subscription schemas, checked as well as kiln's built-in model. The CRDs come from
    /// the releases you deploy: Kargo's `charts/kargo/resources/crds/`, Argo CD's
    /// `manifests/crds/`.
    #[arg(long)]
    pub schema_dir: Option<PathBuf>,
    /// Output format: text diagnostics on stderr, or one JSON report on stdout.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: OutputFormat,
    /// The Kubernetes version whose API schemas built-in kinds are checked against
    /// (`1.33` to `1.37`; default 1.36).
    #[arg(long, value_name = "VERSION")]
    pub kube_version: Option<String>,
    /// A kind with no schema (no built-in, no CRD among the paths) is an error.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// The platform directory.
    #[arg(default_value = DEFAULT_PLATFORM)]
    pub platform: PathBuf,
    /// The write repository: a local path, file://, https:// or ssh URL.
    #[arg(long)]
    pub repo: String,
    /// The branch to commit to.
    #[arg(long, default_value = "main")]
    pub branch: String,
    /// A sub-path inside the repository to write into.
    #[arg(long)]
    pub path: Option<String>,
    /// Take over a branch or path that holds no kiln marker yet.
    #[arg(long)]
    pub adopt: bool,
    /// Publish each environment to its own branch (`stage/<env>`).
    #[arg(long)]
    pub per_environment: bool,
    /// Output layout.
    #[arg(long, value_enum, default_value = "service")]
    pub layout: Layout,
    /// Output format of the summary (JSON goes to stdout).
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: OutputFormat,
    #[command(flatten)]
    pub selection: Selection,
    #[command(flatten)]
    pub sources: SourceFlags,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The platform directory.
    #[arg(default_value = DEFAULT_PLATFORM)]
    pub platform: PathBuf,
    /// A directory, or `REPO@REF`; defaults to `deploy/`.
    #[arg(long)]
    pub against: Option<String>,
    /// A sub-path of the directory or of the ref's tree (as `publish --path`).
    #[arg(long)]
    pub path: Option<String>,
    /// Output layout.
    #[arg(long, value_enum, default_value = "service")]
    pub layout: Layout,
    #[command(flatten)]
    pub report: ReportFlags,
    #[command(flatten)]
    pub selection: Selection,
    #[command(flatten)]
    pub sources: SourceFlags,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The platform directory.
    #[arg(default_value = DEFAULT_PLATFORM)]
    pub platform: PathBuf,
    /// The repository holding the committed tree.
    #[arg(long)]
    pub repo: String,
    /// The ref to check.
    #[arg(long = "ref", default_value = "main")]
    pub reference: String,
    /// A sub-path inside the repository.
    #[arg(long)]
    pub path: Option<String>,
    /// Output layout.
    #[arg(long, value_enum, default_value = "service")]
    pub layout: Layout,
    /// The tree was published with `kiln publish --per-environment`: `--ref stage/<env>`
    /// is compared with that environment's slice, any other ref with the shared files.
    #[arg(long)]
    pub per_environment: bool,
    #[command(flatten)]
    pub report: ReportFlags,
    #[command(flatten)]
    pub selection: Selection,
    #[command(flatten)]
    pub sources: SourceFlags,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The write repository.
    #[arg(long)]
    pub repo: String,
    /// The branch to read.
    #[arg(long, default_value = "main")]
    pub branch: String,
    /// Only changes touching this component.
    #[arg(long)]
    pub component: Option<String>,
    /// Only changes touching this environment.
    #[arg(long)]
    pub environment: Option<String>,
    /// Only changes at or after this date (RFC 3339, YYYY-MM-DD, `yesterday`, `2d`, `36h`).
    #[arg(long)]
    pub since: Option<String>,
    /// What was deployed at this date (the same forms as `--since`).
    #[arg(long)]
    pub at: Option<String>,
    /// The platform directory whose Stages write this repository: Kargo's promotions are then
    /// reported against the components they changed (without it, only kiln's own
    /// `<project>/<env>/<component>` folders are recognised).
    #[arg(long)]
    pub platform: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: Format,
}

#[derive(Debug, Args)]
pub struct PromoteArgs {
    /// The Stage to promote (its `metadata.name`).
    pub stage: String,
    /// The platform directory.
    #[arg(default_value = DEFAULT_PLATFORM)]
    pub platform: PathBuf,
    /// The Kargo project of the Stage, when the name is not unique.
    #[arg(long)]
    pub project: Option<String>,
    /// Freight: `image=<repo>:<tag>`, `image=<repo>@<digest>`, `commit=<sha>` or `latest`
    /// (repeatable). Artifacts not given: the spec's image, the branch head. A Stage that
    /// requests Freight from several Warehouses (`promotion: environment-stage`) promotes one
    /// Warehouse's: `warehouse=<name>`, unless the images given name it.
    #[arg(long, required = true, value_name = "ARTIFACT", value_parser = parse_freight)]
    pub freight: Vec<crate::promote::freight::FreightArg>,
    /// A local path (or file:// URL) standing in for a remote repository (repeatable).
    /// Checked in `promote`, not by clap, whose errors would echo a token in the value.
    #[arg(long, value_name = "URL=PATH")]
    pub repo_map: Vec<String>,
    /// Work in this empty directory and keep it (default: a temporary one, removed).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// The live Applications (`kubectl get applications -o yaml`): promote against them as
    /// the root Application's next sync leaves them, not against Git's.
    #[arg(long, value_name = "FILE")]
    pub live: Option<PathBuf>,
    /// Do not warn when no promotion of this Freight is on an upstream Stage's write branch
    /// (Kargo offers a Stage only Freight verified upstream).
    #[arg(long)]
    pub assume_verified: bool,
    /// Output layout of the render.
    #[arg(long, value_enum, default_value = "service")]
    pub layout: Layout,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: Format,
    #[command(flatten)]
    pub sources: SourceFlags,
}

#[derive(Debug, Args)]
pub struct BootstrapArgs {
    /// The platform directory.
    #[arg(default_value = DEFAULT_PLATFORM)]
    pub platform: PathBuf,
    /// A local path (or file:// URL) standing in for a remote repository (repeatable).
    #[arg(long, value_name = "URL=PATH")]
    pub repo_map: Vec<String>,
    /// Output layout of the render.
    #[arg(long, value_enum, default_value = "service")]
    pub layout: Layout,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// The platform directory.
    #[arg(default_value = DEFAULT_PLATFORM)]
    pub platform: PathBuf,
    /// Draw only this Kargo project.
    #[arg(long)]
    pub project: Option<String>,
    /// Drawing language.
    #[arg(short = 'o', long, value_enum, default_value = "mermaid")]
    pub output: GraphOutput,
    /// Local stand-ins for the write repositories (`URL=PATH`, repeatable): each Stage then
    /// shows what it runs, read from what it wrote.
    #[arg(long, value_name = "URL=PATH")]
    pub repo_map: Vec<String>,
}

/// Output language of `kiln graph`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum GraphOutput {
    Mermaid,
    Dot,
    /// An SVG picture, laid out by kiln (no Graphviz needed).
    Svg,
    /// The graph as data: `{"projects": [{"name", "warehouses", "stages": [...]}]}`.
    Json,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The platform directory.
    #[arg(default_value = DEFAULT_PLATFORM)]
    pub platform: PathBuf,
    /// A local path (or file:// URL) standing in for a repository URL (repeatable).
    #[arg(long, value_name = "URL=PATH")]
    pub repo_map: Vec<String>,
    /// Only this project (repeatable).
    #[arg(long = "project", short = 'p')]
    pub projects: Vec<String>,
    /// Only this environment (repeatable).
    #[arg(long = "environment", short = 'e')]
    pub environments: Vec<String>,
    /// Only this component instance (repeatable).
    #[arg(long = "component", short = 'c')]
    pub components: Vec<String>,
    /// Output: a text matrix, JSON for tools, or one self-contained HTML page.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: StatusOutput,
    /// The layout the tree was published in.
    #[arg(long, value_enum, default_value = "service")]
    pub layout: Layout,
    /// The tree was published with `kiln publish --per-environment` (`stage/<env>` branches).
    #[arg(long)]
    pub per_environment: bool,
    /// Past writes to read per cell (default: 2 for text, 10 for JSON and HTML).
    #[arg(long)]
    pub past: Option<usize>,
}

/// Output of `kiln status`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum StatusOutput {
    Text,
    Json,
    Html,
}

fn parse_freight(s: &str) -> Result<crate::promote::freight::FreightArg, String> {
    crate::promote::freight::FreightArg::parse(s)
}

/// Turns transparent huge pages off for this process, as mimalloc's `allow_thp=0` does (and
/// as the binary's allocator would be told to by `MIMALLOC_ALLOW_THP=0`): mimalloc asks for
/// huge pages on its arenas, and the kernel then zeroes 2 MiB on the first touch of each,
/// again after each purge. A chart render's heap is a few MiB, freed and reused render after
/// render: `perf` put that zeroing (`clear_page_erms`) at 10 % of the CPU of repeated
/// bitnami-postgresql renders, and at 0.1 % with huge pages off (ADR 0009). Process-wide and
/// set once, at start, by the binary (and the benchmark that mirrors it), never the library.
pub fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and changes no memory.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Installs miette's reporter: colours only on a terminal and never with `NO_COLOR` set.
pub fn install_reporter() {
    let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stderr().is_terminal();
    let _ = miette::set_hook(Box::new(move |_| {
        // Clipped: no snippet line past a few hundred bytes (miette panics past column 65,535).
        Box::new(crate::diag::ClippingHandler(Box::new(
            miette::MietteHandlerOpts::new()
                .color(color)
                .unicode(color)
                .context_lines(2)
                .build(),
        )))
    }));
    // A panic is a kiln bug: say so and exit 101 (Rust's default panic exit code).
    std::panic::set_hook(Box::new(|info| {
        print_err(&format!(
            "kiln: internal error (this is a bug, please report it): {info}"
        ));
    }));
}

/// How a command ends that SIGINT or SIGTERM stopped in its write step, once its error
/// (which says whether the renames finished or were rolled back) is printed: by the same
/// signal, restored to its default action, as the process ends when the signal comes in any
/// other phase. The shell then reports 130 (SIGINT) or 143 (SIGTERM), and a script's loop
/// stops as it does for any program killed by Ctrl-C. `None` for every other error; the
/// returned code (128 + the signal) only where the signal could not be raised.
pub fn interrupted_exit(report: &miette::Report) -> Option<ExitCode> {
    let signal = match report.downcast_ref::<crate::pipeline::KilnError>() {
        Some(crate::pipeline::KilnError::Write(e)) => e.signal(),
        _ => report
            .downcast_ref::<crate::write::WriteError>()
            .and_then(crate::write::WriteError::signal),
    }?;
    #[cfg(unix)]
    // SAFETY: resets one signal's action to the default and raises it in this thread; no
    // Rust state is touched.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    Some(ExitCode::from(128u8.saturating_add(signal as u8)))
}

/// Writes one line to stderr, ignoring failures. `eprintln!` panics when stderr is a closed
/// pipe (`kiln publish … 2>&1 | head -1`), and a panic inside the panic hook aborts the
/// process (exit 134) instead of returning the command's own exit code.
pub fn print_err(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}").and_then(|_| err.flush());
}

/// Writes to stdout, treating a closed pipe (`kiln … | head`) as success.
pub fn print_out(text: &str) -> miette::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(miette::miette!("cannot write to standard output: {e}"))
        }
        _ => Ok(()),
    }
}

impl Selection {
    fn to_lib(&self) -> crate::evaluate::Selection {
        crate::evaluate::Selection {
            projects: self.projects.clone(),
            environments: self.environments.clone(),
            components: self.components.clone(),
            labels: self.labels.clone(),
        }
    }
}

impl Layout {
    fn to_lib(self) -> crate::emit::Layout {
        match self {
            Layout::Service => crate::emit::Layout::Service,
            Layout::Cluster => crate::emit::Layout::Cluster,
        }
    }
}

/// The user's cache directory: `$XDG_CACHE_HOME`, else `$HOME/.cache` (the environment is
/// read here, in the CLI, and nowhere else).
fn cache_home() -> Option<PathBuf> {
    let abs = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    std::env::var_os("XDG_CACHE_HOME")
        .and_then(abs)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(abs)
                .map(|h| h.join(".cache"))
        })
}

/// `--cache-dir`, or the default outside the checkout: `<cache home>/kiln/<SHA-256 of the
/// canonical repository root>`. A directory with a symbolic link in its path is refused
/// with a warning (the render goes on without a cache).
fn cache_dir_for(args: &RenderArgs) -> Option<PathBuf> {
    let dir = match &args.cache_dir {
        Some(d) => d.clone(),
        None => {
            let root =
                crate::load::repository_root(&crate::fs::RealFs, &args.platform, None).ok()?;
            let digest = kiln_base::digest::sha256_hex(root.as_os_str().as_encoded_bytes());
            cache_home()?.join("kiln").join(digest)
        }
    };
    if let Err(why) = crate::cache::check_dir(&dir) {
        print_err(&format!(
            "kiln: warning: not using the render cache `{}`: {why} (a cache path may hold no symbolic link)",
            dir.display()
        ));
        return None;
    }
    Some(dir)
}

/// The source fetcher's limits from the environment (`KILN_SOURCE_TIMEOUT`,
/// `KILN_SOURCE_MAX_*`): a value that is not a number is refused, never taken for the default.
pub fn source_limits() -> Result<crate::source::Limits, kiln_source::SourceError> {
    crate::source::Limits::from_vars(|name| std::env::var(name).ok())
}

/// Gives libgit2 kiln's network timeout (`KILN_SOURCE_TIMEOUT`, [`source_limits`]), for a command that may talk to a
/// Git server. Process-wide: the binary calls it in `main` right after parsing the arguments,
/// while it has one thread, as libgit2's options require.
///
/// Setting an option initialises libgit2, and with it OpenSSL, which reads and parses the whole
/// CA bundle (`/etc/ssl/certs/ca-certificates.crt`): about 35 ms, ten times what
/// `kiln helm template` of a small chart takes. A command that never reaches libgit2 skips it
/// ([`Command::uses_libgit2`]); `--version` and `--help` end inside the parser, before it.
/// A bad `KILN_SOURCE_*` value fails here, before the command runs.
pub fn set_network_timeouts(command: &Command) -> miette::Result<()> {
    if !command.uses_libgit2() {
        return Ok(());
    }
    let timeout = source_limits()?.timeout;
    // SAFETY: called from `main` before any other thread exists.
    unsafe { kiln_source::git::set_default_timeout(timeout) }
    Ok(())
}

/// The source stage's options from the flags and the environment (read here, in the CLI):
/// the cache under `KILN_CACHE_DIR` or `$XDG_CACHE_HOME/kiln`, registry credentials from
/// `KILN_REGISTRY_*` and Docker's `config.json`, the `KILN_SOURCE_MAX_*` limits.
fn source_options(flags: &SourceFlags, update: Option<&[String]>) -> crate::source::SourceOptions {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let cache_dir = var("KILN_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| cache_home().map(|h| h.join("kiln")));
    let docker_config = var("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".docker")))
        .and_then(|d| std::fs::read_to_string(d.join("config.json")).ok());
    let vars: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("KILN_REGISTRY_"))
        .collect();
    let credentials = crate::source::Credentials::new(
        docker_config.as_deref(),
        vars.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    // A bad value was refused in `main` (`set_network_timeouts`), before any command ran.
    let limits = source_limits().unwrap_or_default();
    crate::source::SourceOptions {
        refs: flags
            .source_ref
            .iter()
            .filter_map(|r| r.split_once('='))
            .map(|(n, r)| (n.to_string(), r.to_string()))
            .collect(),
        cache_dir,
        credentials,
        limits,
        mode: crate::source::Mode {
            locked: flags.locked,
            offline: flags.offline,
            update: update.map(|names| names.iter().cloned().collect()),
        },
    }
}

/// `opts` with the source options of `flags` and the Git credentials of the environment.
fn with_sources(
    mut opts: crate::pipeline::RenderOptions,
    flags: &SourceFlags,
) -> crate::pipeline::RenderOptions {
    opts.sources = source_options(flags, None);
    opts.source_auth = crate::git::RemoteAuth::from_env();
    opts
}

/// `kiln update`: resolve the named sources (all by default) again and write kiln.lock.
fn update(args: &UpdateArgs) -> miette::Result<ExitCode> {
    let mut opts = crate::pipeline::RenderOptions::new(&args.platform);
    opts.sources = source_options(&SourceFlags::default(), Some(&args.sources));
    opts.source_auth = crate::git::RemoteAuth::from_env();
    let resolved = opts.resolve_sources()?;
    resolved
        .store_lock()
        .map_err(crate::pipeline::KilnError::Source)?;
    // What changed is counted apart from what is locked: "(6 sources)" after an update that
    // moved one read as if all six had.
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let locked = plural(resolved.used.len(), "source");
    let path = resolved.lock_path.display();
    print_err(&if resolved.lock_changed {
        let changed = plural(resolved.changes.len(), "change");
        format!("kiln: updated {path}: {changed}, {locked} locked")
    } else {
        format!("kiln: up to date: {path} ({locked})")
    });
    // Which sources moved, and from where to where; a tag that moved is a supply-chain
    // warning (a tag is expected to name one commit or archive for good).
    for change in &resolved.changes {
        print_err(&format!("  {change}"));
    }
    for warning in resolved.changes.iter().filter_map(|c| c.tag_warning()) {
        print_err(&format!("kiln: warning: {warning}"));
    }
    Ok(ExitCode::SUCCESS)
}

/// `kiln render`: a progress bar on stderr only when it is a terminal, a one-line summary.
/// `kiln render`'s default `--write-to`: `spec.source.renderedPath` (default `deploy`) under
/// the platform's repository root ([`crate::load::repository_root`]), shown relative to the
/// working directory when inside it. A platform that cannot be read gets `deploy`; the render
/// then reports why it cannot be read.
fn default_write_to(platform: &std::path::Path, doc: Option<&serde_json::Value>) -> PathBuf {
    let fs = crate::fs::RealFs;
    let rendered = doc
        .and_then(|d| d.pointer("/spec/source/renderedPath"))
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
        .filter(|r| !r.trim_matches('/').is_empty())
        .unwrap_or_else(|| "deploy".to_string());
    let Ok(root) = crate::load::repository_root(&fs, platform, None) else {
        return PathBuf::from("deploy");
    };
    let out = root.join(rendered.trim_matches('/'));
    match std::env::current_dir()
        .ok()
        .and_then(|d| d.canonicalize().ok())
    {
        Some(cwd) => match out.strip_prefix(&cwd) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
            _ => out,
        },
        None => out,
    }
}

/// `kiln schema --write DIR`: both schemas, as `schema/` in kiln's repository holds them.
fn write_schemas(dir: &std::path::Path) -> miette::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| miette::miette!("cannot create `{}`: {e}", dir.display()))?;
    for (name, text) in crate::spec::schemas() {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| miette::miette!("cannot write `{}`: {e}", path.display()))?;
    }
    Ok(())
}

/// `kiln init`: a platform with one environment on one cluster, one project and one
/// component (a Deployment and a Service from `manifests/`), each file with a schema
/// modeline pointing at `schema/` (written beside them), ready for `kiln render`. Nothing
/// that exists is overwritten: an existing file is an error and nothing is written.
fn init(args: &InitArgs) -> miette::Result<ExitCode> {
    for (what, name) in [("platform", &args.name), ("component", &args.component)] {
        if let Some(reason) = crate::names::dns1123_label(name) {
            return Err(miette::miette!(
                code = "kiln::cli::init_name",
                help = "use lower-case letters, digits and `-`",
                "`{name}` is not a valid {what} name: {reason}"
            ));
        }
    }
    let (name, c) = (&args.name, &args.component);
    let platform = r#"# yaml-language-server: $schema=../../schema/platform.schema.json
apiVersion: kiln/v1alpha1
kind: Platform
metadata:
  name: NAME
spec:
  source:
    repoURL: https://git.example.com/NAME/platform.git
    branch: main
    renderedPath: deploy
  clusters:
  - name: dev
    server: https://kubernetes.default.svc
  environments:
  - name: dev
    tier: nonprod
    cluster: dev
  projects:
  - name: NAME
    components:
    - path: ../../components/COMPONENT
"#
    .replace("NAME", name)
    .replace("COMPONENT", c);
    let component = r#"# yaml-language-server: $schema=../../schema/component.schema.json
apiVersion: kiln/v1alpha1
kind: Component
metadata:
  name: COMPONENT
spec:
  parameters:
    type: object
    additionalProperties: false
    properties:
      replicas:
        type: integer
        minimum: 1
        default: 1
  generators:
  - files: [manifests]
  transformers:
  - namespace: "${env.namespace}"
  - jsonPatch:
      target: { kind: Deployment, name: COMPONENT }
      patch:
      - { op: replace, path: /spec/replicas, value: "${params.replicas}" }
"#
    .replace("COMPONENT", c);
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {c}\n  labels:\n    app.kubernetes.io/name: {c}\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: {c}\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: {c}\n    spec:\n      containers:\n      - name: {c}\n        image: nginx:1.27\n        ports:\n        - name: http\n          containerPort: 80\n"
    );
    let service = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {c}\nspec:\n  selector:\n    app.kubernetes.io/name: {c}\n  ports:\n  - name: http\n    port: 80\n    targetPort: http\n"
    );
    let mut files: Vec<(PathBuf, String)> = vec![
        (format!("platforms/{name}/platform.yaml").into(), platform),
        (format!("components/{c}/component.yaml").into(), component),
        (
            format!("components/{c}/manifests/deployment.yaml").into(),
            deployment,
        ),
        (
            format!("components/{c}/manifests/service.yaml").into(),
            service,
        ),
    ];
    for (file, text) in crate::spec::schemas() {
        files.push((PathBuf::from("schema").join(file), text));
    }
    if let Some((path, _)) = files.iter().find(|(p, _)| args.dir.join(p).exists()) {
        return Err(miette::miette!(
            code = "kiln::cli::init_exists",
            help = "kiln init never overwrites: choose another directory or names (--name, --component)",
            "`{}` exists",
            args.dir.join(path).display()
        ));
    }
    for (path, text) in &files {
        let path = args.dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| miette::miette!("cannot create `{}`: {e}", parent.display()))?;
        }
        std::fs::write(&path, text)
            .map_err(|e| miette::miette!("cannot write `{}`: {e}", path.display()))?;
    }
    print_err(&format!(
        "kiln: scaffolded platform `{name}` and component `{c}` in {}; next: kiln render {}",
        args.dir.display(),
        args.dir.join("platforms").join(name).display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// The progress bar's rate: whole BuildPlans per second (`1234/s`), not indicatif's
/// fractional `{per_sec}`.
fn rate_text(per_sec: f64) -> String {
    let rate = if per_sec.is_finite() && per_sec > 0.0 {
        per_sec.round() as u64
    } else {
        0
    };
    format!("{rate}/s")
}

/// The bar's next position: `done`, unless a report that arrived earlier was further.
fn monotonic(shown: u64, done: usize) -> u64 {
    shown.max(done as u64)
}

/// `platform.yaml` of the platform `kiln render` was given (its directory or the file), as
/// YAML, for what the CLI decides before the render: `None` when it cannot be read (the
/// render then says why).
fn platform_doc(platform: &std::path::Path) -> Option<serde_json::Value> {
    let file = if platform.is_dir() {
        platform.join("platform.yaml")
    } else {
        platform.to_path_buf()
    };
    // Never a FIFO or device (kiln's one rule for reading inputs): the render reports it.
    let bytes = crate::fs::read_regular(&file).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    crate::yaml::parse_stream(&file.display().to_string(), &text)
        .ok()?
        .into_iter()
        .next()
}

/// A project's settings that only the Kargo generation reads (`kargo::pairs` resolves
/// `output` only with Kargo on; `promotion` shapes the Stages; `namespaceMetadata` labels the
/// Kargo project's Namespace): with Kargo off each is ignored, with a warning.
const KARGO_ONLY_PROJECT_SETTINGS: [&str; 3] = ["promotion", "output", "namespaceMetadata"];

/// Settings of `platform.yaml` that nothing reads in the platform's configuration, as
/// warnings: each would otherwise be ignored without a word. One rule for all of them:
/// `spec.kargo.promotion` and [`KARGO_ONLY_PROJECT_SETTINGS`] while Kargo is off.
fn ignored_settings(doc: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    let kargo_on = doc.pointer("/spec/kargo/enabled") == Some(&Value::Bool(true));
    if kargo_on {
        return Vec::new();
    }
    // A setting is given when it is neither absent, null nor an empty mapping; a scalar is
    // quoted with its value (`promotion: project`), anything else by its name.
    let given = |value: Option<&Value>, name: &str| match value {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) if m.is_empty() => None,
        Some(Value::String(v)) => Some(format!("`{name}: {v}`")),
        Some(_) => Some(format!("`{name}`")),
    };
    let mut out: Vec<String> = given(doc.pointer("/spec/kargo/promotion"), "spec.kargo.promotion")
        .into_iter()
        .collect();
    for p in doc
        .pointer("/spec/projects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let project = p.get("name").and_then(Value::as_str).unwrap_or("");
        out.extend(
            KARGO_ONLY_PROJECT_SETTINGS
                .iter()
                .filter_map(|field| given(p.get(*field), field))
                .map(|what| format!("{what} of project `{project}`")),
        );
    }
    out.into_iter()
        .map(|what| {
            format!(
                "warning: {what} is ignored: Kargo is off (`spec.kargo.enabled: true` turns it on)"
            )
        })
        .collect()
}

fn render(args: &RenderArgs) -> miette::Result<ExitCode> {
    let doc = platform_doc(&args.platform);
    let write_to = args
        .write_to
        .clone()
        .unwrap_or_else(|| default_write_to(&args.platform, doc.as_ref()));
    let opts = crate::pipeline::RenderOptions {
        platform_dir: args.platform.clone(),
        write_to: write_to.clone(),
        layout: args.layout.to_lib(),
        selection: args.selection.to_lib(),
        root: None,
        schema_dir: args.schema_dir.clone(),
        fs: std::sync::Arc::new(crate::fs::RealFs),
        cache_dir: if args.no_cache {
            None
        } else {
            cache_dir_for(args)
        },
        cache_key: cache_home().map(|h| h.join("kiln/key")),
        shard: args.shard,
        environment_branches: None,
        sources: source_options(&args.sources, None),
        source_auth: crate::git::RemoteAuth::from_env(),
        validate: !args.no_validate,
        strict_kinds: args.strict,
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} rendering [{bar:30}] {pos}/{len} BuildPlans, {rate}, {eta} left",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .with_key(
                "rate",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&rate_text(state.per_sec()));
                },
            )
            .progress_chars("=> "),
        );
        bar
    });
    // Workers report as they finish, so a report may arrive after a later one: the bar
    // only moves forward.
    let progress = |done: usize, total: usize| {
        if let Some(b) = &bar {
            b.set_length(total as u64);
            b.set_position(monotonic(b.position(), done));
        }
    };
    let result = crate::pipeline::run_render(&opts, &progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    // The findings that stopped the render, on stdout too for a reader of `-o json`.
    if args.output == OutputFormat::Json
        && let Err(crate::pipeline::KilnError::Conform(e)) = &result
    {
        let findings: Vec<serde_json::Value> = e
            .errors
            .iter()
            .map(|r| {
                let mut json = r.error.to_json();
                // The BuildPlans of an error met in several (`in environments: dev, prod`).
                if let Some(places) = &r.places {
                    json["places"] = places.clone().into();
                }
                json
            })
            .collect();
        print_out(&json(&serde_json::json!({ "findings": findings }))?)?;
    }
    let summary = result?;
    for w in doc.as_ref().map(ignored_settings).unwrap_or_default() {
        print_err(&w);
    }
    warn_secrets(&summary.secrets);
    for e in &summary.expressions {
        print_err(&format!("warning: {e}"));
    }
    for w in &summary.validation_warnings {
        print_err(w);
    }
    let r = &summary.report;
    if let Some(message) = args.selection.chooses_nothing(summary.plans) {
        print_err(&format!(
            "warning: {message}: nothing was rendered, written or removed"
        ));
    }
    if args.output == OutputFormat::Json {
        // One object, so that keys can be added (validation findings, timings) without
        // breaking a reader.
        print_out(&json(&serde_json::json!({
            "plans": summary.plans,
            "writeTo": write_to.display().to_string(),
            "files": summary.files,
            "written": r.written,
            "unchanged": r.unchanged,
            "removed": r.removed,
            "changes": r.changes,
            "findings": summary.validation_findings,
        }))?)?;
    } else {
        for change in &r.changes {
            print_err(&format!("kiln: {change}"));
        }
        print_err(&format!(
            "kiln: rendered {} BuildPlan{} into {} ({} files: {} written, {} unchanged, {} removed)",
            summary.plans,
            if summary.plans == 1 { "" } else { "s" },
            write_to.display(),
            summary.files,
            r.written.len(),
            r.unchanged.len(),
            r.removed.len()
        ));
    }
    if args.timings {
        print_err(&timings_text(&summary));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--timings`: one line per stage, seconds with milliseconds.
fn timings_text(s: &crate::pipeline::RenderSummary) -> String {
    let t = &s.timings;
    let secs = |d: std::time::Duration| format!("{:>8.3} s", d.as_secs_f64());
    let total = t.total();
    let per_plan = if s.plans == 0 {
        String::new()
    } else {
        format!(
            ", {:.0} µs CPU per rendered BuildPlan",
            (t.render_cpu + t.emit_cpu).as_secs_f64() * 1e6
                / (if s.cache.hits + s.cache.misses == 0 {
                    s.plans
                } else {
                    s.cache.misses
                })
                .max(1) as f64
        )
    };
    let cache = if s.journal {
        "skipped: the journal shows inputs and output unchanged; load is its check".to_string()
    } else if let Some(n) = s.incremental {
        format!(
            "incremental: {n} rendered again (the journal shows only their reads changed), cache: {} hits, {} misses",
            s.cache.hits, s.cache.misses
        )
    } else if s.cache.hits + s.cache.misses == 0 {
        "no cache".to_string()
    } else {
        format!("cache: {} hits, {} misses", s.cache.hits, s.cache.misses)
    };
    [
        format!("kiln: timings ({} BuildPlans, {cache}{per_plan})", s.plans),
        format!(
            "  source    {}  (fetch sources, scan components for charts and bases; before a full render, the journal's check)",
            secs(t.source)
        ),
        format!(
            "  load      {}  (read platform.yaml and every component's files)",
            secs(t.load)
        ),
        format!(
            "  spec      {}  (validate the spec: types, names, environments)",
            secs(t.spec)
        ),
        format!(
            "  evaluate  {}  (layer parameters, BuildPlans)",
            secs(t.evaluate)
        ),
        format!(
            "  render    {}  (parallel; CPU summed over threads: render {:.3} s, emit {:.3} s, validate {:.3} s)",
            secs(t.render),
            t.render_cpu.as_secs_f64(),
            t.emit_cpu.as_secs_f64(),
            t.validate_cpu.as_secs_f64()
        ),
        format!(
            "  emit      {}  (Kargo, Argo CD, tree assembly, checks)",
            secs(t.emit)
        ),
        format!(
            "  validate  {}  (Kubernetes validation: CRDs, custom resources and conflicts, part of emit)",
            secs(t.validate)
        ),
        format!(
            "  write     {}  (compare, stage, rename; {:.3} s more staged while the render and emit ran)",
            secs(t.write),
            t.write_overlapped.as_secs_f64()
        ),
        format!("  total     {}", secs(total)),
    ]
    .join("\n")
}

/// `kiln merge`: shard trees → one tree, written as `kiln render` writes.
fn merge(args: &MergeArgs) -> miette::Result<ExitCode> {
    let sources = (
        source_options(&args.sources, None),
        crate::git::RemoteAuth::from_env(),
    );
    let summary = crate::pipeline::run_merge(&args.shards, &args.write_to, sources)?;
    let r = &summary.report;
    print_err(&format!(
        "kiln: merged {} shard{} into {} ({} files: {} written, {} unchanged, {} removed)",
        args.shards.len(),
        if args.shards.len() == 1 { "" } else { "s" },
        args.write_to.display(),
        summary.files,
        r.written.len(),
        r.unchanged.len(),
        r.removed.len()
    ));
    Ok(ExitCode::SUCCESS)
}

/// Exit code of a failed `diff` or `verify`: never 1, which means "different" there. As
/// `kubectl diff` (0 same, 1 different, >1 error); 2 stays kiln's usage error.
pub const EXIT_COMPARE_ERROR: u8 = 3;

/// Exit code of a usage error: clap's, and kiln's own for a command line that names what
/// the platform lacks.
pub const EXIT_USAGE: u8 = 2;

/// The error codes that are usage errors (exit 2 under every command): a source name that
/// `kiln update NAME` or `--source-ref NAME=REF` gives and no source has.
const USAGE_CODES: &[&str] = &[
    "kiln::source::unknown_name",
    "kiln::source::ambiguous_name",
    "kiln::source::bad_setting",
];

impl Command {
    /// The exit code when the command fails with an error (not a difference).
    pub fn error_exit_code(&self) -> u8 {
        match self {
            Command::Diff(_) | Command::Verify(_) | Command::Status(_) => EXIT_COMPARE_ERROR,
            _ => 1,
        }
    }

    /// Whether the command may call libgit2 (a fetch, a push, a repository read): every
    /// command but the engines on a directory (`helm template`, `kustomize`) and those that
    /// only print what kiln holds. Listed by what is left out, so a new command gets the
    /// network timeout unless it is added here.
    pub fn uses_libgit2(&self) -> bool {
        !matches!(
            self,
            Command::Helm(_)
                | Command::Kustomize(_)
                | Command::Schema(_)
                | Command::Completions(_)
                | Command::Man(_)
        )
    }
}

/// The exit code for `report`, the error a command with error exit code `command_code`
/// failed with: [`EXIT_USAGE`] for a usage error, else `command_code`.
pub fn failure_exit_code(command_code: u8, report: &miette::Report) -> u8 {
    let usage = report
        .code()
        .is_some_and(|c| USAGE_CODES.contains(&c.to_string().as_str()));
    if usage { EXIT_USAGE } else { command_code }
}

/// The platform every command that takes one defaults to: kiln's own example, so that
/// `kiln render` works as is in kiln's repository.
const DEFAULT_PLATFORM: &str = "platforms/bank";

/// A command run without a platform outside kiln's repository, where the default
/// `DEFAULT_PLATFORM` is not: a usage error (exit 2), as a missing argument is.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error(
    "no platform given: `kiln {command}` needs one (its default, `{DEFAULT_PLATFORM}`, is kiln's own example and is not here)"
)]
#[diagnostic(
    code(kiln::cli::no_platform),
    help(
        "give the platform's directory or its platform.yaml: `kiln {command} path/to/platform` or `kiln {command} path/to/platform/platform.yaml`; `kiln init` scaffolds a new one here, in `platforms/platform`"
    )
)]
pub struct NoPlatform {
    command: String,
}

/// Parses the command line as clap does (printing help or a usage error and exiting 2 on
/// its own). A command whose platform argument was left to its default, where that default
/// does not exist, is refused with [`NoPlatform`]: opening it would fail with "cannot open
/// `platforms/bank`", which names a directory the user never mentioned.
pub fn parse() -> Result<Cli, NoPlatform> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(cli) = parse_engine(&args) {
        return Ok(cli);
    }
    let matches = <Cli as clap::CommandFactory>::command().get_matches_from(&args);
    let cli =
        <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Some((command, sub)) = matches.subcommand()
        && sub.ids().any(|id| id == "platform")
        && sub.value_source("platform") == Some(clap::parser::ValueSource::DefaultValue)
        && !std::path::Path::new(DEFAULT_PLATFORM).exists()
    {
        return Err(NoPlatform {
            command: command.to_string(),
        });
    }
    Ok(cli)
}

/// `kiln helm …` and `kiln kustomize …`, the engines a script runs once per chart or
/// kustomization, parsed by a `kiln` command that holds only that subcommand: building clap's
/// whole tree (every command, every flag, every help text) was a tenth of what a process
/// spends beyond a small chart's render (issue 37, ADR 0043). Their flags are the same
/// `Args`, so what parses here parses the same in the whole tree. `None` for every other
/// command and whenever this parse fails or asks for help or the version: the whole tree then
/// parses again and prints its own help, version or usage error.
fn parse_engine(args: &[std::ffi::OsString]) -> Option<Cli> {
    if let Some(cli) = parse_helm_template(args) {
        return Some(cli);
    }
    let sub = match args.get(1)?.to_str()? {
        "helm" => <HelmArgs as Args>::augment_args(clap::Command::new("helm")),
        "kustomize" => <KustomizeArgs as Args>::augment_args(clap::Command::new("kustomize")),
        _ => return None,
    };
    let matches = clap::Command::new("kiln")
        .subcommand(sub)
        .try_get_matches_from(args)
        .ok()?;
    <Cli as clap::FromArgMatches>::from_arg_matches(&matches).ok()
}

/// `kiln helm template …` read without clap when every argument has one of the plain forms
/// a script writes: `[NAME] CHART` as one or two words, `--flag`, `--option value`,
/// `--option=value`, `-f`/`-n`/`-a value`, each single-valued option at most once, no value
/// empty or starting with `-`. Building clap's command for the line (every argument's
/// definition and help text) and matching it was 2-3 % of the CPU of a small chart's process
/// and 20 of its page faults (issue 37). `None` for anything else (help, a bundled or
/// unknown flag, `--`, `--now`, the budgets, a repeated option, a non-UTF-8 word): clap
/// reads it then, as before. Read to the same `Cli` as clap reads it
/// (`tests::helm_template_is_read_as_clap_reads_it`, on random lines).
fn parse_helm_template(args: &[std::ffi::OsString]) -> Option<Cli> {
    let words: Vec<&str> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str())
        .collect::<Option<_>>()?;
    let ["helm", "template", rest @ ..] = &words[..] else {
        return None;
    };
    let budget = crate::helm::template::exec::Budget::DEFAULT;
    let mut t = HelmTemplateArgs {
        positional: Vec::new(),
        name_template: None,
        values: Vec::new(),
        set: Vec::new(),
        set_string: Vec::new(),
        set_json: Vec::new(),
        set_file: Vec::new(),
        set_literal: Vec::new(),
        namespace: "default".to_string(),
        include_crds: false,
        kube_version: None,
        api_versions: Vec::new(),
        no_hooks: false,
        skip_tests: false,
        now: None,
        max_steps: budget.steps,
        max_output_bytes: budget.output_bytes,
    };
    let mut namespace = None;
    let mut words = rest.iter();
    while let Some(&word) = words.next() {
        if !word.starts_with('-') {
            if word.is_empty() {
                return None;
            }
            t.positional.push(word.to_string());
            continue;
        }
        let (name, inline) = match word.strip_prefix("--") {
            Some(long) => match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            },
            None => match word {
                "-f" => ("values", None),
                "-n" => ("namespace", None),
                "-a" => ("api-versions", None),
                _ => return None,
            },
        };
        let flag = match name {
            "include-crds" => Some(&mut t.include_crds),
            "no-hooks" => Some(&mut t.no_hooks),
            "skip-tests" => Some(&mut t.skip_tests),
            _ => None,
        };
        if let Some(flag) = flag {
            if inline.is_some() || *flag {
                return None;
            }
            *flag = true;
            continue;
        }
        let value = match inline {
            Some(value) => value,
            None => words.next()?,
        };
        if value.is_empty() || value.starts_with('-') {
            return None;
        }
        let once =
            |slot: &mut Option<String>| slot.is_none().then(|| *slot = Some(value.to_string()));
        match name {
            "values" => t.values.push(PathBuf::from(value)),
            "set" => t.set.push(value.to_string()),
            "set-string" => t.set_string.push(value.to_string()),
            "set-json" => t.set_json.push(value.to_string()),
            "set-file" => t.set_file.push(value.to_string()),
            "set-literal" => t.set_literal.push(value.to_string()),
            "api-versions" => t.api_versions.push(value.to_string()),
            "namespace" => once(&mut namespace)?,
            "name-template" => once(&mut t.name_template)?,
            "kube-version" => once(&mut t.kube_version)?,
            _ => return None,
        }
    }
    if !(1..=2).contains(&t.positional.len()) {
        return None;
    }
    if let Some(namespace) = namespace {
        t.namespace = namespace;
    }
    Some(Cli {
        command: Command::Helm(HelmArgs {
            command: HelmCommand::Template(t),
        }),
    })
}

/// Names the Secrets a render emitted, once, on stderr (their values are never printed).
fn warn_secrets(secrets: &[String]) {
    if secrets.is_empty() {
        return;
    }
    print_err(&format!(
        "kiln: warning: the rendered tree holds {} Secret{} that will be committed to Git: {}\n  (set `spec.secrets: forbid` in platform.yaml to fail the render instead)",
        secrets.len(),
        if secrets.len() == 1 { "" } else { "s" },
        crate::pipeline::secret_list(secrets)
    ));
}

/// Runs one command. `Ok(code)` carries 0, or 1 for "a difference was found".
pub fn run(cli: Cli) -> miette::Result<ExitCode> {
    match &cli.command {
        Command::Render(args) => render(args),
        Command::Merge(args) => merge(args),
        Command::Kustomize(args) => {
            let mut options = crate::kustomize::BuildOptions::default();
            if args.load_restrictor == "LoadRestrictionsNone" {
                options.load_restrictor = crate::kustomize::LoadRestrictor::None;
            }
            options.strict = args.strict;
            options.enable_helm = args.enable_helm;
            if let Some(fixes) = args.fixes {
                options.fixes = fixes;
            }
            let (out, warnings) = crate::kustomize::run_kustomize(&args.dir, &options)?;
            for w in warnings {
                eprintln!("warning: {w}");
            }
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`kiln kustomize . | head`) is not an error worth a report.
            let _ = stdout.write_all(out.as_bytes());
            Ok(ExitCode::SUCCESS)
        }
        Command::Show(args) => {
            let format = match args.output {
                Format::Json => crate::pipeline::ShowFormat::Json,
                _ => crate::pipeline::ShowFormat::Yaml,
            };
            let text = match args.what {
                ShowWhat::Platform => crate::pipeline::show_platform_sources(
                    &with_sources(
                        crate::pipeline::RenderOptions::new(&args.platform),
                        &SourceFlags::default(),
                    ),
                    format,
                )?,
                ShowWhat::Buildplans => {
                    let mut opts = with_sources(
                        crate::pipeline::RenderOptions::new(&args.platform),
                        &SourceFlags::default(),
                    );
                    opts.selection = args.selection.to_lib();
                    crate::pipeline::show_buildplans_sources(&opts, format)?
                }
            };
            print_out(&text)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Schema(args) => {
            let kind = args.kind.map(|k| match k {
                SchemaKind::Platform => crate::pipeline::SchemaKind::Platform,
                SchemaKind::Component => crate::pipeline::SchemaKind::Component,
            });
            match &args.write {
                Some(dir) => write_schemas(dir)?,
                None => print_out(&crate::pipeline::schema(kind))?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Init(args) => init(args),
        Command::Helm(args) => helm(args),
        Command::Validate(args) => validate(args),
        Command::Publish(args) => publish(args),
        Command::Update(args) => update(args),
        Command::Diff(args) => diff(args),
        Command::Verify(args) => verify(args),
        Command::History(args) => history(args),
        Command::Promote(args) => promote(args),
        Command::Bootstrap(args) => bootstrap(args),
        Command::Graph(args) => graph(args),
        Command::Status(args) => status(args),
        Command::Completions(args) => {
            use clap::CommandFactory;
            let mut out = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "kiln", &mut out);
            print_out(&String::from_utf8_lossy(&out))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man(args) => {
            use clap::CommandFactory;
            std::fs::create_dir_all(&args.dir)
                .map_err(|e| miette::miette!("cannot create `{}`: {e}", args.dir.display()))?;
            clap_mangen::generate_to(Cli::command(), &args.dir).map_err(|e| {
                miette::miette!(
                    "cannot write the manual pages into `{}`: {e}",
                    args.dir.display()
                )
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `helm template [NAME] CHART`: one argument is the chart; of two, the first is the release
/// name, unless only the first names a chart on disk (`CHART NAME`, kiln's earlier order).
/// More than two is an error, as in Helm (cobra's `RangeArgs(1, 2)`): a third word is most
/// often a second values file after one `-f`, or a `--set` value the shell split, and
/// dropping it would render other values than the user gave.
fn helm_positionals(args: &[String]) -> miette::Result<(Option<String>, String)> {
    let is_chart = |a: &str| {
        let p = std::path::Path::new(a);
        p.join("Chart.yaml").is_file() || (a.ends_with(".tgz") && p.is_file())
    };
    Ok(match args {
        [chart] => (None, chart.clone()),
        [first, second] if is_chart(first) && !is_chart(second) => {
            (Some(second.clone()), first.clone())
        }
        [name, chart] => (Some(name.clone()), chart.clone()),
        [] => (None, String::new()),
        more => {
            return Err(miette::miette!(
                code = "kiln::helm::arguments",
                help = "give each values file its own `-f`, and quote a `--set` value with \
                        braces or spaces (`--set 'ports={80,443}'`)",
                "`kiln helm template` accepts between 1 and 2 arguments ([NAME] CHART), received {}: {}",
                more.len(),
                more.join(" ")
            ));
        }
    })
}

/// `kiln helm template`: prints what `helm template` prints.
fn helm(args: &HelmArgs) -> miette::Result<ExitCode> {
    let HelmCommand::Template(t) = &args.command;
    let (name, chart) = helm_positionals(&t.positional)?;
    // pkg/action/install.go `NameAndChart`: a name and `--name-template` together are refused.
    let release = match (&t.name_template, name) {
        (Some(_), Some(_)) => {
            return Err(miette::miette!(
                code = "kiln::helm::release_name",
                help = "give the release name as an argument or as `--name-template`, not both",
                "cannot set --name-template and also specify a name"
            ));
        }
        (Some(template), None) => crate::helm::name_template(template)?,
        (None, Some(name)) => name,
        (None, None) => "release-name".to_string(),
    };
    let mut opts = crate::helm::TemplateOptions::new(std::path::Path::new(&chart), &release);
    opts.namespace = t.namespace.clone();
    opts.value_files = t.values.clone();
    opts.set = crate::helm::chartutil::strvals::SetFlags {
        set: t.set.clone(),
        string: t.set_string.clone(),
        json: t.set_json.clone(),
        file: t.set_file.clone(),
        literal: t.set_literal.clone(),
    };
    opts.include_crds = t.include_crds;
    opts.kube_version = t.kube_version.clone();
    opts.api_versions = t.api_versions.clone();
    opts.skip_hooks = t.no_hooks;
    opts.skip_tests = t.skip_tests;
    opts.now = render_now(t.now)?;
    opts.budget = crate::helm::template::exec::Budget {
        steps: t.max_steps,
        output_bytes: t.max_output_bytes,
    };
    let out = crate::helm::template_with(&crate::fs::RealFs, &opts)?;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.stream.as_bytes());
    Ok(ExitCode::SUCCESS)
}

/// The render behind `publish`, `diff` and `verify`: everything up to emit, nothing written,
/// with the slice the selection covers (the same rule as `render`).
fn build_set(
    platform: &std::path::Path,
    layout: Layout,
    selection: &Selection,
    per_environment: bool,
    sources: &SourceFlags,
) -> miette::Result<crate::pipeline::Built> {
    let mut opts = with_sources(crate::pipeline::RenderOptions::new(platform), sources);
    opts.layout = layout.to_lib();
    opts.selection = selection.to_lib();
    // `--per-environment` publishes each environment to `stage/<env>`: the Applications
    // must track that branch, so the render says so (issue 9 item 6).
    opts.environment_branches = per_environment.then(|| ENVIRONMENT_BRANCH_PREFIX.to_string());
    Ok(crate::pipeline::build(&opts, &|_, _| {})?)
}

/// Provenance trailers of a publish: the platform's own commit (when it sits in Git, dirty
/// when any file the render read has local changes), kiln's version and a digest of every
/// input file the render read.
fn provenance(
    platform: &std::path::Path,
    slice: &crate::pipeline::Built,
) -> crate::git::Provenance {
    crate::git::Provenance {
        source_commit: crate::git::source_commit_of(
            platform,
            &slice.platform.root,
            slice.inputs.keys(),
        ),
        kiln_version: env!("CARGO_PKG_VERSION").to_string(),
        spec_digest: Some(crate::git::inputs_digest(&slice.inputs)),
        sources: app_commits(&slice.sources, &slice.plans),
    }
}

/// The `Kiln-App-Commit` values of a render: each component's app repository commit per
/// cell it renders, each pulled chart per cell of the instances that use it (`plans`: the
/// cells rendered), then every other remote source (remote bases) for the whole publish.
fn app_commits(
    sources: &crate::source::Resolved,
    plans: &[crate::evaluate::BuildPlan],
) -> Vec<String> {
    use crate::git::trailers::{AppCommit, Unit};
    let cell = |project: &str, environment: &str, component: &str| {
        Some(Unit::Component {
            project: project.to_string(),
            environment: environment.to_string(),
            component: component.to_string(),
        })
    };
    let per_cell = sources
        .cells
        .iter()
        .map(|((project, environment, component), e)| AppCommit {
            cell: cell(project, environment, component),
            source: crate::source::trailer_value(e),
        });
    let rest = sources
        .used
        .iter()
        .filter(|e| !sources.cells.values().any(|c| c == *e))
        .flat_map(|e| {
            let source = crate::source::trailer_value(e);
            let users: std::collections::BTreeSet<&(String, String)> = sources
                .charts
                .used_by
                .iter()
                .filter(|(chart, _)| chart == e)
                .flat_map(|(_, users)| users)
                .collect();
            let cells: Vec<AppCommit> = plans
                .iter()
                .filter(|p| users.contains(&(p.project.clone(), p.component.clone())))
                .map(|p| AppCommit {
                    cell: cell(&p.project, &p.environment, &p.component),
                    source: source.clone(),
                })
                .collect();
            match cells.is_empty() {
                true => vec![AppCommit { cell: None, source }],
                false => cells,
            }
        });
    per_cell.chain(rest).map(|a| a.to_string()).collect()
}

/// Branch prefix of `--per-environment` publishes (Kargo's own convention is `stage/<env>`).
const ENVIRONMENT_BRANCH_PREFIX: &str = "stage/";

/// `kiln publish`: render, then commit (and push) into the write repository.
fn publish(args: &PublishArgs) -> miette::Result<ExitCode> {
    let slice = build_set(
        &args.platform,
        args.layout,
        &args.selection,
        args.per_environment,
        &args.sources,
    )?;
    let source = &slice.platform.source;
    let kargo = slice.platform.kargo.enabled;
    if args.per_environment && kargo {
        return Err(crate::git::GitError::PerEnvironmentWithKargo.into());
    }
    warn_secrets(&crate::pipeline::secrets_in(&slice.set));
    // The clock and the identity enter here, at the edge, never inside the library.
    let mut options = crate::git::PublishOptions::new(
        args.repo.clone(),
        args.branch.clone(),
        crate::git::Identity::from_env_or_git_config(),
        crate::git::CommitTime::now(),
        provenance(&args.platform, &slice),
    );
    options.path = repo_path(args.path.as_deref(), &slice);
    if let Some(url) = &source.repo_url
        && !crate::git::same_repo_or_clone(&args.repo, url)
    {
        let readers = if kargo {
            "the generated Warehouses watch"
        } else {
            "the generated Argo CD Applications track"
        };
        let consequence = if kargo {
            "Kargo will not see this commit there"
        } else {
            "Argo CD will not sync this commit"
        };
        print_err(&format!(
            "kiln: warning: publishing to {}, but {readers} {} (spec.source.repoURL); {consequence}",
            crate::git::redact(&args.repo),
            crate::git::redact(url)
        ));
    }
    if let Some(path) = &args.path
        && path.trim_matches('/') != source.rendered_path.trim_matches('/')
    {
        print_err(&format!(
            "kiln: warning: publishing under `{path}`, but the generated Applications{} read `{}` (spec.source.renderedPath)",
            if kargo { " and Warehouses" } else { "" },
            source.rendered_path
        ));
    }
    options.adopt = args.adopt;
    // An older render never lands on a newer one: the platform's checkout tells which
    // source commit contains which.
    options.source_repo = Some(args.platform.clone());
    options.auth = crate::git::RemoteAuth::from_env();
    options.scope = slice.scope.clone();
    let set = &slice.set;
    let outcomes = if slice.scope.is_empty() {
        print_err(&match args.selection.chooses_nothing(slice.plans.len()) {
            Some(message) => format!("warning: {message}: nothing to publish"),
            None => "kiln: the selection matches no BuildPlan: nothing to publish".to_string(),
        });
        Vec::new()
    } else if args.per_environment {
        crate::git::publish_per_environment(
            set,
            &options,
            &crate::git::SplitMode::Branches {
                prefix: ENVIRONMENT_BRANCH_PREFIX.into(),
            },
        )?
    } else {
        vec![crate::git::publish(set, &options)?]
    };
    if args.output == OutputFormat::Json {
        print_out(&json(&outcomes)?)?;
    } else {
        for o in &outcomes {
            print_err(&format!("kiln: {o}"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--path` of `publish`, `verify` and `diff REPO@REF`: the Warehouses (with Kargo) and the
/// Applications (always) read `spec.source.renderedPath` of the source repository, so that is
/// where the tree goes (and is looked for) unless told otherwise.
fn repo_path(path: Option<&str>, slice: &crate::pipeline::Built) -> Option<String> {
    Some(
        path.map(str::to_string)
            .unwrap_or_else(|| slice.platform.source.rendered_path.clone()),
    )
}

fn json<T: serde::Serialize>(value: &T) -> miette::Result<String> {
    Ok(serde_json::to_string_pretty(value).map_err(|e| miette::miette!("{e}"))? + "\n")
}

/// `kiln diff`: exit 1 when the render would change anything, as `kubectl diff`.
fn diff(args: &DiffArgs) -> miette::Result<ExitCode> {
    let slice = build_set(
        &args.platform,
        args.layout,
        &args.selection,
        false,
        &args.sources,
    )?;
    empty_selection(&args.selection, slice.plans.len(), "compare")?;
    let against = match &args.against {
        Some(spec) => crate::git::Against::parse(spec)?,
        None => crate::git::Against::default_dir(),
    };
    let path = match against {
        crate::git::Against::Repo { .. } => repo_path(args.path.as_deref(), &slice),
        crate::git::Against::Dir(_) => args.path.clone(),
    };
    let old = against.load(path.as_deref(), &crate::git::RemoteAuth::from_env())?;
    // The old side only inside the slice: `diff -e dev` predicts what `render -e dev` does.
    let report = crate::git::diff_sets(&slice.scope.restrict(&old), &slice.set);
    print_report(&report, &report.summary(), &args.report)?;
    Ok(ExitCode::from(u8::from(report.has_differences())))
}

/// Prints a diff or verify report as text, `--stat` (one line per file), or JSON; nothing
/// with `--quiet`.
fn print_report<T: serde::Serialize + std::fmt::Display>(
    report: &T,
    stat: &str,
    flags: &ReportFlags,
) -> miette::Result<()> {
    if flags.quiet {
        return Ok(());
    }
    match flags.output {
        OutputFormat::Json => print_out(&json(report)?),
        OutputFormat::Text if flags.stat => print_out(stat),
        OutputFormat::Text => print_out(&report.to_string()),
    }
}

/// `kiln verify`: exit 1 when the committed tree drifted from a fresh render.
fn verify(args: &VerifyArgs) -> miette::Result<ExitCode> {
    let slice = build_set(
        &args.platform,
        args.layout,
        &args.selection,
        args.per_environment,
        &args.sources,
    )?;
    empty_selection(&args.selection, slice.plans.len(), "verify")?;
    let path = repo_path(args.path.as_deref(), &slice);
    let mut set = slice.set;
    let mut scope = slice.scope;
    if args.per_environment {
        // Mirrors `publish --per-environment` (branches `stage/<env>`, shared files elsewhere).
        let mut split = crate::git::split_by_environment(&set);
        set = match args.reference.strip_prefix("stage/") {
            Some(env) => split.environments.remove(env).ok_or_else(|| {
                let known: Vec<&str> = split.environments.keys().map(String::as_str).collect();
                miette::miette!(
                    code = "kiln::git::unknown_environment",
                    help = format!("environments of this render: {}", known.join(", ")),
                    "`{}` names no environment of the render",
                    args.reference
                )
            })?,
            None => split.shared,
        };
        if scope != crate::artifact::Scope::All {
            scope = crate::artifact::Scope::Dirs(
                set.paths()
                    .filter_map(|p| p.rsplit_once('/').map(|(d, _)| format!("{d}/")))
                    .collect(),
            );
        }
    }
    let report = crate::git::verify_scoped(
        &set,
        &scope,
        &args.repo,
        &args.reference,
        path.as_deref(),
        &crate::git::RemoteAuth::from_env(),
    )?;
    print_report(&report, &report.summary(), &args.report)?;
    Ok(ExitCode::from(u8::from(report.has_drift())))
}

/// `kiln history`: the write repository's changes, or (with `--at`) what was deployed then.
fn history(args: &HistoryArgs) -> miette::Result<ExitCode> {
    let auth = crate::git::RemoteAuth::from_env();
    // The clock enters here, at the edge: relative dates count back from it.
    let now = crate::git::CommitTime::now().seconds;
    let filter = crate::git::HistoryFilter {
        component: args.component.clone(),
        environment: args.environment.clone(),
        since: args
            .since
            .as_deref()
            .map(|s| crate::git::parse_when(s, now))
            .transpose()?,
    };
    // The Stages' write folders come from the spec, rendered in memory as `kiln graph` does.
    let layout = match &args.platform {
        Some(platform) => {
            let opts = with_sources(
                crate::pipeline::RenderOptions::new(platform),
                &SourceFlags::default(),
            );
            let set = crate::pipeline::build(&opts, &|_, _| {})?.set;
            crate::promote::Objects::from_artifacts(&set)?.write_layout()
        }
        None => crate::git::WriteLayout::default(),
    };
    crate::git::read_only_walks();
    let json = args.output == Format::Json;
    let text = if let Some(at) = &args.at {
        let state = crate::git::deployed_at(
            &args.repo,
            &args.branch,
            crate::git::parse_when(at, now)?,
            &filter,
            &layout,
            &auth,
        )?;
        if filter.component.is_some() || filter.environment.is_some() {
            check_history_names(args, &filter, &layout, &auth)?;
        }
        render_result(&state, json, args.output)?
    } else {
        let h = crate::git::history(&args.repo, &args.branch, &filter, &layout, &auth)?;
        if h.entries.is_empty() {
            check_history_names(args, &filter, &layout, &auth)?;
        }
        render_result(&h, json, args.output)?
    };
    print_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses a `--component` or `--environment` of `kiln history` that no commit of the branch
/// names (a typo would otherwise read as "no commits"), with the closest name the branch's
/// history holds. A branch with no kiln commit at all has no names to judge by.
fn check_history_names(
    args: &HistoryArgs,
    filter: &crate::git::HistoryFilter,
    layout: &crate::git::WriteLayout,
    auth: &crate::git::RemoteAuth,
) -> miette::Result<()> {
    let everything = crate::git::HistoryFilter::default();
    let all = crate::git::history(&args.repo, &args.branch, &everything, layout, auth)?;
    if all.entries.is_empty() {
        return Ok(());
    }
    let mut components = std::collections::BTreeSet::new();
    let mut environments = std::collections::BTreeSet::new();
    for e in &all.entries {
        components.extend(e.components.iter().map(String::as_str));
        environments.extend(e.environments.iter().map(String::as_str));
    }
    for (what, name, known) in [
        ("component", &filter.component, &components),
        ("environment", &filter.environment, &environments),
    ] {
        if let Some(name) = name.as_deref().filter(|n| !known.contains(n)) {
            return Err(miette::miette!(
                code = "kiln::cli::unknown_history_name",
                help = crate::diag::help_for_name(name, what, known.iter().copied()),
                "no {what} `{name}` in the history of {}@{}",
                all.repo,
                args.branch
            ));
        }
    }
    Ok(())
}

fn render_result<T: serde::Serialize + std::fmt::Display>(
    value: &T,
    json: bool,
    format: Format,
) -> miette::Result<String> {
    let text = if json {
        serde_json::to_string_pretty(value).map_err(|e| miette::miette!("{e}"))? + "\n"
    } else if format == Format::Yaml {
        let v = serde_json::to_value(value).map_err(|e| miette::miette!("{e}"))?;
        crate::yaml::to_yaml(&v)
    } else {
        value.to_string()
    };
    Ok(text)
}

/// `kiln validate`: every finding as a diagnostic on stderr, then a summary; exit 1 when
/// anything was found.
fn validate(args: &ValidateArgs) -> miette::Result<ExitCode> {
    let fs = std::sync::Arc::new(crate::fs::RealFs);
    let report = match &args.schema_dir {
        Some(dir) => crate::check::validate_paths(fs, &args.paths, dir)?,
        None => crate::check::validate_paths_with(
            fs.as_ref(),
            &args.paths,
            &crate::check::SchemaSet::empty(),
        )?,
    };
    let version = args
        .kube_version
        .as_deref()
        .unwrap_or(kiln_k8s::builtin::DEFAULT_VERSION);
    let k8s = validate_k8s(args, version)?;
    let k8s_errors = k8s.errors();
    let clean = report.is_clean() && k8s_errors.is_empty();
    let k8s_count = K8sCount::of(&k8s, k8s_errors.len(), version);
    let summary = format!(
        "Kargo and Argo CD: {}; Kubernetes: {}",
        report.summary(),
        k8s_count.summary()
    );
    if args.output == OutputFormat::Json {
        // Each half counts the objects it checked: `objects` and `metaOnly` the Kargo and
        // Argo CD ones, `kubernetes.objects` those checked against the API schemas.
        let mut value = serde_json::to_value(&report).map_err(|e| miette::miette!("{e}"))?;
        value["clean"] = clean.into();
        value["summary"] = summary.into();
        value["kubernetes"] = serde_json::json!({
            "version": k8s_count.version,
            "objects": k8s_count.checked,
            "noSchema": k8s_count.unvalidated,
            "celRulesNotEvaluated": k8s_count.skipped_rules,
            "summary": k8s_count.summary(),
            // As the render gives them (line, column, help), with the document's index.
            "findings": k8s.findings.iter().map(|f| {
                let mut json = f.to_json();
                json["document"] = f.document.into();
                json
            }).collect::<Vec<_>>(),
            "unvalidated": k8s.unvalidated,
        });
        print_out(&json(&value)?)?;
    } else {
        for f in &report.findings {
            print_err(&format!("{:?}", miette::Report::new(f.clone())));
        }
        for f in &k8s_errors {
            print_err(&format!("{:?}", miette::Report::new(f.clone())));
        }
        for w in k8s.warning_lines() {
            print_err(&w);
        }
        print_err(&format!("kiln: {summary}"));
    }
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The Kubernetes half of `kiln validate`'s counts: the objects checked against the API
/// schemas of `version`, the problems, the objects of kinds with no schema, and the CEL
/// rules not evaluated (ADR 0021: counted, never passed silently).
struct K8sCount<'v> {
    version: &'v str,
    checked: usize,
    unvalidated: usize,
    errors: usize,
    skipped_rules: usize,
}

impl<'v> K8sCount<'v> {
    fn of(k8s: &crate::conform::Report, errors: usize, version: &'v str) -> K8sCount<'v> {
        let unvalidated: usize = k8s.unvalidated.values().sum();
        K8sCount {
            version,
            checked: k8s.objects.saturating_sub(unvalidated),
            unvalidated,
            errors,
            skipped_rules: k8s.skipped_rules,
        }
    }

    fn summary(&self) -> String {
        let problems = match self.errors {
            0 => "no problems".to_string(),
            1 => "1 problem".to_string(),
            n => format!("{n} problems"),
        };
        let mut text = format!(
            "{problems} in {} object{} checked against the Kubernetes {} API schemas",
            self.checked,
            if self.checked == 1 { "" } else { "s" },
            self.version
        );
        if self.unvalidated > 0 {
            text.push_str(&format!(" ({} of kinds with no schema)", self.unvalidated));
        }
        match self.skipped_rules {
            0 => {}
            1 => text.push_str("; 1 CEL rule not evaluated"),
            n => text.push_str(&format!("; {n} CEL rules not evaluated")),
        }
        text
    }
}

/// The Kubernetes validation of `kiln validate`'s paths (files, or directories walked in
/// name order), as kubeconform does it, for Kubernetes `version`.
fn validate_k8s(args: &ValidateArgs, version: &str) -> miette::Result<crate::conform::Report> {
    let mut files = Vec::new();
    for given in &args.paths {
        let before = files.len();
        let mut stack = vec![given.clone()];
        while let Some(path) = stack.pop() {
            if path.is_dir() {
                let mut entries: Vec<PathBuf> = std::fs::read_dir(&path)
                    .map_err(|e| miette::miette!("cannot list `{}`: {e}", path.display()))?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .collect();
                entries.sort();
                stack.extend(entries.into_iter().rev());
            } else if path.is_file() && crate::conform::is_manifest(&path) {
                let bytes = std::fs::read(&path)
                    .map_err(|e| miette::miette!("cannot read `{}`: {e}", path.display()))?;
                files.push((path.display().to_string(), bytes));
            }
        }
        // A mistyped path, or a render that went elsewhere, must not pass a CI gate as a
        // check of nothing (as `diff` and `verify` refuse an empty selection).
        if files.len() == before {
            return Err(miette::miette!(
                code = "kiln::cli::no_manifests",
                help = "give a file or directory holding the manifests (`.yaml`, `.yml` or `.json`; a directory is walked); a render writes to `deploy/` unless `--write-to` says otherwise",
                "`{}` holds no manifest: nothing to validate",
                given.display()
            ));
        }
    }
    let options = crate::conform::Options {
        warn: Vec::new(),
        strict: args.strict,
    };
    // The CRDs of `--schema-dir` validate custom resources here too (CEL rules included).
    let crds = match &args.schema_dir {
        Some(dir) => crate::check::crd_documents(&crate::fs::RealFs, dir)?,
        None => Vec::new(),
    };
    crate::conform::validate_files(
        &files,
        (version, crds),
        &options,
        &[crate::check::KARGO_GROUP, crate::check::ARGOCD_GROUP],
    )
    .map_err(|e| miette::miette!("{e}"))
}

/// `kiln graph`: render in memory, draw the emitted Kargo objects (with `--repo-map`, what
/// each Stage runs, read as `kiln status` reads it).
fn graph(args: &GraphArgs) -> miette::Result<ExitCode> {
    let opts = with_sources(
        crate::pipeline::RenderOptions::new(&args.platform),
        &SourceFlags::default(),
    );
    let crate::pipeline::Built { platform, set, .. } = crate::pipeline::build(&opts, &|_, _| {})?;
    let objects = crate::promote::Objects::from_artifacts(&set)?;
    let format = match args.output {
        GraphOutput::Mermaid => crate::graph::GraphFormat::Mermaid,
        GraphOutput::Dot => crate::graph::GraphFormat::Dot,
        GraphOutput::Svg => crate::graph::GraphFormat::Svg,
        GraphOutput::Json => crate::graph::GraphFormat::Json,
    };
    let runs = if args.repo_map.is_empty() {
        Default::default()
    } else {
        let options = crate::status::StatusOptions {
            repo_map: repo_map(&args.repo_map)?,
            auth: crate::git::RemoteAuth::from_env(),
            past: 1,
            filter: crate::status::StatusFilter {
                projects: args.project.iter().cloned().collect(),
                ..Default::default()
            },
            per_environment: false,
        };
        crate::git::read_only_walks();
        let current = |_: &str| Ok(set.clone());
        crate::status::status(&set, &platform, &options, &current)?.stage_runs()
    };
    print_out(&crate::graph::graph_with_runs(
        &objects,
        args.project.as_deref(),
        format,
        &runs,
    )?)?;
    Ok(ExitCode::SUCCESS)
}

/// `--repo-map URL=PATH` values, checked here rather than by clap (whose errors would echo a
/// token in the value).
fn repo_map(args: &[String]) -> miette::Result<crate::promote::repo::RepoMap> {
    crate::promote::repo::RepoMap::parse(args).map_err(|e| {
        miette::miette!(
            code = "kiln::promote::bad_repo_map",
            help = "--repo-map URL=PATH, PATH a local repository standing in for URL",
            "{e}"
        )
    })
}

/// `kiln status`: render in memory, read what every Application syncs; exit 1 when a cell
/// lags or drifted, as `kubectl diff` exits 1 on a difference.
fn status(args: &StatusArgs) -> miette::Result<ExitCode> {
    let mut opts = with_sources(
        crate::pipeline::RenderOptions::new(&args.platform),
        &SourceFlags::default(),
    );
    opts.layout = args.layout.to_lib();
    opts.environment_branches = args
        .per_environment
        .then(|| ENVIRONMENT_BRANCH_PREFIX.to_string());
    let built = crate::pipeline::build(&opts, &|_, _| {})?;
    if args.per_environment && built.platform.kargo.enabled {
        // As `kiln publish --per-environment` refuses: with Kargo, Stages write the branches.
        return Err(miette::miette!(
            code = "kiln::status::per_environment_with_kargo",
            help = "with Kargo, its promotions write the branches the Applications track; run `kiln status` without --per-environment",
            "`--per-environment` reads branches `kiln publish --per-environment` wrote, which a Kargo platform (spec.kargo.enabled: true) never has"
        ));
    }
    let options = crate::status::StatusOptions {
        filter: crate::status::StatusFilter {
            projects: args.projects.clone(),
            environments: args.environments.clone(),
            components: args.components.clone(),
        },
        repo_map: repo_map(&args.repo_map)?,
        auth: crate::git::RemoteAuth::from_env(),
        past: args.past.unwrap_or(match args.output {
            // Two: lag compares with what upstream ran before.
            StatusOutput::Text => 2,
            _ => 10,
        }),
        per_environment: args.per_environment,
    };
    crate::git::read_only_walks();
    let report = crate::status::status(
        &built.set,
        &built.platform,
        &options,
        &rerender(&opts, &args.platform, &built),
    )?;
    let crate::pipeline::Built { platform, set, .. } = built;
    match args.output {
        StatusOutput::Json => print_out(&json(&report)?)?,
        StatusOutput::Text => {
            let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal();
            print_out(&report.to_text(color))?
        }
        StatusOutput::Html => {
            let objects = crate::promote::Objects::from_artifacts(&set)?;
            let picture = if objects.stages.is_empty() {
                String::new()
            } else {
                crate::graph::graph_with_runs(
                    &objects,
                    None,
                    crate::graph::GraphFormat::Svg,
                    &report.stage_runs(),
                )?
            };
            print_out(&crate::status::html::page(
                &report,
                &picture,
                &platform.name,
            ))?
        }
    }
    Ok(ExitCode::from(u8::from(!report.in_sync())))
}

/// For `kiln status`: the platform rendered as `kiln publish` rendered it at `commit` of the
/// checkout's repository. That is `built` when the checkout is at that commit with no local
/// change to what the render read; else the commit's tree under the repository root, read
/// into memory, and the source cache ([`commit_with_sources`]), rendered with the same options
/// (the source stage as any render's; no render cache, no validation: neither changes the
/// bytes).
fn rerender<'a>(
    opts: &'a crate::pipeline::RenderOptions,
    platform_dir: &'a std::path::Path,
    built: &'a crate::pipeline::Built,
) -> impl Fn(&str) -> Result<crate::artifact::ArtifactSet, String> + 'a {
    move |commit: &str| {
        let root = &built.platform.root;
        let here = crate::git::source_commit_of(platform_dir, root, built.inputs.keys());
        if here.as_deref() == Some(commit) {
            return Ok(built.set.clone());
        }
        let files = crate::git::files_at_commit(root, commit).map_err(|e| e.to_string())?;
        let mut fs = crate::fs::MemFs::new();
        fs.add_dir(root);
        for (path, file) in files {
            match file {
                crate::git::TreeFile::File(bytes) => fs.add_file(root.join(path), bytes),
                crate::git::TreeFile::Link(target) => fs.add_symlink(root.join(path), target),
            };
        }
        // Components from other repositories are fetched into the source cache on disk, as
        // for any render: the commit's checkout alone does not hold them.
        let fs = commit_with_sources(fs, opts.sources.cache_dir.as_deref());
        let platform = platform_dir
            .canonicalize()
            .ok()
            .and_then(|p| p.strip_prefix(root).ok().map(|r| root.join(r)))
            .ok_or_else(|| format!("{} is outside {}", platform_dir.display(), root.display()))?;
        let mut at = opts.clone();
        at.platform_dir = platform;
        at.root = Some(root.clone());
        at.fs = std::sync::Arc::new(fs);
        at.cache_dir = None;
        at.validate = false;
        crate::pipeline::build(&at, &|_, _| {})
            .map(|b| b.set)
            .map_err(|e| e.to_string())
    }
}

/// What [`rerender`] renders from: the checkout at a commit, in memory, and the source
/// cache on disk (where the source stage puts the trees of `components[].source`, the
/// pulled charts and remote bases), as configured and as resolved (a cache under a symbolic
/// link). Nothing else of the disk is seen.
fn commit_with_sources(
    commit: crate::fs::MemFs,
    sources: Option<&std::path::Path>,
) -> crate::fs::Routed<crate::fs::RealFs, crate::fs::MemFs> {
    crate::fs::Routed {
        inside: crate::fs::RealFs,
        outside: commit,
        prefixes: sources
            .into_iter()
            .flat_map(|d| [Some(d.to_path_buf()), std::fs::canonicalize(d).ok()])
            .flatten()
            .collect(),
    }
}

/// `kiln bootstrap`: render in memory, create the missing write branches.
fn bootstrap(args: &BootstrapArgs) -> miette::Result<ExitCode> {
    // Components from other repositories render from the source cache, as for `promote`.
    let mut opts = with_sources(
        crate::pipeline::RenderOptions::new(&args.platform),
        &SourceFlags::default(),
    );
    opts.layout = args.layout.to_lib();
    let crate::pipeline::Built { set, .. } = crate::pipeline::build(&opts, &|_, _| {})?;
    let objects = crate::promote::Objects::from_artifacts(&set)?;
    let map = repo_map(&args.repo_map)?;
    // The clock, the identity and the credentials enter here, at the edge.
    let auth = crate::git::RemoteAuth::from_env();
    let signature = crate::git::Identity::from_env_or_git_config()
        .signature(crate::git::CommitTime::now())
        .map_err(|e| miette::miette!("{e}"))?;
    let scratch =
        tempfile::tempdir().map_err(|e| miette::miette!("cannot create a work directory: {e}"))?;
    let git = crate::promote::repo::Git {
        map: &map,
        auth: &auth,
    };
    let branches =
        crate::promote::bootstrap::bootstrap(&objects, &git, &signature, scratch.path())?;
    let mut out = String::new();
    for b in &branches {
        out.push_str(&format!(
            "{:<8} {} {} {}\n",
            if b.created { "created" } else { "exists" },
            crate::git::redact(&b.repo_url),
            b.branch,
            &b.commit[..b.commit.len().min(7)]
        ));
    }
    print_out(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// `kiln promote`: render in memory, run the Stage's steps; exit 1 when a step failed.
fn promote(args: &PromoteArgs) -> miette::Result<ExitCode> {
    let mut opts = with_sources(
        crate::pipeline::RenderOptions::new(&args.platform),
        &args.sources,
    );
    opts.layout = args.layout.to_lib();
    let crate::pipeline::Built { platform, set, .. } = crate::pipeline::build(&opts, &|_, _| {})?;
    let live = match &args.live {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| {
                miette::miette!(
                    code = "kiln::promote::live_applications",
                    help = "give the output of `kubectl get applications -n <argocd namespace> -o yaml`",
                    "cannot read {}: {e}",
                    file.display()
                )
            })?;
            Some(crate::promote::parse_live_applications(
                &file.display().to_string(),
                &text,
            )?)
        }
        None => None,
    };
    let temp;
    let work_dir = match &args.work_dir {
        Some(d) => {
            // The work directory receives clones and output folders: only an empty or new
            // one, so `--work-dir /` or a checkout is never filled (issue 39, item 15).
            let non_empty = std::fs::read_dir(d).map(|mut e| e.next().is_some());
            if matches!(non_empty, Ok(true)) || d.parent().is_none() {
                return Err(miette::miette!(
                    code = "kiln::promote::work_dir_not_empty",
                    help = "give a new or empty directory, or leave --work-dir out for a temporary one",
                    "refusing the work directory `{}`: it is not empty",
                    d.display()
                ));
            }
            std::fs::create_dir_all(d)
                .map_err(|e| miette::miette!("cannot create {}: {e}", d.display()))?;
            d.clone()
        }
        None => {
            temp = tempfile::tempdir()
                .map_err(|e| miette::miette!("cannot create a work directory: {e}"))?;
            temp.path().to_path_buf()
        }
    };
    let options = crate::promote::PromoteOptions {
        stage: args.stage.clone(),
        project: args.project.clone(),
        freight: args.freight.clone(),
        repo_map: repo_map(&args.repo_map)?,
        // The clock, the identity and the credentials enter here, at the edge.
        identity: crate::git::Identity::from_env_or_git_config(),
        time: crate::git::CommitTime::now(),
        auth: crate::git::RemoteAuth::from_env(),
        work_dir,
        live,
        assume_verified: args.assume_verified,
    };
    let report = crate::promote::promote(&set, &platform, &options)?;
    for w in &report.warnings {
        print_err(&format!("kiln: warning: {w}"));
    }
    match args.output {
        Format::Json => print_out(
            &(serde_json::to_string_pretty(&report).map_err(|e| miette::miette!("{e}"))? + "\n"),
        )?,
        _ => print_out(&report.to_text())?,
    }
    Ok(match report.failure() {
        Some((alias, why)) => {
            print_err(&format!(
                "kiln: promotion of Stage {} failed at step `{alias}`: {why}",
                report.stage
            ));
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    })
}

#[cfg(test)]
mod tests {
    /// The `Cli` the whole clap tree reads from `args`, as text; `None` when clap refuses them.
    fn clap_reads(args: &[&str]) -> Option<String> {
        use clap::{CommandFactory, FromArgMatches};
        let m = super::Cli::command().try_get_matches_from(args).ok()?;
        super::Cli::from_arg_matches(&m)
            .ok()
            .map(|c| format!("{c:?}"))
    }

    /// `kiln helm template` lines read without clap (`parse_helm_template`) are read to the
    /// `Cli` clap reads them to: on the command lines scripts and the benchmark write, and on
    /// random lines of the forms clap takes and of some it refuses or reads otherwise
    /// (bundled short flags, `--`, a value starting with `-`, an empty value, repeats, the
    /// options left to clap). Every line the fast reading takes, clap takes too, alike.
    #[test]
    fn helm_template_is_read_as_clap_reads_it() {
        let fast_reads = |args: &[&str]| {
            let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
            super::parse_helm_template(&args).map(|c| format!("{c:?}"))
        };
        for args in [
            &[
                "kiln",
                "helm",
                "template",
                "rel",
                "./chart",
                "-n",
                "ns",
                "--include-crds",
            ][..],
            &[
                "kiln",
                "helm",
                "template",
                "rel",
                "./chart",
                "-n",
                "ns",
                "--include-crds",
                "-f",
                "v.yaml",
            ],
            &[
                "kiln",
                "helm",
                "template",
                "./chart",
                "--set",
                "a=1,b=2",
                "--set",
                "c=3",
                "--namespace=x",
            ],
            &[
                "kiln",
                "helm",
                "template",
                "c",
                "--kube-version",
                "1.30",
                "-a",
                "x/v1",
                "--no-hooks",
            ],
        ] {
            let fast = fast_reads(args);
            assert!(fast.is_some(), "{args:?}");
            assert_eq!(fast, clap_reads(args), "{args:?}");
        }
        let words = [
            "rel",
            "./chart",
            "c",
            "é",
            "a=b",
            "",
            "-",
            "--",
            "-x",
            "-h",
            "--help",
            "-V",
            "-n",
            "ns",
            "--namespace",
            "--namespace=n2",
            "-f",
            "v.yaml",
            "-fv.yaml",
            "--values",
            "--values=w.yaml",
            "--values=",
            "--set",
            "a=1",
            "--set=b=2",
            "--set=-1",
            "--set-string",
            "--set-json",
            "--set-file",
            "--set-literal",
            "--include-crds",
            "--include-crds=true",
            "--no-hooks",
            "--skip-tests",
            "--kube-version",
            "1.30",
            "--kube-version=v1.29.0",
            "--name-template",
            "--name-template=r",
            "-a",
            "--api-versions",
            "v1/X",
            "--now",
            "0",
            "--max-steps",
            "10",
            "--max-output-bytes=5",
            "--no-such-flag",
            "-nns",
        ];
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut taken = 0;
        for _ in 0..20_000 {
            let n = (next() % 7) as usize;
            let mut args = vec!["kiln", "helm", "template"];
            // Plain words often, so that many lines are ones the fast reading takes.
            args.extend((0..n).map(|_| match next() % 3 {
                0 => ["rel", "./chart", "-n", "ns", "--set", "a=1", "-f", "v.yaml"]
                    [(next() % 8) as usize],
                _ => words[(next() % words.len() as u64) as usize],
            }));
            if let Some(fast) = fast_reads(&args) {
                taken += 1;
                assert_eq!(Some(fast), clap_reads(&args), "{args:?}");
            }
        }
        assert!(taken > 1_000, "{taken}");
    }

    /// Issue 37 (ADR 0043): `kiln helm` and `kiln kustomize` are parsed by a tree holding only
    /// their own command, to the same `Cli` as the whole tree parses them to; help, the version
    /// and usage errors are left to the whole tree, as is every other command.
    #[test]
    fn engines_parse_alone_as_the_whole_tree_parses_them() {
        let whole = |args: &[&str]| clap_reads(args).unwrap();
        let alone = |args: &[&str]| {
            let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
            super::parse_engine(&args).map(|cli| format!("{cli:?}"))
        };
        for args in [
            &[
                "kiln",
                "helm",
                "template",
                "rel",
                "./chart",
                "-n",
                "ns",
                "--include-crds",
            ][..],
            &[
                "kiln",
                "helm",
                "template",
                "c",
                "--set",
                "a=1",
                "-f",
                "v.yaml",
                "--kube-version",
                "1.30",
            ],
            &[
                "kiln",
                "kustomize",
                "dir",
                "--enable-helm",
                "--fixes",
                "all",
            ],
        ] {
            assert_eq!(alone(args), Some(whole(args)), "{args:?}");
        }
        for args in [
            &["kiln", "helm", "template", "--help"][..],
            &["kiln", "helm", "--version"],
            &["kiln", "helm", "template", "c", "--no-such-flag"],
            &["kiln", "kustomize"],
            &["kiln", "render", "platforms/bank"],
            &["kiln", "--version"],
        ] {
            assert_eq!(alone(args), None, "{args:?}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn huge_pages_are_turned_off_for_the_process() {
        super::disable_transparent_huge_pages();
        // SAFETY: PR_GET_THP_DISABLE takes integer arguments only and changes no memory.
        let off = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        assert_eq!(off, 1);
    }

    /// Issue 38, item 9: the progress bar's rate is a whole number, and a late report from a
    /// worker never moves the bar back.
    #[test]
    fn progress_rate_is_an_integer_and_the_position_never_goes_back() {
        assert_eq!(super::rate_text(1234.567), "1235/s");
        assert_eq!(super::rate_text(0.4), "0/s");
        assert_eq!(super::rate_text(f64::NAN), "0/s");
        assert_eq!(super::monotonic(10, 7), 10);
        assert_eq!(super::monotonic(10, 12), 12);
    }

    /// Issue 38, item 9: `kargo.promotion` and a project's `promotion` with Kargo off warn.
    #[test]
    fn settings_kargo_ignores_while_off_warn() {
        let doc = serde_json::json!({"spec": {
            "kargo": {"promotion": {"dev": {"auto": true}}},
            "projects": [{"name": "web", "promotion": "project"}, {"name": "api"}],
        }});
        let w = super::ignored_settings(&doc);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("`spec.kargo.promotion` is ignored"), "{w:?}");
        assert!(w[1].contains("project `web`"), "{w:?}");
        let mut on = doc.clone();
        on["spec"]["kargo"]["enabled"] = serde_json::json!(true);
        assert!(super::ignored_settings(&on).is_empty());
    }

    /// Issue 38, item 9 (newcomer 4, repro 08): a project's `output` and `namespaceMetadata`
    /// with Kargo off warn as `promotion` does; an empty mapping or a null is no setting.
    #[test]
    fn output_and_namespace_metadata_kargo_ignores_while_off_warn() {
        let doc = serde_json::json!({"spec": {
            "kargo": {"enabled": false, "promotion": {}},
            "projects": [
                {"name": "web", "namespaceMetadata": {"labels": {"team": "a"}},
                 "output": {"repoURL": "https://git.example.com/web-deploy.git"}},
                {"name": "api", "output": null, "namespaceMetadata": {}},
            ],
        }});
        let w = super::ignored_settings(&doc);
        assert_eq!(
            w,
            [
                "warning: `output` of project `web` is ignored: Kargo is off (`spec.kargo.enabled: true` turns it on)",
                "warning: `namespaceMetadata` of project `web` is ignored: Kargo is off (`spec.kargo.enabled: true` turns it on)",
            ]
        );
    }
}
