//! kernel/sched/fair.c's placement decisions: where a waking task runs
//! (select_task_rq_fair, wake_affine, select_idle_sibling) and how load balancing moves
//! tasks (sched_balance_rq with find_busiest_group's rules, calculate_imbalance,
//! detach_tasks with can_migrate_task's cache-hot rule, active balancing), triggered
//! periodically per domain at a busy CPU's tick, for idle CPUs by a nohz kick, and when a
//! CPU goes idle (sched_balance_newidle).
//!
//! Loads are hierarchical (fair_group.rs): a CPU's load is its root cfs_rq's, and
//! detach_tasks and wake_affine_weight weigh a task by task_h_load.
//!
//! Simplified (docs/sim-model.md): CPU capacity is 1024 for every CPU (SMT siblings too);
//! group_is_overloaded looks at task counts only (not utilisation against capacity); no wake_wide, NUMA or misfit handling;
//! new-idle balancing does not check avg_idle against its cost.

use super::pelt::{NICE_0_LOAD, SCHED_CAPACITY_SCALE};
use super::{RunQueues, BUSY_FACTOR, MAX_BALANCE_INTERVAL_MS, SCHED_MIGRATION_COST_NS};
use crate::kernel::{CpuId, Kernel, TaskId};
use crate::mm::vmstat::VmEventItem::*;

/// enum cpu_idle_type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleType {
    NotIdle,
    Idle,
    NewlyIdle,
}

/// enum group_type (the ones modelled), least busy first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

/// struct sg_lb_stats.
#[derive(Clone, Copy, Debug)]
pub struct SgStats {
    pub nr_running: usize,
    pub load: u64,
    pub idle_cpus: usize,
    pub weight: usize,
    pub ty: GroupType,
    /// load × SCHED_CAPACITY_SCALE / capacity.
    pub avg_load: u64,
}

/// enum migration_type (the ones modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Migration {
    Load,
    Task,
}

impl Kernel {
    /// select_task_rq_fair for a wake-up of `t` that last ran on `prev`, woken from `waker`.
    /// Also whether select_idle_sibling got as far as the task's recently used CPU (then the
    /// wake-up, if it happens, sets p->recent_used_cpu = prev: try_to_wake_up does, so that a
    /// prediction of where a timer's task would wake changes nothing).
    pub fn select_task_rq_fair(
        &self,
        rqs: &RunQueues,
        t: TaskId,
        prev: CpuId,
        waker: CpuId,
        now: u64,
    ) -> (CpuId, bool) {
        let mut target = prev;
        if waker != prev && self.cpu_allowed(t, waker) {
            // The lowest domain of the waker spanning prev (every level has SD_WAKE_AFFINE).
            if let Some(sd) = self.sched.sd[waker].iter().find(|d| d.span.contains(&prev)) {
                target = self.wake_affine(rqs, t, waker, prev, sd.imbalance_pct, now);
            }
        }
        let (target, checked_recent) = self.select_idle_sibling(rqs, t, prev, target);
        (self.select_fallback_rq(t, target), checked_recent)
    }

    /// `cpu` if the task may run there, else (select_fallback_rq) the first CPU it may.
    pub fn select_fallback_rq(&self, t: TaskId, cpu: CpuId) -> CpuId {
        if self.cpu_allowed(t, cpu) {
            return cpu;
        }
        (0..self.nr_cpus())
            .find(|&c| self.cpu_allowed(t, c))
            .unwrap_or(cpu)
    }

