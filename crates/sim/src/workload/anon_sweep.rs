//! `anon-sweep` (issue 6): `processes` processes, each its own mm with `bytes` of anonymous
//! memory, each with `threads` threads sharing that mm (so one mm runs on several CPUs and its
//! mm_cpumask holds all of them), pinned as `workload.cpus` says or placed by the scheduler.
//!
//! As in the host worker (crates/host/src/workers/anon_sweep.rs): with the sequential pattern
//! thread t of T sweeps its slice [n·t/T, n·(t+1)/T) of its process's n pages, the first pass
//! writing every page (the worker populating its buffer), every later pass writing each page
//! with probability `write_ratio` and reading it otherwise; with the random pattern every
//! thread touches uniformly random pages of the whole buffer, each a write with probability
//! `write_ratio` (approximation: the model has no populate pass there, so a read of a page never
//! written maps the zero page). Throughput: pages touched per second (the host's unit).

use super::{AccessModel, Sweep};
use reclaimlab_core::scenario::{AnonSweep, Pattern};

/// Passes after the populate pass before the model's sweep list wraps round and populates
/// again (one pass of all writes): 100 000 passes of even a 16M buffer (4096 pages) at 10 M
/// simulated pages/s take 40 s, longer than the suite's runs.
const PASSES: usize = 100_000;

/// The access model: a write pass, then passes that write with probability `write_ratio`.
pub fn access_model(w: &AnonSweep) -> AccessModel {
    let steady = Sweep::with_write_ratio(w.write_ratio);
    let random = matches!(w.pattern, Pattern::Random);
    let sweeps = if random {
        vec![steady]
    } else {
        let mut v = vec![steady; PASSES + 1];
        v[0] = Sweep::Write;
        v
    };
    AccessModel {
        sweeps,
        random,
        random_write: random && steady == Sweep::Write,
        bogo_units_per_store: 0,
        one_cycle: false,
        ycsb: None,
    }
}

/// Thread `t`'s pages [start, end) of a process's `pages`.
pub fn thread_range(w: &AnonSweep, pages: u64, t: usize) -> (u64, u64) {
    match w.pattern {
        Pattern::Random => (0, pages),
        Pattern::Sequential => {
            let n = w.threads as u64;
            let t = t as u64;
            (pages * t / n, pages * (t + 1) / n)
        }
    }
}
