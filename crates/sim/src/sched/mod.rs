//! The scheduler model (kernel/sched): per-CPU run queues with fair.c's EEVDF policy.
//!
//! - `core` (this file): context switches, enqueue/dequeue, blocking and timed wake-ups,
//!   scheduler_tick (a reschedule when the running request is used up, then the load
//!   balancer's trigger), and the accounting behind the result's `placement` section.
//! - [`pelt`]: the load signal (per-entity load tracking, simplified).
//! - [`autogroup`]: task groups, one per session (`sched.autogroup`), and nice weights.
//! - [`fair_group`]: group scheduling's loads: calc_group_shares, cpu_load, task_h_load.
//! - [`fair_pick`]: vruntime, virtual deadlines and the hierarchical pick (pick_eevdf).
//! - [`fair_place`]: place_entity, the lag kept across a sleep or a migration, and the
//!   protected slice.
//! - [`topology`]: `machine.topology` and the sched domains built from it.
//! - [`fork`]: where a forked task starts (wake_up_new_task, sched_balance_find_dst_cpu),
//!   and the scripts of tasks that start others.
//! - [`cgroup_attach`]: a process writing itself into the memcg (cgroup_mutex, and the RCU
//!   grace period a percpu rwsem's writer waits for).
//! - [`fair`]: kernel/sched/fair.c's placement decisions: select_task_rq_fair on wake-up,
//!   periodic, nohz-idle and new-idle load balancing with the imbalance rules and the
//!   cache-hot rule.
//! - [`cond_resched`]: a kernel thread woken on a CPU in direct reclaim runs at the
//!   reclaimer's next cond_resched(), and so does a background task picked by a tick that
//!   fell due in the reclaim.
//! - [`background`]: foreign tasks (`machine.background_load`, `machine.background_other`,
//!   `machine.background_kthreads`) that wake and run with a duty cycle.
//! - [`stats`]: the `placement` report.
//!
//! A task migrates only for the kernel's reasons: a wake-up placed it elsewhere, a balancer
//! pulled it, or an active balance pushed it. There is no migration probability.

pub mod autogroup;
pub mod background;
pub mod cgroup_attach;
pub mod cond_resched;
pub mod fair;
pub mod fair_group;
pub mod fair_pick;
pub mod fair_place;
pub mod fork;
pub mod pelt;
pub mod stats;
pub mod topology;

use crate::cpumask::CpuMask;
use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, TaskId};
use crate::mm::vmstat::VmEventItem::*;
use pelt::{Avg, SCHED_CAPACITY_SCALE};
use std::collections::{BTreeSet, VecDeque};
use topology::{SchedDomain, Topology};

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

/// What a task is, for the engine and the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Class {
    /// A workload thread.
    #[default]
    Worker,
    /// A kernel thread the model runs (kswapd).
    Kthread,
    /// A foreign task of `machine.background_load`, `machine.background_other` or
    /// `machine.background_kthreads`.
    Background,
    /// A process that starts the workload's processes and then waits for them (stress-ng's
    /// parent and its per-stressor instances, workload/stress_ng_tree.rs).
    Starter,
}

/// The scheduler's per-task state (struct sched_entity and the task's CPU fields).
#[derive(Clone, Debug, Default)]
pub struct SchedEntity {
    pub class: Class,
    /// p->cpus_mask when narrower than "any CPU" and not a single pinned CPU.
    pub allowed: Option<CpuMask>,
    /// task_cpu(p): the CPU it last ran or was queued on (None before its first placement).
    pub last_cpu: Option<CpuId>,
    /// p->recent_used_cpu: the CPU it was forked on, then the prev CPU of its last wake-up
    /// that got as far as checking it (select_idle_sibling).
    pub recent_used_cpu: Option<CpuId>,
    /// se.avg.load_avg (its weight while runnable).
    pub avg: Avg,
    /// se.avg.util_avg (SCHED_CAPACITY_SCALE while running).
    pub util: Avg,
    /// se.load.weight (scale_load_down units): sched_prio_to_weight of the task's nice.
    pub weight: u64,
    /// The task's autogroup (autogroup::WORKLOAD_GROUP for workload tasks; ignored for
    /// kernel threads and when `sched.autogroup` is off).
    pub group: usize,
    /// se.vruntime on its group's cfs_rq (or the root's) on its CPU.
    pub vruntime: u64,
    /// When update_curr last charged its run time to vruntime.
    pub vr_stamp: u64,
    /// se.vlag: its cfs_rq's avg_vruntime less its vruntime when it went to sleep
    /// (update_entity_lag), given back by place_entity at its wake-up (PLACE_LAG).
    pub vlag: i64,
    /// se.deadline: the virtual deadline of its current request (update_deadline,
    /// place_entity).
    pub deadline: u64,
    /// se.deadline − se.vruntime while it migrates (se->rel_deadline, PLACE_REL_DEADLINE).
    pub rel_deadline: Option<u64>,
    /// se.vprot: the vruntime up to which the running entity is protected from wake-up
    /// preemption (set_protect_slice when it is picked).
    pub vprot: u64,
    /// se.exec_start: when it last stopped (or, running, started) executing.
    pub exec_start: u64,
    /// When it got its CPU this time (for sum_exec_runtime).
    pub run_start: u64,
    /// sched_info.run_delay: time spent runnable on a run queue, waiting for the CPU.
    pub run_delay: u64,
    /// sched_info.last_queued: since when it waits (None: running or asleep).
    pub last_queued: Option<u64>,
    /// Not runnable (blocked or finished).
    pub sleeping: bool,
    pub nr_migrations: u64,
    pub sum_exec_runtime: u64,
    pub wakeups: u64,
}