    /// wake_affine: wake_affine_idle, then wake_affine_weight (a non-sync wake-up).
    fn wake_affine(
        &self,
        rqs: &RunQueues,
        t: TaskId,
        this: CpuId,
        prev: CpuId,
        imbalance_pct: u64,
        now: u64,
    ) -> CpuId {
        let share = self.cpus_share_cache(this, prev);
        // wake_affine_idle: an idle waker means a wake-up from an interrupt. Mainline moves
        // the task there only if its previous CPU is busy; a guest kernel booted with
        // sched_vcpu_pack (not mainline) moves it there always: the waking vCPU is running,
        // the previous one may be halted (measured: scripts/idle-waker-placement.py).
        if self.idle_cpu(rqs, this) && share {
            return if !self.sched.vcpu_pack && self.idle_cpu(rqs, prev) {
                prev
            } else {
                this
            };
        }
        if self.idle_cpu(rqs, prev) {
            return prev;
        }
        let task_load = self.task_h_load(t, now);
        let this_eff = (self.cpu_load(this, now) + task_load) * 100;
        let prev_eff =
            self.cpu_load(prev, now).saturating_sub(task_load) * (100 + (imbalance_pct - 100) / 2);
        if this_eff < prev_eff {
            this
        } else {
            prev
        }
    }

    /// cpus_share_cache: same LLC (socket).
    pub fn cpus_share_cache(&self, a: CpuId, b: CpuId) -> bool {
        self.sched
            .topo
            .as_ref()
            .is_none_or(|t| t.socket_of(a) == t.socket_of(b))
    }

    /// select_idle_sibling: the target if idle, else prev if idle and cache-affine, else the
    /// task's recently used CPU if idle, else an idle core (all SMT siblings idle) then an
    /// idle CPU in the target's LLC, scanning from the CPU after the target; else the target.
    /// With it, whether it got as far as the recently used CPU.
    fn select_idle_sibling(
        &self,
        rqs: &RunQueues,
        t: TaskId,
        prev: CpuId,
        target: CpuId,
    ) -> (CpuId, bool) {
        let ok = |c: CpuId| self.idle_cpu(rqs, c) && self.cpu_allowed(t, c);
        if ok(target) {
            return (target, false);
        }
        if prev != target && self.cpus_share_cache(prev, target) && ok(prev) {
            return (prev, false);
        }
        // A recently used CPU, if idle (the task's CPU at its fork, or the prev CPU of the
        // last wake-up that got this far).
        if let Some(r) = self.sched.se[t]
            .recent_used_cpu
            .filter(|&r| r != prev && r != target && self.cpus_share_cache(r, target) && ok(r))
        {
            return (r, true);
        }
        (self.select_idle_cpu(rqs, t, target), true)
    }

    /// sd_llc: the level of `cpu`'s highest domain that shares its last-level cache.
    fn sd_llc(&self, cpu: CpuId) -> Option<usize> {
        self.sched.sd[cpu].iter().rposition(|d| d.share_llc)
    }

    /// update_idle_cpu_scan at a periodic balance (not a new-idle one) of `this` CPU's
    /// domain at `lvl`, if that domain is its LLC: SIS_UTIL's scan depth for wake-ups into the
    /// LLC, from the LLC's summed utilisation: llc_weight × (1 − (x/85%)²) CPUs (through
    /// imbalance_pct: 1024 − x²·pct²/(10000·1024), x the mean utilisation), so that a LLC at
    /// 85% or more is not scanned. The utilisation is read only here, where it is used.
    fn update_idle_cpu_scan(&mut self, this: CpuId, lvl: usize, now: u64) {
        if !self.sched.sis_util || self.sd_llc(this) != Some(lvl) {
            return;
        }
        let sd = &self.sched.sd[this][lvl];
        let sum_util: u64 = sd.span.iter().map(|&c| self.cpu_util(c, now)).sum();
        let llc_weight = sd.span.len() as u64;
        let x = sum_util / llc_weight;
        let pct = sd.imbalance_pct;
        let tmp = (x * x * pct * pct / (10_000 * SCHED_CAPACITY_SCALE)).min(SCHED_CAPACITY_SCALE);
        let nr = (SCHED_CAPACITY_SCALE - tmp) * llc_weight / SCHED_CAPACITY_SCALE;
        let leader = sd.span[0];
        self.sched.nr_idle_scan[leader] = nr as usize;
    }

