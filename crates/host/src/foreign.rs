//! The foreign load during a run's measured window (`runs[].foreign`, core's `foreign`
//! module): every task on the machine outside the run's memcg, bench's own threads included.
//!
//! A [`Scan`] reads, for every thread of every process in /proc: `task/TID/schedstat` (run
//! time ns, wait time ns, times put on a CPU) and `task/TID/stat` (comm, session, flags for
//! PF_KTHREAD, nice, the CPU it last ran on), and per process `stat`'s cutime + cstime (the
//! reaped children's time) and `autogroup`. One scan before the window and one after; a task's
//! figures are the difference (a task born in the window counts from 0; one that ended in it is
//! lost, but its time shows in its parent's cutime once reaped). Each scan's duration is
//! recorded: they lie outside the window except for the part of bench's own threads' time read
//! mid-scan.

use reclaimlab_core::foreign::{
    ForeignClass, ForeignLoad, ForeignThread, TIMER_KTHREAD_COMMS, TOP,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

/// PF_KTHREAD (include/linux/sched.h).
pub const PF_KTHREAD: u64 = 0x0020_0000;
/// USER_HZ on every Linux ABI (cutime, cstime, /proc/stat).
const USER_HZ: f64 = 100.0;

/// One thread's reading.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskReading {
    pub pid: i32,
    pub comm: String,
    pub run_ns: u64,
    pub wait_ns: u64,
    pub slices: u64,
    pub session: i64,
    pub kthread: bool,
    pub nice: i32,
    pub cpu: usize,
}

/// The fields of `/proc/.../stat` used here (after the `(comm)` which may hold spaces).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stat {
    pub comm: String,
    pub ppid: i32,
    pub session: i64,
    pub flags: u64,
    /// utime + stime (the whole thread group's, ended threads included), clock ticks.
    pub ticks: u64,
    /// cutime + cstime, clock ticks.
    pub children_ticks: u64,
    pub nice: i32,
    pub cpu: usize,
}

pub fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    // Field 3 (state) is index 0.
    let f: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let num = |i: usize| f.get(i)?.parse::<i64>().ok();
    Some(Stat {
        comm,
        ppid: num(1)? as i32,
        session: num(3)?,
        flags: f.get(6)?.parse().ok()?,
        ticks: (num(11)? + num(12)?).max(0) as u64,
        children_ticks: (num(13)? + num(14)?).max(0) as u64,
        nice: num(16)? as i32,
        cpu: num(36)?.max(0) as usize,
    })
}

/// `schedstat`: run ns, wait ns, timeslices.
pub fn parse_schedstat(text: &str) -> Option<(u64, u64, u64)> {
    let mut it = text.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

/// `/proc/PID/autogroup`: "/autogroup-45 nice 0" → (45, 0).
pub fn parse_autogroup(text: &str) -> Option<(i64, i32)> {
    let mut it = text.split_whitespace();
    let id = it.next()?.strip_prefix("/autogroup-")?.parse().ok()?;
    (it.next()? == "nice").then_some(())?;
    Some((id, it.next()?.parse().ok()?))
}

/// A process's group: its autogroup when readable (id, nice), else its session (nice 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Autogroup(i64, i32),
    Session(i64),
}

/// A process's reading.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcReading {
    /// utime + stime, ticks.
    pub ticks: u64,
    /// cutime + cstime, ticks.
    pub children_ticks: u64,
    /// User processes: their group. Kernel threads: None.
    pub group: Option<Group>,
    pub ppid: i32,
    /// Its session ID (a session leader's is its own PID).
    pub session: i64,
}

/// One scan of /proc.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    pub tasks: BTreeMap<i32, TaskReading>,
    pub procs: BTreeMap<i32, ProcReading>,
    /// The memcg's processes at the time of the scan.
    pub workload: BTreeSet<i32>,
    /// Per-CPU busy jiffies (/proc/stat).
    pub busy: Vec<u64>,
    pub forks: u64,
    pub seconds: f64,
    /// The scan's middle.
    pub at: Option<Instant>,
}

