//! A block swap device (`swap.device = "block"`): asynchronous swap-out whose folios are
//! rotated and freed after the write completes, swap-in through the swap cache with readahead
//! and a sleep until the read completes, and the completion interrupt's CPU as the waker.

mod common;

use reclaimlab_sim::config::Policy;
use reclaimlab_sim::kernel::{Backing, Kernel};
use reclaimlab_sim::mm::folio::pg;
use reclaimlab_sim::mm::memory::Access;
use reclaimlab_sim::mm::pgtable::*;
use reclaimlab_sim::mm::swap::{BlockConfig, IrqCpu, SwapConfig};
use reclaimlab_sim::mm::vmstat::VmEventItem::*;

fn block_kernel(cpus: usize, irq: IrqCpu) -> Kernel {
    block_kernel_cgroup(cpus, irq, false)
}

fn block_kernel_cgroup(cpus: usize, irq: IrqCpu, cgroup_v1: bool) -> Kernel {
    block_kernel_with(cpus, irq, cgroup_v1, false)
}

fn block_kernel_with(cpus: usize, irq: IrqCpu, cgroup_v1: bool, rotational: bool) -> Kernel {
    let mut cfg = common::cfg(0);
    cfg.cgroup_v1 = cgroup_v1;
    cfg.swap = SwapConfig {
        block: Some(BlockConfig {
            irq,
            page_cluster: 3,
            rotational,
            scheduler: reclaimlab_sim::mm::swap::Elevator::None,
            request_pages: 0,
            ring_descriptors: 0,
            indirect_desc: false,
        }),
    };
    let mut k = Kernel::new(cfg, Policy::linux_6_18(), cpus, 1024, 1 << 20, 60, 1);
    // Writes that take a second: none completes inside a reclaim call of the tests.
    k.cost.swap_write_latency = 1_000_000_000;
    k
}

/// An anon mm of `pages` pages whose task runs on `cpu` and has written every page.
fn dirty_mm_on(k: &mut Kernel, cpu: usize, pages: u64) -> (usize, usize) {
    let mm = k.mm_alloc(pages, Backing::Anon, true);
    let t = k.task_new(mm, Some(cpu), 0, pages);
    k.context_switch(cpu, Some(t));
    for vp in 0..pages {
        assert_eq!(k.user_access(cpu, mm, vp, true), Access::Fault);
    }
    // Its folios on the LRU, as once its CPU's lru_add batch has moved.
    k.lru_add_drain(cpu);
    (mm, t)
}

fn assert_invariants(k: &mut Kernel) {
    let errs = k.check_invariants();
    assert!(errs.is_empty(), "{errs:?}");
}

/// Reclaim every page of an 8-page mm run on CPU 1 from CPU 0, then let the writes complete.
/// Returns the kernel, the mm and its task.
fn swapped_out(irq: IrqCpu) -> (Kernel, usize, usize) {
    let mut k = block_kernel(2, irq);
    let (mm, t) = dirty_mm_on(&mut k, 1, 8);
    let (other, _) = dirty_mm_on(&mut k, 0, 1);
    for vp in 0..8 {
        k.mms[mm].ptes[vp] &= !PTE_YOUNG;
    }
    k.mms[other].ptes[0] &= !PTE_YOUNG;
    let reclaimed = k.try_to_free_mem_cgroup_pages(0, 8);
    // pageout only started the writes: nothing is freed yet, every page is under writeback.
    assert_eq!(reclaimed, 0);
    assert_eq!(k.mms[mm].rss, 0);
    assert!(k.vmstat[PSWPOUT] >= 8);
    for vp in 0..8 {
        let pte = k.mms[mm].ptes[vp];
        assert!(
            is_swap_pte(pte) && pte & PTE_SWPCACHE != 0,
            "page {vp}: {pte:#x}"
        );
        let f = k.folios.get(pte_pfn(pte));
        assert!(f.test(pg::WRITEBACK) && f.test(pg::RECLAIM) && !f.test(pg::DIRTY));
    }
    assert_eq!(k.vmstat[PGROTATED], 0);
    // The writes complete: folio_end_writeback rotates each to the inactive tail.
    k.cpus[0].clock += 2_000_000_000;
    k.writeback_poll(0);
    assert!(
        k.vmstat[PGROTATED] >= 8,
        "pgrotated {}",
        k.vmstat[PGROTATED]
    );
    for vp in 0..8 {
        let f = k.folios.get(pte_pfn(k.mms[mm].ptes[vp]));
        assert!(!f.test(pg::WRITEBACK) && !f.test(pg::ACTIVE) && f.test(pg::LRU));
    }
    // A later scan frees them, clean, without writing them again.
    let written = k.vmstat[PSWPOUT];
    let reclaimed = k.try_to_free_mem_cgroup_pages(0, 8);
    assert!(reclaimed >= 8, "reclaimed {reclaimed}");
    assert_eq!(k.vmstat[PSWPOUT], written);
    for vp in 0..8 {
        let pte = k.mms[mm].ptes[vp];
        assert!(
            is_swap_pte(pte) && pte & PTE_SWPCACHE == 0,
            "page {vp} still cached"
        );
    }
    assert_invariants(&mut k);
    (k, mm, t)
}

