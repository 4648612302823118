//! Mechanism tests: each sets up a tiny machine by hand and checks one kernel
//! behaviour through the model's own counters.

mod common;

use reclaimlab_sim::config::{Patch, Policy, SimConfig};
use reclaimlab_sim::kernel::{Backing, Kernel};
use reclaimlab_sim::mm::memory::Access;
use reclaimlab_sim::mm::mm_types_task::TlbUbc;
use reclaimlab_sim::mm::pgtable::*;
use reclaimlab_sim::mm::rmap::TTU_BATCH_FLUSH;
use reclaimlab_sim::mm::vmstat::VmEventItem::*;

fn cfg() -> SimConfig {
    common::cfg(0)
}

fn kernel(cpus: usize, limit_pages: u64) -> Kernel {
    Kernel::new(
        cfg(),
        Policy::linux_6_18(),
        cpus,
        limit_pages,
        1 << 20,
        60,
        1,
    )
}

/// An anon mm with `pages` pages, run by a task on `cpu` that writes every page.
fn dirty_mm_on(k: &mut Kernel, cpu: usize, pages: u64) -> usize {
    let mm = k.mm_alloc(pages, Backing::Anon, true);
    let t = k.task_new(mm, Some(cpu), 0, pages);
    k.context_switch(cpu, Some(t));
    for vp in 0..pages {
        assert_eq!(k.user_access(cpu, mm, vp, true), Access::Fault);
    }
    // Its folios on the LRU, as once its CPU's lru_add batch has moved.
    k.lru_add_drain(cpu);
    mm
}

fn tlb_total(k: &Kernel) -> u64 {
    k.irq.tlb_shootdowns.iter().sum()
}
fn cal_total(k: &Kernel) -> u64 {
    k.irq.function_call_interrupts.iter().sum()
}

#[test]
fn flush_for_mm_only_on_cpu0_from_cpu0_sends_no_ipi() {
    let mut k = kernel(4, 1024);
    let mm = dirty_mm_on(&mut k, 0, 8);
    assert_eq!(k.mms[mm].cpumask.iter().collect::<Vec<_>>(), vec![0]);
    let mut ubc = TlbUbc::new(k.arch, 4);
    for vp in 0..8 {
        let pfn = pte_pfn(k.mms[mm].ptes[vp]);
        // Not deferred (no other CPU in the mask): flushed locally at once.
        k.try_to_unmap(0, &mut ubc, pfn, TTU_BATCH_FLUSH);
    }
    assert!(!ubc.flush_required, "should_defer_flush must be false");
    k.try_to_unmap_flush(0, &mut ubc);
    assert_eq!(tlb_total(&k), 0);
    assert_eq!(cal_total(&k), 0);
    assert_eq!(k.vmstat[NR_TLB_REMOTE_FLUSH], 0);
    assert_eq!(k.vmstat[NR_TLB_LOCAL_FLUSH_ONE], 8, "one INVLPG per page");
    assert!(k.check_invariants_tlb_only().is_empty());
}

#[test]
fn two_cpu_mm_gets_one_ipi_per_batch_not_per_page() {
    let mut k = kernel(4, 1024);
    let mm = dirty_mm_on(&mut k, 1, 20);
    // The mm's task now runs on CPU 1; CPU 0 reclaims (it runs another process).
    let other = dirty_mm_on(&mut k, 0, 1);
    let _ = other;
    assert!(k.mms[mm].cpumask.test(1) && !k.mms[mm].cpumask.test(0));
    let mut ubc = TlbUbc::new(k.arch, 4);
    for vp in 0..20 {
        let pfn = pte_pfn(k.mms[mm].ptes[vp]);
        k.try_to_unmap(0, &mut ubc, pfn, TTU_BATCH_FLUSH);
    }
    assert!(ubc.flush_required && ubc.writable);
    assert_eq!(tlb_total(&k), 0, "nothing is sent before the flush");
    k.try_to_unmap_flush(0, &mut ubc);
    assert_eq!(k.irq.tlb_shootdowns, vec![0, 1, 0, 0]);
    assert_eq!(k.irq.function_call_interrupts, vec![0, 1, 0, 0]);
    assert_eq!(k.vmstat[NR_TLB_REMOTE_FLUSH], 1);
    assert!(k.check_invariants_tlb_only().is_empty());
    // CPU 1's stale entries are gone: touching the pages faults again.
    assert_eq!(k.user_access(1, mm, 3, true), Access::Fault);
}