    /// select_idle_core on SMT, then select_idle_cpu: an idle core or CPU of the target's
    /// LLC, scanning from the CPU after the target; else the target. SIS_UTIL: no scan when
    /// the LLC's last nr_idle_scan was 0, and at most that many allowed CPUs looked at
    /// (the idle-core search is not limited).
    fn select_idle_cpu(&self, rqs: &RunQueues, t: TaskId, target: CpuId) -> CpuId {
        let ok = |c: CpuId| self.idle_cpu(rqs, c) && self.cpu_allowed(t, c);
        let Some(llc) = self.sd_llc(target).map(|l| &self.sched.sd[target][l]) else {
            return target;
        };
        let nr_scan = if self.sched.sis_util {
            self.sched.nr_idle_scan[llc.span[0]]
        } else {
            usize::MAX
        };
        if nr_scan == 0 {
            return target;
        }
        let n = llc.span.len();
        let start = llc.span.iter().position(|&c| c == target).unwrap_or(0);
        let order = (1..=n).map(|i| llc.span[(start + i) % n]);
        let topo = self.sched.topo.expect("topology");
        if topo.threads_per_core > 1 {
            // select_idle_core
            for c in order.clone() {
                let core = topo.core_of(c);
                if ok(c)
                    && (0..self.nr_cpus()).all(|s| topo.core_of(s) != core || self.idle_cpu(rqs, s))
                {
                    return c;
                }
            }
        }
        // The kernel's mask is the span and the task's CPUs: only allowed CPUs use up the depth.
        order
            .filter(|&c| self.cpu_allowed(t, c))
            .take(nr_scan)
            .find(|&c| ok(c))
            .unwrap_or(target)
    }

    /// trigger_load_balance at a tick of busy `cpu`: its own periodic balancing, then the
    /// nohz kick (nohz_balancer_kick: this run queue has ≥ 2 tasks, so an idle CPU runs
    /// the balancer for the idle CPUs).
    pub fn trigger_load_balance(&mut self, rqs: &mut RunQueues, cpu: CpuId, now: u64) {
        self.sched_balance_domains(rqs, cpu, now);
        if self.nr_running(rqs, cpu) >= 2 {
            for c in 0..self.nr_cpus() {
                if c != cpu && self.idle_cpu(rqs, c) {
                    self.sched_balance_domains(rqs, c, now);
                }
            }
        }
    }

    /// get_sd_balance_interval in jiffies (the model's ticks): the level's balance_interval
    /// (ms), busy_factor times longer on a busy CPU, rounded up to jiffies
    /// (msecs_to_jiffies), one jiffy less on a busy CPU (so that busy intervals of nested
    /// levels are not multiples of each other), at least one and at most
    /// max_load_balance_interval. At HZ=250 a busy CPU balances its 2-CPU domain every 7
    /// ticks (28 ms), or 15 (60 ms) once the interval has doubled.
    pub fn balance_interval_ticks(&self, cpu: CpuId, lvl: usize, busy: bool) -> u64 {
        let tick = self.cfg.tick_ns.max(1);
        let mut ms = self.sched.balance_interval[cpu][lvl];
        if busy {
            ms *= BUSY_FACTOR;
        }
        let mut j = (ms * 1_000_000).div_ceil(tick);
        if busy {
            j = j.saturating_sub(1);
        }
        j.clamp(1, (MAX_BALANCE_INTERVAL_MS * 1_000_000).div_ceil(tick))
    }

    /// sched_balance_domains: each level whose interval has passed balances, counted in
    /// jiffies from the tick it last balanced at (sd->last_balance = jiffies): the next
    /// balance is that many ticks later, whenever in its tick the balancing CPU got there.
    fn sched_balance_domains(&mut self, rqs: &mut RunQueues, cpu: CpuId, now: u64) {
        for lvl in 0..self.sched.sd[cpu].len() {
            if now < self.sched.next_balance[cpu][lvl] {
                continue;
            }
            let idle = if self.idle_cpu(rqs, cpu) {
                IdleType::Idle
            } else {
                IdleType::NotIdle
            };
            self.sched_balance_rq(rqs, cpu, lvl, idle, now);
            let tick = self.cfg.tick_ns.max(1);
            let jiffies = self.balance_interval_ticks(cpu, lvl, idle == IdleType::NotIdle);
            self.sched.next_balance[cpu][lvl] = (now / tick + jiffies) * tick;
        }
    }

