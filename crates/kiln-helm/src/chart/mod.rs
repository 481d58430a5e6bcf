//! A chart as Helm v4's `pkg/chart/v2` models it (`chart.go`, `file.go`, `dependency.go`):
//! Chart.yaml as read, values, the values.schema.json, templates, subcharts and every other
//! file as `.Files`. Loading it is [`loader`] (a directory, as `pkg/chart/v2/loader` walks
//! it), [`archive`] (a `.tgz`) and [`ignore`] (`.helmignore`).
//!
//! What only `.Files` reaches (a chart's README, changelog, tests, `files/`, `crds/`) is not
//! read at load: a chart directory keeps each such file's path, and the render reads it
//! through the same [`FileSystem`] on first use ([`FileData::Deferred`], [`read_deferred`]).
//! Most of them are never used (ingress-nginx: 183 of its 230 files), and reading them was
//! half of loading the chart. An archive is inflated whole, as before.

pub mod archive;
pub mod ignore;
pub mod loader;

use super::template::parse::{self, FuncId, Slot};
use super::template::value::Value;
use super::yaml;
use archive::MAX_FILE_SIZE;
use kiln_base::fs::{FileSystem, PlainKind};
use loader::strip_utf8_bom;
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

/// A loaded chart.
#[derive(Clone)]
pub struct Chart {
    /// Chart.yaml as read (plus `dependencies` from requirements.yaml for v1 charts).
    pub meta: Value,
    pub name: String,
    pub version: String,
    pub api_version: String,
    pub kind_library: bool,
    /// values.yaml (an empty map when absent).
    pub values: Value,
    /// values.schema.json; compiled on a pool thread as the chart loads ([`Schema`]).
    pub schema: Option<Arc<Schema>>,
    /// `templates/...` paths and texts, in load order; each text's parse is begun on a pool
    /// thread as the chart loads ([`Slot`]).
    pub templates: Vec<(String, Arc<Slot>)>,
    /// Every other file (crds/ included), in load order; shared with each render's
    /// `.Files` instead of copied. A chart directory's are not read yet ([`FileData`]).
    pub files: Rc<ChartFiles>,
    /// Subcharts found under charts/, in load order.
    pub subcharts: Vec<Chart>,
    /// The declared dependencies (Chart.yaml or requirements.yaml).
    pub deps: Vec<Dependency>,
    /// Where it came from, for errors.
    pub origin: String,
}

/// A chart's values.schema.json. Its syntax is checked at load (a load error, as kiln has
/// always reported it); the check of the values needs its JSON, so a pool job parses it
/// while the chart loads and renders ([`super::ahead`]): the loader takes the outcome at
/// the end of the chart's files (`Schema::syntax`), the check the document. jsonschema's
/// compile (its meta-schema check first) is left to the check, and to the values the
/// proof of [`crate::chartutil::schema::proof`] cannot vouch for: traefik's 181 KB schema
/// took 45 % of kiln's CPU for the chart to compile.
pub struct Schema {
    text: Arc<str>,
    syntax: super::ahead::Ahead<Result<(), String>>,
    parsed: super::ahead::Ahead<Result<serde_json::Value, String>>,
}

impl Schema {
    fn new(text: Arc<str>) -> Arc<Schema> {
        Arc::new(Schema {
            text,
            syntax: Default::default(),
            parsed: Default::default(),
        })
    }

    /// Whether the text is JSON, and serde_json's reason when it is not: as parsed ahead,
    /// or checked now without building the document.
    fn syntax(&self) -> Result<(), String> {
        self.syntax.take().unwrap_or_else(|| {
            // serde_json's skipping parser words some errors otherwise, so a failure is
            // parsed again for the message a full parse gives.
            if serde_json::from_str::<serde::de::IgnoredAny>(&self.text).is_ok() {
                return Ok(());
            }
            let e = serde_json::from_str::<serde_json::Value>(&self.text).err();
            Err(e.map_or_else(|| "not valid JSON".to_string(), |e| e.to_string()))
        })
    }

