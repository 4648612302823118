//! Where the workload's tasks ran on the live machine, for the result's `placement` section
//! (the same section the simulator writes; docs/result-schema.md).
//!
//! A sampler thread reads, every [`SAMPLE_EVERY`], every thread of every process in the run's
//! memcg: `/proc/PID/task/TID/sched` gives `se.nr_migrations` and `se.sum_exec_runtime` (ms).
//! The last reading of each thread is kept, so a thread's final < 100 ms is not counted.
//! Per-CPU busy time comes from the `cpuN` rows of `/proc/stat` before and after (all
//! non-idle time, so other users' load is in it too).
//!
//! `processes` puts each thread the sampler saw beside the CPUs it was switched in on
//! (crate::sched_trace): the union over a process's threads is an upper bound of its mm's
//! `mm_cpumask`, which decides where a reclaim flush of that mm sends IPIs. On x86 a CPU's bit
//! is set when the mm is switched in (arch/x86/mm/tlb.c, `switch_mm_irqs_off`) but not cleared
//! when the task leaves; only `flush_tlb_func` trims it, on an mm-targeted flush reaching a CPU
//! no longer running the mm, and at most once a second (`should_trim_cpumask`). So a worker's
//! main thread that ran on a second CPU during start-up, before it cloned its sweeping thread,
//! keeps that CPU in the mask, and the run's shootdowns per stolen page with it: the
//! unpinned runs' bimodal ratios follow where the processes started.

use crate::sched_trace::{Record, TaskCpus};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// A thread's last reading.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskSched {
    /// The process (tgid) the thread belongs to.
    pub pid: i32,
    pub comm: String,
    pub nr_migrations: u64,
    pub sum_exec_ms: f64,
}

/// Parse `/proc/PID/sched`: the command from the first line, and the two fields.
pub fn parse_sched(text: &str) -> Option<TaskSched> {
    let comm = text.lines().next()?.split(" (").next()?.trim().to_string();
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse::<f64>().ok())?
        })
    };
    Some(TaskSched {
        pid: 0,
        comm,
        nr_migrations: field("se.nr_migrations")? as u64,
        sum_exec_ms: field("se.sum_exec_runtime")?,
    })
}

/// Per-CPU (busy, total) jiffies from `/proc/stat` (busy = all but idle and iowait).
pub fn parse_stat_cpus(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .filter_map(|x| x.parse().ok())
                .collect();
            let total: u64 = v.iter().take(8).sum();
            let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
            (total - idle, total)
        })
        .collect()
}

fn read_stat() -> Vec<(u64, u64)> {
    std::fs::read_to_string("/proc/stat")
        .map(|t| parse_stat_cpus(&t))
        .unwrap_or_default()
}

/// Every thread of every process listed in `procs` (a cgroup.procs file).
fn sample(procs: &PathBuf, into: &Mutex<BTreeMap<i32, TaskSched>>) {
    let Ok(text) = std::fs::read_to_string(procs) else {
        return;
    };
    for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for e in dir.flatten() {
            let Ok(tid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            if let Some(s) = std::fs::read_to_string(e.path().join("sched"))
                .ok()
                .and_then(|t| parse_sched(&t))
                .map(|s| TaskSched { pid, ..s })
            {
                into.lock().expect("sampler lock").insert(tid, s);
            }
        }
    }
}

/// Every thread of every process listed in `procs` (a cgroup.procs file).
pub fn memcg_tids(procs: &PathBuf) -> Vec<i32> {
    let text = std::fs::read_to_string(procs).unwrap_or_default();
    let mut tids = Vec::new();
    for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            tids.extend(
                dir.flatten()
                    .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok()),
            );
        }
    }
    tids
}

/// The running sampler.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeMap<i32, TaskSched>>>,
    thread: Option<JoinHandle<()>>,
    stat0: Vec<(u64, u64)>,
    t0: Instant,
}

