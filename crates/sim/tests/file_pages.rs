//! File-page mechanisms: readahead's folio-order ramp (page_cache_ra_order), dirty throttling
//! of writers (balance_dirty_pages) and what memcg reclaim does with dirty and writeback
//! page-cache folios on cgroup v1 and v2 (shrink_folio_list, shrink_inactive_list).

mod common;

use reclaimlab_core::ResultDoc;
use reclaimlab_sim::config::{Policy, SimConfig};
use reclaimlab_sim::kernel::{Backing, File, Kernel};
use reclaimlab_sim::mm::folio::pg;
use reclaimlab_sim::mm::mm_types_task::TlbUbc;
use reclaimlab_sim::mm::vmstat::VmEventItem::*;

fn kernel(cfg: SimConfig, limit_pages: u64) -> Kernel {
    Kernel::new(cfg, Policy::linux_6_18(), 2, limit_pages, 0, 60, 1)
}

/// One task on CPU 0 reading (or writing) every page of a `pages`-page file mapping in order.
fn sweep_file(k: &mut Kernel, pages: u64, write: bool) {
    k.files.push(File::new(pages as usize));
    let mm = k.mm_alloc(pages, Backing::File(0), write);
    let t = k.task_new(mm, Some(0), 0, pages);
    k.context_switch(0, Some(t));
    for vp in 0..pages {
        k.writeback_poll(0);
        k.user_access(0, mm, vp, write);
    }
}

#[test]
fn readahead_raises_the_folio_order_by_two_per_window() {
    let mut k = kernel(common::cfg(0), 1 << 20);
    k.ra.ra_pages = 64;
    k.ra.max_order = 9;
    sweep_file(&mut k, 1024, false);
    let o = k.ra.folios_by_order;
    // Read-around at order 0 (64 pages), then windows of order 2, 4, then 6 (capped at
    // ilog2 of the 64-page window, below the filesystem's 9).
    assert_eq!(o[0], 64, "{o:?}");
    assert_eq!(o[2], 16, "{o:?}");
    assert_eq!(o[4], 4, "{o:?}");
    assert_eq!(o[6], (1024 - 64 * 3) / 64, "{o:?}");
    assert_eq!(o[1] + o[3] + o[5] + o[7] + o[8] + o[9], 0, "{o:?}");
}

#[test]
fn readahead_without_large_folio_support_stays_at_order_0() {
    let mut k = kernel(common::cfg(0), 1 << 20);
    k.ra.ra_pages = 64;
    k.ra.max_order = 0;
    sweep_file(&mut k, 512, false);
    assert_eq!(k.ra.folios_by_order[0], 512);
}

#[test]
fn balance_dirty_pages_pauses_a_writer_over_the_memcg_limit_on_v2_only() {
    for v1 in [false, true] {
        let cfg = SimConfig {
            cgroup_v1: v1,
            ..common::cfg(0)
        };
        // 2000-page memcg: on v2 the dirty limit is 20% of it (400 pages); on v1 the domain
        // is the machine's (6M pages), far out of reach.
        let mut k = kernel(cfg, 2000);
        k.wb.global_dirtyable = 6 << 20;
        // A device ten times slower than the writer dirties pages, so dirty pages pile up.
        k.cost.file_write_page = 100_000;
        sweep_file(&mut k, 1500, true);
        if v1 {
            assert_eq!(k.vmstat[DIRTY_PAUSES], 0);
        } else {
            assert!(k.vmstat[DIRTY_PAUSES] > 0, "v2 writer never paused");
            assert!(k.vmstat[DIRTY_PAUSE_NS] > 0);
            assert!(
                k.wb.nr_dirty + k.wb.nr_writeback <= k.dirty_thresh() + 1,
                "dirty {} + writeback {} over the limit {}",
                k.wb.nr_dirty,
                k.wb.nr_writeback,
                k.dirty_thresh()
            );
        }
    }
}

/// Folios at most order 7 (512K): with 256-page readahead windows ending aligned, order-8
/// folios (1M, a third of v2's 819-page dirty limit in this 16M memcg) make the model's v2
/// writers spend the whole second in balance_dirty_pages, re-dirtying folios the flusher has
/// just cleaned, and reclaim never runs; what is tested here is reclaim's handling of dirty
/// folios, not the pause policy (which has no rate control, docs/sim-model.md).
fn write_sweep(cgroup: &str) -> ResultDoc {
    writers(&[
        "sim.readahead_pages=256",
        "sim.file_max_order=7",
        &format!("sim.cgroup={cgroup}"),
    ])
}

/// Two threads on CPUs 0 and 1 writing a shared 64M mapping in a 16M memcg for 1 s.
fn writers(sets: &[&str]) -> ResultDoc {
    common::sim_with(
        "file-mmap-rw",
        &[
            "machine.cpus=2",
            "memcg.limit=16M",
            "workload.file_bytes=64M",
            "workload.threads=2",
            "workload.cpus=[0,1]",
            "workload.write=true",
            "run.duration=1s",
        ],
        sets,
    )
}

