//! `anon-sweep`: its scenario keys, their defaults and checks.

use super::keys::{cpuset, pattern, positive, tasks};
use super::Ctx;
use crate::scenario::limits::{MAX_ANON_BYTES, MAX_TASKS, PAGE};
use crate::scenario::{CpuSet, Pattern};
use crate::source::ScenarioError;
use crate::units::fmt_size;
use serde::Serialize;

/// The project's own anonymous-memory load: processes × threads sweeping their
/// process's buffer, every thread placed where the scenario says, no OOM at sane sizes.
#[derive(Clone, Debug, Serialize)]
pub struct AnonSweep {
    pub processes: usize,
    /// Threads per process; they share the process's mm.
    pub threads: usize,
    /// Per process (unlike stress-vm's total).
    pub bytes_per_process: u64,
    /// Fraction of page touches that are writes (0..=1); the rest are reads.
    pub write_ratio: f64,
    pub pattern: Pattern,
    /// `"all"` (unpinned) or a CPU per thread, process-major: thread t of process p takes
    /// entry (p × threads + t) mod len.
    pub cpus: CpuSet,
}

impl AnonSweep {
    /// CPU for thread `t` of process `p`, or None when unpinned.
    pub fn cpu_of(&self, p: usize, t: usize) -> Option<usize> {
        self.cpus.for_worker(p * self.threads + t)
    }
}

impl AnonSweep {
    /// Read the `workload.*` keys of `anon-sweep`.
    pub(crate) fn parse(cx: &Ctx) -> Result<AnonSweep, ScenarioError> {
        let src = cx.src;
        let w = AnonSweep {
            processes: positive(src, "workload.processes", 1)?,
            threads: positive(src, "workload.threads", 1)?,
            bytes_per_process: src.size_or("workload.bytes", 256 << 20)?,
            write_ratio: src.f64_or("workload.write_ratio", 1.0)?,
            pattern: pattern(src, "workload.pattern")?,
            cpus: cpuset(src, "workload.cpus", cx.cpus)?,
        };
        if !(0.0..=1.0).contains(&w.write_ratio) {
            return Err(src.err(
                "workload.write_ratio",
                format!("must be within 0..=1 (got {})", w.write_ratio),
            ));
        }
        tasks(src, "workload.processes", w.processes as u64)?;
        tasks(src, "workload.threads", w.threads as u64)?;
        let total = w.processes as u64 * w.threads as u64;
        if total > MAX_TASKS {
            return Err(src.err(
                "workload.threads",
                format!(
                    "workload.processes x workload.threads = {total} tasks, above PID_MAX_LIMIT ({MAX_TASKS})"
                ),
            ));
        }
        if w.bytes_per_process / PAGE < w.threads as u64 {
            return Err(src.err(
                "workload.bytes",
                format!(
                    "{} per process leaves less than one page (4K) for each of its {} threads",
                    fmt_size(w.bytes_per_process),
                    w.threads
                ),
            ));
        }
        if w.bytes_per_process > MAX_ANON_BYTES {
            return Err(src.err(
                "workload.bytes",
                format!(
                    "{} per process is above a process's 128T address space",
                    fmt_size(w.bytes_per_process)
                ),
            ));
        }
        Ok(w)
    }
}
