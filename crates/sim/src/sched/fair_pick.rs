//! fair.c's choice of the next task (EEVDF), hierarchically: every cfs_rq (a CPU's root, and
//! each group's on that CPU) holds entities with a vruntime and a virtual deadline.
//! update_curr advances the running task's vruntime, and its group entity's on the root, by
//! the time it ran scaled by NICE_0_LOAD / weight (calc_delta_fair); when an entity's
//! vruntime reaches its deadline, update_deadline gives it a new request (deadline =
//! vruntime + calc_delta_fair(slice)) and asks for a reschedule. pick_eevdf takes, at the
//! root and then inside a picked group, the eligible entity (vruntime at or below the
//! cfs_rq's weighted average) with the earliest deadline; the running entity stays while it
//! is eligible and inside its protected slice (RUN_TO_PARITY: vprot = its deadline when it
//! was picked, set_protect_slice).
//! A woken task preempts the running one (check_preempt_wakeup_fair) when pick_eevdf at the
//! level where their hierarchies meet would choose it, or when update_curr found the running
//! entity's request used up or its protection over at a level that holds others (then
//! pick_eevdf decides, as at the tick).
//!
//! Placement and lag (place_entity, update_entity_lag) are in fair_place.rs.
//!
//! Simplified: every entity has the base slice (no custom slices, so PREEMPT_SHORT never
//! applies); the need for a reschedule is one flag per CPU, acted on at the next tick or
//! wake-up check, whichever level raised it. Ties in deadline go to queue order.

use super::RunQueues;
use crate::kernel::{CpuId, Kernel, TaskId};

/// need_resched bits: the root cfs_rq's level asked (for the running task, or its group's
/// entity), or the running task's group cfs_rq did.
pub const RESCHED_ROOT: u8 = 1;
pub const RESCHED_GROUP: u8 = 2;

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

/// One entity of a cfs_rq as pick_eevdf sees it.
#[derive(Clone, Copy, Debug)]
pub struct Entity<E> {
    pub id: E,
    pub vruntime: u64,
    pub weight: u64,
    pub deadline: u64,
}

/// A cfs_rq's runnable entities: the queued ones in queue order, and the running one (on
/// this cfs_rq and runnable) with its vprot.
pub struct Level<E> {
    pub queued: Vec<Entity<E>>,
    pub curr: Option<(Entity<E>, u64)>,
}

impl<E: Copy + PartialEq> Level<E> {
    fn all(&self) -> impl Iterator<Item = &Entity<E>> {
        self.queued.iter().chain(self.curr.iter().map(|(c, _)| c))
    }

    /// (Σ w·v, Σ w) over every runnable entity, in 128 bits.
    fn sums(&self) -> (i128, i128) {
        self.all().fold((0, 0), |(n, d), e| {
            (
                n + i128::from(e.vruntime) * i128::from(e.weight),
                d + i128::from(e.weight),
            )
        })
    }

    /// avg_vruntime and the summed weight, or None if the cfs_rq is empty.
    pub fn avg_load(&self) -> Option<(u64, u64)> {
        let (num, den) = self.sums();
        (den > 0).then(|| ((num / den) as u64, den as u64))
    }

    /// vruntime_eligible: Σ w_i·(v_i − v) ≥ 0, exactly (no division).
    pub fn eligible(&self, vruntime: u64) -> bool {
        let (num, den) = self.sums();
        i128::from(vruntime) * den <= num
    }

    /// pick_eevdf: a lone entity; else the running entity while it is eligible and
    /// protected; else the eligible queued entity with the earliest deadline, unless the
    /// running entity is eligible with an earlier one.
    pub fn pick_eevdf(&self) -> Option<E> {
        let n = self.queued.len() + usize::from(self.curr.is_some());
        if n <= 1 {
            return self
                .curr
                .map(|(c, _)| c.id)
                .or(self.queued.first().map(|e| e.id));
        }
        let curr = self.curr.filter(|(c, _)| self.eligible(c.vruntime));
        if let Some((c, vprot)) = curr {
            if c.vruntime < vprot {
                return Some(c.id);
            }
        }
        let mut best: Option<&Entity<E>> = None;
        for e in self.queued.iter().filter(|e| self.eligible(e.vruntime)) {
            if best.is_none_or(|b| e.deadline < b.deadline) {
                best = Some(e);
            }
        }
        match (best, curr) {
            (Some(b), Some((c, _))) if c.deadline < b.deadline => Some(c.id),
            (Some(b), _) => Some(b.id),
            (None, Some((c, _))) => Some(c.id),
            // The smallest vruntime is always eligible; kept for a cfs_rq of zero weights.
            (None, None) => self.queued.first().map(|e| e.id),
        }
    }
}

