//! Cross-CPU function calls (kernel/smp.c) and the interrupts-off windows that delay them.
//!
//! smp_call_function_many_cond queues one call (a csd) per target on the target's
//! call_single_queue with llist_add, and sends an IPI only to targets whose queue was empty:
//! a call queued while an earlier one still waits for its interrupt rides on that interrupt.
//! The target's handler (sysvec_call_function → __flush_smp_call_function_queue) takes the
//! whole queue (llist_del_all) and runs every call in it, with interrupts off. So the x86
//! counters differ: CAL (irq_call_count) counts interrupts, TLB (irq_tlb_count, incremented in
//! flush_tlb_func on a remote CPU) counts calls, and CAL < TLB when calls share interrupts.
//!
//! An IPI reaching a CPU with interrupts off (spin_lock_irq'd lru_lock, including the spin;
//! another call-function handler; a local flush_tlb_func) is taken when they come back on,
//! which delays the acknowledgement the sender waits for (csd_lock_wait) and keeps the
//! target's queue non-empty longer, so more calls share the interrupt.
//!
//! A CPU waiting for its own calls (csd_lock_wait) spins with interrupts on, and must: two
//! CPUs flushing each other at once would deadlock otherwise (smp_call_function_many_cond
//! asserts interrupts are enabled). So a handler that reaches a CPU while it spins runs inside
//! the spin and costs that CPU only what runs past its own acknowledgement; a handler that
//! reaches a CPU doing work delays that work by its whole length. An idle CPU absorbs it too.
//!
//! Engine approximation: times are absolute, so windows and interrupts placed by a CPU that ran
//! ahead are seen by calls processed later. A window placed *after* a call was delivered (the
//! target's clock was behind the sender's) does not move that call: the sim decides a call's
//! timing when the sender runs, with what the target has recorded so far.

use crate::cputime::Spent;
use std::collections::VecDeque;

use crate::kernel::{CpuId, Kernel};
use crate::mm::vmstat::VmEventItem::*;
use crate::timeline::{partition_point_back, History, Timeline};

/// Interrupts-off periods remembered per CPU (older ones are forgotten: an IPI at a time
/// before all of them finds interrupts on).
pub const IRQ_OFF_HISTORY: usize = 1024;
/// Call-function interrupts remembered per CPU.
pub const CSD_HISTORY: usize = 1024;

/// One CPU's recent interrupts-off periods, merged where they overlap or touch (interrupts
/// stay off across back-to-back sections).
#[derive(Clone, Debug)]
pub struct IrqOff(Timeline);

impl Default for IrqOff {
    fn default() -> IrqOff {
        IrqOff(Timeline::new(IRQ_OFF_HISTORY))
    }
}

impl IrqOff {
    /// local_irq_disable at `start` .. local_irq_enable at `end`.
    pub fn push(&mut self, start: u64, end: u64) {
        self.0.add(start, end);
    }

    /// The first time at or after `t` with interrupts on.
    pub fn irqs_on_at(&self, t: u64) -> u64 {
        self.0.busy_until(t).unwrap_or(t)
    }

    /// `irqs_on_at(t)`, remembering where it is for `push_taken`.
    fn taken_at(&self, t: u64) -> Taken {
        let (busy, after) = self.0.busy_until_at(t);
        Taken {
            entry: busy.unwrap_or(t),
            after,
        }
    }

    /// `push(taken.entry, end)` without searching for the place again: nothing may have been
    /// pushed since `taken_at`.
    fn push_taken(&mut self, taken: Taken, end: u64) {
        self.0.add_at(taken.entry, end, taken.after);
    }
}

/// When an interrupt is taken (interrupts on again), and where that is in the CPU's timeline.
#[derive(Clone, Copy)]
struct Taken {
    entry: u64,
    after: usize,
}

/// What a call queued on a CPU finds: a pending interrupt it joins (its index), or none (then
/// the new interrupt's place among those remembered, if the search found it).
enum Pending {
    Joins(usize),
    New(Option<usize>),
}

/// One call-function interrupt on a CPU (keyed by when its first call was queued): when the
/// handler took the queue (llist_del_all), and when it returned.
#[derive(Clone, Copy, Debug)]
struct CallIrq {
    entry: u64,
    end: u64,
}

