//! The worker threads the matrix products are split across, started once
//! and kept: generating one token runs about a hundred products (q/k/v,
//! the output projection, gate/up and down in every layer, then the
//! vocabulary), each a few hundred microseconds of work on two cores, so a
//! thread spawned and joined per product cost a measurable share of each
//! token (docs/BENCHMARKS-LOG.md item 39). A worker spins for a short
//! while after each job, so the next product of the same token finds it
//! awake, then parks.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long an idle worker spins before it parks: longer than the glue
/// between two products of one token (norms, attention), far shorter than
/// a pause between requests.
const SPIN: Duration = Duration::from_micros(300);

/// A job as the workers see it: the caller's closure with its lifetime
/// erased. [`Pool::run`] does not return before every worker is done with
/// it, so the closure outlives every use.
#[derive(Clone, Copy)]
struct Job {
    f: *const (dyn Fn(usize) + Sync),
    parts: usize,
}

// SAFETY: the pointer is only dereferenced while `Pool::run` keeps the
// closure (which is `Sync`) alive, see `Job`.
#[allow(unsafe_code)]
unsafe impl Send for Job {}

struct Shared {
    /// Bumped for each job; a worker runs each epoch once.
    epoch: AtomicU64,
    job: Mutex<Option<Job>>,
    wake: Condvar,
    /// Workers still running the current job.
    pending: AtomicUsize,
    /// A worker's part panicked during the current job.
    panicked: AtomicBool,
}

/// A fixed set of worker threads; [`Pool::run`] splits one job across them
/// and the calling thread.
pub(crate) struct Pool {
    shared: Arc<Shared>,
    workers: usize,
    /// One job at a time: two models in one process take turns.
    turn: Mutex<()>,
}

/// A part of a job panicked: its outputs were not written.
#[derive(Debug)]
pub(crate) struct Panicked;

impl Pool {
    fn new(workers: usize) -> Pool {
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            job: Mutex::new(None),
            wake: Condvar::new(),
            pending: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
        });
        let mut started = 0;
        for i in 0..workers {
            let s = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name(format!("mnemo-llm-{}", i + 1))
                .spawn(move || work(&s, i + 1));
            // Without a thread the pool still runs every part, on fewer.
            if spawned.is_ok() {
                started += 1;
            }
        }
        Pool {
            shared,
            workers: started,
            turn: Mutex::new(()),
        }
    }

    /// Threads a job runs on: the workers and the caller.
    pub(crate) fn threads(&self) -> usize {
        self.workers + 1
    }

    /// Runs `f(0)` .. `f(parts - 1)`, part 0 on the calling thread and part
    /// `i` on worker `i`; returns once every part has returned. `parts` is
    /// at most [`Pool::threads`]; parts past it are run by the caller. A
    /// part must not run a job of its own (the pool runs one at a time).
    pub(crate) fn run(&self, parts: usize, f: &(dyn Fn(usize) + Sync)) -> Result<(), Panicked> {
        let on_workers = parts.saturating_sub(1).min(self.workers);
        if on_workers == 0 {
            return catch_unwind(AssertUnwindSafe(|| (0..parts).for_each(f))).map_err(|_| Panicked);
        }
        let _turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
        let s = &*self.shared;
        s.panicked.store(false, Ordering::Relaxed);
        s.pending.store(on_workers, Ordering::Release);
        {
            let mut job = s.job.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: see `Job`: the wait below keeps `f` alive until no
            // worker reads it any more.
            #[allow(unsafe_code)]
            let f: *const (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(f) };
            *job = Some(Job {
                f,
                parts: on_workers + 1,
            });
            s.epoch.fetch_add(1, Ordering::AcqRel);
        }
        s.wake.notify_all();
        // The caller's own share, then whatever no worker takes; a panic
        // here still waits for the workers before it unwinds.
        let own = catch_unwind(AssertUnwindSafe(|| {
            f(0);
            (on_workers + 1..parts).for_each(f);
        }));
        let mut spin = Spin::new();
        while s.pending.load(Ordering::Acquire) > 0 {
            if !spin.go_on() {
                std::thread::yield_now();
            }
        }
        if own.is_err() || s.panicked.load(Ordering::Relaxed) {
            return Err(Panicked);
        }
        Ok(())
    }
}

/// A busy wait bounded by [`SPIN`], reading the clock only every few
/// hundred turns (a clock read costs more than a turn).
struct Spin {
    start: Instant,
    turns: u32,
}

impl Spin {
    fn new() -> Spin {
        Spin {
            start: Instant::now(),
            turns: 0,
        }
    }

    /// Spins once; false once the time is up.
    fn go_on(&mut self) -> bool {
        self.turns = self.turns.wrapping_add(1);
        if self.turns.is_multiple_of(256) && self.start.elapsed() >= SPIN {
            return false;
        }
        std::hint::spin_loop();
        true
    }
}

fn work(s: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        let mut spin = Spin::new();
        while s.epoch.load(Ordering::Acquire) == seen && spin.go_on() {}
        let job = {
            let mut guard = s.job.lock().unwrap_or_else(|e| e.into_inner());
            while s.epoch.load(Ordering::Acquire) == seen {
                guard = s.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
            }
            seen = s.epoch.load(Ordering::Acquire);
            *guard
        };
        let Some(job) = job else { continue };
        if index < job.parts {
            // SAFETY: see `Job`: `run` waits for `pending` to reach zero,
            // which this worker's decrement below is part of.
            #[allow(unsafe_code)]
            let f = unsafe { &*job.f };
            if catch_unwind(AssertUnwindSafe(|| f(index))).is_err() {
                s.panicked.store(true, Ordering::Relaxed);
            }
            s.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The process's pool: one worker per core past the first
/// (`MNEMO_LLM_THREADS` overrides the count, callers included).
pub(crate) fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::env::var("MNEMO_LLM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            })
            .clamp(1, 16);
        Pool::new(threads - 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_runs_once_per_job() {
        let p = Pool::new(3);
        for parts in 0..8 {
            let hits: Vec<AtomicUsize> = (0..parts).map(|_| AtomicUsize::new(0)).collect();
            p.run(parts, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
            assert!(
                hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "{parts}"
            );
        }
    }

    #[test]
    fn a_parked_pool_wakes_for_the_next_job() {
        let p = Pool::new(1);
        let n = AtomicUsize::new(0);
        p.run(2, &|_| {
            n.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        std::thread::sleep(SPIN * 4);
        p.run(2, &|_| {
            n.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(n.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn a_panicking_part_is_reported_and_the_pool_goes_on() {
        let p = Pool::new(1);
        let r = p.run(2, &|i| {
            if i == 1 {
                panic!("part 1");
            }
        });
        assert!(r.is_err());
        let n = AtomicUsize::new(0);
        p.run(2, &|_| {
            n.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(n.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn callers_on_several_threads_take_turns() {
        let p = Arc::new(Pool::new(1));
        let total = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (p, total) = (Arc::clone(&p), Arc::clone(&total));
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        p.run(2, &|_| {
                            total.fetch_add(1, Ordering::Relaxed);
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(total.load(Ordering::Relaxed), 4 * 200 * 2);
    }
}
