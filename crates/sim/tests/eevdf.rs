//! EEVDF's virtual deadlines (sched/fair_pick.rs, fair_place.rs): the pick is the eligible
//! entity with the earliest deadline, a used-up request gets a new deadline at the tick, and
//! a migrating task keeps its lag and relative deadline.

mod common;

use common::machine;
use reclaimlab_sim::kernel::Kernel;
use reclaimlab_sim::sched::fair_pick::calc_delta_fair;
use reclaimlab_sim::sched::{RunQueues, Sched};

/// One CPU, no task groups: task 0 runs with vruntime 10 ms, unprotected; task 2 waits with
/// vruntime 14 ms; task 1 sleeps with 1.4 ms of lag. Returns the machine with task 0's
/// deadline set to `curr_deadline`.
fn three_tasks(curr_deadline: u64) -> (Kernel, RunQueues) {
    let (mut k, mut rqs) = machine(1, 3);
    k.sched.autogroup = false;
    k.enqueue(&mut rqs, 0, 0, 0);
    k.enqueue(&mut rqs, 0, 2, 0);
    let se = &mut k.sched.se[0];
    se.vruntime = 10_000_000;
    se.deadline = curr_deadline;
    se.vprot = se.vruntime;
    let se = &mut k.sched.se[2];
    se.vruntime = 14_000_000;
    se.deadline = 14_750_000;
    let se = &mut k.sched.se[1];
    se.sleeping = true;
    se.last_cpu = Some(0);
    se.vlag = 1_400_000;
    (k, rqs)
}

/// One CPU, no task groups: task 0 runs, task 1 (started after it) waits.
fn two_tasks_on_one_cpu() -> (Kernel, RunQueues) {
    let (mut k, mut rqs) = machine(1, 2);
    k.sched.autogroup = false;
    k.enqueue(&mut rqs, 0, 0, 0);
    k.enqueue(&mut rqs, 0, 1, 0);
    (k, rqs)
}

/// The woken task comes back 2.1 ms before the 12 ms average (its lag scaled by
/// (load + w) / load, PLACE_LAG): vruntime 9.9 ms, below the running task's, deadline
/// 10.65 ms (a new request of 0.75 ms at one CPU). The running task is still eligible
/// (average 11.3 ms), so the earlier of the two deadlines decides; the smallest vruntime
/// would always pick the woken task.
#[test]
fn a_woken_task_preempts_only_with_the_earlier_deadline() {
    for (curr_deadline, preempts) in [(10_200_000, false), (10_800_000, true)] {
        let (mut k, mut rqs) = three_tasks(curr_deadline);
        k.try_to_wake_up(&mut rqs, 1, 0, 0);
        assert_eq!(k.se(1).vruntime, 9_900_000);
        assert_eq!(k.se(1).deadline, 10_650_000);
        let runs = k.cpus[0].curr;
        assert_eq!(
            runs,
            Some(if preempts { 1 } else { 0 }),
            "curr deadline {curr_deadline}"
        );
        k.check_sched(&rqs, "after the wake-up");
        assert!(k.invariant_errors.is_empty(), "{:?}", k.invariant_errors);
    }
}

/// Inside its protected slice an eligible running task keeps the CPU whatever the woken
/// task's deadline (RUN_TO_PARITY).
#[test]
fn a_protected_running_task_is_not_preempted() {
    let (mut k, mut rqs) = three_tasks(10_800_000);
    k.sched.se[0].vprot = 10_800_000;
    k.try_to_wake_up(&mut rqs, 1, 0, 0);
    assert_eq!(k.cpus[0].curr, Some(0));
}

/// A task that used up its request gets a new deadline at the tick (update_deadline:
/// vruntime + calc_delta_fair(slice)) and the waiting task with the earlier deadline runs; a
/// task inside its request is not rescheduled by the tick.
#[test]
fn a_task_past_its_slice_gets_a_new_deadline_at_the_tick() {
    let (mut k, mut rqs) = two_tasks_on_one_cpu();
    let slice = Sched::base_slice_ns(1);
    // New tasks start with half a request (PLACE_DEADLINE_INITIAL): task 0 at vruntime 0,
    // task 1 at the average when it came (task 0 had run for the context switch's cost).
    assert_eq!(k.se(0).deadline, slice / 2);
    assert!(k.se(1).vruntime > 0);
    assert_eq!(k.se(1).deadline, k.se(1).vruntime + slice / 2);
    let d1 = k.se(1).deadline;
    k.cpus[0].clock = 4_000_000;
    k.scheduler_tick(&mut rqs, 0);
    assert!(k.se(0).vruntime > 3_900_000);
    assert_eq!(k.se(0).deadline, k.se(0).vruntime + slice);
    assert_eq!(k.cpus[0].curr, Some(1));
    // Task 1 has run under 0.2 ms of its 0.375 ms: the next tick leaves it running (task 0
    // waits, ineligible; the tick does not even pick).
    let v1 = k.se(1).vruntime;
    k.cpus[0].clock = 4_200_000;
    k.scheduler_tick(&mut rqs, 0);
    assert_eq!(k.cpus[0].curr, Some(1));
    assert!(k.se(1).vruntime > v1 && k.se(1).vruntime < d1);
    assert_eq!(k.se(1).deadline, d1);
    assert_eq!(k.sched.need_resched[0], 0);
    // At 8.2 ms it has run about 4.2 ms: a new request from there, and task 0 (eligible,
    // the earlier deadline) runs again.
    k.cpus[0].clock = 8_200_000;
    k.scheduler_tick(&mut rqs, 0);
    assert_eq!(k.se(1).deadline, k.se(1).vruntime + slice);
    assert_eq!(k.cpus[0].curr, Some(0));
    k.check_sched(&rqs, "ticks");
    assert!(k.invariant_errors.is_empty(), "{:?}", k.invariant_errors);
}

