//! Global reclaim (seed 003's scenario): node watermarks, kswapd as a lazy kernel thread,
//! and the `kswapd-mmap-read` workload under 4.2 (every unmap flushed at once) and 6.18
//! (TTU_BATCH_FLUSH).

mod common;

use common::cfg;
use reclaimlab_core::ResultDoc;
use reclaimlab_sim::arch::ArchTlbBatch;
use reclaimlab_sim::config::{Interleave, Patch, Policy};
use reclaimlab_sim::kernel::{Backing, File, Kernel};
use reclaimlab_sim::mm::page_alloc::Pgdat;
use reclaimlab_sim::mm::vmstat::VmEventItem::*;
use reclaimlab_sim::sched::RunQueues;

/// A 2-CPU kernel whose node has `managed` pages, a file mapping of `pages` pages per CPU, a
/// reader task for each on its CPU, and kswapd (asleep).
fn node(managed: u64, pages: u64) -> (Kernel, Vec<usize>) {
    node_with(managed, pages, Interleave::Step)
}

/// `node` with reclaim's preemption points as `interleave` says.
fn node_with(managed: u64, pages: u64, interleave: Interleave) -> (Kernel, Vec<usize>) {
    let mut c = cfg(0);
    c.interleave = interleave;
    let mut k = Kernel::new(c, Policy::linux_6_18(), 2, u64::MAX / 2, 0, 60, 1);
    k.pgdat = Pgdat::new(managed, 10);
    let mut mms = Vec::new();
    for cpu in 0..2 {
        k.files.push(File::new(pages as usize));
        let mm = k.mm_alloc(pages, Backing::File(cpu), false);
        let t = k.task_new(mm, Some(cpu), 0, pages);
        k.context_switch(cpu, Some(t));
        mms.push(mm);
    }
    k.kswapd_run();
    (k, mms)
}

#[test]
fn watermarks_follow_min_free_kbytes_and_scale_factor() {
    // 1 GiB: min_free_kbytes = int_sqrt(1048576 * 16) = 4096 → min 1024 pages; the gap is
    // max(min/4, 0.1% of managed) = 262 (6.18) or min/4 = 256 (before 4.6).
    let p = Pgdat::new(262_144, 10);
    assert_eq!(p.min_free_kbytes, 4096);
    assert_eq!((p.wmark_min, p.wmark_low, p.wmark_high), (1024, 1286, 1548));
    let p = Pgdat::new(262_144, 0);
    assert_eq!((p.wmark_min, p.wmark_low, p.wmark_high), (1024, 1280, 1536));
    // 64 GiB: min_free_kbytes 32768; the scale factor dominates the gap.
    let p = Pgdat::new(16 << 20, 10);
    assert_eq!(p.min_free_kbytes, 32768);
    assert_eq!(
        (p.wmark_min, p.wmark_low, p.wmark_high),
        (8192, 24969, 41746)
    );
    // Tiny machines are clamped at 128 kB.
    assert_eq!(Pgdat::new(1024, 10).min_free_kbytes, 256);
    assert_eq!(Pgdat::new(64, 10).min_free_kbytes, 128);
}