/// Per-CPU call_single_queue state and the interrupts-off windows (the counters are
/// SMP_CALLS.. in mm/vm_event_item.rs).
pub struct Smp {
    pub irq_off: Vec<IrqOff>,
    /// Per CPU, (first call queued, interrupt), sorted by the first.
    irqs: Vec<History<(u64, CallIrq)>>,
    /// Per CPU, the latest handler entry remembered: a call queued at or after it finds the
    /// queue empty (a fast path).
    latest_entry: Vec<u64>,
    /// Per CPU, handlers (start, ns) that start after the CPU's clock when they are queued (the
    /// engine ran the sender ahead), sorted by start: charged when the CPU's clock gets there,
    /// absorbed if it spins or idles across them.
    owed: Vec<VecDeque<(u64, u64)>>,
    /// Per CPU, its recent csd_lock_wait spins: a handler placed later at a time inside one
    /// ran during the spin.
    spins: Vec<Timeline>,
}

impl Smp {
    pub fn new(nr_cpus: usize) -> Smp {
        Smp {
            irq_off: vec![IrqOff::default(); nr_cpus],
            irqs: vec![History::new(); nr_cpus],
            latest_entry: vec![0; nr_cpus],
            owed: vec![VecDeque::new(); nr_cpus],
            spins: vec![Timeline::new(IRQ_OFF_HISTORY); nr_cpus],
        }
    }

    /// Remember a new interrupt whose first call was queued at `queued`; `at`, when known, is
    /// its place (after every interrupt queued earlier, before those queued at or after it).
    fn remember(&mut self, cpu: CpuId, queued: u64, irq: CallIrq, at: Option<usize>) {
        self.latest_entry[cpu] = self.latest_entry[cpu].max(irq.entry);
        let v = &mut self.irqs[cpu];
        debug_assert!(at.is_none_or(|i| i == v.as_slice().partition_point(|&(q, _)| q < queued)));
        let at = at.unwrap_or_else(|| partition_point_back(v.as_slice(), |&(q, _)| q < queued));
        v.insert(at, (queued, irq));
        if v.len() > CSD_HISTORY {
            v.pop_front();
        }
    }

    /// Was a call queued on `cpu` by `t` whose interrupt enters its handler after `from`
    /// (`from` ≤ `t`)? With `from` the start of __schedule's interrupts-off section and `t` its
    /// enter_lazy_tlb, such a call reached the CPU in the section or later and is taken after
    /// the switch. (Every call the model queues is a TLB flush.)
    pub fn call_irq_after(&self, cpu: CpuId, t: u64, from: u64) -> bool {
        if self.latest_entry.get(cpu).is_none_or(|&e| e <= from) {
            return false;
        }
        // Only calls queued by `t`: one queued later came from a sender the engine ran ahead
        // of this CPU, which read its state from before `t` (should_flush_tlb would have found
        // it lazy by then).
        let v = self.irqs[cpu].as_slice();
        let i = partition_point_back(v, |&(q, _)| q <= t);
        v[..i].iter().rev().any(|(_, irq)| irq.entry > from)
    }

    /// The pending interrupt on `cpu` that a call queued at `queued` joins, if any (its index):
    /// one whose queue was non-empty at `queued` (queued first, handler not yet entered), or
    /// one whose first call came after `queued` but before this call's own IPI would have been
    /// taken (`entry`): in time this call was first and that one joined it.
    ///
    /// Without one, the place of a new interrupt queued at `queued` when the search found it
    /// (for `remember`).
    fn pending_irq(&self, cpu: CpuId, queued: u64, entry: u64) -> Pending {
        if queued >= self.latest_entry[cpu] {
            return Pending::New(None);
        }
        let v = &self.irqs[cpu];
        let v = v.as_slice();
        let i = partition_point_back(v, |&(q, _)| q <= queued);
        if i > 0 && queued < v[i - 1].1.entry {
            return Pending::Joins(i - 1);
        }
        if i < v.len() && v[i].0 < entry {
            return Pending::Joins(i);
        }
        // Before the interrupts queued at `queued` itself, as `remember` places it.
        let mut at = i;
        while at > 0 && v[at - 1].0 == queued {
            at -= 1;
        }
        Pending::New(Some(at))
    }
}