#[test]
fn memcg_reclaim_of_dirty_file_folios_v1_waits_v2_rotates() {
    let ratio = |d: &ResultDoc, k: &str| {
        let c = &d.runs[0].counters;
        c[k] as f64 / c["pgsteal_file"].max(1) as f64
    };
    let thr = |d: &ResultDoc, k: &str| d.runs[0].extra["dirty_throttling"][k].as_u64().unwrap();
    let v1 = write_sweep("v1");
    let v2 = write_sweep("v2");
    for d in [&v1, &v2] {
        let c = &d.runs[0].counters;
        assert!(c["pgsteal_file"] > 10_000);
        // Reclaim never writes page-cache folios: the flusher does.
        assert_eq!(c["nr_vmscan_write"], 0);
        assert!(c["nr_written"] > 0);
        // A sequential writer's folios are scanned about twice per steal (once referenced,
        // once reclaimed), not cycled through the active list while they wait for I/O.
        assert!(ratio(d, "pgscan_file") < 3.0, "{}", ratio(d, "pgscan_file"));
    }
    // v1: reclaim sleeps on writeback (reclaim_throttle). Its folio_wait_writeback needs a
    // tagged folio deactivated while still under writeback; in this 1-s run reclaim reads the
    // memcg's statistics unflushed (the first periodic flush is at 1 s), so the active list
    // is not aged and that case does not arise (block_swap.rs tests it on its own).
    assert!(thr(&v1, "reclaim_throttle_writeback") > 0);
    // v2: never waits on a folio; its writer is throttled by the memcg's dirty limit instead.
    assert!(v2.runs[0]
        .extra
        .get("dirty_throttling")
        .is_none_or(|t| t["reclaim_folio_wait_writeback"] == 0));
}

/// shrink_folio_list unmaps a dirty file folio with its flush deferred (try_to_unmap_one →
/// set_tlb_ubc_flush_pending, writable) and activates it for the flusher before
/// try_to_unmap_flush: the counter sees that window open under 6.18 and never under 4.2, whose
/// unmap flushes at once. flush-dirty-before-activate leaves it counted (before its flush),
/// and so does unlock-dirty-after-flush (which keeps the folio locked until the flush).
#[test]
fn shrink_folio_list_activates_dirty_file_folios_with_a_writable_flush_pending() {
    let windows = |d: &ResultDoc| {
        let c = &d.runs[0].counters;
        let n = d.runs[0]
            .extra
            .get("dirty_file_activations_flush_pending")
            .map_or(0, |v| v.as_u64().unwrap());
        (n, c["nr_vmscan_immediate_reclaim"])
    };
    let random = "workload.pattern=random";
    for (preset, patches, open) in [
        ("6.18", "[]", true),
        ("6.18", "[\"flush-dirty-before-activate\"]", true),
        ("6.18", "[\"unlock-dirty-after-flush\"]", true),
        ("4.2", "[]", false),
    ] {
        // cgroup v1: no dirty throttling of the writers, so dirty folios reach reclaim.
        let d = writers(&[
            random,
            "sim.cgroup=v1",
            &format!("kernel.preset={preset}"),
            &format!("kernel.patches={patches}"),
        ]);
        let (n, immediate) = windows(&d);
        // Reclaim goes on (a folio left locked would stall every fault on it).
        assert!(d.runs[0].counters["pgsteal_file"] > 10_000);
        // The branch is taken either way; folios are counted once, immediate in pages.
        assert!(
            immediate > 0,
            "{preset} {patches}: no dirty file activation"
        );
        assert!(n <= immediate, "{preset} {patches}: {n} > {immediate}");
        if open {
            assert!(n > 100, "{preset} {patches}: {n} windows");
        } else {
            assert_eq!(n, 0, "{preset} {patches}");
        }
    }
}

/// unlock-dirty-after-flush: the folios shrink_folio_list activated but kept locked are
/// unlocked by the batch's next try_to_unmap_flush, with the flush (or with nothing pending).
#[test]
fn try_to_unmap_flush_unlocks_the_folios_held_for_it() {
    let mut k = kernel(common::cfg(0), 1024);
    let held: Vec<_> = (0..2).map(|i| k.folios.alloc_order(0, 0, i, 0)).collect();
    let other = k.folios.alloc_order(0, 0, 2, 0);
    for &pfn in held.iter().chain([&other]) {
        k.folios.get_mut(pfn).set(pg::LOCKED);
    }
    let mut ubc = TlbUbc::new(k.arch, 2);
    ubc.unlock_at_flush.extend(&held);
    k.try_to_unmap_flush(0, &mut ubc);
    assert!(held.iter().all(|&p| !k.folios.get(p).test(pg::LOCKED)));
    assert!(ubc.unlock_at_flush.is_empty());
    // A lock reclaim did not hand to the flush is not the flush's to drop.
    assert!(k.folios.get(other).test(pg::LOCKED));
}

#[test]
fn file_write_sweep_is_deterministic() {
    let a = serde_json::to_string(&write_sweep("v1")).unwrap();
    let b = serde_json::to_string(&write_sweep("v1")).unwrap();
    assert_eq!(a, b);
}

