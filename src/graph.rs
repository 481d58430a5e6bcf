//! `kiln graph`: the promotion pipeline as a Mermaid or Graphviz text, or an SVG picture laid
//! out natively by `layout-rs` (a layered, Sugiyama-style layout; no Graphviz binary, ADR
//! 0030).
//!
//! Drawn from the Kargo objects kiln emits (read by [`crate::promote::Objects`], the same
//! reading `kiln promote` runs on), so the picture cannot drift from what Kargo gets. Edges
//! follow Kargo v1.11.2's `requestedFreight[].sources` (`api/v1alpha1/stage_types.go`):
//! `direct: true` draws Warehouse → Stage, `stages: [...]` draws upstream Stage → Stage.
//! What a Stage writes comes from its `writeRepo`/`writeBranch`/`writePath` vars.
//! Node ids are positional (`w0`, `s0`, ...) over a sorted order, so they never collide and
//! the same objects always give the same bytes.

use std::collections::BTreeMap;

use miette::Diagnostic;
use serde_json::Value;
use thiserror::Error;

use crate::promote::{Objects, StageDef};

/// The drawing language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    Mermaid,
    Dot,
    /// A standalone SVG document (`layout-rs`).
    Svg,
    /// The same graph as data for tools: one top-level object (`{"projects": [...]}`), so
    /// keys can be added without breaking readers.
    Json,
}

#[derive(Debug, Error, Diagnostic, Clone, PartialEq)]
pub enum GraphError {
    #[error("no Kargo project `{project}` among the emitted objects")]
    #[diagnostic(
        code(kiln::graph::unknown_project),
        help("projects kiln emits: {known}")
    )]
    UnknownProject { project: String, known: String },
    #[error("cannot read Stage: {message}")]
    #[diagnostic(
        code(kiln::graph::invalid_stage),
        help("`kiln validate` shows what is wrong")
    )]
    InvalidStage { message: String },
}

fn s<'v>(v: &'v Value, pointer: &str) -> &'v str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

struct StageNode {
    def: StageDef,
    environment: String,
    /// Warehouses this Stage takes Freight from directly.
    direct: Vec<String>,
    /// The longest chain of upstream Stages above this one: orders environments as the
    /// Freight flows (dev before test), not by name.
    depth: usize,
}

/// Draws every project (or only `project`) of `objects`.
pub fn graph(
    objects: &Objects,
    project: Option<&str>,
    format: GraphFormat,
) -> Result<String, GraphError> {
    graph_with_runs(objects, project, format, &BTreeMap::new())
}

/// [`graph`], each Stage's box with one more line when `runs` has its `<project>/<stage>`:
/// what it runs (read from its write repository by `kiln status`).
pub fn graph_with_runs(
    objects: &Objects,
    project: Option<&str>,
    format: GraphFormat,
    runs: &BTreeMap<String, String>,
) -> Result<String, GraphError> {
    let mut projects: BTreeMap<String, (Vec<String>, Vec<StageNode>)> = BTreeMap::new();
    for w in &objects.warehouses {
        let p = projects
            .entry(s(w, "/metadata/namespace").to_string())
            .or_default();
        p.0.push(s(w, "/metadata/name").to_string());
    }
    for st in &objects.stages {
        let def = StageDef::from_object(st).map_err(|e| GraphError::InvalidStage {
            message: e.to_string(),
        })?;
        let direct = st
            .pointer("/spec/requestedFreight")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| r.pointer("/sources/direct").and_then(Value::as_bool) == Some(true))
            .map(|r| s(r, "/origin/name").to_string())
            .collect();
        let node = StageNode {
            environment: s(st, "/metadata/labels/kiln.dev~1environment").to_string(),
            direct,
            depth: 0,
            def,
        };
        projects
            .entry(node.def.project.clone())
            .or_default()
            .1
            .push(node);
    }
    if let Some(p) = project {
        if !projects.contains_key(p) {
            return Err(GraphError::UnknownProject {
                project: p.to_string(),
                known: projects.keys().cloned().collect::<Vec<_>>().join(", "),
            });
        }
        projects.retain(|k, _| k == p);
    }
    for (warehouses, stages) in projects.values_mut() {
        warehouses.sort();
        warehouses.dedup();
        // Relaxation capped at one round per Stage, so a (validated-away) cycle cannot hang.
        for _ in 0..stages.len() {
            let depth: BTreeMap<String, usize> = stages
                .iter()
                .map(|n| (n.def.name.clone(), n.depth))
                .collect();
            for n in stages.iter_mut() {
                n.depth = n
                    .def
                    .upstream
                    .iter()
                    .filter_map(|u| depth.get(u))
                    .map(|d| d + 1)
                    .max()
                    .unwrap_or(0);
            }
        }
        let mut env_rank: BTreeMap<String, usize> = BTreeMap::new();
        for n in stages.iter() {
            let r = env_rank.entry(n.environment.clone()).or_insert(n.depth);
            *r = (*r).min(n.depth);
        }
        stages.sort_by(|a, b| {
            (env_rank[&a.environment], &a.environment, &a.def.name).cmp(&(
                env_rank[&b.environment],
                &b.environment,
                &b.def.name,
            ))
        });
    }
    Ok(match format {
        GraphFormat::Svg => draw_svg(&projects, runs),
        GraphFormat::Json => to_json(&projects, runs),
        _ => draw(&projects, format, runs),
    })
}