#[test]
fn kswapd_wakes_below_low_runs_lazily_and_sleeps_at_high() {
    // 4096 pages: min_free_kbytes 512 → min 128, low 160, high 192.
    let (mut k, mms) = node(4096, 8192);
    assert_eq!(
        (k.pgdat.wmark_min, k.pgdat.wmark_low, k.pgdat.wmark_high),
        (128, 160, 192)
    );
    let mut vp = 0;
    // CPU 1 reads until an allocation finds free pages below the low watermark.
    while !k.kswapd.wake_pending {
        // zone_watermark_ok(low) for order 0 passes while free > low.
        assert!(k.node_free_pages() >= k.pgdat.wmark_low, "woke late");
        k.user_access(1, mms[1], vp, false);
        vp += 1;
    }
    let free = k.node_free_pages();
    assert!(
        free <= k.pgdat.wmark_low && free > k.pgdat.wmark_min,
        "free {free}"
    );
    assert_eq!(k.vmstat[KSWAPD_WAKEUPS], 1);
    // The wakeup from CPU 1 places kswapd on its previous CPU (0): no CPU is idle and
    // wake_affine_weight prefers prev; it preempts the reader there (which has had its slice): a
    // kernel thread keeps the reader's mm loaded and the CPU is lazy.
    let mut rqs = RunQueues::new(2);
    let now = k.cpus[1].clock;
    // CPU 0's reader has been running as long (past its slice: a wake-up may preempt it).
    k.cpus[0].clock = now;
    assert!(now > 3_000_000, "{now}");
    k.cpus[0].next_tick = u64::MAX;
    k.kthread_wakeups(&mut rqs, 1, now);
    let kswapd = k.kswapd.task.unwrap();
    assert_eq!(k.cpus[0].curr, Some(kswapd));
    assert!(k.cpus[0].is_lazy);
    assert_eq!(k.cpus[0].loaded_mm, Some(mms[0]));
    assert_eq!(rqs.rq[0].front(), Some(&0), "the reader waits at the head");
    // Awake and below high: further wakeups are no-ops.
    k.wakeup_kswapd(1);
    assert!(!k.kswapd.wake_pending);
    // balance_pgdat passes until the node is balanced, then kswapd sleeps.
    let mut passes = 0;
    while k.kswapd.running {
        if k.cpus[0].curr != Some(kswapd) {
            break;
        }
        k.kswapd_step(&mut rqs, 0);
        passes += 1;
        assert!(passes < 64, "kswapd never balanced the node");
    }
    assert!(!k.kswapd.running, "kswapd sleeps once balanced");
    assert!(k.node_free_pages() >= k.pgdat.wmark_high);
    assert!(k.vmstat[PGSTEAL_KSWAPD] > 0 && k.vmstat[KSWAPD_STEPS_LAZY] >= 1);
    assert_eq!(k.cpus[0].curr, Some(0), "the reader runs again");
    // Balanced: an allocation above low does not wake it.
    k.wakeup_kswapd(1);
    assert!(!k.kswapd.wake_pending);
    let errs = k.check_invariants();
    assert!(errs.is_empty(), "{errs:?}");
}

/// A node of 16 384 pages whose reader on CPU 1 has filled it until wakeup_kswapd, with
/// kswapd woken onto CPU 0 (the reader there waiting at the head of its run queue) and no
/// tick due before `tick_in` ns from now on either CPU.
fn woken_kswapd(interleave: Interleave, tick_in: u64) -> (Kernel, RunQueues) {
    let (mut k, mms) = node_with(16_384, 32_768, interleave);
    let mut vp = 0;
    while !k.kswapd.wake_pending {
        k.user_access(1, mms[1], vp, false);
        vp += 1;
    }
    let mut rqs = RunQueues::new(2);
    let now = k.cpus[1].clock;
    k.cpus[0].clock = now;
    k.kthread_wakeups(&mut rqs, 1, now);
    assert_eq!(k.cpus[0].curr, k.kswapd.task);
    for c in 0..2 {
        k.cpus[c].next_tick = now.saturating_add(tick_in);
    }
    // The run queues are lent to kswapd's steps, as the engine lends them (no reclaim
    // preemption window opens inside its rounds).
    k.runner.rqs_out = true;
    (k, rqs)
}

/// What a kswapd wakeup did, run on CPU 0 alone until kswapd sleeps: (pgscan_kswapd,
/// pgsteal_kswapd, pageoutrun, kswapd CPU ns, CPU 0's clock, kswapd steps, steps that
/// ended inside a pass).
fn kswapd_alone(interleave: Interleave) -> [u64; 7] {
    let (mut k, mut rqs) = woken_kswapd(interleave, u64::MAX);
    let mut mid_pass = 0;
    while k.kswapd.running {
        k.kswapd_step(&mut rqs, 0);
        mid_pass += k.kswapd.pass.is_some() as u64;
        assert!(
            k.vmstat[KSWAPD_STEPS] < 100_000,
            "kswapd never balanced the node"
        );
    }
    assert!(k.kswapd.pass.is_none(), "kswapd sleeps between passes");
    let errs = k.check_invariants();
    assert!(errs.is_empty(), "{errs:?}");
    [
        k.vmstat[PGSCAN_KSWAPD],
        k.vmstat[PGSTEAL_KSWAPD],
        k.vmstat[PAGEOUTRUN],
        k.vmstat[KSWAPD_CPU_NS],
        k.cpus[0].clock,
        k.vmstat[KSWAPD_STEPS],
        mid_pass,
    ]
}