#[test]
fn dirty_pte_forces_flush_before_pageout() {
    let mut k = kernel(2, 1024);
    let mm = dirty_mm_on(&mut k, 1, 4);
    let _ = dirty_mm_on(&mut k, 0, 1);
    // Memcg reclaim from CPU 0: every folio of mm has a dirty PTE cached on CPU 1.
    let before = tlb_total(&k);
    let pswpout0 = k.vmstat[PSWPOUT];
    // Clear the young bits first so folio_check_references lets them go.
    for vp in 0..4 {
        k.mms[mm].ptes[vp] &= !PTE_YOUNG;
    }
    k.mms[1].ptes[0] &= !PTE_YOUNG;
    let reclaimed = k.try_to_free_mem_cgroup_pages(0, 4);
    assert!(reclaimed >= 4, "reclaimed {reclaimed}");
    let written = k.vmstat[PSWPOUT] - pswpout0;
    let ipis = tlb_total(&k) - before;
    // One flush per written folio of mm (CPU 1 is in its mask); none batched past pageout.
    assert!(written >= 4);
    assert!(ipis >= 4, "{ipis} IPIs for {written} pageouts");
    assert!(
        k.check_invariants().is_empty(),
        "{:?}",
        k.check_invariants()
    );
}

/// Reclaim 8 written pages of an mm run on CPU 1, read them back on CPU 1, and reclaim them
/// again from CPU 0. Returns (pswpout of the second reclaim, its TLB shootdowns, the kernel).
fn reclaim_read_back_reclaim(synchronous_io: bool) -> (u64, u64, Kernel) {
    let mut k = kernel(2, 1024);
    k.swap.synchronous_io = synchronous_io;
    let mm = dirty_mm_on(&mut k, 1, 8);
    let _ = dirty_mm_on(&mut k, 0, 1);
    for vp in 0..8 {
        k.mms[mm].ptes[vp] &= !PTE_YOUNG;
    }
    k.mms[1].ptes[0] &= !PTE_YOUNG;
    k.try_to_free_mem_cgroup_pages(0, 8);
    assert_eq!(k.mms[1].rss, 0);
    let after_out = tlb_total(&k);
    // Read everything back on CPU 1: clean PTEs.
    k.context_switch(1, Some(0));
    for vp in 0..8 {
        assert_eq!(k.user_access(1, mm, vp, false), Access::Fault);
    }
    // Read without readahead windows, they wait in CPU 1's lru_add batch until it moves.
    k.lru_add_drain(1);
    k.context_switch(0, Some(1));
    for vp in 0..8 {
        k.mms[mm].ptes[vp] &= !PTE_YOUNG;
    }
    let w0 = k.vmstat[PSWPOUT];
    k.try_to_free_mem_cgroup_pages(0, 8);
    assert!(
        k.check_invariants().is_empty(),
        "{:?}",
        k.check_invariants()
    );
    let tlb = tlb_total(&k) - after_out;
    (k.vmstat[PSWPOUT] - w0, tlb, k)
}

#[test]
fn clean_ptes_share_one_flush_per_batch() {
    // Read-faulted pages have clean PTEs: unmapping them sets no `writable`, so there is no
    // flush_dirty before their pageouts, only the one flush of the batch.
    let (_, tlb, _) = reclaim_read_back_reclaim(true);
    assert_eq!(tlb, 1, "one IPI for the whole batch");
    let (_, tlb, _) = reclaim_read_back_reclaim(false);
    assert_eq!(tlb, 1, "one IPI for the whole batch");
}

#[test]
fn zram_swapin_skips_the_swap_cache_so_rereclaim_writes_again() {
    // zram is SWP_SYNCHRONOUS_IO: do_swap_page reads a count-1 entry into a new folio outside
    // the swap cache and frees the slot, so even a page only read since must be written again.
    let (written, _, k) = reclaim_read_back_reclaim(true);
    assert_eq!(written, 8, "every read-back page is paged out again");
    assert_eq!(k.vmstat[PSWPIN], 8);
    // A device without SWP_SYNCHRONOUS_IO keeps the swap copy of a read-faulted page: the
    // clean swap-cache folios are freed without pageout.
    let (written, _, _) = reclaim_read_back_reclaim(false);
    assert_eq!(written, 0, "clean swap-cache folios need no pageout");
}

