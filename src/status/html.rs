//! `kiln status -o html`: one self-contained page — inline CSS, the pipeline picture as inline
//! SVG, no script, no font, no link, nothing fetched — holding the status matrix and, per
//! cell, what ran there before (from which commit, when, by whom).
//!
//! Every cell is a `<td>` with `id="cell-<project>-<component>-<environment>"` and its state
//! in `data-state`, so a browser test (and a reader's search) finds each one. Text is escaped
//! here; the SVG comes escaped from `kargo::graph`.

use std::fmt::Write as _;

use super::{CellState, StatusReport};

/// Escapes text for HTML element content and double-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The id of a cell's `<td>`.
pub fn cell_id(project: &str, component: &str, environment: &str) -> String {
    format!("cell-{project}-{component}-{environment}")
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}\
td.inSync{background:#e8f6e8}td.lagging{background:#fff4d6}td.drifted{background:#fde2e2}td.notDeployed{color:#999}\
code{font-size:12px}details{margin:.2em 0}.pipeline{overflow:auto;border:1px solid #ddd;padding:.5em}\
.pipeline svg{max-width:100%;height:auto}#pipeline-full:checked~.pipeline svg{max-width:none}\
.problems li{margin:.2em 0}";

/// The page. `pipeline` is the SVG of `kiln graph` with what each Stage runs (empty without
/// Kargo); `title` names the platform. The SVG (with its `width`, `height` and `viewBox`)
/// scales down to the page's width (`max-width:100%`, `height:auto`): a wide platform is
/// drawn smaller, never cut off at the right. A checkbox (CSS only, the page runs no script)
/// shows it at full size instead, scrolling inside its box.
pub fn page(report: &StatusReport, pipeline: &str, title: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
         <title>kiln status: {t}</title><style>{STYLE}</style></head><body>\n<h1>kiln status: {t}</h1>\n",
        t = escape(title)
    );
    let in_sync = report.in_sync();
    let _ = writeln!(
        out,
        "<p id=\"summary\" data-in-sync=\"{in_sync}\">{} cells; {}</p>",
        report.cells.len(),
        if in_sync {
            "every deployed cell is in sync"
        } else {
            "some cells lag or drifted"
        }
    );
    let envs: Vec<&String> = report
        .environments
        .iter()
        .filter(|e| report.cells.iter().any(|c| &c.environment == *e))
        .collect();
    out.push_str("<h2>Deployed</h2>\n<table id=\"matrix\"><thead><tr><th>component</th>");
    for e in &envs {
        let _ = write!(out, "<th>{}</th>", escape(e));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in report.rows() {
        let _ = write!(out, "<tr><th>{}</th>", escape(&row));
        for e in &envs {
            let Some(c) = report.cell(&row, e) else {
                out.push_str("<td></td>");
                continue;
            };
            let state = serde_json::to_value(c.state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<td id=\"{}\" class=\"{state}\" data-state=\"{state}\" title=\"{}\">",
                escape(&cell_id(&c.project, &c.component, &c.environment)),
                escape(c.state.word())
            );
            let _ = write!(out, "<b>{}</b>", escape(&c.label()));
            if let Some(f) = &c.freight {
                let _ = write!(
                    out,
                    "<br><small>Freight <code>{}</code></small>",
                    escape(&short(f))
                );
            }
            if let (Some(commit), Some(time)) = (&c.write_commit, &c.time) {
                let _ = write!(
                    out,
                    "<br><small><code>{}</code> {}</small>",
                    escape(&short(commit)),
                    escape(&time.to_string())
                );
            }
            // The window of past writes, then the writer's last write when it lies further back
            // (hand edits came after it): what the cell's Freight and source commit are from.
            let older = c
                .promotion
                .as_ref()
                .filter(|p| c.history.iter().all(|w| w.commit != p.commit));
            if !c.history.is_empty() {
                let _ = write!(
                    out,
                    "<details><summary>history ({})</summary><ol>",
                    c.history.len()
                );
                for w in &c.history {
                    out.push_str(&write_item(w, ""));
                }
                if let Some(p) = older {
                    out.push_str(&write_item(p, "last promotion, earlier: "));
                }
                out.push_str("</ol></details>");
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    let problems: Vec<String> = report
        .cells
        .iter()
        .filter(|c| matches!(c.state, CellState::Lagging | CellState::Drifted))
        .map(|c| {
            let why = c
                .drift
                .clone()
                .or_else(|| c.lag.as_ref().map(|l| l.message.clone()))
                .unwrap_or_default();
            format!(
                "<li>{} {} in {}: {}</li>",
                escape(c.state.word()),
                escape(&c.row()),
                escape(&c.environment),
                escape(&why)
            )
        })
        .collect();
    if !problems.is_empty() {
        let _ = writeln!(out, "<ul class=\"problems\">{}</ul>", problems.join(""));
    }
    if !pipeline.is_empty() {
        let _ = writeln!(
            out,
            "<h2>Pipeline</h2>\n<input type=\"checkbox\" id=\"pipeline-full\"><label for=\"pipeline-full\">full size</label>\n<div class=\"pipeline\" id=\"pipeline\">{pipeline}</div>"
        );
    }
    out.push_str("</body></html>\n");
    out
}

/// One write as a list item: commit, time, author, summary, images and source commit.
fn write_item(w: &super::Write, lead: &str) -> String {
    let images: Vec<String> = w.images.iter().map(|i| i.reference.clone()).collect();
    format!(
        "<li>{}<code>{}</code> {} by {}: {}<br><small>{}{}</small></li>",
        escape(lead),
        escape(&short(&w.commit)),
        escape(&w.time.to_string()),
        escape(&w.author.name),
        escape(&w.summary),
        escape(&images.join(" ")),
        w.source_commit
            .as_ref()
            .map(|s| format!(" from {}", escape(&short(s))))
            .unwrap_or_default()
    )
}

/// The first 12 characters of an ID or commit read from a commit message, which may hold
/// any text (a byte slice could cut a character in two).
fn short(id: &str) -> String {
    id.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    /// A Freight name or source commit is read from a commit message, any text: shortened by
    /// characters, never by bytes (`aééééééé` cut at byte 12 panicked).
    #[test]
    fn ids_from_commit_messages_are_shortened_by_characters() {
        assert_eq!(super::short("aééééééééééééé"), "aééééééééééé");
        assert_eq!(super::short("0123456789abcdef"), "0123456789ab");
        assert_eq!(super::short("abc"), "abc");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            super::escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn a_promotion_older_than_the_listed_writes_is_shown_after_them() {
        use super::super::{Cell, CellState, StatusReport, Write, Writer};
        let write = |commit: &str, writer: Writer, summary: &str| Write {
            commit: commit.repeat(40),
            time: crate::git::Timestamp {
                seconds: 1_790_000_000,
                offset_minutes: 0,
            },
            author: crate::git::Identity {
                name: "someone".into(),
                email: "someone@example.com".into(),
            },
            summary: summary.into(),
            writer,
            stage: None,
            images: Vec::new(),
            freight: None,
            source_commit: None,
            app_commits: Vec::new(),
        };
        let hand = write("b", Writer::Other, "by hand");
        let mut cell = Cell {
            project: "p".into(),
            component: "c".into(),
            environment: "dev".into(),
            application: "p-c-dev".into(),
            repo_url: "https://example.com/deploy.git".into(),
            branch: "main".into(),
            path: "envs/dev/c".into(),
            stage: Some("p/c-dev".into()),
            state: CellState::InSync,
            images: Vec::new(),
            freight: None,
            source_commit: None,
            app_commits: Vec::new(),
            write_commit: Some(hand.commit.clone()),
            time: Some(hand.time),
            author: Some(hand.author.clone()),
            lag: None,
            drift: None,
            earlier_layout: None,
            history: vec![hand],
            promotion: Some(write("a", Writer::Promotion, "kiln: promote c to dev")),
            deployed: true,
        };
        let page = |cell: &Cell| {
            super::page(
                &StatusReport {
                    environments: vec!["dev".into()],
                    cells: vec![cell.clone()],
                },
                "",
                "t",
            )
        };
        let shown = page(&cell);
        assert!(
            shown.contains("last promotion, earlier: <code>aaaaaaaaaaaa</code>"),
            "{shown}"
        );
        // In the listed writes already: not repeated.
        cell.history.push(cell.promotion.clone().unwrap());
        assert!(!page(&cell).contains("last promotion, earlier"));
    }
}
