//! How bench starts a workload's processes (crates/host: `fork_in_memcg`): its thread on
//! CPU `sim.bench_launch_cpu` forks them one after another; each child first writes itself
//! into the run's memcg (sched/cgroup_attach.rs: the first waits an RCU grace period, the
//! others wait behind it on cgroup_mutex), then maps its buffer and clones its sweeping
//! threads, and waits for them. Where fork, the grace period's wake-ups and clone put each
//! task decides which CPUs every mm_cpumask holds for the whole run.
//!
//! CPU times measured from six scheduler traces of bench's start on this project's 2-vCPU
//! guest (`scripts/start-race-trace.sh`, 2026-11-26, docs/results/2026-11-26-memcg-attach-start.md).

use crate::kernel::{CpuId, Kernel, TaskId};
use crate::sched::fork::StartOp;
use crate::sched::Class;
use std::collections::VecDeque;

/// bench's CPU time from one fork to the next (median of six: 164-250 µs).
pub const BENCH_FORK_NS: u64 = 196_000;
/// A child's CPU time from its first run to its write to cgroup.procs blocking on
/// cgroup_mutex (median of six: 89-137 µs).
pub const CHILD_SETUP_NS: u64 = 99_500;
/// A child's CPU time from its attach to cloning its first thread: mmap of the buffer and
/// the thread's creation (median of twelve: 116-409 µs).
pub const MAP_CLONE_NS: u64 = 230_000;

/// A worker process: its main thread (asleep until bench forks it, with the process's mm)
/// and its threads (asleep until the main thread clones them).
pub struct Process {
    pub main: TaskId,
    pub threads: Vec<TaskId>,
}

/// Make `main` a main thread that bench forks: it attaches, clones `threads`, then waits.
pub fn main_thread_script(k: &mut Kernel, p: &Process) {
    let se = &mut k.sched.se[p.main];
    se.class = Class::Starter;
    se.sleeping = true;
    k.tasks[p.main].helper = true;
    let mut script = VecDeque::from([
        StartOp::Run(CHILD_SETUP_NS),
        StartOp::AttachMemcg,
        StartOp::Run(MAP_CLONE_NS),
    ]);
    for &t in &p.threads {
        k.sched.se[t].sleeping = true;
        script.push_back(StartOp::Fork(t));
    }
    script.push_back(StartOp::Wait);
    k.sched.starters.insert(p.main, script);
}

/// bench on `launch_cpu` forking `procs` in order, then waiting for them.
pub fn fork_processes(k: &mut Kernel, procs: &[Process], launch_cpu: CpuId) {
    k.rcu_gp_kthread_new();
    let bench = k.starter_task(Some(launch_cpu));
    let mut script = VecDeque::new();
    for (i, p) in procs.iter().enumerate() {
        main_thread_script(k, p);
        if i > 0 {
            script.push_back(StartOp::Run(BENCH_FORK_NS));
        }
        script.push_back(StartOp::Fork(p.main));
    }
    script.push_back(StartOp::Wait);
    k.sched.starters.insert(bench, script);
}