#[test]
fn lazy_cpu_gets_no_ipi_and_flushes_when_it_switches_back() {
    let mut k = kernel(2, 1024);
    let mm = dirty_mm_on(&mut k, 1, 4);
    let _ = dirty_mm_on(&mut k, 0, 1);
    // CPU 1 goes idle: lazy TLB, mm stays loaded and in the mask.
    k.context_switch(1, None);
    assert!(k.cpus[1].is_lazy && k.cpus[1].loaded_mm == Some(mm));
    after_all(&mut k, 0);
    let mut ubc = TlbUbc::new(k.arch, 2);
    let pfn = pte_pfn(k.mms[mm].ptes[2]);
    k.try_to_unmap(0, &mut ubc, pfn, TTU_BATCH_FLUSH);
    assert!(ubc.flush_required);
    k.try_to_unmap_flush(0, &mut ubc);
    assert_eq!(tlb_total(&k), 0, "lazy CPUs are skipped");
    assert_eq!(
        k.vmstat[NR_TLB_REMOTE_FLUSH], 1,
        "counted on the sender all the same"
    );
    // The stale entry is still there but unusable...
    assert!(k.cpus[1].tlb.lookup(mm, 2).is_some());
    assert!(k.check_invariants_tlb_only().is_empty());
    // ...and switching back flushes it.
    k.context_switch(1, Some(0));
    assert!(k.cpus[1].tlb.lookup(mm, 2).is_none());
}

#[test]
fn idle_cpu_that_left_the_mm_for_init_mm_gets_batched_flush_ipis() {
    // Two idle CPUs in the mm's cpumask: CPU 1 stays lazy on the mm; CPU 2 receives an
    // unconditional (freed_tables) flush while lazy, which switches it to init_mm
    // (flush_tlb_func -> switch_mm_irqs_off(NULL, &init_mm, NULL): is_lazy = false), and its
    // bit stays in the mask. A later reclaim batch (mm = NULL) skips CPU 1 and interrupts CPU 2.
    let mut k = kernel(3, 1024);
    let mm = dirty_mm_on(&mut k, 1, 4);
    let t = k.cpus[1].curr.unwrap();
    k.context_switch(1, None);
    k.context_switch(2, Some(t));
    k.context_switch(2, None);
    let _ = dirty_mm_on(&mut k, 0, 1);
    assert!(k.cpus[1].is_lazy && k.cpus[2].is_lazy);
    k.flush_tlb_mm_range(0, mm, 0, 1, true);
    assert_eq!(
        k.irq.tlb_shootdowns,
        vec![0, 1, 1],
        "freed_tables reaches lazy CPUs"
    );
    assert!(k.cpus[1].loaded_mm.is_none() && k.cpus[2].loaded_mm.is_none());
    assert!(!k.cpus[1].is_lazy && !k.cpus[2].is_lazy);
    // Make CPU 1 lazy on the mm again; CPU 2 idles on init_mm (enter_lazy_tlb is a no-op).
    k.context_switch(1, Some(t));
    k.context_switch(1, None);
    k.context_switch(2, None);
    assert!(k.cpus[1].is_lazy && k.cpus[1].loaded_mm == Some(mm));
    assert!(!k.cpus[2].is_lazy && k.cpus[2].loaded_mm.is_none());
    assert_eq!(k.mms[mm].cpumask.iter().collect::<Vec<_>>(), vec![1, 2]);
    let cal_before = k.irq.function_call_interrupts.clone();
    after_all(&mut k, 0);
    let mut ubc = TlbUbc::new(k.arch, 3);
    let pfn = pte_pfn(k.mms[mm].ptes[2]);
    k.try_to_unmap(0, &mut ubc, pfn, TTU_BATCH_FLUSH);
    assert!(ubc.flush_required);
    k.try_to_unmap_flush(0, &mut ubc);
    assert_eq!(
        k.irq.tlb_shootdowns,
        vec![0, 1, 2],
        "the init_mm CPU is interrupted, the lazy one is not"
    );
    assert_eq!(k.irq.function_call_interrupts[1], cal_before[1]);
    assert_eq!(k.irq.function_call_interrupts[2], cal_before[2] + 1);
    assert!(k.check_invariants_tlb_only().is_empty());
}

#[test]
fn mm_cpumask_is_not_cleared_on_switch_away() {
    let mut k = kernel(3, 1024);
    let mm = dirty_mm_on(&mut k, 0, 1);
    let t = k.cpus[0].curr.unwrap();
    k.context_switch(0, None);
    k.context_switch(2, Some(t));
    assert_eq!(k.mms[mm].cpumask.iter().collect::<Vec<_>>(), vec![0, 2]);
}