    /// sched_balance_newidle: a CPU about to idle pulls from the lowest domain that yields a
    /// task.
    pub fn sched_balance_newidle(&mut self, rqs: &mut RunQueues, cpu: CpuId, now: u64) {
        for lvl in 0..self.sched.sd[cpu].len() {
            if !self.idle_cpu(rqs, cpu) {
                return;
            }
            if self.sched_balance_rq(rqs, cpu, lvl, IdleType::NewlyIdle, now) > 0 {
                return;
            }
        }
    }

    /// update_sg_lb_stats for a group of CPUs.
    pub fn group_stats(&self, rqs: &RunQueues, cpus: &[CpuId], now: u64) -> SgStats {
        let nr_running = cpus.iter().map(|&c| self.nr_running(rqs, c)).sum::<usize>();
        let load = self.cpus_load(cpus, now);
        let idle_cpus = cpus.iter().filter(|&&c| self.idle_cpu(rqs, c)).count();
        let weight = cpus.len();
        let ty = if nr_running > weight {
            GroupType::Overloaded
        } else if nr_running < weight {
            GroupType::HasSpare
        } else {
            GroupType::FullyBusy
        };
        SgStats {
            nr_running,
            load,
            idle_cpus,
            weight,
            ty,
            avg_load: load * NICE_0_LOAD / (weight as u64 * NICE_0_LOAD),
        }
    }

    /// sched_balance_rq (load_balance) for `this` CPU at domain level `lvl`; returns how many
    /// tasks moved to `this`.
    pub fn sched_balance_rq(
        &mut self,
        rqs: &mut RunQueues,
        this: CpuId,
        lvl: usize,
        idle: IdleType,
        now: u64,
    ) -> usize {
        let Some((kind, imbalance, src)) = self.find_busiest(rqs, this, lvl, idle, now) else {
            self.out_balanced(this, lvl, idle);
            return 0;
        };
        let sd = &self.sched.sd[this][lvl];
        let (cache_nice_tries, min_ms) = (sd.cache_nice_tries, sd.min_interval_ms);
        let failed = self.sched.nr_balance_failed[this][lvl];
        // LBF_ALL_PINNED: cleared by any task on the source (its running one included) that
        // may run here, whether or not it then moves (can_migrate_task: after the per-CPU
        // kthread test, a task whose cpus_ptr has this CPU clears it).
        let may_run_here =
            |k: &Kernel, t: TaskId| !k.kthread_is_per_cpu(t) && k.cpu_allowed(t, this);
        let mut all_pinned = !self.cpus[src].curr.is_some_and(|c| may_run_here(self, c));
        // detach_tasks: from the tail of the source queue (the least recently run).
        let mut left = imbalance as i64;
        let mut moved = 0;
        let mut i = rqs.rq[src].len();
        let mut loops = 0;
        while i > 0 && left > 0 && loops < 32 {
            i -= 1;
            loops += 1;
            let t = rqs.rq[src][i];
            if may_run_here(self, t) {
                all_pinned = false;
            }
            if !self.can_migrate_task(t, this, now, failed <= cache_nice_tries) {
                continue;
            }
            if kind == Migration::Load {
                // The task's hierarchical load: a task in a busy group weighs its share.
                let load = self.task_h_load(t, now).max(1);
                if (load >> failed.min(63)) as i64 > left {
                    continue;
                }
                left -= load as i64;
            } else {
                left -= 1;
            }
            self.dequeue_migrating(rqs, src, t);
            rqs.rq[src].remove(i);
            self.enqueue(rqs, this, t, now);
            moved += 1;
            match idle {
                IdleType::NewlyIdle => self.vmstat.count_vm_event(MIGRATIONS_NEWIDLE_BALANCE),
                _ => self.vmstat.count_vm_event(MIGRATIONS_PERIODIC_BALANCE),
            }
            if idle == IdleType::NewlyIdle {
                // A newly idle CPU takes one task and runs it.
                break;
            }
        }
        if moved > 0 {
            self.sched.nr_balance_failed[this][lvl] = 0;
            self.sched.balance_interval[this][lvl] = min_ms;
            return moved;
        }
        if all_pinned {
            // out_all_pinned: nothing there could ever come here; as balanced.
            self.out_balanced(this, lvl, idle);
            return 0;
        }
        if idle != IdleType::NewlyIdle {
            self.sched.nr_balance_failed[this][lvl] += 1;
        }
        // out_unbalanced: the interval goes back to its minimum.
        self.sched.balance_interval[this][lvl] = min_ms;
        // need_active_balance → imbalanced_active_balance: a task-count imbalance (migrate_task)
        // that failed too many times in a row. sched_balance_rq kicks the stopper only if the
        // source's running task may run here (busiest->curr->cpus_ptr); the stopper
        // (active_load_balance_cpu_stop) gives up if the source has only one task left, else
        // detach_one_task moves a task that can_migrate_task allows, cache-hot or not. The
        // model pushes the running task: any waiting task allowed here was already taken
        // by detach_tasks above, the failures having lifted the cache-hot rule. A load
        // imbalance is not pushed (that needs misfit or reduced capacity, which the model
        // has not).
        if kind == Migration::Task
            && self.sched.nr_balance_failed[this][lvl] > cache_nice_tries + 2
            && self.nr_running(rqs, src) > 1
        {
            if let Some(curr) = self.cpus[src].curr {
                if may_run_here(self, curr) {
                    let t_src = self.cpus[src].clock;
                    self.dequeue_migrating(rqs, src, curr);
                    // The pushed task is runnable: it goes back to no queue until placed.
                    let next = self.take_next(rqs, src);
                    self.context_switch(src, next);
                    self.enqueue(rqs, this, curr, now.max(t_src));
                    self.vmstat.count_vm_event(MIGRATIONS_ACTIVE_BALANCE);
                    // "Active balancing done, reset the failure counter" (the stopper, on
                    // this CPU's domain spanning the source).
                    self.sched.nr_balance_failed[this][lvl] = 0;
                    return 1;
                }
            }
        }
        0
    }

