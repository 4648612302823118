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

/// file-mmap-rw on the generic x86 profile, with `line_transfer` set to `transfer` ns.
fn run_file(sets: &[&str], transfer: f64) -> reclaimlab_core::ResultDoc {
    let sets: Vec<String> = [
        "machine.profile=generic-x86",
        "workload.file_bytes=64M",
        "memcg.limit=16M",
        "workload.write=false",
        "workload.pattern=random",
        "run.duration=300ms",
    ]
    .iter()
    .chain(sets)
    .map(|s| s.to_string())
    .collect();
    let mut scn = Scenario::load("file-mmap-rw", &sets, Target::Sim).expect("scenario");
    let p = scn.profile.as_mut().expect("profile loaded");
    p.profile.costs.get_mut("line_transfer").expect("cost").ns = transfer;
    reclaimlab_sim::run(&scn, &Default::default()).expect("sim run")
}

/// Busy CPU time over pages stolen (ns).
fn busy_per_steal(doc: &reclaimlab_core::ResultDoc) -> f64 {
    let r = &doc.runs[0];
    let busy: f64 = r.extra["placement"]["cpus"]
        .as_array()
        .expect("placement.cpus")
        .iter()
        .map(|c| c["busy_seconds"].as_f64().unwrap())
        .sum();
    busy * 1e9 / r.counters["pgsteal_file"] as f64
}

/// Two threads filling and reclaiming one file's page cache take its i_pages lock after each
/// other: their sections fetch the lock's lines and cost more CPU per page than the same
/// threads on one CPU, where no section ever follows another CPU's.
#[test]
fn two_cpus_sharing_one_page_cache_hand_its_lock_over_and_one_cpu_never_does() {
    let two = run_file(&["workload.threads=2", "workload.cpus=[0,1]"], 60.0);
    let one = run_file(&["workload.threads=2", "workload.cpus=[0,0]"], 60.0);
    assert!(extra(&two, "i_pages_lock_acquired") > 1000);
    assert!(extra(&two, "i_pages_lock_remote_handoffs") > 100);
    assert!(extra(&two, "lock_line_transfers") > 0);
    assert!(extra(&one, "i_pages_lock_acquired") > 1000);
    assert_eq!(extra(&one, "i_pages_lock_remote_handoffs"), 0);
    assert_eq!(extra(&one, "lru_lock_remote_handoffs"), 0);
    assert_eq!(extra(&one, "lock_line_transfers"), 0);
    // Without line transfers the two-CPU run costs no more per page than the one-CPU one.
    let free = run_file(&["workload.threads=2", "workload.cpus=[0,1]"], 0.0);
    assert!(busy_per_steal(&two) > busy_per_steal(&free) * 1.02);
}