#[test]
fn pmd_sized_file_folio_is_mapped_by_one_fault_and_unmapped_with_one_flush() {
    use reclaimlab_sim::mm::mm_types_task::TlbUbc;
    use reclaimlab_sim::mm::pgtable::*;
    use reclaimlab_sim::mm::rmap::TTU_BATCH_FLUSH;
    // Order-9 page-cache folios (sim.file_folio_order = 9), no readahead.
    let mut k = kernel(common::cfg(9), 1 << 20);
    k.files.push(File::new(1024));
    let mm = k.mm_alloc(1024, Backing::File(0), true);
    // The mm runs on both CPUs (a thread on each).
    for cpu in [1, 0] {
        let t = k.task_new(mm, Some(cpu), 0, 1024);
        k.context_switch(cpu, Some(t));
    }
    k.user_access(1, mm, 700, false);
    let faults = k.vmstat[PGFAULT];
    for vp in 0..1024 {
        k.user_access(0, mm, vp, true);
    }
    // Page 0 faults once (mapping 0..512); page 512..1024 was PMD-mapped read-only by CPU 1's
    // read, so its first store takes one write-protect fault.
    assert_eq!(k.vmstat[PGFAULT] - faults, 2);
    assert!(k.pmd_mapped(mm, 0) && k.pmd_mapped(mm, 1023));
    let pfn = pte_pfn(k.mms[mm].ptes[0]);
    let before: u64 = k.irq.tlb_shootdowns.iter().sum();
    let mut ubc = TlbUbc::new(k.arch, 2);
    assert!(k.try_to_unmap(0, &mut ubc, pfn, TTU_BATCH_FLUSH));
    // One synchronous flush of the 2 MiB (not a deferred batch), reaching CPU 1 once.
    assert!(!ubc.flush_required);
    let after: u64 = k.irq.tlb_shootdowns.iter().sum();
    assert_eq!(after - before, 1);
    assert!(!k.pmd_mapped(mm, 0));
    assert!(k.mms[mm].ptes[..512].iter().all(|&p| p == PTE_NONE));
    // The stores made the folio dirty.
    assert!(k.folios.get(pfn).test(reclaimlab_sim::mm::folio::pg::DIRTY));
}

/// `nr` folios of 2^`order` pages under writeback, completing `step` ns apart from `step`.
fn inflight(k: &mut Kernel, nr: u32, order: u8, step: u64) {
    use reclaimlab_sim::mm::folio::pg;
    let base = k.wb.inflight.back().map_or(0, |&(d, _)| d);
    for i in 0..nr {
        let pfn = k.folios.alloc_order(0, 0, i << order, order);
        k.folios.get_mut(pfn).set(pg::WRITEBACK);
        k.wb.nr_writeback += 1 << order;
        k.wb.inflight
            .push_back((base + step * u64::from(i + 1), pfn));
    }
}

#[test]
fn reclaim_throttle_waits_for_swap_cluster_max_pages_written() {
    // __acct_reclaim_writeback: a throttled reclaimer wakes once more than 32 pages have been
    // written, not at the first completion. CPU 0 runs no task, so the wait is its clock.
    let mut k = kernel(common::cfg(0), 1 << 20);
    k.files.push(File::new(1024));
    inflight(&mut k, 64, 0, 1_000);
    assert!(k.reclaim_throttle_writeback(0));
    assert_eq!(k.cpus[0].clock, 33 * 1_000);
    assert_eq!(k.wb.inflight.len(), 64 - 33);

    // NR_THROTTLED_WRITTEN counts pages: one 512-page folio's completion is enough.
    let mut k = kernel(common::cfg(0), 1 << 20);
    k.files.push(File::new(1024));
    inflight(&mut k, 1, 9, 5_000);
    inflight(&mut k, 8, 0, 1_000);
    assert!(k.reclaim_throttle_writeback(0));
    assert_eq!(k.cpus[0].clock, 5_000);

    // Too little in flight and nothing queued: the HZ/10 timeout ends the sleep.
    let mut k = kernel(common::cfg(0), 1 << 20);
    k.files.push(File::new(1024));
    inflight(&mut k, 4, 0, 1_000);
    assert!(k.reclaim_throttle_writeback(0));
    assert_eq!(k.cpus[0].clock, 100_000_000);
}

/// A kernel with 64-page readahead and one task on CPU 0 mapping a 1024-page file (writable
/// or not), with no page cached yet.
fn one_file_task(writable: bool) -> (Kernel, reclaimlab_sim::kernel::MmId) {
    let mut k = kernel(common::cfg(0), 1 << 20);
    k.ra.ra_pages = 64;
    k.files.push(File::new(1024));
    let mm = k.mm_alloc(1024, Backing::File(0), writable);
    let t = k.task_new(mm, Some(0), 0, 1024);
    k.context_switch(0, Some(t));
    (k, mm)
}

#[test]
fn a_fault_resumed_after_a_throttle_sleep_does_not_read_around_again() {
    // The fault at page 100 already ran do_sync_mmap_readahead (and counted PGMAJFAULT)
    // before its charge slept in reclaim_throttle: the retry only allocates its own folio.
    for resumed in [false, true] {
        let (mut k, mm) = one_file_task(true);
        if resumed {
            k.ra.sync_done.insert((0, 100));
        }
        k.user_access(0, mm, 100, true);
        let read: u64 = k.ra.folios_by_order.iter().sum();
        if resumed {
            assert_eq!(read, 0, "a second read-around");
            assert_eq!(k.vmstat[PGMAJFAULT], 0);
            assert_eq!(k.ra.state.first().map_or(0, |s| s.mmap_miss), 0);
            assert!(k.ra.sync_done.is_empty());
        } else {
            assert_eq!(read, 64);
            assert_eq!(k.vmstat[PGMAJFAULT], 1);
            assert_eq!(k.ra.state[0].mmap_miss, 1);
        }
        // Either way the page is now mapped writable.
        assert!(k.files[0].cache[100] != 0);
    }
}

