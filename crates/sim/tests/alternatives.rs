//! INVLPGB broadcast invalidation (`machine.invlpgb`, arch/x86/invlpgb.rs) and LUF (`luf`,
//! mm/luf.rs) in the simulator: each through the kernel's functions on a tiny machine, and in
//! whole runs.

mod common;

use reclaimlab_core::{Scenario, Target};
use reclaimlab_sim::arch::x86::invlpgb::Invlpgb;
use reclaimlab_sim::config::Policy;
use reclaimlab_sim::kernel::{Backing, Kernel};
use reclaimlab_sim::mm::memory::Access;
use reclaimlab_sim::mm::mm_types_task::TlbUbc;
use reclaimlab_sim::mm::pgtable::pte_pfn;
use reclaimlab_sim::mm::rmap::TTU_BATCH_FLUSH;
use reclaimlab_sim::mm::vmstat::VmEventItem::*;

/// A kernel with INVLPGB in use on `cpus` CPUs.
fn invlpgb_kernel(cpus: usize) -> Kernel {
    let mut k = Kernel::new(
        common::cfg(0),
        Policy::linux_6_18(),
        cpus,
        1024,
        1 << 20,
        60,
        1,
    );
    k.invlpgb = Some(Invlpgb::new(cpus));
    k
}

/// One mm with `pages` written pages, with a thread running on each of `cpus`.
fn threaded_mm(k: &mut Kernel, cpus: &[usize], pages: u64) -> usize {
    let mm = k.mm_alloc(pages, Backing::Anon, true);
    for &c in cpus {
        let t = k.task_new(mm, Some(c), 0, pages);
        k.context_switch(c, Some(t));
    }
    for vp in 0..pages {
        k.user_access(cpus[0], mm, vp, true);
    }
    for &c in &cpus[1..] {
        for vp in 0..pages {
            k.user_access(c, mm, vp, true);
        }
    }
    mm
}

fn interrupts(k: &Kernel) -> u64 {
    k.irq.tlb_shootdowns.iter().sum::<u64>() + k.irq.function_call_interrupts.iter().sum::<u64>()
}

#[test]
fn reclaim_batch_flush_is_one_broadcast_without_ipis() {
    let mut k = invlpgb_kernel(4);
    let mm = threaded_mm(&mut k, &[1, 2], 8);
    let mut ubc = TlbUbc::new(k.arch, 4);
    for vp in 0..8 {
        k.try_to_unmap(0, &mut ubc, pte_pfn(k.mms[mm].ptes[vp]), TTU_BATCH_FLUSH);
    }
    assert!(ubc.flush_required);
    let t0 = k.cpus[0].clock;
    k.try_to_unmap_flush(0, &mut ubc);
    assert_eq!(interrupts(&k), 0, "INVLPGB sends no IPI");
    assert_eq!((k.vmstat[INVLPGB_OPS], k.vmstat[TLBSYNC]), (1, 1));
    // The sender paid INVLPGB + TLBSYNC for 4 CPUs, nothing else.
    let c = &k.cost;
    assert_eq!(
        k.cpus[0].clock - t0,
        c.invlpgb + c.tlbsync + 4 * c.tlbsync_per_cpu
    );
    assert!(k.check_invariants_tlb_only().is_empty());
    // The other CPUs' entries are gone: the next store faults.
    assert_eq!(k.user_access(1, mm, 3, true), Access::Fault);
    assert_eq!(k.user_access(2, mm, 4, true), Access::Fault);
}

/// flush_tlb_mm_range of page 0 from `cpu` once per tick for 64 ticks (consider_global_asid
/// looks only when (pid & 31) == (jiffies & 31)); returns the interrupts of the last 8.
fn flush_every_tick(k: &mut Kernel, cpu: usize, mm: usize) -> u64 {
    let tick = k.cfg.tick_ns;
    let mut last = 0;
    for i in 0..64 {
        let now = k.cpus.iter().map(|c| c.clock).max().unwrap() + tick;
        for c in k.cpus.iter_mut() {
            c.clock = now;
        }
        let before = interrupts(k);
        k.flush_tlb_mm_range(cpu, mm, 0, 1, false);
        if i >= 56 {
            last += interrupts(k) - before;
        }
    }
    last
}

#[test]
fn an_mm_on_more_than_three_cpus_moves_to_broadcast_and_one_on_three_does_not() {
    let mut k = invlpgb_kernel(6);
    let big = threaded_mm(&mut k, &[1, 2, 3, 4], 4);
    assert_eq!(flush_every_tick(&mut k, 1, big), 0, "broadcast: no IPIs");
    let s = k.invlpgb.as_ref().unwrap();
    assert!(s.global(big) && s.global_asids == 1);
    assert!(k.vmstat[INVLPGB_OPS] > 0);
    assert!(k.check_invariants_tlb_only().is_empty());

    let mut k = invlpgb_kernel(6);
    let small = threaded_mm(&mut k, &[1, 2, 3], 4);
    assert!(
        flush_every_tick(&mut k, 1, small) > 0,
        "IPIs as without INVLPGB"
    );
    assert!(!k.invlpgb.as_ref().unwrap().global(small));
}