/// `[machine]` scheduler settings (SimConfig::sched).
#[derive(Clone, Debug, Default)]
pub struct SchedConfig {
    /// `machine.topology` (None: one socket, no SMT).
    pub topology: Option<Topology>,
    /// `machine.background_load` (None: a quiet machine).
    pub background: Option<background::BackgroundLoad>,
    /// `machine.background_other`: the machine's other user tasks beside that load.
    pub other: Option<background::BackgroundLoad>,
    /// `machine.background_kthreads`: one bound kernel thread per CPU with a share.
    pub kthreads: Vec<background::BackgroundLoad>,
    /// `machine.timer_kthreads`: the same, woken by their timers only (softirq.rs).
    pub timer_kthreads: Vec<background::BackgroundLoad>,
    /// `sched.autogroup` (sched_autogroup_enabled): every session is a task group.
    pub autogroup: bool,
    /// `sched.sis_util`: select_idle_cpu's scan depth follows the LLC's utilisation.
    pub sis_util: bool,
    /// `sched.vcpu_pack` (fair.rs wake_affine): not mainline; an interrupt on an idle CPU
    /// places the task it wakes there even when the task's previous CPU is idle.
    pub vcpu_pack: bool,
}

impl SchedConfig {
    /// Read `machine.topology.{sockets,cores_per_socket,threads_per_core}`,
    /// `machine.background_load.*`, `machine.background_other.*`,
    /// `machine.background_kthreads.*` and `sched.autogroup`.
    pub fn from_scenario(scn: &reclaimlab_core::Scenario) -> anyhow::Result<SchedConfig> {
        let s = &scn.source;
        let keys = [
            "machine.topology.sockets",
            "machine.topology.cores_per_socket",
            "machine.topology.threads_per_core",
        ];
        let topology = if keys.iter().any(|k| s.has(k)) {
            let sockets = s.u64_or(keys[0], 1)? as usize;
            let threads = s.u64_or(keys[2], 1)? as usize;
            let per = sockets.max(1) * threads.max(1);
            let cores = s.u64_or(keys[1], (scn.machine.cpus / per) as u64)? as usize;
            let t = Topology {
                sockets,
                cores_per_socket: cores,
                threads_per_core: threads,
            };
            if sockets == 0 || cores == 0 || threads == 0 || t.nr_cpus() != scn.machine.cpus {
                return Err(s
                    .err(
                        keys[1],
                        format!(
                            "sockets ({sockets}) x cores_per_socket ({cores}) x threads_per_core \
                             ({threads}) must equal machine.cpus ({})",
                            scn.machine.cpus
                        ),
                    )
                    .into());
            }
            Some(t)
        } else {
            None
        };
        Ok(SchedConfig {
            topology,
            background: background::BackgroundLoad::from_scenario(scn)?,
            other: background::BackgroundLoad::others_from_scenario(scn)?,
            kthreads: background::BackgroundLoad::kthreads_from_scenario(scn)?,
            timer_kthreads: background::BackgroundLoad::timer_kthreads_from_scenario(scn)?,
            autogroup: s.bool_or("sched.autogroup", true)?,
            sis_util: s.bool_or("sched.sis_util", true)?,
            vcpu_pack: s.bool_or("sched.vcpu_pack", false)?,
        })
    }
}

