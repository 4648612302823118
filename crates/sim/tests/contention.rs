//! Contention in the time model (locking.rs, smp.rs): lru_lock waits when two CPUs reclaim one
//! memcg and never with one CPU; the same scenario and seed give the same output.

use reclaimlab_core::{Scenario, Target};

fn run(sets: &[&str]) -> reclaimlab_core::ResultDoc {
    let sets: Vec<String> = [
        "workload.bytes=16M",
        "workload.threads=1",
        "workload.write_ratio=1",
        "workload.pattern=sequential",
        "run.duration=300ms",
    ]
    .iter()
    .chain(sets)
    .map(|s| s.to_string())
    .collect();
    let scn = Scenario::load("anon-sweep", &sets, Target::Sim).expect("scenario");
    reclaimlab_sim::run(&scn, &Default::default()).expect("sim run")
}

fn extra(doc: &reclaimlab_core::ResultDoc, key: &str) -> u64 {
    doc.runs[0].extra[key]
        .as_u64()
        .unwrap_or_else(|| panic!("extra.{key} missing"))
}

#[test]
fn two_cpus_reclaiming_one_memcg_wait_for_lru_lock_and_one_cpu_never_does() {
    let two = run(&[
        "workload.processes=2",
        "workload.cpus=[0,1]",
        "memcg.limit=16M",
    ]);
    assert!(extra(&two, "lru_lock_acquired") > 1000);
    assert!(
        extra(&two, "lru_lock_contended") > 0,
        "no lru_lock wait on 2 CPUs"
    );
    assert!(extra(&two, "lru_lock_wait_ns") > 0);

    let one = run(&[
        "workload.processes=2",
        "workload.cpus=[0,0]",
        "memcg.limit=16M",
    ]);
    assert!(extra(&one, "lru_lock_acquired") > 1000);
    assert_eq!(
        extra(&one, "lru_lock_contended"),
        0,
        "one CPU cannot wait for itself"
    );
    assert_eq!(extra(&one, "lru_lock_wait_ns"), 0);
}

#[test]
fn contention_is_deterministic() {
    let sets = [
        "workload.processes=3",
        "workload.cpus=all",
        "memcg.limit=24M",
    ];
    let a = serde_json::to_string(&run(&sets)).expect("json");
    let b = serde_json::to_string(&run(&sets)).expect("json");
    assert_eq!(a, b);
}