impl Sampler {
    /// Start sampling the processes of the memcg whose `cgroup.procs` is `procs`.
    pub fn start(procs: PathBuf) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeMap::new()));
        let (s2, seen2) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            while !s2.load(Ordering::Relaxed) {
                sample(&procs, &seen2);
                std::thread::sleep(SAMPLE_EVERY);
            }
        });
        Sampler {
            stop,
            seen,
            thread: Some(thread),
            stat0: read_stat(),
            t0: Instant::now(),
        }
    }

    /// Stop and build `placement`, with `processes` from the scheduler trace if there was one
    /// (per-CPU TLB counts are added by the caller).
    pub fn finish(mut self, sched: Option<&Record>) -> Value {
        let wall = self.t0.elapsed().as_secs_f64();
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let stat1 = read_stat();
        let seen = self.seen.lock().expect("sampler lock").clone();
        let mut v = report(&seen, &self.stat0, &stat1, wall);
        let none = BTreeMap::new();
        v["processes"] = processes(&seen, sched.map_or(&none, |r| &r.tasks));
        v["sched_trace"] = match sched {
            Some(r) => json!({"events": r.events, "lost": r.lost, "reader_cpu_s": r.reader_cpu_s}),
            None => Value::Null,
        };
        v
    }
}

/// Threads that ran at least this share of the wall time count as workers (the stress-ng
/// parent and helper processes mostly sleep).
pub const WORKER_MIN_CPU_SHARE: f64 = 0.05;

pub fn report(
    seen: &BTreeMap<i32, TaskSched>,
    stat0: &[(u64, u64)],
    stat1: &[(u64, u64)],
    wall: f64,
) -> Value {
    let tasks: Vec<Value> = seen
        .iter()
        .map(|(tid, s)| {
            json!({
                "tid": tid,
                "comm": s.comm,
                "kind": if s.sum_exec_ms / 1e3 >= WORKER_MIN_CPU_SHARE * wall { "worker" } else { "helper" },
                "cpu_seconds": s.sum_exec_ms / 1e3,
                "migrations": s.nr_migrations,
            })
        })
        .collect();
    let workers: Vec<&TaskSched> = seen
        .values()
        .filter(|s| s.sum_exec_ms / 1e3 >= WORKER_MIN_CPU_SHARE * wall)
        .collect();
    let per = if workers.is_empty() || wall <= 0.0 {
        0.0
    } else {
        workers.iter().map(|s| s.nr_migrations as f64).sum::<f64>() / workers.len() as f64 / wall
    };
    // USER_HZ is 100 on every Linux ABI.
    let cpus: Vec<Value> = stat0
        .iter()
        .zip(stat1)
        .enumerate()
        .map(|(c, (a, b))| {
            let busy = b.0.saturating_sub(a.0) as f64 / 100.0;
            let total = b.1.saturating_sub(a.1) as f64 / 100.0;
            json!({"cpu": c, "busy_seconds": busy, "busy_share": if total > 0.0 { busy / total } else { 0.0 }})
        })
        .collect();
    json!({
        "worker_migrations_per_task_per_second": per,
        "tasks": tasks,
        "cpus": cpus,
        "wall_seconds": wall,
    })
}

