//! Build the shared result document (reclaimlab.result/1) from a finished simulation.

use crate::config::Patch;
use crate::kernel::Kernel;
use crate::mm::vmstat::{Place, VmEventItem::*};
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
                rotational: k.swap.block.as_ref().map(|_| k.swap.cluster_readahead()),
                scheduler: None,
                request_pages: None,
                virtio_ring: None,
            },
            sched_cmdline: Vec::new(),
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

/// A total time in ns over a count, in whole ms (0 for none).
fn mean_ms(ns: u64, n: u64) -> u64 {
    ns / n.max(1) / 1_000_000
}

/// The map of a `json!({...})` object, to extend with a place's counters.
fn object(v: &mut serde_json::Value) -> &mut serde_json::Map<String, serde_json::Value> {
    v.as_object_mut().expect("a JSON object")
}

/// /proc/vmstat's and /proc/interrupts' counters, by the host's names.
fn counters(k: &Kernel) -> BTreeMap<String, u64> {
    let mut counters = k.vmstat.to_map(Place::Vmstat);
    counters.insert("tlb_shootdowns".into(), k.irq.tlb_shootdowns.iter().sum());
    counters.insert(
        "function_call_interrupts".into(),
        k.irq.function_call_interrupts.iter().sum(),
    );
    if k.swap.block.is_some() {
        // The block swap device's readahead counters (mm/swap_state.rs).
        counters.extend(k.vmstat.to_map(Place::VmstatBlockSwap));
    }
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
    // memory.stat's LRU sizes at the end of the run (bytes), from the classic lists; with
    // MGLRU they would come from the generations (lru_gen_is_active), not reported yet.
    if !k.lruvec.lrugen.enabled {
        use crate::mm::folio::{
            LRU_ACTIVE_ANON, LRU_ACTIVE_FILE, LRU_INACTIVE_ANON, LRU_INACTIVE_FILE,
        };
        for (key, lru) in [
            ("inactive_anon", LRU_INACTIVE_ANON),
            ("active_anon", LRU_ACTIVE_ANON),
            ("inactive_file", LRU_INACTIVE_FILE),
            ("active_file", LRU_ACTIVE_FILE),
        ] {
            memcg_stat.insert(key.into(), (k.lruvec.size(lru) * 4096) as i64);
        }
    }
    memcg_stat
}

/// The model's own figures (`runs[].extra`); a feature's keys appear only when it is on, so
/// that documents without it stay as they were.
fn extra(k: &Kernel, sim_seconds: f64) -> Extra {
    let mut extra = BTreeMap::new();
    extra.extend(k.vmstat.json(Place::Extra));
    extra.insert(
        "reclaim_cpu_seconds".into(),
        serde_json::Value::from(k.vmstat[RECLAIM_NS] as f64 / 1e9),
    );
    if k.cfg.interleave == crate::config::Interleave::Folio {
        extra.extend(k.vmstat.json(Place::InterleaveFolio));
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
    extra.extend(k.vmstat.json(Place::ExtraNonzero).filter(|(_, v)| *v != 0));
    // Shared-lock waits (locking.rs).
    for (key, v) in k.lock_stats() {
        extra.insert(key.into(), j(v));
    }
    tlb_extra(k, &mut extra);
    mglru_extra(k, &mut extra);
    writeback_extra(k, &mut extra);
    file_extra(k, &mut extra);
    swap_block_extra(k, &mut extra);
    // CPU time by what it was spent on (cputime.rs).
    extra.insert("cpu_time_ns".into(), k.cpu_time.json());
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
        let mut swap_block = serde_json::json!({
            "swapin_sleep_ms": k.vmstat[SWAPIN_SLEEP_NS] / 1_000_000,
            "completion_irq_ms": k.vmstat[SWAP_COMPLETE_NS] / 1_000_000,
            "io_wakeups_by_cpu": wakeups,
        });
        object(&mut swap_block).extend(k.vmstat.json(Place::SwapBlock));
        if let Some(map) = &b.map {
            // Blocks of swap_cluster_readahead's largest window (2^page_cluster slots).
            let cluster = b.cfg.map_or(3, |c| c.page_cluster).min(16);
            let swapped = |m: usize, p: u64| {
                k.mms[m]
                    .ptes
                    .get(p as usize)
                    .is_some_and(|&e| crate::mm::pgtable::is_swap_pte(e))
            };
            let l = map.layout(1 << cluster, swapped);
            swap_block["slot_layout"] = serde_json::json!({
                "pages_out": l.pages,
                "mean_run": l.mean_run,
                "block_slots": 1u32 << cluster,
                "block_majority_share": l.block_majority_share,
                "next_page_pairs": l.next_page_pairs,
                // A share, as the host script gives it.
                "next_page_in_next_slot":
                    l.next_page_in_next_slot as f64 / l.next_page_pairs.max(1) as f64,
            });
        }
        extra.insert("swap_block".into(), swap_block);
    }
}

