//! kernel/softirq.c: where the work an interrupt raises runs, and with it which CPU a task
//! that work wakes sees busy.
//!
//! An interrupt raises softirqs; irq_exit runs them at once (invoke_softirq → handle_softirqs)
//! on the interrupted CPU, idle or not. handle_softirqs takes the pending set, runs it with
//! interrupts enabled, and restarts while more was raised meanwhile, unless the CPU must
//! reschedule: with need_resched set (the round woke a task onto this CPU) whatever is
//! pending at the round's end goes to the CPU's ksoftirqd thread (wakeup_softirqd), a nice-0
//! kthread that runs when the scheduler picks it. A task woken from ksoftirqd is woken by a
//! busy CPU, so select_task_rq_fair sends it to an idle one where the interrupt's own round
//! would have kept it. Raised work still pending when the next interrupt exits runs there
//! (invoke_softirq does not wait for ksoftirqd since "softirq: Let ksoftirqd do its job" was
//! reverted in 6.5).
//!
//! The model's rounds, per CPU: a swap read's completion (BLOCK_SOFTIRQ, `swap_complete_page`
//! per page, registered when the read is submitted) and a timer-wheel wake-up of a kernel
//! thread (TIMER_SOFTIRQ, `softirq_timer`) each start a round or, raised inside one, extend
//! it. A wake-up onto the round's CPU (it was idle, or the woken task preempts) sets
//! need_resched; a completion raised after that waits for ksoftirqd, and so does a tick
//! (`sim.tick`; its TIMER, SCHED and RCU softirqs) that falls inside the rest of the round.
//!
//! Not modelled: write completions' rounds (their time is charged when submitted,
//! page_io.rs); softirqs raised by a tick outside a round; the kernel's 2 ms and 10-restart
//! limits (rounds here are tens of microseconds).

use std::collections::BTreeMap;

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, TaskId};
use crate::mm::vmstat::VmEventItem::*;
use crate::sched::background::BgSet;
use crate::sched::RunQueues;

/// One CPU's handle_softirqs in progress.
#[derive(Clone, Copy, Debug, Default)]
struct Round {
    /// When it ends (ns): its start plus the work it took on.
    end: u64,
    /// When it first woke a task onto its CPU (need_resched).
    resched_at: Option<u64>,
}

/// Softirq state, per CPU.
#[derive(Clone, Debug)]
pub struct Softirq {
    round: Vec<Round>,
    /// ksoftirqd/N, once the model has woken it.
    ksoftirqd: Vec<Option<TaskId>>,
    /// Tasks whose wake-up waits in work left to ksoftirqd.
    deferred: Vec<Vec<TaskId>>,
    /// ksoftirqd's wake-up timer, if armed.
    armed: Vec<Option<u64>>,
    /// BLOCK_SOFTIRQ work of the swap reads completing on the CPU, by completion time.
    block_work: Vec<BTreeMap<u64, u64>>,
}

impl Softirq {
    pub fn new(nr_cpus: usize) -> Softirq {
        Softirq {
            round: vec![Round::default(); nr_cpus],
            ksoftirqd: vec![None; nr_cpus],
            deferred: vec![Vec::new(); nr_cpus],
            armed: vec![None; nr_cpus],
            block_work: vec![BTreeMap::new(); nr_cpus],
        }
    }

    /// Whether `t` is a ksoftirqd thread.
    pub fn is_ksoftirqd(&self, t: TaskId) -> bool {
        self.ksoftirqd.contains(&Some(t))
    }
}

/// Whether a tick (a multiple of `tick`) falls strictly between `a` and `b`.
pub fn tick_between(a: u64, b: u64, tick: u64) -> bool {
    tick > 0 && b > a + 1 && (b - 1) / tick > a / tick
}

impl Kernel {
    /// A swap read of `pages` submitted to complete at `done` with its interrupt on `cpu`:
    /// its BLOCK_SOFTIRQ work there (blk_mq_complete_request on a one-queue device, then the
    /// bio's end_io per folio).
    pub(crate) fn softirq_block_queued(&mut self, cpu: CpuId, done: u64, pages: u64) {
        *self.softirq.block_work[cpu].entry(done).or_insert(0) +=
            pages * self.cost.swap_complete_page;
    }

    /// The BLOCK work raised on `cpu` at `at` (reads completing then); earlier entries,
    /// reads nobody waited for, are dropped.
    fn softirq_block_work(&mut self, cpu: CpuId, at: u64) -> u64 {
        let m = &mut self.softirq.block_work[cpu];
        let mut work = 0;
        while let Some(e) = m.first_entry().filter(|e| *e.key() <= at) {
            let (done, w) = e.remove_entry();
            if done == at {
                work = w;
            }
        }
        work
    }