/// [`GraphFormat::Json`]: per project its Warehouses and Stages (in drawing order), each
/// Stage with its requested Freight (origin and sources, Kargo's `requestedFreight`), the
/// repository, branch and folders it writes, and what it runs when known.
fn to_json(projects: &Projects, runs: &BTreeMap<String, String>) -> String {
    let projects: Vec<Value> = projects
        .iter()
        .map(|(name, (warehouses, stages))| {
            let stages: Vec<Value> = stages
                .iter()
                .map(|n| {
                    let requested: Vec<Value> = n
                        .def
                        .upstream_of
                        .iter()
                        .map(|(origin, up)| {
                            let sources = if up.is_empty() {
                                serde_json::json!({ "direct": true })
                            } else {
                                serde_json::json!({ "stages": up })
                            };
                            serde_json::json!({ "origin": origin, "sources": sources })
                        })
                        .collect();
                    let mut stage = serde_json::json!({
                        "name": n.def.name,
                        "environment": n.environment,
                        "requestedFreight": requested,
                        "writeRepo": var(&n.def, "writeRepo"),
                        "writeBranch": var(&n.def, "writeBranch"),
                        "writes": n.def.written().into_iter().map(|w| w.dir).collect::<Vec<_>>(),
                    });
                    if let Some(r) = runs.get(&format!("{}/{}", n.def.project, n.def.name)) {
                        stage["runs"] = Value::String(r.clone());
                    }
                    stage
                })
                .collect();
            serde_json::json!({ "name": name, "warehouses": warehouses, "stages": stages })
        })
        .collect();
    let mut out = serde_json::to_string_pretty(&serde_json::json!({ "projects": projects }))
        .unwrap_or_default();
    out.push('\n');
    out
}

/// The lines of a Stage's box: its name, what it writes, and what it runs.
fn stage_lines(n: &StageNode, runs: &BTreeMap<String, String>) -> Vec<String> {
    let target = format!(
        "{}@{}",
        var(&n.def, "writeRepo"),
        var(&n.def, "writeBranch")
    );
    let mut lines = vec![n.def.name.clone()];
    if target != "@" {
        lines.push(target);
    }
    lines.extend(n.def.written().into_iter().map(|w| w.dir));
    if let Some(r) = runs.get(&format!("{}/{}", n.def.project, n.def.name)) {
        lines.push(format!("runs {r}"));
    }
    lines
}

