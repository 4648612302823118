//! The scheduler model (kernel/sched): per-CPU run queues, round-robin time slices at the tick,
//! and a seeded migration policy for unpinned tasks.
//!
//! Policy (documented in docs/sim-model.md): at each scheduler tick of a CPU running an
//! unpinned task, with probability `sim.migrate_per_tick` (the task is alone on its CPU) or
//! `sim.migrate_per_tick_shared` (other tasks wait on its run queue) the task moves to a
//! uniformly chosen other CPU (load balancing and wake-up placement, abstracted). A CPU with more than one task
//! rotates them every tick. A CPU whose queue empties pulls a task from the longest queue
//! (idle balance), or runs the idle task in lazy TLB mode.

use crate::kernel::{CpuId, Kernel, TaskId};
use rand::Rng;
use std::collections::VecDeque;

#[derive(Default)]
pub struct RunQueues {
    pub rq: Vec<VecDeque<TaskId>>,
}

impl RunQueues {
    pub fn new(cpus: usize) -> RunQueues {
        RunQueues {
            rq: vec![VecDeque::new(); cpus],
        }
    }
}

impl Kernel {
    /// context_switch to `next` (None = the idle task, lazy TLB).
    pub fn context_switch(&mut self, cpu: CpuId, next: Option<TaskId>) {
        if let Some(prev) = self.cpus[cpu].curr {
            self.tasks[prev].cpu = None;
        }
        self.cpus[cpu].curr = next;
        match next {
            Some(t) => {
                self.tasks[t].cpu = Some(cpu);
                let mm = self.tasks[t].mm;
                self.charge(cpu, self.cost.context_switch);
                if self.tasks[t].kthread {
                    // A kernel thread has no mm: enter_lazy_tlb keeps the previous one loaded.
                    self.switch_mm(cpu, None);
                } else {
                    self.switch_mm(cpu, Some(mm));
                }
            }
            None => self.switch_mm(cpu, None),
        }
    }

    /// Put a task on a CPU: run it now if the CPU is idle, else queue it.
    pub fn enqueue(&mut self, rqs: &mut RunQueues, cpu: CpuId, t: TaskId, now: u64) {
        if self.cpus[cpu].curr.is_none() {
            let c = &mut self.cpus[cpu];
            if c.clock < now {
                c.clock = now;
            }
            while c.next_tick <= c.clock {
                c.next_tick += self.cfg.tick_ns;
            }
            self.context_switch(cpu, Some(t));
        } else {
            rqs.rq[cpu].push_back(t);
        }
    }

    /// The current task stops for good (or leaves): pick the next one.
    pub fn schedule(&mut self, rqs: &mut RunQueues, cpu: CpuId) {
        let next = rqs.rq[cpu].pop_front().or_else(|| {
            // Idle balance: pull an unpinned task from the longest queue.
            let (src, len) = rqs
                .rq
                .iter()
                .enumerate()
                .map(|(i, q)| {
                    (
                        i,
                        q.iter()
                            .filter(|&&t| self.tasks[t].pinned.is_none())
                            .count(),
                    )
                })
                .max_by_key(|&(i, n)| (n, std::cmp::Reverse(i)))?;
            if len == 0 {
                return None;
            }
            let pos = rqs.rq[src]
                .iter()
                .position(|&t| self.tasks[t].pinned.is_none())?;
            rqs.rq[src].remove(pos)
        });
        self.context_switch(cpu, next);
    }

    /// scheduler_tick on `cpu`: time slice rotation and the migration policy.
    pub fn scheduler_tick(&mut self, rqs: &mut RunQueues, cpu: CpuId) {
        self.cpus[cpu].next_tick += self.cfg.tick_ns;
        let Some(curr) = self.cpus[cpu].curr else {
            return;
        };
        let now = self.cpus[cpu].clock;
        // The load balancer moves a task far more often when it shares its CPU with other
        // runnable tasks than when it is alone there (both rates measured, config.rs).
        let p = if rqs.rq[cpu].is_empty() {
            self.cfg.migrate_per_tick
        } else {
            self.cfg.migrate_per_tick_shared
        };
        if self.tasks[curr].pinned.is_none()
            && self.nr_cpus() > 1
            && p > 0.0
            && self.rng.gen_bool(p)
        {
            let mut dst = self.rng.gen_range(0..self.nr_cpus() - 1);
            if dst >= cpu {
                dst += 1;
            }
            // Swap with the destination's current task if it is unpinned, as a balancer
            // keeping both CPUs busy would.
            let other = self.cpus[dst].curr;
            self.schedule_out(rqs, cpu);
            if let Some(o) = other {
                if self.tasks[o].pinned.is_none() && rqs.rq[dst].is_empty() {
                    self.cpus[dst].curr = None;
                    self.tasks[o].cpu = None;
                    self.context_switch(dst, Some(curr));
                    self.enqueue(rqs, cpu, o, now);
                    return;
                }
            }
            // The balancer keeps the queues even: a task waiting on the destination comes
            // back in exchange (CFS would correct a 1:3 split at its next balance pass).
            if let Some(pos) = rqs.rq[dst]
                .iter()
                .position(|&t| self.tasks[t].pinned.is_none())
            {
                let o = rqs.rq[dst].remove(pos).expect("position is in range");
                self.enqueue(rqs, cpu, o, now);
            }
            self.enqueue(rqs, dst, curr, now);
            return;
        }
        if let Some(next) = rqs.rq[cpu].pop_front() {
            rqs.rq[cpu].push_back(curr);
            self.context_switch(cpu, Some(next));
        }
    }

    /// Take the current task off `cpu` and run the next queued one (or idle).
    fn schedule_out(&mut self, rqs: &mut RunQueues, cpu: CpuId) {
        self.schedule(rqs, cpu);
    }
}
