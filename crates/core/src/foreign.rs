//! The foreign load a host run had (`runs[].foreign`), and its translation into the
//! simulator's `machine.background_load` (`validate --background-from-host`).
//!
//! bench records, around each repetition's measured window, every task on the machine outside
//! the run's memcg (bench's own threads included: they are foreign to the workload), from
//! `/proc/PID/task/TID/schedstat` and `stat`, split into user tasks and kernel threads
//! (PF_KTHREAD). User tasks become `machine.background_load` (processes: while one runs its
//! CPU leaves the workload's mm). Kernel threads become `machine.background_kthreads`: a
//! kernel thread borrows the mm the CPU had (lazy TLB), so it does not take a CPU out of a
//! flush's IPI set the way a process does, but it makes the CPU busy where it runs (per-CPU
//! kworkers, such as the block layer's on a disk's interrupt CPU), which decides where a
//! waking worker is placed.

use serde::{Deserialize, Serialize};

pub mod beside;

/// One class of foreign tasks (user tasks or kernel threads) over the window.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ForeignClass {
    /// Tasks (threads) that ran at least once in the window (born in it included).
    pub tasks_ran: u64,
    /// Tasks of this class seen alive in either snapshot.
    pub tasks_seen: u64,
    /// Their run time in the window (schedstat's first field), seconds.
    pub cpu_seconds: f64,
    /// Their time runnable but waiting for a CPU (schedstat's second field), seconds.
    pub wait_seconds: f64,
    /// How many times they were put on a CPU (schedstat's third field, pcount).
    pub timeslices: u64,
    /// Distinct autogroups (`/proc/PID/autogroup`; the session id when it cannot be read)
    /// among the tasks that ran. Kernel threads: 0 (they are in the root group).
    pub groups: u64,
    /// The median nice of the tasks that ran.
    pub median_nice: i32,
    /// The median autogroup nice of the tasks that ran (0 without autogroup).
    #[serde(default)]
    pub median_group_nice: i32,
    /// CPU time in the window of foreign processes that ended in it and were reaped by a
    /// foreign parent: the growth of the living parents' cutime + cstime (the children's whole
    /// lives, 10 ms resolution) less what the ended processes had run by the first scan.
    /// Builds are mostly such short-lived processes.
    #[serde(default)]
    pub exited_cpu_seconds: f64,
    /// Threads seen in the first scan only (they ended in the window). Processes born and
    /// ended inside the window are not counted (see `forks`).
    #[serde(default)]
    pub tasks_exited: u64,
    /// Estimated times the ended tasks were put on a CPU in the window: `exited_cpu_seconds`
    /// over their mean slice length at the first scan (else the living tasks').
    #[serde(default)]
    pub exited_timeslices: u64,
    /// Run time of the tasks that ran, by the CPU each was last on at the end of the window
    /// (`stat` field 39), seconds: an approximation of where the time went.
    #[serde(default)]
    pub cpu_seconds_by_last_cpu: Vec<f64>,
    /// The tasks that ran most, by CPU time: (comm, seconds), at most [`TOP`].
    #[serde(default)]
    pub top: Vec<(String, f64)>,
}

/// How many of the busiest tasks a class lists.
pub const TOP: usize = 8;

/// `runs[].foreign`: everything outside the run's memcg during the measured window.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ForeignLoad {
    /// Between the middles of the two /proc scans, seconds.
    pub window_seconds: f64,
    /// How long each scan of /proc took (before, after), seconds. The scans are outside the
    /// window but for the reading of bench's own threads, which is why they are recorded.
    pub scan_seconds: [f64; 2],
    /// Tasks (threads) read in the scans (before, after).
    pub scanned_tasks: [u64; 2],
    pub user: ForeignClass,
    pub kthreads: ForeignClass,
    /// The run's memcg: tasks read and their run time in the window, seconds.
    pub workload_tasks: u64,
    pub workload_cpu_seconds: f64,
    /// Per CPU, all non-idle time from `/proc/stat` (user, nice, system, irq, softirq, steal),
    /// seconds.
    pub cpu_busy_seconds: Vec<f64>,
    /// Σ busy − workload − foreign user (living and exited) − kernel threads: time no task
    /// read accounts for (tasks born and ended in the window whose parent is the workload or
    /// not yet reaped, interrupts when the kernel does not charge them to tasks, rounding).
    pub unaccounted_busy_seconds: f64,
    /// Processes forked in the window, machine-wide (`/proc/stat` `processes`).
    pub forks: u64,
    /// The kernel threads that sleep on timer-wheel timers ([`TIMER_KTHREAD_COMMS`]), each on
    /// its own (they are in `kthreads` too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timer_kthreads: Vec<ForeignThread>,
}

