//! `kswapd-mmap-read`: its scenario keys, their defaults and checks.

use super::keys::{cpuset_or_pinned, pattern, positive, tasks};
use super::Ctx;
use crate::scenario::{CpuSet, Pattern};
use crate::source::ScenarioError;
use serde::Serialize;

/// vm-scalability's lru-file-mmap-read (seed 003): `readers` processes, each reading its own
/// sparse file through a shared read-only mapping once, sequentially (or at random pages); the
/// files together exceed machine memory, so kswapd (global reclaim) does the reclaiming.
/// Simulator only: it needs machine-wide memory pressure.
#[derive(Clone, Debug, Serialize)]
pub struct KswapdMmapRead {
    /// Total over all readers (each reads `file_bytes / readers`).
    pub file_bytes: u64,
    pub readers: usize,
    pub cpus: CpuSet,
    pub pattern: Pattern,
    /// Sparse files (reading a hole zero-fills the page, no I/O), as vm-scalability creates.
    pub sparse: bool,
    /// read_ahead_kb in pages (the mmap read-around / async readahead window); 0 = off.
    pub readahead_pages: u64,
}

impl KswapdMmapRead {
    pub fn bytes_per_reader(&self) -> u64 {
        self.file_bytes / self.readers as u64
    }
}

impl KswapdMmapRead {
    /// Read the `workload.*` keys of `kswapd-mmap-read`.
    pub(crate) fn parse(cx: &Ctx) -> Result<KswapdMmapRead, ScenarioError> {
        let src = cx.src;
        let w = KswapdMmapRead {
            file_bytes: src.size_or("workload.file_bytes", 2 * cx.machine_memory)?,
            readers: positive(src, "workload.readers", cx.cpus as u64)?,
            cpus: cpuset_or_pinned(src, "workload.cpus", cx.cpus)?,
            pattern: pattern(src, "workload.pattern")?,
            sparse: src.bool_or("workload.sparse", true)?,
            readahead_pages: src.u64_or("workload.readahead_pages", 32)?,
        };
        tasks(src, "workload.readers", w.readers as u64)?;
        if w.bytes_per_reader() < 4096 {
            return Err(src.err(
                "workload.file_bytes",
                "leaves less than one page per reader",
            ));
        }
        if w.bytes_per_reader() >= 1 << 44 {
            return Err(src.err(
                "workload.file_bytes",
                "is too large (2^32 pages per reader)",
            ));
        }
        if w.readahead_pages > 1024 {
            return Err(src.err("workload.readahead_pages", "must be 0..=1024"));
        }
        Ok(w)
    }
}
