//! `kswapd-mmap-read`: vm-scalability's lru-file-mmap-read (seed 003). `readers` processes,
//! each with its own (sparse) file of `file_bytes / readers` mapped shared and read-only, read
//! once from start to end (or at random pages until `run.duration`). The files exceed the
//! machine's memory and no memcg limit applies, so the node's watermarks drive reclaim:
//! kswapd from the low watermark, direct reclaim below min (mm/page_alloc.rs, mm/kswapd.rs).
//!
//! Throughput: pages read per simulated second; `wall_seconds` is the elapsed time until the
//! last reader finished (the seed's elapsed), or `run.duration` if one did not.

use super::file_mmap::{mmap_rw_model, populate_model};
use super::{AccessModel, Outcome};
use crate::config::SimConfig;
use crate::engine::Engine;
use crate::kernel::{Backing, File, Kernel};
use crate::mm::page_alloc::Pgdat;
use reclaimlab_core::scenario::{KswapdMmapRead, Pattern};
use reclaimlab_core::Scenario;

const PAGE: u64 = 4096;

impl super::Workload for KswapdMmapRead {
    /// The readers run without a memcg limit (vm-scalability uses the root cgroup). A limit
    /// equal to the machine's memory would still bind before the node's watermarks do (the
    /// per-CPU charge stocks count against it), so one at or above machine memory is none.
    fn prepare(&self, scn: &Scenario, k: &mut Kernel) {
        if scn.memcg.limit_bytes >= scn.machine.memory_bytes {
            k.memcg.limit = u64::MAX / 2;
        }
        let wsf = k.policy.settings.watermark_scale_factor;
        k.pgdat = Pgdat::new(scn.machine.memory_bytes / PAGE, wsf);
        k.ra.ra_pages = self.readahead_pages;
        k.ra.sparse = self.sparse;
    }

    fn access_model(&self, _k: &Kernel) -> anyhow::Result<AccessModel> {
        // vm-scalability's reader, not bench's worker: its access stays a pass over the page.
        Ok(if random(self) {
            mmap_rw_model(false, true, false)
        } else {
            populate_model(false)
        })
    }

    /// Each reader its own file, mapped shared and read-only.
    fn fork(&self, _scn: &Scenario, _cfg: &SimConfig, e: &mut Engine) -> anyhow::Result<()> {
        let pages = self.bytes_per_reader() / PAGE;
        for i in 0..self.readers {
            e.k.files.push(File::new(pages as usize));
            let mm = e.k.mm_alloc(pages, Backing::File(i), false);
            e.k.task_new(mm, self.cpus.for_worker(i), 0, pages);
        }
        Ok(())
    }

    /// kswapd is created after the readers are placed: it sleeps until the first wakeup.
    fn kthreads(&self, k: &mut Kernel) {
        k.kswapd_run();
    }

    fn run(&self, e: &mut Engine, duration_ns: u64) -> Outcome {
        e.run_until(duration_ns, duration_ns);
        let readers = &e.k.tasks[..self.readers];
        let finished = readers.iter().filter_map(|t| t.done_at).collect::<Vec<_>>();
        let mut notes = vec![
            "one NUMA node with one kswapd and one zone (docs/sim-model.md); the seed's machine had a kswapd per node".to_string(),
        ];
        let elapsed_ns = if !random(self) && finished.len() == self.readers {
            finished.iter().copied().max().unwrap_or(0)
        } else {
            if !random(self) {
                notes.push(format!(
                    "{} of {} readers did not finish within run.duration: wall_seconds is run.duration",
                    self.readers - finished.len(),
                    self.readers
                ));
            }
            duration_ns
        };
        let secs = elapsed_ns as f64 / 1e9;
        let read: u64 = readers.iter().map(|t| t.pages_touched).sum();
        let value = if secs > 0.0 { read as f64 / secs } else { 0.0 };
        let mut r = Outcome::new(secs, value, "pages_per_sec");
        r.notes = notes;
        if let Some(spread) = finish_spread(finished) {
            r.extra.insert("reader_finish_seconds".into(), spread);
        }
        r
    }
}

fn random(w: &KswapdMmapRead) -> bool {
    matches!(w.pattern, Pattern::Random)
}

/// The spread of the readers' finish times: the reader sharing its CPU with kswapd, or one
/// that took a long direct reclaim, finishes last and sets the elapsed time.
fn finish_spread(mut f: Vec<u64>) -> Option<serde_json::Value> {
    if f.is_empty() {
        return None;
    }
    f.sort_unstable();
    let s = |ns: u64| serde_json::Value::from(ns as f64 / 1e9);
    Some(serde_json::json!({"min": s(f[0]), "median": s(f[f.len() / 2]), "max": s(f[f.len() - 1])}))
}
