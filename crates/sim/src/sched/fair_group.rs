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

impl GroupRq {
    fn add(&mut self, load: u64, weight: u64, runnable: bool) {
        self.load_avg += load;
        self.task_weight += weight;
        if runnable {
            self.runnable_weight += weight;
        }
    }
}

/// A group's cfs_rq on one CPU and the group's load over all CPUs (tg->load_avg).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupLoad {
    pub here: GroupRq,
    pub tg_load: u64,
}

/// Groups whose sums `cpu_load` keeps on the stack in its one walk (more: a walk per group).
const WALK_GROUPS: usize = 4;

impl Kernel {
    /// Is `t` counted on `cpu`'s cfs_rqs (its task_cpu, and not finished)?
    fn on_cpu_rq(&self, t: TaskId, cpu: CpuId) -> bool {
        self.sched.se[t].last_cpu == Some(cpu) && !self.tasks[t].done
    }

    /// Group `g`'s cfs_rq on every CPU, as seen at `now`.
    pub fn group_rqs(&self, g: usize, now: u64) -> Vec<GroupRq> {
        let mut v = vec![GroupRq::default(); self.nr_cpus()];
        self.for_group_tasks(g, now, |c, se_load, weight, runnable| {
            v[c].add(se_load, weight, runnable);
        });
        v
    }

    /// Call `f(cpu, load, weight, runnable)` for each unfinished task of group `g` that has a
    /// CPU, with its load as seen at `now`.
    #[inline]
    fn for_group_tasks(&self, g: usize, now: u64, mut f: impl FnMut(CpuId, u64, u64, bool)) {
        for t in 0..self.tasks.len() {
            if self.task_group(t) != Some(g) || self.tasks[t].done {
                continue;
            }
            let se = &self.sched.se[t];
            let Some(c) = se.last_cpu else { continue };
            f(c, self.load_avg_at(t, now), se.weight, !se.sleeping);
        }
    }

    /// Group `g`'s cfs_rq on `cpu` and its load over all CPUs, as seen at `now`: what
    /// calc_group_shares reads, in one walk over the tasks and without a per-CPU table.
    pub fn group_load(&self, g: usize, cpu: CpuId, now: u64) -> GroupLoad {
        let mut l = GroupLoad::default();
        self.for_group_tasks(g, now, |c, load, weight, runnable| {
            l.tg_load += load;
            if c == cpu {
                l.here.add(load, weight, runnable);
            }
        });
        l
    }

    /// `group_load` with task `t` (runnable) counted on `cpu`, where it is joining.
    pub fn group_load_joining(&self, g: usize, t: TaskId, cpu: CpuId, now: u64) -> GroupLoad {
        let se = &self.sched.se[t];
        let prev = se.last_cpu.filter(|&c| c != cpu);
        let mut l = GroupLoad::default();
        let mut from = GroupRq::default();
        self.for_group_tasks(g, now, |c, load, weight, runnable| {
            l.tg_load += load;
            if c == cpu {
                l.here.add(load, weight, runnable);
            } else if Some(c) == prev {
                from.add(load, weight, runnable);
            }
        });
        let load = self.load_avg_at(t, now);
        if prev.is_some() {
            // It leaves `prev`'s cfs_rq: only the group's total load sees that.
            l.tg_load = l.tg_load - from.load_avg + from.load_avg.saturating_sub(load);
        }
        if se.last_cpu != Some(cpu) {
            l.here.load_avg += load;
            l.here.task_weight += se.weight;
            l.tg_load += load;
        }
        if se.last_cpu != Some(cpu) || se.sleeping {
            l.here.runnable_weight += se.weight;
        }
        l
    }

    /// calc_group_shares: the weight of group `g`'s entity on `cpu`, tg->shares × this CPU's
    /// group load / the group's load over all CPUs (this CPU's counted as the larger of its
    /// runnable weight and its load average), clamped to MIN_SHARES..=tg->shares.
    pub fn calc_group_shares(&self, g: usize, l: &GroupLoad) -> u64 {
        let tg_shares = self.sched.groups[g].shares;
        let here = l.here;
        let load = here.runnable_weight.max(here.load_avg);
        let tg_weight = l.tg_load - here.load_avg + load;
        // (tg_shares × load) / tg_weight; with no load anywhere the product is 0 too.
        let shares = (tg_shares * load).checked_div(tg_weight).unwrap_or(0);
        shares.clamp(MIN_SHARES, tg_shares)
    }

    /// The group entity's load average on the CPU `l` was taken on: its weight × the share
    /// of time the group's tasks there were runnable (their load over their weight).
    pub fn group_se_load(&self, g: usize, l: &GroupLoad) -> u64 {
        let here = l.here;
        if here.task_weight == 0 {
            return 0;
        }
        let w = self.calc_group_shares(g, l);
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
        self.cpu_load_with(cpu, now, None).0
    }