#[test]
fn swap_out_completes_asynchronously_rotates_then_frees() {
    let (k, _, _) = swapped_out(IrqCpu::Submitter);
    assert!(k.vmstat[SWAP_WRITE_REQUESTS] >= 1);
    assert!(k.vmstat[SWAP_WRITES_COMPLETED] >= 8);
}

#[test]
fn cgroup_v1_reclaim_waits_for_swap_writeback_and_v2_does_not() {
    for v1 in [false, true] {
        let mut k = block_kernel_cgroup(2, IrqCpu::Submitter, v1);
        let (mm, _) = dirty_mm_on(&mut k, 1, 8);
        let _ = dirty_mm_on(&mut k, 0, 1);
        for vp in 0..8 {
            k.mms[mm].ptes[vp] &= !PTE_YOUNG;
        }
        let reclaimed = k.try_to_free_mem_cgroup_pages(0, 8);
        if v1 {
            // Case 3 (!writeback_throttling_sane): a folio met again under writeback with
            // PG_reclaim is waited for (folio_wait_writeback), then freed.
            assert!(k.vmstat[RECLAIM_WRITEBACK_WAITS] > 0);
            assert!(reclaimed > 0, "v1 reclaimed {reclaimed}");
        } else {
            // Case 2: tagged and reactivated; nothing freed until the writes complete.
            assert_eq!(k.vmstat[RECLAIM_WRITEBACK_WAITS], 0);
            assert_eq!(reclaimed, 0);
        }
        assert_invariants(&mut k);
    }
}

/// Reclaim an 8-page mm run on CPU 0, from CPU 0, with the interrupt on CPU 1 and each page's
/// completion costing `ns`.
fn reclaimed_with_completion_cost(ns: u64) -> Kernel {
    reclaimed_with(|k| k.cost.swap_complete_page = ns)
}

/// Eight dirty, old pages of a task on CPU 0 reclaimed to the block device, with `set`
/// applied to the kernel first.
fn reclaimed_with(set: impl Fn(&mut Kernel)) -> Kernel {
    let mut k = block_kernel(2, IrqCpu::Cpu(1));
    set(&mut k);
    let (mm, _) = dirty_mm_on(&mut k, 0, 8);
    for vp in 0..8 {
        k.mms[mm].ptes[vp] &= !PTE_YOUNG;
    }
    let _ = k.try_to_free_mem_cgroup_pages(0, 8);
    k
}

#[test]
fn a_completion_takes_its_time_on_the_interrupt_cpu() {
    // Every write's completion (hardirq + BLOCK_SOFTIRQ, end_swap_bio_write) is CPU 1's
    // time, not the reclaimer's.
    let free = reclaimed_with_completion_cost(0);
    let mut k = reclaimed_with_completion_cost(1_000);
    let written = k.vmstat[PSWPOUT];
    assert!(written >= 8, "pswpout {written}");
    assert_eq!(free.vmstat[PSWPOUT], written);
    assert_eq!(k.cpus[1].clock - free.cpus[1].clock, written * 1_000);
    assert_eq!(k.vmstat[SWAP_COMPLETE_NS], written * 1_000);
    // The reclaimer's clock is where a free completion leaves it.
    assert_eq!(k.cpus[0].clock, free.cpus[0].clock);
    assert_invariants(&mut k);
}

