//! fair.c's placement of an entity joining a cfs_rq and what it keeps from the one it left:
//! its lag (update_entity_lag at dequeue; place_entity puts it back relative to the new
//! cfs_rq's average, PLACE_LAG), its virtual deadline (a new request after a sleep, half a
//! request for a new task, PLACE_DEADLINE_INITIAL; the same relative deadline after a
//! migration, PLACE_REL_DEADLINE), and the protected slice of the entity that gets the CPU
//! (set_protect_slice).
//!
//! Simplified: a sleeper behind the average (negative lag) would stay queued until picked
//! (DELAY_DEQUEUE) and then leave at zero lag (DELAY_ZERO): taken here as done before its
//! wake-up, so no sleeper keeps negative lag; a migrating task keeps its lag either way. A
//! group entity joins a CPU's root at zero lag with a fresh request.

use super::fair_pick::{calc_delta_fair, RootEntity};
use super::RunQueues;
use crate::kernel::{CpuId, Kernel, TaskId};

impl Kernel {
    /// calc_delta_fair(se->slice) for a task: its request in virtual time.
    fn vslice(&self, weight: u64) -> u64 {
        calc_delta_fair(super::Sched::base_slice_ns(self.nr_cpus()), weight)
    }

    /// entity_lag: avg_vruntime − vruntime of `t` on `cpu` (the task still counted there),
    /// clamped to ± calc_delta_fair(max(2·slice, TICK_NSEC)).
    fn entity_lag(&self, rqs: &RunQueues, cpu: CpuId, t: TaskId) -> Option<i64> {
        let (avg, _) = self.task_cfs_avg_load(rqs, cpu, t)?;
        let slice = super::Sched::base_slice_ns(self.nr_cpus());
        let se = &self.sched.se[t];
        let limit = i128::from(calc_delta_fair(
            (2 * slice).max(self.cfg.tick_ns),
            se.weight,
        ));
        let lag = i128::from(avg) - i128::from(se.vruntime);
        Some(lag.clamp(-limit, limit) as i64)
    }

    /// update_entity_lag for the running task `t` going to sleep on `cpu`; negative lag is
    /// dropped (DELAY_ZERO, above).
    pub fn update_entity_lag(&mut self, rqs: &RunQueues, cpu: CpuId, t: TaskId) {
        if let Some(lag) = self.entity_lag(rqs, cpu, t) {
            self.sched.se[t].vlag = lag.max(0);
        }
    }

    /// dequeue_entity for a migration (the balancer's detach_task, or the active balance's
    /// push of the running task) of `t` from `src`: it keeps its lag, negative too, and its
    /// deadline relative to its vruntime (PLACE_REL_DEADLINE). Call while `t` is still there.
    pub fn dequeue_migrating(&mut self, rqs: &RunQueues, src: CpuId, t: TaskId) {
        self.update_curr(src);
        let lag = self.entity_lag(rqs, src, t).unwrap_or(0);
        let se = &mut self.sched.se[t];
        se.vlag = lag;
        se.rel_deadline = Some(se.deadline.saturating_sub(se.vruntime));
    }

    /// set_protect_slice when `t` gets `cpu` after `prev` (RUN_TO_PARITY with equal slices:
    /// vprot = the deadline), and for its group entity when that is newly picked at the root
    /// (set_next_entity runs only where the hierarchies of prev and next differ).
    pub fn set_protect_slice(&mut self, cpu: CpuId, t: TaskId, prev: Option<TaskId>) {
        let se = &mut self.sched.se[t];
        se.vprot = se.deadline;
        let root = self.root_entity(t);
        if let RootEntity::Group(g) = root {
            if prev.map(|p| self.root_entity(p)) != Some(root) {
                let grp = &mut self.sched.groups[g];
                grp.se_vprot[cpu] = grp.se_deadline[cpu];
            }
        }
    }

    /// cancel_protect_slice for the running task of `cpu` and its group entity: a CPU that
    /// was idle when an interrupt woke several tasks picks among them all, and the one the
    /// model ran first has no protection yet.
    pub fn cancel_protect_slice(&mut self, cpu: CpuId) {
        let Some(t) = self.cpus[cpu].curr else {
            return;
        };
        let se = &mut self.sched.se[t];
        se.vprot = se.vprot.min(se.vruntime);
        if let RootEntity::Group(g) = self.root_entity(t) {
            let grp = &mut self.sched.groups[g];
            grp.se_vprot[cpu] = grp.se_vprot[cpu].min(grp.se_vruntime[cpu]);
        }
    }

    /// place_entity for `t` about to join `cpu`'s run queue (not on it yet): its group's
    /// entity first, if the group had no runnable task there (enqueue_task_fair walks up and
    /// enqueues it), at the root's average with a new request; then the task at its cfs_rq's
    /// average less its lag, the lag scaled by (load + w) / load so that adding it moves the
    /// average no further than the lag (PLACE_LAG). An empty cfs_rq keeps the entity's own
    /// vruntime. The deadline: the saved relative one after a migration, else a new request
    /// (half of one for a task never placed before). The lag is used once.
    pub fn place_entity(&mut self, rqs: &RunQueues, t: TaskId, cpu: CpuId) {
        self.update_curr(cpu);
        if let Some(g) = self.task_group(t) {
            let present = self.cpus[cpu]
                .curr
                .into_iter()
                .chain(rqs.rq[cpu].iter().copied())
                .any(|o| o != t && self.task_group(o) == Some(g));
            if !present {
                if let Some((v, _)) = self.root_level(rqs, cpu, true).avg_load() {
                    self.sched.groups[g].se_vruntime[cpu] = v;
                }
                // enqueue_entity attaches the task's load (update_load_avg, DO_ATTACH) and
                // reweights the group entity (update_cfs_group) before placing it: its weight,
                // and so its request in virtual time, counts the joining task on `cpu`.
                let now = self.cpus[cpu].clock;
                let w = self.calc_group_shares(g, &self.group_load_joining(g, t, cpu, now));
                let vslice = self.vslice(w);
                let grp = &mut self.sched.groups[g];
                grp.se_weight[cpu] = w;
                grp.se_deadline[cpu] = grp.se_vruntime[cpu] + vslice;
            }
        }
        let placed = self.task_cfs_avg_load(rqs, cpu, t);
        let vslice = self.vslice(self.sched.se[t].weight);
        let se = &mut self.sched.se[t];
        let vlag = std::mem::take(&mut se.vlag);
        if let Some((avg, load)) = placed {
            let lag = i128::from(vlag) * i128::from(load + se.weight) / i128::from(load.max(1));
            se.vruntime = (i128::from(avg) - lag).max(0) as u64;
        }
        se.deadline = match se.rel_deadline.take() {
            Some(rel) => se.vruntime + rel,
            None if se.last_cpu.is_none() => se.vruntime + vslice / 2,
            None => se.vruntime + vslice,
        };
    }
}