    /// A softirq raised on `cpu` at `at` by an interrupt that completes a swap read (`io`)
    /// or fires a timer: whether its work runs now (at irq exit, or in the round in progress)
    /// rather than in ksoftirqd. A new round also runs what an earlier one left pending.
    pub(crate) fn softirq_raise(
        &mut self,
        rqs: &mut RunQueues,
        cpu: CpuId,
        at: u64,
        io: bool,
    ) -> bool {
        let work = if io {
            self.softirq_block_work(cpu, at)
        } else {
            self.cost.softirq_timer
        };
        let r = self.softirq.round[cpu];
        if at >= r.end {
            self.softirq.round[cpu] = Round {
                end: at + work,
                resched_at: None,
            };
            // invoke_softirq at this interrupt's exit runs what ksoftirqd has not yet run.
            for t in std::mem::take(&mut self.softirq.deferred[cpu]) {
                self.softirq_wake(rqs, t, cpu, at);
            }
            return true;
        }
        if r.resched_at.is_some_and(|w| w < at) {
            // Raised during a round that set need_resched: pending at its end.
            self.vmstat.count_vm_event(SOFTIRQ_LEFT_TO_KSOFTIRQD);
            self.wakeup_softirqd(cpu, r.end);
            return false;
        }
        // handle_softirqs' restart takes it in the same round.
        self.softirq.round[cpu].end += work;
        true
    }

    /// A task woken by a softirq on `cpu` at `at`: if it lands there (the CPU was idle, or it
    /// preempts), need_resched is set in the round; a tick later in the round leaves its
    /// softirqs to ksoftirqd.
    pub(crate) fn softirq_woke(&mut self, cpu: CpuId, at: u64) {
        let r = &mut self.softirq.round[cpu];
        if at >= r.end || r.resched_at.is_some() {
            return;
        }
        r.resched_at = Some(at);
        let end = r.end;
        if tick_between(at, end, self.cfg.tick_ns) {
            self.vmstat.count_vm_event(SOFTIRQ_TICKS_LEFT_TO_KSOFTIRQD);
            self.wakeup_softirqd(cpu, end);
        }
    }

    /// A task's wake-up from a softirq on `cpu` (try_to_wake_up from the interrupted context).
    fn softirq_wake(&mut self, rqs: &mut RunQueues, t: TaskId, cpu: CpuId, at: u64) {
        if self.sched.se[t].sleeping {
            self.try_to_wake_up(rqs, t, cpu, at);
        }
    }

    /// A wake-up of `t`, which sleeps on a completion whose softirq was left to ksoftirqd on
    /// `cpu`: ksoftirqd (or the next interrupt's round) wakes it.
    pub(crate) fn softirq_defer_wakeup(&mut self, cpu: CpuId, t: TaskId) {
        self.softirq.deferred[cpu].push(t);
    }

    /// wakeup_softirqd at `at` (the round's end): ksoftirqd/N wakes then, unless it is awake.
    fn wakeup_softirqd(&mut self, cpu: CpuId, at: u64) {
        let t = match self.softirq.ksoftirqd[cpu] {
            Some(t) => t,
            None => {
                let t = self.kworker_spawn(cpu, 0, BgSet::Ksoftirqd);
                self.softirq.ksoftirqd[cpu] = Some(t);
                t
            }
        };
        if !self.sched.se[t].sleeping || self.softirq.armed[cpu].is_some() {
            return;
        }
        self.vmstat.count_vm_event(KSOFTIRQD_WAKEUPS);
        self.sched.timers.insert((at, t));
        self.softirq.armed[cpu] = Some(at);
    }

    /// One engine step of ksoftirqd on `cpu` (run_ksoftirqd): the pending softirqs run,
    /// waking the tasks whose completions were left to it (from a busy CPU); it sleeps when
    /// nothing is pending.
    pub(crate) fn ksoftirqd_step(&mut self, rqs: &mut RunQueues, cpu: CpuId, i: usize) {
        if self.sched.bg_state[i].left_ns == 0 {
            self.softirq.armed[cpu] = None;
            let now = self.cpus[cpu].clock;
            let tasks = std::mem::take(&mut self.softirq.deferred[cpu]);
            if self.sched.bg_state[i].awake && tasks.is_empty() {
                self.sched.bg_state[i].awake = false;
                self.block_task(rqs, cpu, None);
                return;
            }
            self.vmstat.count_vm_event(KSOFTIRQD_RUNS);
            for t in tasks {
                self.vmstat.count_vm_event(KSOFTIRQD_TASK_WAKEUPS);
                self.softirq_wake(rqs, t, cpu, now);
            }
            let st = &mut self.sched.bg_state[i];
            st.awake = true;
            st.left_ns = self.cost.ksoftirqd_run;
        }
        let run = self.background_slice(cpu, self.sched.bg_state[i].left_ns);
        self.charge(cpu, run, Spent::Other);
        self.sched.bg_state[i].left_ns -= run;
    }
}

#[cfg(test)]
mod tests {
    use super::tick_between;

    #[test]
    fn a_tick_counts_only_strictly_inside_the_span() {
        assert!(tick_between(3_999_000, 4_001_000, 4_000_000));
        assert!(!tick_between(4_000_000, 4_010_000, 4_000_000));
        assert!(!tick_between(3_990_000, 4_000_000, 4_000_000));
        assert!(!tick_between(100, 200, 4_000_000));
        assert!(!tick_between(100, 10_000_000, 0));
    }
}
