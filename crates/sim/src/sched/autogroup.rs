//! Task groups as autogroup makes them (kernel/sched/autogroup.c): with
//! `sched.autogroup = true` (the kernel's `sched_autogroup_enabled`), every session is a task
//! group under the root task group, and CFS shares the CPUs between the groups before it
//! shares a group's part between its tasks. The hierarchy is only as deep as autogroup makes
//! it: root → session group → task. Kernel threads (kswapd) stay in the root task group.
//!
//! The groups here: the workload's session (group 0: the shell that started the benchmark)
//! and `machine.background_load.groups` foreign sessions. A group's `shares` come from its
//! autogroup nice (proc_sched_autogroup_set_nice: sched_prio_to_weight[nice + 20]), 1024 at
//! nice 0. With `sched.autogroup = false` every task is a root entity and a task's nice
//! weighs against every other task on its CPU.

use crate::kernel::{Kernel, TaskId};

/// sched_prio_to_weight (kernel/sched/core.c): the load weight of nice -20..=19.
pub const SCHED_PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, // -20
    29154, 23254, 18705, 14949, 11916, // -15
    9548, 7620, 6100, 4904, 3906, // -10
    3121, 2501, 1991, 1586, 1277, // -5
    1024, 820, 655, 526, 423, // 0
    335, 272, 215, 172, 137, // 5
    110, 87, 70, 56, 45, // 10
    36, 29, 23, 18, 15, // 15
];

/// MIN_SHARES: the smallest weight calc_group_shares gives a group's entity on a CPU.
pub const MIN_SHARES: u64 = 2;

/// The load weight of a nice level (set_load_weight; scale_load_down units).
pub fn nice_to_weight(nice: i32) -> u64 {
    SCHED_PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// The workload's session (the group every workload task belongs to).
pub const WORKLOAD_GROUP: usize = 0;

/// struct task_group of one autogroup, with its per-CPU group entities (`tg->se[cpu]`) reduced
/// to what the pick needs: their vruntime, deadline and vprot on the CPU's root cfs_rq.
#[derive(Clone, Debug, Default)]
pub struct TaskGroup {
    /// The autogroup's nice (`/proc/PID/autogroup`).
    pub nice: i32,
    /// tg->shares (scale_load_down units).
    pub shares: u64,
    /// Per CPU: the group entity's vruntime on that CPU's root cfs_rq.
    pub se_vruntime: Vec<u64>,
    /// Per CPU: the group entity's virtual deadline there (update_deadline, place_entity).
    pub se_deadline: Vec<u64>,
    /// Per CPU: the group entity's protected slice (set_protect_slice).
    pub se_vprot: Vec<u64>,
    /// Per CPU: the group entity's load weight when it was last placed or reweighted
    /// (se->load.weight; 0 before its first placement there).
    pub se_weight: Vec<u64>,
}

impl TaskGroup {
    /// autogroup_create + proc_sched_autogroup_set_nice.
    pub fn new(nice: i32, nr_cpus: usize) -> TaskGroup {
        TaskGroup {
            nice,
            shares: nice_to_weight(nice),
            se_vruntime: vec![0; nr_cpus],
            se_deadline: vec![0; nr_cpus],
            se_vprot: vec![0; nr_cpus],
            se_weight: vec![0; nr_cpus],
        }
    }
}

impl Kernel {
    /// task_group(p) for the fair class: the task's autogroup, or None for the root task
    /// group (autogroup off, or a kernel thread).
    pub fn task_group(&self, t: TaskId) -> Option<usize> {
        if !self.sched.autogroup || self.tasks[t].kthread {
            return None;
        }
        Some(self.sched.se[t].group)
    }
}