impl Default for Smp {
    fn default() -> Smp {
        Smp::new(0)
    }
}

impl Kernel {
    /// Queue one call of `work` ns on `target` at time `queued` (llist_add in
    /// smp_call_function_many_cond) and run it there. Returns when the call's function has
    /// returned on the target (the csd is unlocked: what the sender's csd_lock_wait waits for).
    ///
    /// * Queue non-empty (an earlier call's interrupt has not taken the queue yet): the call
    ///   runs at the end of that interrupt's handler; no IPI, no CAL.
    /// * Otherwise an IPI is sent; it arrives `ipi_delivery` later and is taken when the target
    ///   next has interrupts on. CAL counts it; the handler costs `ipi_handle` plus the work.
    ///
    /// A call processed after an interrupt but queued *before* that interrupt's first call
    /// (the engine ran the other sender ahead) shares it when its own IPI would not have been
    /// taken before that first call was queued: in time it was first and the other rode on it.
    pub fn smp_queue_call(&mut self, target: CpuId, queued: u64, work: u64) -> u64 {
        self.vmstat.count_vm_event(SMP_CALLS);
        let arrive = queued + self.cost.ipi_delivery;
        let taken = self.smp.irq_off[target].taken_at(arrive);
        let entry = taken.entry;
        let place = match self.smp.pending_irq(target, queued, entry) {
            Pending::New(place) => place,
            Pending::Joins(ix) => {
                self.vmstat.count_vm_event(SMP_CALLS_SHARING_IRQ);
                let (q, irq) = &mut self.smp.irqs[target][ix];
                // Keyed by its first call; this one may be earlier (the order stays sorted: no
                // other interrupt was queued between them, or this call would have joined it).
                *q = (*q).min(queued);
                let start = irq.end;
                irq.end += work;
                let end = irq.end;
                self.smp.irq_off[target].push(start, end);
                self.charge_handler(target, start, work);
                return end;
            }
        };
        if entry > arrive {
            self.vmstat.count_vm_event(IPI_IRQ_OFF_DELAYED);
            self.vmstat
                .count_vm_events(IPI_IRQ_OFF_DELAY_NS, entry - arrive);
        }
        self.irq.function_call_interrupts[target] += 1;
        let end = entry + self.cost.ipi_handle + work;
        self.smp.irq_off[target].push_taken(taken, end);
        self.smp
            .remember(target, queued, CallIrq { entry, end }, place);
        self.charge_handler(target, entry, self.cost.ipi_handle + work);
        end
    }

    /// A handler of `ns` on `cpu` from `start`. In the CPU's future (its clock is behind): owed
    /// until the clock gets there. In its past: free inside a csd_lock_wait spin it recorded
    /// (but what runs past the spin's end), else it delayed whatever the CPU was doing.
    fn charge_handler(&mut self, cpu: CpuId, start: u64, ns: u64) {
        self.vmstat.count_vm_events(SMP_CALL_HANDLER_NS, ns);
        if start >= self.cpus[cpu].clock {
            let owed = &mut self.smp.owed[cpu];
            let at = owed.partition_point(|&(s, _)| s <= start);
            owed.insert(at, (start, ns));
            if owed.len() > CSD_HISTORY {
                // Too far ahead to keep: charged now, as if it interrupted the CPU's work.
                let (_, oldest) = owed.pop_front().unwrap_or_default();
                self.cpus[cpu].clock += oldest;
                self.cpu_time.add(Spent::IpiHandler, oldest);
            }
            self.sync_owed_at(cpu);
            return;
        }
        if let Some(spin_end) = self.smp.spins[cpu].busy_until(start) {
            // It ran during that spin: only what ran past the spin's end delayed the CPU (and
            // lengthened its wait).
            let past = (start + ns).saturating_sub(spin_end);
            self.vmstat.count_vm_events(SMP_CALL_HANDLER_IN_WAIT_NS, ns);
            self.vmstat.count_vm_events(SMP_CALL_WAIT_NS, past);
            self.charge(cpu, past, Spent::IpiHandler);
        } else {
            self.charge(cpu, ns, Spent::IpiHandler);
        }
    }