/// Scheduler state of the whole machine.
#[derive(Clone, Debug, Default)]
pub struct Sched {
    pub topo: Option<Topology>,
    /// Per CPU, its domains lowest first.
    pub sd: Vec<Vec<SchedDomain>>,
    /// Per CPU and level: sd->last_balance + interval, sd->balance_interval (ms),
    /// sd->nr_balance_failed.
    pub next_balance: Vec<Vec<u64>>,
    pub balance_interval: Vec<Vec<u64>>,
    pub nr_balance_failed: Vec<Vec<u32>>,
    pub se: Vec<SchedEntity>,
    /// Sleeping tasks' wake-up times (hrtimers).
    pub timers: BTreeSet<(u64, TaskId)>,
    /// Sleeping tasks a device completion wakes, and the CPU its interrupt runs on; and the
    /// wake-ups by such completions per waking CPU.
    pub io_waker: std::collections::BTreeMap<TaskId, CpuId>,
    pub io_wakeups: Vec<u64>,
    /// Per CPU: time spent running tasks.
    pub busy_ns: Vec<u64>,
    pub background: Option<background::BackgroundLoad>,
    pub other: Option<background::BackgroundLoad>,
    /// `machine.background_kthreads`, then `machine.timer_kthreads` from `timer_kthreads_from`.
    pub kthreads: Vec<background::BackgroundLoad>,
    pub timer_kthreads_from: usize,
    pub bg_state: Vec<background::BgState>,
    /// Per CPU: the levels whose update_curr asked for a reschedule (a used-up request or an
    /// ended protection; fair_pick::RESCHED_ROOT, RESCHED_GROUP), read by need_resched.
    pub need_resched: Vec<u8>,
    /// `sched.autogroup`, and the task groups: the workload's session, then the foreign
    /// sessions of `machine.background_load.groups`, then `machine.background_other.groups`.
    pub autogroup: bool,
    pub groups: Vec<autogroup::TaskGroup>,
    /// mm_cpumask weight samples at ticks: per mm (sum, max), and the sample count.
    pub cpumask_sum: Vec<u64>,
    pub cpumask_max: Vec<u64>,
    pub samples: u64,
    pub next_sample: u64,
    /// The scripts of Class::Starter tasks still running them (fork.rs).
    pub starters: std::collections::BTreeMap<TaskId, VecDeque<fork::StartOp>>,
    /// cgroup_mutex and rcu_sync of the workload's cgroup.procs writes (cgroup_attach.rs).
    pub cgroup_attach: cgroup_attach::CgroupAttach,
    /// `sched.sis_util` (sched_feat SIS_UTIL), and per LLC (indexed by its first CPU)
    /// sd_llc_shared->nr_idle_scan.
    pub sis_util: bool,
    pub nr_idle_scan: Vec<usize>,
    /// Per CPU: the last tick a direct reclaimer's cond_resched() acted on inside its step
    /// (cond_resched.rs), so that each tick preempts at most once there.
    pub reclaim_tick_seen: Vec<u64>,
    /// `sched.vcpu_pack` (SchedConfig).
    pub vcpu_pack: bool,
}

/// sysctl_sched_migration_cost: a task that ran within this long is cache-hot (0.5 ms).
pub const SCHED_MIGRATION_COST_NS: u64 = 500_000;
/// sd->busy_factor: a busy CPU balances this many times less often.
pub const BUSY_FACTOR: u64 = 16;
/// max_load_balance_interval: HZ/10 (100 ms).
pub const MAX_BALANCE_INTERVAL_MS: u64 = 100;

impl Sched {
    pub fn new(cfg: &SchedConfig, nr_cpus: usize) -> Sched {
        let topo = cfg.topology.unwrap_or(Topology::flat(nr_cpus));
        let sd = topology::build_sched_domains(&topo);
        let mut groups = vec![autogroup::TaskGroup::new(0, nr_cpus)];
        for b in cfg.background.iter().chain(&cfg.other) {
            for _ in 0..b.groups {
                groups.push(autogroup::TaskGroup::new(b.group_nice, nr_cpus));
            }
        }
        let per = |f: &dyn Fn(&SchedDomain) -> u64| -> Vec<Vec<u64>> {
            sd.iter().map(|d| d.iter().map(f).collect()).collect()
        };
        Sched {
            topo: Some(topo),
            next_balance: per(&|_| 0),
            balance_interval: per(&|d| d.min_interval_ms),
            nr_balance_failed: sd.iter().map(|d| vec![0; d.len()]).collect(),
            sd,
            busy_ns: vec![0; nr_cpus],
            need_resched: vec![0; nr_cpus],
            background: cfg.background.clone(),
            other: cfg.other.clone(),
            kthreads: cfg
                .kthreads
                .iter()
                .chain(&cfg.timer_kthreads)
                .cloned()
                .collect(),
            timer_kthreads_from: cfg.kthreads.len(),
            autogroup: cfg.autogroup,
            groups,
            sis_util: cfg.sis_util,
            // A machine idle before the run: every LLC scanned whole.
            nr_idle_scan: vec![nr_cpus; nr_cpus],
            reclaim_tick_seen: vec![0; nr_cpus],
            vcpu_pack: cfg.vcpu_pack,
            ..Default::default()
        }
    }

    /// sysctl_sched_base_slice: 0.75 ms × (1 + ilog2(min(CPUs, 8))) (SCHED_TUNABLESCALING_LOG).
    pub fn base_slice_ns(nr_cpus: usize) -> u64 {
        let n = nr_cpus.clamp(1, 8) as u64;
        750_000 * (1 + u64::from(n.ilog2()))
    }
}

impl Kernel {
    /// The task's scheduler state (created with the task).
    pub fn se(&self, t: TaskId) -> &SchedEntity {
        &self.sched.se[t]
    }