/// The SVG picture: one node per Warehouse (rounded) and Stage (box, its lines as in the text
/// forms), edges as Freight flows, laid out left to right by `layout-rs`. Its text is escaped
/// by the SVG writer; the XML declaration is left out so the picture embeds in a page as is.
fn draw_svg(projects: &Projects, runs: &BTreeMap<String, String>) -> String {
    use layout::backends::svg::SVGWriter;
    use layout::core::base::Orientation;
    use layout::core::color::Color;
    use layout::core::geometry::{Point, get_size_for_str, pad_shape_scalar};
    use layout::core::style::StyleAttr;
    use layout::std_shapes::shapes::{Arrow, Element, ShapeKind};
    use layout::topo::layout::VisualGraph;

    // One font size for boxes and edges (`Arrow::simple` draws at 15): the SVG writer keeps
    // its font classes in a HashMap, and with one entry its output order cannot vary.
    const FONT: usize = 15;
    let mut graph = VisualGraph::new(Orientation::LeftToRight);
    let mut node = |text: &str, fill: &str, rounded: usize| {
        let look = StyleAttr::new(
            Color::fast("black"),
            1,
            Some(Color::fast(fill)),
            rounded,
            FONT,
        );
        let size = pad_shape_scalar(get_size_for_str(text, FONT), 12.0);
        let size = Point::new(size.x * 0.62 + 12.0, size.y);
        let shape = ShapeKind::new_box(text);
        graph.add_node(Element::create(shape, look, Orientation::LeftToRight, size))
    };
    let mut edges = Vec::new();
    let mut handles = Vec::new();
    for (project, (warehouses, stages)) in projects {
        let mut ids = BTreeMap::new();
        for w in warehouses {
            let h = node(
                &format!("Warehouse {w}\nproject {project}"),
                "lightyellow",
                12,
            );
            ids.insert(("w", w.as_str()), h);
            handles.push(h);
        }
        for n in stages {
            // What a Stage runs, one component a line: a project-mode Stage runs many, and
            // one line of them all widened its box and, with it, its whole rank.
            let text = stage_lines(n, runs)
                .iter()
                .flat_map(|l| match l.strip_prefix("runs ") {
                    Some(all) => all.split(", ").map(|r| format!("runs {r}")).collect(),
                    None => vec![l.clone()],
                })
                .collect::<Vec<_>>()
                .join("\n");
            let fill = if runs.contains_key(&format!("{}/{}", n.def.project, n.def.name)) {
                "honeydew"
            } else {
                "white"
            };
            let h = node(&text, fill, 0);
            ids.insert(("s", n.def.name.as_str()), h);
        }
        for n in stages {
            let to = ids[&("s", n.def.name.as_str())];
            for w in &n.direct {
                if let Some(f) = ids.get(&("w", w.as_str())) {
                    edges.push((*f, to));
                }
            }
            for u in &n.def.upstream {
                if let Some(f) = ids.get(&("s", u.as_str())) {
                    edges.push((*f, to));
                }
            }
        }
    }
    for (from, to) in edges {
        graph.add_edge(Arrow::simple(""), from, to);
    }
    let mut svg = Bounded {
        svg: SVGWriter::new(),
        size: Point::new(0.0, 0.0),
    };
    if graph.num_nodes() > 0 {
        graph.do_it(false, false, false, &mut svg);
    }
    svg.finalize()
}

/// `layout-rs`'s SVG writer, with the picture's size taken from what is drawn. The writer
/// sizes its canvas as if every text were a column of 10 px per character
/// (`backends/svg.rs`, `draw_text`: `grow_window(xy, (10, len × 10))`), so a Stage box of
/// a few lines of 300 characters made the bank's picture three times taller than its
/// drawing, and the rest of it empty. Here boxes, ellipses and edges grow the canvas by their
/// extent, and a text by its lines (it is drawn inside its box); every drawing call goes to
/// the writer unchanged.
struct Bounded {
    svg: layout::backends::svg::SVGWriter,
    size: layout::core::geometry::Point,
}

/// The margin the writer keeps past the farthest drawing (`grow_window`'s 5 px).
const SVG_MARGIN: f64 = 5.0;

impl Bounded {
    fn grow(&mut self, x: f64, y: f64) {
        self.size.x = self.size.x.max(x + SVG_MARGIN);
        self.size.y = self.size.y.max(y + SVG_MARGIN);
    }