#[test]
fn ceiling_turns_large_ranges_into_full_flushes() {
    let mut k = kernel(1, 1024);
    let mm = dirty_mm_on(&mut k, 0, 64);
    k.flush_tlb_mm_range(0, mm, 0, 33, true);
    assert_eq!(k.vmstat[NR_TLB_LOCAL_FLUSH_ONE], 33);
    k.flush_tlb_mm_range(0, mm, 0, 34, true);
    assert_eq!(k.vmstat[NR_TLB_LOCAL_FLUSH_ALL], 1);
}

#[test]
fn batch_dirty_flush_sends_one_ipi_per_batch_where_618_sends_one_per_folio() {
    let ipis = |batch: bool| {
        let mut p = Policy::linux_6_18();
        p.set(Patch::BatchDirtyFlush, batch);
        let mut k = Kernel::new(cfg(), p, 2, 1024, 1 << 20, 60, 1);
        let mm = dirty_mm_on(&mut k, 1, 20);
        let _ = dirty_mm_on(&mut k, 0, 1);
        for vp in 0..20 {
            k.mms[mm].ptes[vp] &= !PTE_YOUNG;
        }
        k.mms[1].ptes[0] &= !PTE_YOUNG;
        let before = tlb_total(&k);
        let out0 = k.vmstat[PSWPOUT];
        k.try_to_free_mem_cgroup_pages(0, 32);
        assert_eq!(k.vmstat[PSWPOUT] - out0, 21, "every dirty folio is written");
        assert!(
            k.check_invariants().is_empty(),
            "{:?}",
            k.check_invariants()
        );
        tlb_total(&k) - before
    };
    let per_folio = ipis(false);
    let batched = ipis(true);
    assert_eq!(
        per_folio, 20,
        "6.18: one flush (to CPU 1) per dirty folio of the mm"
    );
    // One per shrink_folio_list call (the priority loop makes a few small calls here).
    assert!(batched <= 3, "batch-dirty-flush: {batched} IPIs");
}

#[test]
fn two_calls_queued_to_one_busy_cpu_share_an_interrupt() {
    use reclaimlab_sim::arch::ArchTlbBatch;
    // smp_call_function_many sends an IPI only when the target's call queue was empty: two
    // flush_tlb_func calls queued to CPU 2 before its handler took the queue run in one
    // interrupt (smp.rs).
    let mut k = kernel(3, 1024);
    let mm = dirty_mm_on(&mut k, 2, 4);
    let flush_from = |k: &mut Kernel, cpu: usize| {
        let mut batch = ArchTlbBatch::new(k.arch, 3);
        k.arch_tlbbatch_add_pending(cpu, &mut batch, mm, 0, 1);
        k.arch_tlbbatch_flush(cpu, &mut batch);
    };
    let t = 1_000_000;
    for c in 0..3 {
        k.cpus[c].clock = t;
    }
    flush_from(&mut k, 0);
    flush_from(&mut k, 1);
    assert_eq!(k.irq.tlb_shootdowns[2], 2, "two callbacks on CPU 2");
    assert_eq!(k.irq.function_call_interrupts[2], 1, "one interrupt");
    // A call long after the first interrupt was handled needs its own.
    k.cpus[1].clock = t + 100 * k.cost.ipi_delivery;
    flush_from(&mut k, 1);
    assert_eq!(k.irq.tlb_shootdowns[2], 3);
    assert_eq!(k.irq.function_call_interrupts[2], 2);
    assert!(
        k.check_invariants().is_empty(),
        "{:?}",
        k.check_invariants()
    );
}

