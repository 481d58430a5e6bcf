//! The kustomize engine's diagnostics: one enum, [`KustomizeError`], whose variants name a
//! condition and carry the place in the user's files that caused it (file, line, column, the
//! field as a JSON pointer), so a failure deep in a transformer still underlines the entry of
//! `kustomization.yaml` that asked for it — something kustomize's own errors never do.
//!
//! Where it sits: every stage of `build` (load, generators, transformers) returns these.
//! Transformer modules return their own error types; `build` wraps them with
//! [`KustomizeError::transformer`] and the location of the entry being applied.
//! Invariant: every variant's message names the file (relative to the build root) and, when
//! the source text is known, the 1-based line.

use kiln_base::diag::Loc;
use kiln_base::yaml;
use miette::{Diagnostic, NamedSource, SourceSpan};
use thiserror::Error;

/// A location plus the source text, ready to be put into a diagnostic. Built with
/// [`Site::new`] from a file's text, or [`Site::file`] when only the name is known.
#[derive(Debug, Clone)]
pub struct Site {
    pub at: Loc<String>,
    pub src: NamedSource<String>,
    pub span: Option<SourceSpan>,
}

impl Site {
    /// Locates `pointer` in document `doc` of `text` (the key's position when `key`, for
    /// unknown fields and missing entries; the value's otherwise).
    pub fn new(file: &str, text: &str, doc: usize, pointer: &str, key: bool) -> Site {
        Site::located(
            file,
            text,
            doc,
            pointer,
            key,
            yaml::locate(text, doc, pointer, key),
        )
    }

    /// A site from an already resolved position (e.g. from a cached [`yaml::SpanIndex`]).
    pub fn located(
        file: &str,
        text: &str,
        doc: usize,
        pointer: &str,
        key: bool,
        found: Option<yaml::Located>,
    ) -> Site {
        let at = Loc {
            doc,
            key,
            ..Loc::new(file.to_string(), pointer)
        };
        Site {
            at: at.found_at(found),
            src: NamedSource::new(file, text.to_string()),
            span: found.map(|l| l.span()),
        }
    }

    /// A site naming only a file (no text, no line).
    pub fn file(file: &str) -> Site {
        Site {
            at: Loc::new(file.to_string(), ""),
            src: NamedSource::new(file, String::new()),
            span: None,
        }
    }
}

