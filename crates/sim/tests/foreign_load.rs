//! A background load derived from a host's foreign-task record
//! (`reclaimlab_core::foreign::background_load`, `validate --background-from-host`) gives the
//! 1-process anon-sweep configuration the shootdowns a quiet model cannot have: a reclaim
//! flush batch has no mm (arch_tlbbatch_flush), so the worker's former CPU takes the IPI
//! whenever a foreign process runs there instead of idling lazily on the worker's mm.

mod common;

use reclaimlab_core::foreign::{background_load, ForeignClass, ForeignLoad};

/// What bench recorded on the quiet host in one 15 s window (order of magnitude: bench's
/// sampler thread, a guest agent, a shell; a few hundred runs).
fn quiet_host_record() -> ForeignLoad {
    ForeignLoad {
        window_seconds: 15.0,
        user: ForeignClass {
            tasks_ran: 4,
            cpu_seconds: 0.45,
            timeslices: 600,
            groups: 2,
            median_nice: 0,
            ..Default::default()
        },
        kthreads: ForeignClass {
            tasks_ran: 20,
            cpu_seconds: 0.2,
            timeslices: 3000,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn one_process(extra: &[String]) -> reclaimlab_core::ResultDoc {
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    common::sim_with(
        "anon-sweep",
        &[
            "machine.cpus=2",
            "run.duration=2s",
            "workload.processes=1",
            "workload.threads=1",
            "workload.cpus=all",
            "workload.bytes=32M",
            "memcg.limit=16M",
            "workload.pattern=sequential",
            "workload.write_ratio=1.0",
        ],
        &extra,
    )
}

fn tlb_per_steal(d: &reclaimlab_core::ResultDoc) -> f64 {
    let c = &d.runs[0].counters;
    c["tlb_shootdowns"] as f64 / c["pgsteal_anon"].max(1) as f64
}

#[test]
fn a_derived_foreign_load_makes_the_lone_workers_flushes_send_ipis() {
    let b = background_load(&quiet_host_record()).expect("user tasks ran");
    assert_eq!(b.tasks, 4);
    // 0.45 s over 4 tasks × 15 s; 15 s × 4 / 600 runs.
    assert!((b.duty - 0.0075).abs() < 1e-9, "{b:?}");
    assert_eq!(b.period_ns, 100_000_000);
    let quiet = one_process(&[]);
    let loaded = one_process(&b.sets());
    assert!(quiet.runs[0].counters["pgsteal_anon"] > 1000);
    assert_eq!(
        quiet.runs[0].counters["tlb_shootdowns"], 0,
        "a quiet model's idle CPU stays lazy on the worker's mm"
    );
    assert!(
        tlb_per_steal(&loaded) > 0.0,
        "foreign processes on the idle CPU take the batch's IPIs: {}",
        tlb_per_steal(&loaded)
    );
    // The derived load ran: 4 background tasks, about 0.75% of a CPU each.
    let bg = loaded.runs[0].task_values("background", "cpu_seconds");
    assert_eq!(bg.len(), 4);
    let share = bg.iter().sum::<f64>() / (4.0 * 2.0);
    assert!((0.004..0.012).contains(&share), "{bg:?}");
}

/// A foreign task's burst is its own CPU time, interrupts included (a kernel without
/// CONFIG_IRQ_TIME_ACCOUNTING, as bench's load tasks time themselves): the reclaim flushes
/// it takes while it runs do not stretch it past its duty.
#[test]
fn a_foreign_task_that_takes_flush_interrupts_still_runs_its_duty() {
    let d = common::sim_with(
        "anon-sweep",
        &[
            "machine.cpus=2",
            "run.duration=1s",
            "workload.processes=2",
            "workload.cpus=[0,1]",
            "workload.bytes=32M",
            "memcg.limit=32M",
            "machine.background_load.tasks=1",
            "machine.background_load.duty=0.3",
            "machine.background_load.period=20ms",
            "machine.background_load.cpus=0",
        ],
        &[],
    );
    let r = &d.runs[0];
    assert!(r.counters["tlb_shootdowns"] > 1000, "no flush to take");
    let tasks = r.extra["placement"]["tasks"].as_array().unwrap();
    // The workload's tasks come first; the foreign task is the last of the background ones.
    let load = tasks.iter().rfind(|t| t["kind"] == "background").unwrap()["cpu_seconds"]
        .as_f64()
        .unwrap();
    assert!(
        (load - 0.3).abs() < 0.01,
        "foreign task ran {load} s of 1 s at duty 0.3"
    );
}

/// `machine.background_other` runs beside `machine.background_load`, each set with its own
/// duty and period (the machine's other tasks beside a declared load), in sessions after the
/// load's.
#[test]
fn the_other_tasks_run_beside_the_declared_load_each_at_its_own_duty() {
    let d = common::sim_with(
        "anon-sweep",
        &[
            "machine.cpus=2",
            "run.duration=1s",
            "workload.processes=1",
            "workload.bytes=16M",
            "memcg.limit=32M",
            "machine.background_load.tasks=1",
            "machine.background_load.duty=0.3",
            "machine.background_load.period=20ms",
            "machine.background_other.tasks=2",
            "machine.background_other.duty=0.05",
            "machine.background_other.period=10ms",
            "machine.background_other.groups=2",
        ],
        &[],
    );
    let bg = d.runs[0].task_values("background", "cpu_seconds");
    // The load's task first, then the two others.
    assert_eq!(bg.len(), 3, "{bg:?}");
    assert!((bg[0] - 0.3).abs() < 0.01, "{bg:?}");
    for other in &bg[1..] {
        assert!((other - 0.05).abs() < 0.005, "{bg:?}");
    }
}

/// One worker pinned to CPU 0 for 1 s, a kernel thread on each CPU running 50 us at 1%.
fn worker_on_cpu0_with_kthreads() -> reclaimlab_core::ResultDoc {
    worker_on_cpu0_with_kthreads_and(&[])
}

/// The same, with `sets` applied on top.
fn worker_on_cpu0_with_kthreads_and(sets: &[&str]) -> reclaimlab_core::ResultDoc {
    common::sim_with(
        "anon-sweep",
        &[
            "machine.cpus=2",
            "run.duration=1s",
            "workload.processes=1",
            "workload.cpus=[0]",
            "workload.bytes=16M",
            "memcg.limit=32M",
            "machine.background_kthreads.duty=0.01,0.01",
            "machine.background_kthreads.slice=50us",
            // No start-up tasks: CPU 1 runs nothing but its kernel thread.
            "sim.bench_start=static",
        ],
        sets,
    )
}

/// Each task's wait for a CPU (sched_info.run_delay, `wait_seconds`, what bench reads from the
/// host's schedstat): a kernel thread on an idle CPU runs at once, the same thread on the busy
/// worker's CPU waits for it.
#[test]
fn a_kthread_waits_for_the_busy_cpu_and_not_for_the_idle_one() {
    let d = worker_on_cpu0_with_kthreads();
    let wait = |kind: &str| d.runs[0].task_values(kind, "wait_seconds");
    let k = wait("background");
    // The kernel threads are spawned first: CPU 0's, then CPU 1's.
    assert_eq!(k.len(), 2, "{k:?}");
    assert!(
        k[0] > 0.0,
        "CPU 0 runs the worker: its thread waits ({k:?})"
    );
    assert_eq!(k[1], 0.0, "CPU 1 is idle: its thread runs at once ({k:?})");
    // The worker waits only while the thread runs: at most the thread's 1%.
    let w = wait("worker");
    assert!(w[0] > 0.0 && w[0] <= 0.011, "{w:?}");
}

/// A short-sleeping kernel thread woken on the CPU of a worker that runs without sleeping
/// gets the CPU within a base slice, not at the next tick: it slept with the lag it had
/// while it waited (update_entity_lag), comes back that far ahead of the average
/// (place_entity, PLACE_LAG), which leaves the worker ineligible, so its protected slice no
/// longer holds and the thread is the pick (check_preempt_wakeup_fair).
#[test]
fn a_woken_kthread_runs_within_a_base_slice_on_a_busy_cpu() {
    let d = worker_on_cpu0_with_kthreads();
    let wait = d.runs[0].task_values("background", "wait_seconds");
    let wakeups = d.runs[0].task_values("background", "wakeups");
    // CPU 0's thread (spawned first) shares the worker's CPU.
    assert!(wakeups[0] > 10.0, "{wakeups:?}");
    let per_wakeup = wait[0] / wakeups[0];
    // sysctl_sched_base_slice at 2 CPUs is 1.5 ms; the 4 ms tick is what it waited for
    // when it came back at zero lag.
    assert!(
        per_wakeup < 0.75e-3,
        "waited {:.0} us per wake-up",
        per_wakeup * 1e6
    );
}

/// A kernel thread's wait per wake-up beside a worker pinned to its CPU that reclaims all
/// the time (a 16 MiB sweep in an 8 MiB memcg, every page dirty, with the test machine's
/// measured costs), with reclaim's preemption points on (`folio`) or off (`step`: a
/// direct-reclaim call is one step).
fn kthread_wait_beside_a_reclaimer(interleave: &str) -> f64 {
    let d = worker_on_cpu0_with_kthreads_and(&[
        "memcg.limit=8M",
        "workload.write_ratio=1.0",
        "machine.profile=kvm-guest-2vcpu",
        &format!("sim.interleave={interleave}"),
    ]);
    let r = &d.runs[0];
    assert!(
        r.extra["direct_reclaims"].as_u64().unwrap() > 1000,
        "reclaims"
    );
    let wait = r.task_values("background", "wait_seconds");
    let wakeups = r.task_values("background", "wakeups");
    wait[0] / wakeups[0]
}

/// A kernel thread woken on the CPU of a task in direct reclaim runs at the reclaimer's next
/// cond_resched() (shrink_folio_list, once per folio; the test machine's kernel is
/// preempt=none, so that is where the wake-up's resched takes effect), not after the whole
/// reclaim call: with the per-folio preemption points its wait is well under the one it has
/// when reclaim is a single step.
#[test]
fn a_kthread_woken_beside_direct_reclaim_runs_at_the_next_folio() {
    let whole = kthread_wait_beside_a_reclaimer("step");
    let per_folio = kthread_wait_beside_a_reclaimer("folio");
    assert!(
        per_folio < whole / 2.0,
        "per folio {:.1} us, whole calls {:.1} us per wake-up",
        per_folio * 1e6,
        whole * 1e6
    );
}

/// The loaded lone worker's start races the load (docs/results/2026-11-27-load-phase.md): where
/// in its period the load is when bench forks is drawn from `run.seed`, so seeds differ in
/// where the worker's threads start and how many CPUs its flushes reach, and one seed gives one
/// result.
#[test]
fn the_loads_phase_at_the_start_follows_the_seed() {
    let run = |seed: u64| {
        let sets: Vec<String> = [
            "machine.background_load.tasks=2",
            "machine.background_load.duty=0.3",
            "machine.background_load.period=20ms",
            "machine.background_load.groups=2",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("run.seed={seed}")])
        .collect();
        serde_json::to_string(&one_process(&sets).runs[0].counters).unwrap()
    };
    let by_seed: Vec<String> = (1..=4).map(run).collect();
    assert_eq!(by_seed[0], run(1), "one seed, one result");
    assert!(
        by_seed.iter().any(|c| c != &by_seed[0]),
        "the load's phase does not depend on the seed"
    );
}