#[test]
fn each_swap_request_takes_the_devices_service() {
    // The device serves a write batch's requests (runs of adjacent slots) one after another:
    // with a service per request it is busy longer, by one service per request at most
    // (a batch that finds the device idle is not delayed by the one before).
    let free = reclaimed_with(|_| {});
    let k = reclaimed_with(|k| k.cost.swap_write_request = 10_000);
    let requests = k.vmstat[SWAP_SUBMIT_REQUESTS];
    assert!(requests >= 1 && k.vmstat[PSWPOUT] >= 8);
    assert_eq!(free.vmstat[SWAP_SUBMIT_REQUESTS], requests);
    let longer = k.wb.busy_until - free.wb.busy_until;
    assert!(
        (10_000..=requests * 10_000).contains(&longer),
        "{longer} ns longer for {requests} requests"
    );
}

#[test]
fn swap_in_reads_ahead_and_the_faulting_task_sleeps() {
    let (mut k, mm, t) = swapped_out(IrqCpu::Submitter);
    k.context_switch(1, Some(t));
    let pswpin = k.vmstat[PSWPIN];
    let fault = |k: &mut Kernel, vp: u64| {
        assert_eq!(k.user_access(1, mm, vp, false), Access::Fault);
        let now = k.cpus[1].clock;
        let sleep = k.take_sleep(1);
        (now, sleep)
    };
    // No history: the first fault reads its page alone and sleeps until the read completes,
    // woken from the CPU it submitted on (per-CPU queues).
    let (now, sleep) = fault(&mut k, 0);
    let (until, waker) = sleep.expect("the faulting task sleeps on its read");
    assert!(until > now);
    assert_eq!(waker, Some(1));
    assert_eq!(k.vmstat[PSWPIN] - pswpin, 1);
    // Read without a window, its folio waits in CPU 1's lru_add batch, off the LRU.
    let on_lru = |k: &Kernel, vp: usize| k.folios.get(pte_pfn(k.mms[mm].ptes[vp])).test(pg::LRU);
    assert!(!on_lru(&k, 0));
    // An adjacent fault: a window of two (page 1 and page 2 ahead).
    let _ = fault(&mut k, 1);
    assert_eq!(k.vmstat[PSWPIN] - pswpin, 3);
    assert_eq!((k.vmstat[SWAP_RA], k.vmstat[SWAP_RA_HIT]), (1, 0));
    // swap_cluster_readahead drains the batch after the window: page 0's folio too.
    assert!(on_lru(&k, 0) && on_lru(&k, 1));
    // Page 2 is in the swap cache, its read still in flight: a minor fault that sleeps on it.
    let majflt = k.vmstat[PGMAJFAULT];
    let (_, sleep) = fault(&mut k, 2);
    assert!(
        sleep.is_some(),
        "a fault on a readahead folio in flight waits for it"
    );
    assert_eq!(k.vmstat[PGMAJFAULT], majflt);
    assert_eq!(k.vmstat[SWAP_RA_HIT], 1);
    assert_eq!(k.vmstat[SWAPIN_SLEEPS_ON_READAHEAD], 1);
    // With one hit the window grows to four: pages 3..7, three of them ahead.
    let _ = fault(&mut k, 3);
    assert_eq!(k.vmstat[PSWPIN] - pswpin, 7);
    assert_eq!(k.vmstat[SWAP_RA], 4);
    // Read faults keep the swap slots: the folios stay in the swap cache.
    for vp in 0..4 {
        let pfn = pte_pfn(k.mms[mm].ptes[vp]);
        assert!(pte_present(k.mms[mm].ptes[vp]));
        assert!(k.folios.get(pfn).test(pg::SWAPCACHE));
    }
    assert_invariants(&mut k);
}

/// Two 8-page mms (A run on CPU 1, B on CPU 0) reclaimed in LRU order, A's pages first, with
/// the writes completed and the folios freed: A's pages hold slots 1-8, B's 9-16 (one
/// device-wide cursor or CPU 0's own). Then A faults its pages 6 and 7 on CPU 1.
fn neighbours_read(rotational: bool) -> (Kernel, usize, usize) {
    let mut k = block_kernel_with(2, IrqCpu::Submitter, false, rotational);
    let (a, ta) = dirty_mm_on(&mut k, 1, 8);
    let (b, _) = dirty_mm_on(&mut k, 0, 8);
    for mm in [a, b] {
        for vp in 0..8 {
            k.mms[mm].ptes[vp] &= !PTE_YOUNG;
        }
    }
    k.try_to_free_mem_cgroup_pages(0, 16);
    k.cpus[0].clock += 2_000_000_000;
    k.writeback_poll(0);
    k.try_to_free_mem_cgroup_pages(0, 16);
    for mm in [a, b] {
        assert_eq!(k.mms[mm].rss, 0);
    }
    k.context_switch(1, Some(ta));
    for vp in [6, 7] {
        assert_eq!(k.user_access(1, a, vp, true), Access::Fault);
        let _ = k.take_sleep(1);
    }
    assert_invariants(&mut k);
    (k, a, b)
}

