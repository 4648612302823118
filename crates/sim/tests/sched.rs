//! The scheduler model (sched/): wake-up placement, load balancing, the cache-hot rule,
//! affinity, and its invariants over every shipped scenario.

mod common;

use reclaimlab_core::{Scenario, Target};
use reclaimlab_sim::kernel::Kernel;
use reclaimlab_sim::mm::vmstat::VmEventItem::*;
use reclaimlab_sim::sched::RunQueues;

use common::machine;

fn where_is(k: &Kernel, rqs: &RunQueues, t: usize) -> Option<usize> {
    k.tasks[t]
        .cpu
        .or_else(|| rqs.rq.iter().position(|q| q.contains(&t)))
}

fn check(k: &mut Kernel, rqs: &RunQueues) {
    k.check_sched(rqs, "test");
    let errs = k.check_invariants_tlb_only();
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn a_waking_task_goes_to_an_idle_cpu_else_stays_on_its_previous_one() {
    let (mut k, mut rqs) = machine(2, 2);
    // Task 0 runs on CPU 0; task 1 ran on CPU 0 and sleeps.
    k.enqueue(&mut rqs, 0, 0, 0);
    k.enqueue(&mut rqs, 0, 1, 0);
    k.cpus[0].clock = 5_000_000;
    // Task 0 runs; task 1 blocks from the queue head when it gets the CPU: take it off.
    rqs.rq[0].clear();
    let t1 = 1;
    // Mark it asleep the way schedule() does, by running and blocking it on CPU 0.
    k.context_switch(0, Some(t1));
    k.block_task(&mut rqs, 0, None);
    assert_eq!(k.cpus[0].curr, None, "nothing queued: CPU 0 idles");
    k.enqueue(&mut rqs, 0, 0, 5_000_000);
    // Woken by CPU 0 while CPU 0 is busy and CPU 1 idle: select_idle_sibling picks CPU 1.
    k.try_to_wake_up(&mut rqs, t1, 0, 6_000_000);
    assert_eq!(where_is(&k, &rqs, t1), Some(1));
    assert_eq!(k.se(t1).nr_migrations, 1);
    check(&mut k, &rqs);
    // Now it sleeps on CPU 1 and is woken from CPU 0 while CPU 1 is idle: prev wins.
    k.cpus[1].clock = 7_000_000;
    k.block_task(&mut rqs, 1, None);
    k.try_to_wake_up(&mut rqs, t1, 0, 8_000_000);
    assert_eq!(where_is(&k, &rqs, t1), Some(1));
    assert_eq!(k.se(t1).nr_migrations, 1, "no new migration");
    check(&mut k, &rqs);
}

#[test]
fn a_waking_task_with_no_idle_cpu_queues_on_its_previous_cpu() {
    let (mut k, mut rqs) = machine(2, 3);
    k.enqueue(&mut rqs, 0, 2, 0);
    k.block_task(&mut rqs, 0, None);
    k.enqueue(&mut rqs, 0, 0, 0);
    k.enqueue(&mut rqs, 1, 1, 0);
    k.try_to_wake_up(&mut rqs, 2, 0, 100_000);
    // Both CPUs busy and equally loaded: wake_affine keeps prev (CPU 0); the current task
    // ran less than its slice, so the woken one waits at the head of the queue.
    assert_eq!(rqs.rq[0].front(), Some(&2));
    assert_eq!(k.cpus[0].curr, Some(0));
    check(&mut k, &rqs);
}

#[test]
fn an_idle_cpu_pulls_from_an_overloaded_one_at_the_nohz_kick() {
    let (mut k, mut rqs) = machine(2, 3);
    for t in 0..3 {
        k.enqueue(&mut rqs, 0, t, 0);
    }
    assert_eq!(k.nr_running(&rqs, 0), 3);
    // CPU 0's tick (past the cache-hot window): the nohz kick balances idle CPU 1.
    k.cpus[0].clock = k.cpus[0].next_tick;
    k.scheduler_tick(&mut rqs, 0);
    assert_eq!(k.nr_running(&rqs, 0), 2);
    assert_eq!(k.nr_running(&rqs, 1), 1);
    assert_eq!(k.vmstat[MIGRATIONS_PERIODIC_BALANCE], 1);
    check(&mut k, &rqs);
}

#[test]
fn cache_hot_and_pinned_tasks_are_not_pulled_by_a_newly_idle_cpu() {
    let (mut k, mut rqs) = machine(2, 3);
    k.tasks[2].pinned = Some(0);
    k.enqueue(&mut rqs, 0, 0, 0);
    k.enqueue(&mut rqs, 0, 1, 0);
    k.enqueue(&mut rqs, 0, 2, 0);
    // Task 1 ran until 1 ms: at 1.2 ms it is cache-hot; task 2 is pinned to CPU 0.
    k.cpus[0].clock = 1_000_000;
    k.context_switch(0, Some(1));
    k.cpus[0].clock = 1_000_000;
    rqs.rq[0].retain(|&t| t != 1);
    rqs.rq[0].push_back(0);
    k.context_switch(0, Some(1)); // (re-run task 1; task 0 waits)
    k.cpus[0].clock = 1_000_000;
    rqs.rq[0].retain(|&t| t != 0);
    rqs.rq[0].push_front(0);
    let cur = k.cpus[0].curr.unwrap();
    assert_eq!(cur, 1);
    // Task 0 stopped running at 1 ms: hot until 1.5 ms.
    k.sched.se[0].exec_start = 1_000_000;
    k.sched_balance_newidle(&mut rqs, 1, 1_200_000);
    assert!(k.idle_cpu(&rqs, 1), "hot and pinned tasks stay");
    // At 2 ms task 0 is no longer hot: a newly idle CPU 1 takes it (never task 2).
    k.sched_balance_newidle(&mut rqs, 1, 2_000_000);
    assert_eq!(where_is(&k, &rqs, 0), Some(1));
    assert_eq!(where_is(&k, &rqs, 2), Some(0));
    check(&mut k, &rqs);
}

#[test]
fn three_tasks_on_two_cpus_keep_moving_and_stay_consistent() {
    let (mut k, mut rqs) = machine(2, 3);
    for t in 0..3 {
        k.enqueue(&mut rqs, t % 2, t, 0);
    }
    let mut moves = 0;
    for _ in 0..400 {
        let cpu = if k.cpus[0].next_tick <= k.cpus[1].next_tick {
            0
        } else {
            1
        };
        let before: Vec<_> = (0..3).map(|t| where_is(&k, &rqs, t)).collect();
        k.cpus[cpu].clock = k.cpus[cpu].next_tick;
        k.scheduler_tick(&mut rqs, cpu);
        moves += (0..3)
            .filter(|&t| where_is(&k, &rqs, t) != before[t])
            .count();
        check(&mut k, &rqs);
        // Balancing never leaves a CPU idle while the other has two.
        assert!(k.nr_running(&rqs, 0) >= 1 && k.nr_running(&rqs, 1) >= 1);
    }
    // The load balancer moves a waiting task once its load passes the shifted threshold
    // (detach_tasks' shr_bound by nr_balance_failed): the odd task out migrates now and then.
    assert!(moves > 0);
    let migr: u64 = (0..3).map(|t| k.se(t).nr_migrations).sum();
    assert!(migr > 0 && migr < 200, "{migr}");
}

#[test]
fn one_task_per_cpu_never_migrates_on_a_quiet_machine() {
    let (mut k, mut rqs) = machine(4, 4);
    for t in 0..4 {
        k.enqueue(&mut rqs, t, t, 0);
    }
    for i in 0..400 {
        let cpu = i % 4;
        k.cpus[cpu].clock = k.cpus[cpu].next_tick;
        k.scheduler_tick(&mut rqs, cpu);
    }
    assert!((0..4).all(|t| k.se(t).nr_migrations == 0));
}

const SHORT: &[&str] = &["run.duration=200ms", "sim.check=full"];

/// Every shipped scenario, small: the scheduler's invariants hold throughout (checked at
/// every tick with sim.check = full, and at the end), with and without background load and
/// on an SMT topology.
#[test]
fn every_shipped_scenario_keeps_the_scheduler_invariants() {
    let extra: &[&[&str]] = &[
        &[],
        &[
            "machine.background_load.tasks=3",
            "machine.background_load.duty=0.3",
            "machine.background_load.period=5ms",
        ],
    ];
    for name in [
        "anon-sweep",
        "stress-vm",
        "file-mmap-rw",
        "file-reclaim",
        "kswapd-mmap-read",
        "ycsb-b",
    ] {
        for e in extra {
            let mut sets: Vec<&str> = SHORT.to_vec();
            sets.extend_from_slice(e);
            sets.extend_from_slice(small(name));
            let d = common::sim_with(name, &sets, &[]);
            let p = &d.runs[0].extra["placement"];
            assert!(p["cpus"].as_array().unwrap().len() >= 2, "{name}");
        }
    }
}

/// Shrink a shipped scenario so that it runs in a test.
fn small(name: &str) -> &'static [&'static str] {
    match name {
        "stress-vm" => &[
            "machine.cpus=4",
            "workload.workers=4",
            "workload.bytes=32M",
            "memcg.limit=8M",
        ],
        "anon-sweep" => &["machine.cpus=4", "memcg.limit=8M", "workload.bytes=16M"],
        "kswapd-mmap-read" => &["machine.cpus=4", "machine.memory=64M"],
        "file-reclaim" => &["workload.file_bytes=32M", "workload.reclaim_bytes=16M"],
        "ycsb-b" => &["memcg.limit=8M", "workload.records=16384"],
        _ => &[
            "machine.cpus=4",
            "memcg.limit=8M",
            "workload.file_bytes=32M",
        ],
    }
}

