//! arm64 (`machine.arch = arm64`): broadcast TLBI + DSB instead of IPIs, contpte blocks, and
//! seed 004 (`clear-flush-young-ptes`) on both architectures.

mod common;

use common::cfg;
use reclaimlab_core::ResultDoc;
use reclaimlab_sim::arch::Arch;
use reclaimlab_sim::config::{Patch, Policy};
use reclaimlab_sim::kernel::{Backing, File, Kernel};
use reclaimlab_sim::mm::memory::Access;
use reclaimlab_sim::mm::mm_types_task::TlbUbc;
use reclaimlab_sim::mm::pgtable::*;
use reclaimlab_sim::mm::rmap::TTU_BATCH_FLUSH;
use reclaimlab_sim::mm::vmstat::VmEventItem::*;

/// A 3-CPU kernel of `arch` with a 64-page file mapped read-only; tasks on CPUs 0 and 1 read
/// pages 0..32, then CPU 1 goes idle (lazy TLB on x86). Returns the kernel and the folios of
/// pages 0 and 16.
fn mapped_file(arch: Arch, order: u8, young_patch: bool) -> (Kernel, u32, u32) {
    let mut policy = Policy::linux_6_18();
    policy.set(Patch::ClearFlushYoungPtes, young_patch);
    let mut k = Kernel::new(cfg(order), policy, 3, 1024, 1 << 20, 60, 1);
    k.set_arch(arch);
    k.files.push(File::new(64));
    let mm = k.mm_alloc(64, Backing::File(0), false);
    for cpu in 0..2 {
        let t = k.task_new(mm, Some(cpu), 0, 64);
        k.context_switch(cpu, Some(t));
        for vp in 0..32 {
            assert_ne!(k.user_access(cpu, mm, vp, false), Access::Killed);
        }
    }
    k.context_switch(1, None);
    let (a, b) = (pte_pfn(k.mms[mm].ptes[0]), pte_pfn(k.mms[mm].ptes[16]));
    (k, a, b)
}

fn cached_on(k: &Kernel, cpu: usize, vp: u64) -> bool {
    k.cpus[cpu].tlb.lookup(0, vp).is_some()
}