    /// The schema's document, or serde_json's reason it is none: the one parsed ahead, or
    /// parsed now. Each render takes its own.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        self.parsed
            .take()
            .unwrap_or_else(|| serde_json::from_str(&self.text).map_err(|e| e.to_string()))
    }

    /// The compiled schema, or jsonschema's reason it is not a valid one.
    pub fn validator(&self) -> Result<jsonschema::Validator, String> {
        Self::compile(&self.json()?)
    }

    /// jsonschema's compile of a schema document (its meta-schema check first).
    pub fn compile(json: &serde_json::Value) -> Result<jsonschema::Validator, String> {
        jsonschema::validator_for(json).map_err(|e| e.to_string())
    }

    /// The pool's side: parses the text once, for the loader's syntax check (which waits on
    /// it) and for the values check.
    fn parse_ahead(&self) {
        let mut json = None;
        self.syntax.run(
            || match serde_json::from_str::<serde_json::Value>(&self.text) {
                Ok(j) => {
                    json = Some(j);
                    Ok(())
                }
                // The loader's verdict is the skipping parser's, which lets through what
                // a full parse refuses (a lone surrogate): that is the check's error.
                Err(_) if serde_json::from_str::<serde::de::IgnoredAny>(&self.text).is_ok() => {
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            },
        );
        // A text the loader checked itself is parsed here for the check.
        self.parsed.run(|| match json {
            Some(j) => Ok(j),
            None => serde_json::from_str(&self.text).map_err(|e| e.to_string()),
        });
    }
}

/// A chart's `.Files`: each file's name inside the chart and its content, in load order.
#[derive(Clone, Debug, Default)]
pub struct ChartFiles(pub Vec<(String, FileData)>);

