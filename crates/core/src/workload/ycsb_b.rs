//! `ycsb-b`: its scenario keys, their defaults and checks.

use super::keys::{cpuset, positive, tasks};
use super::Ctx;
use crate::scenario::limits::MAX_FILE_BYTES;
use crate::scenario::CpuSet;
use crate::source::ScenarioError;
use crate::units::clip;
use serde::Serialize;

/// YCSB workload B on a file-backed store (seed 002): `threads` clients doing operations on
/// `records` records of `record_bytes` kept in a shared writable file mapping, a fraction
/// `read_ratio` reads and the rest updates (which dirty the record's page), keys drawn from
/// YCSB's scrambled zipfian distribution with constant `zipf_theta`.
#[derive(Clone, Debug, Serialize)]
pub struct YcsbB {
    pub records: u64,
    pub record_bytes: u64,
    pub threads: usize,
    pub cpus: CpuSet,
    pub read_ratio: f64,
    pub zipf_theta: f64,
    /// How the store reaches its file: `mmap` (a shared writable mapping, the default) or
    /// `pread` (pread/pwrite through the page cache, as WiredTiger does).
    pub pread: bool,
}

impl YcsbB {
    pub fn file_bytes(&self) -> u64 {
        self.records * self.record_bytes
    }
}

impl YcsbB {
    /// Read the `workload.*` keys of `ycsb-b`.
    pub(crate) fn parse(cx: &Ctx) -> Result<YcsbB, ScenarioError> {
        let src = cx.src;
        let w = YcsbB {
            records: src.u64_or("workload.records", 1 << 20)?,
            record_bytes: src.size_or("workload.record_bytes", 1024)?,
            threads: positive(src, "workload.threads", 32)?,
            cpus: cpuset(src, "workload.cpus", cx.cpus)?,
            read_ratio: src.f64_or("workload.read_ratio", 0.95)?,
            zipf_theta: src.f64_or("workload.zipf_theta", 0.99)?,
            pread: match src.str_or("workload.access", "mmap")?.as_str() {
                "mmap" => false,
                "pread" => true,
                o => {
                    return Err(
                        src.err("workload.access", format!("{}: use mmap or pread", clip(o)))
                    )
                }
            },
        };
        tasks(src, "workload.threads", w.threads as u64)?;
        if w.records == 0 {
            return Err(src.err("workload.records", "must be at least 1"));
        }
        if w.record_bytes == 0 || w.record_bytes > 4096 || 4096 % w.record_bytes != 0 {
            return Err(src.err(
                "workload.record_bytes",
                "must divide 4K (a record lies within one page)",
            ));
        }
        if w.records.saturating_mul(w.record_bytes) > MAX_FILE_BYTES {
            return Err(src.err(
                "workload.records",
                "x workload.record_bytes is above ext4's 16T largest file",
            ));
        }
        if !(0.0..=1.0).contains(&w.read_ratio) {
            return Err(src.err(
                "workload.read_ratio",
                format!("must be within 0..=1 (got {})", w.read_ratio),
            ));
        }
        if !(w.zipf_theta > 0.0 && w.zipf_theta < 1.0) {
            return Err(src.err(
                "workload.zipf_theta",
                format!("must be within (0, 1) (got {})", w.zipf_theta),
            ));
        }
        Ok(w)
    }
}
