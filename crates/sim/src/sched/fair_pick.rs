//! fair.c's choice of the next task, hierarchically: every cfs_rq (a CPU's root, and each
//! group's on that CPU) orders its entities by vruntime; update_curr advances the running
//! task's vruntime, and its group entity's on the root, by the time it ran scaled by
//! NICE_0_LOAD / weight (calc_delta_fair); pick_next_task_fair takes the root entity with the
//! smallest vruntime and, if that is a group, the group's task with the smallest vruntime.
//! An entity joining a cfs_rq (a wake-up, a migration, a group's first runnable task on a
//! CPU) is placed at the cfs_rq's weighted average vruntime (place_entity with zero lag).
//!
//! Simplified: EEVDF's deadline and eligibility are reduced to the smallest vruntime (which
//! is always eligible; with equal slices the two agree on the order of equal-weight entities
//! and both give each entity its weight's share over time), and a task's lag is not carried
//! across a sleep or a migration (it is placed at zero lag). Ties go to the entity that has
//! waited (queue order), the running task last.

use super::RunQueues;
use crate::kernel::{CpuId, Kernel, TaskId};

/// An entity on a CPU's root cfs_rq.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootEntity {
    Task(TaskId),
    Group(usize),
}

/// calc_delta_fair: `delta` ns of run time in virtual time at load weight `weight`.
pub fn calc_delta_fair(delta: u64, weight: u64) -> u64 {
    delta * super::pelt::NICE_0_LOAD / weight.max(1)
}

impl Kernel {
    /// The tasks on `cpu`'s cfs_rqs that can be picked: queued ones in queue order, then the
    /// running one (if `with_curr`).
    fn rq_candidates(&self, rqs: &RunQueues, cpu: CpuId, with_curr: bool) -> Vec<TaskId> {
        let mut v: Vec<TaskId> = rqs.rq[cpu].iter().copied().collect();
        if with_curr {
            v.extend(self.cpus[cpu].curr);
        }
        v
    }

    /// The root-level entity a task belongs to.
    pub fn root_entity(&self, t: TaskId) -> RootEntity {
        match self.task_group(t) {
            Some(g) => RootEntity::Group(g),
            None => RootEntity::Task(t),
        }
    }

    fn root_vruntime(&self, e: RootEntity, cpu: CpuId) -> u64 {
        match e {
            RootEntity::Task(t) => self.sched.se[t].vruntime,
            RootEntity::Group(g) => self.sched.groups[g].se_vruntime[cpu],
        }
    }

    /// update_curr: charge the running task's time since the last update to its vruntime
    /// and, in a group, to the group entity's vruntime on this CPU (at the entity's current
    /// weight, calc_group_shares).
    pub fn update_curr(&mut self, cpu: CpuId) {
        let Some(t) = self.cpus[cpu].curr else {
            return;
        };
        let now = self.cpus[cpu].clock;
        let se = &mut self.sched.se[t];
        let delta = now.saturating_sub(se.vr_stamp);
        se.vr_stamp = now;
        if delta == 0 {
            return;
        }
        se.vruntime += calc_delta_fair(delta, se.weight);
        if let Some(g) = self.task_group(t) {
            let rqs = self.group_rqs(g);
            let w = self.calc_group_shares(g, cpu, &rqs);
            self.sched.groups[g].se_vruntime[cpu] += calc_delta_fair(delta, w);
        }
    }

    /// avg_vruntime of `cpu`'s root cfs_rq (its runnable entities, weighted), or None if
    /// it has none.
    fn root_avg_vruntime(&self, rqs: &RunQueues, cpu: CpuId) -> Option<u64> {
        let mut seen: Vec<RootEntity> = Vec::new();
        for t in self.rq_candidates(rqs, cpu, true) {
            let e = self.root_entity(t);
            if !seen.contains(&e) {
                seen.push(e);
            }
        }
        let weighted = seen.iter().map(|&e| {
            let w = match e {
                RootEntity::Task(t) => self.sched.se[t].weight,
                RootEntity::Group(g) => self.calc_group_shares(g, cpu, &self.group_rqs(g)),
            };
            (self.root_vruntime(e, cpu), w)
        });
        weighted_avg(weighted)
    }

