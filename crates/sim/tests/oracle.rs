//! The lost-write oracle in ordinary simulations: with reclaim preemption points
//! (`sim.interleave = "folio"`) other CPUs store while reclaim's flushes are pending, and the
//! deliberately unsafe policy loses writes while the kernel's policies do not.

mod common;

use reclaimlab_core::{Scenario, Target};

/// Three single-threaded processes storing to random pages of 4M each in an 8M memcg: pages
/// stay in the TLB long enough to look cold to reclaim while still being stored to.
const RACE: &[&str] = &[
    "machine.cpus=4",
    "workload.processes=3",
    "workload.threads=1",
    "workload.bytes=4M",
    "memcg.limit=8M",
    "workload.pattern=random",
    "workload.write_ratio=1",
    "sim.interleave=folio",
    // The race needs a page stored to through a stale entry between unmap and pageout: pages
    // that take zram long to compress (stress-ng-like data) keep that window wide.
    "sim.page_data=pattern",
    "run.duration=1s",
];

fn run(extra: &[&str]) -> anyhow::Result<reclaimlab_core::ResultDoc> {
    let sets: Vec<String> = RACE.iter().chain(extra).map(|s| s.to_string()).collect();
    let scn = Scenario::load("anon-sweep", &sets, Target::Sim).expect("scenario");
    reclaimlab_sim::run(&scn, &Default::default())
}

#[test]
fn unsafe_policy_loses_a_write_and_the_run_fails_with_its_trace() {
    let err = run(&["kernel.patches=[\"unsafe-defer-dirty-flush\"]"])
        .expect_err("the unsafe policy must fail the run")
        .to_string();
    assert!(err.contains("LOST WRITE"), "{err}");
    // The trace names the deferred unmap, the skipped dirty flush, the snapshot, the late
    // store through the stale entry and the free, in that order.
    let order = [
        "set_tlb_ubc_flush_pending",
        "SKIPPED",
        "pageout",
        "STALE TLB entry",
        "==> LOST WRITE",
    ];
    let mut at = 0;
    for needle in order {
        let i = err[at..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing after byte {at}:\n{err}"));
        at += i + needle.len();
    }
}

#[test]
fn kernel_policies_lose_nothing_in_the_same_race() {
    for extra in [
        &[][..],
        &["kernel.patches=[\"batch-dirty-flush\"]"][..],
        &["kernel.preset=\"4.2\""][..],
    ] {
        let doc = run(extra).unwrap_or_else(|e| panic!("{extra:?}: {e}"));
        let x = &doc.runs[0].extra;
        assert_eq!(x["oracle_lost_writes"], 0, "{extra:?}");
        assert_eq!(x["oracle_use_after_free_writes"], 0, "{extra:?}");
        assert!(x["reclaim_preempt_steps"].as_u64().unwrap() > 0);
    }
}

#[test]
fn folio_interleaving_is_deterministic() {
    let a = serde_json::to_string(&run(&[]).unwrap()).unwrap();
    let b = serde_json::to_string(&run(&[]).unwrap()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn oracle_counts_are_reported_and_zero_in_a_default_run() {
    let doc = common::sim_with(
        "stress-vm",
        &["run.duration=1s", "machine.cpus=2", "workload.workers=2"],
        &[],
    );
    assert_eq!(doc.runs[0].extra["oracle_lost_writes"], 0);
    let off = common::sim_with(
        "stress-vm",
        &["run.duration=1s", "machine.cpus=2", "workload.workers=2"],
        &["sim.oracle=false"],
    );
    assert!(!off.runs[0].extra.contains_key("oracle_lost_writes"));
}

#[test]
fn every_workload_runs_interleaved_without_findings() {
    // Each shipped workload, small, with reclaim preemption points: the kernel's policies must
    // lose nothing, and the window machinery (locks, rechecks, kswapd, writeback) must hold
    // the end-of-run invariants (run() fails otherwise).
    let cases: &[(&str, &[&str])] = &[
        (
            "stress-vm",
            &["machine.cpus=4", "workload.workers=4", "run.duration=300ms"],
        ),
        (
            "file-mmap-rw",
            &[
                "run.duration=300ms",
                "workload.write=true",
                "sim.file_folio_order=2",
            ],
        ),
        (
            "file-mmap-rw",
            &[
                "run.duration=300ms",
                "workload.write=true",
                "machine.arch=\"arm64\"",
            ],
        ),
        (
            "ycsb-b",
            &["run.duration=500ms", "kernel.patches=[\"mglru\"]"],
        ),
        (
            "ycsb-b",
            &[
                "run.duration=500ms",
                "kernel.patches=[\"mglru-dirty-reactivate\"]",
            ],
        ),
        (
            "kswapd-mmap-read",
            &["machine.cpus=4", "machine.memory=\"128M\""],
        ),
    ];
    for (name, sets) in cases {
        let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        all.push("sim.interleave=\"folio\"".into());
        let scn = Scenario::load(name, &all, Target::Sim).expect("scenario");
        let doc = reclaimlab_sim::run(&scn, &Default::default())
            .unwrap_or_else(|e| panic!("{name} {sets:?}: {e}"));
        let x = &doc.runs[0].extra;
        assert_eq!(x["oracle_lost_writes"], 0, "{name} {sets:?}");
        assert_eq!(x["oracle_use_after_free_writes"], 0, "{name} {sets:?}");
    }
}