/// Dirty order-0 page-cache folios at `pages` of file 0 (64 pages).
fn dirty_file_pages(k: &mut Kernel, pages: &[u32]) {
    use reclaimlab_sim::mm::pgtable::PTE_SWPCACHE;
    k.files.push(File::new(64));
    for &p in pages {
        let pfn = k.folios.alloc_order(0, 0, p, 0);
        k.files[0].cache[p as usize] = PTE_SWPCACHE | pfn;
        k.folio_mark_dirty(pfn);
    }
}

#[test]
fn writeback_stops_at_the_device_queue_depth_and_merges_contiguous_pages() {
    // Pages 0..8 are contiguous (one request); 10, 12, ... 20 are one request each.
    let pages: Vec<u32> = (0..8).chain((10..=20).step_by(2)).collect();
    for depth in [0, 4] {
        let cfg = SimConfig {
            writeback_queue_depth: depth,
            writeback_request_pages: 1024,
            ..common::cfg(0)
        };
        let mut k = kernel(cfg, 1 << 20);
        dirty_file_pages(&mut k, &pages);
        // No flusher thread: wakeup_flusher_threads writes from CPU 0 at once.
        k.wb_start_all(0);
        if depth == 0 {
            assert_eq!(k.vmstat[NR_WRITTEN], 14);
            assert_eq!(k.wb.nr_dirty, 0);
        } else {
            // One merged request of 8 pages and three single pages fill the 4 tags.
            assert_eq!(k.vmstat[NR_WRITTEN], 11);
            assert_eq!(k.wb.nr_dirty, 3);
            assert_eq!(k.wb.requests.len(), 4);
        }
    }
    // The largest request caps merging: 2-page requests make 4 of the 8 contiguous pages.
    let cfg = SimConfig {
        writeback_queue_depth: 4,
        writeback_request_pages: 2,
        ..common::cfg(0)
    };
    let mut k = kernel(cfg, 1 << 20);
    dirty_file_pages(&mut k, &pages);
    k.wb_start_all(0);
    assert_eq!(k.vmstat[NR_WRITTEN], 8);
}

#[test]
fn each_request_costs_the_device_its_fixed_time_so_scattered_pages_write_slower() {
    // 16 contiguous pages merge into one request; 16 scattered ones are 16 requests.
    let done = |pages: &[u32]| {
        let cfg = SimConfig {
            writeback_queue_depth: 128,
            writeback_request_pages: 1024,
            ..common::cfg(0)
        };
        let mut k = kernel(cfg, 1 << 20);
        k.cost.file_write_page = 1_000;
        k.cost.file_write_request = 10_000;
        // Only the device's time: no CPU time for the submission or the completion.
        let c = &mut k.cost;
        (c.writepages_folio, c.writepages_request) = (0, 0);
        (c.writeback_complete_folio, c.writeback_complete_request) = (0, 0);
        let t0 = k.cpus[0].clock;
        dirty_file_pages(&mut k, pages);
        k.wb_start_all(0);
        assert_eq!(k.vmstat[NR_WRITTEN], 16);
        // The device's time, whatever the submitting CPU spent.
        k.wb.busy_until - t0
    };
    let contiguous: Vec<u32> = (0..16).collect();
    let scattered: Vec<u32> = (0..32).step_by(2).collect();
    assert_eq!(done(&contiguous), 10_000 + 16 * 1_000);
    assert_eq!(done(&scattered), 16 * (10_000 + 1_000));
}

#[test]
fn writeback_charges_per_folio_per_request_and_for_unwritten_blocks_on_the_irq_cpu() {
    // The writing CPU pays do_writepages; the disk's interrupt CPU pays the completions (and
    // ext4's extent conversion for unwritten blocks). Scattered pages are a request each.
    let cpu_time = |pages: &[u32], fallocated: bool| {
        let cfg = SimConfig {
            writeback_queue_depth: 128,
            writeback_request_pages: 1024,
            writeback_irq_cpu: Some(1),
            ..common::cfg(0)
        };
        let mut k = kernel(cfg, 1 << 20);
        let c = &mut k.cost;
        (
            c.writepages_folio,
            c.writepages_request,
            c.writepages_unwritten_request,
        ) = (100, 1_000, 10_000);
        (
            c.writeback_complete_folio,
            c.writeback_complete_request,
            c.writeback_convert_request,
        ) = (200, 2_000, 20_000);
        dirty_file_pages(&mut k, pages);
        if fallocated {
            k.file_fallocated(0);
        }
        let (c0, c1) = (k.cpus[0].clock, k.cpus[1].clock);
        k.wb_start_all(0);
        (k.cpus[0].clock - c0, k.cpus[1].clock - c1)
    };
    let contiguous: Vec<u32> = (0..16).collect();
    let scattered: Vec<u32> = (0..32).step_by(2).collect();
    assert_eq!(
        cpu_time(&contiguous, false),
        (16 * 100 + 1_000, 16 * 200 + 2_000)
    );
    assert_eq!(cpu_time(&scattered, false), (16 * 1_100, 16 * 2_200));
    assert_eq!(cpu_time(&scattered, true), (16 * 11_100, 16 * 22_200));
}

