//! cond_resched() inside direct reclaim: shrink_folio_list calls it at the top of its loop,
//! once per folio. On a kernel without full preemption (the test machine's 6.18 runs
//! preempt=none) a task in reclaim is preempted only there or at its return to user mode, so
//! a thread woken on the reclaimer's CPU that wins the wake-up check
//! (check_preempt_wakeup_fair → resched_curr) runs at the next folio, not after the whole
//! reclaim pass.
//!
//! The engine takes a direct-reclaim call inside one step of the reclaimer's task, and its
//! reclaim preemption window (engine.rs) lets other CPUs catch up at each folio but kept
//! every wake-up onto a busy CPU for after the step. Here, at the window of the cond_resched
//! point, a due timer of a kernel thread bound to the reclaimer's CPU
//! (`machine.background_kthreads`) fires in time order; if its wake-up preempts the
//! reclaimer, the thread's burst runs there and then, and the reclaimer resumes. The same
//! holds in any window for a kernel thread bound to another busy CPU the window steps: that
//! CPU is between two steps of its task, at a return to user mode.
//!
//! The scheduler tick also fires inside a long reclaim (a pass that scans a whole inactive
//! list of referenced folios takes tens of milliseconds): its update_curr (task_tick_fair →
//! entity_tick) finds the reclaimer's request used up and sets need_resched, and the next
//! cond_resched() calls __schedule. So a task already queued on the reclaimer's CPU — the
//! declared foreign load, woken while the reclaimer was protected — gets the CPU within a
//! tick, as on the host (its load tasks wait at most ~15 ms of a 20-ms period: the traces of
//! docs/results/2026-11-27-load-phase.md), instead of after the whole reclaim.
//!
//! Simplified: only background tasks (the declared load and those kernel threads: bursts
//! whose only blocking is their own sleep) run inside the reclaimer's step; a user task woken
//! there, a queued worker, kswapd and the flusher still wait for the step's end. When the
//! background task sleeps, the reclaimer gets its CPU back even if pick_eevdf would have
//! chosen a third task (its reclaim is on the call stack). A tick inside the step only
//! preempts: its load tracking and load balancing still run when the step ends.

use super::Class;
use crate::kernel::{CpuId, Kernel, TaskId};

impl Kernel {
    /// The CPU where the earliest timer, if it is due in the window of `reclaimer` (clock
    /// `until`; the window's other CPUs from `head` on), wakes a background task that can
    /// run now: the reclaimer's own CPU at its cond_resched (any background task), or, for a
    /// kernel thread, another busy CPU the window steps (between two of its steps it is at a
    /// return to user mode, also a preemption point). Idle targets are the window's own
    /// business (window_timer_due).
    pub(crate) fn window_kthread_timer(
        &self,
        reclaimer: CpuId,
        cond_resched: bool,
        until: u64,
        head: Option<u64>,
    ) -> Option<CpuId> {
        let &(at, t) = self.sched.timers.first()?;
        if at > until || head.is_some_and(|h| at > h) || !self.runs_at_tick_in_place(t) {
            return None;
        }
        if self.sched.io_waker.contains_key(&t) {
            return None;
        }
        let target = self.wake_target(&self.runner.rqs, t, self.timer_waker(t, at), at);
        let here = match self.cpus[target].curr {
            _ if target == reclaimer => cond_resched,
            // A user task of the load runs beside another CPU's steps only from its own
            // queue (the main loop); a kernel thread's burst there is short.
            Some(c) => self.runs_in_place(t) && !self.window_parks(target, c),
            None => false,
        };
        here.then_some(target)
    }

    /// A task that can run inside another's engine step: a background kernel thread (its
    /// burst only charges its CPU, and its sleep needs nothing but the run queues).
    fn runs_in_place(&self, t: TaskId) -> bool {
        self.tasks[t].kthread && self.sched.se[t].class == Class::Background
    }

    /// A task a tick inside a reclaimer's step may hand the CPU to: any background task (the
    /// declared foreign load too: its burst charges its CPU with its own mm loaded).
    fn runs_at_tick_in_place(&self, t: TaskId) -> bool {
        self.sched.se[t].class == Class::Background
    }

    /// The latest tick of `cpu` that fell due inside the running task's step and that no
    /// cond_resched() there has acted on yet.
    #[inline]
    fn tick_due_in_step(&self, cpu: CpuId) -> Option<u64> {
        let c = &self.cpus[cpu];
        let tick = self.cfg.tick_ns.max(1);
        let late = c.clock.checked_sub(c.next_tick)?;
        // Within a tick of it (the usual case) the latest is next_tick: no division.
        let latest = if late < tick {
            c.next_tick
        } else {
            c.next_tick + late / tick * tick
        };
        (latest > self.sched.reclaim_tick_seen[cpu]).then_some(latest)
    }