#[test]
fn populate_read_faults_in_without_a_tlb_fill_and_marks_accessed() {
    use reclaimlab_sim::mm::folio::pg;
    let mut k = kernel(1, 1024);
    let mm = k.mm_alloc(3, Backing::Anon, true);
    let t = k.task_new(mm, Some(0), 0, 3);
    k.context_switch(0, Some(t));
    // Page 0 never touched: MADV_POPULATE_READ maps the zero page, young, and fills no TLB.
    assert_eq!(k.populate_read(0, mm, 0), Access::Fault);
    let pte = k.mms[mm].ptes[0];
    assert!(pte_present(pte) && pte & PTE_YOUNG != 0);
    assert!(
        k.cpus[0].tlb.lookup(mm, 0).is_none(),
        "no user access, no TLB entry"
    );
    // Page 1 written: a resident inactive folio. The first populate sets PG_referenced, the
    // second activates it (folio_mark_accessed).
    assert_eq!(k.user_access(0, mm, 1, true), Access::Fault);
    k.lru_add_drain(0);
    let pfn = pte_pfn(k.mms[mm].ptes[1]);
    let act0 = k.vmstat[PGACTIVATE];
    assert_eq!(k.populate_read(0, mm, 1), Access::Walk);
    assert!(k.folios.get(pfn).test(pg::REFERENCED));
    assert!(!k.folios.get(pfn).test(pg::ACTIVE));
    assert_eq!(k.populate_read(0, mm, 1), Access::Walk);
    assert!(k.folios.get(pfn).test(pg::ACTIVE));
    assert!(!k.folios.get(pfn).test(pg::REFERENCED));
    assert_eq!(k.vmstat[PGACTIVATE], act0 + 1);
    // Page 2 written and still in the lru_add batch: the second populate only marks it
    // active (__lru_cache_activate_folio), no PGACTIVATE; the batch's move puts it on the
    // active list.
    assert_eq!(k.user_access(0, mm, 2, true), Access::Fault);
    let pfn = pte_pfn(k.mms[mm].ptes[2]);
    k.populate_read(0, mm, 2);
    k.populate_read(0, mm, 2);
    assert!(k.folios.get(pfn).test(pg::ACTIVE) && !k.folios.get(pfn).test(pg::LRU));
    assert_eq!(k.vmstat[PGACTIVATE], act0 + 1);
    k.lru_add_drain(0);
    use reclaimlab_sim::mm::folio::LRU_ACTIVE_ANON;
    assert_eq!(k.folios.get(pfn).lru, LRU_ACTIVE_ANON);
    assert!(
        k.check_invariants().is_empty(),
        "{:?}",
        k.check_invariants()
    );
}

/// CPU 1 ran the reclaimer's mm once (its bit stays) and now runs another process, so it is
/// not lazy; CPU 0 runs the reclaimer's mm again. Returns the kernel and that mm.
fn reclaimer_on_0_other_process_on_1() -> (Kernel, usize) {
    let mut k = kernel(2, 1024);
    let mm = dirty_mm_on(&mut k, 0, 8);
    let t = k.cpus[0].curr.unwrap();
    k.context_switch(0, None);
    k.context_switch(1, Some(t));
    let _other = dirty_mm_on(&mut k, 1, 1);
    k.context_switch(0, Some(t));
    assert_eq!(k.mms[mm].cpumask.iter().collect::<Vec<_>>(), vec![0, 1]);
    assert!(!k.cpus[1].is_lazy);
    (k, mm)
}

/// CPU `cpu`'s clock moved past every other CPU's: what it does next comes after what they
/// did (a sender behind a target reads the target's state at its own time).
fn after_all(k: &mut Kernel, cpu: usize) {
    let latest = k.cpus.iter().map(|c| c.clock).max().unwrap();
    k.cpus[cpu].clock = latest + 1;
}

/// One reclaim batch (mm = NULL) from CPU 0 unmapping the mm's page `vp`, after what every CPU
/// has done so far.
fn batch_flush(k: &mut Kernel, mm: usize, vp: usize) {
    after_all(k, 0);
    let mut ubc = TlbUbc::new(k.arch, 2);
    k.try_to_unmap(0, &mut ubc, pte_pfn(k.mms[mm].ptes[vp]), TTU_BATCH_FLUSH);
    k.try_to_unmap_flush(0, &mut ubc);
}

