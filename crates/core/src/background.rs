//! Foreign load on a machine (`machine.background_load`): tasks of other programs that wake
//! every `period`, run for `duty` of it (CPU time) and sleep again, on the given CPUs, at
//! `nice`, in `groups` sessions of their own. The simulator runs them as tasks
//! (sim/src/sched/background.rs); `bench` starts them on the host for the run
//! (host/src/background.rs), so a loaded machine is one setting on both sides.
//!
//! `machine.background_other` has the same keys: the machine's other user tasks, beside a
//! declared load. Only the simulator runs it: it stands for what else the host ran anyway
//! (`validate --background-from-host` derives it from the host runs' foreign record, less
//! bench's own load tasks), so bench neither starts nor reads it.

use crate::Scenario;

/// The most `machine.background_load.tasks`.
pub const MAX_TASKS: u64 = 4096;

/// The declared load's keys (both backends run it).
pub const LOAD_KEY: &str = "machine.background_load";
/// The machine's other user tasks' keys (the simulator only).
pub const OTHER_KEY: &str = "machine.background_other";
/// The kernel threads' keys (the simulator only): per-CPU shares of kernel-thread time.
pub const KTHREADS_KEY: &str = "machine.background_kthreads";
/// Kernel threads woken by timer-wheel timers (the simulator only).
pub const TIMER_KTHREADS_KEY: &str = "machine.timer_kthreads";
/// What bench names its load tasks' threads (`rl-load-0`, `rl-load-1`, ...): how the host's
/// foreign-load record tells them from the machine's other tasks.
pub const LOAD_COMM_PREFIX: &str = "rl-load-";

/// Whether `comm` is one of bench's load tasks (`rl-load-N`; not `rl-loaded`).
pub fn is_load_comm(comm: &str) -> bool {
    comm.strip_prefix(LOAD_COMM_PREFIX)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

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

impl BackgroundLoad {
    /// Read `machine.background_load.*` (None when `tasks` is 0 or unset).
    pub fn from_scenario(scn: &Scenario) -> anyhow::Result<Option<BackgroundLoad>> {
        Self::from_keys(scn, LOAD_KEY)
    }

    /// Read `machine.background_other.*` (None when `tasks` is 0 or unset).
    pub fn others_from_scenario(scn: &Scenario) -> anyhow::Result<Option<BackgroundLoad>> {
        Self::from_keys(scn, OTHER_KEY)
    }

    /// Read a user-task load's keys under `p`.
    fn from_keys(scn: &Scenario, p: &str) -> anyhow::Result<Option<BackgroundLoad>> {
        let s = &scn.source;
        let tasks = s.u64_or(&format!("{p}.tasks"), 0)? as usize;
        let duty = s.f64_or(&format!("{p}.duty"), 0.5)?;
        let period_ns = s.duration_ns_or(&format!("{p}.period"), 10_000_000)?;
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
        // "all", [0, 1] or "0-3,5", as workload.cpus.
        let cpus = match crate::workload::keys::cpuset(s, &format!("{p}.cpus"), scn.machine.cpus)? {
            crate::scenario::CpuSet::All(_) => None,
            crate::scenario::CpuSet::List(l) => Some(l),
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
        Self::kthreads_from_keys(scn, KTHREADS_KEY)
    }

    /// Read `machine.timer_kthreads.*`, the same keys as `machine.background_kthreads`:
    /// kernel threads that sleep on timer-wheel timers (schedule_timeout: the RCU
    /// grace-period kthread, kcompactd), so their wake-ups run in the timer softirq of their
    /// CPU even where that CPU takes a disk's interrupts.
    pub fn timer_kthreads_from_scenario(scn: &Scenario) -> anyhow::Result<Vec<BackgroundLoad>> {
        Self::kthreads_from_keys(scn, TIMER_KTHREADS_KEY)
    }

    /// Read a kernel-thread load's keys under `p`.
    fn kthreads_from_keys(scn: &Scenario, p: &str) -> anyhow::Result<Vec<BackgroundLoad>> {
        let s = &scn.source;
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

#[cfg(test)]
mod tests {
    use super::is_load_comm;

    #[test]
    fn only_benchs_numbered_load_threads_are_load_tasks() {
        assert!(is_load_comm("rl-load-0") && is_load_comm("rl-load-15"));
        // bench's own process and thread names share the start.
        assert!(
            !is_load_comm("rl-loaded") && !is_load_comm("rl-load-") && !is_load_comm("rl-load-x")
        );
        assert!(!is_load_comm("kworker/0:2-events"));
    }
}
