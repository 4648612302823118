//! sched.vcpu_pack (sched/fair.rs wake_affine): a guest kernel booted with sched_vcpu_pack
//! places a task woken by an interrupt on an idle CPU there, even when the task's previous
//! CPU is idle; mainline keeps it on its previous CPU.

mod common;

use common::machine;

/// Task 0 last ran on CPU 0 and sleeps; CPU 1 wakes it at 1 ms, idle or running task 1.
/// Returns the CPU it wakes on.
fn wake_from_cpu1(vcpu_pack: bool, cpu1_busy: bool) -> usize {
    let (mut k, mut rqs) = machine(2, 2);
    k.sched.autogroup = false;
    k.sched.vcpu_pack = vcpu_pack;
    if cpu1_busy {
        k.enqueue(&mut rqs, 1, 1, 0);
    } else {
        k.sched.se[1].sleeping = true;
    }
    let se = &mut k.sched.se[0];
    se.sleeping = true;
    se.last_cpu = Some(0);
    for c in 0..2 {
        k.cpus[c].clock = 1_000_000;
    }
    k.try_to_wake_up(&mut rqs, 0, 1, 1_000_000);
    k.sched.se[0].last_cpu.expect("placed")
}

#[test]
fn an_interrupt_on_an_idle_cpu_pulls_its_wakee_only_with_vcpu_pack() {
    assert_eq!(
        wake_from_cpu1(false, false),
        0,
        "mainline: the idle previous CPU"
    );
    assert_eq!(
        wake_from_cpu1(true, false),
        1,
        "vcpu_pack: the idle waker's CPU"
    );
}

#[test]
fn a_busy_waker_leaves_the_wakee_on_its_idle_previous_cpu_either_way() {
    assert_eq!(wake_from_cpu1(false, true), 0);
    assert_eq!(wake_from_cpu1(true, true), 0);
}
