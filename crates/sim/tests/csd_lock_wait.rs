//! A CPU waiting for its own shootdown (csd_lock_wait) spins with interrupts on, so a call
//! from another CPU that reaches it meanwhile runs inside the spin (kernel/smp.c,
//! smp_call_function_many_cond: waiting with interrupts off could deadlock two CPUs that call
//! each other). A call that reaches a CPU doing work delays that work by the whole handler.

use reclaimlab_sim::config::{Policy, SimConfig};
use reclaimlab_sim::kernel::{Backing, Kernel};
use reclaimlab_sim::mm::vmstat::VmEventItem::*;

/// Two CPUs, both running one mm, at time 1000.
fn two_cpus() -> (Kernel, usize) {
    let mut k = Kernel::new(
        SimConfig::default(),
        Policy::linux_6_18(),
        2,
        1 << 20,
        1 << 10,
        60,
        1,
    );
    let mm = k.mm_alloc(64, Backing::Anon, true);
    for cpu in 0..2 {
        k.x86_switch_mm(cpu, Some(mm), 0);
        k.cpus[cpu].clock = 1000;
    }
    (k, mm)
}

/// One shootdown's round trip from a sender starting at `t`: send, delivery, the handler
/// and its one-page flush.
fn round_trip(k: &Kernel, t: u64) -> u64 {
    t + k.cost.ipi_send + k.cost.ipi_delivery + k.cost.ipi_handle + k.cost.local_flush_one
}

#[test]
fn two_cpus_flushing_each_other_at_once_run_each_others_handler_inside_their_own_wait() {
    let (mut k, mm) = two_cpus();
    let handler = k.cost.ipi_handle + k.cost.local_flush_one;
    // The engine runs CPU 0's flush first, then CPU 1's, both from time 1000.
    k.x86_flush_tlb_mm_range(0, mm, 0, 1, false);
    k.x86_flush_tlb_mm_range(1, mm, 1, 2, false);
    assert_eq!(k.irq.function_call_interrupts, vec![1, 1]);
    // Each waited one round trip for its own call; the other's handler ran in that wait.
    let ack = round_trip(&k, 1000);
    assert_eq!(k.cpus[0].clock, ack);
    assert_eq!(k.cpus[1].clock, ack);
    assert_eq!(k.vmstat[SMP_CALL_HANDLER_NS], 2 * handler);
    assert_eq!(k.vmstat[SMP_CALL_HANDLER_IN_WAIT_NS], 2 * handler);
}

#[test]
fn a_handler_reaching_a_cpu_at_work_delays_it_by_its_whole_length() {
    let (mut k, mm) = two_cpus();
    let handler = k.cost.ipi_handle + k.cost.local_flush_one;
    k.x86_flush_tlb_mm_range(0, mm, 0, 1, false);
    // CPU 1 works through the time CPU 0's call reaches it.
    k.charge(1, 10_000, reclaimlab_sim::cputime::Spent::Other);
    assert_eq!(k.cpus[1].clock, 1000 + 10_000 + handler);
    assert_eq!(k.vmstat[SMP_CALL_HANDLER_IN_WAIT_NS], 0);
}

#[test]
fn a_handler_running_past_the_end_of_the_wait_costs_what_runs_past_it() {
    let (mut k, mm) = two_cpus();
    let handler = k.cost.ipi_handle + k.cost.local_flush_one;
    k.x86_flush_tlb_mm_range(0, mm, 0, 1, false);
    let ack0 = k.cpus[0].clock;
    // CPU 1 flushes later: its call reaches CPU 0 shortly before CPU 0's wait ends.
    let t1 = ack0 - k.cost.ipi_send - k.cost.ipi_delivery - 100;
    k.charge(
        1,
        t1 - k.cpus[1].clock,
        reclaimlab_sim::cputime::Spent::Other,
    );
    k.x86_flush_tlb_mm_range(1, mm, 1, 2, false);
    let entry = t1 + k.cost.ipi_send + k.cost.ipi_delivery;
    assert_eq!(entry, ack0 - 100);
    // CPU 0 stays in the handler past its own acknowledgement, until the handler returns.
    assert_eq!(k.cpus[0].clock, entry + handler);
    // That handler counts as run in the wait; CPU 0's call reached CPU 1 while it was still
    // sending its own (work, not a wait), so that one delayed CPU 1 by its whole length.
    assert_eq!(k.vmstat[SMP_CALL_HANDLER_IN_WAIT_NS], handler);
}
