//! Task groups (sched/autogroup.rs, fair_group.rs, fair_pick.rs): CPU shares follow the
//! groups' shares, hierarchical load (task_h_load) in the balancer, the scheduler's
//! invariants with groups, and the new keys' errors.

mod common;

use reclaimlab_core::{ResultDoc, Scenario, Target};
use reclaimlab_sim::config::Policy;
use reclaimlab_sim::kernel::{Backing, Kernel};
use reclaimlab_sim::sched::autogroup::{nice_to_weight, TaskGroup};
use reclaimlab_sim::sched::RunQueues;
use serde_json::Value;

fn placement(d: &ResultDoc) -> &Value {
    &d.runs[0].extra["placement"]
}

fn tasks_of<'a>(d: &'a ResultDoc, kind: &str) -> Vec<&'a Value> {
    placement(d)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == kind)
        .collect()
}

fn cpu_s(ts: &[&Value]) -> f64 {
    ts.iter().map(|t| t["cpu_seconds"].as_f64().unwrap()).sum()
}

/// One workload process against 8 always-runnable foreign tasks in one other session, on 2
/// CPUs for 2 s.
fn one_against_eight(autogroup: bool) -> ResultDoc {
    let ag = format!("sched.autogroup={autogroup}");
    common::sim_with(
        "anon-sweep",
        &[
            "workload.processes=1",
            "workload.bytes=16M",
            "memcg.limit=8M",
            "run.duration=2s",
            "machine.background_load.tasks=8",
            "machine.background_load.duty=1.0",
            "machine.background_load.period=20ms",
            "machine.background_load.groups=1",
        ],
        &[&ag],
    )
}

