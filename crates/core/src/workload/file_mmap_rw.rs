//! `file-mmap-rw`: its scenario keys, their defaults and checks.

use super::keys::{cpuset_or_pinned, file_per_thread, pattern, positive};
use super::Ctx;
use crate::scenario::{CpuSet, Pattern};
use crate::source::ScenarioError;
use serde::Serialize;

/// Threads read (and optionally write) a shared file mapping larger than the memcg limit.
#[derive(Clone, Debug, Serialize)]
pub struct FileMmapRw {
    pub file_bytes: u64,
    pub threads: usize,
    pub cpus: CpuSet,
    pub write: bool,
    pub pattern: Pattern,
    pub dir: String,
}

impl FileMmapRw {
    /// Read the `workload.*` keys of `file-mmap-rw`.
    pub(crate) fn parse(cx: &Ctx) -> Result<FileMmapRw, ScenarioError> {
        let src = cx.src;
        let w = FileMmapRw {
            file_bytes: src.size_or("workload.file_bytes", 1 << 30)?,
            threads: positive(src, "workload.threads", cx.cpus as u64)?,
            cpus: cpuset_or_pinned(src, "workload.cpus", cx.cpus)?,
            write: src.bool_or("workload.write", false)?,
            pattern: pattern(src, "workload.pattern")?,
            dir: src.str_or("workload.dir", "/var/tmp")?,
        };
        file_per_thread(src, w.file_bytes, w.threads)?;
        Ok(w)
    }
}