impl Kernel {
    /// The root-level entity a task belongs to.
    pub fn root_entity(&self, t: TaskId) -> RootEntity {
        match self.task_group(t) {
            Some(g) => RootEntity::Group(g),
            None => RootEntity::Task(t),
        }
    }

    /// A root entity's state on `cpu` (a group's weight is its share there).
    fn root_state(&self, e: RootEntity, cpu: CpuId) -> Entity<RootEntity> {
        match e {
            RootEntity::Task(t) => self.task_state(t).map_id(|_| e),
            RootEntity::Group(g) => {
                let grp = &self.sched.groups[g];
                Entity {
                    id: e,
                    vruntime: grp.se_vruntime[cpu],
                    weight: self
                        .calc_group_shares(g, &self.group_load(g, cpu, self.cpus[cpu].clock)),
                    deadline: grp.se_deadline[cpu],
                }
            }
        }
    }

    fn root_vprot(&self, e: RootEntity, cpu: CpuId) -> u64 {
        match e {
            RootEntity::Task(t) => self.sched.se[t].vprot,
            RootEntity::Group(g) => self.sched.groups[g].se_vprot[cpu],
        }
    }

    fn task_state(&self, t: TaskId) -> Entity<TaskId> {
        let se = &self.sched.se[t];
        Entity {
            id: t,
            vruntime: se.vruntime,
            weight: se.weight,
            deadline: se.deadline,
        }
    }

    /// `cpu`'s root cfs_rq. `with_curr`: the running task is runnable (a tick or a wake-up),
    /// else it is leaving, and its group entity stays the root's running entity only while
    /// the group has other tasks queued there.
    pub fn root_level(&self, rqs: &RunQueues, cpu: CpuId, with_curr: bool) -> Level<RootEntity> {
        let curr_root = self.cpus[cpu]
            .curr
            .map(|c| self.root_entity(c))
            .filter(|&e| with_curr || rqs.rq[cpu].iter().any(|&t| self.root_entity(t) == e));
        let mut seen: Vec<RootEntity> = Vec::new();
        for &t in &rqs.rq[cpu] {
            let e = self.root_entity(t);
            if Some(e) != curr_root && !seen.contains(&e) {
                seen.push(e);
            }
        }
        Level {
            queued: seen.into_iter().map(|e| self.root_state(e, cpu)).collect(),
            curr: curr_root.map(|e| (self.root_state(e, cpu), self.root_vprot(e, cpu))),
        }
    }

    /// Group `g`'s cfs_rq on `cpu` (`with_curr` as for root_level).
    pub fn group_level(
        &self,
        rqs: &RunQueues,
        cpu: CpuId,
        g: usize,
        with_curr: bool,
    ) -> Level<TaskId> {
        let in_g = |t: TaskId| self.task_group(t) == Some(g);
        let curr = self.cpus[cpu]
            .curr
            .filter(|&c| with_curr && in_g(c))
            .map(|c| (self.task_state(c), self.sched.se[c].vprot));
        Level {
            queued: rqs.rq[cpu]
                .iter()
                .copied()
                .filter(|&t| in_g(t))
                .map(|t| self.task_state(t))
                .collect(),
            curr,
        }
    }

    /// avg_vruntime and summed weight of the cfs_rq task `t` belongs to on `cpu` (its
    /// group's, else the root), the running task counted, or None if that is empty.
    pub(crate) fn task_cfs_avg_load(
        &self,
        rqs: &RunQueues,
        cpu: CpuId,
        t: TaskId,
    ) -> Option<(u64, u64)> {
        match self.task_group(t) {
            Some(g) => self.group_level(rqs, cpu, g, true).avg_load(),
            None => self.root_level(rqs, cpu, true).avg_load(),
        }
    }

    /// update_curr: charge the running task's time since the last update to its vruntime
    /// and, in a group, to the group entity's vruntime on this CPU (at the entity's current
    /// weight, calc_group_shares); update_deadline at each level, and a used-up request asks
    /// for a reschedule (need_resched).
    pub fn update_curr(&mut self, cpu: CpuId) {
        let Some(t) = self.cpus[cpu].curr else {
            return;
        };
        let now = self.cpus[cpu].clock;
        let slice = super::Sched::base_slice_ns(self.nr_cpus());
        let se = &mut self.sched.se[t];
        let delta = now.saturating_sub(se.vr_stamp);
        se.vr_stamp = now;
        if delta == 0 {
            return;
        }
        se.vruntime += calc_delta_fair(delta, se.weight);
        // fair.c update_curr at each level of the hierarchy: a used-up request
        // (update_deadline) or the end of the protected slice asks for a reschedule —
        // `resched || !protect_slice(curr)` — if that cfs_rq holds others (nr_queued > 1,
        // tested where the flag is read: need_resched).
        let ask = |used_up: bool, vruntime: u64, vprot: u64| used_up || vruntime >= vprot;
        let used_up = update_deadline(
            se.vruntime,
            &mut se.deadline,
            calc_delta_fair(slice, se.weight),
        );
        let own = ask(used_up, se.vruntime, se.vprot);
        let mut levels = 0;
        match self.task_group(t) {
            None => levels |= u8::from(own) * RESCHED_ROOT,
            Some(g) => {
                levels |= u8::from(own) * RESCHED_GROUP;
                let w = self.calc_group_shares(g, &self.group_load(g, cpu, now));
                self.reweight_group_entity(g, cpu, w);
                let grp = &mut self.sched.groups[g];
                grp.se_vruntime[cpu] += calc_delta_fair(delta, w);
                let used_up = update_deadline(
                    grp.se_vruntime[cpu],
                    &mut grp.se_deadline[cpu],
                    calc_delta_fair(slice, w),
                );
                let root = ask(used_up, grp.se_vruntime[cpu], grp.se_vprot[cpu]);
                levels |= u8::from(root) * RESCHED_ROOT;
            }
        }
        self.sched.need_resched[cpu] |= levels;
    }

