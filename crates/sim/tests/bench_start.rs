//! `sim.bench_start = "attach"`: anon-sweep's processes start as bench starts them, each
//! writing itself into the memcg first (sched/cgroup_attach.rs, workload/bench_start.rs).

mod common;

use reclaimlab_core::ResultDoc;
use serde_json::Value;

fn sim(start: &str, cpus: &str) -> ResultDoc {
    let base = [
        "workload.bytes=8M",
        "memcg.limit=8M",
        "run.duration=300ms",
        "workload.processes=2",
        "machine.cpus=2",
    ];
    let s = format!("sim.bench_start={start}");
    let c = format!("workload.cpus={cpus}");
    common::sim_with("anon-sweep", &base, &[s.as_str(), c.as_str()])
}

fn placement(d: &ResultDoc) -> &Value {
    &d.runs[0].extra["placement"]
}

/// The largest cpumask weight each of the first `n` mms reached.
fn mask_max(d: &ResultDoc, n: usize) -> Vec<u64> {
    placement(d)["mms"].as_array().unwrap()[..n]
        .iter()
        .map(|m| m["cpumask_weight_max"].as_u64().unwrap())
        .collect()
}

fn tlb_per_steal(d: &ResultDoc) -> f64 {
    let c = &d.runs[0].counters;
    assert!(c["pgsteal_anon"] > 1000, "too little reclaim: {c:?}");
    c["tlb_shootdowns"] as f64 / c["pgsteal_anon"] as f64
}

#[test]
fn the_grace_period_wake_up_moves_the_first_writer_and_widens_its_mask() {
    let attach = sim("attach", "all");
    let tasks = placement(&attach)["tasks"].as_array().unwrap();
    // The RCU kthread (no mm) was woken twice: by the first writer, and by its timer at the
    // grace period's end. The second writer, let in a moment later, did not start another
    // grace period (rcu_sync was still GP_PASSED).
    // (vmpressure's kworkers have no mm either.)
    let kt: Vec<&Value> = tasks
        .iter()
        .filter(|t| t["mm"].is_null() && t["kind"] != "kworker")
        .collect();
    assert_eq!(kt.len(), 1);
    assert_eq!(kt[0]["wakeups"], 2, "{:?}", kt[0]);
    // The first process's main thread was woken on the kthread's busy CPU and placed on the
    // idle one: it ran on both, and the mm's mask kept both for the run.
    let main0 = &tasks[0];
    assert_eq!(main0["mm"], 0);
    assert_eq!(main0["migrations"], 1, "{main0:?}");
    assert_eq!(mask_max(&attach, 2)[0], 2);
    // The static start-up (every process on its own CPU from time 0) keeps one CPU per mask,
    // and sends fewer shootdowns per stolen page.
    let fixed = sim("static", "all");
    assert_eq!(mask_max(&fixed, 2), vec![1, 1]);
    assert!(
        tlb_per_steal(&attach) > 1.3 * tlb_per_steal(&fixed),
        "{} against {}",
        tlb_per_steal(&attach),
        tlb_per_steal(&fixed)
    );
}

#[test]
fn pinned_processes_stay_on_their_cpus_through_the_attach() {
    // bench forks each pinned process with its affinity: the wake-ups cannot move it.
    let d = sim("attach", "[0,1]");
    assert_eq!(mask_max(&d, 2), vec![1, 1]);
    let tasks = placement(&d)["tasks"].as_array().unwrap();
    assert!(tasks.iter().all(|t| t["migrations"] == 0), "{tasks:?}");
}

#[test]
fn a_bad_start_or_launch_cpu_is_refused() {
    let err = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let scn =
            reclaimlab_core::Scenario::load("anon-sweep", &sets, reclaimlab_core::Target::Sim)
                .expect("the scenario loads");
        reclaimlab_sim::run(&scn, &Default::default())
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default()
    };
    let e = err(&["sim.bench_start=later"]);
    assert!(
        e.contains("sim.bench_start") && e.contains("attach or static"),
        "{e}"
    );
    let e = err(&["machine.cpus=2", "sim.bench_launch_cpu=2"]);
    assert!(
        e.contains("sim.bench_launch_cpu") && e.contains("CPUs 0-1"),
        "{e}"
    );
}

/// select_idle_sibling's recently used CPU: a task woken where neither the target nor its
/// previous CPU is idle goes to the idle CPU it was forked on (p->recent_used_cpu) before the
/// LLC scan's first idle CPU; the check then remembers the wake-up's previous CPU.
#[test]
fn a_wake_up_prefers_the_idle_cpu_the_task_was_forked_on() {
    let (mut k, mut rqs) = common::machine(4, 3);
    let (a, b, w) = (0, 1, 2);
    k.enqueue(&mut rqs, 0, a, 0);
    k.enqueue(&mut rqs, 1, b, 0);
    // w: forked on CPU 3 and run there; it blocks, and (as if it had run on CPU 1 since)
    // its previous CPU is 1.
    k.sched.se[w].sleeping = true;
    k.wake_up_new_task(&mut rqs, w, 3, 0);
    assert_eq!(k.cpus[3].curr, Some(w));
    k.schedule(&mut rqs, 3);
    k.sched.se[w].last_cpu = Some(1);
    // Woken from busy CPU 1 (its prev CPU): CPUs 2 and 3 are idle; the scan would take 2.
    k.try_to_wake_up(&mut rqs, w, 1, 1_000);
    assert_eq!(k.se(w).last_cpu, Some(3));
    assert_eq!(k.se(w).recent_used_cpu, Some(1));
}