/// One thread of a foreign record.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ForeignThread {
    pub comm: String,
    /// Its run time in the window (schedstat's first field), seconds.
    pub cpu_seconds: f64,
    /// Times it was put on a CPU in the window (schedstat's third field).
    pub timeslices: u64,
    /// The CPU it was last on at the second scan (`stat` field 39).
    pub last_cpu: usize,
}

/// Kernel threads that wake by their own timer-wheel timers (schedule_timeout), recorded
/// apart for `machine.timer_kthreads`: the RCU grace-period kthreads (rcu_gp_fqs_loop waits
/// jiffies_till_next_fqs between force-quiescent-state scans).
pub const TIMER_KTHREAD_COMMS: &[&str] = &["rcu_preempt", "rcu_sched"];

/// Fields of `machine.background_load` derived from a foreign record.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackgroundFromHost {
    pub tasks: u64,
    pub duty: f64,
    pub period_ns: u64,
    pub groups: u64,
    pub nice: i32,
    pub group_nice: i32,
    /// Foreign user tasks that ran on the host, before the cap.
    pub tasks_on_host: u64,
    /// The user tasks are the machine's others beside a declared load (bench's load tasks
    /// taken out, [`beside`]): they go to `machine.background_other`, the declared load stays.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub beside_load: bool,
    /// The kernel threads, as `machine.background_kthreads` (None: none ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kthreads: Option<KthreadsFromHost>,
    /// The timer-wheel kernel threads, as `machine.timer_kthreads` (None: none ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timer_kthreads: Option<KthreadsFromHost>,
}

/// Fields of `machine.background_kthreads` derived from a foreign record.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KthreadsFromHost {
    /// Per CPU, the share of the window its kernel threads ran (by the CPU each was last on).
    pub duty: Vec<f64>,
    /// Their mean run per time put on a CPU (cpu_seconds / timeslices), ns.
    pub slice_ns: u64,
    pub nice: i32,
}

/// At most this many modelled foreign tasks: each stands for tasks_on_host / tasks of the
/// host's (the total CPU time and the rate of runs are kept, see [`background_load`]).
pub const MAX_MODEL_TASKS: u64 = 16;
/// The simulator's shortest period (`machine.background_load.period`).
pub const MIN_PERIOD_NS: u64 = 100_000;

/// The foreign user tasks of `f` as the simulator's background load, or None when none ran.
///
/// - `tasks`: the foreign user tasks that ran at least once in the window (those that ended in
///   it included), at most [`MAX_MODEL_TASKS`] (a process each in the model: its CPU leaves
///   the workload's mm while it runs, which is what matters for a flush's IPI set).
/// - `duty`: their CPU time (living tasks plus the exited ones' reaped time) / (tasks × window):
///   the share of each period a modelled task runs, so that the modelled tasks together run as
///   long as the host's did (capped at 1).
/// - `period`: window × tasks / timeslices: the mean time between one modelled task's runs,
///   so that the modelled tasks are put on a CPU as often in total as the host's were (the
///   ended tasks' runs estimated, `exited_timeslices`).
///   Clamped to [100 µs, window].
/// - `groups`: distinct autogroups (sessions) among them, at most `tasks`.
/// - `nice`, `group_nice`: the median nice and autogroup nice of the tasks that ran.
///
/// With `kthreads` from [`kthreads_load`]; when only kernel threads ran, `tasks` is 0.
pub fn background_load(f: &ForeignLoad) -> Option<BackgroundFromHost> {
    let kthreads = kthreads_load(f);
    let timer_kthreads = timer_kthreads_load(f);
    match user_load(f) {
        Some(b) => Some(BackgroundFromHost {
            kthreads,
            timer_kthreads,
            ..b
        }),
        None if kthreads.is_some() || timer_kthreads.is_some() => Some(BackgroundFromHost {
            tasks: 0,
            duty: 0.0,
            period_ns: MIN_PERIOD_NS,
            groups: 1,
            nice: 0,
            group_nice: 0,
            tasks_on_host: 0,
            beside_load: false,
            kthreads,
            timer_kthreads,
        }),
        None => None,
    }
}