    /// TIF_NEED_RESCHED as update_curr leaves it: a level of the running task's hierarchy
    /// asked for a reschedule and holds another runnable entity there.
    pub fn need_resched(&self, rqs: &RunQueues, cpu: CpuId) -> bool {
        let asked = self.sched.need_resched[cpu];
        let Some(curr) = self.cpus[cpu].curr else {
            return false;
        };
        let root = asked & RESCHED_ROOT != 0 && !self.root_level(rqs, cpu, true).queued.is_empty();
        let group = asked & RESCHED_GROUP != 0
            && self
                .task_group(curr)
                .is_some_and(|g| rqs.rq[cpu].iter().any(|&o| self.task_group(o) == Some(g)));
        root || group
    }

    /// reweight_entity for group `g`'s entity on `cpu` (update_cfs_group): when its weight
    /// changes from the one it was placed or last reweighted at, its deadline stays the same
    /// request in real time, so the virtual distance to it scales by old / new weight.
    /// Simplified: its lag is not rescaled (the entity keeps its vruntime).
    pub fn reweight_group_entity(&mut self, g: usize, cpu: CpuId, w: u64) {
        let grp = &mut self.sched.groups[g];
        let old = std::mem::replace(&mut grp.se_weight[cpu], w);
        if old == 0 || old == w {
            return;
        }
        let v = grp.se_vruntime[cpu];
        let rel = grp.se_deadline[cpu].saturating_sub(v);
        grp.se_deadline[cpu] = v + (u128::from(rel) * u128::from(old) / u128::from(w)) as u64;
    }

    /// pick_next_task_fair: pick_eevdf on the root cfs_rq, then (a group) on the group's.
    /// `with_curr`: the running task competes (a tick or a wake-up preemption), else it is
    /// leaving.
    pub fn pick_next_task_fair(
        &self,
        rqs: &RunQueues,
        cpu: CpuId,
        with_curr: bool,
    ) -> Option<TaskId> {
        match self.root_level(rqs, cpu, with_curr).pick_eevdf()? {
            RootEntity::Task(t) => Some(t),
            RootEntity::Group(g) => self.group_level(rqs, cpu, g, with_curr).pick_eevdf(),
        }
    }

    /// check_preempt_wakeup_fair for `woken`, already queued on `cpu`: update_curr, then
    /// pick_eevdf where the woken task's and the running task's hierarchies meet
    /// (find_matching_se: their common group's cfs_rq, else the root). Preempt when that
    /// picks the woken task's entity or update_curr found the running request used up.
    pub fn wakeup_preempt_entity(&mut self, rqs: &RunQueues, cpu: CpuId, woken: TaskId) -> bool {
        let Some(curr) = self.cpus[cpu].curr else {
            return true;
        };
        self.update_curr(cpu);
        let (gw, gc) = (self.task_group(woken), self.task_group(curr));
        let picked = match gw {
            Some(g) if gw == gc => self.group_level(rqs, cpu, g, true).pick_eevdf() == Some(woken),
            _ => self.root_level(rqs, cpu, true).pick_eevdf() == Some(self.root_entity(woken)),
        };
        picked || self.need_resched(rqs, cpu)
    }
}

impl<E> Entity<E> {
    fn map_id<F>(self, f: impl Fn(E) -> F) -> Entity<F> {
        Entity {
            id: f(self.id),
            vruntime: self.vruntime,
            weight: self.weight,
            deadline: self.deadline,
        }
    }
}

/// update_deadline: once `vruntime` reaches `deadline`, a new request of `vslice` starts
/// there (vd = ve + r/w); returns whether it did (the request was used up).
pub fn update_deadline(vruntime: u64, deadline: &mut u64, vslice: u64) -> bool {
    if vruntime < *deadline {
        return false;
    }
    *deadline = vruntime + vslice;
    true
}
