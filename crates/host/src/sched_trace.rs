//! Which CPUs each task bench starts ran on: `sched:sched_switch` in a private trace instance
//! (`instances/reclaimlab-<pid>-sched`), on in every run, for `placement.processes`
//! (crate::placement says why it matters).
//!
//! The instance traces only bench's own tasks and their descendants: `set_event_pid` holds
//! bench's pid (and the thread that starts the workload) and `options/event-fork` adds every
//! task they fork or clone afterwards, so the workload's processes and threads are covered from
//! birth. The kernel records a switch if either side is a traced task; a reader thread keeps,
//! per task, when it was first seen on each CPU (switched in, or out: a task switched out on a
//! CPU ran there, and a new task's first switch-in is now and then missing from the trace) and
//! its switch-ins per CPU. `trace_pipe` merges the per-CPU buffers in timestamp order.

use crate::cleanup::Cleanup;
use crate::trace::{ensure_mounted, has_event, lost_events, Instance, LineSink, Recording};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;

/// Where one task ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskCpus {
    /// The CPU it was first seen on.
    pub first_cpu: usize,
    /// Switch-ins per CPU.
    pub switch_ins: BTreeMap<usize, u64>,
    /// Per CPU it ran on, the trace timestamp (s) it was first seen there.
    pub first_seen: BTreeMap<usize, f64>,
    /// Why it left a CPU.
    pub switch_outs: SwitchOuts,
}

/// A task's switch-outs by `prev_state`: still runnable (`R`, `R+`: another task took the CPU)
/// or asleep (`S`, `D`, ...: it blocked), and for the first kind who took the CPU, by comm
/// with the per-CPU suffix of kernel threads dropped (`kworker/1:2` → `kworker`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SwitchOuts {
    pub preempted: u64,
    pub blocked: u64,
    pub preempted_by: BTreeMap<String, u64>,
}

/// One `sched_switch` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Switch {
    pub cpu: usize,
    /// The trace clock, seconds.
    pub ts: f64,
    pub prev: i32,
    pub next: i32,
    /// prev_state began with `R`: the previous task was still runnable (preempted).
    pub prev_runnable: bool,
    pub next_comm: String,
}

/// What one run's trace gathered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Record {
    /// sched_switch events read.
    pub events: u64,
    /// Events the ring buffer dropped before they were read.
    pub lost: u64,
    /// Per task id; the idle tasks (pid 0) are left out.
    pub tasks: BTreeMap<i32, TaskCpus>,
}