    /// Can `t` run on `cpu` (p->cpus_mask)?
    pub fn cpu_allowed(&self, t: TaskId, cpu: CpuId) -> bool {
        if let Some(p) = self.tasks[t].pinned {
            return p == cpu;
        }
        self.sched.se[t]
            .allowed
            .as_ref()
            .is_none_or(|m| m.test(cpu))
    }

    /// kthread_is_per_cpu: a kernel thread bound to one CPU (the per-CPU workers of
    /// `machine.background_kthreads`). kswapd (bound to its node's CPUs) and the writeback
    /// flusher (an unbound kworker) are not: the balancer may move them like any task.
    pub fn kthread_is_per_cpu(&self, t: TaskId) -> bool {
        self.tasks[t].kthread && self.tasks[t].pinned.is_some()
    }

    /// nr_running of a CPU's run queue (the current task included).
    pub fn nr_running(&self, rqs: &RunQueues, cpu: CpuId) -> usize {
        usize::from(self.cpus[cpu].curr.is_some()) + rqs.rq[cpu].len()
    }

    /// available_idle_cpu: nothing runs or waits there.
    pub fn idle_cpu(&self, rqs: &RunQueues, cpu: CpuId) -> bool {
        self.cpus[cpu].curr.is_none() && rqs.rq[cpu].is_empty()
    }

    /// Bring a task's PELT averages up to `now`: load at its weight while runnable, 0
    /// asleep; utilisation at full capacity while it runs (update_load_avg).
    pub fn update_load_avg(&mut self, t: TaskId, now: u64) {
        let (lw, uw) = (self.load_weight(t), self.util_weight(t));
        let se = &mut self.sched.se[t];
        se.avg.update(now, lw);
        se.util.update(now, uw);
    }

    /// What load_avg accrues now: the task's weight while runnable, 0 asleep.
    fn load_weight(&self, t: TaskId) -> u64 {
        let se = &self.sched.se[t];
        if se.sleeping {
            0
        } else {
            se.weight
        }
    }

    /// What util_avg accrues now: full capacity while the task runs.
    fn util_weight(&self, t: TaskId) -> u64 {
        if self.tasks[t].cpu.is_some() {
            SCHED_CAPACITY_SCALE
        } else {
            0
        }
    }

    /// A task's load_avg as a reader at `now` sees it (decayed while it sleeps).
    pub fn load_avg_at(&self, t: TaskId, now: u64) -> u64 {
        self.sched.se[t].avg.at(now, self.load_weight(t))
    }

    /// A task's util_avg as a reader at `now` sees it.
    pub fn util_avg_at(&self, t: TaskId, now: u64) -> u64 {
        self.sched.se[t].util.at(now, self.util_weight(t))
    }

    /// set_task_cpu: a task moving to another CPU counts a migration (se.nr_migrations).
    fn set_task_cpu(&mut self, t: TaskId, cpu: CpuId) {
        let se = &mut self.sched.se[t];
        if se.last_cpu.is_some_and(|c| c != cpu) {
            se.nr_migrations += 1;
        }
        se.last_cpu = Some(cpu);
    }

    /// context_switch to `next` (None = the idle task, lazy TLB).
    pub fn context_switch(&mut self, cpu: CpuId, next: Option<TaskId>) {
        let now = self.cpus[cpu].clock;
        self.update_curr(cpu);
        self.sched.need_resched[cpu] = 0;
        let prev_task = self.cpus[cpu].curr;
        if let Some(prev) = prev_task {
            self.update_load_avg(prev, now);
            self.tasks[prev].cpu = None;
            let se = &mut self.sched.se[prev];
            let ran = now.saturating_sub(se.run_start);
            se.sum_exec_runtime += ran;
            se.exec_start = now;
            self.sched.busy_ns[cpu] += ran;
            if !se.sleeping {
                // Preempted: it waits on a queue again (sched_info_depart → sched_info_enqueue).
                self.sched_info_enqueue(prev, now);
            }
        }
        self.cpus[cpu].curr = next;
        self.context_switches += 1;
        if let (Some(prev), Some(t)) = (prev_task, next) {
            // A workload task that stays runnable gives way to a workqueue kworker.
            let se = &self.sched.se[prev];
            if !se.sleeping
                && se.class == Class::Worker
                && !self.tasks[prev].kthread
                && (self.workqueue.worker.is_worker(cpu, t)
                    || self.kblockd.worker.is_worker(cpu, t))
            {
                self.vmstat.count_vm_event(KWORKER_PREEMPTIONS);
            }
        }
        match next {
            Some(t) => {
                self.update_load_avg(t, now);
                self.tasks[t].cpu = Some(cpu);
                self.set_task_cpu(t, cpu);
                let se = &mut self.sched.se[t];
                // sched_info_arrive: the wait since it was queued ends.
                if let Some(q) = se.last_queued.take() {
                    se.run_delay += now.saturating_sub(q);
                }
                se.run_start = now;
                se.exec_start = now;
                se.vr_stamp = now;
                self.set_protect_slice(cpu, t, prev_task);
                let mm = self.tasks[t].mm;
                self.charge(cpu, self.cost.context_switch, Spent::ContextSwitch);
                if self.tasks[t].kthread {
                    // A kernel thread has no mm: enter_lazy_tlb keeps the previous one loaded,
                    // at the end of __schedule's interrupts-off section (a task to run found).
                    let irqs_off = prev_task.map_or(0, |_| self.cost.schedule_irqs_off);
                    self.schedule_switch_mm(cpu, None, irqs_off);
                } else {
                    self.switch_mm(cpu, Some(mm));
                }
            }
            None => {
                // To idle: the section holds the dequeue and new-idle balancing.
                let irqs_off = prev_task.map_or(0, |_| self.cost.schedule_irqs_off_idle);
                self.schedule_switch_mm(cpu, None, irqs_off);
            }
        }
    }