#[test]
fn the_flusher_sleeps_for_a_free_request_and_goes_on_writing() {
    let sweep = |depth: &str| {
        writers(&[
            "workload.pattern=random",
            "sim.cgroup=v1",
            &format!("sim.writeback_queue_depth={depth}"),
        ])
    };
    let bounded = sweep("8");
    let waits = bounded.runs[0].extra["flusher_request_waits"]
        .as_u64()
        .unwrap();
    assert!(waits > 0);
    let c = &bounded.runs[0].counters;
    assert!(c["nr_written"] > 1000, "{}", c["nr_written"]);
    // Unbounded: the flusher never waits for a request.
    assert!(!sweep("0").runs[0]
        .extra
        .contains_key("flusher_request_waits"));
}

#[test]
fn a_readahead_window_that_meets_a_cached_page_goes_on_in_order_0_folios() {
    use reclaimlab_sim::mm::pgtable::{PTE_LOW_MASK, PTE_SWPCACHE};
    // page_cache_ra_order: ra_alloc_folio's -EEXIST ends the large folios; do_page_cache_ra
    // reads the rest of the window in order-0 folios, and the next window keeps the ramp.
    let mut k = kernel(common::cfg(0), 1 << 20);
    k.ra.ra_pages = 64;
    k.ra.max_order = 9;
    k.files.push(File::new(512));
    let cached = k.folios.alloc_order(0, 0, 70, 0);
    k.lruvec.add(&mut k.folios, cached);
    k.files[0].cache[70] = PTE_SWPCACHE | cached;
    let mm = k.mm_alloc(512, Backing::File(0), false);
    let t = k.task_new(mm, Some(0), 0, 512);
    k.context_switch(0, Some(t));
    for vp in 0..256 {
        k.user_access(0, mm, vp, false);
    }
    let order_at = |k: &Kernel, p: usize| {
        let pfn = k.files[0].cache[p] & PTE_LOW_MASK;
        k.folios.get(pfn).order
    };
    // Read-around [0, 64) at order 0; the window [64, 128) at order 2 until 68..71 meets
    // page 70: from there order 0 (without the fallback 72 would be an order-2 folio).
    assert_eq!(order_at(&k, 64), 2);
    assert_eq!(order_at(&k, 68), 0);
    assert_eq!(order_at(&k, 72), 0);
    assert_eq!(order_at(&k, 124), 0);
    // The next window ramps on from ra->order (2 + 2).
    assert_eq!(order_at(&k, 128), 4);
}

/// file-reclaim with its holder busy on CPU 1 (`workload.hold = spin`): the mm stays loaded
/// there, so the flushes of unmapping its folios reach CPU 1 and the reclaimer waits for
/// them; a sleeping holder's CPU is lazy and skipped.
#[test]
fn a_busy_holder_receives_the_unmap_flushes_and_slows_reclaim() {
    let run = |hold: &str| {
        common::sim_with(
            "file-reclaim",
            &[],
            &[
                "machine.cpus=2",
                "workload.threads=1",
                "workload.cpus=[1]",
                "workload.file_bytes=64M",
                "workload.reclaim_bytes=48M",
                "memcg.limit=128M",
                &format!("workload.hold={hold}"),
            ],
        )
    };
    let (spin, sleep) = (run("spin"), run("sleep"));
    let tlb = |d: &ResultDoc| d.runs[0].counters["tlb_shootdowns"];
    assert_eq!(tlb(&sleep), 0);
    assert!(tlb(&spin) > 0);
    let cpu1 = |d: &ResultDoc| d.runs[0].extra["placement"]["cpus"][1]["tlb_shootdowns"].clone();
    assert_eq!(cpu1(&spin).as_u64(), Some(tlb(&spin)));
    let secs = |d: &ResultDoc| d.runs[0].throughput.value;
    assert!(
        secs(&spin) > secs(&sleep),
        "{} vs {}",
        secs(&spin),
        secs(&sleep)
    );
    // The old host-only name is refused with the new one.
    let err = common::try_sim_with("file-reclaim", &[], &["host.hold=spin"]).unwrap_err();
    assert!(err.contains("workload.hold"), "{err}");
}

/// A `pages`-page data file as bench makes it (fallocated, never written) mapped shared by a
/// task on CPU 0, readahead of `ra_pages` with large folios up to order 9.
fn fallocated_mapping(k: &mut Kernel, pages: u64, ra_pages: u64) -> usize {
    let mm = writable_mapping(k, pages);
    k.file_fallocated(0);
    k.ra.ra_pages = ra_pages;
    k.ra.max_order = 9;
    mm
}

/// File 0 of `pages` pages, mapped shared and writable by a task running on CPU 0.
fn writable_mapping(k: &mut Kernel, pages: u64) -> usize {
    k.files.push(File::new(pages as usize));
    let mm = k.mm_alloc(pages, Backing::File(0), true);
    let t = k.task_new(mm, Some(0), 0, pages);
    k.context_switch(0, Some(t));
    mm
}

/// common::cfg(`order`) with finish_fault mapping whole file folios.
fn whole_folio_cfg(order: u8) -> SimConfig {
    SimConfig {
        file_fault_whole_folio: true,
        ..common::cfg(order)
    }
}

/// Page faults taken by a task storing to pages 0..8 of a mapping of order-2 folios.
fn store_faults(cfg: SimConfig) -> (u64, Kernel, usize) {
    let mut k = kernel(cfg, 1 << 20);
    let mm = writable_mapping(&mut k, 64);
    for vp in 0..8 {
        k.user_access(0, mm, vp, true);
    }
    (k.vmstat[PGFAULT], k, mm)
}