    /// `cpu_load`, and group `want`'s `group_load` on `cpu` if asked: with few groups, the
    /// root's tasks and every group's sums in one walk over the tasks.
    fn cpu_load_with(&self, cpu: CpuId, now: u64, want: Option<usize>) -> (u64, GroupLoad) {
        let nr_groups = self.sched.groups.len();
        if !self.sched.autogroup || nr_groups > WALK_GROUPS {
            let root: u64 = (0..self.tasks.len())
                .filter(|&t| self.on_cpu_rq(t, cpu) && self.task_group(t).is_none())
                .map(|t| self.load_avg_at(t, now))
                .sum();
            if !self.sched.autogroup {
                return (root, GroupLoad::default());
            }
            let groups: u64 = (0..nr_groups)
                .map(|g| self.group_se_load(g, &self.group_load(g, cpu, now)))
                .sum();
            let wanted = want.map(|g| self.group_load(g, cpu, now));
            return (root + groups, wanted.unwrap_or_default());
        }
        let mut root = 0;
        let mut loads = [GroupLoad::default(); WALK_GROUPS];
        for t in 0..self.tasks.len() {
            let se = &self.sched.se[t];
            let Some(c) = se.last_cpu.filter(|_| !self.tasks[t].done) else {
                continue;
            };
            match self.task_group(t) {
                None if c == cpu => root += self.load_avg_at(t, now),
                None => {}
                Some(g) => {
                    let load = self.load_avg_at(t, now);
                    let l = &mut loads[g];
                    l.tg_load += load;
                    if c == cpu {
                        l.here.add(load, se.weight, !se.sleeping);
                    }
                }
            }
        }
        let groups: u64 = (0..nr_groups)
            .map(|g| self.group_se_load(g, &loads[g]))
            .sum();
        (root + groups, want.map(|g| loads[g]).unwrap_or_default())
    }