impl std::ops::Deref for ChartFiles {
    type Target = [(String, FileData)];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// A file's bytes as text, each invalid UTF-8 sequence replaced: what a CRD file prints as,
/// and what JSON and YAML make of the bytes (templates get Go's bytes: `encode::go_text`).
/// std's lossy conversion walks the bytes one by one; valid text, nearly every file,
/// goes through the word-at-a-time validator instead: traefik's CRDs took a sixth of its
/// render the other way.
pub fn lossy_text(d: &[u8]) -> String {
    match std::str::from_utf8(d) {
        Ok(t) => t.to_owned(),
        Err(_) => String::from_utf8_lossy(d).into_owned(),
    }
}

/// [`lossy_text`] of bytes that are the caller's to keep: valid text is not copied.
pub fn lossy_text_owned(d: Vec<u8>) -> String {
    String::from_utf8(d).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A chart file's content.
#[derive(Clone, Debug)]
pub enum FileData {
    /// Read at load (every file of an archive; a directory's files the loader uses).
    Loaded(Vec<u8>),
    /// A file of a chart directory that only `.Files` (or `--include-crds`) reaches: where
    /// to read it, through the file system the chart was loaded with, when a render first
    /// uses it ([`read_deferred`]). A file nobody uses is never read.
    Deferred(std::path::PathBuf),
}

/// Reads a [`FileData::Deferred`] file as the loader would have: at most 5 MiB, a UTF-8
/// byte order mark dropped. The error names the file (`name`, inside the chart) and, for an
/// I/O error, where it was read. Helm's loader refuses such a file when it loads the chart;
/// kiln only when a template reads it (tests/helm/DIVERGENCES.md).
pub fn read_deferred(fs: &dyn FileSystem, name: &str, real: &Path) -> Result<Vec<u8>, String> {
    match fs.read_at_most(real, MAX_FILE_SIZE) {
        Ok(Some(data)) => Ok(strip_utf8_bom(data)),
        Ok(None) => Err(format!(
            "chart file {name:?} is larger than the maximum file size {MAX_FILE_SIZE}"
        )),
        Err(e) => Err(format!(
            "cannot read chart file {name:?} ({}): {e}",
            real.display()
        )),
    }
}

#[derive(Clone, Debug)]
pub struct Dependency {
    pub name: String,
    pub version: String,
    pub alias: String,
    pub condition: String,
    pub tags: Vec<String>,
    pub import_values: Vec<Value>,
    pub repository: String,
}

/// A chart that cannot be loaded.
#[derive(Debug, Clone)]
pub struct LoadError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::{ignore::*, loader::*};

    /// The loader as the render calls it, with the engine's function names.
    fn load_with(fs: &dyn FileSystem, path: &Path) -> loader::R<Chart> {
        loader::load_with(fs, path, crate::engine::resolve)
    }

    fn load_archive(data: &[u8], shown: &str) -> loader::R<Chart> {
        archive::load_archive(data, shown, crate::engine::resolve)
    }

    /// The pre-pass hands the pool the schemas of the chart and of unpacked subcharts at
    /// any depth, and nothing else with that base name.
    #[test]
    fn schema_paths_are_the_charts_and_unpacked_subcharts() {
        for yes in [
            "values.schema.json",
            "charts/sub/values.schema.json",
            "charts/a/charts/b/values.schema.json",
        ] {
            assert!(is_schema_path(yes), "{yes}");
        }
        for no in [
            "templates/values.schema.json",
            "files/values.schema.json",
            "charts/values.schema.json",
            "charts/sub/files/values.schema.json",
            "values.schema.jsonx",
        ] {
            assert!(!is_schema_path(no), "{no}");
        }
    }

    /// What real Helm v4.2.3 answers (helm-python-sdk `Chart.load` with the rule as the
    /// whole .helmignore): `**` and malformed patterns fail the load; the rest load.
    #[test]
    fn helmignore_refuses_what_pkg_ignore_refuses() {
        let refused = [
            ("**/x", "double-star (**) syntax is not supported"),
            ("a[", "syntax error in pattern"),
            ("abc\\", "syntax error in pattern"),
            ("[]a", "syntax error in pattern"),
            ("[a-]", "syntax error in pattern"),
            ("![x", "syntax error in pattern"),
            ("x/[^", "syntax error in pattern"),
            ("[a-\\", "syntax error in pattern"),
            ("*[", "syntax error in pattern"),
        ];
        for (rule, want) in refused {
            match Ignore::parse(&format!("# a comment\n{rule}\n")) {
                Err(e) => assert_eq!(e, want, "{rule:?}"),
                Ok(_) => panic!("{rule:?} was accepted"),
            }
        }
        for rule in [
            "# **",
            "[^x]*.txt",
            "[!a]bc",
            "\\*x",
            "[a-c]?",
            "*.[ch]",
            "a/b/",
            "!keep",
            "[\\]]",
            "a]",
        ] {
            assert!(Ignore::parse(rule).is_ok(), "{rule:?}");
        }
        // `[!a]` is the class of `!` and `a` in filepath.Match: Go negates with `^` only.
        let r = Ignore::parse("[!a]bc\n").unwrap();
        assert!(r.ignored("abc", false) && r.ignored("!bc", false));
        assert!(!r.ignored("bbc", false));
        let r = Ignore::parse("[^a]bc\n").unwrap();
        assert!(!r.ignored("abc", false) && r.ignored("bbc", false));
    }

    #[test]
    fn files_glob_negates_with_a_bang_as_gobwas_does() {
        assert!(glob_match_double("[!a]bc", "bbc") && !glob_match_double("[!a]bc", "abc"));
        assert!(glob_match_double("[^a]bc", "^bc") && glob_match_double("[^a]bc", "abc"));
        assert!(!glob_match_double("[^a]bc", "bbc"));
    }

    /// One pool job per chart, schemas first (chart and unpacked subchart), then templates:
    /// once the job has parsed the (last) template, every schema was compiled before it.
    /// With a job per kind of work, the tiny template was parsed while the large schema
    /// was still compiling on the other pool thread.
    #[test]
    fn the_ahead_job_compiles_every_schema_before_it_parses() {
        let props: Vec<String> = (0..3000)
            .map(|i| format!("\"p{i}\": {{\"type\": \"string\", \"pattern\": \"^a{i}[0-9]+$\"}}"))
            .collect();
        let big = format!(
            "{{\"type\": \"object\", \"properties\": {{{}}}}}",
            props.join(", ")
        );
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
            .add_file("/c/values.schema.json", "{\"type\": \"object\"}")
            .add_file("/c/templates/t.yaml", "a: {{ .Values.a }}\n")
            .add_file(
                "/c/charts/sub/Chart.yaml",
                "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
            )
            .add_file("/c/charts/sub/values.schema.json", big.as_str());
        for _ in 0..5 {
            let c = load_with(&fs, Path::new("/c")).expect("loads");
            let slot = &c.templates[0].1;
            let mut waited = 0;
            while !slot.is_parsed_ahead() {
                assert!(waited < 30_000, "the template was never parsed ahead");
                std::thread::sleep(std::time::Duration::from_millis(1));
                waited += 1;
            }
            let sub = &c.subcharts[0];
            for s in [&c.schema, &sub.schema] {
                let s = s.as_ref().expect("a schema");
                assert!(s.parsed.is_done(), "a schema compiled after the templates");
            }
        }
    }

    /// The pool's parse of a schema gives the loader its syntax: once the job is done the
    /// loader's check takes that outcome instead of scanning the text again, and a broken
    /// schema gives the message of the loader's own check.
    #[test]
    fn a_schema_parsed_ahead_answers_the_loaders_syntax_check() {
        let good = Schema::new(Arc::from("{\"type\": \"object\"}"));
        good.parse_ahead();
        assert!(good.syntax.is_done() && good.parsed.is_done());
        assert_eq!(good.syntax(), Ok(()));
        assert!(!good.syntax.is_done(), "taken");
        let text = "{\"type\": \"object\",\n \"properties\": }";
        let bad = Schema::new(Arc::from(text));
        bad.parse_ahead();
        let ahead = bad.syntax();
        let own = Schema::new(Arc::from(text)).syntax();
        assert_eq!(ahead, own);
        assert_eq!(
            ahead.unwrap_err(),
            "expected value at line 2 column 16",
            "serde_json's message"
        );
        // What only a full parse refuses passes the loader either way (the render's
        // compile refuses it).
        let surrogate = r#"{"description": "\ud800"}"#;
        let s = Schema::new(Arc::from(surrogate));
        s.parse_ahead();
        assert_eq!(s.syntax(), Ok(()));
        assert!(s.validator().is_err());
        assert_eq!(Schema::new(Arc::from(surrogate)).syntax(), Ok(()));
    }

    /// Helm meets the schema where it is in load order: its error wins over a later file's
    /// (values.yaml) and over a subchart's, and loses to an earlier one's (Chart.yaml).
    #[test]
    fn a_broken_schema_is_the_error_where_it_is_in_load_order() {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
            .add_file("/c/values.schema.json", "{\"type\": ")
            .add_file("/c/values.yaml", "a: [\n")
            .add_file("/c/charts/sub/Chart.yaml", "name: [\n");
        let e = load_with(&fs, Path::new("/c")).err().expect("a load error");
        assert_eq!(e.file, "/c/values.schema.json", "{}", e.message);
        assert_eq!(e.message, "EOF while parsing a value at line 1 column 9");
        fs.add_file("/c/Chart.yaml", "name: [\n");
        let e = load_with(&fs, Path::new("/c")).err().expect("a load error");
        assert_eq!(e.file, "/c/Chart.yaml", "{}", e.message);
    }

    /// Valid text is taken as it is, invalid bytes replaced as std's lossy conversion does.
    #[test]
    fn lossy_text_is_stds_lossy_conversion() {
        for b in [
            &b"plain ascii"[..],
            "caf\u{e9} \u{1F600}".as_bytes(),
            b"bad \xff\xfe bytes \xe2\x82",
            b"",
        ] {
            let want = String::from_utf8_lossy(b).into_owned();
            assert_eq!(lossy_text(b), want);
            assert_eq!(lossy_text_owned(b.to_vec()), want);
        }
    }

    /// Less text than a thread's worth (`AHEAD_FOR_A_THREAD`) is left to the render, which
    /// parses each template as it reaches it: nothing is handed to the pool, so nothing
    /// parses the templates ahead, however long one waits.
    #[test]
    fn a_small_chart_is_parsed_by_its_render_not_ahead() {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
            .add_file("/c/values.schema.json", "{\"type\": \"object\"}")
            .add_file("/c/templates/a.yaml", "a: {{ .Values.a }}\n")
            .add_file("/c/templates/b.yaml", "b: {{ .Values.b }}\n");
        let c = load_with(&fs, Path::new("/c")).expect("loads");
        std::thread::sleep(std::time::Duration::from_millis(200));
        for (name, slot) in &c.templates {
            assert!(!slot.is_parsed_ahead(), "{name} was parsed ahead");
        }
        let schema = c.schema.as_ref().expect("a schema");
        assert!(!schema.parsed.is_done(), "the schema was compiled ahead");
    }

    /// The loader asks for the pool's threads (`kiln_base::pool::widen`) for a chart of many
    /// files before it reads them, for one of much text once read, and never for a small
    /// one. Calls are told apart by thread: other tests widen too (key generation).
    #[test]
    fn the_loader_widens_for_many_files_or_much_text() {
        use std::sync::Mutex;
        use std::thread::ThreadId;
        static CALLERS: Mutex<Vec<ThreadId>> = Mutex::new(Vec::new());
        fn record() {
            let me = std::thread::current().id();
            CALLERS.lock().unwrap_or_else(|e| e.into_inner()).push(me);
        }
        kiln_base::pool::set_widen(record);
        let widened_here = |fs: &kiln_base::fs::MemFs| {
            let me = std::thread::current().id();
            CALLERS.lock().unwrap_or_else(|e| e.into_inner()).clear();
            load_with(fs, Path::new("/c")).expect("loads");
            let callers = CALLERS.lock().unwrap_or_else(|e| e.into_inner());
            callers.contains(&me)
        };
        let chart = |files: usize, each: &str| {
            let mut fs = kiln_base::fs::MemFs::new();
            fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n");
            for i in 0..files {
                fs.add_file(format!("/c/templates/t{i}.yaml"), each);
            }
            fs
        };
        assert!(
            !widened_here(&chart(10, "a: {{ .Values.a }}\n")),
            "small chart"
        );
        assert!(
            widened_here(&chart(40, "a: {{ .Values.a }}\n")),
            "many files"
        );
        let long = "a: {{ .Values.a }}\n".repeat(4000);
        assert!(widened_here(&chart(2, &long)), "much text");
    }

    /// A small schema beside large templates waits for them: the render needs the trees
    /// when it starts and the schema only when it ends. Once the job has compiled the
    /// schema, every template was parsed ahead.
    #[test]
    fn a_small_schema_is_compiled_after_the_templates_are_parsed() {
        let big: String = (0..2000)
            .map(|i| format!("k{i}: {{{{ .Values.a | default \"x\" | quote }}}}\n"))
            .collect();
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
            .add_file("/c/values.schema.json", "{\"type\": \"object\"}")
            .add_file("/c/templates/a.yaml", big.as_str())
            .add_file("/c/templates/b.yaml", big.as_str());
        for _ in 0..5 {
            let c = load_with(&fs, Path::new("/c")).expect("loads");
            let schema = c.schema.as_ref().expect("a schema");
            let mut waited = 0;
            while !schema.parsed.is_done() {
                assert!(waited < 30_000, "the schema was never compiled ahead");
                std::thread::sleep(std::time::Duration::from_millis(1));
                waited += 1;
            }
            for (name, slot) in &c.templates {
                assert!(slot.is_parsed_ahead(), "{name} parsed after the schema");
            }
        }
    }

    /// A file the loader reads (a template) over 5 MiB fails the load, as in Helm; a file
    /// only `.Files` reaches is not read at load, so it fails the render that reads it.
    #[test]
    fn files_over_five_mib_fail_the_load_as_in_helm() {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
            .add_file("/c/big.bin", "x".repeat(5 * 1024 * 1024 + 1))
            .add_file("/c/fits.bin", "x".repeat(5 * 1024 * 1024));
        let c = load_with(&fs, Path::new("/c")).expect("`.Files` is read when used");
        let big = c.files.iter().find(|(n, _)| n == "big.bin").unwrap();
        let FileData::Deferred(real) = &big.1 else {
            panic!("read at load")
        };
        assert_eq!(
            read_deferred(&fs, "big.bin", real).unwrap_err(),
            "chart file \"big.bin\" is larger than the maximum file size 5242880"
        );
        let fits = c.files.iter().find(|(n, _)| n == "fits.bin").unwrap();
        assert_eq!(contents(&fs, fits).len(), 5 * 1024 * 1024);
        fs.add_file("/c/templates/big.yaml", "x".repeat(5 * 1024 * 1024 + 1));
        let e = load_with(&fs, Path::new("/c"))
            .err()
            .expect("a template over 5 MiB is refused");
        assert_eq!(
            e.message,
            "chart file \"big.yaml\" is larger than the maximum file size 5242880"
        );
    }

    fn tgz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn archives_keep_every_file_and_have_helms_size_limits() {
        // Helm's archive loader applies no .helmignore and no hidden-template default.
        let data = tgz(&[
            ("c/Chart.yaml", b"apiVersion: v2\nname: c\nversion: 1.0.0\n"),
            ("c/.helmignore", b"notes.txt\n"),
            ("c/notes.txt", b"kept"),
            ("c/templates/.hidden.yaml", b"kind: ConfigMap\n"),
        ]);
        let c = load_archive(&data, "c.tgz").unwrap();
        let files: Vec<&str> = c.files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(files, [".helmignore", "notes.txt"]);
        assert_eq!(c.templates.len(), 1);
        let big = vec![b'x'; 5 * 1024 * 1024 + 1];
        let data = tgz(&[
            ("c/Chart.yaml", b"apiVersion: v2\nname: c\nversion: 1.0.0\n"),
            ("c/big.bin", &big),
        ]);
        let e = load_archive(&data, "c.tgz").err().expect("refused");
        assert_eq!(
            e.message,
            "decompressed chart file \"c/big.bin\" is larger than the maximum file size 5242880"
        );
    }

    /// The loader frees each template's and schema's file buffer once its text is in its
    /// slot (issue 37, ADR 0049): the texts are whole, in the chart and in a subchart, and
    /// the one template path filed as `.Files` (a subchart's `.prov`) keeps its bytes.
    #[test]
    fn freed_file_buffers_leave_templates_schemas_and_files_whole() {
        let data = tgz(&[
            ("c/Chart.yaml", b"apiVersion: v2\nname: c\nversion: 1.0.0\n"),
            ("c/templates/cm.yaml", b"kind: ConfigMap\n"),
            ("c/values.schema.json", b"{\"type\": \"object\"}"),
            (
                "c/charts/s/Chart.yaml",
                b"apiVersion: v2\nname: s\nversion: 1.0.0\n",
            ),
            ("c/charts/s/templates/sub.yaml", b"kind: Secret\n"),
            (
                "c/charts/s/values.schema.json",
                b"{\"type\": \"object\", \"required\": []}",
            ),
            ("c/charts/s/templates/sig.prov", b"signed"),
        ]);
        let c = load_archive(&data, "c.tgz").unwrap();
        let text = |ch: &Chart| -> Vec<String> {
            ch.templates
                .iter()
                .map(|(_, s)| s.text().to_string())
                .collect()
        };
        assert_eq!(text(&c), ["kind: ConfigMap\n"]);
        assert_eq!(text(&c.subcharts[0]), ["kind: Secret\n"]);
        assert_eq!(&*c.schema.as_ref().unwrap().text, "{\"type\": \"object\"}");
        assert_eq!(
            &*c.subcharts[0].schema.as_ref().unwrap().text,
            "{\"type\": \"object\", \"required\": []}"
        );
        let prov = c.files.iter().find(|(n, _)| n.ends_with("sig.prov"));
        assert!(
            matches!(prov, Some((_, FileData::Loaded(d))) if d == b"signed"),
            "{:?}",
            c.files.iter().map(|(n, _)| n).collect::<Vec<_>>()
        );
    }

    #[test]
    fn globs_like_go() {
        assert!(glob_match("*.tgz", "a.tgz"));
        assert!(!glob_match("*.yaml", "a/b.yaml"));
        assert!(glob_match("files/*.conf", "files/x.conf"));
        assert!(glob_match("[a-c]?", "bz"));
        assert!(glob_match("templates/.?*", "templates/.hidden"));
        assert!(glob_match_double("files/**.yaml", "files/a/b.yaml"));
        assert!(glob_match_double("{a,b}/*", "b/x"));
    }

    /// A `.Files` file's content, read as a render reads it.
    fn contents(fs: &dyn FileSystem, (name, data): &(String, FileData)) -> Vec<u8> {
        match data {
            FileData::Loaded(d) => d.clone(),
            FileData::Deferred(real) => read_deferred(fs, name, real).unwrap(),
        }
    }

    fn chart_tree() -> kiln_base::fs::MemFs {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file(
            "/repo/chart/Chart.yaml",
            "apiVersion: v2\nname: c\nversion: 1.0.0\n",
        )
        .add_file("/repo/chart/templates/cm.yaml", "kind: ConfigMap\n")
        .add_file("/repo/shared/common.conf", "inside the root\n")
        .add_file("/outside/secret.conf", "outside the root\n");
        fs
    }

    /// Links are followed as Helm follows them (a file shared from elsewhere in the
    /// repository is part of the chart); the rooted view of `kiln render` refuses one that
    /// leaves the repository root, with an error naming the file, instead of dropping it.
    #[test]
    fn symlinks_are_followed_inside_the_root_and_refused_outside() {
        use kiln_base::fs::RootedFs;
        let mut fs = chart_tree();
        fs.add_symlink("/repo/chart/files/common.conf", "../../shared/common.conf");
        let rooted = RootedFs::new(&fs, "/repo");
        let c = load_with(&rooted, Path::new("/repo/chart")).unwrap();
        let got: Vec<&str> = c.files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(got, ["files/common.conf"]);
        assert_eq!(contents(&rooted, &c.files[0]), b"inside the root\n");

        fs.add_symlink("/repo/chart/files/secret.conf", "/outside/secret.conf");
        let rooted = RootedFs::new(&fs, "/repo");
        let e = load_with(&rooted, Path::new("/repo/chart")).err().unwrap();
        assert!(
            e.message.contains("files/secret.conf")
                && e.message.contains("outside the repository root"),
            "{}",
            e.message
        );
        // A linked directory out of the root is refused the same way.
        let mut fs = chart_tree();
        fs.add_symlink("/repo/chart/files", "/outside");
        let rooted = RootedFs::new(&fs, "/repo");
        let e = load_with(&rooted, Path::new("/repo/chart")).err().unwrap();
        assert!(
            e.message.contains("outside the repository root"),
            "{}",
            e.message
        );
    }

    #[test]
    fn symlink_cycles_and_dangling_links_are_errors() {
        let mut fs = chart_tree();
        fs.add_symlink("/repo/chart/files/again", "..");
        let e = load_with(&fs, Path::new("/repo/chart")).err().unwrap();
        assert!(
            e.message.contains("files/again: a symbolic link cycle"),
            "{}",
            e.message
        );
        let mut fs = chart_tree();
        fs.add_symlink("/repo/chart/files/gone.conf", "nowhere.conf");
        let e = load_with(&fs, Path::new("/repo/chart")).err().unwrap();
        assert!(
            e.message
                .contains("error evaluating symlink files/gone.conf"),
            "{}",
            e.message
        );
    }

    /// The same on the real disk, where plain entries skip resolving (`plain_kind`):
    /// nested plain directories, a linked file and a linked directory are read, a link back
    /// up is a cycle, a dangling link an error.
    #[cfg(unix)]
    #[test]
    fn real_disk_charts_follow_links_and_catch_cycles() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("shared/dir")).unwrap();
        std::fs::write(root.join("shared/common.conf"), "c\n").unwrap();
        std::fs::write(root.join("shared/dir/x.txt"), "x\n").unwrap();
        let chart = root.join("chart");
        std::fs::create_dir_all(chart.join("files/deep/er")).unwrap();
        std::fs::create_dir_all(chart.join("templates")).unwrap();
        std::fs::write(
            chart.join("Chart.yaml"),
            "apiVersion: v2\nname: c\nversion: 1.0.0\n",
        )
        .unwrap();
        std::fs::write(chart.join("templates/a.yaml"), "a: 1\n").unwrap();
        std::fs::write(chart.join("files/deep/er/z.txt"), "z\n").unwrap();
        symlink("../../shared/common.conf", chart.join("files/common.conf")).unwrap();
        symlink("../../shared/dir", chart.join("files/linked")).unwrap();
        let fs = kiln_base::fs::RealFs;
        let c = load_with(&fs, &chart).unwrap();
        let got: Vec<(&str, Vec<u8>)> = c
            .files
            .iter()
            .map(|f| (f.0.as_str(), contents(&fs, f)))
            .collect();
        assert_eq!(
            got,
            [
                ("files/common.conf", b"c\n".to_vec()),
                ("files/deep/er/z.txt", b"z\n".to_vec()),
                ("files/linked/x.txt", b"x\n".to_vec()),
            ]
        );
        assert_eq!(c.templates.len(), 1);