/// The timer-wheel kernel threads of `f` ([`TIMER_KTHREAD_COMMS`]), or None when none ran:
/// per CPU, the run time of those last on it over the window; the slice is their CPU time
/// over their timeslices. A thread that moved between CPUs is counted where it ended.
pub fn timer_kthreads_load(f: &ForeignLoad) -> Option<KthreadsFromHost> {
    let ts = &f.timer_kthreads;
    let slices: u64 = ts.iter().map(|t| t.timeslices).sum();
    let cpu: f64 = ts.iter().map(|t| t.cpu_seconds).sum();
    if slices == 0 || cpu <= 0.0 || f.window_seconds <= 0.0 {
        return None;
    }
    let ncpu = f
        .cpu_busy_seconds
        .len()
        .max(1 + ts.iter().map(|t| t.last_cpu).max()?);
    let mut duty = vec![0.0; ncpu];
    for t in ts {
        duty[t.last_cpu] += t.cpu_seconds / f.window_seconds;
    }
    Some(KthreadsFromHost {
        duty: duty.into_iter().map(|d| d.clamp(0.0, 1.0)).collect(),
        slice_ns: mean_slice_ns(cpu, slices),
        nice: 0,
    })
}

/// The kernel threads of `f`, or None when none ran: per CPU, their run time (by the CPU
/// each was last on) over the window; the slice is their CPU time over their timeslices, so
/// the modelled threads run as long and as often in total as the host's.
pub fn kthreads_load(f: &ForeignLoad) -> Option<KthreadsFromHost> {
    let k = &f.kthreads;
    // Less the timer-wheel threads, which go to machine.timer_kthreads.
    let timer_cpu: f64 = f.timer_kthreads.iter().map(|t| t.cpu_seconds).sum();
    let timer_slices: u64 = f.timer_kthreads.iter().map(|t| t.timeslices).sum();
    let cpu_seconds = k.cpu_seconds - timer_cpu;
    let timeslices = k.timeslices.saturating_sub(timer_slices);
    if timeslices == 0 || cpu_seconds <= 0.0 || f.window_seconds <= 0.0 {
        return None;
    }
    let mut by_cpu = k.cpu_seconds_by_last_cpu.clone();
    for t in &f.timer_kthreads {
        if let Some(c) = by_cpu.get_mut(t.last_cpu) {
            *c = (*c - t.cpu_seconds).max(0.0);
        }
    }
    let duty: Vec<f64> = by_cpu
        .iter()
        .map(|s| (s / f.window_seconds).clamp(0.0, 1.0))
        .collect();
    if duty.iter().all(|&d| d == 0.0) {
        return None;
    }
    Some(KthreadsFromHost {
        duty,
        slice_ns: mean_slice_ns(cpu_seconds, timeslices),
        nice: k.median_nice.clamp(-20, 19),
    })
}

/// Kernel threads' mean run: `cpu_seconds` over `timeslices`, in ns, within 1 µs..1 s.
fn mean_slice_ns(cpu_seconds: f64, timeslices: u64) -> u64 {
    (cpu_seconds / timeslices as f64 * 1e9)
        .clamp(1_000.0, 1e9)
        .round() as u64
}