#[test]
fn a_preemptible_pass_alone_reclaims_as_a_whole_pass_does() {
    // With nothing else to run, stopping at every cond_resched() of shrink_lruvec's loop and
    // resuming there changes no count and no time; only the steps are more.
    let whole = kswapd_alone(Interleave::Step);
    let split = kswapd_alone(Interleave::Folio);
    assert!(whole[1] > 0, "kswapd reclaimed: {whole:?}");
    assert_eq!(whole[..5], split[..5], "whole {whole:?} vs split {split:?}");
    assert_eq!(whole[6], 0, "a whole pass is one step");
    assert!(split[6] > 0 && split[5] > whole[5], "{split:?}");
}

/// Run CPU 0 (ticks and kswapd's steps) until its reader runs again; returns how long kswapd
/// held the CPU since its wakeup.
fn until_reader_runs(k: &mut Kernel, rqs: &mut RunQueues) -> u64 {
    let start = k.cpus[0].clock;
    while k.cpus[0].curr == k.kswapd.task {
        if k.cpus[0].clock >= k.cpus[0].next_tick {
            k.scheduler_tick(rqs, 0);
        } else {
            k.kswapd_step(rqs, 0);
        }
        assert!(k.kswapd.running, "kswapd finished before the reader ran");
    }
    assert_eq!(k.cpus[0].curr, Some(0), "the reader runs");
    k.cpus[0].clock - start
}

