//! Build the shared result document (reclaimlab.result/1) from a finished simulation.

use crate::config::Patch;
use crate::kernel::Kernel;
use reclaimlab_core::result::{MachineInfo, ResultDoc, RunResult, SwapInfo, Throughput, SCHEMA};
use reclaimlab_core::Scenario;
use std::collections::BTreeMap;

pub fn build(
    scn: &Scenario,
    k: &Kernel,
    sim_seconds: f64,
    throughput: Throughput,
    mut notes: Vec<String>,
) -> ResultDoc {
    let counters = counters(k);
    let memcg_stat = memcg_stat(k, &counters);
    let mut extra = extra(k, sim_seconds);
    if let Some(p) = &scn.profile {
        // Only with a profile, so that documents without one stay as they were.
        extra.insert("profile".into(), p.summary());
        let m = &p.profile.machine;
        if m.cpus as usize != scn.machine.cpus {
            notes.push(format!(
                "profile {} describes a {}-CPU machine; the simulated machine has {} CPUs (machine.cpus), the profile's costs are used as they are",
                p.profile.profile.name, m.cpus, scn.machine.cpus
            ));
        }
    }
    let run = RunResult {
        counters,
        per_cpu: per_cpu(k),
        memcg_stat,
        wall_seconds: sim_seconds,
        throughput,
        oom_kills: k.memcg.oom_kills,
        valid: true,
        notes,
        extra,
        foreign: None,
    };
    let mut doc = ResultDoc {
        schema: SCHEMA.into(),
        scenario: scn.name.clone(),
        backend: "sim".into(),
        kernel: format!("sim-{}", k.policy.name),
        policy: k.policy.name.clone(),
        machine: MachineInfo {
            cpus: scn.machine.cpus,
            memory_bytes: scn.machine.memory_bytes,
            arch: scn.machine.arch.name().into(),
            cgroup: "sim".into(),
            swap: SwapInfo {
                kind: "sim".into(),
                devices: vec![if k.swap.block.is_some() {
                    "block-model".into()
                } else {
                    "zram-model".into()
                }],
                bytes: scn.swap_bytes,
            },
        },
        config: scn.to_json(),
        workload_command: None,
        workload_version: None,
        runs: vec![run],
        median: BTreeMap::new(),
        min: BTreeMap::new(),
        max: BTreeMap::new(),
    };
    doc.summarize();
    doc
}

type Extra = BTreeMap<String, serde_json::Value>;

fn j(v: u64) -> serde_json::Value {
    serde_json::Value::from(v)
}

/// /proc/vmstat's and /proc/interrupts' counters, by the host's names.
fn counters(k: &Kernel) -> BTreeMap<String, u64> {
    let mut counters = k.vmstat.to_map();
    counters.insert("tlb_shootdowns".into(), k.irq.tlb_shootdowns.iter().sum());
    counters.insert(
        "function_call_interrupts".into(),
        k.irq.function_call_interrupts.iter().sum(),
    );
    if let Some(b) = &k.swap.block {
        // The block swap device's readahead counters (mm/swap_state.rs), /proc/vmstat's names.
        counters.insert("swap_ra".into(), b.swap_ra);
        counters.insert("swap_ra_hit".into(), b.swap_ra_hit);
    }
    // The host's /proc/vmstat names for the writeback model's counts (page-cache pages).
    counters.insert("nr_written".into(), k.wb.nr_written);
    counters.insert("nr_dirtied".into(), k.wb.nr_dirtied);
    counters.insert("pgrotated".into(), k.wb.nr_rotated);
    counters
}

fn per_cpu(k: &Kernel) -> BTreeMap<String, Vec<u64>> {
    let mut per_cpu = BTreeMap::new();
    per_cpu.insert("tlb_shootdowns".into(), k.irq.tlb_shootdowns.clone());
    per_cpu.insert(
        "function_call_interrupts".into(),
        k.irq.function_call_interrupts.clone(),
    );
    per_cpu
}

/// The memcg's memory.stat keys the host reads (the model has one memcg).
fn memcg_stat(k: &Kernel, counters: &BTreeMap<String, u64>) -> BTreeMap<String, i64> {
    let mut memcg_stat = BTreeMap::new();
    for key in [
        "pgscan_anon",
        "pgsteal_anon",
        "pgscan_file",
        "pgsteal_file",
        "pgactivate",
        "pgdeactivate",
        "pgrefill",
        "pgfault",
        "pgmajfault",
        "workingset_refault_anon",
        "workingset_refault_file",
    ] {
        memcg_stat.insert(key.to_string(), counters[key] as i64);
    }
    memcg_stat.insert(
        "max_usage_in_bytes".into(),
        (k.memcg.max_usage * 4096) as i64,
    );
    memcg_stat
}