    /// Charge the handlers owed to `cpu` that start by its clock: each interrupted its work.
    #[inline]
    pub fn run_owed_handlers(&mut self, cpu: CpuId) {
        // Called after every charge; nearly always nothing is due.
        let c = &self.cpus[cpu];
        if c.owed_at <= c.clock {
            self.run_owed_handlers_now(cpu);
        }
    }

    /// Keep `Cpu::owed_at` the start of the first handler owed to `cpu`.
    fn sync_owed_at(&mut self, cpu: CpuId) {
        self.cpus[cpu].owed_at = self.smp.owed[cpu].front().map_or(u64::MAX, |&(s, _)| s);
    }

    #[inline(never)]
    fn run_owed_handlers_now(&mut self, cpu: CpuId) {
        let Some(owed) = self.smp.owed.get_mut(cpu) else {
            return;
        };
        let c = &mut self.cpus[cpu];
        while let Some(&(start, ns)) = owed.front() {
            if start > c.clock {
                break;
            }
            owed.pop_front();
            c.clock += ns;
            self.cpu_time.add(Spent::IpiHandler, ns);
        }
        self.sync_owed_at(cpu);
    }

    /// `cpu` runs no work of its own until `until` (it spins with interrupts on, or idles):
    /// the handlers owed to it that start before it would resume run in that time, one after
    /// another; it resumes at `until` or when the last of them returns. Returns the handlers'
    /// time (ns).
    fn absorb_owed_handlers(&mut self, cpu: CpuId, until: u64) -> u64 {
        self.run_owed_handlers(cpu);
        let mut t = self.cpus[cpu].clock;
        let mut handled = 0;
        if let Some(owed) = self.smp.owed.get_mut(cpu) {
            while let Some(&(start, ns)) = owed.front() {
                if start >= t.max(until) {
                    break;
                }
                owed.pop_front();
                t = start.max(t) + ns;
                handled += ns;
            }
            self.sync_owed_at(cpu);
        }
        self.cpus[cpu].clock = t.max(until);
        self.cpu_time.add(Spent::IpiHandler, handled);
        handled
    }

    /// csd_lock_wait on `cpu` until its calls' acknowledgement at `ack`, spinning with
    /// interrupts on: other CPUs' calls that reach it meanwhile run inside the spin (counted
    /// as wait and as handler time in the wait: the spin alone is their difference).
    pub fn csd_lock_wait(&mut self, cpu: CpuId, ack: u64) {
        self.run_owed_handlers(cpu);
        let now = self.cpus[cpu].clock;
        let handled = self.absorb_owed_handlers(cpu, ack);
        if ack > now {
            self.smp.spins[cpu].add(now, ack);
        }
        self.vmstat
            .count_vm_events(SMP_CALL_HANDLER_IN_WAIT_NS, handled);
        let waited = self.cpus[cpu].clock - now;
        self.vmstat.count_vm_events(SMP_CALL_WAIT_NS, waited);
        self.cpu_time.add(Spent::FlushWait, waited - handled);
    }

    /// `cpu` idles (or its task sleeps) until `until`: handlers owed to it meanwhile run in
    /// that idle time.
    pub fn idle_until(&mut self, cpu: CpuId, until: u64) {
        self.absorb_owed_handlers(cpu, until);
    }

    /// Work done locally with interrupts off (local_irq_save ... restore around a local
    /// flush_tlb_func): charged to `cpu` and recorded as a window.
    pub fn irq_off_local(&mut self, cpu: CpuId, ns: u64) {
        let t = self.cpus[cpu].clock;
        self.smp.irq_off[cpu].push(t, t + ns);
        self.charge(cpu, ns, Spent::TlbFlush);
    }
}

#[cfg(test)]
mod tests {
    use super::IrqOff;

    #[test]
    fn irqs_on_at_follows_chained_windows() {
        let mut w = IrqOff::default();
        w.push(100, 200);
        w.push(200, 250);
        w.push(400, 500);
        assert_eq!(w.irqs_on_at(50), 50);
        assert_eq!(w.irqs_on_at(150), 250);
        assert_eq!(w.irqs_on_at(300), 300);
        assert_eq!(w.irqs_on_at(499), 500);
    }
}

