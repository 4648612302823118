//! Where a new task starts: wake_up_new_task → select_task_rq_fair with WF_FORK →
//! sched_balance_find_dst_cpu (kernel/sched/fair.c, the "slow path" that fork and exec take).
//!
//! From the parent's CPU, each domain level with SD_BALANCE_FORK (every non-NUMA level) picks
//! the idlest group (sched_balance_find_dst_group: group type first, then idle CPUs or load)
//! and, if that is not the local group, the idlest CPU in it (sched_balance_find_dst_group_cpu),
//! then descends below that CPU. The local group wins ties, so a fork stays on the parent's CPU
//! unless another group is clearly idler: with an idle CPU elsewhere and none here, the child
//! goes there; with every CPU busy, it mostly stays.
//!
//! Simplified (as in fair.rs): group types from task counts, not utilisation; among groups
//! with spare capacity and equal idle CPUs the lower load stands in for the lower
//! utilisation; an idle CPU is taken in CPU order (no idle states or idle stamps).

use super::fair::{GroupType, SgStats};
use super::pelt::{Avg, NICE_0_LOAD};
use super::RunQueues;
use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, TaskId};

impl Kernel {
    /// select_task_rq_fair(p, cpu, WF_FORK): the CPU a child forked on `cpu` starts on.
    pub fn select_task_rq_fork(
        &self,
        rqs: &RunQueues,
        t: TaskId,
        parent_cpu: CpuId,
        now: u64,
    ) -> CpuId {
        // sched_balance_find_dst_cpu from the highest domain with SD_BALANCE_FORK.
        let mut cpu = parent_cpu;
        let mut lvl = self.sched.sd[cpu].len().checked_sub(1);
        while let Some(l) = lvl {
            let Some(g) = self.sched_balance_find_dst_group(rqs, t, cpu, l, now) else {
                lvl = l.checked_sub(1);
                continue;
            };
            let new = self.sched_balance_find_dst_group_cpu(rqs, t, g, now);
            if new == cpu {
                lvl = l.checked_sub(1);
                continue;
            }
            // Balance again below the new CPU: its highest level narrower than this one.
            let weight = self.sched.sd[cpu][l].span.len();
            cpu = new;
            lvl = self.sched.sd[cpu]
                .iter()
                .rposition(|d| d.span.len() < weight);
        }
        self.select_fallback_rq(t, cpu)
    }

    /// sched_balance_find_dst_group: the idlest allowed group of `cpu`'s domain at `lvl`, or
    /// None to stay in the local group. Returns the group's CPUs.
    fn sched_balance_find_dst_group(
        &self,
        rqs: &RunQueues,
        t: TaskId,
        cpu: CpuId,
        lvl: usize,
        now: u64,
    ) -> Option<&[CpuId]> {
        let sd = &self.sched.sd[cpu][lvl];
        let mut local: Option<SgStats> = None;
        let mut idlest: Option<(usize, SgStats)> = None;
        for (i, g) in sd.groups.iter().enumerate() {
            if !g.iter().any(|&c| self.cpu_allowed(t, c)) {
                continue;
            }
            // update_sg_wakeup_stats: the child is on no run queue yet, so nothing to remove.
            let s = self.group_stats(rqs, g, now);
            if g.contains(&cpu) {
                local = Some(s);
            } else if idlest.is_none_or(|(_, b)| update_pick_idlest(&b, &s)) {
                idlest = Some((i, s));
            }
        }
        let (i, idlest) = idlest?;
        let group = Some(sd.groups[i].as_slice());
        let Some(local) = local else {
            return group;
        };
        if local.ty != idlest.ty {
            return if local.ty > idlest.ty { group } else { None };
        }
        match local.ty {
            GroupType::Overloaded | GroupType::FullyBusy => {
                // Only for a clear imbalance: scale_load_down(NICE_0_LOAD) × (pct − 100)/100.
                let imbalance = NICE_0_LOAD * (sd.imbalance_pct - 100) / 100;
                if idlest.avg_load >= local.avg_load + imbalance
                    || 100 * local.avg_load <= sd.imbalance_pct * idlest.avg_load
                {
                    return None;
                }
                group
            }
            // The group with more idle CPUs; the local one on a tie.
            GroupType::HasSpare if local.idle_cpus >= idlest.idle_cpus => None,
            GroupType::HasSpare => group,
        }
    }

    /// sched_balance_find_dst_group_cpu: an idle CPU of the group if there is one, else the
    /// least loaded one.
    fn sched_balance_find_dst_group_cpu(
        &self,
        rqs: &RunQueues,
        t: TaskId,
        g: &[CpuId],
        now: u64,
    ) -> CpuId {
        let allowed = || g.iter().copied().filter(|&c| self.cpu_allowed(t, c));
        allowed()
            .find(|&c| self.idle_cpu(rqs, c))
            .or_else(|| allowed().min_by_key(|&c| (self.cpu_load(c, now), c)))
            .unwrap_or(g[0])
    }