#[test]
fn smt_topology_and_background_load_are_deterministic() {
    let sets = [
        "machine.cpus=8",
        "machine.topology.sockets=2",
        "machine.topology.threads_per_core=2",
        "machine.background_load.tasks=4",
        "machine.background_load.duty=0.5",
        "machine.background_load.cpus=0-3",
        "workload.workers=6",
        "workload.bytes=32M",
        "memcg.limit=8M",
        "run.duration=200ms",
    ];
    let a = common::same_twice("stress-vm", &sets);
    let d: serde_json::Value = serde_json::from_str(&a).unwrap();
    let tasks = d["runs"][0]["extra"]["placement"]["tasks"]
        .as_array()
        .unwrap()
        .clone();
    let bg: Vec<_> = tasks.iter().filter(|t| t["kind"] == "background").collect();
    assert_eq!(bg.len(), 4);
    // Background tasks ran about half the time (they compete with 6 workers on 8 CPUs): at
    // most duty × (duration + one 10 ms period), since a burst begun before the end of the run
    // runs whole (the engine stops a CPU only once its clock passes the end).
    for t in bg {
        let s = t["cpu_seconds"].as_f64().unwrap();
        assert!(s > 0.03 && s <= 0.5 * (0.2 + 0.010) + 1e-9, "{t}");
    }
}