#[test]
fn a_cpu_that_idles_before_its_flush_call_arrives_ends_on_init_mm() {
    // A batch queues a call to CPU 1 while its task runs, and the task sleeps before the
    // interrupt is delivered: flush_tlb_func finds the CPU lazy and leaves for init_mm, where
    // it idles non-lazy and takes every later batch whose mask holds it.
    let (mut k, mm) = reclaimer_on_0_other_process_on_1();
    k.cpus[0].clock = k.cpus[0].clock.max(k.cpus[1].clock) + 1_000_000;
    let mut ubc = TlbUbc::new(k.arch, 2);
    k.try_to_unmap(0, &mut ubc, pte_pfn(k.mms[mm].ptes[0]), TTU_BATCH_FLUSH);
    // Queued at the flush's start plus one ipi_send; entered a delivery later.
    k.cpus[1].clock = k.cpus[0].clock + k.cost.ipi_send + k.cost.ipi_delivery / 2;
    k.try_to_unmap_flush(0, &mut ubc);
    assert_eq!(k.irq.tlb_shootdowns, vec![0, 1]);
    k.context_switch(1, None);
    assert!(
        !k.cpus[1].is_lazy && k.cpus[1].loaded_mm.is_none(),
        "on init_mm, not lazy"
    );
    batch_flush(&mut k, mm, 1);
    assert_eq!(
        k.irq.tlb_shootdowns,
        vec![0, 2],
        "the idle CPU is interrupted"
    );

    // The same with the interrupt taken before the task slept: the CPU idles lazily on the
    // other mm and the next batch skips it.
    let (mut k, mm) = reclaimer_on_0_other_process_on_1();
    k.cpus[1].clock = k.cpus[0].clock + 1_000_000;
    batch_flush(&mut k, mm, 0);
    k.context_switch(1, None);
    assert!(k.cpus[1].is_lazy);
    batch_flush(&mut k, mm, 1);
    assert_eq!(k.irq.tlb_shootdowns, vec![0, 1], "the lazy CPU is skipped");

    // A sender the engine ran ahead of CPU 1 queues its call after the time CPU 1's task
    // sleeps at, from CPU 1's state before it: in the kernel that CPU was lazy by then and
    // took no call, so the call does not send it to init_mm either.
    let (mut k, mm) = reclaimer_on_0_other_process_on_1();
    k.cpus[0].clock = k.cpus[1].clock + 1_000_000;
    batch_flush(&mut k, mm, 0);
    k.context_switch(1, None);
    assert!(k.cpus[1].is_lazy, "lazy: the call came after it slept");
    batch_flush(&mut k, mm, 1);
    assert_eq!(k.irq.tlb_shootdowns, vec![0, 1], "the lazy CPU is skipped");
}

#[test]
fn a_flush_call_reaching_a_cpu_inside_scheduler_irqs_off_section_ends_it_on_init_mm() {
    // __schedule disables interrupts well before context_switch's enter_lazy_tlb: a call that
    // reaches CPU 1 inside that section (its task still ran when the sender looked) is taken
    // after the switch, lazy, and sends the CPU to init_mm; one taken before the section was
    // handled while the task ran, and the CPU idles lazily.
    let section = {
        let (k, _) = reclaimer_on_0_other_process_on_1();
        k.cost.schedule_irqs_off_idle
    };
    assert!(section > 0);
    for (before_switch, on_init_mm) in [(section / 2, true), (section * 2, false)] {
        let (mut k, mm) = reclaimer_on_0_other_process_on_1();
        k.cpus[0].clock = k.cpus[0].clock.max(k.cpus[1].clock) + 1_000_000;
        let mut ubc = TlbUbc::new(k.arch, 2);
        k.try_to_unmap(0, &mut ubc, pte_pfn(k.mms[mm].ptes[0]), TTU_BATCH_FLUSH);
        // The interrupt is taken a send and a delivery after the flush starts; CPU 1's task
        // sleeps `before_switch` ns after that.
        let entry = k.cpus[0].clock + k.cost.ipi_send + k.cost.ipi_delivery;
        k.cpus[1].clock = entry + before_switch;
        k.try_to_unmap_flush(0, &mut ubc);
        assert_eq!(k.irq.tlb_shootdowns, vec![0, 1]);
        k.context_switch(1, None);
        assert_eq!(
            !k.cpus[1].is_lazy && k.cpus[1].loaded_mm.is_none(),
            on_init_mm,
            "taken {before_switch} ns before the switch, section {section} ns"
        );
        batch_flush(&mut k, mm, 1);
        let expect = if on_init_mm { 2 } else { 1 };
        assert_eq!(k.irq.tlb_shootdowns, vec![0, expect]);
    }
}