    /// sched_info_enqueue: a runnable task starts waiting at `now`, unless it already waits
    /// (a task the balancer moves between queues keeps waiting since it was first queued).
    fn sched_info_enqueue(&mut self, t: TaskId, now: u64) {
        self.sched.se[t].last_queued.get_or_insert(now);
    }

    /// Put a task on a CPU: run it now if the CPU is idle, else queue it (placed on its
    /// cfs_rq by place_entity either way).
    pub fn enqueue(&mut self, rqs: &mut RunQueues, cpu: CpuId, t: TaskId, now: u64) {
        self.sched_info_enqueue(t, now);
        self.place_entity(rqs, t, cpu);
        if self.cpus[cpu].curr.is_none() {
            // Idle until now (calls that reached it meanwhile ran in the idle time).
            self.idle_until(cpu, now);
            let c = &mut self.cpus[cpu];
            while c.next_tick <= c.clock {
                c.next_tick += self.cfg.tick_ns;
            }
            self.context_switch(cpu, Some(t));
        } else {
            self.set_task_cpu(t, cpu);
            rqs.rq[cpu].push_back(t);
        }
    }

    /// The current task leaves the CPU (it blocks or is done): __schedule picks the next
    /// queued task (pick_next_task_fair); an empty queue first tries new-idle balancing,
    /// else runs the idle task.
    pub fn schedule(&mut self, rqs: &mut RunQueues, cpu: CpuId) {
        let now = self.cpus[cpu].clock;
        self.update_curr(cpu);
        if let Some(prev) = self.cpus[cpu].curr {
            self.update_load_avg(prev, now);
            self.update_entity_lag(rqs, cpu, prev);
            self.sched.se[prev].sleeping = true;
        }
        match self.take_next(rqs, cpu) {
            Some(next) => self.context_switch(cpu, Some(next)),
            None => {
                self.context_switch(cpu, None);
                self.sched_balance_newidle(rqs, cpu, now);
            }
        }
    }

    /// The current task sleeps until `wake_at` (an hrtimer), or until someone wakes it.
    pub fn block_task(&mut self, rqs: &mut RunQueues, cpu: CpuId, wake_at: Option<u64>) {
        if let (Some(t), Some(at)) = (self.cpus[cpu].curr, wake_at) {
            self.sched.timers.insert((at, t));
        }
        self.schedule(rqs, cpu);
    }

    /// The current task sleeps until `at`; with `waker`, a device interrupt on that CPU wakes
    /// it then (the completion's try_to_wake_up runs there), else a timer on its own CPU.
    pub fn block_task_woken_by(
        &mut self,
        rqs: &mut RunQueues,
        cpu: CpuId,
        at: u64,
        waker: Option<CpuId>,
    ) {
        if let (Some(t), Some(w)) = (self.cpus[cpu].curr, waker) {
            self.sched.io_waker.insert(t, w);
        }
        self.block_task(rqs, cpu, Some(at));
    }

    /// Every workload task has finished (only foreign load would keep the machine busy).
    pub fn only_background_left(&self) -> bool {
        (0..self.tasks.len()).all(|t| self.tasks[t].done || self.sched.se[t].class != Class::Worker)
    }

    /// The earliest pending timer wake-up.
    pub fn next_timer(&self) -> Option<u64> {
        self.sched.timers.first().map(|&(at, _)| at)
    }

