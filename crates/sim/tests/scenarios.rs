//! Whole-scenario tests: determinism, end-of-run invariants (with the per-flush and per-free
//! checks on), and that each workload produces the counters it should.

mod common;

use reclaimlab_core::ResultDoc;

fn sim(name: &str, sets: &[&str]) -> ResultDoc {
    common::sim_with(name, sets, &["sim.check=full"])
}

const SMALL_VM: &[&str] = &[
    "machine.cpus=4",
    "workload.workers=4",
    "workload.bytes=32M",
    "memcg.limit=8M",
    "run.duration=300ms",
];

#[test]
fn same_seed_same_json_other_seed_differs() {
    let a = serde_json::to_string(&sim("stress-vm", SMALL_VM)).unwrap();
    let b = serde_json::to_string(&sim("stress-vm", SMALL_VM)).unwrap();
    assert_eq!(a, b);
    let mut s2 = SMALL_VM.to_vec();
    s2.push("run.seed=2");
    let c = serde_json::to_string(&sim("stress-vm", &s2)).unwrap();
    assert_ne!(a, c);
}

#[test]
fn stress_vm_reclaims_and_shoots_down() {
    let d = sim("stress-vm", SMALL_VM);
    assert_eq!(d.backend, "sim");
    assert_eq!(d.kernel, "sim-6.18");
    let r = &d.runs[0];
    let c = &r.counters;
    assert!(c["pgsteal_anon"] > 1000, "{c:?}");
    assert!(c["pgsteal_anon"] <= c["pgscan_anon"]);
    assert!(c["pswpout"] > 0 && c["pswpin"] > 0);
    assert!(c["workingset_refault_anon"] > 0);
    assert!(c["tlb_shootdowns"] > 0);
    assert!(c["function_call_interrupts"] >= c["tlb_shootdowns"] / 2);
    assert_eq!(r.per_cpu["tlb_shootdowns"].len(), 4);
    assert_eq!(
        r.per_cpu["tlb_shootdowns"].iter().sum::<u64>(),
        c["tlb_shootdowns"]
    );
    assert_eq!(r.throughput.unit, "bogo_ops_per_sec");
    assert!(r.throughput.value > 0.0);
    assert_eq!(r.wall_seconds, 0.3);
}

#[test]
fn pinned_to_one_cpu_needs_no_ipis() {
    let mut s = SMALL_VM.to_vec();
    s.push("workload.cpus=[0]");
    let d = sim("stress-vm", &s);
    let c = &d.runs[0].counters;
    assert!(c["pgsteal_anon"] > 0);
    assert_eq!(c["tlb_shootdowns"], 0, "every mm only ever ran on CPU 0");
    assert_eq!(c["function_call_interrupts"], 0);
}

#[test]
fn no_batching_sends_more_ipis_than_618() {
    let base = sim("stress-vm", SMALL_VM);
    let mut s = SMALL_VM.to_vec();
    s.push("kernel.preset=4.2");
    let old = sim("stress-vm", &s);
    let per = |d: &ResultDoc| {
        let c = &d.runs[0].counters;
        c["tlb_shootdowns"] as f64 / c["pgsteal_anon"].max(1) as f64
    };
    assert!(
        per(&old) >= per(&base),
        "4.2 {} vs 6.18 {}",
        per(&old),
        per(&base)
    );
}

#[test]
fn file_workloads_run() {
    let d = sim(
        "file-mmap-rw",
        &[
            "workload.file_bytes=16M",
            "memcg.limit=8M",
            "run.duration=200ms",
        ],
    );
    let c = &d.runs[0].counters;
    assert!(c["pgsteal_file"] > 0 && c["pswpout"] == 0);
    assert_eq!(d.runs[0].throughput.unit, "pages_per_sec");
    let d = sim(
        "file-reclaim",
        &[
            "machine.cpus=4",
            "workload.file_bytes=16M",
            "workload.reclaim_bytes=8M",
            "memcg.limit=32M",
        ],
    );
    let r = &d.runs[0];
    assert_eq!(r.throughput.unit, "reclaim_seconds");
    assert!(r.throughput.value > 0.0);
    assert!(r.counters["pgsteal_file"] >= 2048);
}

#[test]
fn no_swap_means_oom_kills_and_restarts() {
    let mut s = SMALL_VM.to_vec();
    s.push("swap.size=0");
    let d = sim("stress-vm", &s);
    let r = &d.runs[0];
    assert!(r.oom_kills > 0, "{:?}", r.counters);
    assert_eq!(r.counters["oom_kill"], r.oom_kills);
    assert_eq!(r.counters["pswpout"], 0);
    // Restarted workers keep working: more kills than the 4 workers means restarted
    // processes ran and faulted again. (Their bogo ops stay 0 here: a restart begins the
    // "all" cycle again at cache-lines, which stress-ng 0.15.06 counts no units for, and
    // without swap no worker gets past populating its buffer.)
    assert!(r.oom_kills > 4, "{}", r.oom_kills);
    assert!(r.extra["pages_touched"].as_u64().unwrap() > 0);
}

#[test]
fn random_file_access_refaults_activate_the_workingset() {
    let d = sim(
        "file-mmap-rw",
        &[
            "workload.file_bytes=12M",
            "memcg.limit=8M",
            "workload.pattern=random",
            // Past the first periodic memcg statistics flush (1 s in): before it, reclaim and
            // workingset_test_recent read an empty active list.
            "run.duration=1500ms",
        ],
    );
    let c = &d.runs[0].counters;
    assert!(c["workingset_refault_file"] > 0, "{c:?}");
    assert!(c["workingset_activate_file"] > 0, "{c:?}");
    assert!(c["pgactivate"] > 0 && c["pgdeactivate"] > 0, "{c:?}");
}
