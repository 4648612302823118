//! Foreign load on the machine (`machine.background_load`): tasks of other programs that wake
//! every `period`, run for `duty` of it and sleep again, on the given CPUs. Each is a process
//! of its own (an mm with nothing mapped that matters here), so running it switches the CPU
//! away from the workload's mm: it competes for CPUs, takes part in load balancing and
//! wake-up placement, and its CPU drops out of flush IPIs for the workload's mms while it
//! runs (should_flush_tlb). A quiet machine is `tasks = 0` (the default). The tasks run at
//! `nice` in `groups` sessions of their own (autogroups at `group_nice`, autogroup.rs).
//!
//! Kernel threads that run on the machine's CPUs (`machine.background_kthreads`: per-CPU
//! kworkers such as the block layer's kblockd on a device's interrupt CPU) are the same
//! periodic bursts, one task bound to each CPU given a share (kthread_bind: a per-CPU
//! worker pool's threads run only there), in the root task group, with no mm of their own:
//! context_switch's enter_lazy_tlb keeps the previous mm loaded and the CPU lazy. So they do
//! not take a CPU out of a flush's IPI set the way a process does, but they make it busy for
//! wake-up placement and preempt what runs there.

use super::autogroup::{nice_to_weight, WORKLOAD_GROUP};
use super::{Class, RunQueues};
use crate::cpumask::CpuMask;
use crate::kernel::{Backing, CpuId, Kernel, TaskId};
use reclaimlab_core::Scenario;

/// The longest stretch of a background burst taken in one engine step: below an IPI's round
/// trip (~2 us bare metal, ~20 us in a KVM guest), so a flush sent during a burst sees it.
const BURST_SLICE_NS: u64 = 2_000;

/// The most `machine.background_load.tasks`.
pub const MAX_TASKS: u64 = 4096;

/// `machine.background_load.*`.
#[derive(Clone, Debug, PartialEq)]
pub struct BackgroundLoad {
    /// `tasks`: how many foreign tasks.
    pub tasks: usize,
    /// `duty`: the fraction of each period a task runs (0 < duty ≤ 1).
    pub duty: f64,
    /// `period` (ns).
    pub period_ns: u64,
    /// `cpus`: where they may run (None: every CPU).
    pub cpus: Option<Vec<usize>>,
    /// `groups`: how many sessions (autogroups) the tasks belong to, spread round-robin.
    pub groups: usize,
    /// `nice`: the tasks' nice level (their weight inside their group, or against every
    /// task with `sched.autogroup = false`).
    pub nice: i32,
    /// `group_nice`: the sessions' autogroup nice (`/proc/PID/autogroup`: the group's
    /// shares).
    pub group_nice: i32,
    /// Kernel threads (`machine.background_kthreads`): no mm, the root task group.
    pub kthread: bool,
}

/// A background task's burst in progress.
#[derive(Clone, Debug, Default)]
pub struct BgState {
    pub task: TaskId,
    /// Start of the current period.
    pub period_start: u64,
    /// Run time left in this period's burst.
    pub left_ns: u64,
    /// The load it belongs to: None for `machine.background_load`, else its index in
    /// `Sched::kthreads`.
    pub kthreads: Option<usize>,
}