#[test]
fn removed_migration_knobs_are_a_clear_error() {
    let scn = Scenario::load("stress-vm", &["sim.migrate_per_tick=0".into()], Target::Sim).unwrap();
    let e = reclaimlab_sim::run(&scn, &Default::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("sim.migrate_per_tick") && e.contains("machine.background_load"),
        "{e}"
    );
    let scn = Scenario::load(
        "stress-vm",
        &["machine.topology.sockets=3".into()],
        Target::Sim,
    )
    .unwrap();
    let e = reclaimlab_sim::run(&scn, &Default::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("machine.cpus"), "{e}");
}

/// "Quiet" and "busy" are two settings of one mechanism: two processes on two CPUs never
/// migrate alone; once foreign tasks compete for the CPUs, load balancing moves tasks (which
/// ones, workers or foreign, depends on the run: on the host under a foreign autogroup's load
/// the workers stayed put, docs/results/2026-11-25-quiet-host.md).
#[test]
fn background_load_makes_unpinned_processes_migrate() {
    let base = [
        "workload.processes=2",
        "workload.bytes=16M",
        "memcg.limit=8M",
        "run.duration=5s",
        // Each process on its own CPU from time 0 (bench's start-up widens the masks: its
        // own test is in bench_start.rs).
        "sim.bench_start=static",
    ];
    let migr_of = |d: &reclaimlab_core::ResultDoc, kinds: &[&str]| {
        d.runs[0].extra["placement"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| kinds.iter().any(|k| t["kind"] == *k))
            .map(|t| t["migrations"].as_u64().unwrap())
            .sum::<u64>()
    };
    let migr = |d: &reclaimlab_core::ResultDoc| migr_of(d, &["worker"]);
    let quiet = common::sim_with("anon-sweep", &base, &[]);
    assert_eq!(migr(&quiet), 0);
    let p = &quiet.runs[0].extra["placement"];
    assert!(p["mms"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["cpumask_weight_max"] == 1));
    let busy = common::sim_with(
        "anon-sweep",
        &base,
        &[
            // The load measured on this machine's /proc/stat (docs/results/2026-11-25-scheduler.md),
            // as equal-weight tasks: without task groups every foreign task weighs a worker
            // (with autogroup on, autogroup.rs's tests compare the two).
            "sched.autogroup=false",
            "machine.background_load.tasks=9",
            "machine.background_load.duty=0.9",
            "machine.background_load.period=20ms",
        ],
    );
    assert!(migr_of(&busy, &["worker", "background"]) > 0);
    // The workers now share the CPUs: each got well under the whole run.
    let tasks = busy.runs[0].extra["placement"]["tasks"]
        .as_array()
        .unwrap()
        .clone();
    for t in tasks.iter().filter(|t| t["kind"] == "worker") {
        assert!(t["cpu_seconds"].as_f64().unwrap() < 3.0, "{t}");
    }
}