#[test]
fn a_rotational_device_reads_the_neighbouring_slots_whoever_holds_them() {
    // Page 7's slot (8) follows page 6's (7): swapin_nr_pages gives a window of two, the
    // aligned pair of slots 8-9, and slot 9 holds B's page 0: it is read into the swap cache
    // as readahead, for B.
    let (mut k, _, b) = neighbours_read(true);
    assert_eq!(k.vmstat[SWAP_RA], 1);
    // Every bio went out in a run of adjacent slots: one device request per plug.
    assert_eq!(
        k.vmstat[SWAP_SUBMIT_REQUESTS],
        k.vmstat[SWAP_READ_REQUESTS] + k.vmstat[SWAP_WRITE_REQUESTS]
    );
    let pte = k.mms[b].ptes[0];
    assert!(is_swap_pte(pte) && pte & PTE_SWPCACHE != 0, "{pte:#x}");
    let f = *k.folios.get(pte_pfn(pte));
    assert_eq!((f.owner as usize, f.index), (b, 0));
    // B's fault on it later is a minor fault and a hit, counted for the device.
    let majflt = k.vmstat[PGMAJFAULT];
    let t = k.task_new(b, Some(0), 0, 8);
    k.context_switch(0, Some(t));
    k.cpus[0].clock += 2_000_000_000;
    assert_eq!(k.user_access(0, b, 0, true), Access::Fault);
    assert_eq!(k.vmstat[PGMAJFAULT], majflt);
    assert_eq!(k.vmstat[SWAP_RA_HIT], 1);
    assert_eq!(k.swap.block.as_ref().unwrap().cluster_ra.hits, 1);
    assert_invariants(&mut k);
    // A non-rotational device reads the faulting address's neighbours in its own VMA: A has
    // no page 8, so nothing is read ahead and B's page stays on the device.
    let (k, _, b) = neighbours_read(false);
    assert_eq!(k.vmstat[SWAP_RA], 0);
    assert_eq!(k.mms[b].ptes[0] & PTE_SWPCACHE, 0);
}

#[test]
fn a_single_queue_device_wakes_from_its_interrupt_cpu() {
    let (mut k, mm, t) = swapped_out(IrqCpu::Cpu(0));
    k.context_switch(1, Some(t));
    assert_eq!(k.user_access(1, mm, 5, false), Access::Fault);
    let (_, waker) = k.take_sleep(1).expect("a sleep");
    assert_eq!(waker, Some(0), "the completion interrupt runs on CPU 0");
}

fn small(extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "machine.cpus=4",
        "workload.workers=4",
        "workload.bytes=64M",
        "memcg.limit=16M",
        "run.duration=1s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run(extra: &[&str]) -> reclaimlab_core::ResultDoc {
    let sets = small(extra);
    let sets: Vec<&str> = sets.iter().map(|s| s.as_str()).collect();
    common::sim_with("stress-vm", &sets, &[])
}

