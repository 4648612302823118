//! fair.c's group scheduling (CONFIG_FAIR_GROUP_SCHED) for one level of task groups: a
//! group's per-CPU cfs_rq load, its entity's weight (calc_group_shares) and load, the root
//! cfs_rq's load (cpu_load) and a task's hierarchical load (task_h_load), which the balancer
//! and wake_affine_weight use.
//!
//! Simplified: the loads are read from the tasks' PELT averages when needed instead of being
//! propagated up the hierarchy at every update (tg->load_avg is the exact sum of the group's
//! per-CPU loads, without update_tg_load_avg's 1/64 hysteresis), and a group entity's load
//! average is its weight times the fraction of time its tasks on that CPU were runnable,
//! estimated as update_tg_cfs_load does ("assuming all tasks are equally runnable"): the
//! cfs_rq's load_avg over its tasks' weight.

use super::autogroup::MIN_SHARES;
use crate::kernel::{CpuId, Kernel, TaskId};

/// A group's cfs_rq on one CPU, as the balancer and calc_group_shares see it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupRq {
    /// cfs_rq->avg.load_avg: the PELT load of the group's tasks on this CPU (blocked ones
    /// included, decaying).
    pub load_avg: u64,
    /// cfs_rq->load.weight: the weight of the group's runnable tasks here.
    pub runnable_weight: u64,
    /// The weight of every task of the group whose CPU this is (runnable or blocked).
    pub task_weight: u64,
}

impl Kernel {
    /// Is `t` counted on `cpu`'s cfs_rqs (its task_cpu, and not finished)?
    fn on_cpu_rq(&self, t: TaskId, cpu: CpuId) -> bool {
        self.sched.se[t].last_cpu == Some(cpu) && !self.tasks[t].done
    }

    /// Group `g`'s cfs_rq on every CPU, as seen at `now`.
    pub fn group_rqs(&self, g: usize, now: u64) -> Vec<GroupRq> {
        let mut v = vec![GroupRq::default(); self.nr_cpus()];
        for t in 0..self.tasks.len() {
            if self.task_group(t) != Some(g) || self.tasks[t].done {
                continue;
            }
            let se = &self.sched.se[t];
            let Some(c) = se.last_cpu else { continue };
            let r = &mut v[c];
            r.load_avg += self.load_avg_at(t, now);
            r.task_weight += se.weight;
            if !se.sleeping {
                r.runnable_weight += se.weight;
            }
        }
        v
    }

    /// Group `g`'s cfs_rqs with task `t` (runnable) counted on `cpu`, where it is joining.
    pub fn group_rqs_joining(&self, g: usize, t: TaskId, cpu: CpuId, now: u64) -> Vec<GroupRq> {
        let mut v = self.group_rqs(g, now);
        let se = &self.sched.se[t];
        let load = self.load_avg_at(t, now);
        if let Some(prev) = se.last_cpu.filter(|&c| c != cpu) {
            let r = &mut v[prev];
            r.load_avg = r.load_avg.saturating_sub(load);
            r.task_weight = r.task_weight.saturating_sub(se.weight);
            if !se.sleeping {
                r.runnable_weight = r.runnable_weight.saturating_sub(se.weight);
            }
        }
        if se.last_cpu != Some(cpu) {
            v[cpu].load_avg += load;
            v[cpu].task_weight += se.weight;
        }
        if se.last_cpu != Some(cpu) || se.sleeping {
            v[cpu].runnable_weight += se.weight;
        }
        v
    }

    /// calc_group_shares: the weight of group `g`'s entity on `cpu`, tg->shares × this CPU's
    /// group load / the group's load over all CPUs (this CPU's counted as the larger of its
    /// runnable weight and its load average), clamped to MIN_SHARES..=tg->shares.
    pub fn calc_group_shares(&self, g: usize, cpu: CpuId, rqs: &[GroupRq]) -> u64 {
        let tg_shares = self.sched.groups[g].shares;
        let here = rqs[cpu];
        let load = here.runnable_weight.max(here.load_avg);
        let tg_load: u64 = rqs.iter().map(|r| r.load_avg).sum();
        let tg_weight = tg_load - here.load_avg + load;
        // (tg_shares × load) / tg_weight; with no load anywhere the product is 0 too.
        let shares = (tg_shares * load).checked_div(tg_weight).unwrap_or(0);
        shares.clamp(MIN_SHARES, tg_shares)
    }

