//! What a scenario's model costs in host memory, checked before anything is allocated.
//!
//! The model keeps a PTE per virtual page of every mm, a page-cache slot per file page, a folio
//! per resident page and a set-associative TLB per CPU. A scenario whose model would not fit
//! (a 64T file, 2^32 TLB entries) is refused with the key that makes it large, instead of the
//! process aborting on an allocation failure mid-run.

use reclaimlab_core::scenario::limits::PAGE;
use reclaimlab_core::units::fmt_size;
use reclaimlab_core::{Scenario, Workload};

use crate::config::SimConfig;

/// Default ceiling on the model's host memory (`sim.max_model_memory`): a fraction of a
/// 24 GiB build machine shared by several users (estimate, not a measured figure).
pub const DEFAULT_MAX_MODEL_BYTES: u64 = 4 << 30;

/// Host bytes per element, from the structs' layouts (kernel.rs Mm::ptes and File::cache
/// hold a u64 per page; mm/folio.rs Folio is 16 bytes, plus its LRU list slot in mm/lru.rs
/// (4 bytes, up to 4 times that with the holes and the room the lists keep); arch/x86/tlb.rs
/// holds an 8-byte key and a 12-byte Entry per way plus a victim byte per set).
const PTE_BYTES: u64 = 8;
const CACHE_SLOT_BYTES: u64 = 8;
const FOLIO_BYTES: u64 = 32;
const TLB_ENTRY_BYTES: u64 = 21;
/// Per (CPU, mm): the TLB's epoch and tlb_gen, and the mm's cpumask bit.
const PER_CPU_MM_BYTES: u64 = 16;
const TASK_BYTES: u64 = 256;

/// The model's size: (what dominates it, in host bytes).
pub struct Footprint {
    /// Virtual pages per mm (each below 2^32: a TLB key and a folio index hold 32 bits).
    pub largest_mm_pages: u64,
    pub mms: u64,
    pub tasks: u64,
    pub virtual_pages: u64,
    pub file_pages: u64,
    pub bytes: u64,
    /// The key to name when the model is too large.
    pub key: &'static str,
}

/// The model's size for `scn` under `cfg`.
pub fn estimate(scn: &Scenario, cfg: &SimConfig) -> Footprint {
    let pages = |b: u64| b / PAGE;
    // (mms, pages per mm, tasks, file pages, key that sizes them)
    let (mms, per_mm, tasks, file_pages, key) = match &scn.workload {
        Workload::StressVm(w) => (
            w.workers as u64,
            pages(w.bytes_per_worker()),
            w.workers as u64,
            0,
            "workload.bytes",
        ),
        Workload::AnonSweep(w) => (
            w.processes as u64,
            pages(w.bytes_per_process),
            w.processes as u64 * w.threads as u64,
            0,
            "workload.bytes",
        ),
        Workload::FileReclaim(w) => (
            2,
            pages(w.file_bytes),
            w.threads as u64 + 1,
            pages(w.file_bytes),
            "workload.file_bytes",
        ),
        Workload::FileMmapRw(w) => (
            1,
            pages(w.file_bytes),
            w.threads as u64,
            pages(w.file_bytes),
            "workload.file_bytes",
        ),
        Workload::YcsbB(w) => (
            1,
            pages(w.file_bytes()).max(1),
            w.threads as u64,
            pages(w.file_bytes()).max(1),
            "workload.records",
        ),
        Workload::KswapdMmapRead(w) => (
            w.readers as u64,
            pages(w.bytes_per_reader()),
            w.readers as u64 + 1,
            pages(w.file_bytes),
            "workload.file_bytes",
        ),
        Workload::LimitReclaim(w) => (
            w.reclaimers as u64,
            pages(w.bytes / w.reclaimers as u64),
            w.reclaimers as u64,
            if w.pages == reclaimlab_core::scenario::LimitPages::File {
                pages(w.bytes)
            } else {
                0
            },
            "workload.bytes",
        ),
    };
    let cpus = scn.machine.cpus as u64;
    let virtual_pages = mms.saturating_mul(per_mm);
    let resident = pages(scn.memcg.limit_bytes.min(scn.machine.memory_bytes));
    let tlb = cpus.saturating_mul(cfg.tlb_entries as u64);
    let bytes = virtual_pages
        .saturating_mul(PTE_BYTES)
        .saturating_add(file_pages.saturating_mul(CACHE_SLOT_BYTES))
        .saturating_add(resident.saturating_mul(FOLIO_BYTES))
        .saturating_add(tlb.saturating_mul(TLB_ENTRY_BYTES))
        .saturating_add(cpus.saturating_mul(mms).saturating_mul(PER_CPU_MM_BYTES))
        .saturating_add(tasks.saturating_mul(TASK_BYTES));
    // Name whatever dominates: the TLBs or the pages.
    let key = if tlb.saturating_mul(TLB_ENTRY_BYTES) > virtual_pages.saturating_mul(PTE_BYTES) {
        "sim.tlb_entries"
    } else {
        key
    };
    Footprint {
        largest_mm_pages: per_mm,
        mms,
        tasks,
        virtual_pages,
        file_pages,
        bytes,
        key,
    }
}

