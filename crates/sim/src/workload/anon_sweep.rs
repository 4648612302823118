//! `anon-sweep`: `processes` processes, each its own mm with `bytes` of anonymous
//! memory, each with `threads` threads sharing that mm (so one mm runs on several CPUs and its
//! mm_cpumask holds all of them), pinned as `workload.cpus` says or placed by the scheduler.
//!
//! As in the host worker (crates/host/src/workers/anon_sweep.rs): with the sequential pattern
//! thread t of T sweeps its slice [n·t/T, n·(t+1)/T) of its process's n pages, the first pass
//! writing every page (the worker populating its buffer), every later pass writing each page
//! with probability `write_ratio` and reading it otherwise; with the random pattern every
//! thread touches uniformly random pages of the whole buffer, each a write with probability
//! `write_ratio` (approximation: the model has no populate pass there, so a read of a page never
//! written maps the zero page). Throughput: pages touched per second (the host's unit).

use super::{AccessModel, Sweep};
use crate::config::{SimConfig, StartCpus};
use crate::engine::Engine;
use crate::kernel::{Backing, CpuId, Kernel, MmId, TaskId};
use reclaimlab_core::scenario::{AnonSweep, Pattern};
use reclaimlab_core::Scenario;

const PAGE: u64 = 4096;

impl super::Workload for AnonSweep {
    fn access_model(&self, _k: &Kernel) -> anyhow::Result<AccessModel> {
        Ok(access_model(self))
    }

    fn takes_start_placement(&self) -> bool {
        true
    }

    /// Processes forked by bench, each attaching itself to the memcg first (bench_start.rs);
    /// with `sim.bench_start = "static"`, forked together: every main thread is running while
    /// the sweepers are cloned; with `sim.start_placement`, where a host run's trace saw them.
    fn fork(&self, scn: &Scenario, cfg: &SimConfig, e: &mut Engine) -> anyhow::Result<()> {
        let w = self;
        let pages = w.bytes_per_process / PAGE;
        if cfg.start_placement.is_none() && cfg.bench_start_attach {
            let procs: Vec<_> = (0..w.processes)
                .map(|p| {
                    let mm = e.k.mm_alloc(pages, Backing::Anon, true);
                    let main = e.k.task_new(mm, w.cpu_of(p, 0), 0, 0);
                    let threads = (0..w.threads)
                        .map(|t| {
                            let (s, end) = thread_range(w, pages, t);
                            let task = e.k.task_new(mm, w.cpu_of(p, t), s, end);
                            // Cloned with the main thread's affinity, a thread pinned elsewhere
                            // then moves to its pin (sched_setaffinity): one migration.
                            if let (Some(pin), Some(main_cpu)) = (w.cpu_of(p, t), w.cpu_of(p, 0)) {
                                if pin != main_cpu {
                                    e.k.sched.se[task].last_cpu = Some(main_cpu);
                                }
                            }
                            task
                        })
                        .collect();
                    super::bench_start::Process { main, threads }
                })
                .collect();
            super::bench_start::fork_processes(&mut e.k, &procs, cfg.bench_launch_cpu);
            return Ok(());
        }
        let mains: Vec<_> = (0..w.processes)
            .map(|p| {
                let mm = e.k.mm_alloc(pages, Backing::Anon, true);
                main_thread(&mut e.k, w, p, mm)
            })
            .collect();
        let Some(start) = &cfg.start_placement else {
            for (p, &(main, _)) in mains.iter().enumerate() {
                clone_threads(&mut e.k, w, p, main, pages);
            }
            // The main threads ran first (mmap, clone) and now wait in join.
            for (main, cpu) in mains {
                e.k.run_helper(main, &[cpu]);
            }
            return Ok(());
        };
        check_start(w, start, e.k.nr_cpus())
            .map_err(|m| scn.source.err("sim.start_placement", m))?;
        for (p, &(main, _)) in mains.iter().enumerate() {
            clone_threads_onto(&mut e.k, w, p, main, pages, &start[p].sweepers);
            let cpus = start_mm_cpus(w, p, &start[p]);
            e.k.run_helper(main, &cpus);
        }
        Ok(())
    }
}

/// Passes after the populate pass before the model's sweep list wraps round and populates
/// again (one pass of all writes): 100 000 passes of even a 16M buffer (4096 pages) at 10 M
/// simulated pages/s take 40 s, longer than the suite's runs.
const PASSES: usize = 100_000;

/// The access model: a write pass, then passes that write with probability `write_ratio`.
pub fn access_model(w: &AnonSweep) -> AccessModel {
    let steady = Sweep::with_write_ratio(w.write_ratio);
    let random = matches!(w.pattern, Pattern::Random);
    let sweeps = if random {
        vec![steady]
    } else {
        let mut v = vec![steady; PASSES + 1];
        v[0] = Sweep::Write;
        v
    };
    AccessModel {
        sweeps,
        random,
        random_write: random && steady == Sweep::Write,
        bogo_units_per_store: 0,
        one_cycle: false,
        ycsb: None,
        // The worker's Mapping::touch: a one-byte atomic add or a volatile load per page.
        byte_touch: true,
    }
}