    /// wake_up_new_task for a child forked on `parent_cpu` at `now`: its load starts at full
    /// weight (init_entity_runnable_average), then the fork placement above, its utilisation
    /// from the CPU it lands on (post_init_entity_util_avg), then it is activated like a woken
    /// task (and may preempt the CPU's current task).
    pub fn wake_up_new_task(
        &mut self,
        rqs: &mut RunQueues,
        t: TaskId,
        parent_cpu: CpuId,
        now: u64,
    ) {
        let se = &mut self.sched.se[t];
        se.avg = Avg::new_task(now);
        se.sleeping = false;
        // p->recent_used_cpu = task_cpu(p): the parent's CPU, which the child inherits.
        se.recent_used_cpu = Some(parent_cpu);
        let cpu = self.select_task_rq_fork(rqs, t, parent_cpu, now);
        self.post_init_entity_util_avg(t, cpu, now);
        self.activate_task(rqs, t, cpu, now);
    }
}

/// update_pick_idlest: is `cand` idler than the current pick `best`?
fn update_pick_idlest(best: &SgStats, cand: &SgStats) -> bool {
    if cand.ty != best.ty {
        return cand.ty < best.ty;
    }
    match cand.ty {
        GroupType::Overloaded | GroupType::FullyBusy => cand.avg_load < best.avg_load,
        GroupType::HasSpare => {
            cand.idle_cpus > best.idle_cpus
                || (cand.idle_cpus == best.idle_cpus && cand.load < best.load)
        }
    }
}

/// One step of a starter task's script (Class::Starter): a process that does some work,
/// forks the processes it starts, and then waits for them (in waitpid) for the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartOp {
    /// CPU work of this many ns.
    Run(u64),
    /// fork(): the child (created asleep, never run) starts via wake_up_new_task.
    Fork(TaskId),
    /// Sleep for good (waitpid on children that run to the end).
    Wait,
    /// Write its pid to the memcg's cgroup.procs (cgroup_attach.rs); may sleep.
    AttachMemcg,
    /// The end of that write (pushed by AttachMemcg).
    AttachUnlock,
    /// Sleep this long; a timer on its CPU wakes it.
    Sleep(u64),
    /// Wake a sleeping task from this CPU (try_to_wake_up).
    Wake(TaskId),
    /// Sleep until another task wakes it.
    Block,
}

impl Kernel {
    /// A starter process (Class::Starter): a one-page mm of its own, outside the memcg,
    /// asleep until its parent forks it, or with `cpu` placed there at the start.
    pub fn starter_task(&mut self, cpu: Option<CpuId>) -> TaskId {
        let mm = self.mm_alloc(1, crate::kernel::Backing::Anon, false);
        let t = self.task_new(mm, None, 0, 1);
        self.tasks[t].helper = true;
        self.tasks[t].initial_cpu = cpu;
        let se = &mut self.sched.se[t];
        se.class = super::Class::Starter;
        se.sleeping = cpu.is_none();
        t
    }

    /// One engine step of a starter: run its script until its CPU work reaches the tick, it
    /// is preempted by a child it forked, or it waits.
    pub fn starter_step(&mut self, rqs: &mut RunQueues, cpu: CpuId, t: TaskId) {
        loop {
            let Some(op) = self.sched.starters.get_mut(&t).and_then(|q| q.pop_front()) else {
                self.starter_wait(rqs, cpu, t);
                return;
            };
            match op {
                StartOp::Run(ns) => {
                    let c = &self.cpus[cpu];
                    let run = ns.min(c.next_tick.saturating_sub(c.clock).max(1));
                    self.charge(cpu, run, Spent::Other);
                    if run < ns {
                        let q = self.sched.starters.get_mut(&t).expect("script");
                        q.push_front(StartOp::Run(ns - run));
                    }
                    return;
                }
                StartOp::Fork(child) => {
                    let now = self.cpus[cpu].clock;
                    self.wake_up_new_task(rqs, child, cpu, now);
                    if self.cpus[cpu].curr != Some(t) {
                        return;
                    }
                }
                StartOp::Wait => {
                    self.starter_wait(rqs, cpu, t);
                    return;
                }
                StartOp::AttachMemcg => {
                    // Either way it charged CPU time: the next op runs at a later step.
                    self.cgroup_attach(rqs, cpu, t);
                    return;
                }
                StartOp::AttachUnlock => {
                    self.cgroup_attach_unlock(rqs, cpu, t);
                    return;
                }
                StartOp::Sleep(ns) => {
                    let at = self.cpus[cpu].clock + ns;
                    self.block_task(rqs, cpu, Some(at));
                    return;
                }
                StartOp::Wake(w) => {
                    let now = self.cpus[cpu].clock;
                    self.try_to_wake_up(rqs, w, cpu, now);
                    if self.cpus[cpu].curr != Some(t) {
                        return;
                    }
                }
                StartOp::Block => {
                    self.block_task(rqs, cpu, None);
                    return;
                }
            }
        }
    }

    fn starter_wait(&mut self, rqs: &mut RunQueues, cpu: CpuId, t: TaskId) {
        self.sched.starters.remove(&t);
        self.tasks[t].done = true;
        self.schedule(rqs, cpu);
    }
}
