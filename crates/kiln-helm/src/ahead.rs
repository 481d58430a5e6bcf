//! Work done ahead, on the pool, for a render that may come to it first.
//!
//! Loading a chart hands what only needs the chart's files (parsing its templates,
//! compiling its values schemas) to a rayon job, while the loading thread goes on with
//! what must stay on it (values are `Rc`s: values.yaml, coalescing, execution). The render
//! later takes each result ([`Ahead::take`]): done, it is used; being done, it is waited
//! for; not started, the render does it itself, and the job skips it. A render waits only
//! on work a thread is doing at that moment, so nothing can deadlock, even when every pool
//! thread is busy rendering inside `kiln render` and the job never gets one.
//! (docs/adr/0012-parallel-template-parse.md)

use std::sync::{Condvar, Mutex, MutexGuard};

/// One piece of work, done once by whichever thread gets to it first.
pub struct Ahead<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

enum State<T> {
    /// Nobody has started it.
    Todo,
    /// A thread is doing it now; `waited` once a render waits for it. std's
    /// `Condvar::notify_all` is a futex system call whether or not anyone waits, and a
    /// chart's job finishes dozens of pieces that nobody waits for.
    Busy { waited: bool },
    /// Done ahead, not yet taken.
    Done(T),
    /// Taken by a render (or started by one): a later render does it anew.
    Taken,
}

impl<T> Default for Ahead<T> {
    fn default() -> Self {
        Ahead {
            state: Mutex::new(State::Todo),
            ready: Condvar::new(),
        }
    }
}

impl<T> Ahead<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic while holding the lock leaves a state that is still true.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The job's side: does `work` now unless some thread already has or is doing it.
    pub fn run(&self, work: impl FnOnce() -> T) {
        {
            let mut st = self.lock();
            if !matches!(*st, State::Todo) {
                return;
            }
            *st = State::Busy { waited: false };
        }
        // If `work` panics, the work goes back to `Todo` and waiters are woken: the render
        // then does it itself (and meets the same panic on its own thread) instead of
        // waiting for ever.
        struct Reset<'a, T>(&'a Ahead<T>);
        impl<T> Drop for Reset<'_, T> {
            fn drop(&mut self) {
                let was = std::mem::replace(&mut *self.0.lock(), State::Todo);
                if matches!(was, State::Busy { waited: true }) {
                    self.0.ready.notify_all();
                }
            }
        }
        let reset = Reset(self);
        let done = work();
        std::mem::forget(reset);
        let was = std::mem::replace(&mut *self.lock(), State::Done(done));
        if matches!(was, State::Busy { waited: true }) {
            self.ready.notify_all();
        }
    }

    /// The render's side: what was done ahead (waiting while a thread is doing it), or
    /// `None` when nobody had started it; then nobody will, and the caller does the work.
    pub fn take(&self) -> Option<T> {
        let mut st = self.lock();
        loop {
            match std::mem::replace(&mut *st, State::Taken) {
                State::Busy { .. } => {
                    *st = State::Busy { waited: true };
                    st = self.ready.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                State::Done(done) => return Some(done),
                State::Todo | State::Taken => return None,
            }
        }
    }

    /// Whether the work was done ahead and not yet taken.
    #[cfg(test)]
    pub fn is_done(&self) -> bool {
        matches!(*self.lock(), State::Done(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn work_is_done_once_by_whoever_comes_first() {
        // Not started: the taker does it; the job then skips it.
        let a: Ahead<u32> = Ahead::default();
        assert_eq!(a.take(), None);
        a.run(|| unreachable!("taken work is not done again by the job"));
        assert_eq!(a.take(), None);
        // Done ahead: taken once, then gone.
        let b: Ahead<u32> = Ahead::default();
        b.run(|| 7);
        assert!(b.is_done());
        assert_eq!(b.take(), Some(7));
        assert_eq!(b.take(), None);
    }

    #[test]
    fn a_taker_waits_for_work_in_progress() {
        for _ in 0..50 {
            let a: Arc<Ahead<usize>> = Arc::new(Ahead::default());
            let runs = Arc::new(AtomicUsize::new(0));
            let (a2, runs2) = (a.clone(), runs.clone());
            let job = std::thread::spawn(move || {
                a2.run(|| {
                    runs2.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    42
                })
            });
            // Either the job finished or is running (then this waits), or it has not
            // started (then this gets None and does the work itself).
            let got = a.take().unwrap_or_else(|| {
                runs.fetch_add(1, Ordering::SeqCst);
                42
            });
            job.join().unwrap();
            assert_eq!(got, 42);
            assert_eq!(runs.load(Ordering::SeqCst), 1, "done exactly once");
        }
    }

    /// The job wakes a taker that came while it was busy (it notifies only then: a
    /// notification nobody needs is a system call).
    #[test]
    fn a_taker_that_came_while_the_job_was_busy_is_woken() {
        let a: Arc<Ahead<u32>> = Arc::new(Ahead::default());
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let a2 = a.clone();
        let job = std::thread::spawn(move || {
            a2.run(|| {
                started_tx.send(()).unwrap();
                release_rx.recv().unwrap();
                42
            })
        });
        started_rx.recv().unwrap();
        // Released only once the taker is waiting (or about to: then it finds it done).
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            release_tx.send(()).unwrap();
        });
        assert_eq!(a.take(), Some(42));
        job.join().unwrap();
        releaser.join().unwrap();
        // Done and taken, with nobody waiting: the next one runs and is taken without a wait.
        let b: Ahead<u32> = Ahead::default();
        b.run(|| 1);
        assert_eq!(b.take(), Some(1));
    }

    #[test]
    fn a_panicking_job_leaves_the_work_to_the_taker() {
        let a: Arc<Ahead<u32>> = Arc::new(Ahead::default());
        let a2 = a.clone();
        let r = std::thread::spawn(move || a2.run(|| panic!("job failed"))).join();
        assert!(r.is_err());
        // Back to not started: the taker is not left waiting.
        assert_eq!(a.take(), None);
    }
}
