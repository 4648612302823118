//! Fork placement (sched/fork.rs) and stress-ng's process tree at start-up
//! (workload/stress_ng.rs).

mod common;

use reclaimlab_sim::kernel::Kernel;
use reclaimlab_sim::sched::RunQueues;

/// `common::machine` with every task not yet forked (asleep, on no run queue).
fn machine(cpus: usize, n: usize) -> (Kernel, RunQueues) {
    let (mut k, rqs) = common::machine(cpus, n);
    (0..n).for_each(|t| k.sched.se[t].sleeping = true);
    (k, rqs)
}

#[test]
fn a_fork_goes_to_an_idle_cpu_and_stays_home_when_none_is_idle() {
    let (mut k, mut rqs) = machine(4, 6);
    // The parent (task 0) runs on CPU 2.
    k.sched.se[0].sleeping = false;
    k.enqueue(&mut rqs, 2, 0, 0);
    // Three children: each goes to an idle CPU (the parent's CPU is busy).
    let mut seen = vec![2];
    for child in 1..=3 {
        k.wake_up_new_task(&mut rqs, child, 2, 0);
        let cpu = k.tasks[child].cpu.expect("an idle CPU runs it at once");
        assert!(!seen.contains(&cpu), "child {child} on CPU {cpu} again");
        seen.push(cpu);
    }
    // Every CPU runs one task now: the fourth child stays on the parent's CPU (the local
    // group wins a tie), queued behind it.
    k.wake_up_new_task(&mut rqs, 4, 2, 0);
    assert!(rqs.rq[2].contains(&4), "{:?}", rqs.rq);
    // The parent's CPU now has two tasks: the next child goes to the least loaded other CPU,
    // not to the overloaded one.
    k.wake_up_new_task(&mut rqs, 5, 2, 0);
    let at = (0..4).find(|&c| k.cpus[c].curr == Some(5) || rqs.rq[c].contains(&5));
    assert_ne!(at, Some(2));
    k.check_sched(&rqs, "test");
}

#[test]
fn a_fork_respects_affinity() {
    let (mut k, mut rqs) = machine(4, 2);
    k.sched.se[0].sleeping = false;
    k.enqueue(&mut rqs, 0, 0, 0);
    k.tasks[1].pinned = Some(0);
    k.wake_up_new_task(&mut rqs, 1, 0, 0);
    assert!(
        rqs.rq[0].contains(&1),
        "pinned to the busy CPU 0: {:?}",
        rqs.rq
    );
}

/// Seed 000's shape at a small size: as many workers as CPUs.
fn start(cpus: usize, how: &str) -> serde_json::Value {
    let doc = common::sim_with(
        "stress-vm",
        &[],
        &[
            &format!("machine.cpus={cpus}"),
            &format!("workload.workers={cpus}"),
            "workload.bytes=64M",
            "memcg.limit=16M",
            "run.duration=200ms",
            &format!("sim.stress_ng_start={how}"),
        ],
    );
    serde_json::to_value(&doc.runs[0].extra).unwrap()
}

#[test]
fn stress_ng_forks_its_workers_through_instances_onto_separate_cpus() {
    let x = start(8, "fork");
    let tasks = x["placement"]["tasks"].as_array().unwrap();
    // The parent and one instance per worker are helpers that ran briefly and wait.
    let helpers: Vec<_> = tasks.iter().filter(|t| t["kind"] == "helper").collect();
    assert_eq!(helpers.len(), 1 + 8);
    for h in &helpers {
        let s = h["cpu_seconds"].as_f64().unwrap();
        assert!(s > 0.0 && s < 0.01, "a starter ran {s} s");
    }
    // Fork placement spreads the eight workers over the eight CPUs: no worker moved after
    // it started, and each worker's mm holds one CPU.
    let workers: Vec<_> = tasks.iter().filter(|t| t["kind"] == "worker").collect();
    assert_eq!(workers.len(), 8);
    assert!(workers.iter().all(|t| t["migrations"] == 0), "{workers:?}");
    let busy = x["placement"]["cpus"].as_array().unwrap();
    assert!(busy
        .iter()
        .all(|c| c["busy_seconds"].as_f64().unwrap() > 0.15));
    let masks = x["placement"]["mms"].as_array().unwrap();
    let worker_mms: Vec<_> = workers.iter().map(|t| t["mm"].clone()).collect();
    for m in masks.iter().filter(|m| worker_mms.contains(&m["mm"])) {
        assert_eq!(m["cpumask_weight_max"], 1, "{m}");
    }
}

#[test]
fn stress_ng_start_spread_skips_the_tree_and_bad_values_are_refused() {
    let x = start(4, "spread");
    let tasks = x["placement"]["tasks"].as_array().unwrap();
    // Workers only, besides the kworkers that run vmpressure's work.
    assert!(tasks
        .iter()
        .all(|t| t["kind"] == "worker" || t["kind"] == "kworker"));
    let err = common::try_sim_with("stress-vm", &[], &["sim.stress_ng_start=clone"]);
    assert!(err.unwrap_err().contains("sim.stress_ng_start"));
    let err = common::try_sim_with(
        "stress-vm",
        &[],
        &["machine.cpus=4", "sim.stress_ng_launch_cpu=4"],
    );
    assert!(err.unwrap_err().contains("CPUs 0-3"));
}
