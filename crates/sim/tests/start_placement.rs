//! `sim.start_placement`: where each anon-sweep process's threads ran before the sweep. A CPU
//! its main thread ran on stays in the mm's cpumask (x86 switch_mm_irqs_off never clears it
//! on switch-away), so reclaim flushes of that mm's pages reach it for the whole run.

mod common;

use reclaimlab_core::{ResultDoc, Scenario, Target};

fn sim_sets(sets: &[&str]) -> ResultDoc {
    let base = [
        "workload.bytes=8M",
        "memcg.limit=8M",
        "run.duration=300ms",
        "workload.processes=2",
        "workload.cpus=all",
        "machine.cpus=2",
    ];
    common::sim_with("anon-sweep", &base, sets)
}

fn sim(start: Option<&str>) -> ResultDoc {
    let s = start.map(|s| format!("sim.start_placement={s}"));
    let sets: Vec<&str> = s.iter().map(|s| s.as_str()).collect();
    sim_sets(&sets)
}

/// (TLB shootdowns per stolen page, shootdowns received by CPU 0, by CPU 1).
fn shootdowns(d: &ResultDoc) -> (f64, u64, u64) {
    let r = &d.runs[0];
    let steal = r.counters["pgsteal_anon"];
    assert!(steal > 1000, "too little reclaim: {:?}", r.counters);
    let per = &r.per_cpu["tlb_shootdowns"];
    (
        r.counters["tlb_shootdowns"] as f64 / steal as f64,
        per[0],
        per[1],
    )
}

#[test]
fn a_cpu_the_main_thread_left_keeps_receiving_that_mms_flushes() {
    // Each process on its own CPU: a reclaimer IPIs the other CPU only for the other's pages.
    let (clean, c0, c1) = shootdowns(&sim(Some("0:0;1:1")));
    // Process 1's main thread ran on CPU 0 before it moved to CPU 1 and cloned its sweeper
    // onto CPU 0: CPU 1 stays in process 1's mask, so CPU 0's reclaimer IPIs CPU 1 for its own
    // pages as well.
    let (one, d0, d1) = shootdowns(&sim(Some("0:0;0,1:1")));
    // Both masks hold both CPUs: every dirty page's flush leaves its CPU.
    let (both, _, _) = shootdowns(&sim(Some("0,1:0;0,1:1")));
    assert!(clean < one && one < both, "{clean} {one} {both}");
    assert!(both > 0.9, "both masks stale: {both} per stolen page");
    // Only the stale CPU's count grows.
    assert!((c0 as f64 - c1 as f64).abs() < 0.2 * c0 as f64, "{c0} {c1}");
    assert!(d0 as f64 > 1.3 * d1 as f64, "CPU 0 {d0}, CPU 1 {d1}");
    // The static start-up places the processes one per CPU, as the first case.
    let fixed = sim_sets(&["sim.bench_start=static"]);
    assert_eq!(
        fixed.runs[0].counters,
        sim(Some("0:0;1:1")).runs[0].counters
    );
}

fn err_of(sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scn = Scenario::load("anon-sweep", &sets, Target::Sim).unwrap();
    match reclaimlab_sim::run(&scn, &Default::default()) {
        Ok(_) => panic!("{sets:?} should be refused"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn bad_start_placements_are_refused_with_the_reason() {
    let two = [
        "workload.processes=2",
        "workload.cpus=all",
        "machine.cpus=2",
    ];
    let with = |s: &str| -> Vec<String> {
        two.iter()
            .map(|x| x.to_string())
            .chain([format!("sim.start_placement={s}")])
            .collect()
    };
    let e = |s: &str| {
        let v = with(s);
        err_of(&v.iter().map(|x| x.as_str()).collect::<Vec<_>>())
    };
    assert!(e("0:0").contains("gives 1 processes"), "{}", e("0:0"));
    assert!(
        e("0:0,1;1:1").contains("2 sweeper CPUs"),
        "{}",
        e("0:0,1;1:1")
    );
    assert!(
        e("0:0;2:1").contains("machine.cpus is 2"),
        "{}",
        e("0:0;2:1")
    );
    assert!(
        e("0:0;x:1").contains("not a CPU number"),
        "{}",
        e("0:0;x:1")
    );
    assert!(
        e("0;1:1").contains("MAIN_CPUS:SWEEPER_CPUS"),
        "{}",
        e("0;1:1")
    );
    // Other workloads have no main thread that clones sweepers.
    let sets = ["sim.start_placement=0:0".to_string()];
    let scn = Scenario::load("stress-vm", &sets, Target::Sim).unwrap();
    let Err(e) = reclaimlab_sim::run(&scn, &Default::default()) else {
        panic!("stress-vm accepted sim.start_placement")
    };
    assert!(format!("{e:#}").contains("anon-sweep only"), "{e:#}");
}

#[test]
fn a_pinned_thread_first_seen_elsewhere_leaves_that_cpu_in_the_mask() {
    // On the host a thread pins itself once it runs, so it may first run on its parent's
    // CPU: process 0's sweeper (pinned to CPU 0) was cloned onto CPU 1 and ran there first.
    let run = |start: &str| {
        let s = format!("sim.start_placement={start}");
        common::sim_with(
            "anon-sweep",
            &[
                "workload.bytes=8M",
                "memcg.limit=8M",
                "run.duration=300ms",
                "workload.processes=2",
                "workload.cpus=[0,1]",
                "machine.cpus=2",
            ],
            &[s.as_str()],
        )
    };
    let (clean_doc, stale_doc) = (run("0:0;1:1"), run("0:1;1:1"));
    let (clean, _, _) = shootdowns(&clean_doc);
    let (stale, c0, c1) = shootdowns(&stale_doc);
    // CPU 1 stays in process 0's mask: CPU 0's reclaimer IPIs it for its own pages too.
    assert!(stale > clean * 1.2, "{clean} {stale}");
    assert!(c1 as f64 > 1.3 * c0 as f64, "CPU 0 {c0}, CPU 1 {c1}");
    // Its move to its pin is a migration, as the host's trace counts it (set_task_cpu).
    let migrations = |d: &reclaimlab_core::ResultDoc| -> Vec<u64> {
        let tasks = d.runs[0].extra["placement"]["tasks"]
            .as_array()
            .unwrap()
            .clone();
        tasks
            .iter()
            .filter(|t| t["kind"] == "worker")
            .map(|t| t["migrations"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(migrations(&clean_doc), vec![0, 0]);
    assert_eq!(migrations(&stale_doc), vec![1, 0]);
}