impl BackgroundLoad {
    /// Read `machine.background_load.*` (None when `tasks` is 0 or unset).
    pub fn from_scenario(scn: &Scenario) -> anyhow::Result<Option<BackgroundLoad>> {
        let s = &scn.source;
        let p = "machine.background_load";
        let tasks = s.u64_or(&format!("{p}.tasks"), 0)? as usize;
        let duty = s.f64_or(&format!("{p}.duty"), 0.5)?;
        let period_ns = s.duration_ns_or(&format!("{p}.period"), 10_000_000)?;
        let cpus = s.str_or(&format!("{p}.cpus"), "all")?;
        if !(duty > 0.0 && duty <= 1.0) {
            return Err(s
                .err(
                    &format!("{p}.duty"),
                    "must be in (0, 1]: the fraction of each period a task runs",
                )
                .into());
        }
        if period_ns < 100_000 {
            return Err(s
                .err(&format!("{p}.period"), "must be at least 100us")
                .into());
        }
        let cpus = if cpus.trim() == "all" {
            None
        } else {
            let l = reclaimlab_core::scenario::parse_cpu_list(&cpus)
                .map_err(|m| s.err(&format!("{p}.cpus"), m))?;
            if let Some(bad) = l.iter().find(|&&c| c >= scn.machine.cpus) {
                return Err(s
                    .err(
                        &format!("{p}.cpus"),
                        format!(
                            "CPU {bad} does not exist (machine.cpus = {})",
                            scn.machine.cpus
                        ),
                    )
                    .into());
            }
            if l.is_empty() {
                return Err(s.err(&format!("{p}.cpus"), "empty CPU list").into());
            }
            Some(l)
        };
        s.check_range(
            &format!("{p}.tasks"),
            tasks as u64,
            0,
            MAX_TASKS,
            |v| v.to_string(),
            "foreign tasks are simulated one by one; more than this is not a machine's load",
        )?;
        let groups = s.u64_or(&format!("{p}.groups"), 1)? as usize;
        if tasks > 0 {
            s.check_range(
                &format!("{p}.groups"),
                groups as u64,
                1,
                tasks as u64,
                |v| v.to_string(),
                "the tasks are spread over the sessions, and a session without a task is no load",
            )?;
        }
        let why = "a nice level is -20..=19 (sched_prio_to_weight)";
        let nice = s.i64_in(&format!("{p}.nice"), 0, -20, 19, why)? as i32;
        let group_nice = s.i64_in(&format!("{p}.group_nice"), 0, -20, 19, why)? as i32;
        Ok((tasks > 0).then_some(BackgroundLoad {
            tasks,
            duty,
            period_ns,
            cpus,
            groups,
            nice,
            group_nice,
            kthread: false,
        }))
    }

    /// Read `machine.background_kthreads.*`: `duty`, each CPU's share of time in kernel
    /// threads ("0.004,0.035": CPU 0, CPU 1, ...; a missing or 0 share is none), `slice` (the
    /// mean run per wake-up, 50us) and `nice` (0). One bound task per CPU with a share, each
    /// waking every `slice / share`.
    pub fn kthreads_from_scenario(scn: &Scenario) -> anyhow::Result<Vec<BackgroundLoad>> {
        let s = &scn.source;
        let p = "machine.background_kthreads";
        let key = format!("{p}.duty");
        let list = s.str_or(&key, "")?;
        let slice = s.duration_ns_or(&format!("{p}.slice"), 50_000)?;
        let why = "a nice level is -20..=19 (sched_prio_to_weight)";
        let nice = s.i64_in(&format!("{p}.nice"), 0, -20, 19, why)? as i32;
        if !(1_000..=1_000_000_000).contains(&slice) {
            return Err(s.err(&format!("{p}.slice"), "must be 1us..=1s").into());
        }
        let mut out = Vec::new();
        for (cpu, v) in list
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .enumerate()
        {
            let duty: f64 = v.parse().map_err(|_| {
                s.err(
                    &key,
                    format!("{v:?} is not a number (one share per CPU, comma-separated)"),
                )
            })?;
            if !(0.0..=1.0).contains(&duty) {
                return Err(s
                    .err(&key, format!("{v}: a CPU's share is in [0, 1]"))
                    .into());
            }
            if cpu >= scn.machine.cpus {
                return Err(s
                    .err(
                        &key,
                        format!(
                            "more shares than CPUs (machine.cpus = {})",
                            scn.machine.cpus
                        ),
                    )
                    .into());
            }
            if duty == 0.0 {
                continue;
            }
            out.push(BackgroundLoad {
                tasks: 1,
                duty,
                period_ns: ((slice as f64 / duty) as u64).max(slice),
                cpus: Some(vec![cpu]),
                groups: 1,
                nice,
                group_nice: 0,
                kthread: true,
            });
        }
        Ok(out)
    }

    /// Run time per period.
    pub fn run_ns(&self) -> u64 {
        ((self.period_ns as f64 * self.duty) as u64).max(1)
    }
}