/// Thread `t`'s pages [start, end) of a process's `pages`.
pub fn thread_range(w: &AnonSweep, pages: u64, t: usize) -> (u64, u64) {
    match w.pattern {
        Pattern::Random => (0, pages),
        Pattern::Sequential => {
            let n = w.threads as u64;
            let t = t as u64;
            (pages * t / n, pages * (t + 1) / n)
        }
    }
}

/// Process `p` as the host's worker runs it: a main thread that maps the buffer on the
/// process's CPU and clones the sweeping threads (`clone_threads`), then sleeps in join for
/// the whole run. Returns the main thread and its CPU (it has not run yet:
/// `Kernel::run_helper`). Unpinned processes start round-robin (fork balancing of processes
/// forked together).
pub fn main_thread(k: &mut Kernel, w: &AnonSweep, p: usize, mm: MmId) -> (TaskId, CpuId) {
    let cpu = w.cpu_of(p, 0).unwrap_or(p % k.nr_cpus());
    let main = k.task_new(mm, Some(cpu), 0, 0);
    k.tasks[main].helper = true;
    (main, cpu)
}

/// The sweeping threads of process `p`, cloned by its main thread. An unpinned one goes where
/// clone's placement puts it (sched_balance_fork → find_idlest_cpu): the CPU with the fewest
/// tasks, counting the main threads (running while they clone) and the sweepers placed so
/// far, the parent's CPU on a tie. So a lone process on an idle machine puts its sweeper on
/// the other CPU and its mm_cpumask holds both CPUs from the start, as on the host.
pub fn clone_threads(k: &mut Kernel, w: &AnonSweep, p: usize, main: TaskId, pages: u64) {
    let n = k.nr_cpus();
    let mm = k.tasks[main].mm;
    let main_cpu = k.tasks[main].pinned.unwrap_or(0);
    let running = |k: &Kernel, cpu: CpuId| {
        k.tasks
            .iter()
            .filter(|t| t.pinned.or(t.initial_cpu) == Some(cpu))
            .count()
    };
    for t in 0..w.threads {
        let (s, end) = thread_range(w, pages, t);
        let pinned = w.cpu_of(p, t);
        let initial = pinned.is_none().then(|| {
            (0..n)
                .min_by_key(|&c| (running(k, c), c != main_cpu, c))
                .unwrap_or(main_cpu)
        });
        let task = k.task_new(mm, pinned, s, end);
        k.tasks[task].initial_cpu = initial;
    }
}

/// `sim.start_placement` against the workload: one entry per process, one sweeper CPU per
/// thread, every CPU on the machine.
pub fn check_start(w: &AnonSweep, start: &[StartCpus], cpus: usize) -> Result<(), String> {
    if start.len() != w.processes {
        return Err(format!(
            "gives {} processes, the workload has {} (workload.processes)",
            start.len(),
            w.processes
        ));
    }
    for (p, s) in start.iter().enumerate() {
        if s.sweepers.len() != w.threads {
            return Err(format!(
                "process {p} has {} sweeper CPUs, the workload has {} threads (workload.threads)",
                s.sweepers.len(),
                w.threads
            ));
        }
        if s.main.is_empty() {
            return Err(format!("process {p}: its main thread ran on no CPU"));
        }
        if let Some(c) = s.main.iter().chain(&s.sweepers).find(|&&c| c >= cpus) {
            return Err(format!("process {p}: CPU {c}, but machine.cpus is {cpus}"));
        }
    }
    Ok(())
}

/// The CPUs process `p`'s mm runs on before its sweep: its main thread's, then each pinned
/// sweeper's first CPU where that is not its pin (as on the host, a thread is cloned where
/// the idlest CPU is and pins itself once running, so it has run there: that CPU joins the
/// mask like the main thread's).
pub fn start_mm_cpus(w: &AnonSweep, p: usize, s: &StartCpus) -> Vec<CpuId> {
    let mut cpus = s.main.clone();
    for (t, &c) in s.sweepers.iter().enumerate() {
        if w.cpu_of(p, t).is_some_and(|pin| pin != c) && !cpus.contains(&c) {
            cpus.push(c);
        }
    }
    cpus
}

/// The sweeping threads of process `p`, each starting on the CPU `sweepers` gives. A pinned
/// one first seen elsewhere ran there before its sched_setaffinity moved it to its pin: its
/// task_cpu was that CPU, so placing it on the pin counts the migration (set_task_cpu).
pub fn clone_threads_onto(
    k: &mut Kernel,
    w: &AnonSweep,
    p: usize,
    main: TaskId,
    pages: u64,
    sweepers: &[CpuId],
) {
    let mm = k.tasks[main].mm;
    for (t, &cpu) in sweepers.iter().enumerate().take(w.threads) {
        let (s, end) = thread_range(w, pages, t);
        let pinned = w.cpu_of(p, t);
        let task = k.task_new(mm, pinned, s, end);
        k.tasks[task].initial_cpu = pinned.is_none().then_some(cpu);
        if pinned.is_some_and(|pin| pin != cpu) {
            k.sched.se[task].last_cpu = Some(cpu);
        }
    }
}
