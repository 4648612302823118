//! `file-reclaim` (seeds 001/004): threads populate a read-only shared file mapping, then
//! memory.reclaim, written by a shell on CPU 0, reclaims part of it and is timed.
//!
//! Throughput: the seconds memory.reclaim took; `wall_seconds` runs to its end.

use super::file_mmap::{data_file, populate_model, slice};
use super::{AccessModel, Outcome};
use crate::config::SimConfig;
use crate::engine::Engine;
use crate::kernel::{Backing, Kernel};
use reclaimlab_core::scenario::{FileReclaim, Hold};
use reclaimlab_core::Scenario;

const PAGE: u64 = 4096;

impl super::Workload for FileReclaim {
    fn access_model(&self, _k: &Kernel) -> anyhow::Result<AccessModel> {
        // bench's worker populates with a one-byte load per page (Mapping::touch).
        Ok(populate_model(true))
    }

    /// Each thread populates its slice of the file.
    fn fork(&self, _scn: &Scenario, cfg: &SimConfig, e: &mut Engine) -> anyhow::Result<()> {
        let pages = self.file_bytes / PAGE;
        let file = data_file(&mut e.k, cfg, pages);
        let mm = e.k.mm_alloc(pages, Backing::File(file), false);
        for i in 0..self.threads {
            let (s, t) = slice(pages, self.threads, i);
            if s < t {
                e.k.task_new(mm, self.cpus.for_worker(i), s, t);
            }
        }
        Ok(())
    }

    /// The population runs to its end; then the timed memory.reclaim.
    fn run(&self, e: &mut Engine, duration_ns: u64) -> Outcome {
        e.run_until(u64::MAX, duration_ns);
        let start = e.k.cpus.iter().map(|c| c.clock).max().unwrap_or(0);
        if self.hold == Hold::Spin {
            hold_spin(&mut e.k, start);
        }
        let want = self.reclaim_bytes / PAGE;
        let (reclaimed, reclaim_ns) = memory_reclaim_write(&mut e.k, start, want);
        let secs = e.k.cpus[0].clock as f64 / 1e9;
        let mut r = Outcome::new(secs, reclaim_ns as f64 / 1e9, "reclaim_seconds");
        r.notes.push(format!(
            "memory.reclaim reclaimed {reclaimed} of {want} pages"
        ));
        r
    }
}

/// The holders busy-wait on their CPUs without touching the mapping: the mm is loaded there
/// and not lazy, so reclaim's flushes reach them (should_flush_tlb). Their loop is not
/// stepped: it takes only the IPIs' time.
fn hold_spin(k: &mut Kernel, start: u64) {
    // Task 0 is the first populating thread (`fork` creates the workload's tasks first).
    let mm = k.tasks[0].mm;
    let cpus: Vec<_> = k.tasks.iter().filter_map(|t| t.pinned).collect();
    for c in cpus.into_iter().filter(|&c| c != 0) {
        k.cpus[c].clock = start;
        k.switch_mm(c, Some(mm));
    }
}

/// A write of `nr` pages to memory.reclaim by a shell on CPU 0 at `start` (memory_reclaim in
/// mm/memcontrol.c). Returns the pages reclaimed and the simulated time the write took.
fn memory_reclaim_write(k: &mut Kernel, start: u64, nr: u64) -> (u64, u64) {
    let writer = k.mm_alloc(1, Backing::Anon, true);
    let wt = k.task_new(writer, Some(0), 0, 1);
    k.tasks[wt].done = true;
    k.cpus[0].clock = start;
    k.context_switch(0, Some(wt));
    let t0 = k.cpus[0].clock;
    let reclaimed = k.memory_reclaim(0, nr);
    (reclaimed, k.cpus[0].clock - t0)
}