/// Two groups of equal shares, one with 1 task and one with 8, split 2 CPUs about evenly;
/// without groups the one task gets about its 1/9 of the two CPUs.
#[test]
fn a_groups_cpu_share_follows_its_shares() {
    let on = one_against_eight(true);
    let (w, bg) = (
        cpu_s(&tasks_of(&on, "worker")),
        cpu_s(&tasks_of(&on, "background")),
    );
    let total = w + bg;
    assert!(total > 3.8, "both CPUs busy: {total}");
    assert!(
        (0.42..=0.58).contains(&(w / total)),
        "worker {w} s of {total} s"
    );
    let groups = placement(&on)["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert!(groups.iter().all(|g| g["shares"] == 1024));

    let off = one_against_eight(false);
    let (w, bg) = (
        cpu_s(&tasks_of(&off, "worker")),
        cpu_s(&tasks_of(&off, "background")),
    );
    let share = w / (w + bg);
    assert!(
        (0.07..=0.16).contains(&share),
        "worker {w} s, foreign {bg} s"
    );
    assert_eq!(placement(&off)["groups"].as_array().unwrap().len(), 0);
}

/// A nice-19 session against a nice-0 one: its shares are 15 against 1024.
#[test]
fn an_autogroup_nice_weighs_the_whole_group() {
    let d = common::sim_with(
        "anon-sweep",
        &[
            "workload.processes=1",
            "workload.bytes=16M",
            "memcg.limit=8M",
            "run.duration=1s",
            "workload.cpus=[0]",
            "machine.background_load.tasks=2",
            "machine.background_load.duty=1.0",
            "machine.background_load.cpus=0",
            "machine.background_load.group_nice=19",
        ],
        &[],
    );
    let (w, bg) = (
        cpu_s(&tasks_of(&d, "worker")),
        cpu_s(&tasks_of(&d, "background")),
    );
    // 1024 : 15 on one CPU: the foreign session gets about 1.4%.
    assert!(bg / (w + bg) < 0.05, "worker {w} s, foreign {bg} s");
    assert!(bg > 0.0, "a nice-19 group still runs");
}

/// Nice inside a group only divides the group's part: with autogroup on, nice-19 tasks in a
/// session of their own still get their session's half of a shared CPU.
#[test]
fn task_nice_counts_only_inside_its_group() {
    let run = |ag: bool| {
        let d = common::sim_with(
            "anon-sweep",
            &[
                "workload.processes=1",
                "workload.bytes=16M",
                "memcg.limit=8M",
                "run.duration=1s",
                "workload.cpus=[0]",
                "machine.background_load.tasks=2",
                "machine.background_load.duty=1.0",
                "machine.background_load.cpus=0",
                "machine.background_load.nice=19",
            ],
            &[if ag {
                "sched.autogroup=true"
            } else {
                "sched.autogroup=false"
            }],
        );
        let (w, bg) = (
            cpu_s(&tasks_of(&d, "worker")),
            cpu_s(&tasks_of(&d, "background")),
        );
        bg / (w + bg)
    };
    let on = run(true);
    assert!((0.4..=0.6).contains(&on), "{on}");
    // Without groups: 2 × 15 against 1024.
    let off = run(false);
    assert!(off < 0.06, "{off}");
}

fn worker_balance_migrations(d: &ResultDoc) -> u64 {
    tasks_of(d, "worker")
        .iter()
        .map(|t| t["migrations"].as_u64().unwrap())
        .sum()
}

/// Against many foreign tasks in one busy session, a worker's group-scaled load is large and
/// theirs small (task_h_load): the balancer fills an imbalance with foreign tasks and moves
/// the workers less often than when every task weighs the same.
#[test]
fn autogroup_moves_workers_less_against_light_foreign_tasks() {
    let run = |ag: &str| {
        common::sim_with(
            "anon-sweep",
            &[
                "workload.processes=2",
                "workload.bytes=16M",
                "memcg.limit=8M",
                // Long enough for several balancing decisions either way (at 5 s, with the
                // processes' main threads modelled, neither setting happened to move one).
                "run.duration=10s",
                "machine.background_load.tasks=9",
                "machine.background_load.duty=0.9",
                "machine.background_load.period=20ms",
                "machine.background_load.groups=1",
                // Every process on its own CPU from time 0: the comparison is of the
                // balancer's choices, not of where bench's start-up puts the workers.
                "sim.bench_start=static",
            ],
            &[ag],
        )
    };
    let on = run("sched.autogroup=true");
    let off = run("sched.autogroup=false");
    let (m_on, m_off) = (
        worker_balance_migrations(&on),
        worker_balance_migrations(&off),
    );
    assert!(m_off > 0, "equal-weight foreign tasks move the workers");
    assert!(m_on < m_off, "autogroup on {m_on}, off {m_off}");
}

/// Every shipped scenario, small, with foreign sessions (nice, group nice) and with
/// autogroup off: the invariants (every runnable task on exactly one run queue, affinity
/// respected, task_cpu consistent) hold at every tick.
#[test]
fn the_scheduler_invariants_hold_with_groups() {
    let extra: &[&[&str]] = &[
        &[
            "machine.background_load.tasks=5",
            "machine.background_load.duty=0.6",
            "machine.background_load.period=5ms",
            "machine.background_load.groups=2",
            "machine.background_load.nice=5",
            "machine.background_load.group_nice=-3",
        ],
        &[
            "sched.autogroup=false",
            "machine.background_load.tasks=3",
            "machine.background_load.nice=19",
            "machine.background_load.cpus=1-2",
        ],
    ];
    for (name, small) in [
        (
            "anon-sweep",
            &["machine.cpus=4", "memcg.limit=8M", "workload.bytes=16M"][..],
        ),
        (
            "stress-vm",
            &[
                "machine.cpus=4",
                "workload.workers=4",
                "workload.bytes=32M",
                "memcg.limit=8M",
            ][..],
        ),
        (
            "kswapd-mmap-read",
            &["machine.cpus=4", "machine.memory=64M"][..],
        ),
    ] {
        for e in extra {
            let mut sets = vec!["run.duration=200ms", "sim.check=full"];
            sets.extend_from_slice(small);
            let d = common::sim_with(name, &sets, e);
            assert!(!placement(&d)["tasks"].as_array().unwrap().is_empty());
        }
    }
}

#[test]
fn groups_are_deterministic() {
    let sets = [
        "machine.cpus=4",
        "machine.background_load.tasks=6",
        "machine.background_load.groups=3",
        "machine.background_load.nice=10",
        "workload.workers=3",
        "workload.bytes=32M",
        "memcg.limit=8M",
        "run.duration=200ms",
    ];
    common::same_twice("stress-vm", &sets);
}

fn err_of(sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scn = Scenario::load("anon-sweep", &sets, Target::Sim).unwrap();
    reclaimlab_sim::run(&scn, &Default::default())
        .unwrap_err()
        .to_string()
}

#[test]
fn new_keys_have_ranges_and_clear_errors() {
    let e = err_of(&[
        "machine.background_load.tasks=2",
        "machine.background_load.groups=3",
    ]);
    assert!(
        e.contains("machine.background_load.groups") && e.contains("1..=2"),
        "{e}"
    );
    let e = err_of(&[
        "machine.background_load.tasks=2",
        "machine.background_load.groups=0",
    ]);
    assert!(e.contains("machine.background_load.groups"), "{e}");
    let e = err_of(&[
        "machine.background_load.tasks=2",
        "machine.background_load.nice=20",
    ]);
    assert!(
        e.contains("machine.background_load.nice") && e.contains("-20..=19"),
        "{e}"
    );
    let e = err_of(&[
        "machine.background_load.tasks=2",
        "machine.background_load.group_nice=-21",
    ]);
    assert!(e.contains("machine.background_load.group_nice"), "{e}");
    let e = err_of(&["sched.autogroup=maybe"]);
    assert!(
        e.contains("sched.autogroup") && e.contains("true or false"),
        "{e}"
    );
    let e = err_of(&["machine.background_load.tasks=100000"]);
    assert!(e.contains("machine.background_load.tasks"), "{e}");
}

/// task_h_load by hand: on 2 CPUs, a root task alone on CPU 0 and a group of 4 tasks on
/// CPU 1. The group's entity weighs its shares (1024), split between its 4 tasks: each
/// weighs about a quarter of the root task in the balancer, while its own PELT load is full.
#[test]
fn task_h_load_scales_a_task_by_its_groups_share() {
    let mut k = Kernel::new(
        common::cfg(0),
        Policy::linux_6_18(),
        2,
        1024,
        1 << 20,
        60,
        1,
    );
    k.sched.autogroup = true;
    k.sched.groups.push(TaskGroup::new(0, 2));
    let mut rqs = RunQueues::new(2);
    for i in 0..5 {
        let mm = k.mm_alloc(1, Backing::Anon, true);
        let t = k.task_new(mm, None, 0, 1);
        if i == 0 {
            k.tasks[t].kthread = true; // a root-group task
        } else {
            k.sched.se[t].group = 1;
        }
    }
    k.enqueue(&mut rqs, 0, 0, 0);
    for t in 1..5 {
        k.enqueue(&mut rqs, 1, t, 0);
    }
    k.check_sched(&rqs, "test");
    assert!(k.invariant_errors.is_empty(), "{:?}", k.invariant_errors);
    let root = k.task_h_load(0, 0);
    assert_eq!(root, 1024);
    for t in 1..5 {
        assert_eq!(k.se(t).avg.avg, 1024);
        let h = k.task_h_load(t, 0);
        assert!((250..=256).contains(&h), "task {t}: {h}");
    }
    // The group's load on CPU 1 is its entity's (its shares), not the sum of its tasks'.
    assert_eq!(k.cpu_load(1, 0), 1024);
    assert_eq!(k.cpu_load(0, 0), 1024);
    assert_eq!(nice_to_weight(19), 15);
    assert_eq!(nice_to_weight(0), 1024);
}

/// With groups, the pick alternates between the group entities by vruntime: on one CPU a
/// root task and a group of 3 share the CPU about evenly over many ticks.
#[test]
fn the_hierarchical_pick_shares_one_cpu_between_a_task_and_a_group() {
    let mut k = Kernel::new(
        common::cfg(0),
        Policy::linux_6_18(),
        1,
        1024,
        1 << 20,
        60,
        1,
    );
    k.sched.autogroup = true;
    k.sched.groups.push(TaskGroup::new(0, 1));
    let mut rqs = RunQueues::new(1);
    for i in 0..4 {
        let mm = k.mm_alloc(1, Backing::Anon, true);
        let t = k.task_new(mm, None, 0, 1);
        if i == 0 {
            k.tasks[t].kthread = true;
        } else {
            k.sched.se[t].group = 1;
        }
        k.enqueue(&mut rqs, 0, t, 0);
    }
    let mut ran = [0u64; 4];
    for _ in 0..400 {
        let t = k.cpus[0].curr.unwrap();
        ran[t] += 1;
        k.cpus[0].clock = k.cpus[0].next_tick;
        k.scheduler_tick(&mut rqs, 0);
        k.check_sched(&rqs, "tick");
    }
    assert!(k.invariant_errors.is_empty(), "{:?}", k.invariant_errors);
    let group: u64 = ran[1..].iter().sum();
    assert!((180..=220).contains(&ran[0]), "root task {ran:?}");
    assert!((180..=220).contains(&group), "group {ran:?}");
    // Inside the group, its three tasks share its half evenly.
    assert!(ran[1..].iter().all(|&r| (55..=78).contains(&r)), "{ran:?}");
}

/// check_preempt_wakeup_fair at the matching level: a woken root task competes with the
/// running task's group entity, whose request is used up (and wins the tie in deadline at
/// zero lag); a woken task of the running task's own group competes inside the group, where a
/// task that has waited longer has the earlier deadline and is the pick.
#[test]
fn wakeup_preemption_compares_entities_where_the_hierarchies_meet() {
    let mut k = Kernel::new(
        common::cfg(0),
        Policy::linux_6_18(),
        1,
        1024,
        1 << 20,
        60,
        1,
    );
    k.sched.autogroup = true;
    k.sched.groups.push(TaskGroup::new(0, 1));
    let mut rqs = RunQueues::new(1);
    for i in 0..4 {
        let mm = k.mm_alloc(1, Backing::Anon, true);
        let t = k.task_new(mm, None, 0, 1);
        if i == 0 {
            k.tasks[t].kthread = true; // root group
        } else {
            k.sched.se[t].group = 1;
        }
    }
    for t in [0, 3] {
        k.sched.se[t].sleeping = true;
        k.sched.se[t].last_cpu = Some(0);
    }
    k.enqueue(&mut rqs, 0, 1, 0);
    k.enqueue(&mut rqs, 0, 2, 0);
    assert_eq!(k.cpus[0].curr, Some(1));
    // 5 ms later the root task wakes: it meets task 1 at the root, against its group's
    // entity, and is picked.
    k.cpus[0].clock = 5_000_000;
    k.try_to_wake_up(&mut rqs, 0, 0, 5_000_000);
    assert_eq!(k.cpus[0].curr, Some(0));
    k.check_sched(&rqs, "after the root wake-up");
    // It sleeps again at 10 ms: the group runs task 2 (it has not run yet).
    k.cpus[0].clock = 10_000_000;
    k.block_task(&mut rqs, 0, None);
    assert_eq!(k.cpus[0].curr, Some(2));
    // At 20 ms task 3 of the same group wakes, placed at the group's average vruntime
    // (7.5 ms). Task 2 has run 10 ms, far past its request (update_curr gives it a new
    // deadline and asks for a reschedule), and inside the group the pick is task 1: eligible
    // (5 ms) with the earliest deadline, not the woken task.
    k.cpus[0].clock = 20_000_000;
    k.try_to_wake_up(&mut rqs, 3, 0, 20_000_000);
    assert_eq!(k.cpus[0].curr, Some(1));
    assert!(rqs.rq[0].contains(&3) && rqs.rq[0].contains(&2));
    k.check_sched(&rqs, "after the group wake-up");
    // The next tick finds task 1 inside its request: it keeps running.
    k.scheduler_tick(&mut rqs, 0);
    assert_eq!(k.cpus[0].curr, Some(1));
    k.check_sched(&rqs, "after the tick");
    assert!(k.invariant_errors.is_empty(), "{:?}", k.invariant_errors);
}