#[test]
fn a_reader_waiting_on_kswapds_cpu_runs_at_the_next_cond_resched_after_the_tick() {
    // Each folio's shrink_folio_list work made long (200 µs), and the pass one of a later
    // priority (16 384 >> 4 pages of each list), so that a pass spans many ticks.
    let slow = |k: &mut Kernel| {
        k.cost.shrink_folio = 200_000;
        k.kswapd.priority = 4;
    };
    let tick = 4_000_000;
    // Preemption points: the tick after kswapd's request is used up sets need_resched, and
    // kswapd stops at the end of that round of shrink_lruvec's loop (at most 2 × 32 folios).
    let (mut k, mut rqs) = woken_kswapd(Interleave::Folio, tick);
    slow(&mut k);
    let pageoutrun = k.vmstat[PAGEOUTRUN];
    let held = until_reader_runs(&mut k, &mut rqs);
    assert!(
        held <= 3 * tick + 64 * 200_000,
        "kswapd held CPU 0 {held} ns"
    );
    // Preempted inside its pass: kswapd waits on the run queue with the pass kept, and
    // resumes it once it is picked again (no new balance_pgdat call).
    let pass = k.kswapd.pass.clone().expect("preempted inside a pass");
    let scanned = pass.sc.nr_scanned;
    let kswapd = k.kswapd.task.unwrap();
    assert!(rqs.rq[0].contains(&kswapd));
    let preempted = k.cpus[0].clock;
    while k.cpus[0].curr != Some(kswapd) {
        // The reader's own steps are not run here: its time passes on CPU 0.
        let t = k.cpus[0].next_tick;
        k.cpus[0].clock = t;
        k.scheduler_tick(&mut rqs, 0);
        assert!(t - preempted < 100 * tick, "kswapd never ran again");
    }
    k.kswapd_step(&mut rqs, 0);
    assert_eq!(
        k.vmstat[PAGEOUTRUN], pageoutrun,
        "the same balance_pgdat call"
    );
    assert!(
        k.kswapd
            .pass
            .as_ref()
            .is_none_or(|p| p.sc.nr_scanned > scanned),
        "the pass went on from where it stopped"
    );
    // Without preemption points the whole pass runs before the tick is looked at.
    let (mut k, mut rqs) = woken_kswapd(Interleave::Step, tick);
    slow(&mut k);
    k.kswapd_step(&mut rqs, 0);
    let whole = k.vmstat[KSWAPD_CPU_NS];
    assert!(
        whole > 4 * held,
        "a whole pass ({whole} ns) outlasts the preempted stretch ({held} ns)"
    );
    let errs = k.check_invariants();
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn lazy_kswapd_cpu_is_skipped_by_batched_flush() {
    let (mut k, mms) = node(4096, 64);
    k.user_access(0, mms[0], 0, false);
    // mm 0 is loaded on CPU 0 (its reader): a batched flush from CPU 1 covering mm 0 IPIs it.
    let mut b = ArchTlbBatch::new(k.arch, 2);
    k.arch_tlbbatch_add_pending(1, &mut b, mms[0], 0, 1);
    k.arch_tlbbatch_flush(1, &mut b);
    assert_eq!(k.irq.tlb_shootdowns[0], 1);
    // kswapd preempts the reader: same mm loaded, but lazy, so the next flush skips CPU 0.
    let kswapd = k.kswapd.task.unwrap();
    k.context_switch(0, Some(kswapd));
    assert!(k.cpus[0].is_lazy && k.cpus[0].loaded_mm == Some(mms[0]));
    // The next flush comes after the switch (a sender behind reads the state at its time).
    k.cpus[1].clock = k.cpus[1].clock.max(k.cpus[0].clock) + 1;
    let mut b = ArchTlbBatch::new(k.arch, 2);
    k.arch_tlbbatch_add_pending(1, &mut b, mms[0], 0, 1);
    k.arch_tlbbatch_flush(1, &mut b);
    assert_eq!(k.irq.tlb_shootdowns[0], 1, "lazy CPU got a shootdown");
    assert_eq!(k.irq.function_call_interrupts[0], 1);
    // Back to the reader: the stale generation is flushed at switch_mm instead.
    let flushes = k.cpus[0].tlb.local_gen[mms[0]];
    k.context_switch(0, Some(0));
    assert!(!k.cpus[0].is_lazy);
    assert!(k.cpus[0].tlb.local_gen[mms[0]] > flushes);
}

/// Fill the node from both CPUs (on the LRU in runs of one CPU's lru_add batch), wake kswapd on CPU 0 and let it
/// balance the node. Returns (IPIs CPU 1 took, mm 1 pages kswapd unmapped, IPIs CPU 0 took).
fn kswapd_unmaps(policy: Policy) -> (u64, u64, u64) {
    let (mut k, mms) = node(4096, 8192);
    k.policy = policy;
    let mut vp = 0;
    while !k.kswapd.wake_pending {
        k.user_access(0, mms[0], vp, false);
        k.user_access(1, mms[1], vp, false);
        vp += 1;
    }
    let mut rqs = RunQueues::new(2);
    let now = k.cpus[0].clock;
    // No tick: kswapd keeps CPU 0 (the scheduler is not part of this test).
    k.cpus[0].next_tick = u64::MAX;
    k.kthread_wakeups(&mut rqs, 0, now);
    let (ipi0, ipi1, rss1) = (
        k.irq.tlb_shootdowns[0],
        k.irq.tlb_shootdowns[1],
        k.mms[mms[1]].rss,
    );
    while k.kswapd.running {
        k.kswapd_step(&mut rqs, 0);
    }
    let errs = k.check_invariants();
    assert!(errs.is_empty(), "{errs:?}");
    (
        k.irq.tlb_shootdowns[1] - ipi1,
        rss1 - k.mms[mms[1]].rss,
        k.irq.tlb_shootdowns[0] - ipi0,
    )
}

#[test]
fn unbatched_kswapd_sends_an_ipi_per_remote_page_batched_one_per_batch() {
    let mut old = Policy::linux_6_18();
    old.set(Patch::TlbBatch, false);
    old.settings.free_batch = 15;
    old.settings.range_flush_freed_tables = false;
    let (ipis, unmapped, own) = kswapd_unmaps(old);
    assert!(unmapped > 10, "kswapd unmapped {unmapped} pages of mm 1");
    // 4.2: ptep_clear_flush per PTE; mm 1 runs on CPU 1, so each page is one IPI there.
    assert_eq!(ipis, unmapped);
    // kswapd's own CPU is lazy on mm 0: its pages are flushed locally (leaving the mm).
    assert_eq!(own, 0);
    let (ipis, unmapped, own) = kswapd_unmaps(Policy::linux_6_18());
    assert!(unmapped > 10, "kswapd unmapped {unmapped} pages of mm 1");
    // 6.18: one IPI per flush of the deferred batch (free batch of 31, end of the list).
    assert!(ipis * 8 <= unmapped, "{ipis} IPIs for {unmapped} pages");
    assert!(ipis >= 1);
    assert_eq!(own, 0);
}

fn sim(policy: &str, sets: &[&str]) -> ResultDoc {
    let mut all = vec![
        "machine.cpus=8",
        "machine.memory=64M",
        "sim.tlb_entries=64",
        "sim.tlb_ways=4",
    ];
    all.extend_from_slice(sets);
    let k = format!("kernel.preset={policy}");
    all.push(&k);
    common::sim_with("kswapd-mmap-read", &all, &[])
}

fn extra(d: &ResultDoc, key: &str) -> f64 {
    d.runs[0].extra[key].as_f64().unwrap()
}

#[test]
fn batched_flush_sends_fewer_ipis_per_reclaimed_page() {
    let old = sim("4.2", &[]);
    let new = sim("6.18", &[]);
    for d in [&old, &new] {
        let c = &d.runs[0].counters;
        // Files twice memory, read once: about half of what was read was reclaimed.
        assert_eq!(extra(d, "pages_touched"), 32768.0);
        assert!(c["pgsteal_file"] > 12_000, "{c:?}");
        assert!(extra(d, "pgsteal_kswapd") > 0.0 && extra(d, "kswapd_wakeups") > 0.0);
        // Whether kswapd starts on a borrowed mm here depends on timing: with fault-around
        // the readers take one fault per 16 pages and finish within kswapd's first wakeups,
        // leaving idle CPUs (init_mm) for it. kswapd_unmaps above tests the lazy case.
        assert_eq!(d.runs[0].throughput.unit, "pages_per_sec");
    }
    let (co, cn) = (&old.runs[0].counters, &new.runs[0].counters);
    // 4.2: each unmap of a page whose mm runs on another CPU is its own flush_tlb_multi call.
    assert!(
        co["nr_tlb_remote_flush"] * 2 > co["pgsteal_file"],
        "4.2 flushes per page: {co:?}"
    );
    // 6.18: one call per batch of deferred unmaps.
    assert!(
        cn["nr_tlb_remote_flush"] * 8 < cn["pgsteal_file"],
        "6.18 batches: {cn:?}"
    );
    let per = |d: &ResultDoc| extra(d, "tlb_shootdowns_per_pgsteal");
    assert!(
        per(&old) > 4.0 * per(&new),
        "{} vs {}",
        per(&old),
        per(&new)
    );
    assert!(extra(&old, "tlb_shootdowns_per_sec") > extra(&new, "tlb_shootdowns_per_sec"));
}

#[test]
fn without_readahead_the_lru_add_batch_still_keeps_one_readers_pages_together() {
    // Readahead adds 32-page runs of one file to the LRU; without it each fault adds one page,
    // but through its CPU's lru_add batch, which reaches the list 31 folios at a time: a flush
    // batch still spans few mms. (Before the model had the batch, the readers' pages
    // interleaved page by page without readahead and the ratio was over twice this.)
    let ra = sim("6.18", &[]);
    let no = sim("6.18", &["workload.readahead_pages=0"]);
    let per = |d: &ResultDoc| extra(d, "tlb_shootdowns_per_pgsteal");
    assert!(per(&no) < 1.5 * per(&ra), "{} vs {}", per(&no), per(&ra));
}

#[test]
fn same_seed_same_json_and_invariants_hold() {
    let a = serde_json::to_string(&sim("6.18", &["sim.check=full"])).unwrap();
    let b = serde_json::to_string(&sim("6.18", &["sim.check=full"])).unwrap();
    assert_eq!(a, b);
    let c = serde_json::to_string(&sim("4.2", &["sim.check=full"])).unwrap();
    assert_ne!(a, c);
}