    /// Fire the earliest timer: its task wakes at the timer's time on the CPU it slept on
    /// (hrtimers run where they were armed), so that is the waker CPU too; a sleep a device
    /// completion ends is woken from the CPU its interrupt runs on.
    pub fn run_next_timer(&mut self, rqs: &mut RunQueues) {
        let Some((at, t)) = self.sched.timers.pop_first() else {
            return;
        };
        let waker = self.timer_waker(t, at);
        let io = self.sched.io_waker.remove(&t).is_some();
        if io {
            if self.sched.io_wakeups.len() <= waker {
                self.sched.io_wakeups.resize(self.nr_cpus(), 0);
            }
            self.sched.io_wakeups[waker] += 1;
        }
        // The completion's BLOCK softirq, or the timer wheel's TIMER softirq for a kernel
        // thread's timer (softirq.rs); it may be left to ksoftirqd.
        let softirq = io || self.tasks[t].timer_wheel;
        if softirq && !self.softirq_raise(rqs, waker, at, io) {
            self.softirq_defer_wakeup(waker, t);
        } else {
            let idle = self.cpus[waker].curr.is_none();
            self.try_to_wake_up(rqs, t, waker, at);
            let landed = self.sched.se[t].last_cpu == Some(waker)
                && (idle || self.cpus[waker].curr == Some(t));
            if softirq && landed {
                self.softirq_woke(waker, at);
            }
        }
        // The kworker a completion wakes on its CPU (nice -20): need_resched in the round.
        if io && self.kblockd_wake(rqs, waker, at) {
            self.softirq_woke(waker, at);
        }
    }

    /// The CPU task `t`'s timer, due at `at`, wakes it from: a device completion's interrupt
    /// CPU, else the CPU it slept on; an unbound timer-wheel kthread's timer is a global one
    /// and fires where timer migration puts it (tmigr_cpu).
    pub(crate) fn timer_waker(&self, t: TaskId, at: u64) -> CpuId {
        match self.sched.io_waker.get(&t) {
            Some(&w) => w,
            None => {
                let last = self.sched.se[t].last_cpu.unwrap_or(0);
                if self.tasks[t].timer_wheel {
                    self.tmigr_cpu(last, at)
                } else {
                    last
                }
            }
        }
    }

    /// kernel/time/timer_migration.c: a CPU that stops its tick in idle hands its global
    /// (non-pinned) timers to the hierarchy, and an active CPU expires them. A CPU counts as
    /// active here while it runs a task or went idle less than a tick ago (a short idle keeps
    /// the tick, tick_nohz_idle_retain_tick); the timer stays on `last` if it is active, else
    /// goes to the first active CPU, else stays (the last CPU to go idle wakes for it).
    fn tmigr_cpu(&self, last: CpuId, at: u64) -> CpuId {
        let active = |c: CpuId| {
            self.cpus[c].curr.is_some() || at.saturating_sub(self.cpus[c].clock) < self.cfg.tick_ns
        };
        if active(last) {
            return last;
        }
        (0..self.nr_cpus()).find(|&c| active(c)).unwrap_or(last)
    }

    /// select_task_rq_fair for waking `t` from `waker`: its previous CPU, else the waker's.
    /// Only reads the kernel (the engine asks it to predict a timer's wake-up). A task bound
    /// to one CPU wakes there (select_task_rq calls the class's hook only when
    /// nr_cpus_allowed > 1; select_fallback_rq gives the same CPU here).
    pub(crate) fn wake_target(&self, rqs: &RunQueues, t: TaskId, waker: CpuId, now: u64) -> CpuId {
        if let Some(p) = self.tasks[t].pinned {
            return p;
        }
        self.wake_placement(rqs, t, waker, now).0
    }

    /// wake_target, with the prev CPU to remember as p->recent_used_cpu if the wake-up
    /// happens and got that far in select_idle_sibling.
    fn wake_placement(
        &self,
        rqs: &RunQueues,
        t: TaskId,
        waker: CpuId,
        now: u64,
    ) -> (CpuId, Option<CpuId>) {
        let prev = self.sched.se[t].last_cpu.unwrap_or(waker);
        let (cpu, checked_recent) = self.select_task_rq_fair(rqs, t, prev, waker, now);
        (cpu, checked_recent.then_some(prev))
    }

    /// try_to_wake_up: choose the CPU (select_task_rq_fair), then enqueue; the woken task
    /// preempts the current one when pick_eevdf where the two hierarchies meet would choose
    /// the woken task's entity (check_preempt_wakeup_fair).
    /// A busy target sees the wake-up at its own clock (CPUs' clocks differ by up to a step).
    pub fn try_to_wake_up(&mut self, rqs: &mut RunQueues, t: TaskId, waker: CpuId, now: u64) {
        self.update_load_avg(t, now);
        let se = &mut self.sched.se[t];
        se.sleeping = false;
        se.wakeups += 1;
        let (cpu, recent) = self.wake_placement(rqs, t, waker, now);
        if recent.is_some() {
            self.sched.se[t].recent_used_cpu = recent;
        }
        if self.sched.se[t].last_cpu.is_some_and(|c| c != cpu) {
            self.vmstat.count_vm_event(MIGRATIONS_WAKEUP);
        }
        if self.ttwu_queue_cond(rqs, waker, cpu) {
            // ttwu_queue_wakelist: the wake-up is queued on the target's wake list and the
            // target is sent a call-function IPI (counted in /proc/interrupts' CAL line). Only
            // counted: the woken task starts at `now` as before.
            self.irq.function_call_interrupts[cpu] += 1;
            self.vmstat.count_vm_event(WAKELIST_IPIS);
        }
        self.activate_task(rqs, t, cpu, now);
    }