/// The model's own figures (`runs[].extra`); a feature's keys appear only when it is on, so
/// that documents without it stay as they were.
fn extra(k: &Kernel, sim_seconds: f64) -> Extra {
    let mut extra = BTreeMap::new();
    extra.insert("sim_steps".into(), j(k.steps));
    extra.insert("direct_reclaims".into(), j(k.direct_reclaims));
    extra.insert(
        "reclaim_cpu_seconds".into(),
        serde_json::Value::from(k.reclaim_ns as f64 / 1e9),
    );
    extra.insert("stale_tlb_writes".into(), j(k.stale_tlb_writes));
    if k.cfg.interleave == crate::config::Interleave::Folio {
        extra.insert("reclaim_preempt_steps".into(), j(k.preempt_steps));
    }
    if k.oracle.enabled {
        extra.insert("oracle_lost_writes".into(), j(k.oracle.lost_writes));
        extra.insert(
            "oracle_use_after_free_writes".into(),
            j(k.oracle.use_after_free_writes),
        );
    }
    extra.insert("swap_used_pages".into(), j(k.swap.used));
    extra.insert(
        "placement".into(),
        crate::sched::stats::report(k, sim_seconds),
    );
    if k.sched.wakelist_ipis > 0 {
        // Call-function IPIs of remote wake-ups (ttwu_queue_wakelist), part of the CAL count.
        extra.insert("wakelist_ipis".into(), j(k.sched.wakelist_ipis));
    }
    // Shared-lock waits (locking.rs) and call-function interrupts (smp.rs).
    for (key, v) in k.lock_stats().into_iter().chain(k.smp_stats()) {
        extra.insert(key.into(), j(v));
    }
    tlb_extra(k, &mut extra);
    mglru_extra(k, &mut extra);
    writeback_extra(k, &mut extra);
    file_extra(k, &mut extra);
    swap_block_extra(k, &mut extra);
    extra.insert(
        "pages_touched".into(),
        j(k.tasks.iter().map(|t| t.pages_touched).sum()),
    );
    crate::mm::kswapd::report(k, sim_seconds, &mut extra);
    extra
}

/// The block swap device (mm/page_io.rs, mm/swap_state.rs): its I/O and the sleeps on it.
fn swap_block_extra(k: &Kernel, extra: &mut Extra) {
    if let Some(b) = &k.swap.block {
        let mut wakeups = k.sched.io_wakeups.clone();
        wakeups.resize(k.nr_cpus(), 0);
        extra.insert(
            "swap_block".into(),
            serde_json::json!({
                "read_requests": b.read_requests,
                "write_requests": b.write_requests,
                "writes_completed": b.writes_done,
                "swapin_sleeps": b.read_sleeps,
                "swapin_sleeps_on_readahead": b.read_sleeps_on_readahead,
                "swapin_sleep_ms": b.read_sleep_ns / 1_000_000,
                "io_wakeups_by_cpu": wakeups,
            }),
        );
    }
}

/// Unmapping and TLB flushing: try_to_unmap's work, each mm's cpumask, the arch's and
/// policies' own counts.
fn tlb_extra(k: &Kernel, extra: &mut Extra) {
    extra.insert("ttu_steps".into(), j(k.ttu_steps));
    extra.insert("ttu_ptes".into(), j(k.ttu_ptes));
    extra.insert(
        "mm_cpumask_weight".into(),
        serde_json::Value::from(
            k.mms
                .iter()
                .map(|m| m.cpumask.weight() as u64)
                .collect::<Vec<_>>(),
        ),
    );
    if k.arch == crate::arch::Arch::Arm64 {
        // arm64 only, so that x86 documents stay as they were.
        extra.insert("tlbi_ops".into(), j(k.tlbi_ops));
        extra.insert("dsb_ish".into(), j(k.dsb_ish));
        extra.insert("contpte_unfolds".into(), j(k.contpte_unfolds));
        extra.insert("referenced_steps".into(), j(k.referenced_steps));
        extra.insert("young_tests".into(), j(k.young_tests));
    }
    if let Some(s) = &k.invlpgb {
        // machine.invlpgb runs only, so that other documents stay as they were.
        extra.insert("invlpgb_ops".into(), j(s.invlpgb_ops));
        extra.insert("tlbsync".into(), j(s.tlbsyncs));
        extra.insert("global_asids".into(), j(s.global_asids));
    }
    if k.has(Patch::Luf) {
        extra.insert("luf_deferred_pages".into(), j(k.luf.deferred_pages));
        extra.insert("luf_flushes".into(), j(k.luf.flushes));
    }
}