#[test]
fn a_write_fault_maps_the_whole_large_folio_writable_and_dirty() {
    use reclaimlab_sim::mm::pgtable::*;
    // Two order-2 folios: two faults, every PTE writable and dirty.
    let (faults, k, mm) = store_faults(whole_folio_cfg(2));
    assert_eq!(faults, 2);
    for vp in 0..8 {
        let p = k.mms[mm].ptes[vp];
        assert!(
            pte_present(p) && p & PTE_DIRTY != 0 && p & PTE_WRITE != 0,
            "{vp}: {p:#x}"
        );
    }
    assert_eq!(k.mms[mm].rss, 8);
    // Without it (one page per fault, as before the finish_fault change): eight.
    assert_eq!(store_faults(common::cfg(2)).0, 8);
}

#[test]
fn a_pmd_range_that_once_held_ptes_maps_a_pmd_sized_folio_with_ptes() {
    use reclaimlab_sim::mm::pgtable::*;
    let mut k = kernel(whole_folio_cfg(0), 1 << 20);
    let mm = writable_mapping(&mut k, 1024);
    // A clean order-0 page in the first 2 MiB: mapped by a PTE (a page table under the PMD),
    // then reclaimed: its PTE goes, the table stays.
    k.user_access(0, mm, 5, false);
    // A lone folio waits in the CPU's lru_add batch, where reclaim's scan counts never see it.
    k.lru_add_drain(0);
    for _ in 0..8 {
        if k.files[0].cache[5] & PTE_SWPCACHE == 0 {
            break;
        }
        k.try_to_free_mem_cgroup_pages(0, 1 << 20);
    }
    assert_eq!(
        k.files[0].cache[5] & PTE_SWPCACHE,
        0,
        "page 5 not reclaimed"
    );
    assert!(k.mms[mm].ptes[..512].iter().all(|&p| p == PTE_NONE));
    // Now order-9 folios: the first range is not pmd_none, so its folio is mapped by 512 PTEs
    // in one fault; the second range never had a table and is PMD-mapped.
    k.cfg.file_folio_order = 9;
    let faults = k.vmstat[PGFAULT];
    for vp in 0..1024 {
        k.user_access(0, mm, vp, true);
    }
    assert_eq!(k.vmstat[PGFAULT] - faults, 2);
    assert!(!k.pmd_mapped(mm, 0) && k.pmd_mapped(mm, 512));
    assert_eq!(k.ra.thp_file_mapped, 1);
    assert!(k.mms[mm].ptes[..512]
        .iter()
        .all(|&p| pte_present(p) && p & PTE_DIRTY != 0));
}

#[test]
fn a_sequential_write_sweep_of_a_fallocated_file_ends_in_pmd_mapped_order_9_folios() {
    // As bench's sequential writer (no madvise: no VM_HUGEPAGE), with room for the file:
    // one read-around at order 0, windows of order 2, 4, 6, 8, then order 9 to the end.
    let pages = 32768;
    let mut k = kernel(whole_folio_cfg(0), 1 << 20);
    let mm = fallocated_mapping(&mut k, pages, 2048);
    for vp in 0..pages {
        k.writeback_poll(0);
        k.user_access(0, mm, vp, true);
    }
    let o = k.ra.folios_by_order;
    let order9 = (pages - 5 * 2048) / 512;
    assert_eq!(o, [2048, 0, 512, 0, 128, 0, 32, 0, 8, order9], "{o:?}");
    // Every order-9 folio is PMD-mapped: the ramp's 20 ranges hold PTE tables, the rest none.
    assert_eq!(k.ra.thp_file_mapped, order9);
    assert!((10240..pages).step_by(512).all(|vp| k.pmd_mapped(mm, vp)));
    // One fault per folio (whole folios mapped at once), not one per page.
    let folios: u64 = o.iter().sum();
    assert_eq!(k.vmstat[PGFAULT], folios);
    assert_eq!(k.vmstat[PGMAJFAULT], 1);
}

#[test]
fn readahead_reads_queue_behind_writeback_on_the_same_device() {
    // A file whose blocks hold data (not fallocated): its misses are device reads.
    let mut k = kernel(common::cfg(0), 1 << 20);
    let mm = writable_mapping(&mut k, 1024);
    k.ra.ra_pages = 64;
    let read = k.cost.file_read_page;
    let latency = k.cost.file_read_latency;
    assert!(latency > 0);
    // The device is busy with writeback for 1 ms.
    let now = k.cpus[0].clock;
    k.wb.busy_until = now + 1_000_000;
    // The miss reads around pages 0..64: its task sleeps until the writes ahead of it and
    // its own read are done, one request latency in all (the window's folios complete a
    // latency after their own transfers, and the task waits for them in turn).
    k.user_access(0, mm, 0, false);
    let (until, _) = k.take_sleep(0).expect("a read wait");
    assert_eq!(until, now + 1_000_000 + 64 * read + latency);
    // The PG_readahead hit (page 48) submits the next window asynchronously: no wait then,
    // but a fault that reaches one of its folios before the device has read it waits.
    k.cpus[0].clock = until;
    for vp in 1..=48 {
        k.user_access(0, mm, vp, false);
    }
    assert!(k.take_sleep(0).is_none());
    assert!(!k.ra.reads_in_flight.is_empty(), "no asynchronous window");
    let t = k.cpus[0].clock;
    k.user_access(0, mm, 100, false);
    let (until2, _) = k.take_sleep(0).expect("a wait on the window's read");
    assert!(
        until2 > t && until2 <= t + 64 * read + latency,
        "{until2} vs {t}"
    );
}