/// `placement.processes`: the sampled threads (the workload's own) grouped by process, each with
/// the CPUs the trace saw it switched in on; a thread the trace has no record of gets a null
/// `first_cpu` and no CPUs.
pub fn processes(seen: &BTreeMap<i32, TaskSched>, trace: &BTreeMap<i32, TaskCpus>) -> Value {
    let mut by_pid: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for (tid, s) in seen {
        by_pid.entry(s.pid).or_default().push(*tid);
    }
    by_pid
        .into_iter()
        .map(|(pid, tids)| {
            let mut union = std::collections::BTreeSet::new();
            let threads: Vec<Value> = tids
                .iter()
                .map(|tid| {
                    let t = trace.get(tid);
                    let ran: Vec<usize> = t
                        .map(|t| t.first_seen.keys().copied().collect())
                        .unwrap_or_default();
                    union.extend(ran.iter().copied());
                    // Per-CPU maps serialize as {"CPU": value}; an untraced thread gets {}.
                    json!({
                        "tid": tid,
                        "first_cpu": t.map(|t| t.first_cpu),
                        "cpus_ran": ran,
                        "switch_ins": t.map_or_else(|| json!({}), |t| json!(t.switch_ins)),
                        "first_seen": t.map_or_else(|| json!({}), |t| json!(t.first_seen)),
                        "switch_outs": t.map_or_else(|| json!({}), |t| {
                            let o = &t.switch_outs;
                            json!({"preempted": o.preempted, "blocked": o.blocked,
                                   "preempted_by": o.preempted_by})
                        }),
                    })
                })
                .collect();
            json!({"pid": pid, "cpus_ran": union.into_iter().collect::<Vec<_>>(), "threads": threads})
        })
        .collect::<Vec<_>>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched_trace::SwitchOuts;
    #[test]
    fn parses_proc_sched_and_stat() {
        let t = "stress-ng-vm (4242, #threads: 1)\n-------------------\nse.exec_start                                :        123.456\nse.sum_exec_runtime                          :       6512.125000\nse.nr_migrations                             :                    3\nnr_switches                                  :                  100\n";
        let s = parse_sched(t).unwrap();
        assert_eq!(s.comm, "stress-ng-vm");
        assert_eq!(s.nr_migrations, 3);
        assert!((s.sum_exec_ms - 6512.125).abs() < 1e-9);
        let st = "cpu  10 0 5 100 2 0 0 0 0 0\ncpu0 6 0 3 50 1 0 0 0 0 0\ncpu1 4 0 2 50 1 0 0 0 0 0\nintr 1\n";
        assert_eq!(parse_stat_cpus(st), vec![(9, 60), (6, 57)]);
    }
    #[test]
    fn workers_are_the_threads_that_ran() {
        let mut m = BTreeMap::new();
        m.insert(
            1,
            TaskSched {
                pid: 1,
                comm: "stress-ng".into(),
                nr_migrations: 9,
                sum_exec_ms: 10.0,
            },
        );
        m.insert(
            2,
            TaskSched {
                pid: 1,
                comm: "stress-ng-vm".into(),
                nr_migrations: 4,
                sum_exec_ms: 9000.0,
            },
        );
        m.insert(
            3,
            TaskSched {
                pid: 1,
                comm: "stress-ng-vm".into(),
                nr_migrations: 6,
                sum_exec_ms: 9000.0,
            },
        );
        let r = report(&m, &[(0, 0)], &[(500, 1000)], 10.0);
        assert!((r["worker_migrations_per_task_per_second"].as_f64().unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(r["cpus"][0]["busy_seconds"], 5.0);
    }

    #[test]
    fn processes_group_sampled_threads_with_their_traced_cpus() {
        let t = |pid: i32| TaskSched {
            pid,
            comm: "reclaimlab".into(),
            ..Default::default()
        };
        // Process 20 (threads 20, 21) and process 10 (thread 10, 12; 12 never traced).
        let seen = BTreeMap::from([(21, t(20)), (20, t(20)), (10, t(10)), (12, t(10))]);
        let cpus = |first: usize, s: &[(usize, u64)]| TaskCpus {
            first_cpu: first,
            switch_ins: s.iter().copied().collect(),
            first_seen: s.iter().map(|&(c, _)| (c, 1.0 + c as f64)).collect(),
            switch_outs: SwitchOuts {
                preempted: 1,
                blocked: 2,
                preempted_by: BTreeMap::from([("kworker".into(), 1)]),
            },
            ..Default::default()
        };
        let trace = BTreeMap::from([
            (20, cpus(1, &[(0, 2), (1, 5)])),
            (21, cpus(1, &[(1, 7)])),
            (10, cpus(0, &[(0, 3)])),
            // Bench itself: traced, but not in the memcg.
            (5, cpus(0, &[(0, 1), (1, 1)])),
        ]);
        let p = processes(&seen, &trace);
        assert_eq!(
            p,
            json!([
                {"pid": 10, "cpus_ran": [0], "threads": [
                    {"tid": 10, "first_cpu": 0, "cpus_ran": [0], "switch_ins": {"0": 3},
                     "first_seen": {"0": 1.0}, "switch_outs": {"preempted": 1, "blocked": 2, "preempted_by": {"kworker": 1}}},
                    {"tid": 12, "first_cpu": null, "cpus_ran": [], "switch_ins": {},
                     "first_seen": {}, "switch_outs": {}},
                ]},
                {"pid": 20, "cpus_ran": [0, 1], "threads": [
                    {"tid": 20, "first_cpu": 1, "cpus_ran": [0, 1], "switch_ins": {"0": 2, "1": 5},
                     "first_seen": {"0": 1.0, "1": 2.0}, "switch_outs": {"preempted": 1, "blocked": 2, "preempted_by": {"kworker": 1}}},
                    {"tid": 21, "first_cpu": 1, "cpus_ran": [1], "switch_ins": {"1": 7},
                     "first_seen": {"1": 2.0}, "switch_outs": {"preempted": 1, "blocked": 2, "preempted_by": {"kworker": 1}}},
                ]},
            ])
        );
        assert_eq!(processes(&BTreeMap::new(), &trace), json!([]));
    }
}