/// The foreign user tasks of `f` (see [`background_load`]).
fn user_load(f: &ForeignLoad) -> Option<BackgroundFromHost> {
    let u = &f.user;
    let on_host = u.tasks_ran + u.tasks_exited;
    if on_host == 0 || f.window_seconds <= 0.0 {
        return None;
    }
    let tasks = on_host.min(MAX_MODEL_TASKS);
    let cpu = u.cpu_seconds + u.exited_cpu_seconds;
    if cpu <= 0.0 {
        return None;
    }
    let slices = (u.timeslices + u.exited_timeslices).max(1) as f64;
    let duty = (cpu / (tasks as f64 * f.window_seconds)).min(1.0);
    let window_ns = f.window_seconds * 1e9;
    let period_ns = (window_ns * tasks as f64 / slices).clamp(MIN_PERIOD_NS as f64, window_ns);
    Some(BackgroundFromHost {
        tasks,
        duty,
        period_ns: period_ns.round() as u64,
        groups: u.groups.clamp(1, tasks),
        nice: u.median_nice.clamp(-20, 19),
        group_nice: u.median_group_nice.clamp(-20, 19),
        tasks_on_host: on_host,
        beside_load: false,
        kthreads: None,
        timer_kthreads: None,
    })
}

impl BackgroundFromHost {
    /// Where the user tasks go: `machine.background_load`, or `machine.background_other`
    /// beside a declared load.
    pub fn user_key(&self) -> &'static str {
        if self.beside_load {
            crate::background::OTHER_KEY
        } else {
            crate::background::LOAD_KEY
        }
    }

    /// The `--set`s that give the simulator this load.
    pub fn sets(&self) -> Vec<String> {
        let p = self.user_key();
        let mut v = vec![format!("{p}.tasks={}", self.tasks)];
        if self.tasks > 0 {
            v.extend([
                format!("{p}.duty={}", self.duty.max(1e-6)),
                format!("{p}.period={}ns", self.period_ns),
                format!("{p}.groups={}", self.groups),
                format!("{p}.nice={}", self.nice),
                format!("{p}.group_nice={}", self.group_nice),
            ]);
        }
        for (p, k) in [
            (crate::background::KTHREADS_KEY, &self.kthreads),
            (crate::background::TIMER_KTHREADS_KEY, &self.timer_kthreads),
        ] {
            if let Some(k) = k {
                let duty: Vec<String> = k.duty.iter().map(|d| format!("{d:.6}")).collect();
                v.extend([
                    format!("{p}.duty={}", duty.join(",")),
                    format!("{p}.slice={}ns", k.slice_ns),
                    format!("{p}.nice={}", k.nice),
                ]);
            }
        }
        v
    }

    /// A table cell: the derived keys.
    pub fn cell(&self) -> String {
        let user = format!(
            "{}tasks {} (host {}), duty {:.4}, period {:.1} ms, groups {}, nice {}, group nice {}",
            if self.beside_load {
                "beside the declared load, other "
            } else {
                ""
            },
            self.tasks,
            self.tasks_on_host,
            self.duty,
            self.period_ns as f64 / 1e6,
            self.groups,
            self.nice,
            self.group_nice
        );
        let mut out = user;
        for (what, k) in [
            ("kernel threads", &self.kthreads),
            ("timer kernel threads", &self.timer_kthreads),
        ] {
            if let Some(k) = k {
                let duty: Vec<String> = k.duty.iter().map(|d| format!("{d:.4}")).collect();
                out = format!(
                    "{out}; {what}: duty per CPU {}, slice {:.0} us, nice {}",
                    duty.join("/"),
                    k.slice_ns as f64 / 1e3,
                    k.nice
                );
            }
        }
        out
    }

    /// One line for a table header.
    pub fn summary(&self) -> String {
        format!("background load from host: {}", self.cell())
    }
}

fn median_f(v: &mut [f64]) -> f64 {
    crate::stats::summarize(v).map_or(0.0, |s| s.median)
}

