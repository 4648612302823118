//! Helpers shared by the sim's integration tests.
#![allow(dead_code)] // each test binary uses its own subset

use reclaimlab_core::{ResultDoc, Scenario, Target};
use reclaimlab_sim::config::{CheckLevel, SimConfig};

/// A tiny, fully checked machine: small TLBs, invariants after every step.
pub fn cfg(file_folio_order: u8) -> SimConfig {
    SimConfig {
        tlb_entries: 64,
        tlb_ways: 4,
        tick_ns: 4_000_000,
        sched: Default::default(),
        bogo_units_per_page: 512,
        step_pages: 16,
        progress_every_ns: 1_000_000_000,
        check: CheckLevel::Full,
        file_folio_order,
        file_max_order: 9,
        readahead_pages: None,
        cgroup_v1: false,
        writeback_queue_depth: 0,
        writeback_request_pages: 1024,
        writeback_irq_cpu: None,
        file_pmd_map: true,
        file_fault_whole_folio: false,
        file_buffer_heads: true,
        oracle: true,
        interleave: reclaimlab_sim::config::Interleave::Step,
        page_data: None,
        start_placement: None,
        bench_start_attach: true,
        bench_launch_cpu: 0,
        stress_ng_fork: true,
        stress_ng_launch_cpu: 0,
        swap: Default::default(),
    }
}

/// Simulate a shipped scenario with `base` then `sets` applied; every `sim.*` key must be read.
pub fn sim_with(name: &str, base: &[&str], sets: &[&str]) -> ResultDoc {
    let all: Vec<String> = base.iter().chain(sets).map(|s| s.to_string()).collect();
    let scn = Scenario::load(name, &all, Target::Sim).expect("scenario");
    let doc = reclaimlab_sim::run(&scn, &Default::default()).expect("simulation");
    scn.finish().expect("every sim key read");
    doc
}

/// Run `name` with `sets` twice and assert the two results are byte for byte the same;
/// returns the result's JSON text.
pub fn same_twice(name: &str, sets: &[&str]) -> String {
    let a = serde_json::to_string(&sim_with(name, sets, &[])).unwrap();
    let b = serde_json::to_string(&sim_with(name, sets, &[])).unwrap();
    assert_eq!(a, b, "{name} with {sets:?} differs between two runs");
    a
}

/// A whole-number counter of the first run's `extra` (0 when absent).
#[allow(dead_code)]
pub fn extra_u64(doc: &ResultDoc, key: &str) -> u64 {
    doc.runs[0]
        .extra
        .get(key)
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// Like `sim_with`, returning the error's text instead of panicking on bad input.
#[allow(dead_code)]
pub fn try_sim_with(name: &str, base: &[&str], sets: &[&str]) -> Result<ResultDoc, String> {
    let all: Vec<String> = base.iter().chain(sets).map(|s| s.to_string()).collect();
    let scn = Scenario::load(name, &all, Target::Sim).map_err(|e| format!("{e:#}"))?;
    reclaimlab_sim::run(&scn, &Default::default()).map_err(|e| format!("{e:#}"))
}

/// A machine of `cpus` CPUs (1024-page memcg, 4 GiB swap) with `n` unpinned tasks, each its own
/// one-page mm, none placed yet.
#[allow(dead_code)]
pub fn machine(
    cpus: usize,
    n: usize,
) -> (
    reclaimlab_sim::kernel::Kernel,
    reclaimlab_sim::sched::RunQueues,
) {
    use reclaimlab_sim::kernel::{Backing, Kernel};
    let mut k = Kernel::new(
        cfg(0),
        reclaimlab_sim::config::Policy::linux_6_18(),
        cpus,
        1024,
        1 << 20,
        60,
        1,
    );
    for _ in 0..n {
        let mm = k.mm_alloc(1, Backing::Anon, true);
        k.task_new(mm, None, 0, 1);
    }
    (k, reclaimlab_sim::sched::RunQueues::new(cpus))
}