impl Kernel {
    /// Create the background tasks, asleep, their first wake-ups staggered over one period.
    pub fn background_spawn(&mut self) {
        for (set, b) in self.sched.kthreads.clone().into_iter().enumerate() {
            let cpu = b
                .cpus
                .as_ref()
                .and_then(|l| l.first().copied())
                .unwrap_or(0);
            // A per-CPU worker: bound to its CPU, no mm (kthreads run on the borrowed one).
            let t = self.task_new(usize::MAX, Some(cpu), 0, 1);
            self.tasks[t].kthread = true;
            self.background_task_init(t, &b, cpu, Some(set), 0);
        }
        let Some(b) = self.sched.background.clone() else {
            return;
        };
        let n = self.nr_cpus();
        for i in 0..b.tasks {
            let mm = self.mm_alloc(1, Backing::Anon, false);
            let t = self.task_new(mm, None, 0, 1);
            // Its session: the foreign groups follow the workload's (autogroup.rs).
            self.sched.se[t].group = WORKLOAD_GROUP + 1 + i % b.groups;
            let first_cpu = match &b.cpus {
                Some(l) => {
                    let mut m = CpuMask::new(n);
                    l.iter().for_each(|&c| m.set(c));
                    self.sched.se[t].allowed = Some(m);
                    // Its first CPU: spread over the allowed ones.
                    l[i % l.len()]
                }
                None => i % n,
            };
            let first = b.period_ns * i as u64 / b.tasks as u64;
            self.background_task_init(t, &b, first_cpu, None, first);
        }
    }

    /// A background task's scheduler state: asleep until `first`, at `b`'s nice, last on
    /// `cpu`.
    fn background_task_init(
        &mut self,
        t: TaskId,
        b: &BackgroundLoad,
        cpu: CpuId,
        kthreads: Option<usize>,
        first: u64,
    ) {
        let se = &mut self.sched.se[t];
        se.class = Class::Background;
        se.sleeping = true;
        se.avg.avg = 0;
        se.weight = nice_to_weight(b.nice);
        se.last_cpu = Some(cpu);
        self.sched.bg_state.push(BgState {
            task: t,
            period_start: first,
            left_ns: b.run_ns(),
            kthreads,
        });
        self.sched.timers.insert((first, t));
    }

    /// One engine step of a background task: run until its burst ends or the tick, then
    /// sleep to the next period (or at once, if it fell a whole period behind); with
    /// `duty = 1` it never sleeps.
    pub fn background_step(&mut self, rqs: &mut RunQueues, cpu: CpuId, t: TaskId) {
        let i = self
            .sched
            .bg_state
            .iter()
            .position(|s| s.task == t)
            .expect("background state");
        let b = match self.sched.bg_state[i].kthreads {
            Some(set) => self.sched.kthreads[set].clone(),
            None => self.sched.background.clone().expect("background task"),
        };
        let now = self.cpus[cpu].clock;
        let to_tick = self.cpus[cpu].next_tick.saturating_sub(now).max(1);
        // In slices: while the burst runs its CPU has the task's mm loaded and is not lazy, so
        // another CPU's flushes in that window must see it (and an IPI still in flight when the
        // burst ends meets an idle CPU: flush_tlb_func sends it to init_mm). A burst taken in
        // one step would hide that window from every other CPU.
        let run = self.sched.bg_state[i]
            .left_ns
            .min(to_tick)
            .min(BURST_SLICE_NS);
        self.charge(cpu, run);
        let st = &mut self.sched.bg_state[i];
        st.left_ns -= run;
        if st.left_ns > 0 {
            return;
        }
        let now = self.cpus[cpu].clock;
        if b.duty >= 1.0 {
            // A CPU hog (stress-ng --cpu) never sleeps: its next burst follows at once.
            st.period_start = now;
            st.left_ns = b.run_ns();
            return;
        }
        let mut next = st.period_start + b.period_ns;
        while next + b.period_ns <= now {
            next += b.period_ns;
        }
        st.period_start = next;
        st.left_ns = b.run_ns();
        let wake = next.max(now);
        self.block_task(rqs, cpu, Some(wake));
    }
}