#[test]
fn a_sender_behind_a_target_reads_its_lazy_state_at_its_own_time() {
    // CPU 1 (the other process's CPU, in the mm's cpumask) goes idle at `idle_at`, and the
    // engine has simulated that before CPU 0, still behind, flushes a batch. At the sender's
    // time CPU 1 ran a task (not lazy), so should_flush_tlb sent it the call: taken while it
    // ran (it idles lazily), or, if due inside __schedule's interrupts-off section, after the
    // switch (init_mm). A batch from after `idle_at` skips the lazy CPU.
    let cases = |k: &Kernel| {
        let section = k.cost.schedule_irqs_off_idle;
        let due = k.cost.ipi_send + k.cost.ipi_delivery;
        [
            (section * 4 + due, Some(false)),
            (section / 2 + due, Some(true)),
            (0, None),
        ]
    };
    let n = {
        let (k, _) = reclaimer_on_0_other_process_on_1();
        cases(&k).len()
    };
    for i in 0..n {
        let (mut k, mm) = reclaimer_on_0_other_process_on_1();
        let (lead, expect) = cases(&k)[i];
        let idle_at = k.cpus[0].clock.max(k.cpus[1].clock) + 1_000_000;
        k.cpus[1].clock = idle_at;
        k.context_switch(1, None);
        assert!(k.cpus[1].is_lazy);
        k.cpus[0].clock = if expect.is_some() {
            idle_at - lead
        } else {
            idle_at + 1
        };
        let mut ubc = TlbUbc::new(k.arch, 2);
        k.try_to_unmap(0, &mut ubc, pte_pfn(k.mms[mm].ptes[0]), TTU_BATCH_FLUSH);
        k.try_to_unmap_flush(0, &mut ubc);
        match expect {
            Some(init_mm) => {
                assert_eq!(k.irq.tlb_shootdowns, vec![0, 1], "sent: CPU 1 ran then");
                assert_eq!(
                    !k.cpus[1].is_lazy && k.cpus[1].loaded_mm.is_none(),
                    init_mm,
                    "flush started {lead} ns before CPU 1 idled"
                );
            }
            None => assert_eq!(k.irq.tlb_shootdowns, vec![0, 0], "lazy by then: skipped"),
        }
        assert!(k.check_invariants_tlb_only().is_empty());
    }
}

/// An anon mm of `active` pages activated (written, then two populate reads) and `inactive`
/// pages written once whose young bits are cleared, run on CPU 0 of a one-CPU kernel.
fn active_and_inactive_anon(active: u64, inactive: u64) -> Kernel {
    let mut k = kernel(1, 1024);
    let mm = k.mm_alloc(active + inactive, Backing::Anon, true);
    let t = k.task_new(mm, Some(0), 0, active + inactive);
    k.context_switch(0, Some(t));
    for vp in 0..active + inactive {
        assert_eq!(k.user_access(0, mm, vp, true), Access::Fault);
    }
    k.lru_add_drain(0);
    for vp in 0..active {
        k.populate_read(0, mm, vp);
        k.populate_read(0, mm, vp);
    }
    for vp in active..active + inactive {
        k.mms[mm].ptes[vp as usize] &= !PTE_YOUNG;
    }
    k
}

#[test]
fn reclaim_reads_list_sizes_as_the_last_memcg_stats_flush_left_them() {
    use reclaimlab_sim::mm::folio::{LRU_ACTIVE_ANON, LRU_INACTIVE_ANON};
    use reclaimlab_sim::mm::memcontrol::{FLUSH_PHASE_NS, FLUSH_TIME_NS};
    // Never flushed: the memcg's statistics still say its lists are empty, so
    // inactive_is_low is false and the active list is not aged although it is 8 times the
    // inactive one; reclaim frees the 8 cold inactive pages only.
    let mut k = active_and_inactive_anon(64, 8);
    assert_eq!(k.lruvec.size(LRU_ACTIVE_ANON), 64);
    assert_eq!(k.lruvec_page_state_lru(LRU_ACTIVE_ANON), 0);
    assert_eq!(k.try_to_free_mem_cgroup_pages(0, 8), 8);
    assert_eq!(k.vmstat[PGDEACTIVATE], 0);
    // Flushed before the reclaim: the same lists, and inactive_is_low deactivates.
    let mut k = active_and_inactive_anon(64, 8);
    k.flush_memcg_stats_dwork(FLUSH_PHASE_NS);
    assert_eq!(k.lruvec_page_state_lru(LRU_ACTIVE_ANON), 64);
    assert_eq!(k.lruvec_page_state_lru(LRU_INACTIVE_ANON), 8);
    k.try_to_free_mem_cgroup_pages(0, 8);
    assert!(k.vmstat[PGDEACTIVATE] > 0);
    // The lists changed; the statistics follow only at the next period.
    let moved = k.lruvec.size(LRU_ACTIVE_ANON);
    assert_ne!(moved, 64);
    k.flush_memcg_stats_dwork(FLUSH_PHASE_NS + FLUSH_TIME_NS - 1);
    assert_eq!(k.lruvec_page_state_lru(LRU_ACTIVE_ANON), 64);
    k.flush_memcg_stats_dwork(FLUSH_PHASE_NS + FLUSH_TIME_NS);
    assert_eq!(k.lruvec_page_state_lru(LRU_ACTIVE_ANON), moved);
    assert!(
        k.check_invariants().is_empty(),
        "{:?}",
        k.check_invariants()
    );
}