impl Scan {
    /// Read /proc now; `procs` is the memcg's cgroup.procs file.
    pub fn take(cgroup_procs: &Path) -> Scan {
        let t0 = Instant::now();
        let mut s = Scan {
            workload: read_pids(cgroup_procs),
            ..Default::default()
        };
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        s.busy = crate::placement::parse_stat_cpus(&stat)
            .into_iter()
            .map(|(b, _)| b)
            .collect();
        s.forks = stat
            .lines()
            .find_map(|l| l.strip_prefix("processes ")?.trim().parse().ok())
            .unwrap_or(0);
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for e in dir.flatten() {
                let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                    continue;
                };
                s.read_process(pid);
            }
        }
        // Processes that joined the memcg while the scan ran.
        s.workload.extend(read_pids(cgroup_procs));
        let d = t0.elapsed();
        s.seconds = d.as_secs_f64();
        s.at = Some(t0 + d / 2);
        s
    }

    fn read_process(&mut self, pid: i32) {
        let base = format!("/proc/{pid}");
        let Some(pst) = std::fs::read_to_string(format!("{base}/stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
        else {
            return;
        };
        let kthread = pst.flags & PF_KTHREAD != 0;
        let group = if kthread {
            None
        } else {
            Some(
                std::fs::read_to_string(format!("{base}/autogroup"))
                    .ok()
                    .and_then(|t| parse_autogroup(&t))
                    .map_or(Group::Session(pst.session), |(id, n)| {
                        Group::Autogroup(id, n)
                    }),
            )
        };
        self.procs.insert(
            pid,
            ProcReading {
                ticks: pst.ticks,
                children_ticks: pst.children_ticks,
                group,
                ppid: pst.ppid,
                session: pst.session,
            },
        );
        let Ok(dir) = std::fs::read_dir(format!("{base}/task")) else {
            return;
        };
        for e in dir.flatten() {
            let Ok(tid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let p = e.path();
            let (Some(st), Some((run, wait, slices))) = (
                std::fs::read_to_string(p.join("stat"))
                    .ok()
                    .and_then(|t| parse_stat(&t)),
                std::fs::read_to_string(p.join("schedstat"))
                    .ok()
                    .and_then(|t| parse_schedstat(&t)),
            ) else {
                continue;
            };
            self.tasks.insert(
                tid,
                TaskReading {
                    pid,
                    comm: st.comm,
                    run_ns: run,
                    wait_ns: wait,
                    slices,
                    session: st.session,
                    kthread: st.flags & PF_KTHREAD != 0,
                    nice: st.nice,
                    cpu: st.cpu,
                },
            );
        }
    }
}

fn read_pids(p: &Path) -> BTreeSet<i32> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn median_i(mut v: Vec<i32>) -> i32 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

/// The workload's processes: the memcg's at either scan, bench's children (a worker that has
/// ended but is not reaped yet has already left cgroup.procs), and their descendants. A child
/// that leads a session of its own in either scan is the scenario's foreign load
/// (background.rs), not the workload: it stays foreign. (Either: the first scan follows the
/// load's fork at once, and can read a session process before its setsid.)
fn workload_pids(before: &Scan, after: &Scan, own_pid: i32) -> BTreeSet<i32> {
    let mut w: BTreeSet<i32> = before.workload.union(&after.workload).copied().collect();
    let leads = |pid: &i32| {
        [before, after].iter().any(|s| {
            s.procs
                .get(pid)
                .is_some_and(|p| p.session == i64::from(*pid))
        })
    };
    loop {
        let n = w.len();
        for scan in [before, after] {
            for (pid, p) in &scan.procs {
                if (p.ppid == own_pid && !leads(pid)) || w.contains(&p.ppid) {
                    w.insert(*pid);
                }
            }
        }
        if w.len() == n {
            return w;
        }
    }
}

/// The record of the window between two scans. `own_pid`'s reaped children (the workload
/// bench forked) are not foreign time.
pub fn record(before: &Scan, after: &Scan, own_pid: i32) -> ForeignLoad {
    let window = match (before.at, after.at) {
        (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    let ncpu = after.busy.len().max(before.busy.len());
    let w = Window {
        before,
        after,
        own_pid,
        workload: workload_pids(before, after, own_pid),
    };
    let mut user = Acc::new(ncpu);
    let mut kth = Acc::new(ncpu);
    let living = w.living_tasks(&mut user, &mut kth);
    let (gone_ns, gone_slices) = w.ended_tasks(&mut user, &mut kth);
    user.exited = w.exited_seconds(&living.threads_ns);
    user.exited_slices = exited_slices(&user, gone_ns, gone_slices);
    let busy: Vec<f64> = after
        .busy
        .iter()
        .zip(before.busy.iter().chain(std::iter::repeat(&0)))
        .map(|(a, b)| a.saturating_sub(*b) as f64 / USER_HZ)
        .collect();
    let (u, k) = (user.class(), kth.class());
    let workload_cpu = living.workload_ns as f64 / 1e9;
    let accounted = workload_cpu + u.cpu_seconds + u.exited_cpu_seconds + k.cpu_seconds;
    ForeignLoad {
        window_seconds: window,
        scan_seconds: [before.seconds, after.seconds],
        scanned_tasks: [before.tasks.len() as u64, after.tasks.len() as u64],
        unaccounted_busy_seconds: busy.iter().sum::<f64>() - accounted,
        user: u,
        kthreads: k,
        workload_tasks: living.workload_tasks,
        workload_cpu_seconds: workload_cpu,
        cpu_busy_seconds: busy,
        forks: after.forks.saturating_sub(before.forks),
        timer_kthreads: living.timer_kthreads,
    }
}

/// The two scans of a window and the workload's processes in it.
struct Window<'a> {
    before: &'a Scan,
    after: &'a Scan,
    own_pid: i32,
    workload: BTreeSet<i32>,
}

/// The tasks living at the second scan, beyond what they add to the classes.
struct Living {
    workload_tasks: u64,
    workload_ns: u64,
    /// Per user process: its living threads' run time in the window.
    threads_ns: BTreeMap<i32, u64>,
    /// The timer-wheel kernel threads that ran (TIMER_KTHREAD_COMMS).
    timer_kthreads: Vec<ForeignThread>,
}

impl Window<'_> {
    /// The tasks of the second scan, by their growth since the first (all of it for a task
    /// born in the window): the workload's are summed apart, the others go to their class.
    fn living_tasks(&self, user: &mut Acc, kth: &mut Acc) -> Living {
        let mut living = Living {
            workload_tasks: 0,
            workload_ns: 0,
            threads_ns: BTreeMap::new(),
            timer_kthreads: vec![],
        };
        for (tid, a) in &self.after.tasks {
            let b = self.before.tasks.get(tid).filter(|b| b.pid == a.pid);
            let (r0, w0, s0) = b.map_or((0, 0, 0), |b| (b.run_ns, b.wait_ns, b.slices));
            let (dr, dw, ds) = (
                a.run_ns.saturating_sub(r0),
                a.wait_ns.saturating_sub(w0),
                a.slices.saturating_sub(s0),
            );
            if self.workload.contains(&a.pid) {
                living.workload_tasks += 1;
                living.workload_ns += dr;
                continue;
            }
            if !a.kthread {
                *living.threads_ns.entry(a.pid).or_default() += dr;
            } else if (dr > 0 || ds > 0) && TIMER_KTHREAD_COMMS.contains(&a.comm.as_str()) {
                living.timer_kthreads.push(ForeignThread {
                    comm: a.comm.clone(),
                    cpu_seconds: dr as f64 / 1e9,
                    timeslices: ds,
                    last_cpu: a.cpu,
                });
            }
            let acc = if a.kthread { &mut *kth } else { &mut *user };
            acc.add_task(a, (dr, dw, ds), self.after);
        }
        living
    }

    /// Tasks that ended in the window. Threads seen only in the first scan are counted, and
    /// their run time and slices by then returned (ns, slices).
    fn ended_tasks(&self, user: &mut Acc, kth: &mut Acc) -> (u64, u64) {
        let (mut gone_ns, mut gone_slices) = (0u64, 0u64);
        for (tid, b) in &self.before.tasks {
            if self.after.tasks.contains_key(tid) || self.workload.contains(&b.pid) {
                continue;
            }
            if b.kthread {
                kth.seen += 1;
                continue;
            }
            user.seen += 1;
            user.exited_tasks += 1;
            gone_ns += b.run_ns;
            gone_slices += b.slices;
        }
        (gone_ns, gone_slices)
    }

    /// The ended user tasks' CPU seconds in the window. Their time, and that of threads born
    /// and ended in the window, is read from process totals:
    /// - a living process's utime + stime covers its ended threads: its growth less its
    ///   living threads' run time is theirs;
    /// - a process that ended and was reaped by a living one is in the reaper's cutime +
    ///   cstime with its whole life: less what it (and its own reaped children) had by the
    ///   first scan.
    ///
    /// Process totals are in ticks, each read rounded down (utime and stime apart): an
    /// excess under 2 ticks is rounding.
    fn exited_seconds(&self, threads_ns: &BTreeMap<i32, u64>) -> f64 {
        let (before, after) = (self.before, self.after);
        let mut gone_before_ticks = 0u64;
        for (pid, p) in &before.procs {
            if p.group.is_some() && !after.procs.contains_key(pid) && !self.workload.contains(pid) {
                gone_before_ticks += p.ticks + p.children_ticks;
            }
        }
        let (mut reaped_ticks, mut ended_threads) = (0u64, 0.0f64);
        for (pid, p1) in &after.procs {
            if self.workload.contains(pid) || p1.group.is_none() {
                continue;
            }
            let p0 = before.procs.get(pid).copied().unwrap_or_default();
            let own = p1.ticks.saturating_sub(p0.ticks) as f64 / USER_HZ;
            let living = threads_ns.get(pid).copied().unwrap_or(0) as f64 / 1e9;
            ended_threads += (own - living - 2.0 / USER_HZ).max(0.0);
            // bench's own reaped children are the workload.
            if *pid != self.own_pid && before.procs.contains_key(pid) {
                reaped_ticks += p1.children_ticks.saturating_sub(p0.children_ticks);
            }
        }
        let reaped = (reaped_ticks.saturating_sub(gone_before_ticks) as f64 / USER_HZ).max(0.0);
        ended_threads + reaped
    }
}

/// The ended user tasks' runs: their CPU time at the mean slice length the ended threads had
/// by the first scan (`gone_ns` over `gone_slices`), else the living tasks'.
fn exited_slices(user: &Acc, gone_ns: u64, gone_slices: u64) -> u64 {
    let slice_s = if gone_slices > 0 && gone_ns > 0 {
        gone_ns as f64 / 1e9 / gone_slices as f64
    } else if user.slices > 0 && user.run_ns > 0 {
        user.run_ns as f64 / 1e9 / user.slices as f64
    } else {
        0.0
    };
    if slice_s > 0.0 {
        (user.exited / slice_s).round() as u64
    } else {
        0
    }
}

struct Acc {
    seen: u64,
    ran: u64,
    run_ns: u64,
    wait_ns: u64,
    slices: u64,
    nice: Vec<i32>,
    group_nice: Vec<i32>,
    groups: BTreeSet<Group>,
    by_cpu: Vec<f64>,
    top: Vec<(String, f64)>,
    exited: f64,
    exited_tasks: u64,
    exited_slices: u64,
}

impl Acc {
    fn new(ncpu: usize) -> Acc {
        Acc {
            seen: 0,
            ran: 0,
            run_ns: 0,
            wait_ns: 0,
            slices: 0,
            nice: vec![],
            group_nice: vec![],
            groups: BTreeSet::new(),
            by_cpu: vec![0.0; ncpu],
            top: vec![],
            exited: 0.0,
            exited_tasks: 0,
            exited_slices: 0,
        }
    }

    /// A task of the second scan that is not the workload's: seen; if it ran in the window
    /// (`d`: run ns, wait ns, slices grown), its time, nice, last CPU and group.
    fn add_task(&mut self, a: &TaskReading, d: (u64, u64, u64), after: &Scan) {
        let (dr, dw, ds) = d;
        self.seen += 1;
        if ds == 0 && dr == 0 {
            return;
        }
        self.ran += 1;
        self.run_ns += dr;
        self.wait_ns += dw;
        self.slices += ds;
        self.nice.push(a.nice);
        if let Some(c) = self.by_cpu.get_mut(a.cpu) {
            *c += dr as f64 / 1e9;
        }
        self.top.push((a.comm.clone(), dr as f64 / 1e9));
        if !a.kthread {
            if let Some(Some(g)) = after.procs.get(&a.pid).map(|p| p.group) {
                self.groups.insert(g);
                self.group_nice.push(match g {
                    Group::Autogroup(_, n) => n,
                    Group::Session(_) => 0,
                });
            }
        }
    }

    fn class(mut self) -> ForeignClass {
        self.top.sort_by(|a, b| b.1.total_cmp(&a.1));
        self.top.truncate(TOP);
        ForeignClass {
            tasks_ran: self.ran,
            tasks_seen: self.seen,
            cpu_seconds: self.run_ns as f64 / 1e9,
            wait_seconds: self.wait_ns as f64 / 1e9,
            timeslices: self.slices,
            groups: self.groups.len() as u64,
            median_nice: median_i(self.nice),
            median_group_nice: median_i(self.group_nice),
            exited_cpu_seconds: self.exited,
            tasks_exited: self.exited_tasks,
            exited_timeslices: self.exited_slices,
            cpu_seconds_by_last_cpu: self.by_cpu,
            top: self.top,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_schedstat_autogroup() {
        // A comm with a space and a parenthesis; flags of a kernel thread.
        let t = "42 (kworker/0:1 (x)) I 2 0 0 0 -1 69238880 0 0 0 0 0 3 0 0 20 0 1 0 150 0 0 \
                 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0";
        let s = parse_stat(t).unwrap();
        assert_eq!(s.comm, "kworker/0:1 (x)");
        assert_eq!(s.session, 0);
        assert!(s.flags & PF_KTHREAD != 0);
        assert_eq!(s.nice, 0);
        assert_eq!(s.cpu, 1);
        let u = "1234 (bash) S 1 1234 1234 34816 1234 4194560 500 900 0 0 10 5 7 3 20 5 1 0 \
                 100 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let s = parse_stat(u).unwrap();
        assert_eq!(
            (s.session, s.children_ticks, s.nice, s.cpu),
            (1234, 10, 5, 0)
        );
        assert_eq!(s.ticks, 15);
        assert!(s.flags & PF_KTHREAD == 0);
        assert_eq!(parse_schedstat("123456 789 10\n"), Some((123456, 789, 10)));
        assert_eq!(parse_autogroup("/autogroup-45 nice 0\n"), Some((45, 0)));
        assert_eq!(parse_autogroup("/autogroup-7 nice -3\n"), Some((7, -3)));
        assert_eq!(parse_autogroup("garbage"), None);
    }

    fn proc_(ticks: u64, children_ticks: u64, group: Option<Group>) -> ProcReading {
        ProcReading {
            ticks,
            children_ticks,
            group,
            ppid: 1,
            session: 1,
        }
    }

    fn task(pid: i32, run: u64, slices: u64, kthread: bool, nice: i32) -> TaskReading {
        TaskReading {
            pid,
            comm: format!("t{pid}"),
            run_ns: run,
            wait_ns: run / 10,
            slices,
            session: pid as i64,
            kthread,
            nice,
            cpu: 1,
        }
    }

    #[test]
    fn record_separates_workload_user_and_kthreads() {
        let t0 = Instant::now();
        let mut a = Scan {
            busy: vec![100, 200],
            forks: 10,
            at: Some(t0),
            ..Default::default()
        };
        a.tasks.insert(1, task(1, 1_000, 1, false, 0)); // user, will run 0.5 s
        a.tasks.insert(2, task(2, 5_000, 5, false, 0)); // user, idle in the window
        a.tasks.insert(3, task(3, 0, 0, true, 0)); // kthread, runs 0.1 s
        a.procs.insert(1, proc_(0, 0, Some(Group::Autogroup(7, 0))));
        a.procs.insert(2, proc_(0, 0, Some(Group::Autogroup(8, 0))));
        a.procs.insert(3, proc_(0, 0, None));
        let mut b = a.clone();
        b.at = Some(t0 + std::time::Duration::from_secs(10));
        b.busy = vec![1100, 400];
        b.forks = 13;
        b.tasks.insert(1, task(1, 500_001_000, 21, false, 0));
        b.tasks.insert(3, task(3, 100_000_000, 40, true, 0));
        // A workload task (memcg) and a user task born in the window (nice 10, in group 7).
        b.workload.insert(50);
        b.tasks.insert(50, task(50, 9_000_000_000, 100, false, 0));
        b.tasks.insert(60, task(60, 200_000_000, 4, false, 10));
        // Process 1's thread ran 0.5 s; the process 0.8 s: 0.3 s in a thread that ended.
        b.procs
            .insert(1, proc_(80, 0, Some(Group::Autogroup(7, 0))));
        b.procs
            .insert(60, proc_(20, 0, Some(Group::Autogroup(7, 0))));
        // Process 2 reaped two children that ran 1.5 s: process 4, seen at the first scan
        // with 0.3 s run in 30 slices (and 0.2 s of its own reaped children), and one born and
        // ended in the window.
        a.tasks.insert(4, task(4, 300_000_000, 30, false, 0));
        a.procs
            .insert(4, proc_(30, 20, Some(Group::Autogroup(8, 0))));
        b.procs
            .insert(2, proc_(0, 150, Some(Group::Autogroup(8, 0))));
        let r = record(&a, &b, 999);
        let r0 = r.clone();
        assert!((r.window_seconds - 10.0).abs() < 1e-9);
        assert_eq!(r.workload_tasks, 1);
        assert!((r.workload_cpu_seconds - 9.0).abs() < 1e-9);
        assert_eq!(r.user.tasks_ran, 2);
        assert_eq!(r.user.tasks_seen, 4);
        assert!((r.user.cpu_seconds - 0.7).abs() < 1e-9);
        assert_eq!(r.user.timeslices, 24);
        assert_eq!(r.user.groups, 1);
        // Reaped: 1.5 − 0.2 − 0.3 s in the window; process 1's ended thread: 0.3 s less 2
        // ticks of rounding; at process 4's 10 ms mean slice.
        assert!((r.user.exited_cpu_seconds - 1.28).abs() < 1e-9, "{r:?}");
        assert_eq!((r.user.tasks_exited, r.user.exited_timeslices), (1, 128));
        assert_eq!(r.kthreads.tasks_ran, 1);
        assert_eq!(r.kthreads.timeslices, 40);
        assert_eq!(r.kthreads.groups, 0);
        assert_eq!(r.forks, 3);
        assert_eq!(r.cpu_busy_seconds, vec![10.0, 2.0]);
        // 12 busy − 9 workload − 0.7 − 1.28 − 0.1.
        assert!((r.unaccounted_busy_seconds - 0.92).abs() < 1e-9);
        assert_eq!(r.user.top[0].0, "t1");
        assert!(
            r.timer_kthreads.is_empty(),
            "no RCU grace-period thread ran"
        );
        // The same kernel thread named rcu_preempt is also recorded on its own.
        let mut named = (a.clone(), b.clone());
        for s in [&mut named.0, &mut named.1] {
            s.tasks.get_mut(&3).unwrap().comm = "rcu_preempt".into();
        }
        let t = record(&named.0, &named.1, 999).timer_kthreads;
        assert_eq!(t.len(), 1);
        assert_eq!(
            (t[0].comm.as_str(), t[0].timeslices, t[0].last_cpu),
            ("rcu_preempt", 40, 1)
        );
        assert!((t[0].cpu_seconds - 0.1).abs() < 1e-9);
        // Our own reaped children are the workload's, not foreign.
        let r = record(&a, &b, 2);
        assert!((r.user.exited_cpu_seconds - 0.28).abs() < 1e-9);
        // A worker of bench (pid 999) that ended but is not reaped: out of cgroup.procs, but
        // bench's child, so the workload's, and so is its own child.
        let mut z = b.clone();
        z.procs.insert(
            70,
            ProcReading {
                ppid: 999,
                ..proc_(1500, 0, Some(Group::Autogroup(9, 0)))
            },
        );
        z.procs.insert(
            71,
            ProcReading {
                ppid: 70,
                ..proc_(100, 0, Some(Group::Autogroup(9, 0)))
            },
        );
        let rz = record(&a, &z, 999);
        assert_eq!(rz.user.exited_cpu_seconds, r0.user.exited_cpu_seconds);
        assert_eq!(rz.user.groups, r0.user.groups);
    }

    /// bench's load session, read by the first scan between its fork and its setsid (still in
    /// bench's session), is foreign all the same: the second scan sees it lead its session.
    #[test]
    fn a_load_session_caught_before_its_setsid_stays_foreign() {
        let t0 = Instant::now();
        let bench = 999;
        let mut a = Scan {
            busy: vec![0, 0],
            at: Some(t0),
            ..Default::default()
        };
        let child = |session: i64| ProcReading {
            ppid: bench,
            session,
            ..proc_(0, 0, Some(Group::Session(session)))
        };
        a.procs.insert(80, child(5));
        let mut b = a.clone();
        b.at = Some(t0 + std::time::Duration::from_secs(10));
        b.busy = vec![1000, 0];
        b.procs.insert(80, child(80));
        // Its load thread, born in the window, ran 4 s.
        b.tasks.insert(81, task(80, 4_000_000_000, 500, false, 0));
        let r = record(&a, &b, bench);
        assert_eq!(r.workload_tasks, 0, "{r:?}");
        assert_eq!(r.user.tasks_ran, 1);
        assert!((r.user.cpu_seconds - 4.0).abs() < 1e-9, "{r:?}");
        // A child that never leads a session is the workload's.
        let mut c = b.clone();
        c.procs.insert(80, child(5));
        assert_eq!(record(&a, &c, bench).workload_tasks, 1);
    }

    #[test]
    fn a_real_scan_sees_this_process() {
        let s = Scan::take(Path::new("/nonexistent/cgroup.procs"));
        let me = std::process::id() as i32;
        assert!(s.tasks.values().any(|t| t.pid == me), "own threads missing");
        assert!(s.tasks.values().any(|t| t.kthread) || s.tasks.len() < 3);
        assert!(s.seconds > 0.0 && !s.busy.is_empty());
    }
}
