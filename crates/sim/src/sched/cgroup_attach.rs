//! A process moving itself into a cgroup by writing its pid to `cgroup.procs`: the write
//! serialises on cgroup_mutex and takes cgroup_threadgroup_rwsem for writing
//! (kernel/cgroup/cgroup-v1.c __cgroup1_procs_write → cgroup_kn_lock_live, then
//! cgroup_procs_write_start → cgroup_attach_lock → percpu_down_write). A percpu rwsem's
//! writer first switches its readers to the slow path with rcu_sync_enter
//! (kernel/rcu/sync.c), which waits for an RCU grace period unless a writer left less than a
//! grace period ago (the state is still GP_PASSED, GP_EXIT or GP_REPLAY). The grace period is
//! driven by the RCU grace-period kthread: woken when the wait starts, it runs briefly, sleeps
//! until the grace period ends, then wakes the writer from the CPU it runs on.
//!
//! Why it matters here: bench's worker processes each write their own pid as their first
//! act, so the first blocks for a grace period and the second behind it on cgroup_mutex. The
//! first is woken by the kthread from the CPU the kthread occupies, and select_idle_sibling
//! sends it to the other, idle CPU: its mm has then run on both, and x86 never clears a CPU
//! from mm_cpumask on switch-away, so every reclaim flush of that mm reaches both CPUs for
//! the whole run (docs/results/2026-11-26-memcg-attach-start.md).
//!
//! Times measured from six scheduler traces of bench's start on this project's 2-vCPU guest
//! (`scripts/start-race-trace.sh`, 2026-11-26; the log above lists each run's figures).

use super::fork::StartOp;
use super::{Class, RunQueues};
use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, TaskId};
use std::collections::VecDeque;

/// An RCU grace period while the machine starts the workload: the first writer's sleep from
/// its switch-out to the kthread's wake-up, median of six runs (5.98-6.71 ms, one 14.5 ms).
pub const RCU_GP_NS: u64 = 6_634_000;
/// The grace-period kthread's run when woken to start a grace period (median of six).
pub const GP_KTHREAD_START_NS: u64 = 17_000;
/// ... and when it ends one and wakes the waiter (median of six).
pub const GP_KTHREAD_END_NS: u64 = 14_000;
/// The write's CPU time under cgroup_mutex before rcu_sync_enter sleeps: the first worker's
/// time from its first run to blocking (197.5 µs, median) less the second's, which blocks at
/// cgroup_mutex (99.5 µs).
pub const ATTACH_LOCKED_NS: u64 = 98_000;
/// The rest of the write once the grace period has passed (cgroup_migrate, the unlock and
/// the wake-up of the next writer): 34 and 37 µs in the two runs where the writer ran at once.
pub const ATTACH_FINISH_NS: u64 = 35_000;

/// cgroup_mutex and the rcu_sync state of cgroup_threadgroup_rwsem.
#[derive(Clone, Debug, Default)]
pub struct CgroupAttach {
    /// The writer holding cgroup_mutex.
    pub holder: Option<TaskId>,
    /// Writers asleep on cgroup_mutex, in arrival order.
    pub waiters: VecDeque<TaskId>,
    /// rcu_sync is back at GP_IDLE from this time on (a grace period after the last writer
    /// left); before it a new writer does not wait.
    pub idle_from: u64,
    /// The RCU grace-period kthread (rcu_gp_kthread_new, with the workload's tasks).
    pub gp_kthread: Option<TaskId>,
}

impl Kernel {
    /// The write to cgroup.procs by `t` running on `cpu`: take cgroup_mutex or sleep on it;
    /// holding it, wait a grace period if rcu_sync is idle. A writer that sleeps resumes its
    /// script when woken.
    pub fn cgroup_attach(&mut self, rqs: &mut RunQueues, cpu: CpuId, t: TaskId) {
        let a = &mut self.sched.cgroup_attach;
        if a.holder.is_some_and(|h| h != t) {
            // mutex_lock's slow path: sleep until the holder's unlock wakes us, then retry.
            a.waiters.push_back(t);
            self.push_script_front(t, StartOp::AttachMemcg);
            self.block_task(rqs, cpu, None);
            return;
        }
        a.holder = Some(t);
        self.charge(cpu, ATTACH_LOCKED_NS, Spent::Other);
        let now = self.cpus[cpu].clock;
        self.push_script_front(t, StartOp::AttachUnlock);
        if now < self.sched.cgroup_attach.idle_from {
            // rcu_sync_enter: the last writer's grace period is still running or just passed.
            return;
        }
        // rcu_sync_enter from GP_IDLE: start a grace period (the kthread is woken from this
        // CPU) and sleep until it ends; the kthread runs as the writer leaves the CPU.
        let kt = self
            .sched
            .cgroup_attach
            .gp_kthread
            .expect("rcu_gp_kthread_new before any cgroup.procs write");
        self.sched.starters.insert(
            kt,
            VecDeque::from([
                StartOp::Run(GP_KTHREAD_START_NS),
                StartOp::Sleep(RCU_GP_NS),
                StartOp::Run(GP_KTHREAD_END_NS),
                StartOp::Wake(t),
                StartOp::Block,
            ]),
        );
        self.block_task(rqs, cpu, None);
        self.try_to_wake_up(rqs, kt, cpu, now);
    }

    /// The end of the write: percpu_up_write (rcu_sync_exit: readers go back to the fast path
    /// a grace period later), then mutex_unlock, which wakes the first waiter.
    pub fn cgroup_attach_unlock(&mut self, rqs: &mut RunQueues, cpu: CpuId, t: TaskId) {
        self.charge(cpu, ATTACH_FINISH_NS, Spent::Other);
        let now = self.cpus[cpu].clock;
        let a = &mut self.sched.cgroup_attach;
        debug_assert_eq!(a.holder, Some(t));
        a.holder = None;
        a.idle_from = now + RCU_GP_NS;
        if let Some(w) = a.waiters.pop_front() {
            self.try_to_wake_up(rqs, w, cpu, now);
        }
    }

    /// The RCU grace-period kthread (rcu_preempt): not bound to a CPU, no mm, asleep until a
    /// writer wakes it. Created with the workload's tasks.
    pub fn rcu_gp_kthread_new(&mut self) -> TaskId {
        let t = self.task_new(usize::MAX, None, 0, 1);
        self.tasks[t].kthread = true;
        self.tasks[t].helper = true;
        let se = &mut self.sched.se[t];
        se.class = Class::Starter;
        se.sleeping = true;
        // It has run since boot and sleeps nearly always: no load (not a new task's full
        // weight, which the model would never decay while it sleeps).
        se.avg = crate::sched::pelt::Avg::default();
        self.sched.cgroup_attach.gp_kthread = Some(t);
        t
    }

    fn push_script_front(&mut self, t: TaskId, op: StartOp) {
        self.sched.starters.entry(t).or_default().push_front(op);
    }
}