    /// The sum of `cpu_load` over `cpus` (update_sg_lb_stats), with each group's cfs_rqs
    /// and the root tasks' loads taken in one walk over the tasks, not one per CPU.
    pub fn cpus_load(&self, cpus: &[CpuId], now: u64) -> u64 {
        if cpus.len() < 2 {
            return cpus.iter().map(|&c| self.cpu_load(c, now)).sum();
        }
        let mut root = vec![0u64; self.nr_cpus()];
        for t in 0..self.tasks.len() {
            let Some(c) = self.sched.se[t].last_cpu else {
                continue;
            };
            if !self.tasks[t].done && self.task_group(t).is_none() {
                root[c] += self.load_avg_at(t, now);
            }
        }
        let mut load: u64 = cpus.iter().map(|&c| root[c]).sum();
        if self.sched.autogroup {
            for g in 0..self.sched.groups.len() {
                let rqs = self.group_rqs(g, now);
                let tg_load = rqs.iter().map(|r| r.load_avg).sum();
                load += cpus
                    .iter()
                    .map(|&c| {
                        self.group_se_load(
                            g,
                            &GroupLoad {
                                here: rqs[c],
                                tg_load,
                            },
                        )
                    })
                    .sum::<u64>();
            }
        }
        load
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
        let (root, l) = self.cpu_load_with(cpu, now, Some(g));
        let h_load = root * self.group_se_load(g, &l) / (root + 1);
        avg * h_load / (l.here.load_avg + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::{GroupLoad, GroupRq};
    use crate::kernel::Kernel;
    use crate::sched::autogroup::TaskGroup;
    use crate::sched::pelt::{Avg, PERIOD_NS};

    /// Two groups and some root tasks (kernel threads) spread over 6 CPUs, runnable and
    /// sleeping, with loads last updated at different times; two tasks finished (one of
    /// each kind), one never placed.
    fn kernel() -> Kernel {
        let cpus = 6;
        let mut k = Kernel::for_test(cpus);
        k.sched.autogroup = true;
        k.sched.groups.push(TaskGroup::new(0, cpus));
        for i in 0..23u64 {
            let t = k.task_new(usize::MAX, None, 0, 1);
            let se = &mut k.sched.se[t];
            se.group = (i % 3 % 2) as usize;
            se.last_cpu = (i != 22).then_some((i * 7 % 5) as usize);
            se.sleeping = i % 4 == 1;
            se.weight = [1024, 335, 3121][(i % 3) as usize];
            se.avg = Avg {
                avg: 97 * i % 1024,
                last: i * PERIOD_NS / 3,
            };
            k.tasks[t].kthread = i % 6 == 5 || i == 14;
            k.tasks[t].done = i == 13 || i == 14;
        }
        k
    }

    /// The one-CPU sums without a table are the table's, and the load of several CPUs taken
    /// at once is the sum of each one's: bit for bit.
    #[test]
    fn group_load_is_the_tables_entry_and_total() {
        let k = kernel();
        let now = 9 * PERIOD_NS + 5;
        let mut nonzero = 0;
        for g in 0..k.sched.groups.len() {
            let rqs = k.group_rqs(g, now);
            let tg_load: u64 = rqs.iter().map(|r| r.load_avg).sum();
            for (cpu, &here) in rqs.iter().enumerate() {
                let l = k.group_load(g, cpu, now);
                assert_eq!(l, GroupLoad { here, tg_load });
                nonzero += usize::from(l.here != GroupRq::default());
            }
        }
        assert!(
            nonzero >= 6,
            "the fixture puts group tasks on CPUs: {nonzero}"
        );
        for cpus in [vec![0, 1, 2], vec![3, 4, 5], vec![0, 2, 4, 5], vec![1]] {
            let each: u64 = cpus.iter().map(|&c| k.cpu_load(c, now)).sum();
            assert!(each > 0);
            assert_eq!(k.cpus_load(&cpus, now), each, "{cpus:?}");
        }
    }

    /// cpu_load and task_h_load, whether the walk keeps the groups' sums (few groups) or
    /// walks once per group, are the sums of the table's entries.
    #[test]
    fn cpu_load_is_the_roots_tasks_and_the_group_entities() {
        for extra_groups in [0, super::WALK_GROUPS] {
            let mut k = kernel();
            for _ in 0..extra_groups {
                k.sched.groups.push(TaskGroup::new(0, k.nr_cpus()));
            }
            let now = 7 * PERIOD_NS + 3;
            let tables: Vec<(Vec<GroupRq>, u64)> = (0..k.sched.groups.len())
                .map(|g| {
                    let rqs = k.group_rqs(g, now);
                    let tg_load = rqs.iter().map(|r| r.load_avg).sum();
                    (rqs, tg_load)
                })
                .collect();
            let view = |g: usize, cpu: usize| GroupLoad {
                here: tables[g].0[cpu],
                tg_load: tables[g].1,
            };
            let mut both = 0;
            for cpu in 0..k.nr_cpus() {
                let root: u64 = (0..k.tasks.len())
                    .filter(|&t| k.on_cpu_rq(t, cpu) && k.task_group(t).is_none())
                    .map(|t| k.load_avg_at(t, now))
                    .sum();
                let groups: u64 = (0..tables.len())
                    .map(|g| k.group_se_load(g, &view(g, cpu)))
                    .sum();
                assert_eq!(k.cpu_load(cpu, now), root + groups, "CPU {cpu}");
                both += usize::from(root > 0 && groups > 0);
            }
            assert!(both > 0, "a CPU with root tasks and group tasks");
            for t in 0..k.tasks.len() {
                let (Some(g), Some(cpu)) = (k.task_group(t), k.sched.se[t].last_cpu) else {
                    continue;
                };
                let root = k.cpu_load(cpu, now);
                let h_load = root * k.group_se_load(g, &view(g, cpu)) / (root + 1);
                let want = k.load_avg_at(t, now) * h_load / (view(g, cpu).here.load_avg + 1);
                assert_eq!(k.task_h_load(t, now), want, "task {t}");
            }
        }
    }

    /// A joining task's view: the table with the task moved to the CPU it joins.
    #[test]
    fn group_load_joining_moves_the_task_in_the_table() {
        let k = kernel();
        let now = 11 * PERIOD_NS;
        let mut checked = 0;
        for t in 0..k.tasks.len() {
            let Some(g) = k.task_group(t) else { continue };
            for cpu in 0..k.nr_cpus() {
                let se = &k.sched.se[t];
                let load = k.load_avg_at(t, now);
                let mut v = k.group_rqs(g, now);
                if let Some(prev) = se.last_cpu.filter(|&c| c != cpu) {
                    v[prev].load_avg = v[prev].load_avg.saturating_sub(load);
                }
                if se.last_cpu != Some(cpu) {
                    v[cpu].load_avg += load;
                    v[cpu].task_weight += se.weight;
                }
                if se.last_cpu != Some(cpu) || se.sleeping {
                    v[cpu].runnable_weight += se.weight;
                }
                let want = GroupLoad {
                    here: v[cpu],
                    tg_load: v.iter().map(|r| r.load_avg).sum(),
                };
                assert_eq!(
                    k.group_load_joining(g, t, cpu, now),
                    want,
                    "task {t} to {cpu}"
                );
                checked += 1;
            }
        }
        assert!(checked >= 60, "{checked}");
    }
}