#[cfg(test)]
mod kernel_tests {
    use crate::config::{Policy, SimConfig};
    use crate::kernel::{Backing, Kernel};
    use crate::mm::vmstat::VmEventItem::*;

    /// Three CPUs run one mm; CPU 2 holds lru_lock with interrupts off over [1000, 5000).
    fn machine() -> (Kernel, usize) {
        let mut k = Kernel::new(
            SimConfig::default(),
            Policy::linux_6_18(),
            3,
            1 << 20,
            1 << 10,
            60,
            1,
        );
        let mm = k.mm_alloc(64, Backing::Anon, true);
        for cpu in 0..3 {
            k.x86_switch_mm(cpu, Some(mm), 0);
        }
        (k, mm)
    }

    #[test]
    fn an_ipi_to_a_cpu_with_interrupts_off_waits_and_a_second_call_shares_it() {
        let (mut k, mm) = machine();
        let (send, deliver, handle) = (k.cost.ipi_send, k.cost.ipi_delivery, k.cost.ipi_handle);
        k.cpus[2].clock = 1000;
        k.lru_lock_irq_section(2, 4000, crate::cputime::Spent::LruIsolate);
        assert_eq!(k.cpus[2].clock, 5000);

        // CPU 0 flushes at 1000: CPU 1 answers at once, CPU 2 only when its lock is dropped.
        k.cpus[0].clock = 1000;
        k.x86_flush_tlb_mm_range(0, mm, 0, 1, false);
        assert_eq!(
            k.vmstat[IPI_IRQ_OFF_DELAYED], 1,
            "only CPU 2 had interrupts off"
        );
        let queued_to_2 = 1000 + 2 * send;
        assert_eq!(
            k.vmstat[IPI_IRQ_OFF_DELAY_NS],
            5000 - (queued_to_2 + deliver)
        );
        // The sender waited for CPU 2's handler, which started at 5000.
        assert!(k.cpus[0].clock >= 5000 + handle, "{}", k.cpus[0].clock);

        // CPU 1 flushes the mm again before CPU 2's handler has taken its queue: the call
        // rides on the pending interrupt (no second CAL on CPU 2) but is a second TLB.
        k.cpus[1].clock = 2000;
        k.x86_flush_tlb_mm_range(1, mm, 0, 1, false);
        assert_eq!(k.irq.function_call_interrupts[2], 1);
        assert_eq!(k.irq.tlb_shootdowns[2], 2);
        assert_eq!(k.vmstat[SMP_CALLS_SHARING_IRQ], 1);
        let cal: u64 = k.irq.function_call_interrupts.iter().sum();
        let tlb: u64 = k.irq.tlb_shootdowns.iter().sum();
        assert!(cal < tlb, "CAL {cal} TLB {tlb}");
        // Its acknowledgement comes after the first call's, in the same handler.
        assert!(k.cpus[1].clock >= 5000 + handle);
    }

    #[test]
    fn without_the_window_the_ack_is_one_round_trip_and_calls_do_not_share() {
        let (mut k, mm) = machine();
        let (send, deliver, handle) = (k.cost.ipi_send, k.cost.ipi_delivery, k.cost.ipi_handle);
        k.cpus[0].clock = 1000;
        k.x86_flush_tlb_mm_range(0, mm, 0, 1, false);
        assert_eq!(k.vmstat[IPI_IRQ_OFF_DELAYED], 0);
        let work = k.cost.local_flush_one;
        assert_eq!(k.cpus[0].clock, 1000 + 2 * send + deliver + handle + work);
        // The next flush from CPU 1 comes after CPU 2's handler took its queue: a new IPI.
        k.cpus[1].clock = k.cpus[0].clock;
        k.x86_flush_tlb_mm_range(1, mm, 0, 1, false);
        assert_eq!(k.irq.function_call_interrupts[2], 2);
        assert_eq!(k.vmstat[SMP_CALLS_SHARING_IRQ], 0);
    }
}