    /// The document: the writer's, its `<svg>` element's size and view box replaced with the
    /// drawing's, and without the XML declaration so the picture embeds in a page as is.
    fn finalize(&self) -> String {
        let out = self.svg.finalize();
        let out = match out.split_once("?>") {
            Some((_, rest)) => rest.trim_start().to_string(),
            None => out,
        };
        let (w, h) = (self.size.x, self.size.y);
        match (out.find("<svg "), out.find(" xmlns=")) {
            (Some(start), Some(end)) if start < end => format!(
                "{}<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\"{}",
                &out[..start],
                &out[end..]
            ),
            _ => out,
        }
    }
}

impl layout::core::format::RenderBackend for Bounded {
    fn draw_rect(
        &mut self,
        xy: layout::core::geometry::Point,
        size: layout::core::geometry::Point,
        look: &layout::core::style::StyleAttr,
        properties: Option<String>,
        clip: Option<layout::core::format::ClipHandle>,
    ) {
        self.grow(xy.x + size.x, xy.y + size.y);
        self.svg.draw_rect(xy, size, look, properties, clip);
    }

    fn draw_line(
        &mut self,
        start: layout::core::geometry::Point,
        stop: layout::core::geometry::Point,
        look: &layout::core::style::StyleAttr,
        properties: Option<String>,
    ) {
        self.grow(start.x.max(stop.x), start.y.max(stop.y));
        self.svg.draw_line(start, stop, look, properties);
    }

    fn draw_circle(
        &mut self,
        xy: layout::core::geometry::Point,
        size: layout::core::geometry::Point,
        look: &layout::core::style::StyleAttr,
        properties: Option<String>,
    ) {
        self.grow(xy.x + size.x, xy.y + size.y);
        self.svg.draw_circle(xy, size, look, properties);
    }

    fn draw_text(
        &mut self,
        xy: layout::core::geometry::Point,
        text: &str,
        look: &layout::core::style::StyleAttr,
    ) {
        // Centred on `xy`, one line per `font_size` below `xy.y - (lines + 1) × size / 2`.
        let lines = text.lines().count() as f64;
        let font = look.font_size as f64;
        self.grow(xy.x, xy.y + (lines - 1.0) * font / 2.0 + font);
        self.svg.draw_text(xy, text, look);
    }

    fn draw_arrow(
        &mut self,
        path: &[(layout::core::geometry::Point, layout::core::geometry::Point)],
        dashed: bool,
        head: (bool, bool),
        look: &layout::core::style::StyleAttr,
        properties: Option<String>,
        text: &str,
    ) {
        for (a, b) in path {
            self.grow(a.x.max(b.x), a.y.max(b.y));
        }
        self.svg
            .draw_arrow(path, dashed, head, look, properties, text);
    }

    fn create_clip(
        &mut self,
        xy: layout::core::geometry::Point,
        size: layout::core::geometry::Point,
        rounded_px: usize,
    ) -> layout::core::format::ClipHandle {
        self.svg.create_clip(xy, size, rounded_px)
    }
}

fn var<'a>(def: &'a StageDef, name: &str) -> &'a str {
    def.vars
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

/// Escapes text for a quoted Mermaid label: entity codes for what Mermaid would parse.
fn mermaid_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Escapes text for a double-quoted DOT string.
fn dot_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

type Projects = BTreeMap<String, (Vec<String>, Vec<StageNode>)>;

