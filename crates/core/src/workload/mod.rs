//! The scenario's workloads: each module holds one workload's struct, its `workload.*` keys,
//! their defaults and checks. Adding a workload means one module, one variant of
//! [`Workload`] and one arm in `Workload::parse`.

mod anon_sweep;
mod file_mmap_rw;
mod file_reclaim;
pub(crate) mod keys;
mod kswapd_mmap_read;
mod limit_reclaim;
mod stress_vm;
mod ycsb_b;

pub use anon_sweep::AnonSweep;
pub use file_mmap_rw::FileMmapRw;
pub use file_reclaim::{FileReclaim, Hold};
pub use kswapd_mmap_read::KswapdMmapRead;
pub use limit_reclaim::{LimitPages, LimitReclaim};
pub use stress_vm::StressVm;
pub use ycsb_b::YcsbB;

use crate::source::{ScenarioError, Source};
use crate::units::clip;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Workload {
    StressVm(StressVm),
    FileReclaim(FileReclaim),
    FileMmapRw(FileMmapRw),
    AnonSweep(AnonSweep),
    YcsbB(YcsbB),
    KswapdMmapRead(KswapdMmapRead),
    LimitReclaim(LimitReclaim),
}

/// What a workload's keys are read from and checked against.
pub(crate) struct Ctx<'a> {
    pub src: &'a Source,
    /// CPUs of the target machine (simulated or live).
    pub cpus: usize,
    /// `machine.memory`: the simulated machine's RAM.
    pub machine_memory: u64,
    /// `memcg.limit`, already resolved.
    pub memcg_limit: u64,
}

impl Workload {
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::StressVm(_) => "stress-vm",
            Workload::FileReclaim(_) => "file-reclaim",
            Workload::FileMmapRw(_) => "file-mmap-rw",
            Workload::AnonSweep(_) => "anon-sweep",
            Workload::YcsbB(_) => "ycsb-b",
            Workload::KswapdMmapRead(_) => "kswapd-mmap-read",
            Workload::LimitReclaim(_) => "limit-reclaim",
        }
    }
    /// The directory of the data file a file workload maps (`workload.dir`); None for others.
    pub fn data_dir(&self) -> Option<&str> {
        match self {
            Workload::FileMmapRw(w) => Some(&w.dir),
            Workload::FileReclaim(w) => Some(&w.dir),
            _ => None,
        }
    }

    /// Whether the workload's memory is anonymous (and so needs swap to be reclaimed).
    pub fn is_anon(&self) -> bool {
        matches!(self, Workload::StressVm(_) | Workload::AnonSweep(_))
            || matches!(self, Workload::LimitReclaim(w) if w.pages == LimitPages::Anon)
    }

    /// Whether `kind` reclaims globally (kswapd, no memcg limit): `memcg.limit` then defaults
    /// to the machine's memory.
    pub(crate) fn is_global(kind: Option<&str>) -> bool {
        kind == Some("kswapd-mmap-read")
    }

    /// The workload `kind` names, read from its `workload.*` keys.
    pub(crate) fn parse(kind: &str, cx: &Ctx) -> Result<Workload, ScenarioError> {
        Ok(match kind {
            "stress-vm" => Workload::StressVm(StressVm::parse(cx)?),
            "file-reclaim" => Workload::FileReclaim(FileReclaim::parse(cx)?),
            "file-mmap-rw" => Workload::FileMmapRw(FileMmapRw::parse(cx)?),
            "anon-sweep" => Workload::AnonSweep(AnonSweep::parse(cx)?),
            "ycsb-b" => Workload::YcsbB(YcsbB::parse(cx)?),
            "kswapd-mmap-read" => Workload::KswapdMmapRead(KswapdMmapRead::parse(cx)?),
            "limit-reclaim" => Workload::LimitReclaim(LimitReclaim::parse(cx)?),
            other => {
                return Err(cx.src.err(
                    "workload.kind",
                    format!(
                        "unknown workload {}: use stress-vm, file-reclaim, file-mmap-rw, anon-sweep, ycsb-b, kswapd-mmap-read or limit-reclaim",
                        clip(other)
                    ),
                ))
            }
        })
    }
}
