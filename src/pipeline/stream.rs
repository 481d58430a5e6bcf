//! `kiln render`'s files streamed into the write (issue 38, item 8): each piece of
//! BuildPlans, once rendered, hands its files to a [`crate::write::Writer`], which stages
//! the new and changed ones at once, and keeps only their paths; the Kargo and Argo CD
//! files follow a piece at a time as they are generated ([`Stream::take_pieces`]), then the
//! prune and the commit. At 100,000 BuildPlans the
//! rendered bytes (637 MB of file content in 220,502 files) were all held until the write.
//!
//! What the render reports about the bytes (their digests for the journal, the Secrets,
//! the Kargo expressions left in manifests) is taken on the worker that rendered them
//! ([`scan`]). The result is the write of the whole set: the same tree, report and
//! journal, the same errors in the same precedence (a write error found while streaming
//! waits for the render's own errors, which come first; only SIGINT and SIGTERM stop the
//! render, once the piece being rendered is done).
//!
//! A piece is written while the next one renders: the render hands it over as a [`Piece`]
//! (owned paths and bytes, [`Stream::collect`]) and [`Stream::write`] stages it on a thread of
//! its own during the next piece's render (`super::PlanRenderer::feed`), so the write's system
//! time (creating 220,502 files at 10,000 × 10) runs beside the render's CPU instead of
//! after each piece, with both cores idle but one.

use crate::kargo::expressions::ExpressionInManifest;
use crate::resource::Resource;
use crate::write::{Known, WriteError, Writer};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// What [`scan`] took from one plan's files.
#[derive(Debug, Default)]
pub(super) struct Scanned {
    /// Each file's SHA-256 (hex), in the files' order; empty when no journal is kept.
    digests: Vec<String>,
    pub(super) secrets: Vec<(String, String)>,
    expressions: Vec<ExpressionInManifest>,
}

/// The digests (when `digests`), Secrets and Kargo expressions of `files`. `rendered`, when
/// given, holds the resources the `.gen.yaml` among them was printed from (as
/// [`crate::conform::Validation::check_plan`] takes them): its Secrets are read from them.
pub(super) fn scan(
    files: &[(String, Vec<u8>)],
    digests: bool,
    rendered: Option<&[Resource]>,
) -> Scanned {
    let mut out = Scanned::default();
    for (path, bytes) in files {
        if digests {
            out.digests.push(kiln_base::digest::sha256_hex(bytes));
        }
        out.secrets.extend(match rendered {
            Some(resources) if path.ends_with(".gen.yaml") => {
                super::secrets_of_resources(path, resources)
            }
            _ => super::secrets_of_file(path, bytes),
        });
        crate::kargo::expressions::scan_file(path, bytes, &mut out.expressions);
    }
    out
}

/// A render's write, fed as it renders (see the module docs).
pub(super) struct Stream<'a> {
    writer: Writer<'a>,
    /// Each file's digest, when a journal will be stored.
    digests: Option<BTreeMap<String, String>>,
    secrets: Vec<(String, String)>,
    expressions: Vec<ExpressionInManifest>,
    /// The first write error: later files are dropped, and the error is reported once the
    /// render succeeded (an interrupt stops the render at once, see [`Stream::stopped`]).
    failed: Option<WriteError>,
    /// The target was checked ([`Stream::start`]).
    started: bool,
    /// Time spent taking files (comparing and staging them) while nothing else ran.
    spent: std::time::Duration,
    /// Time spent staging pieces while the next piece rendered.
    overlapped: std::time::Duration,
}

/// One piece's files, owned, in path order, for [`Stream::write`]: the render has moved on.
#[derive(Debug, Default)]
pub(super) struct Piece {
    files: Vec<(String, Vec<u8>, Option<String>)>,
    secrets: Vec<(String, String)>,
    expressions: Vec<ExpressionInManifest>,
}

impl Piece {
    /// `files` (each a file on its own, as the Kargo and Argo CD files come), scanned on
    /// rayon's pool.
    fn of_files(files: Vec<(String, Vec<u8>)>, digests: bool) -> Piece {
        use rayon::prelude::*;
        let scanned: Vec<Scanned> = files
            .par_iter()
            .map(|f| scan(std::slice::from_ref(f), digests, None))
            .collect();
        let mut piece = Piece::default();
        for ((path, bytes), scanned) in files.into_iter().zip(scanned) {
            piece.secrets.extend(scanned.secrets);
            piece.expressions.extend(scanned.expressions);
            let digest = scanned.digests.into_iter().next();
            piece.files.push((path, bytes, digest));
        }
        // In path order, each directory of the piece is opened once.
        piece.files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        piece
    }

    /// The paths of the piece, in path order.
    #[cfg(test)]
    pub(super) fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.0.as_str())
    }
}

impl<'a> Stream<'a> {
    /// A write into `out`, with what the last write left (`known`); `digests`: take each
    /// file's digest (for the journal).
    pub(super) fn new(out: &Path, known: Known<'a>, digests: bool) -> Self {
        Stream {
            writer: Writer::new(out, known),
            digests: digests.then(BTreeMap::new),
            secrets: Vec::new(),
            expressions: Vec::new(),
            failed: None,
            started: false,
            spent: Default::default(),
            overlapped: Default::default(),
        }
    }

    /// Whether files are scanned for digests too.
    pub(super) fn digests(&self) -> bool {
        self.digests.is_some()
    }

    /// Refuses a target whose pruning would touch the sources
    /// ([`crate::write::check_target`]), before anything is staged.
    pub(super) fn start(&mut self, out: &Path, platform: &crate::validate::Platform) {
        if self.started {
            return;
        }
        self.started = true;
        let sources = super::source_dirs(platform);
        if let Err(e) = crate::write::check_target(out, &platform.root, &sources) {
            self.failed.get_or_insert(e);
        }
    }