    /// Whether `reclaim_tick_preempt` on `cpu` has anything to do: a timer due by its clock
    /// (the walk's first condition) or a tick due in the step. Most of the cond_resched()
    /// calls have neither, and this test costs less than the call.
    #[inline]
    pub(crate) fn reclaim_tick_pending(&self, cpu: CpuId) -> bool {
        self.tick_due_in_step(cpu).is_some()
            || self
                .sched
                .timers
                .first()
                .is_some_and(|&(at, _)| at <= self.cpus[cpu].clock)
    }

    /// At a direct reclaimer's cond_resched() on `cpu`: if a tick fell due since the last
    /// one acted on here, the tick's update_curr and need_resched (scheduler_tick →
    /// task_tick_fair), then, if the pick is another task that can run in place,
    /// __schedule: it runs here until it sleeps or a later tick's pick gives the reclaimer
    /// the CPU back.
    #[inline(never)]
    pub(crate) fn reclaim_tick_preempt(&mut self, cpu: CpuId) {
        let Some(reclaimer) = self.cpus[cpu].curr else {
            return;
        };
        // Background tasks whose sleep ended meanwhile wake here first (a reclaim stepped
        // inside another CPU's window has no window of its own to fire their timers).
        while let Some((at, t)) = self.background_timer_due_on(cpu) {
            self.sched.timers.remove(&(at, t));
            self.with_rqs(|k, rqs| k.try_to_wake_up(rqs, t, k.timer_waker(t, at), at));
            self.run_in_reclaim(cpu, reclaimer);
        }
        let Some(at) = self.tick_due_in_step(cpu) else {
            return;
        };
        self.sched.reclaim_tick_seen[cpu] = at;
        let next = self.with_rqs(|k, rqs| {
            k.update_curr(cpu);
            if k.need_resched(rqs, cpu) {
                k.pick_next_task_fair(rqs, cpu, true)
            } else {
                None
            }
        });
        if !next.is_some_and(|n| n != reclaimer && self.runs_at_tick_in_place(n)) {
            return;
        }
        self.with_rqs(|k, rqs| k.resched(rqs, cpu, false));
        self.run_in_reclaim(cpu, reclaimer);
    }

    /// The earliest timer due by `cpu`'s clock that wakes a background task onto `cpu`
    /// (not a device completion's). Timers waking other CPUs stay for their own order.
    fn background_timer_due_on(&self, cpu: CpuId) -> Option<(u64, TaskId)> {
        let until = self.cpus[cpu].clock;
        // Nothing due: skip setting up the walk (most calls).
        if self.sched.timers.first().is_none_or(|&(at, _)| at > until) {
            return None;
        }
        self.sched
            .timers
            .iter()
            .take_while(|&&(at, _)| at <= until)
            .find(|&&(at, t)| {
                self.runs_at_tick_in_place(t)
                    && !self.sched.io_waker.contains_key(&t)
                    && self.wake_target(&self.runner.rqs, t, self.timer_waker(t, at), at) == cpu
            })
            .copied()
    }

    /// Background tasks given the CPU of `reclaimer` (a task in direct reclaim on `cpu`) at
    /// its cond_resched() run there until the pick is the reclaimer again (a tick in their
    /// run, task_tick_fair, may choose it) or a task that cannot run in place; then the
    /// reclaimer resumes, its reclaim being on the call stack.
    pub(crate) fn run_in_reclaim(&mut self, cpu: CpuId, reclaimer: TaskId) {
        while let Some(c) = self.cpus[cpu]
            .curr
            .filter(|&c| c != reclaimer && self.runs_at_tick_in_place(c))
        {
            if let Some(at) = self.tick_due_in_step(cpu) {
                self.sched.reclaim_tick_seen[cpu] = at;
                self.with_rqs(|k, rqs| k.tick_resched(rqs, cpu));
                continue;
            }
            self.with_rqs(|k, rqs| k.background_step(rqs, cpu, c));
        }
        self.run_woken_kthread(cpu, Some(reclaimer));
    }

    /// After a wake-up on `cpu` inside a reclaim preemption window: if it preempted, run the
    /// kernel thread until it sleeps. `resume`: the reclaimer, whose reclaim is on the call
    /// stack, gets the CPU back then even if pick_eevdf would have chosen a third task; any
    /// other CPU runs what its scheduler picks.
    pub(crate) fn run_woken_kthread(&mut self, cpu: CpuId, resume: Option<TaskId>) {
        while let Some(k) = self.cpus[cpu].curr.filter(|&k| Some(k) != resume) {
            if !self.runs_in_place(k) {
                break;
            }
            self.with_rqs(|kn, rqs| kn.background_step(rqs, cpu, k));
        }
        let Some(r) = resume.filter(|&r| self.cpus[cpu].curr != Some(r)) else {
            return;
        };
        self.with_rqs(|k, rqs| {
            if let Some(other) = k.cpus[cpu].curr {
                rqs.rq[cpu].push_front(other);
            }
            rqs.rq[cpu].retain(|&x| x != r);
            k.context_switch(cpu, Some(r));
        });
    }
}