fn draw(projects: &Projects, format: GraphFormat, runs: &BTreeMap<String, String>) -> String {
    let (esc, br): (fn(&str) -> String, &str) = match format {
        GraphFormat::Mermaid => (mermaid_escape, "<br/>"),
        _ => (dot_escape, "\\n"),
    };
    let label = |lines: &[&str]| {
        lines
            .iter()
            .filter(|l| !l.is_empty())
            .map(|l| esc(l))
            .collect::<Vec<_>>()
            .join(br)
    };
    let mut out = String::new();
    let mut edges = Vec::new();
    match format {
        GraphFormat::Mermaid => out.push_str("flowchart LR\n"),
        _ => out.push_str("digraph kiln {\n  rankdir=LR;\n"),
    }
    let (mut wn, mut sn, mut gn) = (0usize, 0usize, 0usize);
    for (project, (warehouses, stages)) in projects {
        let mut ids: BTreeMap<(&str, &str), String> = BTreeMap::new();
        let mut open = |out: &mut String, depth: usize, title: &str| {
            let pad = "  ".repeat(depth);
            match format {
                GraphFormat::Mermaid => {
                    out.push_str(&format!("{pad}subgraph g{gn}[\"{}\"]\n", esc(title)))
                }
                _ => out.push_str(&format!(
                    "{pad}subgraph cluster_{gn} {{\n{pad}  label=\"{}\";\n",
                    esc(title)
                )),
            }
            gn += 1;
        };
        let close = |out: &mut String, depth: usize| {
            let pad = "  ".repeat(depth);
            out.push_str(&pad);
            out.push_str(match format {
                GraphFormat::Mermaid => "end\n",
                _ => "}\n",
            });
        };
        open(&mut out, 1, &format!("project {project}"));
        for w in warehouses {
            let id = format!("w{wn}");
            wn += 1;
            let l = label(&["Warehouse", w]);
            match format {
                GraphFormat::Mermaid => out.push_str(&format!("    {id}[(\"{l}\")]\n")),
                _ => out.push_str(&format!("    {id} [label=\"{l}\", shape=cylinder];\n")),
            }
            ids.insert(("w", w), id);
        }
        // Stages arrive sorted by environment rank, so first appearance is pipeline order.
        let mut envs: Vec<&str> = Vec::new();
        for n in stages {
            if !envs.contains(&n.environment.as_str()) {
                envs.push(&n.environment);
            }
        }
        for env in envs {
            let grouped = !env.is_empty();
            let depth = if grouped { 3 } else { 2 };
            if grouped {
                open(&mut out, 2, env);
            }
            for n in stages.iter().filter(|n| n.environment == env) {
                let id = format!("s{sn}");
                sn += 1;
                let lines = stage_lines(n, runs);
                let l = label(&lines.iter().map(String::as_str).collect::<Vec<_>>());
                let pad = "  ".repeat(depth);
                match format {
                    GraphFormat::Mermaid => out.push_str(&format!("{pad}{id}[\"{l}\"]\n")),
                    _ => out.push_str(&format!("{pad}{id} [label=\"{l}\", shape=box];\n")),
                }
                ids.insert(("s", &n.def.name), id);
            }
            if grouped {
                close(&mut out, 2);
            }
        }
        close(&mut out, 1);
        for n in stages {
            let to = &ids[&("s", n.def.name.as_str())];
            let mut from: Vec<&String> = Vec::new();
            from.extend(n.direct.iter().filter_map(|w| ids.get(&("w", w.as_str()))));
            from.extend(
                n.def
                    .upstream
                    .iter()
                    .filter_map(|u| ids.get(&("s", u.as_str()))),
            );
            for f in from {
                edges.push(format!("{f} --> {to}"));
            }
        }
    }
    for e in edges {
        match format {
            GraphFormat::Mermaid => out.push_str(&format!("  {e}\n")),
            _ => out.push_str(&format!("  {};\n", e.replace("-->", "->"))),
        }
    }
    if format == GraphFormat::Dot {
        out.push_str("}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stage(project: &str, name: &str, env: &str, warehouse: &str, upstream: &[&str]) -> Value {
        let sources = if upstream.is_empty() {
            json!({"direct": true})
        } else {
            json!({"stages": upstream})
        };
        json!({
            "apiVersion": "kargo.akuity.io/v1alpha1", "kind": "Stage",
            "metadata": {"name": name, "namespace": project,
                         "labels": {"kiln.dev/environment": env}},
            "spec": {
                "requestedFreight": [{"origin": {"kind": "Warehouse", "name": warehouse},
                                      "sources": sources}],
                "promotionTemplate": {"spec": {
                    "vars": [{"name": "writeRepo", "value": "https://git.example/a\"b.git"},
                             {"name": "writeBranch", "value": "stage/".to_string() + env},
                             {"name": "writePath", "value": name}],
                    "steps": [
                        {"uses": "kustomize-build", "as": "build",
                         "config": {"path": "./src", "outPath": "./out/${{ vars.writePath }}/manifests.yaml"}},
                        {"uses": "git-push", "as": "push", "config": {"path": "./out"}}
                    ]}}
            }
        })
    }

    fn warehouse(project: &str, name: &str) -> Value {
        json!({"apiVersion": "kargo.akuity.io/v1alpha1", "kind": "Warehouse",
               "metadata": {"name": name, "namespace": project}})
    }

    /// Two projects; `test` sorts after `prod` by name but follows `dev` in the pipeline.
    fn objects() -> Objects {
        Objects {
            stages: vec![
                stage("web", "fe-prod", "prod", "fe", &["fe-test"]),
                stage("web", "fe-test", "test", "fe", &["fe-dev"]),
                stage("web", "fe-dev", "dev", "fe", &[]),
                stage("api", "api-dev", "dev", "api", &[]),
            ],
            warehouses: vec![warehouse("web", "fe"), warehouse("api", "api")],
            applications: vec![],
        }
    }

    #[test]
    fn dot_output_filtered_to_one_project() {
        let dot = graph(&objects(), Some("web"), GraphFormat::Dot).unwrap();
        assert_eq!(
            dot,
            r#"digraph kiln {
  rankdir=LR;
  subgraph cluster_0 {
    label="project web";
    w0 [label="Warehouse\nfe", shape=cylinder];
    subgraph cluster_1 {
      label="dev";
      s0 [label="fe-dev\nhttps://git.example/a\"b.git@stage/dev\nfe-dev", shape=box];
    }
    subgraph cluster_2 {
      label="test";
      s1 [label="fe-test\nhttps://git.example/a\"b.git@stage/test\nfe-test", shape=box];
    }
    subgraph cluster_3 {
      label="prod";
      s2 [label="fe-prod\nhttps://git.example/a\"b.git@stage/prod\nfe-prod", shape=box];
    }
  }
  w0 -> s0;
  s0 -> s1;
  s1 -> s2;
}
"#
        );
        assert!(!dot.contains("api"), "--project keeps only its project");
    }

    #[test]
    fn mermaid_escapes_labels_and_is_deterministic() {
        let mut shuffled = objects();
        shuffled.stages.reverse();
        shuffled.warehouses.reverse();
        let a = graph(&objects(), None, GraphFormat::Mermaid).unwrap();
        assert_eq!(a, graph(&shuffled, None, GraphFormat::Mermaid).unwrap());
        assert!(
            a.starts_with("flowchart LR\n  subgraph g0[\"project api\"]\n"),
            "{a}"
        );
        assert!(
            a.contains("s1[\"fe-dev<br/>https://git.example/a#quot;b.git@stage/dev<br/>fe-dev\"]"),
            "{a}"
        );
        assert_eq!(mermaid_escape("a<b>&#\"c"), "a#lt;b#gt;#amp;#35;#quot;c");
        assert_eq!(dot_escape("a\\b\"c"), "a\\\\b\\\"c");
    }

    /// The SVG is drawn in process (no Graphviz), escapes labels, holds every Stage and
    /// Warehouse and what a Stage runs, and is the same bytes for the same objects.
    #[test]
    fn svg_is_drawn_natively_and_deterministically() {
        let mut shuffled = objects();
        shuffled.stages.reverse();
        let runs: BTreeMap<String, String> =
            [("web/fe-dev".to_string(), "fe 1.2.0".to_string())].into();
        let a = graph_with_runs(&objects(), None, GraphFormat::Svg, &runs).unwrap();
        assert_eq!(
            a,
            graph_with_runs(&shuffled, None, GraphFormat::Svg, &runs).unwrap()
        );
        assert!(a.starts_with("<svg"), "{a}");
        assert!(a.contains("runs fe 1.2.0"), "{a}");
        assert!(
            a.contains("a&quot;b.git") || a.contains("a&#34;b.git"),
            "{a}"
        );
        assert!(a.contains("Warehouse fe"), "{a}");
        assert!(!a.contains("<script"), "{a}");
    }

    #[test]
    fn unknown_project_is_an_error_naming_the_known_ones() {
        let err = graph(&objects(), Some("nope"), GraphFormat::Mermaid).unwrap_err();
        assert_eq!(
            err,
            GraphError::UnknownProject {
                project: "nope".into(),
                known: "api, web".into()
            }
        );
    }
}