/// update_curr asks for a reschedule when the running task's protection is over, not only
/// when its request is used up (6.18 fair.c: `resched || !protect_slice(curr)`): a task
/// whose vprot was left behind (it was picked again without set_next_entity) loses the CPU
/// at the tick to a waiting task with an earlier eligible deadline, its own deadline still
/// ahead. Inside its protection it keeps the CPU, eligible or not.
#[test]
fn a_task_past_its_protection_is_rescheduled_at_the_tick_inside_its_request() {
    for (vprot, runs_after) in [(10_000_000, 1), (10_600_000, 0)] {
        let (mut k, mut rqs) = two_tasks_on_one_cpu();
        let now = k.cpus[0].clock;
        let se = &mut k.sched.se[0];
        (se.vruntime, se.deadline, se.vprot, se.vr_stamp) = (10_000_000, 10_700_000, vprot, now);
        let se = &mut k.sched.se[1];
        (se.vruntime, se.deadline) = (9_900_000, 10_300_000);
        // 0.1 ms more: task 0 at 10.1 ms, inside its request, past the average (10 ms).
        k.cpus[0].clock = now + 100_000;
        k.tick_resched(&mut rqs, 0);
        assert_eq!(k.se(0).deadline, 10_700_000);
        assert_eq!(k.cpus[0].curr, Some(runs_after), "vprot {vprot}");
        k.check_sched(&rqs, "after the tick");
        assert!(k.invariant_errors.is_empty(), "{:?}", k.invariant_errors);
    }
}

/// A group entity joining a CPU's root cfs_rq gets its request at a weight that counts the
/// joining task there (enqueue_entity attaches the task's load and reweights the group's
/// entity, update_cfs_group, before place_entity): with the group's other task busy on the
/// other CPU that is half the group's shares, a request of twice the base slice in virtual
/// time, not MIN_SHARES' 512 times as long.
#[test]
fn a_group_entity_joins_with_a_request_at_the_weight_its_task_gives_it() {
    let (mut k, mut rqs) = machine(2, 2);
    k.sched.autogroup = true;
    k.enqueue(&mut rqs, 1, 0, 0);
    k.enqueue(&mut rqs, 0, 1, 0);
    let w = k.calc_group_shares(0, &k.group_load(0, 0, 0));
    assert_eq!(w, 512);
    let g = &k.sched.groups[0];
    let request = g.se_deadline[0] - g.se_vruntime[0];
    assert_eq!(request, calc_delta_fair(Sched::base_slice_ns(2), w));
    // A later change of weight keeps the request's length in real time (reweight_entity).
    k.reweight_group_entity(0, 0, 1024);
    let g = &k.sched.groups[0];
    assert_eq!(g.se_deadline[0] - g.se_vruntime[0], request / 2);
}

/// The balancer's detach keeps a queued task's lag, negative too (unlike a sleep), and its
/// deadline relative to its vruntime (PLACE_REL_DEADLINE); the destination places it that
/// far from its own average.
#[test]
fn a_migrating_task_keeps_its_lag_and_relative_deadline() {
    for (v1, vruntime_after) in [(9_000_000, 49_000_000), (11_000_000, 51_000_000)] {
        let (mut k, mut rqs) = machine(2, 3);
        k.sched.autogroup = false;
        k.enqueue(&mut rqs, 0, 0, 0);
        k.enqueue(&mut rqs, 0, 1, 0);
        k.enqueue(&mut rqs, 1, 2, 0);
        k.sched.se[0].vruntime = 10_000_000;
        k.sched.se[1].vruntime = v1;
        k.sched.se[1].deadline = v1 + 500_000;
        k.sched.se[2].vruntime = 50_000_000;
        // No run time left to charge (the context switches' cost moved the clocks).
        for (t, cpu) in [(0, 0), (2, 1)] {
            k.sched.se[t].vr_stamp = k.cpus[cpu].clock;
        }
        // CPU 0's average is 9.5 or 10.5 ms: a lag of ±0.5 ms, doubled by PLACE_LAG's
        // scaling on CPU 1 (one entity of the same weight there).
        k.dequeue_migrating(&rqs, 0, 1);
        rqs.rq[0].retain(|&t| t != 1);
        k.enqueue(&mut rqs, 1, 1, 0);
        assert_eq!(k.se(1).vruntime, vruntime_after);
        assert_eq!(k.se(1).deadline, vruntime_after + 500_000);
        assert_eq!(k.se(1).vlag, 0, "the lag is used once");
        k.check_sched(&rqs, "after the move");
        assert!(k.invariant_errors.is_empty(), "{:?}", k.invariant_errors);
    }
}

/// The same loaded run twice gives the same result, byte for byte.
#[test]
fn deadlines_keep_runs_deterministic() {
    let sets = [
        "machine.cpus=2",
        "run.duration=300ms",
        "workload.processes=3",
        "workload.threads=1",
        "workload.cpus=all",
        "workload.bytes=16M",
        "memcg.limit=24M",
        "machine.background_load.tasks=2",
        "machine.background_load.duty=0.3",
        "machine.background_load.period=20ms",
        "machine.background_load.groups=2",
    ];
    common::same_twice("anon-sweep", &sets);
}