/// A `sched_switch` line of `trace_pipe`, e.g.
/// `  reclaimlab-10901   [001] d..2.  9241.800748: sched_switch: prev_comm=reclaimlab prev_pid=10901 ... ==> next_comm=reclaimlab next_pid=10902 next_prio=120`.
/// Comms may hold spaces, brackets and `=` but are at most 15 bytes, which the parse relies on.
pub fn parse_switch(line: &str) -> Option<Switch> {
    // Longer than any comm, so its first occurrence ends the header.
    const MARK: &str = ": sched_switch: ";
    let i = line.find(MARK)?;
    let (head, body) = (&line[..i], &line[i + MARK.len()..]);
    // "<comm>-<pid> [(<tgid>)] [CPU] [flags] timestamp": the last `[digits]` token is the CPU
    // (flags and the timestamp never are; a comm's is further left).
    let cpu = head.split_whitespace().rev().find_map(|t| {
        let d = t.strip_prefix('[')?.strip_suffix(']')?;
        (!d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .then(|| d.parse().ok())
            .flatten()
    })?;
    // next_pid is followed only by next_prio, so its last occurrence is the field, whatever
    // next_comm holds.
    let j = body.rfind(" next_pid=")?;
    let next = body[j + " next_pid=".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // Likewise prev_pid is the last one before the arrow that precedes next_comm.
    let k = body[..j].rfind(" ==> next_comm=")?;
    let m = body[..k].rfind(" prev_pid=")?;
    let prev = body[m + " prev_pid=".len()..k]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // prev_state (a fixed field) precedes the arrow; next_comm runs from it to next_pid.
    let st = body[m..k].rfind(" prev_state=")?;
    let prev_runnable = body[m + st + " prev_state=".len()..k].starts_with('R');
    let next_comm = body[k + " ==> next_comm=".len()..j].to_string();
    // The header ends with the timestamp.
    let ts = head.split_whitespace().last()?.parse().ok()?;
    Some(Switch {
        cpu,
        ts,
        prev,
        next,
        prev_runnable,
        next_comm,
    })
}

/// A comm without a kernel thread's per-CPU suffix: `kworker/u8:2` → `kworker`.
fn comm_class(comm: &str) -> &str {
    comm.split('/').next().unwrap_or(comm)
}

impl LineSink for Record {
    fn add_line(&mut self, line: &str) {
        if let Some(n) = lost_events(line) {
            self.lost += n;
            return;
        }
        let Some(sw) = parse_switch(line) else {
            return;
        };
        self.events += 1;
        for (pid, switched_in) in [(sw.prev, false), (sw.next, true)] {
            if pid == 0 {
                continue;
            }
            let t = self.tasks.entry(pid).or_insert_with(|| TaskCpus {
                first_cpu: sw.cpu,
                ..Default::default()
            });
            t.first_seen.entry(sw.cpu).or_insert(sw.ts);
            if switched_in {
                *t.switch_ins.entry(sw.cpu).or_default() += 1;
            } else if sw.prev_runnable {
                t.switch_outs.preempted += 1;
                let by = comm_class(&sw.next_comm);
                // The idle task never preempts; keep the map small for long runs.
                if let Some(n) = t.switch_outs.preempted_by.get_mut(by) {
                    *n += 1;
                } else {
                    t.switch_outs.preempted_by.insert(by.to_string(), 1);
                }
            } else {
                t.switch_outs.blocked += 1;
            }
        }
    }
}

/// The instance, set up once per bench.
pub struct SchedTrace {
    inst: Instance,
}

impl SchedTrace {
    /// Mount tracefs if needed and create the instance (both undone by `cleanup`). Fails when
    /// tracing is not possible here; bench then runs without it.
    pub fn setup(cleanup: &Cleanup) -> Result<SchedTrace> {
        ensure_mounted(cleanup)?;
        if !has_event("sched/sched_switch") {
            bail!("this kernel has no sched:sched_switch event");
        }
        // Scheduler events come steadily, not in bursts: a small buffer does.
        let inst = Instance::create(cleanup, "-sched", 2048)?;
        for f in ["set_event_pid", "options/event-fork"] {
            if !inst.dir.join(f).exists() {
                bail!("the trace instance has no {f}");
            }
        }
        Ok(SchedTrace { inst })
    }

    /// Start tracing bench, the `running` tasks (a workload started before its measured part)
    /// and everything they fork or clone from now on. Call it on the thread that will start
    /// the workload, before it does.
    pub fn start(&self, running: &[i32]) -> Result<Recording<Record>> {
        let mut pids = vec![std::process::id() as i32, nix::unistd::gettid().as_raw()];
        pids.extend(running);
        let list = pids
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        self.inst
            .record(Record::default(), &["sched/sched_switch"], |dir| {
                std::fs::write(dir.join("options/event-fork"), "1")
                    .context("setting options/event-fork")?;
                std::fs::write(dir.join("set_event_pid"), list).context("writing set_event_pid")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_and_next_pid() {
        let l = "      reclaimlab-10901   [001] d..2.  9241.800748: sched_switch: prev_comm=reclaimlab prev_pid=10901 prev_prio=120 prev_state=S ==> next_comm=reclaimlab next_pid=10902 next_prio=120";
        assert_eq!(
            parse_switch(l),
            Some(Switch {
                cpu: 1,
                ts: 9241.800748,
                prev: 10901,
                next: 10902,
                prev_runnable: false,
                next_comm: "reclaimlab".into(),
            })
        );
        // Idle task, a kworker, and the record-tgid column.
        let l = "          <idle>-0       [000] d..2.   100.000001: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/0:1 next_pid=42 next_prio=120";
        assert_eq!(
            parse_switch(l).map(|s| (s.cpu, s.prev, s.next)),
            Some((0, 0, 42))
        );
        let l = "   reclaimlab-7 (      7) [012] d..2.   1.5: sched_switch: prev_comm=reclaimlab prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=x next_pid=8 next_prio=120";
        assert_eq!(
            parse_switch(l).map(|s| (s.cpu, s.prev, s.next)),
            Some((12, 7, 8))
        );
        // No irq-info column.
        let l = " a-1 [003]  1.5: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120";
        assert_eq!(
            parse_switch(l).map(|s| (s.cpu, s.ts, s.next)),
            Some((3, 1.5, 2))
        );
    }

    #[test]
    fn comms_with_spaces_brackets_and_fields_do_not_confuse_it() {
        // A comm like "Web [5] x" in the header, and next_comm holding " next_pid=".
        let l = "       Web [5] x-3311    [001] d..2.  55.000001: sched_switch: prev_comm=Web [5] x prev_pid=3311 prev_prio=120 prev_state=S ==> next_comm=a next_pid=9 next_pid=4242 next_prio=120";
        assert_eq!(
            parse_switch(l).map(|s| (s.cpu, s.prev, s.next)),
            Some((1, 3311, 4242))
        );
        let l = "  Isolated Web Co-200   [000] d..2.   1.0: sched_switch: prev_comm=Isolated Web Co prev_pid=200 prev_prio=120 prev_state=R+ ==> next_comm=Isolated Web Co next_pid=201 next_prio=120";
        let s = parse_switch(l).unwrap();
        assert_eq!((s.cpu, s.prev, s.next), (0, 200, 201));
        assert!(s.prev_runnable, "R+ is runnable");
        assert_eq!(s.next_comm, "Isolated Web Co");
    }

    #[test]
    fn rejects_other_lines() {
        for l in [
            "",
            "garbage",
            "CPU:1 [LOST 17 EVENTS]",
            "  a-1 [000] d..2. 1.0: tlb_flush: pages:1 reason:remote shootdown (1)",
            "  a-1 d..2. 1.0: sched_switch: prev_comm=a prev_pid=1 ==> next_comm=b next_pid=2 next_prio=1",
            "  a-1 [000] d..2. 1.0: sched_switch: prev_comm=a prev_pid=1 ==> next_comm=b next_pid=x next_prio=1",
        ] {
            assert_eq!(parse_switch(l), None, "{l:?}");
        }
    }

    #[test]
    fn keeps_the_first_cpu_and_counts_switch_ins_and_lost_events() {
        let mut r = Record::default();
        let sw = |cpu: usize, ts: f64, prev: i32, next: i32| {
            format!(
                "      reclaimlab-{prev}   [{cpu:03}] d..2.  {ts:.6}: sched_switch: prev_comm=reclaimlab prev_pid={prev} prev_prio=120 prev_state=S ==> next_comm=reclaimlab next_pid={next} next_prio=120"
            )
        };
        for l in [
            sw(1, 10.0, 10901, 10902),
            sw(0, 10.5, 0, 10902),
            sw(1, 11.0, 10902, 10901),
            sw(1, 11.5, 10901, 10902),
            sw(0, 12.0, 10902, 0),
            // 10903's switch-in is missing: it is seen first where it is switched out.
            sw(0, 12.5, 10903, 0),
            "CPU:0 [LOST 5 EVENTS]".into(),
            "garbage".into(),
        ] {
            r.add_line(&l);
        }
        assert_eq!(r.events, 6);
        assert_eq!(r.lost, 5);
        assert_eq!(r.tasks.len(), 3, "idle (pid 0) is not kept");
        let t = &r.tasks[&10902];
        assert_eq!(t.first_cpu, 1);
        assert_eq!(t.switch_ins, BTreeMap::from([(0, 1), (1, 2)]));
        assert_eq!(t.first_seen, BTreeMap::from([(0, 10.5), (1, 10.0)]));
        // 10901 was first seen switched out on CPU 1, before its own switch-in there.
        assert_eq!(r.tasks[&10901].first_cpu, 1);
        assert_eq!(r.tasks[&10901].first_seen, BTreeMap::from([(1, 10.0)]));
        let t = &r.tasks[&10903];
        assert_eq!((t.first_cpu, t.switch_ins.len()), (0, 0));
        assert_eq!(t.first_seen, BTreeMap::from([(0, 12.5)]));
    }

    #[test]
    fn counts_why_a_task_left_its_cpu() {
        let mut r = Record::default();
        let sw = |state: &str, next_comm: &str, next: i32| {
            format!(
                "      reclaimlab-7   [001] d..2.  1.000000: sched_switch: prev_comm=reclaimlab prev_pid=7 prev_prio=120 prev_state={state} ==> next_comm={next_comm} next_pid={next} next_prio=120"
            )
        };
        for l in [
            sw("R", "kworker/1:2", 40),
            sw("R+", "kworker/u8:0", 41),
            sw("R", "ksoftirqd/1", 12),
            sw("D", "swapper/1", 0),
            sw("S", "reclaimlab", 8),
        ] {
            r.add_line(&l);
        }
        let o = &r.tasks[&7].switch_outs;
        assert_eq!((o.preempted, o.blocked), (3, 2));
        assert_eq!(
            o.preempted_by,
            BTreeMap::from([("kworker".into(), 2), ("ksoftirqd".into(), 1)])
        );
        // A task switched in has no switch-out counted for it.
        assert_eq!(r.tasks[&40].switch_outs, SwitchOuts::default());
    }
}
