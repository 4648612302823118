//! Utilisation and blocked load (sched/pelt.rs, fair_group.rs) and SIS_UTIL's scan depth
//! (sched/fair.rs: update_idle_cpu_scan, select_idle_cpu).

mod common;

use common::machine;
use reclaimlab_sim::kernel::Kernel;
use reclaimlab_sim::sched::fair::IdleType;
use reclaimlab_sim::sched::pelt::{Avg, PERIOD_NS};
use reclaimlab_sim::sched::RunQueues;

/// A task asleep on CPU 1 still weighs there, less every period: update_blocked_averages
/// halves its load every 32 periods. It never ran, so no utilisation.
#[test]
fn a_sleeping_tasks_load_decays_on_its_cpu() {
    let (mut k, _rqs) = machine(2, 1);
    k.sched.autogroup = false;
    let se = &mut k.sched.se[0];
    se.sleeping = true;
    se.last_cpu = Some(1);
    se.avg = Avg { avg: 1024, last: 0 };
    assert_eq!(k.cpu_load(1, 0), 1024);
    assert!(k.cpu_load(1, 32 * PERIOD_NS).abs_diff(512) <= 1);
    assert!(k.cpu_load(1, 64 * PERIOD_NS).abs_diff(256) <= 1);
    assert_eq!(k.cpu_load(0, 64 * PERIOD_NS), 0);
    assert_eq!(k.cpu_util(1, 64 * PERIOD_NS), 0);
}

/// CPU 1 runs task 0 (utilisation 1024); task 2 sleeps on idle CPU 0 with utilisation
/// `blocked`; task 1 sleeps on CPU 1 and is woken from there. A periodic balance of CPU 1
/// first sets the LLC's scan depth. Returns the CPU task 1 wakes on.
fn wake_after_balance(blocked: u64, sis_util: bool) -> usize {
    let (mut k, mut rqs): (Kernel, RunQueues) = machine(2, 3);
    k.sched.autogroup = false;
    k.sched.sis_util = sis_util;
    k.enqueue(&mut rqs, 1, 0, 0);
    for (t, cpu, util) in [(1, 1, 0), (2, 0, blocked)] {
        let se = &mut k.sched.se[t];
        se.sleeping = true;
        se.last_cpu = Some(cpu);
        se.avg = Avg::default();
        se.util = Avg { avg: util, last: 0 };
    }
    k.sched.se[0].util = Avg { avg: 1024, last: 0 };
    k.sched_balance_rq(&mut rqs, 1, 0, IdleType::NotIdle, 0);
    k.try_to_wake_up(&mut rqs, 1, 1, 0);
    k.sched.se[1].last_cpu.expect("placed")
}

/// LLC utilisation 1624 of 2048 (79%): nr_idle_scan = 2 × (1024 − 812²·117²/10⁷/1024) / 1024
/// = 0, so the wake-up stays on the busy waker's CPU although CPU 0 is idle. At 1024 (50%)
/// the depth is 1 and the scan finds CPU 0; without SIS_UTIL it always does.
#[test]
fn a_busy_llc_is_not_scanned_for_an_idle_cpu() {
    assert_eq!(wake_after_balance(600, true), 1);
    assert_eq!(wake_after_balance(0, true), 0);
    assert_eq!(wake_after_balance(600, false), 0);
}

/// A new task's utilisation: half the spare capacity of an idle CPU's cfs_rq
/// (post_init_entity_util_avg), and it grows while the task runs.
#[test]
fn a_new_task_starts_at_half_the_spare_capacity() {
    let (mut k, mut rqs) = machine(2, 2);
    k.sched.autogroup = false;
    k.enqueue(&mut rqs, 0, 0, 0);
    k.sched.se[1].sleeping = true;
    k.wake_up_new_task(&mut rqs, 1, 0, 0);
    let cpu = k.sched.se[1].last_cpu.expect("placed");
    assert_eq!(cpu, 1, "fork placement picks the idle CPU");
    assert_eq!(k.util_avg_at(1, 0), 512);
    assert!(k.util_avg_at(1, 32 * PERIOD_NS) > 760);
}