/// Multi-gen LRU (when the kernel policy runs it): aging and the dirty folios eviction met.
fn mglru_extra(k: &Kernel, extra: &mut Extra) {
    if k.has(Patch::Mglru) {
        let g = &k.lruvec.lrugen;
        extra.insert("mglru_max_seq".into(), j(g.max_seq));
        extra.insert("mglru_aging".into(), j(g.nr_aging));
        extra.insert("mglru_dirty_bumped".into(), j(g.nr_dirty_bumped));
        extra.insert("mglru_flusher_wakeups".into(), j(g.nr_flusher_wakeups));
        extra.insert(
            "mglru_breakdown".into(),
            serde_json::json!({
                "reclaim_passes": g.nr_passes,
                "max_dirty_bumped_per_pass": g.max_dirty_bumped_pass,
                "dirty_rebumped": g.nr_dirty_rebumped,
                "aging_hot_pages_in_two_oldest_gens": g.aging_hot_in_oldest,
                "aging_pages_in_two_oldest_gens": g.aging_pages_in_oldest,
                "dirty_wait_ms_mean": k.wb.dirty_wait_ns / k.wb.dirty_wait_pages.max(1) / 1_000_000,
                "dirty_pages_written": k.wb.dirty_wait_pages,
                "reclaim_tagged_wait_ms_mean": k.wb.reclaim_wait_ns / k.wb.reclaim_wait_pages.max(1) / 1_000_000,
                "reclaim_tagged_written": k.wb.reclaim_wait_pages,
            }),
        );
    }
}

/// Writeback: the flusher, dirty throttling and reclaim's waits on it.
fn writeback_extra(k: &Kernel, extra: &mut Extra) {
    if k.wb.nr_written > 0 {
        extra.insert("writeback_pages".into(), j(k.wb.nr_written));
        extra.insert("writeback_rotated".into(), j(k.wb.nr_rotated));
        extra.insert(
            "flusher_runs".into(),
            serde_json::json!({
                "vmscan": k.wb.runs_vmscan,
                "background": k.wb.runs_background,
                "periodic": k.wb.runs_periodic,
            }),
        );
        if k.wb.flusher.is_some() {
            extra.insert("flusher_steps".into(), j(k.wb.flusher_steps));
            extra.insert("flusher_steps_lazy".into(), j(k.wb.flusher_steps_lazy));
            if k.wb.tag_waits > 0 {
                extra.insert("flusher_request_waits".into(), j(k.wb.tag_waits));
            }
        }
    }
    if k.wb.dirty_pauses + k.wb.reclaim_writeback_waits + k.wb.reclaim_throttles > 0 {
        extra.insert(
            "dirty_throttling".into(),
            serde_json::json!({
                "balance_dirty_pages_pauses": k.wb.dirty_pauses,
                "balance_dirty_pages_pause_ms": k.wb.dirty_pause_ns / 1_000_000,
                "reclaim_folio_wait_writeback": k.wb.reclaim_writeback_waits,
                "reclaim_throttle_writeback": k.wb.reclaim_throttles,
                "reclaim_throttle_sleeps": k.wb.throttle_sleeps,
            }),
        );
    }
}

/// Page-cache reads: readahead, fault-around, where the pages came from.
fn file_extra(k: &Kernel, extra: &mut Extra) {
    if k.ra.pages_zeroed + k.ra.pages_from_device > 0 {
        extra.insert("file_pages_zeroed".into(), j(k.ra.pages_zeroed));
        extra.insert(
            "file_pages_read_from_device".into(),
            j(k.ra.pages_from_device),
        );
    }
    if k.wb.io_wait_ns > 0 {
        extra.insert(
            "file_read_wait_seconds".into(),
            serde_json::Value::from(k.wb.io_wait_ns as f64 / 1e9),
        );
    }
    if k.ra.charge_failures > 0 {
        extra.insert("readahead_charge_failures".into(), j(k.ra.charge_failures));
    }
    if k.ra.fault_around_pages > 0 {
        extra.insert("fault_around_pages".into(), j(k.ra.fault_around_pages));
    }
    if k.ra.folios_by_order.iter().any(|&n| n > 0) {
        extra.insert(
            "readahead_folios_by_order".into(),
            serde_json::json!(k.ra.folios_by_order),
        );
        extra.insert(
            "page_cache_folios_by_order".into(),
            serde_json::json!(page_cache_folios_by_order(k)),
        );
    }
    if k.ra.thp_file_mapped > 0 {
        extra.insert("thp_file_mapped".into(), j(k.ra.thp_file_mapped));
    }
}

/// The files' page-cache folios at the end of the run, by order (what bench reads from
/// the data file's cache after its run).
fn page_cache_folios_by_order(k: &Kernel) -> [u64; 10] {
    use crate::mm::pgtable::{PTE_LOW_MASK, PTE_SWPCACHE};
    let mut by_order = [0u64; 10];
    for file in &k.files {
        for (p, &slot) in file.cache.iter().enumerate() {
            if slot & PTE_SWPCACHE == 0 {
                continue;
            }
            let f = k.folios.get(slot & PTE_LOW_MASK);
            if f.index as usize == p {
                by_order[(f.order as usize).min(9)] += 1;
            }
        }
    }
    by_order
}