#[test]
fn arm64_defers_and_one_dsb_completes_a_batch_on_every_cpu() {
    let (mut k, f0, f1) = mapped_file(Arch::Arm64, 4, false);
    assert!(
        k.pte_cont(0, 0) && k.pte_cont(0, 31),
        "16-page blocks of order-4 folios fold"
    );
    // Deferral does not depend on mm_cpumask (arm64 keeps none).
    assert_eq!(k.mms[0].cpumask.weight(), 0);
    assert!(k.arch_tlbbatch_should_defer(0, 0));
    let mut ubc = TlbUbc::new(k.arch, 3);
    let (dsb0, tlbi0) = (k.vmstat[DSB_ISH], k.vmstat[TLBI_OPS]);
    for f in [f0, f1] {
        assert!(k.try_to_unmap(0, &mut ubc, f, TTU_BATCH_FLUSH));
    }
    // The TLBIs went out at add_pending and reached the idle CPU's ASID-tagged TLB too.
    assert!(k.vmstat[TLBI_OPS] > tlbi0);
    assert!((0..32).all(|vp| !cached_on(&k, 0, vp) && !cached_on(&k, 1, vp)));
    assert_eq!(
        k.vmstat[DSB_ISH],
        dsb0 + 2,
        "6.18 unfolds each block with a synchronous DSB"
    );
    k.try_to_unmap_flush(0, &mut ubc);
    assert_eq!(
        k.vmstat[DSB_ISH],
        dsb0 + 3,
        "one DSB ISH for the whole batch"
    );
    k.try_to_unmap_flush(0, &mut ubc);
    assert_eq!(k.vmstat[DSB_ISH], dsb0 + 3, "nothing pending, no DSB");
    assert_eq!(k.irq.tlb_shootdowns.iter().sum::<u64>(), 0);
    assert_eq!(k.irq.function_call_interrupts.iter().sum::<u64>(), 0);
    assert_eq!(k.vmstat[NR_TLB_REMOTE_FLUSH], 0);
    let errs = k.check_invariants();
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn x86_batch_skips_the_lazy_cpu_where_arm64_broadcasts() {
    let (mut k, f0, _) = mapped_file(Arch::X86, 4, false);
    assert!(!k.pte_cont(0, 0), "no contpte on x86");
    let mut ubc = TlbUbc::new(k.arch, 3);
    assert!(k.try_to_unmap(0, &mut ubc, f0, TTU_BATCH_FLUSH));
    k.try_to_unmap_flush(0, &mut ubc);
    // CPU 1 is lazy: x86 sends it nothing now (it flushes when it switches back).
    assert!(cached_on(&k, 1, 0));
    assert_eq!(k.vmstat[NR_TLB_REMOTE_FLUSH], 1);
    assert_eq!((k.vmstat[DSB_ISH], k.vmstat[TLBI_OPS]), (0, 0));
}

#[test]
fn batched_unmap_of_a_contpte_block_needs_no_unfold() {
    let (mut k, f0, _) = mapped_file(Arch::Arm64, 4, false);
    k.policy.set(Patch::FileLargeFolioUnmap, true);
    let mut ubc = TlbUbc::new(k.arch, 3);
    assert!(k.try_to_unmap(0, &mut ubc, f0, TTU_BATCH_FLUSH));
    k.try_to_unmap_flush(0, &mut ubc);
    // One range TLBI (FEAT_TLBIRANGE) for the 16 pages and the batch's DSB; no unfold.
    assert_eq!(
        (
            k.vmstat[CONTPTE_UNFOLDS],
            k.vmstat[TLBI_OPS],
            k.vmstat[DSB_ISH]
        ),
        (0, 1, 1)
    );
    assert!(k.pte_cont(0, 16), "the other block is untouched");
}

/// folio_referenced on the folio of page 0: (referenced, steps, PTE tests, TLBI ops, young
/// PTEs left in the folio).
fn referenced(k: &mut Kernel, pfn: u32) -> (u32, u64, u64, u64, usize) {
    let (s0, t0, i0) = (
        k.vmstat[REFERENCED_STEPS],
        k.vmstat[YOUNG_TESTS],
        k.vmstat[TLBI_OPS],
    );
    let r = k.folio_referenced(0, pfn);
    let young = k.mms[0].ptes[..16]
        .iter()
        .filter(|&&p| p & PTE_YOUNG != 0)
        .count();
    (
        r,
        k.vmstat[REFERENCED_STEPS] - s0,
        k.vmstat[YOUNG_TESTS] - t0,
        k.vmstat[TLBI_OPS] - i0,
        young,
    )
}

#[test]
fn clear_flush_young_ptes_one_flush_per_folio_where_618_flushes_per_pte() {
    // Not contiguous (the block was unfolded, e.g. by an mprotect): 6.18 steps and flushes
    // per young PTE, the patch clears the run and issues one range flush.
    for patch in [false, true] {
        let (mut k, f0, _) = mapped_file(Arch::Arm64, 4, patch);
        k.contpte_unfolded.insert((0, 0));
        assert!(!k.pte_cont(0, 0));
        let got = referenced(&mut k, f0);
        let want = if patch {
            (1, 1, 16, 1, 0)
        } else {
            (1, 16, 16, 16, 0)
        };
        assert_eq!(got, want, "patch {patch}");
        // Cleared and flushed: the next check finds nothing young and flushes nothing.
        assert_eq!(referenced(&mut k, f0).3, 0);
        assert!(!cached_on(&k, 0, 3) && !cached_on(&k, 1, 3));
    }
}

#[test]
fn contpte_618_clears_the_whole_block_at_every_pte() {
    let (mut k, f0, _) = mapped_file(Arch::Arm64, 4, false);
    // Each of the 16 calls test-and-clears all 16 PTEs of the block; only the first finds
    // them young and flushes the block (one range TLBI).
    assert_eq!(referenced(&mut k, f0), (1, 16, 256, 1, 0));
    assert_eq!(referenced(&mut k, f0), (0, 16, 256, 0, 0));
    let (mut k, f0, _) = mapped_file(Arch::Arm64, 4, true);
    assert_eq!(referenced(&mut k, f0), (1, 1, 16, 1, 0));
    assert_eq!(referenced(&mut k, f0), (0, 1, 16, 0, 0));
}

#[test]
fn x86_young_clear_never_flushes_and_the_patch_only_saves_steps() {
    for patch in [false, true] {
        let (mut k, f0, _) = mapped_file(Arch::X86, 4, patch);
        let steps = if patch { 1 } else { 16 };
        assert_eq!(referenced(&mut k, f0), (1, steps, 16, 0, 0));
        assert!(
            cached_on(&k, 0, 3) && cached_on(&k, 1, 3),
            "no flush on x86"
        );
    }
    let cost = |patch| {
        let (mut k, f0, _) = mapped_file(Arch::X86, 4, patch);
        let c0 = k.cpus[0].clock;
        k.folio_referenced(0, f0);
        k.cpus[0].clock - c0
    };
    assert!(cost(true) < cost(false));
}

#[test]
fn order0_folios_are_never_contiguous() {
    let (mut k, f0, _) = mapped_file(Arch::Arm64, 0, false);
    assert!(!k.pte_cont(0, 0));
    assert_eq!(referenced(&mut k, f0).1, 1);
    let mut ubc = TlbUbc::new(k.arch, 3);
    assert!(k.try_to_unmap(0, &mut ubc, f0, TTU_BATCH_FLUSH));
    k.try_to_unmap_flush(0, &mut ubc);
    assert_eq!((k.vmstat[CONTPTE_UNFOLDS], k.vmstat[DSB_ISH]), (0, 1));
}

fn sim(name: &str, sets: &[&str]) -> ResultDoc {
    common::sim_with(name, &["sim.check=full"], sets)
}

fn counter(d: &ResultDoc, key: &str) -> u64 {
    d.runs[0].counters[key]
}

#[test]
fn arm64_reclaim_sends_no_ipis_where_x86_does() {
    let base = [
        "machine.cpus=4",
        "workload.workers=4",
        "workload.bytes=64M",
        "memcg.limit=32M",
        "run.duration=100ms",
    ];
    let with = |arch: &str| {
        let mut sets = base.to_vec();
        sets.push(arch);
        sim("stress-vm", &sets)
    };
    let x86 = with("machine.arch=x86");
    let arm = with("machine.arch=arm64");
    assert!(counter(&x86, "tlb_shootdowns") > 0 && counter(&x86, "function_call_interrupts") > 0);
    assert!(counter(&arm, "pgsteal_anon") > 0, "arm64 reclaimed");
    for key in [
        "tlb_shootdowns",
        "function_call_interrupts",
        "nr_tlb_remote_flush",
        "nr_tlb_remote_flush_received",
        "nr_tlb_local_flush_all",
        "nr_tlb_local_flush_one",
    ] {
        assert_eq!(counter(&arm, key), 0, "{key} on arm64");
    }
    let e = &arm.runs[0].extra;
    assert!(e["dsb_ish"].as_u64().unwrap() > 0 && e["tlbi_ops"].as_u64().unwrap() > 0);
    assert!(
        !x86.runs[0].extra.contains_key("tlbi_ops"),
        "x86 documents unchanged"
    );
}

#[test]
fn file_reclaim_checks_young_mapped_large_folios_and_seed_004_helps_on_both_arches() {
    let base = [
        "machine.cpus=4",
        "workload.file_bytes=16M",
        "workload.reclaim_bytes=8M",
        "memcg.limit=32M",
        "sim.file_folio_order=4",
    ];
    for arch in ["machine.arch=arm64", "machine.arch=x86"] {
        let mut sets = base.to_vec();
        sets.push(arch);
        let before = sim("file-reclaim", &sets);
        sets.push("kernel.patches=[\"clear-flush-young-ptes\"]");
        let after = sim("file-reclaim", &sets);
        let (b, a) = (&before.runs[0], &after.runs[0]);
        assert_eq!(b.counters["pgsteal_file"], a.counters["pgsteal_file"]);
        // The populate pass left every PTE young: a first look keeps the folio (no
        // activation for a single mapping), the second reclaims it.
        assert_eq!(b.counters["pgactivate"], 0);
        assert!(b.counters["pgscan_file"] >= 2 * b.counters["pgsteal_file"]);
        assert!(
            a.throughput.value < b.throughput.value,
            "{arch}: reclaim_seconds {} -> {}",
            b.throughput.value,
            a.throughput.value
        );
    }
}

#[test]
fn order0_clear_flush_young_ptes_is_byte_identical_but_the_label() {
    // One PTE per folio: the patch has nothing to batch, on either arch.
    for arch in ["machine.arch=x86", "machine.arch=arm64"] {
        let base = [
            "machine.cpus=4",
            "workload.file_bytes=8M",
            "workload.reclaim_bytes=4M",
            "memcg.limit=16M",
            arch,
        ];
        let before = sim("file-reclaim", &base);
        let mut sets = base.to_vec();
        sets.push("kernel.patches=[\"clear-flush-young-ptes\"]");
        let after = sim("file-reclaim", &sets);
        let b = serde_json::to_string(&before).unwrap();
        let a = serde_json::to_string(&after)
            .unwrap()
            .replace("6.18+clear-flush-young-ptes", "6.18")
            .replace("\"clear-flush-young-ptes\"", "");
        assert_eq!(a, b, "{arch}");
    }
}

#[test]
fn arm64_runs_are_deterministic() {
    let sets = [
        "machine.arch=arm64",
        "machine.cpus=4",
        "workload.file_bytes=8M",
        "workload.write=true",
        "memcg.limit=4M",
        "sim.file_folio_order=4",
        "run.duration=200ms",
    ];
    let first = sim("file-mmap-rw", &sets);
    assert!(counter(&first, "pgsteal_file") > 0, "reclaim ran");
    let a = serde_json::to_string(&first).unwrap();
    let b = serde_json::to_string(&sim("file-mmap-rw", &sets)).unwrap();
    assert_eq!(a, b);
}
