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
static GLOBAL: alloc::Alloc = alloc::Alloc;

mod alloc;

/// `kiln helm` and `kiln kustomize` render one chart or kustomization per process: this
/// thread joins a rayon pool as its first worker, so the render runs here (on the heap the
/// argument parse already warmed). Left to its default, the pool started a thread per core
/// and this one waited on them: a thread created, and its allocator heap's pages faulted
/// in, for nothing (issue 37, ADR 0046).
///
/// The pool's other threads start only when the engine has work for them
/// (`kiln_base::pool::widen`): until then their jobs wait in this thread's queue. A small
/// chart never starts one (ADR 0055). The pool is this thread's from here on (rayon's calls
/// on it use it); it is not the global pool, whose `build_global` waits for every thread to
/// start.
fn engine_pool() -> Option<rayon::ThreadPool> {
    let pool = rayon::ThreadPoolBuilder::new()
        .use_current_thread()
        .spawn_handler(|thread| {
            WAITING
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(thread);
            Ok(())
        })
        .build()
        .ok()?;
    kiln_base::pool::set_widen(start_waiting_threads);
    Some(pool)
}

/// The pool's threads not started yet (`engine_pool`).
static WAITING: std::sync::Mutex<Vec<rayon::ThreadBuilder>> = std::sync::Mutex::new(Vec::new());

/// Starts the threads `engine_pool` kept waiting. A thread that cannot be started leaves
/// its share of the work to the others: rayon's jobs wait in a queue any worker takes from.
fn start_waiting_threads() {
    let waiting = std::mem::take(&mut *WAITING.lock().unwrap_or_else(|e| e.into_inner()));
    for thread in waiting {
        let _ = std::thread::Builder::new()
            .name("kiln-worker".into())
            .spawn(move || thread.run());
    }
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
    // Kept for the rest of the process: dropping it would end its threads.
    let _pool = if engine { engine_pool() } else { None };
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
    use super::*;
    use std::time::Duration;

    /// The pool's other threads wait until an engine widens: a job handed out before that
    /// sits in this thread's queue, and one of them takes it once started.
    #[test]
    fn the_engine_pool_starts_its_threads_when_an_engine_widens() {
        let pool = engine_pool().expect("a pool");
        let n = pool.current_num_threads();
        let waiting = || WAITING.lock().unwrap_or_else(|e| e.into_inner()).len();
        assert_eq!(waiting(), n - 1, "no thread started with the pool");
        if n < 2 {
            return; // One core: the pool is this thread, there is nothing to start.
        }
        let (tx, rx) = std::sync::mpsc::channel();
        rayon::spawn(move || {
            let _ = tx.send(rayon::current_thread_index());
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "a job ran before any thread was started"
        );
        kiln_base::pool::widen();
        assert_eq!(waiting(), 0);
        let ran_on = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the job ran");
        assert_ne!(ran_on, Some(0), "run by a started thread, not this one");
    }
}