/// Unmapping and TLB flushing: try_to_unmap's work, each mm's cpumask, the arch's and
/// policies' own counts.
fn tlb_extra(k: &Kernel, extra: &mut Extra) {
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
        extra.extend(k.vmstat.json(Place::Arm64));
    }
    if let Some(s) = &k.invlpgb {
        // machine.invlpgb runs only, so that other documents stay as they were.
        extra.extend(k.vmstat.json(Place::Invlpgb));
        extra.insert("global_asids".into(), j(s.global_asids));
    }
    if k.has(Patch::Luf) {
        extra.extend(k.vmstat.json(Place::Luf));
    }
}

/// Multi-gen LRU (when the kernel policy runs it): aging and the dirty folios eviction met.
fn mglru_extra(k: &Kernel, extra: &mut Extra) {
    if k.has(Patch::Mglru) {
        let g = &k.lruvec.lrugen;
        extra.insert("mglru_max_seq".into(), j(g.max_seq));
        extra.extend(k.vmstat.json(Place::Mglru));
        let mut breakdown = serde_json::json!({
            "max_dirty_bumped_per_pass": g.max_dirty_bumped_pass,
            "dirty_wait_ms_mean": mean_ms(k.vmstat[DIRTY_WAIT_NS], k.vmstat[DIRTY_WAIT_PAGES]),
            "reclaim_tagged_wait_ms_mean": mean_ms(k.vmstat[RECLAIM_WAIT_NS], k.vmstat[RECLAIM_WAIT_PAGES]),
        });
        object(&mut breakdown).extend(k.vmstat.json(Place::MglruBreakdown));
        extra.insert("mglru_breakdown".into(), breakdown);
    }
}

/// Writeback: the flusher, dirty throttling and reclaim's waits on it.
fn writeback_extra(k: &Kernel, extra: &mut Extra) {
    if k.vmstat[NR_WRITTEN] > 0 {
        // /proc/vmstat's nr_written and pgrotated again, under the model's older names.
        extra.insert("writeback_pages".into(), j(k.vmstat[NR_WRITTEN]));
        extra.insert("writeback_rotated".into(), j(k.vmstat[PGROTATED]));
        let runs = k.vmstat.json(Place::FlusherRuns).collect();
        extra.insert("flusher_runs".into(), serde_json::Value::Object(runs));
        extra.insert(
            "writeback_cpu_ms".into(),
            serde_json::json!({
                "submit": k.vmstat[WRITEBACK_SUBMIT_NS] / 1_000_000,
                "complete": k.vmstat[WRITEBACK_COMPLETE_NS] / 1_000_000,
            }),
        );
        if k.wb.flusher.is_some() {
            extra.extend(k.vmstat.json(Place::Flusher));
            if k.vmstat[MKCLEAN_TARGETS] > 0 {
                let census = k.vmstat.json(Place::FlusherFlushes).collect();
                extra.insert(
                    "flusher_mkclean_flushes".into(),
                    serde_json::Value::Object(census),
                );
            }
            let waits = k.vmstat[FLUSHER_REQUEST_WAITS];
            if waits > 0 {
                extra.insert(FLUSHER_REQUEST_WAITS.name().into(), j(waits));
            }
        }
    }
    if k.vmstat[DIRTY_PAUSES] + k.vmstat[RECLAIM_WRITEBACK_WAITS] + k.vmstat[RECLAIM_THROTTLES] > 0
    {
        let mut throttling = serde_json::json!({
            "balance_dirty_pages_pause_ms": k.vmstat[DIRTY_PAUSE_NS] / 1_000_000,
        });
        object(&mut throttling).extend(k.vmstat.json(Place::DirtyThrottling));
        extra.insert("dirty_throttling".into(), throttling);
    }
}