    /// SIGINT or SIGTERM arrived while files were staged: the render stops (the staged
    /// files are removed when the stream is dropped).
    pub(super) fn stopped(&self) -> bool {
        matches!(self.failed, Some(WriteError::Interrupted { .. }))
    }

    /// The error of [`Stream::stopped`], taken.
    pub(super) fn interrupted(&mut self) -> Option<WriteError> {
        self.stopped().then(|| self.failed.take()).flatten()
    }

    /// The time spent comparing and staging files so far while nothing else ran, and
    /// while the render went on.
    pub(super) fn spent(&self) -> (std::time::Duration, std::time::Duration) {
        (self.spent, self.overlapped)
    }

    /// One piece's files, each plan's with what [`scan`] found in them, owned for
    /// [`Stream::write`]: the bytes are moved out (left empty), the paths copied. Cheap: no
    /// I/O, no copy of the bytes.
    pub(super) fn collect<'p>(
        plans: impl Iterator<Item = (&'p mut Vec<(String, Vec<u8>)>, Scanned)>,
    ) -> Piece {
        let mut piece = Piece::default();
        for (files, scanned) in plans {
            piece.secrets.extend(scanned.secrets);
            piece.expressions.extend(scanned.expressions);
            let mut digests = scanned.digests.into_iter();
            for (path, bytes) in files.iter_mut() {
                piece
                    .files
                    .push((path.clone(), std::mem::take(bytes), digests.next()));
            }
        }
        // The pieces come in plan order (a component's environments together); in path
        // order, each directory of the piece is opened once.
        piece.files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        piece
    }

    /// Compares and stages `piece`'s files; `overlapped`: while the render goes on (its
    /// time is the write's, not taken from the render's).
    pub(super) fn write(&mut self, piece: Piece, overlapped: bool) {
        let t = std::time::Instant::now();
        self.secrets.extend(piece.secrets);
        self.expressions.extend(piece.expressions);
        for (path, bytes, digest) in piece.files {
            if self.failed.is_none()
                && let Err(e) = self.writer.add(&path, &bytes, digest.as_deref())
            {
                self.failed = Some(e);
            }
            if let (Some(all), Some(d)) = (&mut self.digests, digest) {
                all.insert(path, d);
            }
        }
        match overlapped {
            true => self.overlapped += t.elapsed(),
            false => self.spent += t.elapsed(),
        }
    }

    /// Takes the files of `set` (every file of a render that was not streamed), scanned on
    /// rayon's pool.
    pub(super) fn take_set(&mut self, set: crate::artifact::ArtifactSet) {
        let piece = Piece::of_files(set.files.into_iter().collect(), self.digests());
        self.write(piece, false);
    }

    /// Takes the files `generate` hands to its callback a piece at a time (the Kargo and
    /// Argo CD files, [`crate::emit::emit_each`]), and returns what `generate` returns. Each
    /// piece is staged on a thread of its own while the next one is generated, so at most a
    /// piece waits and a piece is staged while one is made (at 10,000 × 10 the 350 MB of
    /// these files were held whole until the write, the generation on one thread). The
    /// callback breaks once SIGINT or SIGTERM stopped the write ([`Stream::stopped`]).
    pub(super) fn take_pieces<R>(
        &mut self,
        generate: impl FnOnce(&mut dyn FnMut(Vec<(String, Vec<u8>)>) -> ControlFlow<()>) -> R,
    ) -> R {
        let digests = self.digests();
        let stopped = AtomicBool::new(self.stopped());
        std::thread::scope(|s| {
            // One piece waits while one is staged: no more are made meanwhile.
            let (tx, rx) = std::sync::mpsc::sync_channel::<Piece>(1);
            let (stream, stopped) = (&mut *self, &stopped);
            let writing = s.spawn(move || {
                for piece in rx {
                    stream.write(piece, true);
                    if stream.stopped() {
                        stopped.store(true, Ordering::SeqCst);
                    }
                }
            });
            let out = generate(&mut |files| {
                if stopped.load(Ordering::SeqCst) {
                    return ControlFlow::Break(());
                }
                // Fails only when the writing thread panicked, which its join resumes.
                match tx.send(Piece::of_files(files, digests)) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(_) => ControlFlow::Break(()),
                }
            });
            drop(tx);
            if let Err(panic) = writing.join() {
                std::panic::resume_unwind(panic);
            }
            out
        })
    }

    /// The bytes of a file given earlier (see [`Writer::read_back`]).
    pub(super) fn read_back(&self, path: &str) -> Option<Vec<u8>> {
        self.writer.read_back(path)
    }

    /// Every path given, in path order.
    pub(super) fn paths(&self) -> impl Iterator<Item = &str> {
        self.writer.paths()
    }

    /// The Secrets found, as [`super::secrets_by_file`] lists them (in path order).
    pub(super) fn secrets(&self) -> Vec<(String, String)> {
        let mut s = self.secrets.clone();
        s.sort_by(|a, b| a.0.cmp(&b.0));
        s
    }

    /// Ends the stream: its error if one came, else the writer, the digests, the Secrets
    /// and the expressions (each in path order).
    #[allow(clippy::type_complexity)]
    pub(super) fn end(
        self,
    ) -> Result<
        (
            Writer<'a>,
            Option<BTreeMap<String, String>>,
            Vec<(String, String)>,
            Vec<ExpressionInManifest>,
        ),
        WriteError,
    > {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let secrets = self.secrets();
        let mut expressions = self.expressions;
        expressions.sort_by(|a, b| a.file.cmp(&b.file));
        Ok((self.writer, self.digests, secrets, expressions))
    }
}
