//! Where a coalesced value came from (issue 36, item 7: a finding in a chart's output names
//! the values file that set the value). Helm keeps no such record; the layers are those of
//! Helm v4.2.3's precedence, highest first: the `--set` flags, the values given inline (the
//! kiln spec's `values:`), the `-f` files last to first (`pkg/cli/values/options.go`
//! `MergeValues`), then the chart's values.yaml and each subchart's for its own section, a
//! parent's over its subchart's, and a parent's `global` over a subchart's
//! (`pkg/chart/common/util/coalesce.go` `CoalesceValues`). The first layer holding the path
//! is the one coalescing kept. Nothing is built ahead: a path's origin is looked up when a
//! finding asks for it, a few times per render at most.
//!
//! Not followed: `import-values` (a parent's value taken from a subchart's `exports`) and a
//! value a template itself made (`set`, `merge` into `.Values`): such a value is reported from
//! the layer holding its path, if any.

use super::*;
use std::sync::Arc;

/// What a layer of values is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    /// `--set` and its kin.
    Set,
    /// Values given inline (`TemplateOptions::values`).
    Inline,
    /// A `-f` values file.
    File,
    /// A chart's (or subchart's) values.yaml: the chart's default.
    ChartDefault,
}

/// One layer of values, as read.
pub struct Layer {
    pub kind: LayerKind,
    /// The file it was read from (for `Set` and `Inline`: how the caller names them).
    pub name: String,
    /// Its text, for the line of a value (none for `Set` and `Inline`).
    pub text: Option<Arc<str>>,
    pub values: Map,
}

/// Where one values path came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueOrigin {
    /// The path in the layer (for a subchart's values.yaml, below its section; for a
    /// `global` copied down, from `global`).
    pub path: Vec<String>,
    pub kind: LayerKind,
    /// [`Layer::name`].
    pub name: String,
    /// The 1-based line of the value in the layer's text, when it has one.
    pub line: Option<usize>,
}

/// The layers of one render, highest first: the user's, then each chart's values.yaml with
/// the path of its section (the top chart's is empty), parents before their subcharts.
pub struct Layers {
    pub user: Vec<Layer>,
    pub defaults: Vec<(Vec<String>, Layer)>,
}

impl Layers {
    /// Where the value at `path` of the coalesced values came from.
    pub fn origin(&self, path: &[String]) -> Option<ValueOrigin> {
        // A subchart reads `global` at its own section; every chart above copied theirs down.
        let global = path
            .iter()
            .position(|k| k == "global")
            .filter(|&i| i > 0)
            .map(|i| &path[i..]);
        let mut candidates: Vec<&[String]> = vec![path];
        candidates.extend(global);
        let user = self
            .user
            .iter()
            .flat_map(|l| candidates.iter().map(move |p| (l, *p)));
        let defaults = self
            .defaults
            .iter()
            .filter_map(|(prefix, l)| Some((l, path.strip_prefix(prefix.as_slice())?)));
        // A `global` of a subchart's own values.yaml comes below every parent's.
        let globals = global.into_iter().flat_map(|g| {
            let at = &path[..path.len() - g.len()];
            self.defaults
                .iter()
                .filter(move |(prefix, _)| at.starts_with(prefix))
                .map(move |(_, l)| (l, g))
        });
        first(user.chain(defaults).chain(globals))
    }
}

/// What a layer holds at a path: a value, a null (which deletes whatever lower layers set),
/// or nothing.
enum Held {
    Value(ValueOrigin),
    Null,
    Nothing,
}

/// `path` in `layer`.
fn held(layer: &Layer, path: &[String]) -> Held {
    if path.is_empty() {
        return Held::Nothing;
    }
    let mut cur = Value::Map(layer.values.clone());
    for k in path {
        let Value::Map(m) = &cur else {
            return Held::Nothing;
        };
        let Some(next) = m.borrow().get(k).cloned() else {
            return Held::Nothing;
        };
        cur = next;
    }
    if matches!(cur, Value::Nil) {
        return Held::Null;
    }
    Held::Value(ValueOrigin {
        path: path.to_vec(),
        kind: layer.kind,
        name: layer.name.clone(),
        line: layer.text.as_ref().and_then(|t| line_of(t, path)),
    })
}