/// anon-sweep's static start-up: each process's main thread clones the sweepers and waits.
/// A lone unpinned process puts its sweeper on the other CPU (clone's placement), so its
/// mm_cpumask holds both CPUs; two processes forked together keep one CPU each.
#[test]
fn anon_sweep_main_thread_and_clone_placement() {
    let run = |procs: &str| {
        let scn = reclaimlab_core::Scenario::load(
            "anon-sweep",
            &[
                "machine.cpus=2".to_string(),
                "workload.cpus=all".to_string(),
                format!("workload.processes={procs}"),
                "workload.bytes=8M".to_string(),
                "memcg.limit=8M".to_string(),
                "run.duration=50ms".to_string(),
                "sim.bench_start=static".to_string(),
            ],
            reclaimlab_core::Target::Sim,
        )
        .unwrap();
        let d = reclaimlab_sim::run(&scn, &Default::default()).unwrap();
        d.runs[0].extra["placement"].clone()
    };
    let one = run("1");
    let kinds: Vec<&str> = one["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["helper", "worker"]);
    assert_eq!(one["mms"][0]["cpumask_weight_max"], 2, "{one}");
    let busy: Vec<f64> = one["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["busy_seconds"].as_f64().unwrap())
        .collect();
    assert!(
        busy[1] > 10.0 * busy[0],
        "the sweeper runs on CPU 1: {busy:?}"
    );
    let two = run("2");
    for m in 0..2 {
        assert_eq!(two["mms"][m]["cpumask_weight_max"], 1, "{two}");
    }
}

/// A per-CPU kernel thread on the block device's interrupt CPU (kblockd's kworker): bound
/// there, no mm of its own, and busy often enough that a worker whose read completes while
/// it runs is placed on the other CPU (wake_affine_idle / select_idle_sibling).
#[test]
fn a_kernel_thread_on_the_interrupt_cpu_moves_waking_workers() {
    let base = [
        "machine.cpus=2",
        "workload.processes=2",
        "workload.bytes=16M",
        "memcg.limit=16M",
        "run.duration=1s",
        "swap.device=block",
        "swap.irq_cpu=1",
    ];
    let tasks = |d: &reclaimlab_core::ResultDoc| {
        d.runs[0].extra["placement"]["tasks"]
            .as_array()
            .unwrap()
            .clone()
    };
    let worker_migrations = |d: &reclaimlab_core::ResultDoc| {
        tasks(d)
            .iter()
            .filter(|t| t["kind"] == "worker")
            .map(|t| t["migrations"].as_u64().unwrap())
            .sum::<u64>()
    };
    // Without the thread the workers move only when vmpressure's kworker takes their CPU.
    let quiet = common::sim_with("anon-sweep", &base, &[]);
    let kt = common::sim_with(
        "anon-sweep",
        &base,
        &[
            "machine.background_kthreads.duty=0,0.05",
            "machine.background_kthreads.slice=50us",
        ],
    );
    assert!(
        worker_migrations(&kt) > 2 * worker_migrations(&quiet),
        "{} against {}",
        worker_migrations(&kt),
        worker_migrations(&quiet)
    );
    let bg: Vec<_> = tasks(&kt)
        .into_iter()
        .filter(|t| t["kind"] == "background")
        .collect();
    assert_eq!(bg.len(), 1, "one bound thread for the one CPU with a share");
    let t = &bg[0];
    assert!(t["mm"].is_null(), "a kernel thread has no mm: {t}");
    assert_eq!(t["migrations"], 0, "bound to its CPU: {t}");
    // 5% of 1 s in 50-us runs, plus what its CPU's interrupts and context switches add to
    // whatever runs there.
    let cpu = t["cpu_seconds"].as_f64().unwrap();
    assert!((0.045..=0.1).contains(&cpu), "{t}");
}

#[test]
fn bad_kernel_thread_shares_are_errors_naming_the_key() {
    for (v, why) in [
        ("0.1,0.2,0.3", "more shares than CPUs"),
        ("0,x", "not a number"),
        ("1.5", "in [0, 1]"),
    ] {
        let sets = [
            "machine.cpus=2".to_string(),
            format!("machine.background_kthreads.duty={v}"),
        ];
        let scn =
            reclaimlab_core::Scenario::load("anon-sweep", &sets, reclaimlab_core::Target::Sim)
                .unwrap();
        let e = reclaimlab_sim::config::SimConfig::from_scenario(&scn)
            .expect_err(v)
            .to_string();
        assert!(
            e.contains("machine.background_kthreads.duty") && e.contains(why),
            "{v}: {e}"
        );
    }
}

/// Task 1 waits on CPU 0 behind task 0, cache-hot (it stopped running 0.1 ms before `now`).
fn hot_waiter(k: &mut Kernel, rqs: &mut RunQueues, now: u64) {
    if !rqs.rq[0].contains(&1) {
        rqs.rq[0].push_back(1);
    }
    k.sched.se[1].sleeping = false;
    k.sched.se[1].exec_start = now - 100_000;
}

#[test]
fn a_balanced_pass_forgets_earlier_failures_so_a_hot_task_stays_put() {
    use reclaimlab_sim::sched::fair::IdleType;
    let (mut k, mut rqs) = machine(2, 2);
    k.enqueue(&mut rqs, 0, 0, 0);
    k.enqueue(&mut rqs, 0, 1, 0);
    let cache_nice_tries = k.sched.sd[1][0].cache_nice_tries;
    // Idle CPU 1 fails to pull the hot waiter: each pass counts a failure.
    let mut now = 10_000_000;
    for _ in 0..=cache_nice_tries {
        hot_waiter(&mut k, &mut rqs, now);
        assert_eq!(k.sched_balance_rq(&mut rqs, 1, 0, IdleType::Idle, now), 0);
        now += 1_000_000;
    }
    assert_eq!(k.sched.nr_balance_failed[1][0], cache_nice_tries + 1);
    // The waiter blocks: CPU 0 runs one task, the domain is balanced (out_balanced), and the
    // failure count starts again from zero.
    rqs.rq[0].retain(|&t| t != 1);
    k.sched.se[1].sleeping = true;
    assert_eq!(k.sched_balance_rq(&mut rqs, 1, 0, IdleType::Idle, now), 0);
    assert_eq!(k.sched.nr_balance_failed[1][0], 0);
    // It is back, hot: the cache-hot rule protects it again (it would move if the old
    // failures still counted).
    now += 1_000_000;
    hot_waiter(&mut k, &mut rqs, now);
    assert_eq!(k.sched_balance_rq(&mut rqs, 1, 0, IdleType::Idle, now), 0);
    assert_eq!(where_is(&k, &rqs, 1), Some(0));
    assert_eq!(k.se(1).nr_migrations, 0);
    check(&mut k, &rqs);
}

#[test]
fn failed_load_imbalance_passes_never_push_the_running_task() {
    use reclaimlab_sim::sched::fair::IdleType;
    // CPU 0 runs task 0 with tasks 1 and 2 waiting, both pinned there (overloaded); CPU 1
    // runs task 3 (fully busy): from CPU 1 that is a load imbalance (migrate_load). Nothing
    // waiting may move, so every pass fails, but not all are pinned (task 0 could run on
    // CPU 1). imbalanced_active_balance pushes only for a task-count imbalance, so task 0 is
    // never pushed however often the pass fails.
    let (mut k, mut rqs) = machine(2, 4);
    for t in 0..3 {
        k.enqueue(&mut rqs, 0, t, 0);
    }
    k.tasks[1].pinned = Some(0);
    k.tasks[2].pinned = Some(0);
    k.enqueue(&mut rqs, 1, 3, 0);
    let mut now = 10_000_000;
    for _ in 0..12 {
        k.cpus[1].clock = now;
        assert_eq!(
            k.sched_balance_rq(&mut rqs, 1, 0, IdleType::NotIdle, now),
            0
        );
        now += 1_000_000;
    }
    assert!(k.sched.nr_balance_failed[1][0] > k.sched.sd[1][0].cache_nice_tries + 2);
    assert_eq!(k.vmstat[MIGRATIONS_ACTIVE_BALANCE], 0);
    assert_eq!(k.cpus[0].curr, Some(0));
    assert_eq!(k.nr_running(&rqs, 0), 3);
    check(&mut k, &rqs);
}

/// A 2-CPU machine with `cfg` and one workload task (task 0), its background tasks created.
fn two_cpus_one_task(cfg: reclaimlab_sim::config::SimConfig) -> Kernel {
    let mut k = Kernel::new(
        cfg,
        reclaimlab_sim::config::Policy::linux_6_18(),
        2,
        1024,
        1 << 20,
        60,
        1,
    );
    let mm = k.mm_alloc(1, reclaimlab_sim::kernel::Backing::Anon, true);
    k.task_new(mm, None, 0, 1);
    k.background_spawn();
    k
}

/// A 2-CPU machine swapping to a one-queue block device whose interrupt is on CPU 1, with a
/// kernel thread bound to each CPU (5% of every 1 ms) and one workload task (task 0).
fn block_machine_with_kthreads() -> (Kernel, RunQueues) {
    use reclaimlab_sim::mm::swap::{BlockConfig, IrqCpu};
    let mut cfg = common::cfg(0);
    cfg.swap.block = Some(BlockConfig {
        irq: IrqCpu::Cpu(1),
        page_cluster: 3,
        rotational: false,
        scheduler: reclaimlab_sim::mm::swap::Elevator::None,
        request_pages: 0,
        ring_descriptors: 0,
        indirect_desc: false,
    });
    // CPU 1's is kblockd's highpri worker (nice -20).
    let kthread = |cpu: usize| reclaimlab_sim::sched::background::BackgroundLoad {
        tasks: 1,
        duty: 0.05,
        period_ns: 1_000_000,
        cpus: Some(vec![cpu]),
        groups: 1,
        nice: if cpu == 1 { -20 } else { 0 },
        group_nice: 0,
        kthread: true,
    };
    cfg.sched.kthreads = vec![kthread(0), kthread(1)];
    let k = two_cpus_one_task(cfg);
    (k, RunQueues::new(2))
}

#[test]
fn the_kworker_on_the_interrupt_cpu_is_woken_by_a_completion_after_its_waiter() {
    let (mut k, mut rqs) = block_machine_with_kthreads();
    let (kt0, kt1) = (1, 2);
    // CPU 0's thread wakes on its own timer; CPU 1's, the interrupt CPU's, has none: the
    // device's completions start its runs.
    let timers: Vec<usize> = k.sched.timers.iter().map(|&(_, t)| t).collect();
    assert!(
        timers.contains(&kt0) && !timers.contains(&kt1),
        "{timers:?}"
    );
    // The worker runs on CPU 1 and sleeps on a swap-in read completing at 2 ms.
    k.enqueue(&mut rqs, 1, 0, 0);
    k.cpus[1].clock = 1_000_000;
    k.block_task_woken_by(&mut rqs, 1, 2_000_000, Some(1));
    k.sched.timers.retain(|&(_, t)| t != kt0);
    assert_eq!(k.cpus[1].curr, None);
    k.run_next_timer(&mut rqs);
    // The completion placed the worker on its idle CPU first (no migration), then woke the
    // kworker there; the CPU's one pick runs the kworker (nice -20: the earlier deadline),
    // the worker waits at the head.
    assert_eq!(k.se(0).nr_migrations, 0);
    assert_eq!(k.cpus[1].curr, Some(kt1));
    assert_eq!(rqs.rq[1].front(), Some(&0));
    assert!(k.sched.timers.is_empty(), "{:?}", k.sched.timers);
    check(&mut k, &rqs);
}

/// CPU 0 runs kswapd (an unbound kernel thread: its node's CPUs are every CPU) with task 0,
/// pinned to CPU 0, waiting behind it; the other CPUs are idle.
fn kswapd_beside_a_pinned_task(cpus: usize) -> (Kernel, RunQueues, usize) {
    let (mut k, mut rqs) = machine(cpus, 1);
    k.tasks[0].pinned = Some(0);
    let kswapd = k.kswapd_run();
    k.sched.se[kswapd].sleeping = false;
    k.enqueue(&mut rqs, 0, kswapd, 0);
    k.enqueue(&mut rqs, 0, 0, 0);
    assert_eq!(k.cpus[0].curr, Some(kswapd));
    (k, rqs, kswapd)
}

#[test]
fn an_idle_cpu_pushes_a_running_kswapd_off_a_pinned_tasks_cpu_by_active_balance() {
    use reclaimlab_sim::sched::fair::IdleType;
    // Idle CPU 1 balances while kswapd runs on CPU 0: the waiting task is pinned
    // (LBF_SOME_PINNED) and kswapd is running, so nothing can be detached, but kswapd may run
    // on CPU 1, so not all are pinned: each pass is a failure. After cache_nice_tries + 3 of
    // them, imbalanced_active_balance has the stopper push kswapd to CPU 1.
    let (mut k, mut rqs, kswapd) = kswapd_beside_a_pinned_task(2);
    let tries = k.sched.sd[1][0].cache_nice_tries;
    let mut now = 10_000_000;
    for i in 0..tries + 2 {
        k.cpus[1].clock = now;
        assert_eq!(k.sched_balance_rq(&mut rqs, 1, 0, IdleType::Idle, now), 0);
        assert_eq!(k.sched.nr_balance_failed[1][0], i + 1);
        now += 1_000_000;
    }
    k.cpus[1].clock = now;
    assert_eq!(k.sched_balance_rq(&mut rqs, 1, 0, IdleType::Idle, now), 1);
    assert_eq!(k.vmstat[MIGRATIONS_ACTIVE_BALANCE], 1);
    assert_eq!(k.cpus[1].curr, Some(kswapd));
    assert_eq!(
        k.cpus[0].curr,
        Some(0),
        "the pinned task runs alone on its CPU"
    );
    // active_load_balance_cpu_stop resets the failure count.
    assert_eq!(k.sched.nr_balance_failed[1][0], 0);
    check(&mut k, &rqs);
}

#[test]
fn a_waiting_kswapd_is_pulled_by_a_newly_idle_cpu_but_a_per_cpu_kthread_is_not() {
    // The pinned task runs and kswapd waits, cold: a newly idle CPU 1 takes kswapd.
    let (mut k, mut rqs, kswapd) = kswapd_beside_a_pinned_task(2);
    k.cpus[0].clock = 1_000_000;
    assert!(k.resched(&mut rqs, 0, false));
    assert_eq!(k.cpus[0].curr, Some(0));
    k.sched_balance_newidle(&mut rqs, 1, 2_000_000);
    assert_eq!(where_is(&k, &rqs, kswapd), Some(1));
    assert_eq!(k.vmstat[MIGRATIONS_NEWIDLE_BALANCE], 1);
    check(&mut k, &rqs);
    // A kernel thread bound to CPU 0 (kthread_is_per_cpu) stays where it is.
    let (mut k, mut rqs) = machine(2, 2);
    k.tasks[0].pinned = Some(0);
    k.tasks[1].pinned = Some(0);
    k.tasks[1].kthread = true;
    k.enqueue(&mut rqs, 0, 0, 0);
    k.enqueue(&mut rqs, 0, 1, 0);
    k.sched_balance_newidle(&mut rqs, 1, 2_000_000);
    assert!(k.idle_cpu(&rqs, 1));
    check(&mut k, &rqs);
}

#[test]
fn kswapd_sharing_a_pinned_tasks_cpu_moves_to_an_idle_cpu_within_a_few_balance_intervals() {
    // Only CPU 0 ticks (the others are idle, tickless): its tick alternates the two tasks and
    // kicks the idle CPUs' balancing (nohz_balancer_kick: two tasks there). Whichever of
    // them runs at the kick, kswapd must reach an idle CPU within a few of the domain's
    // balance intervals, and the pinned task never leaves CPU 0.
    let (mut k, mut rqs, kswapd) = kswapd_beside_a_pinned_task(8);
    let max_ms = k.sched.sd[1][0].max_interval_ms;
    let tries = u64::from(k.sched.sd[1][0].cache_nice_tries);
    let bound = (tries + 3) * max_ms * 1_000_000;
    let mut moved_at = None;
    while k.cpus[0].clock < 2 * bound {
        k.cpus[0].clock = k.cpus[0].next_tick;
        k.scheduler_tick(&mut rqs, 0);
        check(&mut k, &rqs);
        assert_eq!(where_is(&k, &rqs, 0), Some(0));
        if where_is(&k, &rqs, kswapd) != Some(0) {
            moved_at = Some(k.cpus[0].clock);
            break;
        }
    }
    let at = moved_at.expect("kswapd stayed on the pinned task's CPU");
    assert!(at <= bound, "kswapd moved only at {at} ns (bound {bound})");
    assert_eq!(k.se(kswapd).nr_migrations, 1);
}

/// A 2-CPU machine (reclaim preemption points on) running task 0, a workload task, on CPU 0
/// and one foreign load task (30% of every 20 ms, allowed on CPU 0 only) queued behind it,
/// woken while task 0's slice was protected.
fn worker_with_queued_load() -> (Kernel, usize) {
    let mut cfg = common::cfg(0);
    cfg.interleave = reclaimlab_sim::config::Interleave::Folio;
    cfg.sched.background = Some(reclaimlab_sim::sched::background::BackgroundLoad {
        tasks: 1,
        duty: 0.3,
        period_ns: 20_000_000,
        cpus: Some(vec![0]),
        groups: 1,
        nice: 0,
        group_nice: 0,
        kthread: false,
    });
    let mut k = two_cpus_one_task(cfg);
    let load = 1;
    k.sched.timers.clear();
    k.cpus[0].clock = 1_000_000;
    k.with_rqs(|k, rqs| {
        *rqs = RunQueues::new(2);
        k.enqueue(rqs, 0, 0, 1_000_000);
        k.try_to_wake_up(rqs, load, 0, 1_000_000);
    });
    assert_eq!(
        k.cpus[0].curr,
        Some(0),
        "the woken load must wait behind task 0"
    );
    (k, load)
}

#[test]
fn a_tick_inside_a_long_reclaim_hands_the_cpu_to_a_waiting_task_at_cond_resched() {
    // Task 0 is in direct reclaim: its step has run past the tick without a break. At its
    // next cond_resched() the tick's need_resched (its request used up) switches to the
    // waiting load task, which runs its burst there; then task 0 resumes its reclaim.
    let (mut k, load) = worker_with_queued_load();
    k.cpus[0].clock = k.cpus[0].next_tick + 6_000_000;
    k.reclaim_cond_resched(0);
    assert!(
        k.se(load).sum_exec_runtime >= 5_000_000,
        "the load ran {} ns",
        k.se(load).sum_exec_runtime
    );
    assert_eq!(k.cpus[0].curr, Some(0));
    assert!(k.se(load).sleeping, "it sleeps to its next period");
    // Before any tick falls due in the step there is no reschedule: the load keeps waiting.
    let (mut k, load) = worker_with_queued_load();
    k.cpus[0].clock = k.cpus[0].next_tick - 1;
    k.reclaim_cond_resched(0);
    assert_eq!(k.se(load).sum_exec_runtime, 0);
    assert_eq!(k.cpus[0].curr, Some(0));
}

#[test]
fn a_busy_cpu_balances_a_level_every_busy_interval_less_one_jiffy() {
    // get_sd_balance_interval at HZ=250 (4-ms ticks) on 2 CPUs: balance_interval 2 ms,
    // busy × 16 = 32 ms = 8 jiffies, less one: 7; doubled to 4 ms after a balanced pass,
    // 15. An idle CPU: 2 ms rounds up to one jiffy.
    let (mut k, _rqs) = machine(2, 2);
    assert_eq!(k.balance_interval_ticks(0, 0, true), 7);
    assert_eq!(k.balance_interval_ticks(0, 0, false), 1);
    k.sched.balance_interval[0][0] = 4;
    assert_eq!(k.balance_interval_ticks(0, 0, true), 15);
}

#[test]
fn periodic_balances_of_a_busy_cpu_come_every_seven_ticks() {
    // Two tasks on CPU 0, one on CPU 1, ticks processed late in their jiffy: CPU 1's
    // periodic balances still come 7 ticks apart (sd->last_balance counts jiffies), not
    // the busy interval after the late tick's clock.
    let (mut k, mut rqs) = machine(2, 3);
    k.enqueue(&mut rqs, 0, 0, 0);
    k.enqueue(&mut rqs, 0, 1, 0);
    k.enqueue(&mut rqs, 1, 2, 0);
    let tick = 4_000_000;
    let mut seen = Vec::new();
    for j in 1..100u64 {
        let now = j * tick + 300_000;
        k.cpus[1].clock = now;
        k.cpus[1].next_tick = j * tick;
        let before = k.sched.next_balance[1][0];
        k.scheduler_tick(&mut rqs, 1);
        if k.sched.next_balance[1][0] != before {
            seen.push(j);
        }
    }
    let gaps: Vec<u64> = seen.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.len() >= 5, "{seen:?}");
    assert!(
        gaps.iter().all(|&g| g == 7 || g == 15),
        "balances at ticks {seen:?}"
    );
}