/// Page-cache reads: readahead, fault-around, where the pages came from.
fn file_extra(k: &Kernel, extra: &mut Extra) {
    let from = k.vmstat.to_map(Place::FileRead);
    if from.values().any(|&v| v > 0) {
        extra.extend(from.into_iter().map(|(key, v)| (key, j(v))));
    }
    if k.vmstat[FILE_READ_WAIT_NS] > 0 {
        extra.insert(
            "file_read_wait_seconds".into(),
            serde_json::Value::from(k.vmstat[FILE_READ_WAIT_NS] as f64 / 1e9),
        );
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
    if !k.files.is_empty() {
        // As bench's file workers report it: whether the threads kept pace with each other.
        let per: Vec<u64> = k
            .tasks
            .iter()
            .filter(|t| t.is_worker())
            .map(|t| t.pages_touched)
            .collect();
        extra.insert("pages_touched_per_thread".into(), serde_json::json!(per));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Interleave, Policy, SimConfig};
    use crate::mm::swap::{BlockConfig, IrqCpu};
    use crate::mm::vmstat::VmEventItem;

    /// The value of `name` where `place` puts it in a run's counters and extras.
    fn serialised(
        counters: &BTreeMap<String, u64>,
        extra: &Extra,
        place: Place,
        name: &str,
    ) -> Option<u64> {
        let object = |key: &str| extra.get(key).and_then(|o| o.get(name));
        match place {
            Place::Vmstat | Place::VmstatBlockSwap => counters.get(name).copied(),
            Place::MglruBreakdown => object("mglru_breakdown")?.as_u64(),
            Place::FlusherRuns => object("flusher_runs")?.as_u64(),
            Place::FlusherFlushes => object("flusher_mkclean_flushes")?.as_u64(),
            Place::DirtyThrottling => object("dirty_throttling")?.as_u64(),
            Place::SwapBlock => object("swap_block")?.as_u64(),
            Place::MigrationsByCause => extra["placement"]["migrations_by_cause"]
                .get(name)?
                .as_u64(),
            Place::Custom => None,
            _ => extra.get(name)?.as_u64(),
        }
    }

    /// With every feature on and every counter nonzero (each a different value), each item
    /// outside `Custom` appears under its name, in its place, with its own count: a new
    /// item needs no line in this file to be reported.
    #[test]
    fn every_item_is_in_the_document_under_its_name() {
        let mut policy = Policy::linux_6_18();
        policy.set(Patch::Luf, true);
        policy.set(Patch::Mglru, true);
        let cfg = SimConfig {
            interleave: Interleave::Folio,
            ..Default::default()
        };
        let mut k = Kernel::new(cfg, policy, 2, 1024, 1024, 60, 1);
        k.arch = crate::arch::Arch::Arm64;
        k.invlpgb = Some(crate::arch::x86::invlpgb::Invlpgb::new(2));
        k.pgdat.enabled = true;
        k.wb.flusher = Some(0);
        k.swap.set_block(
            BlockConfig {
                irq: IrqCpu::Submitter,
                page_cluster: 3,
                rotational: false,
                scheduler: crate::mm::swap::Elevator::None,
                request_pages: 0,
                ring_descriptors: 0,
                indirect_desc: false,
            },
            2,
        );
        for (n, &item) in VmEventItem::ALL.iter().enumerate() {
            k.vmstat.count_vm_events(item, 1000 + n as u64);
        }
        let (counters, extra) = (counters(&k), extra(&k, 1.0));
        for &item in VmEventItem::ALL {
            if item.place() != Place::Custom {
                let got = serialised(&counters, &extra, item.place(), item.name());
                assert_eq!(got, Some(k.vmstat[item]), "{item:?} as {}", item.name());
            }
        }
    }
}