    /// The group entity's load average on `cpu`: its weight × the share of time the group's
    /// tasks there were runnable (their load over their weight).
    pub fn group_se_load(&self, g: usize, cpu: CpuId, rqs: &[GroupRq]) -> u64 {
        let here = rqs[cpu];
        if here.task_weight == 0 {
            return 0;
        }
        let w = self.calc_group_shares(g, cpu, rqs);
        w * here.load_avg.min(here.task_weight) / here.task_weight
    }

    /// cpu_util_cfs at `now`: the utilisation of the tasks whose CPU this is (running,
    /// queued or blocked there), at most the CPU's capacity. A group's utilisation reaches
    /// the root unscaled (update_tg_cfs_util), so this is the plain sum.
    pub fn cpu_util(&self, cpu: CpuId, now: u64) -> u64 {
        (0..self.tasks.len())
            .filter(|&t| self.on_cpu_rq(t, cpu))
            .map(|t| self.util_avg_at(t, now))
            .sum::<u64>()
            .min(super::pelt::SCHED_CAPACITY_SCALE)
    }

    /// post_init_entity_util_avg for new task `t` placed on `cpu`: half the capacity its
    /// cfs_rq (its group's on that CPU, or the root's) leaves spare, or less, the cfs_rq's
    /// utilisation scaled by the task's weight over the cfs_rq's load.
    pub fn post_init_entity_util_avg(&mut self, t: TaskId, cpu: CpuId, now: u64) {
        let g = self.task_group(t);
        let on_cfs_rq = |o: TaskId| {
            o != t && self.on_cpu_rq(o, cpu) && (g.is_none() || self.task_group(o) == g)
        };
        let tasks = || (0..self.tasks.len()).filter(|&o| on_cfs_rq(o));
        let util: u64 = tasks().map(|o| self.util_avg_at(o, now)).sum();
        let load = match g {
            Some(_) => tasks().map(|o| self.load_avg_at(o, now)).sum(),
            // The root cfs_rq also carries the groups' entities' loads.
            None => self.cpu_load(cpu, now),
        };
        let cap = super::pelt::SCHED_CAPACITY_SCALE.saturating_sub(util) / 2;
        let w = self.sched.se[t].weight;
        let u = if util == 0 {
            cap
        } else {
            (util * w / (load + 1)).min(cap)
        };
        self.sched.se[t].util = super::pelt::Avg { avg: u, last: now };
    }

    /// cpu_load: the root cfs_rq's load average — its own tasks' PELT load (runnable or
    /// blocked there; a sleeping task's load stays on its last CPU and decays) plus each
    /// group entity's load.
    pub fn cpu_load(&self, cpu: CpuId, now: u64) -> u64 {
        let root: u64 = (0..self.tasks.len())
            .filter(|&t| self.on_cpu_rq(t, cpu) && self.task_group(t).is_none())
            .map(|t| self.load_avg_at(t, now))
            .sum();
        if !self.sched.autogroup {
            return root;
        }
        let groups: u64 = (0..self.sched.groups.len())
            .map(|g| self.group_se_load(g, cpu, &self.group_rqs(g, now)))
            .sum();
        root + groups
    }

    /// task_h_load: a task's load as the root cfs_rq sees it. A root task's is its own load;
    /// a grouped task's is scaled by its group's part of the root load (update_cfs_rq_h_load:
    /// the group cfs_rq's h_load = the root's load × the group entity's load / (the root's
    /// load + 1); then × the task's load / (the group cfs_rq's load + 1)).
    pub fn task_h_load(&self, t: TaskId, now: u64) -> u64 {
        let avg = self.load_avg_at(t, now);
        let (Some(g), Some(cpu)) = (self.task_group(t), self.sched.se[t].last_cpu) else {
            return avg;
        };
        let rqs = self.group_rqs(g, now);
        let root = self.cpu_load(cpu, now);
        let h_load = root * self.group_se_load(g, cpu, &rqs) / (root + 1);
        avg * h_load / (rqs[cpu].load_avg + 1)
    }
}
