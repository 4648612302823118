//! fair.c's choice of the next task, hierarchically: every cfs_rq (a CPU's root, and each
//! group's on that CPU) orders its entities by vruntime; update_curr advances the running
//! task's vruntime, and its group entity's on the root, by the time it ran scaled by
//! NICE_0_LOAD / weight (calc_delta_fair); pick_next_task_fair takes the root entity with the
//! smallest vruntime and, if that is a group, the group's task with the smallest vruntime.
//! A task joining a cfs_rq is placed relative to the cfs_rq's weighted average vruntime
//! (place_entity): a woken task keeps the lag it had when it went to sleep (PLACE_LAG,
//! update_entity_lag), a migrated task and a group entity come in at zero lag.
//! A woken task preempts the running one (check_preempt_wakeup_fair) when it would be the
//! pick and the running entity is not protected: pick_eevdf keeps the running entity while it
//! is eligible (vruntime at or below the average) and within its protected slice
//! (RUN_TO_PARITY, set_protect_slice: one base slice of virtual time from its pick).
//!
//! Simplified: EEVDF's virtual deadline is reduced to the smallest vruntime (which is always
//! eligible; with equal slices the two agree on the order of equal-weight entities and both
//! give each entity its weight's share over time); DELAY_DEQUEUE is reduced to its outcome
//! for a sleeper whose delayed dequeue completes before it wakes (zero lag, DELAY_ZERO); the
//! protection is the running task's own, also where the hierarchies meet at the root. Ties go
//! to the entity that has waited (queue order), the running task last.

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
        self.root_avg_load(rqs, cpu).map(|(v, _)| v)
    }

    /// avg_vruntime and the summed weight (avg_load plus curr's) of `cpu`'s root cfs_rq.
    fn root_avg_load(&self, rqs: &RunQueues, cpu: CpuId) -> Option<(u64, u64)> {
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
        self.group_avg_load(rqs, cpu, g).map(|(v, _)| v)
    }

    /// avg_vruntime and summed weight of group `g`'s cfs_rq on `cpu`.
    fn group_avg_load(&self, rqs: &RunQueues, cpu: CpuId, g: usize) -> Option<(u64, u64)> {
        let v = self
            .rq_candidates(rqs, cpu, true)
            .into_iter()
            .filter(|&t| self.task_group(t) == Some(g))
            .map(|t| (self.sched.se[t].vruntime, self.sched.se[t].weight));
        weighted_avg(v)
    }

    /// avg_vruntime and summed weight of the cfs_rq task `t` belongs to on `cpu` (its group's,
    /// else the root), or None if that is empty.
    fn task_cfs_avg_load(&self, rqs: &RunQueues, cpu: CpuId, t: TaskId) -> Option<(u64, u64)> {
        match self.task_group(t) {
            Some(g) => self.group_avg_load(rqs, cpu, g),
            None => self.root_avg_load(rqs, cpu),
        }
    }

    /// update_entity_lag for the running task `t` going to sleep: vlag = avg_vruntime −
    /// vruntime, clamped to ± one slice's worth of virtual time at its weight, at least a
    /// tick's (calc_delta_fair(max(2·slice, TICK_NSEC))). A sleeper behind the average (not
    /// eligible) stays queued until it is picked (DELAY_DEQUEUE) and then leaves at zero lag
    /// (DELAY_ZERO): taken here as done before its wake-up, so no sleeper keeps negative lag.
    pub fn update_entity_lag(&mut self, rqs: &RunQueues, cpu: CpuId, t: TaskId) {
        let Some((avg, _)) = self.task_cfs_avg_load(rqs, cpu, t) else {
            return;
        };
        let slice = super::Sched::base_slice_ns(self.nr_cpus());
        let limit = calc_delta_fair((2 * slice).max(self.cfg.tick_ns), self.sched.se[t].weight);
        let se = &mut self.sched.se[t];
        let lag = i128::from(avg) - i128::from(se.vruntime);
        let limit = i128::from(limit);
        se.vlag = lag.clamp(0, limit) as i64;
    }

    /// set_protect_slice: the running task may run one base slice of its virtual time from
    /// this pick before a wake-up can take the CPU (RUN_TO_PARITY, equal slices: vprot is
    /// the deadline, vruntime + calc_delta_fair(slice)).
    pub fn set_protect_slice(&mut self, t: TaskId) {
        let slice = super::Sched::base_slice_ns(self.nr_cpus());
        let se = &mut self.sched.se[t];
        se.vprot = se.vruntime + calc_delta_fair(slice, se.weight);
    }

    /// place_entity for `t` about to join `cpu`'s run queue (not on it yet): its group's
    /// entity first, if the group had no runnable task there (enqueue_task_fair walks up and
    /// enqueues it), at the root's average vruntime; then the task at its cfs_rq's average
    /// less its lag, the lag scaled by (load + w) / load so that adding it moves the average
    /// no further than the lag (PLACE_LAG). An empty cfs_rq keeps the entity's own vruntime.
    /// The lag is used once: a later placement (a migration) is at zero lag.
    pub fn place_entity(&mut self, rqs: &RunQueues, t: TaskId, cpu: CpuId) {
        self.update_curr(cpu);
        if let Some(g) = self.task_group(t) {
            let present = self
                .rq_candidates(rqs, cpu, true)
                .into_iter()
                .any(|o| o != t && self.task_group(o) == Some(g));
            if !present {
                if let Some(v) = self.root_avg_vruntime(rqs, cpu) {
                    self.sched.groups[g].se_vruntime[cpu] = v;
                }
            }
        }
        let placed = self.task_cfs_avg_load(rqs, cpu, t);
        let se = &mut self.sched.se[t];
        let vlag = std::mem::take(&mut se.vlag);
        if let Some((avg, load)) = placed {
            let lag = i128::from(vlag) * i128::from(load + se.weight) / i128::from(load.max(1));
            se.vruntime = (i128::from(avg) - lag).max(0) as u64;
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
    /// the root), would pick_eevdf choose the woken task's entity? It keeps the running
    /// entity while that is eligible and protected (protect_slice: vruntime < vprot).
    pub fn wakeup_preempt_entity(&mut self, rqs: &RunQueues, cpu: CpuId, woken: TaskId) -> bool {
        let Some(curr) = self.cpus[cpu].curr else {
            return true;
        };
        self.update_curr(cpu);
        let cands = self.rq_candidates(rqs, cpu, true);
        let (gw, gc) = (self.task_group(woken), self.task_group(curr));
        let (avg, curr_v, picked) = if gw.is_some() && gw == gc {
            let g = gw.unwrap_or_default();
            let picked = pick_min(
                cands.into_iter().filter(|&t| self.task_group(t) == gw),
                |t| self.sched.se[t].vruntime,
            ) == Some(woken);
            let avg = self.group_avg_vruntime(rqs, cpu, g);
            (avg, self.sched.se[curr].vruntime, picked)
        } else {
            let picked = self.pick_root(&cands, cpu) == Some(self.root_entity(woken));
            let curr_v = self.root_vruntime(self.root_entity(curr), cpu);
            (self.root_avg_vruntime(rqs, cpu), curr_v, picked)
        };
        // entity_eligible(curr) && protect_slice(curr): pick_eevdf returns curr.
        let eligible = avg.is_some_and(|a| curr_v <= a);
        let se = &self.sched.se[curr];
        if eligible && se.vruntime < se.vprot {
            return false;
        }
        picked
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

/// (Σ w·v / Σ w, Σ w), in 128 bits.
fn weighted_avg(items: impl Iterator<Item = (u64, u64)>) -> Option<(u64, u64)> {
    let (mut num, mut den) = (0u128, 0u128);
    for (v, w) in items {
        num += u128::from(v) * u128::from(w);
        den += u128::from(w);
    }
    (den > 0).then(|| ((num / den) as u64, den as u64))
}
