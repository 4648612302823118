//! `file-reclaim`: its scenario keys, their defaults and checks.

use super::keys::{cpuset_or_pinned, file_per_thread, positive};
use super::Ctx;
use crate::scenario::CpuSet;
use crate::source::{ScenarioError, Source};
use crate::units::clip;
use serde::Serialize;

/// Populate a file through a shared read-only mapping, then reclaim part of it (seeds 001/004).
#[derive(Clone, Debug, Serialize)]
pub struct FileReclaim {
    pub file_bytes: u64,
    pub reclaim_bytes: u64,
    pub threads: usize,
    pub cpus: CpuSet,
    /// Directory for the data file (host); it is removed afterwards.
    pub dir: String,
    /// What the threads do while memory.reclaim runs (`workload.hold`).
    pub hold: Hold,
}

/// file-reclaim's threads after populating, while the file is reclaimed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hold {
    /// Busy-wait on their CPUs: the mm stays loaded there, so unmapping its pages sends
    /// shootdown IPIs (the default).
    Spin,
    /// Sleep: their CPUs go idle in lazy-TLB mode, which x86's flushes skip.
    Sleep,
}

impl FileReclaim {
    /// Read the `workload.*` keys of `file-reclaim`.
    pub(crate) fn parse(cx: &Ctx) -> Result<FileReclaim, ScenarioError> {
        let src = cx.src;
        let w = FileReclaim {
            file_bytes: src.size_or("workload.file_bytes", 1 << 30)?,
            reclaim_bytes: src.size_or("workload.reclaim_bytes", 512 << 20)?,
            threads: positive(src, "workload.threads", cx.cpus as u64)?,
            cpus: cpuset_or_pinned(src, "workload.cpus", cx.cpus)?,
            dir: src.str_or("workload.dir", "/var/tmp")?,
            hold: hold(src)?,
        };
        file_per_thread(src, w.file_bytes, w.threads)?;
        if w.reclaim_bytes > w.file_bytes {
            return Err(src.err(
                "workload.reclaim_bytes",
                "is larger than workload.file_bytes",
            ));
        }
        if w.file_bytes > cx.memcg_limit {
            return Err(src.err(
                "workload.file_bytes",
                "must fit under memcg.limit (the file is populated before reclaim starts)",
            ));
        }
        Ok(w)
    }
}

/// `workload.hold`: spin (default) or sleep. Its earlier name, host-only, is refused with
/// the new one.
fn hold(src: &Source) -> Result<Hold, ScenarioError> {
    if src.has("host.hold") {
        return Err(src.err(
            "host.hold",
            "is now workload.hold (the simulator honours it too)",
        ));
    }
    match src.str_or("workload.hold", "spin")?.as_str() {
        "spin" => Ok(Hold::Spin),
        "sleep" => Ok(Hold::Sleep),
        o => Err(src.err("workload.hold", format!("{}: use spin or sleep", clip(o)))),
    }
}
