//! File-mapping workloads: `file-mmap-rw` (threads of one process sweep, or randomly access,
//! a shared file mapping larger than the memcg) and the access models the other file workloads
//! share (`file-reclaim`, `kswapd-mmap-read`).
//! Page-cache folios have `sim.file_folio_order` (default 0), created by filemap_fault.

use super::{AccessModel, Sweep};
use crate::config::SimConfig;
use crate::engine::Engine;
use crate::kernel::{Backing, File, Kernel};
use reclaimlab_core::scenario::{FileMmapRw, Pattern};
use reclaimlab_core::Scenario;

/// `byte_touch`: each access is one byte, as bench's worker does (Mapping::touch); false for
/// a workload whose program passes over the page.
pub fn mmap_rw_model(write: bool, random: bool, byte_touch: bool) -> AccessModel {
    AccessModel {
        sweeps: vec![if write { Sweep::Write } else { Sweep::Read }],
        random,
        random_write: write,
        bogo_units_per_store: 0,
        one_cycle: false,
        ycsb: None,
        byte_touch,
    }
}

/// One pass over the file (`byte_touch` as for `mmap_rw_model`).
pub fn populate_model(byte_touch: bool) -> AccessModel {
    AccessModel {
        sweeps: vec![Sweep::Read],
        random: false,
        random_write: false,
        bogo_units_per_store: 0,
        one_cycle: true,
        ycsb: None,
        byte_touch,
    }
}

/// Thread i's share [s, t) of `pages`.
pub fn slice(pages: u64, n: usize, i: usize) -> (u64, u64) {
    let n = n as u64;
    let i = i as u64;
    (pages * i / n, pages * (i + 1) / n)
}

/// bench's data file of `pages`: fallocated, never written before the run, read ahead as
/// `sim.readahead_pages` says. Returns its file number.
pub fn data_file(k: &mut Kernel, cfg: &SimConfig, pages: u64) -> usize {
    k.files.push(File::new(pages as usize));
    k.file_readahead_setup(cfg);
    let file = k.files.len() - 1;
    k.file_fallocated(file);
    file
}

impl super::Workload for FileMmapRw {
    fn access_model(&self, _k: &Kernel) -> anyhow::Result<AccessModel> {
        // bench's worker touches one byte of each page it visits (a volatile load, or an
        // atomic add for a write): `touch_line`, not a pass over the page.
        Ok(mmap_rw_model(
            self.write,
            matches!(self.pattern, Pattern::Random),
            true,
        ))
    }

    fn fork(&self, _scn: &Scenario, cfg: &SimConfig, e: &mut Engine) -> anyhow::Result<()> {
        let pages = self.file_bytes / 4096;
        let file = data_file(&mut e.k, cfg, pages);
        let mm = e.k.mm_alloc(pages, Backing::File(file), self.write);
        for i in 0..self.threads {
            // As bench's worker: thread i starts at i/threads of the file and sweeps the
            // whole file, wrapping at its end (random: the whole file).
            let (s, _) = slice(pages, self.threads, i);
            let id = e.k.task_new(mm, self.cpus.for_worker(i), 0, pages);
            if !matches!(self.pattern, Pattern::Random) {
                e.k.tasks[id].cursor = s;
            }
        }
        Ok(())
    }

    /// The flusher runs as a kernel thread (created after the workers are placed: it sleeps
    /// until reclaim first wakes it).
    fn kthreads(&self, k: &mut Kernel) {
        k.flusher_run();
    }
}