fn wakeups_by_cpu(doc: &reclaimlab_core::ResultDoc) -> Vec<u64> {
    doc.runs[0].extra["swap_block"]["io_wakeups_by_cpu"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

#[test]
fn a_block_run_sleeps_on_swap_in_and_rotates_written_folios() {
    let doc = run(&["swap.device=block"]);
    let c = &doc.runs[0].counters;
    assert!(c["pswpout"] > 0 && c["pswpin"] > 0, "{c:?}");
    assert!(
        c["pgrotated"] > 0,
        "writeback completions rotate folios: {c:?}"
    );
    assert!(c["swap_ra"] > 0 && c["swap_ra_hit"] > 0, "{c:?}");
    let b = &doc.runs[0].extra["swap_block"];
    assert!(b["swapin_sleeps"].as_u64().unwrap() > 0, "{b}");
    assert!(b["read_requests"].as_u64().unwrap() > 0, "{b}");
    assert!(b["completion_irq_ms"].as_u64().unwrap() > 0, "{b}");
    let wakeups = wakeups_by_cpu(&doc);
    assert!(
        wakeups.iter().filter(|&&w| w > 0).count() > 1,
        "per-CPU queues complete where the reads were submitted: {wakeups:?}"
    );
    // The zram model never rotates an anon folio, reads ahead or sleeps on swap.
    let zram = run(&[]);
    let z = &zram.runs[0].counters;
    assert_eq!(z["pgrotated"], 0);
    assert!(!z.contains_key("swap_ra"));
    assert!(!zram.runs[0].extra.contains_key("swap_block"));
}

#[test]
fn single_queue_completions_all_wake_from_its_cpu() {
    let doc = run(&["swap.device=block", "swap.irq_cpu=2"]);
    let wakeups = wakeups_by_cpu(&doc);
    assert!(wakeups[2] > 0, "{wakeups:?}");
    assert_eq!(wakeups.iter().sum::<u64>(), wakeups[2], "{wakeups:?}");
}

#[test]
fn block_runs_are_deterministic_and_zram_is_the_default() {
    let a = serde_json::to_string(&run(&["swap.device=block", "swap.irq_cpu=1"])).unwrap();
    let b = serde_json::to_string(&run(&["swap.device=block", "swap.irq_cpu=1"])).unwrap();
    assert!(a == b, "same scenario and seed, different results");
    let z = run(&["swap.device=zram"]);
    let d = run(&[]);
    assert_eq!(z.runs[0].counters, d.runs[0].counters);
    assert_eq!(z.runs[0].per_cpu, d.runs[0].per_cpu);
}

#[test]
fn bad_swap_keys_are_errors_naming_the_key() {
    let err = |extra: &[&str]| {
        let sets = small(extra);
        let sets: Vec<&str> = sets.iter().map(|s| s.as_str()).collect();
        common::try_sim_with("stress-vm", &sets, &[]).unwrap_err()
    };
    let e = err(&["swap.device=ssd"]);
    assert!(
        e.contains("swap.device") && e.contains("zram or block"),
        "{e}"
    );
    let e = err(&["swap.irq_cpu=1"]);
    assert!(e.contains("swap.irq_cpu") && e.contains("block"), "{e}");
    let e = err(&["swap.device=block", "swap.irq_cpu=4"]);
    assert!(e.contains("swap.irq_cpu") && e.contains("0-3"), "{e}");
    let e = err(&["swap.device=block", "swap.page_cluster=40"]);
    assert!(e.contains("swap.page_cluster"), "{e}");
    let e = err(&["swap.rotational=true"]);
    assert!(e.contains("swap.rotational") && e.contains("block"), "{e}");
    let e = err(&["swap.device=block", "swap.rotational=spinning"]);
    assert!(e.contains("swap.rotational"), "{e}");
}

#[test]
fn a_completion_wakes_its_sleeper_through_select_task_rq_fair_from_the_irq_cpu() {
    let (mut k, mut rqs) = common::machine(2, 2);
    // Task 1 runs on CPU 0 and sleeps on a read that completes at 1 ms, its interrupt on CPU 1.
    k.enqueue(&mut rqs, 0, 1, 0);
    k.block_task_woken_by(&mut rqs, 0, 1_000_000, Some(1));
    assert_eq!(k.cpus[0].curr, None);
    // Its previous CPU is idle at the completion: wake_affine_idle keeps it there.
    k.run_next_timer(&mut rqs);
    assert_eq!(k.tasks[1].cpu, Some(0));
    assert_eq!(k.se(1).nr_migrations, 0);
    assert_eq!(k.sched.io_wakeups, vec![0, 1]);
    // It sleeps again; meanwhile task 0 takes CPU 0. The idle interrupt CPU (sharing the
    // cache) is where the wake-up places it now.
    k.cpus[0].clock = 2_000_000;
    k.block_task_woken_by(&mut rqs, 0, 3_000_000, Some(1));
    k.enqueue(&mut rqs, 0, 0, 2_000_000);
    k.run_next_timer(&mut rqs);
    assert_eq!(k.tasks[1].cpu, Some(1));
    assert_eq!(k.se(1).nr_migrations, 1);
    assert_eq!(k.sched.io_wakeups, vec![0, 2]);
    assert!(k.sched.io_waker.is_empty());
    k.check_sched(&rqs, "test");
    assert_invariants(&mut k);
}