#[test]
fn a_fault_on_a_folio_tagged_for_reclaim_reads_ahead_as_on_a_marker() {
    // PG_readahead is PG_reclaim (page-flags.h): a cached folio reclaim tagged reads as a
    // readahead marker. Fault-around skips it (next_uptodate_folio), filemap_fault's
    // do_async_mmap_readahead starts a window and clears the bit, unless the folio is under
    // writeback (page_cache_async_ra returns first; the bit stays for folio_end_writeback).
    use reclaimlab_sim::mm::folio::pg;
    use reclaimlab_sim::mm::pgtable::PTE_LOW_MASK;
    for (tag, writeback) in [(false, false), (true, false), (true, true)] {
        let mut k = kernel(common::cfg(0), 1 << 20);
        k.ra.ra_pages = 64;
        k.files.push(File::new(1024));
        // Two processes map the file; the first one's miss reads pages 68..132 around 100.
        let a = k.mm_alloc(1024, Backing::File(0), false);
        let b = k.mm_alloc(1024, Backing::File(0), false);
        let ta = k.task_new(a, Some(0), 0, 1024);
        let tb = k.task_new(b, Some(0), 0, 1024);
        k.context_switch(0, Some(ta));
        k.user_access(0, a, 100, false);
        let around: u64 = k.ra.folios_by_order.iter().sum();
        assert_eq!(around, 64);
        let pfn = k.files[0].cache[100] & PTE_LOW_MASK;
        if tag {
            k.folios.get_mut(pfn).set(pg::RECLAIM);
        }
        if writeback {
            k.folios.get_mut(pfn).set(pg::WRITEBACK);
        }
        // The second process has no PTE for page 100: its fault finds the folio cached.
        k.context_switch(0, Some(tb));
        k.user_access(0, b, 100, false);
        let read = k.ra.folios_by_order.iter().sum::<u64>() - around;
        let tagged_hits = k.vmstat[READAHEAD_ON_RECLAIM_TAG];
        let still_tagged = k.folios.get(pfn).test(pg::RECLAIM);
        match (tag, writeback) {
            // Fault-around maps the cached page: no ->fault call, nothing read.
            (false, _) => assert_eq!((read, tagged_hits), (0, 0)),
            (true, false) => {
                assert!(read > 0, "no asynchronous window");
                assert_eq!(tagged_hits, 1);
                assert!(!still_tagged, "folio_clear_readahead");
                assert_eq!(k.vmstat[READAHEAD_ASYNC_WINDOWS], 1);
            }
            (true, true) => {
                assert_eq!((read, tagged_hits), (0, 0));
                assert!(still_tagged);
            }
        }
    }
}

/// The file suite's sequential writer (validation/file.toml, this machine's profile) for 1 s:
/// two threads writing a shared mapping of a fallocated 1G file in a 256M cgroup v1 memcg.
fn suite_seq_writer_1s() -> ResultDoc {
    common::sim_with(
        "file-mmap-rw",
        &[
            "machine.profile=kvm-guest-2vcpu",
            "run.duration=1s",
            "workload.file_bytes=1G",
            "sim.cgroup=v1",
            "sim.readahead_pages=2048",
            "sim.writeback_queue_depth=128",
            "sim.writeback_request_pages=1024",
            "sim.writeback_irq_cpu=1",
            "sim.file_fault_whole_folio=true",
            "workload.threads=2",
            "workload.cpus=[0,1]",
            "memcg.limit=256M",
            "workload.write=true",
            "workload.pattern=sequential",
        ],
        &[],
    )
}

#[test]
fn a_readahead_charge_whose_reclaim_sleeps_goes_on_after_the_sleep() {
    // try_charge_memcg with __GFP_NORETRY reclaims before it gives up, and on cgroup v1 that
    // reclaim sleeps in reclaim_throttle when it takes only dirty folios, then goes on. The
    // charge is taken up again after the sleep instead of failing: no asynchronous window is
    // cut short, so the writers do not run into unread pages and restart the order ramp with
    // a read-around (a major fault) each time. Before, ~200 charges a second failed and the
    // writers took 106 major faults in the first second.
    let d = suite_seq_writer_1s();
    let e = &d.runs[0].extra;
    let n = |k: &str| e.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    assert!(n("readahead_charge_throttled") > 0, "no charge slept");
    assert_eq!(n("readahead_charge_failures"), 0);
    let majors = d.runs[0].counters["pgmajfault"];
    assert!(majors < 40, "{majors} read-arounds in 1 s");
    // Most of what readahead read came in PMD-sized folios, mapped by one PMD each.
    let by_order: Vec<u64> =
        serde_json::from_value(e["readahead_folios_by_order"].clone()).unwrap();
    let pages: u64 = by_order.iter().enumerate().map(|(o, n)| n << o).sum();
    assert!(by_order[9] * 512 * 2 > pages, "{by_order:?}");
    assert!(
        n("thp_file_mapped") * 2 > by_order[9],
        "{} PMD maps",
        n("thp_file_mapped")
    );
}