        symlink("../..", chart.join("files/deep/up")).unwrap();
        let e = load_with(&fs, &chart).err().unwrap();
        assert!(
            e.message.contains("files/deep/up: a symbolic link cycle"),
            "{}",
            e.message
        );
        std::fs::remove_file(chart.join("files/deep/up")).unwrap();
        symlink("nowhere", chart.join("files/gone.conf")).unwrap();
        let e = load_with(&fs, &chart).err().unwrap();
        assert!(
            e.message
                .contains("error evaluating symlink files/gone.conf"),
            "{}",
            e.message
        );
    }

    /// The compiled shapes (exact, `*suffix`) answer as the general matcher does.
    #[test]
    fn compiled_patterns_match_as_filepath_match() {
        let patterns = [
            ".DS_Store",
            "*.tmp",
            "*~",
            "*",
            "",
            "a/b",
            "*/x",
            "*.[ch]",
            "t?st",
            "\\*x",
            "*é",
        ];
        let names = [
            ".DS_Store",
            "x.tmp",
            "a/x.tmp",
            ".tmp",
            "tmp",
            "f~",
            "a/f~",
            "",
            "a/b",
            "a/x",
            "b.c",
            "test",
            "*x",
            "café",
            "a/café",
            "x.tmp/",
        ];
        for p in patterns {
            for n in names {
                assert_eq!(
                    Matcher::new(p).matches(n),
                    glob_match(p, n),
                    "{p:?} against {n:?}"
                );
            }
        }
        assert!(matches!(Matcher::new("*.tmp"), Matcher::Suffix(_)));
        assert!(matches!(Matcher::new(".git"), Matcher::Exact(_)));
        assert!(glob_match("*é", "café") && !glob_match("*.tmp", "a/x.tmp"));
    }

    #[test]
    fn helmignore_rules() {
        let r = Ignore::parse("# c\n.git/\n*.tmp\n/ci\n").unwrap();
        assert!(r.ignored(".git", true));
        assert!(!r.ignored(".git", false));
        assert!(r.ignored("x/y.tmp", false));
        assert!(r.ignored("ci", true));
        assert!(!r.ignored("x/ci", true));
    }
}