    /// ttwu_queue_cond (kernel/sched/core.c, 6.18): a wake-up from another CPU goes through the
    /// target's wake list, with an IPI, when the two CPUs do not share a last-level cache or
    /// the target has nothing to run (`nr_running` 0: idle). An idle CPU polling for work would
    /// take it without an IPI (call_function_single_prep_ipi); the model's idle CPUs halt.
    fn ttwu_queue_cond(&self, rqs: &RunQueues, waker: CpuId, cpu: CpuId) -> bool {
        waker != cpu
            && (!self.cpus_share_cache(waker, cpu)
                || (self.cpus[cpu].curr.is_none() && rqs.rq[cpu].is_empty()))
    }

    /// activate_task + wakeup_preempt for a woken or new task placed on `cpu`.
    pub fn activate_task(&mut self, rqs: &mut RunQueues, t: TaskId, cpu: CpuId, now: u64) {
        match self.cpus[cpu].curr {
            None => self.enqueue(rqs, cpu, t, now),
            Some(_) => {
                self.sched_info_enqueue(t, now);
                self.place_entity(rqs, t, cpu);
                self.set_task_cpu(t, cpu);
                rqs.rq[cpu].push_front(t);
                if self.wakeup_preempt_entity(rqs, cpu, t) {
                    self.resched(rqs, cpu, true);
                }
            }
        }
    }

    /// resched_curr + __schedule with the running task still runnable: pick again with it
    /// competing; if another task wins, it runs and the preempted one is queued (at the
    /// head after a wake-up preemption, else at the tail). Returns whether it switched.
    /// Picked again, it keeps its protection as it was (set_next_entity does not run).
    pub fn resched(&mut self, rqs: &mut RunQueues, cpu: CpuId, to_front: bool) -> bool {
        self.update_curr(cpu);
        self.sched.need_resched[cpu] = 0;
        let Some(curr) = self.cpus[cpu].curr else {
            return false;
        };
        let Some(next) = self
            .pick_next_task_fair(rqs, cpu, true)
            .filter(|&n| n != curr)
        else {
            return false;
        };
        rqs.rq[cpu].retain(|&x| x != next);
        if to_front {
            rqs.rq[cpu].push_front(curr);
        } else {
            rqs.rq[cpu].push_back(curr);
        }
        self.context_switch(cpu, Some(next));
        true
    }

    /// The tick's part of update_curr on `cpu` (entity_tick): if the running entity used up
    /// its request (update_deadline) or left its protected slice at a level that holds
    /// others, reschedule. Returns whether it switched.
    pub fn tick_resched(&mut self, rqs: &mut RunQueues, cpu: CpuId) -> bool {
        self.update_curr(cpu);
        self.need_resched(rqs, cpu) && self.resched(rqs, cpu, false)
    }

    /// After a kernel thread's step of `ran` ns that may have overrun the tick (a flusher
    /// chunk, a whole kswapd pass): the tick's update_deadline and pick (fair_pick.rs) decide
    /// whether a task waiting on `cpu` runs now, and the one that took over runs until it has
    /// had about as long.
    pub fn long_step_tick(&mut self, rqs: &mut RunQueues, cpu: CpuId, ran: u64) {
        if self.cpus[cpu].clock >= self.cpus[cpu].next_tick
            && !rqs.rq[cpu].is_empty()
            && self.tick_resched(rqs, cpu)
        {
            let c = &mut self.cpus[cpu];
            while c.next_tick < c.clock + ran {
                c.next_tick += self.cfg.tick_ns;
            }
        }
    }

    /// pick_next_task_fair for a CPU whose running task is leaving: take the chosen task
    /// off the queue.
    pub fn take_next(&mut self, rqs: &mut RunQueues, cpu: CpuId) -> Option<TaskId> {
        self.update_curr(cpu);
        let next = self.pick_next_task_fair(rqs, cpu, false)?;
        rqs.rq[cpu].retain(|&x| x != next);
        Some(next)
    }

    /// scheduler_tick on `cpu`: load tracking, the mm_cpumask sample, update_curr and, if the
    /// running entity's request is used up (a slice of 0.75–3 ms against a 4 ms tick: after a
    /// whole tick it always is) or its protection is over, a new pick with it competing
    /// (tick_resched); then
    /// trigger_load_balance.
    pub fn scheduler_tick(&mut self, rqs: &mut RunQueues, cpu: CpuId) {
        self.cpus[cpu].next_tick += self.cfg.tick_ns;
        let now = self.cpus[cpu].clock;
        self.sample_cpumasks(now);
        let Some(curr) = self.cpus[cpu].curr else {
            return;
        };
        self.update_load_avg(curr, now);
        for i in 0..rqs.rq[cpu].len() {
            let t = rqs.rq[cpu][i];
            self.update_load_avg(t, now);
        }
        self.tick_resched(rqs, cpu);
        self.trigger_load_balance(rqs, cpu, now);
    }