    /// avg_vruntime of group `g`'s cfs_rq on `cpu`, or None if it has no runnable task.
    fn group_avg_vruntime(&self, rqs: &RunQueues, cpu: CpuId, g: usize) -> Option<u64> {
        let v = self
            .rq_candidates(rqs, cpu, true)
            .into_iter()
            .filter(|&t| self.task_group(t) == Some(g))
            .map(|t| (self.sched.se[t].vruntime, self.sched.se[t].weight));
        weighted_avg(v)
    }

    /// place_entity for `t` about to join `cpu`'s run queue (not on it yet): its group's
    /// entity first, if the group had no runnable task there (enqueue_task_fair walks up and
    /// enqueues it), then the task, each at its cfs_rq's average vruntime (zero lag). An empty
    /// cfs_rq keeps the entity's own vruntime.
    pub fn place_entity(&mut self, rqs: &RunQueues, t: TaskId, cpu: CpuId) {
        self.update_curr(cpu);
        let g = self.task_group(t);
        if let Some(g) = g {
            let present = self
                .rq_candidates(rqs, cpu, true)
                .into_iter()
                .any(|o| o != t && self.task_group(o) == Some(g));
            if !present {
                if let Some(v) = self.root_avg_vruntime(rqs, cpu) {
                    self.sched.groups[g].se_vruntime[cpu] = v;
                }
            }
            if let Some(v) = self.group_avg_vruntime(rqs, cpu, g) {
                self.sched.se[t].vruntime = v;
            }
        } else if let Some(v) = self.root_avg_vruntime(rqs, cpu) {
            self.sched.se[t].vruntime = v;
        }
    }

    /// pick_next_task_fair: the root entity with the smallest vruntime, then (a group) its
    /// task with the smallest vruntime. `with_curr`: the running task competes (a tick or a
    /// wake-up preemption), else it is leaving.
    pub fn pick_next_task_fair(
        &self,
        rqs: &RunQueues,
        cpu: CpuId,
        with_curr: bool,
    ) -> Option<TaskId> {
        let cands = self.rq_candidates(rqs, cpu, with_curr);
        let best = self.pick_root(&cands, cpu)?;
        match best {
            RootEntity::Task(t) => Some(t),
            RootEntity::Group(g) => pick_min(
                cands
                    .iter()
                    .copied()
                    .filter(|&t| self.task_group(t) == Some(g)),
                |t| self.sched.se[t].vruntime,
            ),
        }
    }

    /// __pick_first_entity on the root cfs_rq over the candidates' root entities.
    fn pick_root(&self, cands: &[TaskId], cpu: CpuId) -> Option<RootEntity> {
        pick_min(cands.iter().map(|&t| self.root_entity(t)), |e| {
            self.root_vruntime(e, cpu)
        })
    }

    /// check_preempt_wakeup_fair's test: at the level where the woken task's and the
    /// running task's hierarchies meet (find_matching_se: their common group's cfs_rq, else
    /// the root), would the pick be the woken task's entity?
    pub fn wakeup_preempt_entity(&self, rqs: &RunQueues, cpu: CpuId, woken: TaskId) -> bool {
        let Some(curr) = self.cpus[cpu].curr else {
            return true;
        };
        let cands = self.rq_candidates(rqs, cpu, true);
        let (gw, gc) = (self.task_group(woken), self.task_group(curr));
        if gw.is_some() && gw == gc {
            pick_min(
                cands.into_iter().filter(|&t| self.task_group(t) == gw),
                |t| self.sched.se[t].vruntime,
            ) == Some(woken)
        } else {
            self.pick_root(&cands, cpu) == Some(self.root_entity(woken))
        }
    }
}

/// The first item with the smallest key (deterministic: order breaks ties).
fn pick_min<T: Copy>(items: impl Iterator<Item = T>, key: impl Fn(T) -> u64) -> Option<T> {
    let mut best: Option<(u64, T)> = None;
    for i in items {
        let k = key(i);
        if best.is_none_or(|(bk, _)| k < bk) {
            best = Some((k, i));
        }
    }
    best.map(|(_, i)| i)
}

/// Σ w·v / Σ w, in 128 bits.
fn weighted_avg(items: impl Iterator<Item = (u64, u64)>) -> Option<u64> {
    let (mut num, mut den) = (0u128, 0u128);
    for (v, w) in items {
        num += u128::from(v) * u128::from(w);
        den += u128::from(w);
    }
    (den > 0).then(|| (num / den) as u64)
}