    /// sched_balance_rq's out_balanced (and out_all_pinned): the failure count restarts —
    /// a later hot task is again protected until cache_nice_tries more failures in a row —
    /// and, except for new-idle balancing, the interval doubles up to its maximum.
    fn out_balanced(&mut self, this: CpuId, lvl: usize, idle: IdleType) {
        self.sched.nr_balance_failed[this][lvl] = 0;
        if idle != IdleType::NewlyIdle {
            let i = &mut self.sched.balance_interval[this][lvl];
            *i = (*i * 2).min(self.sched.sd[this][lvl].max_interval_ms);
        }
    }

    /// can_migrate_task for a queued task: not a per-CPU kernel thread (kthread_is_per_cpu),
    /// allowed on `dst`, and not cache-hot (task_hot: it ran within
    /// sysctl_sched_migration_cost) unless balancing keeps failing. Other kernel threads
    /// (kswapd, the flusher) move like any task.
    fn can_migrate_task(&self, t: TaskId, dst: CpuId, now: u64, hot_matters: bool) -> bool {
        if self.kthread_is_per_cpu(t) || !self.cpu_allowed(t, dst) {
            return false;
        }
        let hot = now.saturating_sub(self.sched.se[t].exec_start) < SCHED_MIGRATION_COST_NS;
        !(hot && hot_matters)
    }

