//! The policy table: every patch and kernel preset the tool models, as data. Adding a policy
//! is one row in `patch_table!` plus the branch at its decision point (docs/policies.md).

use super::{PatchRow, Preset, Seed, Settings};
use crate::arch::Arch;

/// Both modelled architectures: the generic mm code (mm/rmap.c, mm/vmscan.c) the patch
/// changes runs on each, through the arch's own TLB hooks.
const ANY_ARCH: &[Arch] = &[Arch::X86, Arch::Arm64];

patch_table! {
    /// TTU_BATCH_FLUSH from shrink_folio_list: try_to_unmap defers the flush into the task's
    /// batch (should_defer_flush, set_tlb_ubc_flush_pending), flushed by try_to_unmap_flush.
    TlbBatch {
        name: "tlb-batch",
        seed: Some(Seed { number: "003", when: "2015, in 4.3" }),
        summary: "batch unmap TLB flushes, one IPI for many pages",
        implies: &[],
        arches: ANY_ARCH,
        in_check: true,
    },
    /// Dirty folios are unmapped and collected (unlocked) into a folio_batch, and one
    /// try_to_unmap_flush_dirty covers the batch before their pageouts.
    BatchDirtyFlush {
        name: "batch-dirty-flush",
        seed: Some(Seed { number: "000", when: "2026" }),
        summary: "one flush for a batch of dirty folios before their pageouts",
        implies: &[],
        arches: ANY_ARCH,
        in_check: true,
    },
    /// folio_unmap_pte_batch batches file folios: try_to_unmap_one clears a file large
    /// folio's PTE run in one step.
    FileLargeFolioUnmap {
        name: "file-large-folio-unmap",
        seed: Some(Seed { number: "001", when: "~7.0" }),
        summary: "clear a file large folio's PTEs in one step",
        implies: &[],
        arches: ANY_ARCH,
        in_check: true,
    },
    /// folio_referenced_one checks a large folio's PTE run in one step (folio_pte_batch) and
    /// clears its young bits with one clear_flush_young_ptes (arm64: one TLBI over the run);
    /// 6.18 steps per PTE.
    ClearFlushYoungPtes {
        name: "clear-flush-young-ptes",
        seed: Some(Seed { number: "004", when: "~7.0" }),
        summary: "batch young-bit clearing with one flush (arm64 contpte)",
        implies: &[],
        arches: ANY_ARCH,
        in_check: false,
    },
    /// The multi-gen LRU (CONFIG_LRU_GEN, enabled): memcg reclaim goes to lru_gen_shrink_lruvec.
    Mglru {
        name: "mglru",
        seed: None,
        summary: "multi-gen LRU (the base of seed 002)",
        implies: &[],
        arches: ANY_ARCH,
        in_check: false,
    },
    /// sort_folio no longer bumps dirty/writeback file folios to min_seq + 1;
    /// shrink_folio_list reactivates them and evict_folios wakes the flusher after a batch
    /// that was all unqueued dirty. It changes MGLRU's code, so it implies MGLRU.
    MglruDirtyReactivate {
        name: "mglru-dirty-reactivate",
        seed: Some(Seed { number: "002", when: "~7.2" }),
        summary: "MGLRU dirty folios reactivated via shrink_folio_list",
        implies: &[Patch::Mglru],
        arches: ANY_ARCH,
        in_check: false,
    },
    /// Deliberately unsafe: try_to_unmap_flush_dirty does nothing, so pageout can start while
    /// a CPU still holds a writable translation (the 2015 RFC's first form).
    UnsafeDeferDirtyFlush {
        name: "unsafe-defer-dirty-flush",
        seed: None,
        summary: "UNSAFE, for `check`: defer writable-PTE flushes past pageout",
        implies: &[],
        arches: ANY_ARCH,
        in_check: true,
    },
    /// Hypothetical (no posted series): shrink_folio_list calls try_to_unmap_flush_dirty
    /// before it activates a dirty file folio it unmapped, so no writable translation of it
    /// outlives the folio lock into the flusher's writeback (the race `check --flusher` finds
    /// on 6.18).
    FlushDirtyBeforeActivate {
        name: "flush-dirty-before-activate",
        seed: None,
        summary: "hypothetical: flush writable translations before activating a dirty file folio",
        implies: &[],
        arches: ANY_ARCH,
        in_check: true,
    },
    /// Hypothetical (no posted series): the other way to close the same race without an extra
    /// flush: shrink_folio_list keeps a dirty file folio it unmapped and activated locked until
    /// the batch's next try_to_unmap_flush, so the flusher (which locks the folio) cannot
    /// start its writeback while a writable translation may survive. Faults on it wait longer.
    UnlockDirtyAfterFlush {
        name: "unlock-dirty-after-flush",
        seed: None,
        summary: "hypothetical: keep an activated dirty file folio locked until the batch flush",
        implies: &[],
        arches: ANY_ARCH,
        in_check: true,
    },
    /// LUF, lazy unmap flush (Byungchul Park, SK hynix; RFC 2024-2025, not merged): the flush
    /// of a folio whose every mapping was read-only is deferred until the folio is allocated
    /// again.
    Luf {
        name: "luf",
        seed: None,
        summary: "LUF (Byungchul Park, RFC 2024-2025, not merged): read-only unmaps flushed at reallocation",
        implies: &[],
        arches: ANY_ARCH,
        in_check: true,
    },
    /// Deliberately unsafe: LUF that also defers writable mappings (a wider condition on LUF's
    /// code, so it implies LUF).
    LufWritable {
        name: "luf-writable",
        seed: None,
        summary: "UNSAFE, for `check`: LUF that also defers writable mappings",
        implies: &[Patch::Luf],
        arches: ANY_ARCH,
        in_check: true,
    },
}

/// Before the batched unmap flush (seed 003) and the later changes below.
const LINUX_4_2: Settings = Settings {
    // 4.x freed the whole list after one try_to_unmap_flush at the end of shrink_page_list
    // (mem_cgroup_uncharge_list; try_to_unmap_flush; free_hot_cold_page_list); a list holds at
    // most SWAP_CLUSTER_MAX (32) folios, so 32 means no intermediate flush.
    free_batch: 32,
    single_page_flush_ceiling: 33,
    range_flush_freed_tables: false,
    // vm.watermark_scale_factor arrived in 4.6: 0 selects the older watermark rule.
    watermark_scale_factor: 0,
    uses_invlpgb: false,
};

/// 6.18 and later.
const LINUX_6_18: Settings = Settings {
    // shrink_folio_list frees through a folio_batch (PAGEVEC_SIZE 31), flushing before each.
    free_batch: 31,
    single_page_flush_ceiling: 33,
    range_flush_freed_tables: true,
    watermark_scale_factor: 10,
    // Rik van Riel's INVLPGB series, merged in 6.15 (tip x86/core, March 2025).
    uses_invlpgb: true,
};

/// Kernel presets: which patches a released kernel already carries, and its settings.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "4.2",
        summary: "before batched unmap flushing: every cleared PTE is flushed at once",
        patches: &[],
        settings: LINUX_4_2,
    },
    Preset {
        name: "6.18",
        summary: "this machine's kernel: batched unmap flush, per-folio dirty flush",
        patches: &[Patch::TlbBatch],
        settings: LINUX_6_18,
    },
    Preset {
        name: "7.0",
        summary: "adds batched file large folio unmap and young-bit clearing (seeds 001, 004)",
        patches: &[
            Patch::TlbBatch,
            Patch::FileLargeFolioUnmap,
            Patch::ClearFlushYoungPtes,
        ],
        settings: LINUX_6_18,
    },
];
