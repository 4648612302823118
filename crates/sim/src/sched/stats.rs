//! The result's `placement` section: where tasks ran and what that did to the mm_cpumasks
//! (docs/result-schema.md).

use super::Class;
use crate::kernel::Kernel;
use crate::mm::vmstat::Place;
use serde_json::{json, Value};

/// Build `placement` for a run of `secs` simulated seconds.
pub fn report(k: &Kernel, secs: f64) -> Value {
    let tasks: Vec<Value> = k
        .sched
        .se
        .iter()
        .enumerate()
        .map(|(t, se)| {
            let kind = match se.class {
                Class::Worker if k.tasks[t].kthread => "kthread",
                Class::Worker if k.tasks[t].helper => "helper",
                Class::Worker => "worker",
                Class::Kthread => "kthread",
                Class::Background
                    if k.workqueue.worker.is_worker_task(t)
                        || k.kblockd.worker.is_worker_task(t) =>
                {
                    "kworker"
                }
                Class::Background if k.softirq.is_ksoftirqd(t) => "ksoftirqd",
                Class::Background => "background",
                Class::Starter => "helper",
            };
            let cpu_s = se.sum_exec_runtime as f64 / 1e9;
            json!({
                "task": t,
                "kind": kind,
                "mm": (!k.tasks[t].kthread).then_some(k.tasks[t].mm),
                "cpu_seconds": cpu_s,
                // schedstat's second field (sched_info.run_delay), as bench reads the host's.
                "wait_seconds": se.run_delay as f64 / 1e9,
                "migrations": se.nr_migrations,
                "wakeups": se.wakeups,
                "nice_weight": se.weight,
                "group": k.task_group(t),
            })
        })
        .collect();
    let workers: Vec<usize> = (0..k.sched.se.len())
        .filter(|&t| {
            k.sched.se[t].class == Class::Worker && !k.tasks[t].kthread && !k.tasks[t].helper
        })
        .collect();
    let per_task_per_s = if workers.is_empty() || secs <= 0.0 {
        0.0
    } else {
        workers
            .iter()
            .map(|&t| k.sched.se[t].nr_migrations as f64)
            .sum::<f64>()
            / workers.len() as f64
            / secs
    };
    // Each task group: its shares and the CPU time its tasks got.
    let groups: Vec<Value> = (0..k.sched.groups.len())
        .filter(|_| k.sched.autogroup)
        .map(|g| {
            let ns: u64 = (0..k.sched.se.len())
                .filter(|&t| k.task_group(t) == Some(g))
                .map(|t| k.sched.se[t].sum_exec_runtime)
                .sum();
            json!({
                "group": g,
                "nice": k.sched.groups[g].nice,
                "shares": k.sched.groups[g].shares,
                "cpu_seconds": ns as f64 / 1e9,
            })
        })
        .collect();
    let n = k.sched.samples.max(1) as f64;
    let mms: Vec<Value> = (0..k.mms.len())
        .map(|m| {
            json!({
                "mm": m,
                "cpumask_weight_mean": k.sched.cpumask_sum.get(m).copied().unwrap_or(0) as f64 / n,
                "cpumask_weight_max": k.sched.cpumask_max.get(m).copied().unwrap_or(0),
                "cpumask_weight_end": k.mms[m].cpumask.weight(),
            })
        })
        .collect();
    let cpus: Vec<Value> = (0..k.nr_cpus())
        .map(|c| {
            json!({
                "cpu": c,
                "busy_seconds": k.sched.busy_ns[c] as f64 / 1e9,
                "tlb_shootdowns": k.irq.tlb_shootdowns[c],
            })
        })
        .collect();
    json!({
        "worker_migrations_per_task_per_second": per_task_per_s,
        "migrations_by_cause": k.vmstat.json(Place::MigrationsByCause).collect::<serde_json::Map<_, _>>(),
        "cpumask_samples": k.sched.samples,
        "autogroup": k.sched.autogroup,
        "groups": groups,
        "tasks": tasks,
        "mms": mms,
        "cpus": cpus,
    })
}
