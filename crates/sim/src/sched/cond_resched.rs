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
//! Simplified: only those kernel threads (a burst with no mm, no blocking but its own sleep)
//! run inside the reclaimer's step; a user task woken there, kswapd and the flusher still wait
//! for the step's end. When the thread sleeps, the reclaimer gets its CPU back even if
//! pick_eevdf would have chosen a third task (its reclaim is on the call stack).

use super::Class;
use crate::kernel::{CpuId, Kernel, TaskId};

impl Kernel {
    /// The CPU where the earliest timer, if it is due in the window of `reclaimer` (clock
    /// `until`; the window's other CPUs from `head` on), wakes a background kernel thread
    /// that can run now: the reclaimer's own CPU at its cond_resched, or another busy CPU
    /// the window steps (between two of its steps it is at a return to user mode, also a
    /// preemption point). Idle targets are the window's own business (window_timer_due).
    pub(crate) fn window_kthread_timer(
        &self,
        reclaimer: CpuId,
        cond_resched: bool,
        until: u64,
        head: Option<u64>,
    ) -> Option<CpuId> {
        let &(at, t) = self.sched.timers.first()?;
        if at > until || head.is_some_and(|h| at > h) || !self.runs_in_place(t) {
            return None;
        }
        if self.sched.io_waker.contains_key(&t) {
            return None;
        }
        let target = self.wake_target(&self.runner.rqs, t, self.timer_waker(t), at);
        let here = match self.cpus[target].curr {
            _ if target == reclaimer => cond_resched,
            Some(c) => !self.window_parks(target, c),
            None => false,
        };
        here.then_some(target)
    }

    /// A task that can run inside another's engine step: a background kernel thread (its
    /// burst only charges its CPU, and its sleep needs nothing but the run queues).
    fn runs_in_place(&self, t: TaskId) -> bool {
        self.tasks[t].kthread && self.sched.se[t].class == Class::Background
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
