//! Softirq rounds and ksoftirqd (softirq.rs): a disk completion raised inside a round that
//! already woke a task onto its CPU waits for ksoftirqd, and the task it wakes from there
//! sees that CPU busy.

mod common;

use common::{extra_u64, sim_with};

/// One process swapping to a one-queue disk whose interrupt is on CPU 1, on a guest kernel
/// whose interrupt wake-ups pull a task to the interrupt's idle CPU (sched.vcpu_pack).
const LONE: &[&str] = &[
    "run.duration=5s",
    "workload.bytes=32M",
    "workload.processes=1",
    "workload.cpus=all",
    "memcg.limit=16M",
    "swap.device=block",
    "swap.irq_cpu=1",
    "sched.vcpu_pack=true",
];

/// An unbound timer-wheel kernel thread started on CPU 0, waking every 10 us / 0.002 = 5 ms:
/// longer than a tick, so idle CPU 0 has handed its timer to the worker's CPU (timer
/// migration) when it fires.
const TIMER_KTHREAD: &[&str] = &[
    "machine.timer_kthreads.duty=0.002,0",
    "machine.timer_kthreads.slice=10us",
];

/// The migrations of the tasks of one placement `kind`.
fn migrations(doc: &reclaimlab_core::ResultDoc, kind: &str) -> u64 {
    doc.runs[0].extra["placement"]["tasks"]
        .as_array()
        .expect("placement tasks")
        .iter()
        .filter(|t| t["kind"] == kind)
        .map(|t| t["migrations"].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn a_completion_inside_a_timer_round_is_left_to_ksoftirqd_and_its_task_moves() {
    let quiet = sim_with("anon-sweep", LONE, &[]);
    assert_eq!(
        extra_u64(&quiet, "ksoftirqd_task_wakeups"),
        0,
        "no timer wake-up on the interrupt's CPU: the waiter is woken by the interrupt's round"
    );
    let timers = sim_with("anon-sweep", LONE, TIMER_KTHREAD);
    let left = extra_u64(&timers, "softirqs_left_to_ksoftirqd");
    let woken = extra_u64(&timers, "ksoftirqd_task_wakeups");
    assert!(woken > 0, "no waiter woken from ksoftirqd ({left} left)");
    assert!(left >= woken, "{left} completions left, {woken} wake-ups");
    assert!(extra_u64(&timers, "ksoftirqd_runs") > 0);
    // Woken from a busy CPU 1, the worker goes to idle CPU 0; the next completion from idle
    // CPU 1 pulls it back.
    let (q, t) = (migrations(&quiet, "worker"), migrations(&timers, "worker"));
    assert!(t > q, "migrations: {t} with timer wake-ups, {q} without");
    // The thread started on CPU 0; its timer fired on CPU 1 and woke it there.
    assert!(
        migrations(&timers, "background") > 0,
        "the timer-wheel thread never left CPU 0"
    );
}

#[test]
fn a_tick_inside_a_round_that_woke_a_task_wakes_ksoftirqd() {
    let doc = sim_with("anon-sweep", LONE, &[]);
    let ticks = extra_u64(&doc, "softirq_ticks_left_to_ksoftirqd");
    // A read's round is a few microseconds: some of the worker's rounds hold a tick of CPU 1.
    assert!(ticks > 0, "no tick inside a round");
    assert!(ticks <= 1_250, "{ticks} ticks left in 5 s of 4-ms ticks");
    assert!(extra_u64(&doc, "ksoftirqd_wakeups") >= 1);
    // Without a block device nothing raises BLOCK_SOFTIRQ on another CPU.
    let base: Vec<&str> = LONE
        .iter()
        .copied()
        .filter(|s| !s.starts_with("swap."))
        .collect();
    let zram = sim_with("anon-sweep", &base, &[]);
    assert_eq!(extra_u64(&zram, "ksoftirqd_wakeups"), 0);
}