/// Refuse a scenario the model cannot hold: more than 2^32 pages in one mm or file (the TLB
/// key and folio numbers are 32-bit), or more host memory than `sim.max_model_memory`.
/// Reads `sim.max_model_memory`, so call it before `Scenario::finish`.
pub fn check(scn: &Scenario, cfg: &SimConfig) -> anyhow::Result<Footprint> {
    let s = &scn.source;
    let max = s.size_or("sim.max_model_memory", DEFAULT_MAX_MODEL_BYTES)?;
    let f = estimate(scn, cfg);
    if f.largest_mm_pages >= 1 << 32 || f.file_pages >= 1 << 32 {
        return Err(s
            .err(
                f.key,
                format!(
                    "gives one mm or file {} pages; the model numbers pages with 32 bits (16T)",
                    f.largest_mm_pages.max(f.file_pages)
                ),
            )
            .into());
    }
    // Every mm the run creates: the workload's, the processes that start it (stress-ng's
    // parent and one instance per worker; bench), and the foreign tasks'.
    let (starters, count_key) = match &scn.workload {
        Workload::StressVm(w) if cfg.stress_ng_fork => (w.workers as u64 + 1, "workload.workers"),
        Workload::StressVm(_) => (0, "workload.workers"),
        Workload::AnonSweep(_) => (1, "workload.processes"),
        Workload::KswapdMmapRead(_) => (0, "workload.readers"),
        Workload::LimitReclaim(_) => (0, "workload.reclaimers"),
        _ => (0, f.key),
    };
    let foreign: u64 = [&cfg.sched.background, &cfg.sched.other]
        .iter()
        .filter_map(|b| b.as_ref())
        .map(|b| b.tasks as u64)
        .sum();
    let all_mms = f.mms + starters + foreign;
    let limit = crate::arch::x86::tlb::MAX_MMS as u64;
    if all_mms >= limit {
        return Err(s
            .err(
                count_key,
                format!(
                    "the run would create {all_mms} mms (workload, starting processes and \
                     foreign tasks); the model's TLB keys name at most {}",
                    limit - 1
                ),
            )
            .into());
    }
    if f.bytes > max {
        return Err(s
            .err(
                f.key,
                format!(
                    "the model would need about {} of host memory ({} mms, {} tasks, {} virtual \
                     pages, {} CPUs x sim.tlb_entries = {}), above sim.max_model_memory = {}; \
                     shrink the scenario or raise sim.max_model_memory",
                    fmt_size(f.bytes),
                    f.mms,
                    f.tasks,
                    f.virtual_pages,
                    scn.machine.cpus,
                    cfg.tlb_entries,
                    fmt_size(max)
                ),
            )
            .into());
    }
    Ok(f)
}
