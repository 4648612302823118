//! `limit-reclaim`: its scenario keys, their defaults and checks.

use super::keys::tasks;
use super::Ctx;
use crate::source::ScenarioError;
use crate::units::{clip, fmt_size};
use serde::Serialize;

/// N reclaimers in one memcg, each on its own CPU (0, 1, ...) with its own pages, lower the
/// memcg's limit at the same moment and reclaim until usage is below it (calibrate's
/// `contention` family, in the simulator).
#[derive(Clone, Debug, Serialize)]
pub struct LimitReclaim {
    /// What each reclaimer prepares (`workload.pages`).
    pub pages: LimitPages,
    /// Reclaimers, on CPUs 0..reclaimers.
    pub reclaimers: usize,
    /// Bytes prepared in all, split evenly between the reclaimers.
    pub bytes: u64,
    /// Bytes the lowered limit is below the usage before the write.
    pub reclaim_bytes: u64,
}

/// A reclaimer's own pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitPages {
    /// Clean, unmapped page cache of its own file (order-0 folios).
    File,
    /// Its own anonymous region, written once, mapped by its process (reclaimed to swap).
    Anon,
}

impl LimitReclaim {
    /// Read the `workload.*` keys of `limit-reclaim`.
    pub(crate) fn parse(cx: &Ctx) -> Result<LimitReclaim, ScenarioError> {
        let src = cx.src;
        let pages = match src.str_or("workload.pages", "file")?.as_str() {
            "file" => LimitPages::File,
            "anon" => LimitPages::Anon,
            o => return Err(src.err("workload.pages", format!("{}: use file or anon", clip(o)))),
        };
        let reclaimers = tasks(
            src,
            "workload.reclaimers",
            src.u64_or("workload.reclaimers", 1)?,
        )? as usize;
        if reclaimers > cx.cpus {
            return Err(src.err(
                "workload.reclaimers",
                format!(
                    "{reclaimers} reclaimers need as many CPUs (each on its own), the machine has {}",
                    cx.cpus
                ),
            ));
        }
        let w = LimitReclaim {
            pages,
            reclaimers,
            bytes: src.size_or("workload.bytes", 128 << 20)?,
            reclaim_bytes: src.size_or("workload.reclaim_bytes", 64 << 20)?,
        };
        if w.bytes / 4096 < reclaimers as u64 {
            return Err(src.err(
                "workload.bytes",
                format!(
                    "{} leaves less than a page for each of the {reclaimers} reclaimers",
                    fmt_size(w.bytes)
                ),
            ));
        }
        if w.reclaim_bytes == 0 || w.reclaim_bytes > w.bytes {
            return Err(src.err(
                "workload.reclaim_bytes",
                "must be above 0 and at most workload.bytes (the limit is lowered by this much)",
            ));
        }
        if w.bytes > cx.memcg_limit {
            return Err(src.err(
                "workload.bytes",
                "must fit under memcg.limit (the pages are prepared before the limit is lowered)",
            ));
        }
        if pages == LimitPages::Anon && src.u64_or("memcg.swappiness", 60)? == 0 {
            return Err(src.err(
                "memcg.swappiness",
                "is 0: limit reclaim then leaves anonymous pages alone (workload.pages = anon)",
            ));
        }
        Ok(w)
    }
}