    /// find_busiest_group + calculate_imbalance + find_busiest_queue: what to move and from
    /// which CPU, or None when the domain is balanced.
    fn find_busiest(
        &mut self,
        rqs: &RunQueues,
        this: CpuId,
        lvl: usize,
        idle: IdleType,
        now: u64,
    ) -> Option<(Migration, u64, CpuId)> {
        let stats: Vec<SgStats> = self.sched.sd[this][lvl]
            .groups
            .iter()
            .map(|g| self.group_stats(rqs, g, now))
            .collect();
        if idle != IdleType::NewlyIdle {
            self.update_idle_cpu_scan(this, lvl, now);
        }
        let sd = &self.sched.sd[this][lvl];
        let local = stats[0];
        // update_sd_pick_busiest: the busiest type; among overloaded/fully busy groups the
        // highest avg_load; among groups with spare capacity the fewest idle CPUs, then the
        // most tasks.
        let (bi, busiest) = stats
            .iter()
            .enumerate()
            .skip(1)
            .max_by(|(ia, a), (ib, b)| {
                a.ty.cmp(&b.ty)
                    .then(match a.ty {
                        GroupType::HasSpare => b
                            .idle_cpus
                            .cmp(&a.idle_cpus)
                            .then(a.nr_running.cmp(&b.nr_running)),
                        _ => a.avg_load.cmp(&b.avg_load),
                    })
                    .then(ib.cmp(ia))
            })
            .map(|(i, s)| (i, *s))?;
        if busiest.nr_running == 0 || local.ty > busiest.ty {
            return None;
        }
        let total_load: u64 = stats.iter().map(|s| s.load).sum();
        let total_w: u64 = stats.iter().map(|s| s.weight as u64).sum();
        let sds_avg = total_load / total_w;
        if local.ty == GroupType::Overloaded
            && (local.avg_load >= busiest.avg_load
                || local.avg_load >= sds_avg
                || 100 * busiest.avg_load <= sd.imbalance_pct * local.avg_load)
        {
            return None;
        }
        let sib = sibling_imbalance(idle, &local, &busiest);
        let force = sd.prefer_sibling && local.ty == GroupType::HasSpare && sib > 1;
        if !force && busiest.ty != GroupType::Overloaded {
            if idle == IdleType::NotIdle {
                return None;
            }
            if busiest.weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                return None;
            }
            if busiest.nr_running == 1 {
                return None;
            }
        }
        // calculate_imbalance
        let (kind, imbalance) = if local.ty == GroupType::HasSpare {
            if busiest.ty == GroupType::Overloaded && !sd.share_llc {
                // Fill the spare capacity (migrate_util, as a task count here).
                (Migration::Task, local.idle_cpus.max(1) as u64)
            } else if busiest.weight == 1 || sd.prefer_sibling {
                (Migration::Task, sib >> 1)
            } else {
                (
                    Migration::Task,
                    (local.idle_cpus.saturating_sub(busiest.idle_cpus) >> 1) as u64,
                )
            }
        } else {
            if local.ty < GroupType::Overloaded
                && (local.avg_load >= busiest.avg_load || local.avg_load >= sds_avg)
            {
                return None;
            }
            let imb = (busiest.avg_load.saturating_sub(sds_avg) * busiest.weight as u64)
                .min(sds_avg.saturating_sub(local.avg_load) * local.weight as u64);
            (Migration::Load, imb)
        };
        if imbalance == 0 {
            return None;
        }
        // find_busiest_queue: most tasks (migrate_task) or highest load (migrate_load) among
        // CPUs with something queued to pull; a lone task is never pulled.
        let src = sd.groups[bi]
            .iter()
            .copied()
            .filter(|&c| self.nr_running(rqs, c) > 1)
            .max_by_key(|&c| {
                let key = match kind {
                    Migration::Task => self.nr_running(rqs, c) as u64,
                    Migration::Load => self.cpu_load(c, now),
                };
                (key, std::cmp::Reverse(c))
            })?;
        Some((kind, imbalance, src))
    }
}

/// sibling_imbalance: twice the task-count difference that evens out the two groups,
/// scaled by their sizes (2 when an empty local group faces a group with several tasks).
fn sibling_imbalance(idle: IdleType, local: &SgStats, busiest: &SgStats) -> u64 {
    if idle == IdleType::NotIdle || busiest.nr_running == 0 {
        return 0;
    }
    let (nl, nb) = (local.weight as u64, busiest.weight as u64);
    let (rl, rb) = (local.nr_running as u64, busiest.nr_running as u64);
    if nl == nb {
        return rb.saturating_sub(rl);
    }
    let mut imb = (nl * rb).saturating_sub(nb * rl);
    imb = (2 * imb + nl + nb) / (nl + nb);
    if imb <= 1 && rl == 0 && rb > 1 {
        imb = 2;
    }
    imb
}
