//! Seed 001 (`file-large-folio-unmap`): page-cache large folios (`sim.file_folio_order`) and
//! try_to_unmap clearing a file large folio's PTE run in one try_to_unmap_one step.

mod common;

use common::cfg;
use reclaimlab_core::ResultDoc;
use reclaimlab_sim::config::{Patch, Policy};
use reclaimlab_sim::kernel::{Backing, File, Kernel};
use reclaimlab_sim::mm::folio::pg;
use reclaimlab_sim::mm::memory::Access;
use reclaimlab_sim::mm::mm_types_task::TlbUbc;
use reclaimlab_sim::mm::pgtable::*;
use reclaimlab_sim::mm::rmap::TTU_BATCH_FLUSH;
use reclaimlab_sim::mm::vmstat::VmEventItem::*;

/// A 2-CPU kernel with a 64-page file mapped read-only, its first 16 pages read by a task on
/// CPU 0. Returns the kernel and the folio of page 0.
fn mapped_file(order: u8, patch: bool) -> (Kernel, u32) {
    let mut policy = Policy::linux_6_18();
    policy.set(Patch::FileLargeFolioUnmap, patch);
    let mut k = Kernel::new(cfg(order), policy, 2, 1024, 1 << 20, 60, 1);
    k.files.push(File::new(64));
    let mm = k.mm_alloc(64, Backing::File(0), false);
    let t = k.task_new(mm, Some(0), 0, 64);
    k.context_switch(0, Some(t));
    // The first read faults the folio in; the retried fault's fault-around maps its other
    // cached pages, which are then only walked (order 0, no readahead: each page a miss).
    for vp in 0..16 {
        let a = k.user_access(0, mm, vp, false);
        assert_eq!(
            a == Access::Fault,
            vp == 0 || order == 0,
            "page {vp}: {a:?}"
        );
    }
    let pfn = pte_pfn(k.mms[mm].ptes[0]);
    (k, pfn)
}

/// Unmap page 0's folio; returns (try_to_unmap_one steps, PTEs cleared, reclaim CPU ns).
fn unmap(k: &mut Kernel, pfn: u32) -> (u64, u64, u64) {
    let (s0, p0, c0) = (k.vmstat[TTU_STEPS], k.vmstat[TTU_PTES], k.cpus[0].clock);
    let mut ubc = TlbUbc::new(k.arch, 2);
    assert!(k.try_to_unmap(0, &mut ubc, pfn, TTU_BATCH_FLUSH));
    k.try_to_unmap_flush(0, &mut ubc);
    assert!(!k.folios.get(pfn).test(pg::MAPPED));
    let nr = k.folios.get(pfn).nr_pages() as usize;
    assert!(k.mms[0].ptes[..nr].iter().all(|&p| p == PTE_NONE));
    assert_eq!(k.mms[0].rss, 16 - nr as u64);
    let errs = k.check_invariants();
    assert!(errs.is_empty(), "{errs:?}");
    (
        k.vmstat[TTU_STEPS] - s0,
        k.vmstat[TTU_PTES] - p0,
        k.cpus[0].clock - c0,
    )
}

#[test]
fn order4_page_cache_folio_covers_16_pages() {
    let (k, pfn) = mapped_file(4, false);
    let f = k.folios.get(pfn);
    assert_eq!((f.order, f.index), (4, 0));
    assert!(k.mms[0].ptes[..16].iter().all(|&p| pte_pfn(p) == pfn));
    assert_eq!(k.memcg.charged_pages(), 16);
    assert_eq!(k.vmstat[PGMAJFAULT], 1, "one read of the whole folio");
}

#[test]
fn patch_clears_a_16_page_file_folio_in_one_step_baseline_in_16() {
    let (mut k, pfn) = mapped_file(4, true);
    let (steps, ptes, with_ns) = unmap(&mut k, pfn);
    assert_eq!((steps, ptes), (1, 16));
    let (mut k, pfn) = mapped_file(4, false);
    let (steps, ptes, without_ns) = unmap(&mut k, pfn);
    assert_eq!((steps, ptes), (16, 16));
    assert!(with_ns < without_ns, "{with_ns} vs {without_ns}");
}

#[test]
fn a_hole_in_the_pte_run_splits_the_batch() {
    let (mut k, pfn) = mapped_file(4, true);
    // Zap page 5's PTE (as a partial munmap/madvise would): two runs, 0..5 and 6..16.
    k.mms[0].ptes[5] = PTE_NONE;
    k.mms[0].rss -= 1;
    k.flush_tlb_mm_range(0, 0, 5, 6, false);
    let (steps, ptes, _) = unmap(&mut k, pfn);
    assert_eq!((steps, ptes), (2, 15));
}

#[test]
fn order0_patch_changes_nothing_on_one_folio() {
    let (mut a, pa) = mapped_file(0, true);
    let (mut b, pb) = mapped_file(0, false);
    assert_eq!(unmap(&mut a, pa), unmap(&mut b, pb));
}

fn sim(sets: &[&str]) -> ResultDoc {
    let base = [
        "machine.cpus=4",
        "workload.file_bytes=16M",
        "workload.reclaim_bytes=8M",
        "memcg.limit=32M",
        "sim.check=full",
    ];
    common::sim_with("file-reclaim", &base, sets)
}

const PATCH: &str = "kernel.patches=[\"file-large-folio-unmap\"]";

#[test]
fn file_reclaim_order4_is_faster_with_the_patch() {
    let before = sim(&["sim.file_folio_order=4"]);
    let after = sim(&["sim.file_folio_order=4", PATCH]);
    let (b, a) = (&before.runs[0], &after.runs[0]);
    assert_eq!(b.counters["pgsteal_file"], a.counters["pgsteal_file"]);
    assert!(b.counters["pgsteal_file"] >= 2048);
    // Every reclaimed folio's 16 PTEs in one step instead of 16.
    assert_eq!(a.extra["ttu_ptes"], b.extra["ttu_ptes"]);
    assert_eq!(b.extra["ttu_steps"], b.extra["ttu_ptes"]);
    assert_eq!(
        a.extra["ttu_steps"].as_u64().unwrap() * 16,
        a.extra["ttu_ptes"].as_u64().unwrap()
    );
    assert!(
        a.throughput.value < b.throughput.value,
        "reclaim_seconds {} -> {}",
        b.throughput.value,
        a.throughput.value
    );
}

#[test]
fn file_reclaim_order0_patch_is_byte_identical_but_the_label() {
    let before = sim(&[]);
    let after = sim(&[PATCH]);
    let b = serde_json::to_string(&before).unwrap();
    let a = serde_json::to_string(&after)
        .unwrap()
        .replace("6.18+file-large-folio-unmap", "6.18")
        .replace("\"file-large-folio-unmap\"", "");
    assert_eq!(a, b);
}