/// The first of `tries` (layer, path), highest first, that holds a value; none when a null
/// deleted it first.
fn first<'a>(tries: impl Iterator<Item = (&'a Layer, &'a [String])>) -> Option<ValueOrigin> {
    for (layer, path) in tries {
        match held(layer, path) {
            Held::Value(o) => return Some(o),
            Held::Null => return None,
            Held::Nothing => {}
        }
    }
    None
}

/// The line of `path` in a values text: the last of its documents holding it (Helm merges
/// every document of a `-f` file, later ones over earlier).
fn line_of(text: &Arc<str>, path: &[String]) -> Option<usize> {
    let pointer: String = path
        .iter()
        .map(|k| format!("/{}", kiln_base::pointer::escape(k)))
        .collect();
    let key = path.last()?;
    let file = kiln_base::diag::SourceFile::new("", text.clone());
    let documents = text.lines().filter(|l| l.starts_with("---")).count();
    // `locate` gives the nearest ancestor of a path a document lacks: the key found must be
    // the path's own (plain or quoted).
    let own = |offset: usize| {
        let at = text.get(offset..).unwrap_or_default();
        let at = at.strip_prefix(['"', '\'']).unwrap_or(at);
        at.starts_with(key.as_str())
    };
    (0..=documents)
        .rev()
        .filter_map(|d| file.locate(d, &pointer, true))
        .find(|l| own(l.offset))
        .map(|l| l.line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::loader::load_values;

    fn layer(kind: LayerKind, name: &str, text: &str) -> Layer {
        Layer {
            kind,
            name: name.into(),
            text: Some(Arc::from(text)),
            values: load_values(text).unwrap(),
        }
    }

    fn path(p: &str) -> Vec<String> {
        p.split('.').map(str::to_string).collect()
    }

    fn layers() -> Layers {
        Layers {
            user: vec![
                layer(
                    LayerKind::File,
                    "prod.yaml",
                    "# prod\nreplicas: 3\ndb:\n  port: null\n",
                ),
                layer(
                    LayerKind::File,
                    "base.yaml",
                    "image:\n  tag: v1\nreplicas: 2\nglobal:\n  region: eu\n---\nimage:\n  tag: v2\n",
                ),
            ],
            defaults: vec![
                (
                    Vec::new(),
                    layer(
                        LayerKind::ChartDefault,
                        "chart/values.yaml",
                        "replicas: 1\nimage:\n  tag: latest\n  pullPolicy: Always\ndb:\n  user: app\n",
                    ),
                ),
                (
                    path("db"),
                    layer(
                        LayerKind::ChartDefault,
                        "chart/charts/db/values.yaml",
                        "port: 5432\nuser: postgres\nglobal:\n  zone: a\n",
                    ),
                ),
            ],
        }
    }

    fn at(o: Option<ValueOrigin>) -> Option<String> {
        o.map(|o| format!("{}:{}", o.name, o.line.unwrap_or(0)))
    }

    #[test]
    fn the_last_layer_that_set_a_path_is_its_origin() {
        let l = layers();
        // The later -f file wins over the earlier and over the chart's default.
        assert_eq!(at(l.origin(&path("replicas"))), Some("prod.yaml:2".into()));
        // The last document of a file holding it.
        assert_eq!(at(l.origin(&path("image.tag"))), Some("base.yaml:8".into()));
        // Only the chart set it.
        assert_eq!(
            at(l.origin(&path("image.pullPolicy"))),
            Some("chart/values.yaml:4".into())
        );
        // A parent's values.yaml over its subchart's; the subchart's for the rest.
        assert_eq!(
            at(l.origin(&path("db.user"))),
            Some("chart/values.yaml:6".into())
        );
        // A user's null deletes the default: the value came from nowhere.
        assert_eq!(l.origin(&path("db.port")), None);
        // `global` read in a subchart: the user's top-level global, else the subchart's own.
        assert_eq!(
            at(l.origin(&path("db.global.region"))),
            Some("base.yaml:5".into())
        );
        assert_eq!(
            at(l.origin(&path("db.global.zone"))),
            Some("chart/charts/db/values.yaml:4".into())
        );
        assert_eq!(l.origin(&path("nothing")), None);
        // A map: the highest layer holding it.
        assert_eq!(l.origin(&path("db")).map(|o| o.kind), Some(LayerKind::File));
    }
}
