//! `stress-vm`: its scenario keys, their defaults and checks.

use super::keys::{cpuset, positive, tasks};
use super::Ctx;
use crate::scenario::limits::{MAX_ANON_BYTES, PAGE};
use crate::scenario::CpuSet;
use crate::source::ScenarioError;
use crate::units::fmt_size;
use serde::Serialize;

/// stress-ng's vm stressor with `--vm-keep` (seed 000).
#[derive(Clone, Debug, Serialize)]
pub struct StressVm {
    pub workers: usize,
    /// Total over all workers: stress-ng 0.15 divides `--vm-bytes` among the `--vm` instances.
    pub bytes_total: u64,
    pub cpus: CpuSet,
    /// stress-ng `--vm-method`.
    pub method: String,
    /// Pass `--no-madvise` (stop stress-ng's random madvise() advice on the buffers).
    pub no_madvise: bool,
}

impl StressVm {
    pub fn bytes_per_worker(&self) -> u64 {
        self.bytes_total / self.workers as u64
    }
}

impl StressVm {
    /// Read the `workload.*` keys of `stress-vm`.
    pub(crate) fn parse(cx: &Ctx) -> Result<StressVm, ScenarioError> {
        let src = cx.src;
        let w = StressVm {
            workers: positive(src, "workload.workers", 16)?,
            bytes_total: src.size_or("workload.bytes", 2 << 30)?,
            cpus: cpuset(src, "workload.cpus", cx.cpus)?,
            method: src.str_or("workload.method", "all")?,
            no_madvise: src.bool_or("workload.no_madvise", true)?,
        };
        tasks(src, "workload.workers", w.workers as u64)?;
        if w.bytes_per_worker() < PAGE {
            return Err(src.err("workload.bytes", "leaves less than one page per worker"));
        }
        if w.bytes_per_worker() > MAX_ANON_BYTES {
            return Err(src.err(
                "workload.bytes",
                format!(
                    "gives each worker {}, above a process's 128T address space",
                    fmt_size(w.bytes_per_worker())
                ),
            ));
        }
        Ok(w)
    }
}