    /// Every tick period, record each mm's cpumask weight (the placement report's mean/max).
    fn sample_cpumasks(&mut self, now: u64) {
        if now < self.sched.next_sample {
            return;
        }
        self.sched.next_sample = (now / self.cfg.tick_ns + 1) * self.cfg.tick_ns;
        let s = &mut self.sched;
        s.cpumask_sum.resize(self.mms.len(), 0);
        s.cpumask_max.resize(self.mms.len(), 0);
        for (i, m) in self.mms.iter().enumerate() {
            let w = m.cpumask.weight() as u64;
            s.cpumask_sum[i] += w;
            s.cpumask_max[i] = s.cpumask_max[i].max(w);
        }
        s.samples += 1;
    }

    /// The scheduler's invariants: a runnable task is on exactly one CPU (running there or
    /// queued on one run queue), a sleeping one on none, and every task is where its
    /// affinity allows. Violations go to the run's invariant errors.
    pub fn check_sched(&mut self, rqs: &RunQueues, when: &str) {
        let mut seen = vec![0usize; self.tasks.len()];
        let mut errs = Vec::new();
        for cpu in 0..self.nr_cpus() {
            let on = self.cpus[cpu]
                .curr
                .into_iter()
                .chain(rqs.rq[cpu].iter().copied());
            for t in on {
                seen[t] += 1;
                if !self.cpu_allowed(t, cpu) {
                    errs.push(format!(
                        "{when}: task {t} is on CPU {cpu} outside its affinity"
                    ));
                }
                if self.sched.se[t].last_cpu != Some(cpu) {
                    errs.push(format!(
                        "{when}: task {t} is on CPU {cpu} but task_cpu says {:?}",
                        self.sched.se[t].last_cpu
                    ));
                }
            }
            if let Some(t) = self.cpus[cpu].curr {
                if self.tasks[t].cpu != Some(cpu) {
                    errs.push(format!(
                        "{when}: CPU {cpu} runs task {t}, which says {:?}",
                        self.tasks[t].cpu
                    ));
                }
            }
        }
        for (t, &n) in seen.iter().enumerate() {
            let runnable = !self.sched.se[t].sleeping && !self.tasks[t].done;
            if runnable && n != 1 || !runnable && n > 1 {
                errs.push(format!(
                    "{when}: task {t} ({}) is on {n} CPUs",
                    if runnable { "runnable" } else { "sleeping" }
                ));
            }
        }
        for e in errs {
            self.invariant_fail(e);
        }
    }

    /// Charge the running tasks' time up to their CPU's clock (end of the run).
    pub fn sched_account_running(&mut self) {
        for cpu in 0..self.nr_cpus() {
            if let Some(t) = self.cpus[cpu].curr {
                let now = self.cpus[cpu].clock;
                let se = &mut self.sched.se[t];
                let ran = now.saturating_sub(se.run_start);
                se.sum_exec_runtime += ran;
                se.run_start = now;
                self.sched.busy_ns[cpu] += ran;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RunQueues;
    use crate::kernel::Kernel;

    /// A task bound to one CPU is predicted to wake there, and the full placement
    /// (select_task_rq_fair, then select_fallback_rq) agrees, from every waker, whatever CPU
    /// it last ran on and whichever CPUs are busy.
    #[test]
    fn bound_task_wake_target_is_the_placement() {
        let cpus = 8;
        let mut k = Kernel::for_test(cpus);
        let mut rqs = RunQueues::new(cpus);
        // Unbound tasks running on CPUs 1, 2 and 5, one more waiting on 5: some targets busy,
        // some idle.
        for c in [1, 2, 5, 5] {
            let t = k.task_new(usize::MAX, None, 0, 1);
            k.sched.se[t].sleeping = false;
            k.sched.se[t].last_cpu = Some(c);
            if k.cpus[c].curr.is_some() {
                rqs.rq[c].push_back(t);
            } else {
                k.tasks[t].cpu = Some(c);
                k.cpus[c].curr = Some(t);
            }
        }
        let mut checked = 0;
        for p in 0..cpus {
            for last in [None, Some(p), Some((p + 3) % cpus)] {
                let t = k.task_new(usize::MAX, Some(p), 0, 1);
                k.sched.se[t].sleeping = true;
                k.sched.se[t].last_cpu = last;
                for waker in 0..cpus {
                    let placed = k.wake_placement(&rqs, t, waker, 1_000).0;
                    assert_eq!(placed, p, "placement of a task bound to {p}");
                    assert_eq!(k.wake_target(&rqs, t, waker, 1_000), placed);
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, cpus * 3 * cpus);
    }
}