#[test]
fn a_folio_populate_faults_in_is_activated_on_reclaims_first_trip() {
    use reclaimlab_sim::mm::folio::pg;
    // __get_user_pages retries follow_page_mask after faultin_page, and follow_page_pte's
    // FOLL_TOUCH marks the new folio accessed: a folio MADV_POPULATE_READ swaps in carries
    // PG_referenced, one a user read swaps in does not.
    let mut k = kernel(1, 1024);
    let mm = dirty_mm_on(&mut k, 0, 2);
    for vp in 0..2 {
        k.mms[mm].ptes[vp] &= !PTE_YOUNG;
    }
    assert_eq!(k.try_to_free_mem_cgroup_pages(0, 2), 2);
    assert!(!pte_present(k.mms[mm].ptes[0]) && !pte_present(k.mms[mm].ptes[1]));
    assert_eq!(k.populate_read(0, mm, 0), Access::Fault);
    assert_eq!(k.user_access(0, mm, 1, false), Access::Fault);
    // Two folios in CPU 0's lru_add batch: reclaim's scan counts see nothing until it moves.
    k.lru_add_drain(0);
    let (p0, p1) = (pte_pfn(k.mms[mm].ptes[0]), pte_pfn(k.mms[mm].ptes[1]));
    assert!(k.folios.get(p0).test(pg::REFERENCED));
    assert!(!k.folios.get(p1).test(pg::REFERENCED));
    // Both PTEs are young; reclaim's first trip activates the referenced folio and keeps the
    // other for a second look, which finds it cold and frees it.
    let act = k.vmstat[PGACTIVATE];
    assert_eq!(k.try_to_free_mem_cgroup_pages(0, 1), 0);
    assert_eq!(k.vmstat[PGACTIVATE], act + 1);
    assert!(k.folios.get(p0).test(pg::ACTIVE));
    assert!(!k.folios.get(p1).test(pg::ACTIVE));
    assert_eq!(k.try_to_free_mem_cgroup_pages(0, 1), 1);
    assert!(!pte_present(k.mms[mm].ptes[1]));
    assert!(pte_present(k.mms[mm].ptes[0]));
    assert!(
        k.check_invariants().is_empty(),
        "{:?}",
        k.check_invariants()
    );
}

#[test]
fn the_memcg_oom_report_flushes_the_statistics_reclaim_reads() {
    use reclaimlab_sim::mm::folio::LRU_INACTIVE_ANON;
    // No swap and an 8-page memcg: the ninth page's charge ends in the OOM killer, whose
    // report (mem_cgroup_print_oom_meminfo) flushes the memcg's statistics before the victim
    // exits, so they hold the lists as the OOM found them.
    let mut k = Kernel::new(cfg(), Policy::linux_6_18(), 1, 8, 0, 60, 1);
    let mm = k.mm_alloc(9, Backing::Anon, true);
    let t = k.task_new(mm, Some(0), 0, 9);
    k.context_switch(0, Some(t));
    for vp in 0..8 {
        assert_eq!(k.user_access(0, mm, vp, true), Access::Fault);
    }
    // On the list (otherwise they wait in the lru_add batch, which no reclaim of an empty
    // list drains, and the report would find the lists empty in the kernel too).
    k.lru_add_drain(0);
    assert_eq!(
        k.lruvec_page_state_lru(LRU_INACTIVE_ANON),
        0,
        "never flushed"
    );
    assert_eq!(k.user_access(0, mm, 8, true), Access::Killed);
    assert_eq!(k.memcg.oom_kills, 1);
    assert_eq!(k.lruvec.size(LRU_INACTIVE_ANON), 0, "the victim is gone");
    assert_eq!(k.lruvec_page_state_lru(LRU_INACTIVE_ANON), 8);
}

#[test]
fn oom_reports_are_ratelimited_ten_per_five_seconds() {
    use reclaimlab_sim::mm::oom_kill::RatelimitState;
    let mut rs = RatelimitState::default();
    let t0 = 1_000_000_000;
    for i in 0..10 {
        assert!(rs.ratelimit(t0 + i), "report {i} of the burst");
    }
    assert!(!rs.ratelimit(t0 + 4_999_999_999), "burst spent");
    assert!(rs.ratelimit(t0 + 5_000_000_001), "a new interval");
}