/// The median record of several runs, field by field, for the fields the translation uses
/// (window, the user class's counts, times, groups and nice, the kernel threads' time, runs,
/// nice and time per CPU); the rest from the first.
pub fn median(records: &[&ForeignLoad]) -> Option<ForeignLoad> {
    let first = *records.first()?;
    let m = |f: &dyn Fn(&ForeignLoad) -> f64| {
        let mut v: Vec<f64> = records.iter().map(|r| f(r)).collect();
        median_f(&mut v)
    };
    let mut out = first.clone();
    out.window_seconds = m(&|r| r.window_seconds);
    out.user.tasks_ran = m(&|r| r.user.tasks_ran as f64).round() as u64;
    out.user.cpu_seconds = m(&|r| r.user.cpu_seconds);
    out.user.exited_cpu_seconds = m(&|r| r.user.exited_cpu_seconds);
    out.user.tasks_exited = m(&|r| r.user.tasks_exited as f64).round() as u64;
    out.user.exited_timeslices = m(&|r| r.user.exited_timeslices as f64).round() as u64;
    out.user.timeslices = m(&|r| r.user.timeslices as f64).round() as u64;
    out.user.groups = m(&|r| r.user.groups as f64).round() as u64;
    out.user.median_nice = m(&|r| r.user.median_nice as f64).round() as i32;
    out.user.median_group_nice = m(&|r| r.user.median_group_nice as f64).round() as i32;
    out.kthreads.tasks_ran = m(&|r| r.kthreads.tasks_ran as f64).round() as u64;
    out.kthreads.cpu_seconds = m(&|r| r.kthreads.cpu_seconds);
    out.kthreads.timeslices = m(&|r| r.kthreads.timeslices as f64).round() as u64;
    out.kthreads.median_nice = m(&|r| r.kthreads.median_nice as f64).round() as i32;
    let cpus = records
        .iter()
        .map(|r| r.kthreads.cpu_seconds_by_last_cpu.len())
        .max()
        .unwrap_or(0);
    out.kthreads.cpu_seconds_by_last_cpu = (0..cpus)
        .map(|c| {
            m(&|r| {
                r.kthreads
                    .cpu_seconds_by_last_cpu
                    .get(c)
                    .copied()
                    .unwrap_or(0.0)
            })
        })
        .collect();
    // Each timer-wheel thread by name: its medians (0 where a record lacks it), on the CPU
    // most records left it on (the lowest of a tie).
    let mut comms: Vec<&str> = records
        .iter()
        .flat_map(|r| r.timer_kthreads.iter().map(|t| t.comm.as_str()))
        .collect();
    comms.sort_unstable();
    comms.dedup();
    out.timer_kthreads = comms
        .into_iter()
        .map(|comm| {
            let of = |r: &ForeignLoad| r.timer_kthreads.iter().find(|t| t.comm == comm).cloned();
            let mut on = vec![0usize; cpus.max(1)];
            for t in records.iter().filter_map(|r| of(r)) {
                if let Some(n) = on.get_mut(t.last_cpu) {
                    *n += 1;
                }
            }
            let last_cpu = (0..on.len())
                .max_by_key(|&c| (on[c], usize::MAX - c))
                .unwrap_or(0);
            ForeignThread {
                comm: comm.to_string(),
                cpu_seconds: m(&|r| of(r).map_or(0.0, |t| t.cpu_seconds)),
                timeslices: m(&|r| of(r).map_or(0.0, |t| t.timeslices as f64)).round() as u64,
                last_cpu,
            }
        })
        .filter(|t| t.timeslices > 0)
        .collect();
    Some(out)
}

/// The records of a document's valid runs (all runs' if no valid run has one).
pub fn records(d: &crate::ResultDoc) -> Vec<&ForeignLoad> {
    let valid: Vec<&ForeignLoad> = d
        .runs
        .iter()
        .filter(|r| r.valid)
        .filter_map(|r| r.foreign.as_ref())
        .collect();
    if valid.is_empty() {
        d.runs.iter().filter_map(|r| r.foreign.as_ref()).collect()
    } else {
        valid
    }
}

/// The median record of a document's valid runs (all runs if none is valid) that have one.
pub fn of_doc(d: &crate::ResultDoc) -> Option<ForeignLoad> {
    median(&records(d))
}