#[test]
fn a_fault_whose_window_had_to_wait_carries_on_with_it_when_retried() {
    // page_cache_ra_order sleeps inside the allocation or charge of a folio and then reads the
    // rest of its own window. The model retries the fault, which resumes the window it
    // started (`Readahead::resume`), even where fault-around alone would now map the page,
    // and without a second major fault or read-around; the file's other faults start windows
    // of their own meanwhile.
    use reclaimlab_sim::mm::readahead::RaWindow;
    let (mut k, mm) = one_file_task(false);
    // A miss at 100 reads around it (pages 68..132, order 0); its retry's fault-around maps
    // 96..112.
    k.user_access(0, mm, 100, false);
    assert_eq!(k.ra.folios_by_order[0], 64);
    // The fault at 120 (cached, not mapped) had started the window 132..196 at order 2 and
    // stopped before its first folio.
    let w = RaWindow {
        start: 132,
        size: 64,
        async_size: 64,
        order: 2,
        next: 132,
        sync: false,
        fallback: false,
        drained: false,
    };
    k.ra.resume.insert((0, 120), w);
    // Another page's fault does not take it over.
    k.user_access(0, mm, 101, false);
    assert_eq!(k.ra.folios_by_order[2], 0);
    k.user_access(0, mm, 120, false);
    assert_eq!(k.ra.folios_by_order[2], 16, "{:?}", k.ra.folios_by_order);
    assert!(k.ra.resume.is_empty());
    assert_eq!(k.vmstat[PGMAJFAULT], 1);
}

/// The flusher thread's page_mkclean flushes, counted by what the other CPU was doing: only a
/// CPU running the mm takes the IPI (should_flush_tlb), so the count of those is at most the
/// shootdowns received; idle CPUs are lazy (enter_lazy_tlb) and are counted as such.
#[test]
fn the_flusher_s_mkclean_flushes_are_counted_by_the_other_cpu_s_state() {
    let d = writers(&["sim.cgroup=v1", "workload.pattern=random"]);
    let r = &d.runs[0];
    let f = &r.extra["flusher_mkclean_flushes"];
    let n = |k: &str| f[k].as_u64().unwrap();
    let parts = [
        "running_the_mm",
        "lazy_idle",
        "lazy_kthread",
        "init_mm",
        "other_mm",
    ];
    assert_eq!(n("targets"), parts.iter().map(|&k| n(k)).sum::<u64>());
    // Two writers on two CPUs: the other CPU both runs the writers' mm and idles while its
    // writer waits for a read, during the flusher's work.
    assert!(n("running_the_mm") > 0 && n("lazy_idle") > 0, "{f}");
    assert!(n("running_the_mm") <= r.counters["tlb_shootdowns"], "{f}");
    // Every page_mkclean flush with the other CPU in the mask is counted once.
    assert!(n("targets") <= r.counters["nr_written"], "{f}");
    // A flush finds the other CPU running the mm about as often as its writer runs (each
    // flush reads the other CPU's state when it leaves, should_flush_tlb), not as often as
    // the writer ran when a long flusher step began: with MAX_WRITEBACK_PAGES written per
    // engine step the other CPU stayed where the step found it, and the share was several
    // times the writers' (0.30 against 0.10 in the file suite's random writer).
    let workers: Vec<f64> = r.extra["placement"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "worker")
        .map(|t| t["cpu_seconds"].as_f64().unwrap())
        .collect();
    let share = workers.iter().sum::<f64>() / workers.len() as f64 / 1.0;
    let reach = n("running_the_mm") as f64 / n("targets") as f64;
    assert!(
        reach < 1.5 * share,
        "reach {reach:.3}, writers' share {share:.3}: {f}"
    );
}

#[test]
fn a_readahead_fill_allocates_looks_up_the_block_and_goes_through_the_lru_add_batch() {
    // One reader on CPU 0 sweeps a fallocated 496-page file (16 batches of 31) with 64-page
    // readahead in a memcg that holds it all: every page is an order-0 readahead folio
    // zero-filled from an unwritten block.
    let run = |alloc: u64, lookup: u64| {
        let mut k = kernel(common::cfg(0), 1 << 20);
        k.ra.ra_pages = 64;
        k.ra.max_order = 0;
        k.cost.page_cache_alloc = alloc;
        k.cost.fs_map_block = lookup;
        k.files.push(File::new(496));
        k.file_fallocated(0);
        let mm = k.mm_alloc(496, Backing::File(0), false);
        let t = k.task_new(mm, Some(0), 0, 496);
        k.context_switch(0, Some(t));
        for vp in 0..496 {
            k.user_access(0, mm, vp, false);
        }
        assert_eq!(k.ra.folios_by_order[0], 496);
        let stat = |name: &str| k.lock_stats().iter().find(|(n, _)| *n == name).unwrap().1;
        (k.cpus[0].clock, stat("lru_lock_acquired"))
    };
    let (base, batches) = run(0, 0);
    // filemap_add_folio → folio_add_lru: one lru_lock section per full batch of 31.
    assert_eq!(batches, 496 / 31);
    // filemap_alloc_folio per folio, ext4_map_blocks per page zeroed.
    assert_eq!(run(1_000, 0).0 - base, 496 * 1_000);
    assert_eq!(run(0, 10_000).0 - base, 496 * 10_000);
}