/// Three single-threaded writers in a tight memcg with reclaim preemption points (the
/// oracle tests' race), for 300 ms.
const ANON_RACE: &str = "machine.cpus=4 workload.processes=3 workload.threads=1 \
    workload.bytes=4M memcg.limit=8M workload.pattern=random workload.write_ratio=1 \
    sim.page_data=pattern run.duration=300ms";

fn anon_race(sets: &[&str]) -> anyhow::Result<reclaimlab_core::ResultDoc> {
    let all: Vec<String> = ANON_RACE
        .split_whitespace()
        .chain(sets.iter().copied())
        .map(str::to_string)
        .collect();
    let scn = Scenario::load("anon-sweep", &all, Target::Sim)?;
    reclaimlab_sim::run(&scn, &Default::default())
}

#[test]
fn machine_invlpgb_removes_reclaim_ipis_from_a_run_except_on_4_2() {
    let base = anon_race(&[]).unwrap();
    let b = &base.runs[0];
    assert!(b.counters["tlb_shootdowns"] > 0);
    let doc = anon_race(&["machine.invlpgb=true", "sim.check=\"full\""]).unwrap();
    let r = &doc.runs[0];
    assert_eq!(r.counters["tlb_shootdowns"], 0);
    assert!(r.extra["invlpgb_ops"].as_u64().unwrap() > 0);
    assert_eq!(r.extra["oracle_lost_writes"], 0);
    // 4.2 has no INVLPGB support: the machine's feature changes nothing.
    let old = anon_race(&["kernel.preset=\"4.2\""]).unwrap();
    let old_b = anon_race(&["kernel.preset=\"4.2\"", "machine.invlpgb=true"]).unwrap();
    assert!(!old_b.runs[0].extra.contains_key("invlpgb_ops"));
    assert_eq!(old.runs[0].counters, old_b.runs[0].counters);
}

#[test]
fn machine_invlpgb_is_refused_on_arm64() {
    let e = Scenario::load(
        "anon-sweep",
        &[
            "machine.arch=\"arm64\"".into(),
            "machine.invlpgb=true".into(),
        ],
        Target::Sim,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("machine.invlpgb") && e.contains("x86"), "{e}");
}

#[test]
fn luf_defers_nothing_for_writable_anon_and_luf_writable_loses_writes() {
    // Exclusive anon pages are mapped writable even after a read fault (do_swap_page), so
    // LUF as its author states it has nothing to defer here.
    let doc = anon_race(&["kernel.patches=[\"luf\"]"]).unwrap();
    assert_eq!(doc.runs[0].extra["luf_deferred_pages"], 0);
    let e = anon_race(&["kernel.patches=[\"luf-writable\"]", "run.duration=1s"])
        .expect_err("the unsafe variant must fail the run")
        .to_string();
    assert!(e.contains("LUF: flush deferred"), "{e}");
    assert!(
        e.contains("LOST WRITE") || e.contains("USE-AFTER-FREE"),
        "{e}"
    );
}

#[test]
fn luf_defers_read_only_file_pages_and_flushes_at_reallocation() {
    let sets: Vec<String> = [
        "machine.cpus=4",
        "memcg.limit=32M",
        "workload.file_bytes=64M",
        "run.duration=300ms",
        "sim.check=\"full\"",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let run = |patch: Option<&str>| {
        let mut s = sets.clone();
        if let Some(p) = patch {
            s.push(format!("kernel.patches=[\"{p}\"]"));
        }
        let scn = Scenario::load("file-mmap-rw", &s, Target::Sim).unwrap();
        reclaimlab_sim::run(&scn, &Default::default()).unwrap()
    };
    let base = run(None);
    let luf = run(Some("luf"));
    let x = &luf.runs[0].extra;
    assert!(x["luf_deferred_pages"].as_u64().unwrap() > 0);
    assert!(x["luf_flushes"].as_u64().unwrap() > 0);
    assert_eq!(x["oracle_use_after_free_writes"], 0);
    assert!(luf.runs[0].counters["tlb_shootdowns"] < base.runs[0].counters["tlb_shootdowns"]);
    // Deterministic.
    let again = run(Some("luf"));
    assert_eq!(
        serde_json::to_string(&luf.runs).unwrap(),
        serde_json::to_string(&again.runs).unwrap()
    );
}