/// One line for bench's table: the foreign load per class.
pub fn summary(f: &ForeignLoad) -> String {
    let w = f.window_seconds.max(1e-9);
    let c = |c: &ForeignClass| {
        format!(
            "{} ran (+{} ended), {:.2} CPU-s ({:.1}% of a CPU), {} slices",
            c.tasks_ran,
            c.tasks_exited,
            c.cpu_seconds + c.exited_cpu_seconds,
            (c.cpu_seconds + c.exited_cpu_seconds) / w * 100.0,
            c.timeslices + c.exited_timeslices
        )
    };
    format!(
        "foreign load over {:.1} s: user tasks {}, {} group(s); kernel threads {}; scan {:.0}/{:.0} ms",
        f.window_seconds,
        c(&f.user),
        f.user.groups,
        c(&f.kthreads),
        f.scan_seconds[0] * 1e3,
        f.scan_seconds[1] * 1e3
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(tasks: u64, cpu: f64, slices: u64, window: f64) -> ForeignLoad {
        ForeignLoad {
            window_seconds: window,
            user: ForeignClass {
                tasks_ran: tasks,
                cpu_seconds: cpu,
                timeslices: slices,
                groups: 3,
                median_nice: 0,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn translation_keeps_cpu_time_and_run_rate() {
        // 4 tasks, 0.6 CPU-s in 15 s, 300 runs: duty 0.6 / 60 = 0.01, period 15 s × 4 / 300
        // = 200 ms, so 4 tasks × 0.01 × 15 s = 0.6 s and 4 × 15 s / 200 ms = 300 runs.
        let b = background_load(&rec(4, 0.6, 300, 15.0)).unwrap();
        assert_eq!(b.tasks, 4);
        assert!((b.duty - 0.01).abs() < 1e-12, "{b:?}");
        assert_eq!(b.period_ns, 200_000_000);
        assert_eq!(b.groups, 3);
        let total_cpu = b.tasks as f64 * b.duty * 15.0;
        assert!((total_cpu - 0.6).abs() < 1e-9);
        assert_eq!(b.sets()[0], "machine.background_load.tasks=4");
    }

    #[test]
    fn many_tasks_are_capped_keeping_totals() {
        let b = background_load(&rec(160, 3.2, 8000, 16.0)).unwrap();
        assert_eq!(b.tasks, MAX_MODEL_TASKS);
        assert_eq!(b.tasks_on_host, 160);
        // 3.2 CPU-s over 16 tasks × 16 s.
        assert!((b.duty - 0.0125).abs() < 1e-12);
        // 16 s × 16 / 8000 = 32 ms.
        assert_eq!(b.period_ns, 32_000_000);
        assert!(b.groups <= b.tasks);
    }

    #[test]
    fn nothing_ran_is_no_load_and_extremes_are_clamped() {
        assert_eq!(background_load(&rec(0, 0.0, 0, 15.0)), None);
        assert_eq!(background_load(&rec(2, 0.0, 5, 15.0)), None);
        // A hog: more CPU than one task can run, a single long slice.
        let b = background_load(&rec(1, 30.0, 1, 15.0)).unwrap();
        assert_eq!(b.duty, 1.0);
        assert_eq!(b.period_ns, 15_000_000_000);
        // Very frequent short runs: the period floor.
        let b = background_load(&rec(1, 0.01, 1_000_000, 15.0)).unwrap();
        assert_eq!(b.period_ns, MIN_PERIOD_NS);
        let mut r = rec(2, 0.2, 100, 10.0);
        r.user.median_nice = 30;
        r.user.groups = 0;
        let b = background_load(&r).unwrap();
        assert_eq!((b.nice, b.groups), (19, 1));
    }

    #[test]
    fn exited_tasks_add_time_and_estimated_runs() {
        let mut r = rec(2, 0.2, 100, 10.0);
        r.user.exited_cpu_seconds = 0.2;
        r.user.tasks_exited = 2;
        r.user.exited_timeslices = 100;
        let b = background_load(&r).unwrap();
        // 0.4 CPU-s over 4 × 10 s; 200 runs: 10 s × 4 / 200.
        assert_eq!((b.tasks, b.tasks_on_host), (4, 4));
        assert!((b.duty - 0.01).abs() < 1e-12);
        assert_eq!(b.period_ns, 200_000_000);
    }

    /// 0.4 CPU-s of kernel threads in 10 s, 0.1 s last on CPU 0 and 0.3 s on CPU 1, in 8 000
    /// runs, and no user task.
    fn kthreads_rec() -> ForeignLoad {
        let mut r = rec(0, 0.0, 0, 10.0);
        r.kthreads = ForeignClass {
            tasks_ran: 5,
            cpu_seconds: 0.4,
            timeslices: 8_000,
            cpu_seconds_by_last_cpu: vec![0.1, 0.3],
            ..Default::default()
        };
        r
    }

    #[test]
    fn kernel_threads_become_bound_bursts_per_cpu() {
        // Shares 0.01 and 0.03, 50 us a run.
        let mut r = kthreads_rec();
        r.kthreads.median_nice = -20;
        let b = background_load(&r).expect("kernel threads alone are a load");
        assert_eq!(b.tasks, 0);
        let k = b.kthreads.as_ref().unwrap();
        assert!((k.duty[0] - 0.01).abs() < 1e-12 && (k.duty[1] - 0.03).abs() < 1e-12);
        assert_eq!((k.slice_ns, k.nice), (50_000, -20));
        let sets = b.sets();
        assert_eq!(sets[0], "machine.background_load.tasks=0");
        assert!(sets.contains(&"machine.background_kthreads.duty=0.010000,0.030000".into()));
        assert!(sets.contains(&"machine.background_kthreads.slice=50000ns".into()));
        // With user tasks too, both loads.
        let mut both = rec(4, 0.6, 300, 15.0);
        both.kthreads = r.kthreads.clone();
        let b = background_load(&both).unwrap();
        assert_eq!(b.tasks, 4);
        assert!(b.kthreads.is_some());
        // The median keeps each CPU's time.
        let m = median(&[&r, &r, &both]).unwrap();
        assert_eq!(m.kthreads.cpu_seconds_by_last_cpu, vec![0.1, 0.3]);
        assert_eq!(m.kthreads.median_nice, -20);
    }

    #[test]
    fn the_rcu_grace_period_thread_becomes_a_timer_kthread_of_its_cpu() {
        // rcu_preempt's 0.008 s of the kernel threads' time in 700 runs, last on CPU 1:
        // 0.0008 of CPU 1 in 11.4-us runs; the others keep the rest.
        let mut r = kthreads_rec();
        r.cpu_busy_seconds = vec![1.0, 1.0];
        r.timer_kthreads = vec![ForeignThread {
            comm: "rcu_preempt".into(),
            cpu_seconds: 0.008,
            timeslices: 700,
            last_cpu: 1,
        }];
        let b = background_load(&r).unwrap();
        let t = b.timer_kthreads.as_ref().expect("rcu_preempt ran");
        assert_eq!(t.duty.len(), 2);
        assert!(t.duty[0] == 0.0 && (t.duty[1] - 0.0008).abs() < 1e-12);
        assert_eq!(t.slice_ns, 11_429);
        let k = b.kthreads.as_ref().unwrap();
        assert!((k.duty[1] - 0.0292).abs() < 1e-12, "{:?}", k.duty);
        assert_eq!(k.slice_ns, (0.392 / 7_300.0 * 1e9_f64).round() as u64);
        let sets = b.sets();
        assert!(sets.contains(&"machine.timer_kthreads.duty=0.000000,0.000800".into()));
        assert!(sets.contains(&"machine.timer_kthreads.slice=11429ns".into()));
        // The median of three records: the thread's medians, on the CPU two of them say.
        let mut other = r.clone();
        other.timer_kthreads[0].last_cpu = 0;
        other.timer_kthreads[0].timeslices = 900;
        let mut none = r.clone();
        none.timer_kthreads.clear();
        let m = median(&[&r, &other, &r]).unwrap();
        assert_eq!(
            (m.timer_kthreads[0].last_cpu, m.timer_kthreads[0].timeslices),
            (1, 700)
        );
        let m = median(&[&none, &other, &none]).unwrap();
        assert!(m.timer_kthreads.is_empty(), "ran in one of three: median 0");
    }

    #[test]
    fn median_record_and_old_documents() {
        let (a, b, c) = (
            rec(2, 0.1, 10, 15.0),
            rec(4, 0.5, 50, 15.2),
            rec(9, 0.3, 30, 15.1),
        );
        let m = median(&[&a, &b, &c]).unwrap();
        assert_eq!(m.user.tasks_ran, 4);
        assert!((m.user.cpu_seconds - 0.3).abs() < 1e-12);
        assert_eq!(m.user.timeslices, 30);
        assert!((m.window_seconds - 15.1).abs() < 1e-12);
        assert!(median(&[]).is_none());
        let back: ForeignLoad = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(back, a);
        assert!(summary(&a).contains("user tasks 2 ran (+0 ended)"));
    }
}
