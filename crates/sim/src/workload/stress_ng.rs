//! stress-ng's processes around its stressors (stress-ng 0.15): the parent forks one process
//! per stressor instance (stress_run_parallel), and each instance, in stress_oomable_child,
//! forks the process that runs the stressor's loop, then waits for it in waitpid (as the
//! parent waits for the instances). So a vm worker's process is a grandchild that fork
//! placement put somewhere while its siblings, cousins and their parents were starting, and
//! its mm_cpumask starts with that CPU, not with a CPU chosen for it in advance.
//!
//! The CPU time between those forks was read off bench's scheduler trace of stress-ng 0.15.06
//! on this project's 2-vCPU guest (`reclaimlab bench stress-vm --set workload.workers=4`, 3
//! runs, 2026-11-25; docs/results/2026-11-25-stress-ng-start.md): the parent's four instances
//! were first seen within 0.12-0.39 ms of each other, and the first worker process 0.72 ms
//! after its instance (on a machine where both CPUs were taken, so an upper bound).

use crate::kernel::{CpuId, Kernel, TaskId};
use crate::sched::fork::StartOp;
use std::collections::VecDeque;

/// The parent's CPU time per instance it forks (measured, see the module comment).
pub const PARENT_FORK_NS: u64 = 100_000;
/// An instance's CPU time from its start to forking its worker (measured upper bound).
pub const INSTANCE_SETUP_NS: u64 = 700_000;

/// Put the stress-ng parent on `launch_cpu` and make `workers` its grandchildren: each worker
/// waits (asleep, never run) until its instance forks it.
pub fn fork_tree(k: &mut Kernel, workers: &[TaskId], launch_cpu: CpuId) {
    let parent = k.starter_task(Some(launch_cpu));
    let mut script = VecDeque::new();
    for &w in workers {
        k.sched.se[w].sleeping = true;
        let instance = k.starter_task(None);
        k.sched.starters.insert(
            instance,
            VecDeque::from([
                StartOp::Run(INSTANCE_SETUP_NS),
                StartOp::Fork(w),
                StartOp::Wait,
            ]),
        );
        script.extend([StartOp::Run(PARENT_FORK_NS), StartOp::Fork(instance)]);
    }
    script.push_back(StartOp::Wait);
    k.sched.starters.insert(parent, script);
}
