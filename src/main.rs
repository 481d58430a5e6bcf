//! The `kiln` binary: installs the error reporter, parses arguments, calls the library and
//! maps the outcome to an exit code (0 ok, 1 input errors, 2 usage (clap's, a missing default
//! platform, a source name no source has, and a `KILN_SOURCE_*` value that is not a number), 101 internal error, 130 or 143 when SIGINT or
//! SIGTERM stopped it (in every phase, the write's included);
//! `diff`/`verify`: 0 same, 1 different, 3 error; `status`: 0 in sync, 1 lagging or drifted, 3 error). Everything else lives in `kiln::cli` and the pipeline modules.
#![allow(clippy::disallowed_methods)] // the edge

use std::process::ExitCode;

/// mimalloc instead of the system allocator: a render allocates and frees millions of small
/// JSON values and strings, and glibc's malloc/free were about 20 % of its CPU (ADR 0009).
/// Only the binary sets it; the library leaves the choice to whoever links it.
#[global_allocator]
static GLOBAL: Alloc = Alloc;

/// mimalloc, called as C calls it where that suffices. The `mimalloc` crate's allocator sends
/// every request to `mi_malloc_aligned`/`mi_realloc_aligned`, whose alignment handling costs
/// about 30 instructions more per call than `mi_malloc`'s fast path (callgrind, a nats render:
/// 20,000 allocations). Every mimalloc block is word-aligned (its size classes are multiples
/// of the word), so a request aligned to a word or less needs nothing more; a larger
/// alignment keeps the aligned entry points.
struct Alloc;

/// The alignment every mimalloc block has.
const WORD: usize = std::mem::size_of::<usize>();

// SAFETY: each method passes the request to the mimalloc function made for it, with the
// alignment kept where it exceeds what every block has (`WORD`); `dealloc` frees any block
// of either kind (`mi_free` takes both).
unsafe impl std::alloc::GlobalAlloc for Alloc {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: plain C allocation calls; a null result is passed on as the failure.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: as `alloc`.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from this allocator (the trait's contract).
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: `ptr` came from this allocator with `layout` (the trait's contract); the
        // block keeps its alignment as `alloc` chose it.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

/// `kiln helm` and `kiln kustomize` render one chart or kustomization per process: this
/// thread joins rayon's pool as its first worker, so the render runs here (on the heap the
/// argument parse already warmed) and the pool starts one thread fewer. Left to its default,
/// the pool started a thread per core and this one waited on them: a thread created, and its
/// allocator heap's pages faulted in, for nothing (issue 37, ADR 0046).
fn engine_pool() {
    // Fails only if the global pool already exists: then it is used as it is.
    let _ = rayon::ThreadPoolBuilder::new()
        .use_current_thread()
        .build_global();
}

/// Ends a `kiln helm`/`kiln kustomize` that succeeded without the exit-time work nothing
/// reads: its output is flushed, then the process ends at once (`_exit`), skipping the
/// `atexit` handlers, among them mimalloc's `mi_process_done`, which walks and purges every
/// heap page the render touched (`madvise` per range; 2-4 % of the CPU of a chart's process,
/// issue 37, ADR 0049). The kernel takes the whole address space back either way. Nothing of
/// kiln's runs at exit: every file and temporary directory is closed or removed when its
/// owner drops, inside `run`. A failed flush (a closed pipe) exits as it did before, 0.
fn exit_now_if_success(code: ExitCode) -> ExitCode {
    use std::io::Write;
    if code != ExitCode::SUCCESS {
        return code;
    }
    if std::io::stdout().flush().is_err() {
        return code;
    }
    // SAFETY: `_exit` takes an integer and does not return; stdout is flushed above and
    // stderr is unbuffered, so no output is lost.
    unsafe { libc::_exit(0) }
}

fn main() -> ExitCode {
    kiln::cli::disable_transparent_huge_pages();
    kiln::cli::install_reporter();
    // clap exits with 2 on usage errors, as documented; so does a missing default platform.
    let args = match kiln::cli::parse() {
        Ok(args) => args,
        Err(e) => {
            kiln::cli::print_err(&format!("{:?}", miette::Report::new(e)));
            return ExitCode::from(2);
        }
    };
    let error_code = args.command.error_exit_code();
    let engine = matches!(
        args.command,
        kiln::cli::Command::Helm(_) | kiln::cli::Command::Kustomize(_)
    );
    if engine {
        engine_pool();
    }
    if let Err(report) = kiln::cli::set_network_timeouts(&args.command) {
        kiln::cli::print_err(&format!("{report:?}"));
        return ExitCode::from(kiln::cli::failure_exit_code(error_code, &report));
    }
    match kiln::cli::run(args) {
        Ok(code) if engine => exit_now_if_success(code),
        Ok(code) => code,
        Err(report) => {
            kiln::cli::print_err(&format!("{report:?}"));
            // Ctrl-C or a kill in the write step: ended by the signal, as in any other phase.
            kiln::cli::interrupted_exit(&report).unwrap_or_else(|| {
                ExitCode::from(kiln::cli::failure_exit_code(error_code, &report))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Alloc, WORD};
    use std::alloc::{GlobalAlloc, Layout};

    /// Every request gets a block with its alignment, word-aligned ones through `mi_malloc`
    /// and larger ones through the aligned calls, and `realloc` keeps contents and alignment.
    #[test]
    fn blocks_keep_their_alignment_and_contents() {
        let a = Alloc;
        for align in [1, 2, 4, WORD, 16, 64, 4096] {
            for size in [1, 3, 8, 13, 24, 40, 100, 1000, 70_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero sizes; each block is freed with the layout it was made by.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    for i in 0..size {
                        *p.add(i) = i as u8;
                    }
                    let grown = size * 3 + 5;
                    let q = a.realloc(p, layout, grown);
                    assert_eq!(q as usize % align, 0, "realloc {size} align {align}");
                    for i in 0..size {
                        assert_eq!(*q.add(i), i as u8);
                    }
                    a.dealloc(q, Layout::from_size_align(grown, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
