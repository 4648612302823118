//! The discrete-event core. Each CPU has its own virtual clock; the engine always steps the
//! busy CPU with the smallest clock (ties by CPU id), so the run is deterministic. A step is a
//! short stretch of the task's accesses: up to `sim.step_pages` pages through the TLB, ending
//! early at a page fault (which is handled in the step, including any direct reclaim on this
//! CPU) or at the CPU's next scheduler tick.
//!
//! Approximation: a step's state changes apply at once. Because the stepped CPU has the
//! minimum clock, every other CPU is at or after the step's start when an IPI reaches it; the
//! target is charged its handling time and the sender waits for the slowest ack
//! (arch/x86/tlb.rs). A direct-reclaim call is one step, so no other CPU observes its
//! intermediate states (e.g. a cleared PTE whose flush is still pending).

use crate::kernel::{CpuId, Kernel, TaskId};
use crate::mm::memory::Access;
use crate::sched::RunQueues;
use crate::workload::{AccessModel, Sweep};
use rand::Rng;

pub struct Engine<'a> {
    pub k: Kernel,
    pub rqs: RunQueues,
    pub model: AccessModel,
    pub progress: Option<&'a dyn Fn(u64, u64)>,
}

impl<'a> Engine<'a> {
    pub fn new(k: Kernel, model: AccessModel) -> Engine<'a> {
        let n = k.nr_cpus();
        Engine {
            k,
            rqs: RunQueues::new(n),
            model,
            progress: None,
        }
    }

    /// Place the tasks: pinned ones on their CPU, unpinned ones round-robin.
    pub fn place_tasks(&mut self) {
        let n = self.k.nr_cpus();
        for t in 0..self.k.tasks.len() {
            let cpu = self.k.tasks[t].pinned.unwrap_or(t % n);
            self.k.enqueue(&mut self.rqs, cpu, t, 0);
        }
    }

    /// The busy CPU with the smallest clock.
    fn next_cpu(&self) -> Option<CpuId> {
        let mut best: Option<CpuId> = None;
        for (i, c) in self.k.cpus.iter().enumerate() {
            if c.curr.is_some() && best.is_none_or(|b| c.clock < self.k.cpus[b].clock) {
                best = Some(i);
            }
        }
        best
    }

    /// Run until every busy CPU's clock reaches `until` (or no task is left).
    pub fn run_until(&mut self, until: u64, total: u64) {
        let mut next_progress = 0;
        while let Some(cpu) = self.next_cpu() {
            let now = self.k.cpus[cpu].clock;
            if now >= until {
                break;
            }
            if now >= next_progress {
                if let Some(p) = self.progress {
                    p(now.min(total), total);
                }
                next_progress = now + self.k.cfg.progress_every_ns;
            }
            if now >= self.k.cpus[cpu].next_tick {
                self.k.scheduler_tick(&mut self.rqs, cpu);
                continue;
            }
            let t = self.k.cpus[cpu].curr.expect("busy CPU");
            if self.k.tasks[t].kthread {
                self.k.kswapd_step(&mut self.rqs, cpu);
            } else {
                self.step(cpu, t);
            }
            // A wakeup_kswapd during the step places kswapd now (mm/kswapd.rs).
            self.k.kthread_wakeups(&mut self.rqs, now);
        }
    }

    /// One step of task `t` on `cpu`.
    fn step(&mut self, cpu: CpuId, t: TaskId) {
        self.k.steps += 1;
        let k = &mut self.k;
        let m = &self.model;
        let mm = k.tasks[t].mm;
        let tick = k.cpus[cpu].next_tick;
        for _ in 0..k.cfg.step_pages {
            let task = &k.tasks[t];
            let (vp, write) = if m.random {
                let len = task.end - task.start;
                let vp = task.start + k.rng.gen_range(0..len);
                (vp, m.random_write)
            } else {
                (task.cursor, m.sweeps[task.phase].writes())
            };
            let write = match m.sweeps[k.tasks[t].phase] {
                Sweep::Mixed(p) => u64::from(k.rng.gen::<u32>()) < p,
                _ => write,
            };
            let sweep = (!m.random).then(|| m.sweeps[k.tasks[t].phase]);
            let a = if sweep == Some(Sweep::Populate) {
                k.populate_read(cpu, mm, vp)
            } else {
                k.user_access(cpu, mm, vp, write)
            };
            if a == Access::Killed {
                // Restarted by exit_mmap; the next step starts the new process.
                break;
            }
            let task = &mut k.tasks[t];
            if sweep != Some(Sweep::Populate) {
                task.pages_touched += 1;
            }
            task.bogo_units += match sweep {
                Some(Sweep::WriteUnits(u)) => u64::from(u),
                _ if write => m.bogo_units_per_store,
                _ => 0,
            };
            if !m.random {
                task.cursor += 1;
                if task.cursor == task.end {
                    task.cursor = task.start;
                    task.phase += 1;
                    if task.phase == m.sweeps.len() {
                        task.phase = 0;
                        task.passes += 1;
                        if m.one_cycle {
                            task.done = true;
                            task.done_at = Some(k.cpus[cpu].clock);
                            k.schedule(&mut self.rqs, cpu);
                            return;
                        }
                    }
                }
            }
            if a == Access::Fault || k.cpus[cpu].clock >= tick {
                break;
            }
        }
    }
}