/// Everything that can stop a kustomize build.
#[derive(Debug, Error, Diagnostic)]
pub enum KustomizeError {
    /// The directory has no `kustomization.yaml`, `kustomization.yml` or `Kustomization`.
    #[error("no kustomization file in `{dir}`")]
    #[diagnostic(
        code(kiln::kustomize::kustomization_missing),
        help(
            "a directory used as a build root, base or component must contain `kustomization.yaml`"
        )
    )]
    KustomizationMissing { dir: String },

    /// The directory's kustomization file is a symbolic link whose target does not exist.
    #[error("`{link}` is a symbolic link to `{target}`, which does not exist")]
    #[diagnostic(
        code(kiln::kustomize::dangling_link),
        help("point the link at an existing kustomization file, or replace it with the file")
    )]
    KustomizationDangling { link: String, target: String },

    /// More than one recognised kustomization file name in one directory.
    #[error("several kustomization files in `{dir}`: {names}")]
    #[diagnostic(
        code(kiln::kustomize::kustomization_ambiguous),
        help("keep exactly one of them")
    )]
    KustomizationAmbiguous { dir: String, names: String },

    /// A YAML file that does not parse.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Yaml(#[from] Box<yaml::YamlError>),

    /// The kustomization file is well-formed YAML but not a valid kustomization (unknown
    /// field, wrong type, wrong kind/apiVersion).
    #[error("{}: {message}", site.at)]
    #[diagnostic(code(kiln::kustomize::kustomization_invalid), help("{help}"))]
    KustomizationInvalid {
        message: String,
        help: String,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("this field")]
        span: Option<SourceSpan>,
    },

    /// A `resources`/`components`/patch/generator path that names nothing.
    #[error("{}: {what} `{path}` does not exist", site.at)]
    #[diagnostic(
        code(kiln::kustomize::file_missing),
        help("check the path; it is relative to the directory of the kustomization file")
    )]
    FileMissing {
        what: &'static str,
        path: String,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("named here")]
        span: Option<SourceSpan>,
    },

    /// A file read from outside the kustomization root (kustomize's `LoadRestrictionsRootOnly`).
    #[error("{}: `{path}` is outside the kustomization root `{root}`", site.at)]
    #[diagnostic(
        code(kiln::kustomize::file_outside_root),
        help(
            "move the file under the kustomization directory, or reference a kustomization directory (base) that contains it"
        )
    )]
    FileOutsideRoot {
        path: String,
        root: String,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("loaded here")]
        span: Option<SourceSpan>,
    },

    /// A path whose symlinks resolve outside the kustomization root.
    #[error("{}: `{path}` is a symlink to `{target}`, outside the kustomization root `{root}`", site.at)]
    #[diagnostic(
        code(kiln::kustomize::symlink_escapes),
        help("symlinks may only point inside the kustomization root")
    )]
    SymlinkEscapes {
        path: String,
        target: String,
        root: String,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("loaded here")]
        span: Option<SourceSpan>,
    },

    /// A path that goes through a symbolic link whose target does not exist.
    #[error("{}: {what} `{path}`: `{link}` is a symbolic link to `{target}`, which does not exist", site.at)]
    #[diagnostic(
        code(kiln::kustomize::dangling_link),
        help("point the link at an existing file, or remove it and the entry naming it")
    )]
    DanglingLink {
        what: &'static str,
        path: String,
        link: String,
        target: String,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("named here")]
        span: Option<SourceSpan>,
    },

    /// Bases and components nested past `krusty::load::MAX_DEPTH`.
    #[error("{}: {what} `{path}` nests kustomizations more than {limit} deep", site.at)]
    #[diagnostic(
        code(kiln::kustomize::too_deep),
        help(
            "kiln builds chains of bases and components up to {limit} deep (ADR 0029); flatten the chain"
        )
    )]
    TooDeep {
        what: &'static str,
        path: String,
        limit: usize,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("one level too deep")]
        span: Option<SourceSpan>,
    },

    /// A base (directly or through others) includes itself, or a directory that contains it.
    #[error("{}: cycle of bases: {chain}", site.at)]
    #[diagnostic(
        code(kiln::kustomize::base_cycle),
        help("a kustomization cannot include itself or a directory above it")
    )]
    BaseCycle {
        chain: String,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("this entry closes the cycle")]
        span: Option<SourceSpan>,
    },

    /// A `components` entry that is not `kind: Component`, or a `resources` entry that is.
    #[error("{}: `{path}` is {actual}, expected {expected}", site.at)]
    #[diagnostic(
        code(kiln::kustomize::component_kind_mismatch),
        help(
            "list `kind: Component` directories under `components`, and kustomizations under `resources`"
        )
    )]
    ComponentKindMismatch {
        path: String,
        actual: &'static str,
        expected: &'static str,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("listed here")]
        span: Option<SourceSpan>,
    },

    /// Two resources with the same group, version, kind, namespace and name. `first` and
    /// `second` say where each is defined (`file:line:column` of its `metadata.name` when the
    /// file is at hand): the entry alone named neither line (repro A1).
    #[error(
        "{}: duplicate resource id `{id}` (already loaded from {first}, again from {second})",
        site.at
    )]
    #[diagnostic(
        code(kiln::kustomize::duplicate_resource_id),
        help("each object may appear once; use a patch to change an object from a base")
    )]
    DuplicateResourceId {
        id: String,
        first: String,
        second: String,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("loaded again here")]
        span: Option<SourceSpan>,
    },

    /// A field kiln does not implement (remote bases, helm, plugins).
    #[error("{}: `{field}` is not supported: {reason}", site.at)]
    #[diagnostic(code(kiln::kustomize::field_unsupported), help("{help}"))]
    FieldUnsupported {
        field: String,
        reason: String,
        help: String,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("here")]
        span: Option<SourceSpan>,
    },

    /// A resource file holding something that is not a Kubernetes object.
    #[error("{}: {message}", site.at)]
    #[diagnostic(
        code(kiln::kustomize::resource_invalid),
        help("every document must be a mapping with `apiVersion`, `kind` and `metadata.name`")
    )]
    ResourceInvalid {
        message: String,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("this document")]
        span: Option<SourceSpan>,
    },

    /// A transformer or generator failed; `site` is the kustomization entry that configured
    /// it, `source` the transformer's own diagnostic.
    #[error("{}: {message}", site.at)]
    #[diagnostic(code(kiln::kustomize::transformer_failed), help("{help}"))]
    TransformerFailed {
        message: String,
        help: String,
        site: Site,
        #[source_code]
        src: NamedSource<String>,
        #[label("while applying this entry")]
        span: Option<SourceSpan>,
    },

    /// A file that could not be read.
    #[error("cannot read `{path}`: {source}")]
    #[diagnostic(code(kiln::kustomize::io))]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl KustomizeError {
    /// Shorthand builders: each takes a [`Site`] and fills the source/span fields from it.
    pub fn invalid(site: Site, message: impl Into<String>, help: impl Into<String>) -> Self {
        KustomizeError::KustomizationInvalid {
            message: message.into(),
            help: help.into(),
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// See [`KustomizeError::FileMissing`].
    pub fn file_missing(site: Site, what: &'static str, path: impl Into<String>) -> Self {
        KustomizeError::FileMissing {
            what,
            path: path.into(),
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// See [`KustomizeError::FileOutsideRoot`].
    pub fn outside_root(site: Site, path: impl Into<String>, root: impl Into<String>) -> Self {
        KustomizeError::FileOutsideRoot {
            path: path.into(),
            root: root.into(),
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// See [`KustomizeError::SymlinkEscapes`].
    pub fn symlink_escapes(
        site: Site,
        path: impl Into<String>,
        target: impl Into<String>,
        root: impl Into<String>,
    ) -> Self {
        KustomizeError::SymlinkEscapes {
            path: path.into(),
            target: target.into(),
            root: root.into(),
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// See [`KustomizeError::DanglingLink`].
    pub fn dangling_link(
        site: Site,
        what: &'static str,
        path: impl Into<String>,
        link: impl Into<String>,
        target: impl Into<String>,
    ) -> Self {
        KustomizeError::DanglingLink {
            what,
            path: path.into(),
            link: link.into(),
            target: target.into(),
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// See [`KustomizeError::TooDeep`].
    pub fn too_deep(site: Site, what: &'static str, path: impl Into<String>, limit: usize) -> Self {
        KustomizeError::TooDeep {
            what,
            path: path.into(),
            limit,
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// See [`KustomizeError::BaseCycle`].
    pub fn base_cycle(site: Site, chain: impl Into<String>) -> Self {
        KustomizeError::BaseCycle {
            chain: chain.into(),
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// See [`KustomizeError::ComponentKindMismatch`].
    pub fn kind_mismatch(
        site: Site,
        path: impl Into<String>,
        actual: &'static str,
        expected: &'static str,
    ) -> Self {
        KustomizeError::ComponentKindMismatch {
            path: path.into(),
            actual,
            expected,
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// See [`KustomizeError::DuplicateResourceId`].
    pub fn duplicate(
        site: Site,
        id: impl Into<String>,
        first: impl Into<String>,
        second: impl Into<String>,
    ) -> Self {
        KustomizeError::DuplicateResourceId {
            id: id.into(),
            first: first.into(),
            second: second.into(),
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// See [`KustomizeError::FieldUnsupported`].
    pub fn unsupported(
        site: Site,
        field: impl Into<String>,
        reason: impl Into<String>,
        help: impl Into<String>,
    ) -> Self {
        KustomizeError::FieldUnsupported {
            field: field.into(),
            reason: reason.into(),
            help: help.into(),
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// See [`KustomizeError::ResourceInvalid`].
    pub fn resource_invalid(site: Site, message: impl Into<String>) -> Self {
        KustomizeError::ResourceInvalid {
            message: message.into(),
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// Wraps a transformer's or generator's error with the kustomization entry that caused
    /// it. The inner diagnostic's message and help are kept.
    pub fn transformer(site: Site, inner: &dyn Diagnostic) -> Self {
        let help = inner.help().map(|h| h.to_string()).unwrap_or_default();
        let mut message = inner.to_string();
        // The cause chain carries the detail (e.g. a JSON patch's "doc is missing path").
        let mut cause = std::error::Error::source(inner);
        while let Some(c) = cause {
            let text = c.to_string();
            if !message.contains(&text) {
                message = format!("{message}: {text}");
            }
            cause = c.source();
        }
        if let Some(code) = inner.code() {
            message = format!("{message} [{code}]");
        }
        KustomizeError::TransformerFailed {
            message,
            help,
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// Like [`KustomizeError::transformer`] for a plain message.
    pub fn transformer_msg(
        site: Site,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> Self {
        KustomizeError::TransformerFailed {
            message: message.into(),
            help: help.into(),
            src: site.src.clone(),
            span: site.span,
            site,
        }
    }

    /// The location the error points at, when it has one.
    pub fn location(&self) -> Option<&Loc<String>> {
        use KustomizeError::*;
        match self {
            KustomizationInvalid { site, .. }
            | FileMissing { site, .. }
            | FileOutsideRoot { site, .. }
            | SymlinkEscapes { site, .. }
            | BaseCycle { site, .. }
            | DanglingLink { site, .. }
            | TooDeep { site, .. }
            | ComponentKindMismatch { site, .. }
            | DuplicateResourceId { site, .. }
            | FieldUnsupported { site, .. }
            | ResourceInvalid { site, .. }
            | TransformerFailed { site, .. } => Some(&site.at),
            KustomizationMissing { .. }
            | KustomizationDangling { .. }
            | KustomizationAmbiguous { .. }
            | Yaml(_)
            | Io { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_finds_line_and_message_names_it() {
        let text = "resources:\n- a.yaml\n- missing.yaml\n";
        let site = Site::new("overlay/kustomization.yaml", text, 0, "/resources/1", false);
        assert_eq!(site.at.line, 3);
        let err = KustomizeError::file_missing(site, "resource", "missing.yaml");
        let msg = err.to_string();
        assert!(msg.starts_with("overlay/kustomization.yaml:3:3"), "{msg}");
        assert!(msg.contains("resources[1]"), "{msg}");
        assert_eq!(err.location().unwrap().line, 3);
    }
}
