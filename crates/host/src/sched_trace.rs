//! Which CPUs each task bench starts ran on: `sched:sched_switch` in a private trace instance
//! (`instances/reclaimlab-<pid>-sched`), on in every run unless `--no-placement-trace`, for
//! `placement.processes` (crate::placement says why it matters).
//!
//! The instance traces only bench's own tasks and their descendants: `set_event_pid` holds
//! bench's pid (and the thread that starts the workload) and `options/event-fork` adds every
//! task they fork or clone afterwards, so the workload's processes and threads are covered from
//! birth. The kernel records a switch if either side is a traced task; a reader thread keeps,
//! per task, when it was first seen on each CPU (switched in, or out: a task switched out on a
//! CPU ran there, and a new task's first switch-in is now and then missing from the trace) and
//! its switch-ins per CPU.
//!
//! The reader takes the per-CPU ring-buffer pages from `per_cpu/cpuN/trace_pipe_raw` and
//! decodes them (crate::ring_page) with the offsets of the event's `format` file: an I/O-bound
//! row switches ~30 000 times a second, and having the kernel print each event as text for
//! `trace_pipe` and parsing it back cost several times more CPU. The pages of one CPU come in
//! order but the CPUs are not merged, so the CPU a task was first seen on is settled at the
//! end from the earliest first-seen time (ties to the lower CPU, as `trace_pipe`'s merge does).

use crate::cleanup::Cleanup;
use crate::ring_page::{decode, EventFormat, Field, PageLayout};
use crate::trace::{ensure_mounted, has_event, Instance, PageSink, Recording, TRACEFS};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// Where one task ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskCpus {
    /// The CPU it was first seen on (set by [`Record::settle`]).
    pub first_cpu: usize,
    /// Switch-ins per CPU.
    pub switch_ins: BTreeMap<usize, u64>,
    /// Per CPU it ran on, the trace timestamp (s, to the microsecond as `trace_pipe` prints
    /// it) it was first seen there (set by [`Record::settle`]).
    pub first_seen: BTreeMap<usize, f64>,
    /// Per CPU it ran on, the trace timestamp (ns) it was first seen there.
    pub first_seen_ns: BTreeMap<usize, u64>,
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

/// One `sched_switch` event.
#[derive(Clone, Debug, PartialEq)]
pub struct Switch<'a> {
    pub cpu: usize,
    /// The trace clock, ns.
    pub ts_ns: u64,
    pub prev: i32,
    pub next: i32,
    /// The previous task was still runnable (preempted).
    pub prev_runnable: bool,
    pub next_comm: &'a [u8],
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
    /// CPU time (s) bench's reader thread spent reading and decoding the trace, the kernel's
    /// side of the read included: a load on the machine the workload does not account for.
    pub reader_cpu_s: f64,
}

/// A comm without a kernel thread's per-CPU suffix: `kworker/u8:2` → `kworker`.
fn comm_class(comm: &[u8]) -> &[u8] {
    comm.split(|&b| b == b'/').next().unwrap_or(comm)
}

impl Record {
    /// Count one switch.
    pub fn add(&mut self, sw: &Switch) {
        self.events += 1;
        for (pid, switched_in) in [(sw.prev, false), (sw.next, true)] {
            if pid == 0 {
                continue;
            }
            let t = self.tasks.entry(pid).or_default();
            t.first_seen_ns.entry(sw.cpu).or_insert(sw.ts_ns);
            if switched_in {
                *t.switch_ins.entry(sw.cpu).or_default() += 1;
            } else if sw.prev_runnable {
                t.switch_outs.preempted += 1;
                let by = String::from_utf8_lossy(comm_class(sw.next_comm));
                // The idle task never preempts; keep the map small for long runs.
                if let Some(n) = t.switch_outs.preempted_by.get_mut(by.as_ref()) {
                    *n += 1;
                } else {
                    t.switch_outs.preempted_by.insert(by.into_owned(), 1);
                }
            } else {
                t.switch_outs.blocked += 1;
            }
        }
    }

    /// Fill each task's `first_cpu` (the CPU of its earliest first-seen time, the lower CPU on
    /// a tie) and `first_seen` in seconds, rounded to the microsecond as the kernel's text
    /// output rounds them (`ns2usecs`, kernel/trace/trace.h).
    pub fn settle(&mut self) {
        for t in self.tasks.values_mut() {
            if let Some((&cpu, _)) = t.first_seen_ns.iter().min_by_key(|&(c, ns)| (*ns, *c)) {
                t.first_cpu = cpu;
            }
            t.first_seen = t
                .first_seen_ns
                .iter()
                .map(|(&c, &ns)| (c, ((ns + 500) / 1000) as f64 / 1e6))
                .collect();
        }
    }
}

/// The fields of `sched_switch` the reader needs, from its `format` file.
#[derive(Clone, Debug, PartialEq)]
pub struct SwitchFormat {
    id: u16,
    common_type: Field,
    prev_pid: Field,
    prev_state: Field,
    next_comm: Field,
    next_pid: Field,
}

/// `prev_state` bits that name a sleeping state: the event prints `R` when none is set
/// (`__trace_sched_switch_state` reports a preempted task as `TASK_REPORT_MAX`, 0x100, above
/// them; the `format` file's print fmt masks with `((TASK_REPORT + 1) << 1) - 1` = 0xff).
const PREV_STATE_ASLEEP: i64 = 0xff;

impl SwitchFormat {
    pub fn parse(format: &str) -> Option<SwitchFormat> {
        let f = EventFormat::parse(format)?;
        Some(SwitchFormat {
            id: f.id,
            common_type: f.field("common_type")?,
            prev_pid: f.field("prev_pid")?,
            prev_state: f.field("prev_state")?,
            next_comm: f.field("next_comm")?,
            next_pid: f.field("next_pid")?,
        })
    }

    /// The switch in one event's payload, if it is a `sched_switch`.
    pub fn switch<'a>(&self, cpu: usize, ts_ns: u64, p: &'a [u8]) -> Option<Switch<'a>> {
        if self.common_type.int(p, false)? != i64::from(self.id) {
            return None;
        }
        Some(Switch {
            cpu,
            ts_ns,
            prev: self.prev_pid.int(p, true)? as i32,
            next: self.next_pid.int(p, true)? as i32,
            prev_runnable: self.prev_state.int(p, true)? & PREV_STATE_ASLEEP == 0,
            next_comm: self.next_comm.str(p)?,
        })
    }
}

/// Decodes `trace_pipe_raw` pages into a [`Record`].
#[derive(Clone, Debug)]
pub struct RawReader {
    layout: PageLayout,
    format: SwitchFormat,
    pub record: Record,
    /// Pages that did not decode (their events are not counted).
    pub bad_pages: u64,
}

impl RawReader {
    pub fn new(layout: PageLayout, format: SwitchFormat) -> RawReader {
        RawReader {
            layout,
            format,
            record: Record::default(),
            bad_pages: 0,
        }
    }

    /// The record, settled.
    pub fn into_record(self) -> Record {
        let mut r = self.record;
        r.settle();
        r
    }
}

impl PageSink for RawReader {
    fn add_page(&mut self, cpu: usize, page: &[u8]) {
        let (fmt, rec) = (&self.format, &mut self.record);
        match decode(page, &self.layout, |ts, p| {
            if let Some(sw) = fmt.switch(cpu, ts, p) {
                rec.add(&sw)
            }
        }) {
            Some(info) => self.record.lost += info.lost,
            None => self.bad_pages += 1,
        }
    }
}

/// A tracefs file read with one large buffer: `events/header_page` answers a read at a
/// non-zero position with 0 bytes (`show_header_page_file`, kernel/trace/trace_events.c), and
/// `read_to_string` starts with a 32-byte probe, so it would get the first 32 bytes only.
fn read_whole(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut buf = vec![0u8; 64 << 10];
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut n = 0;
    loop {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
        if n == buf.len() {
            bail!("{} is larger than {} bytes", path.display(), buf.len());
        }
    }
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// The instance, set up once per bench.
pub struct SchedTrace {
    inst: Instance,
    layout: PageLayout,
    format: SwitchFormat,
}

impl SchedTrace {
    /// Mount tracefs if needed and create the instance (both undone by `cleanup`). Fails when
    /// tracing is not possible here; bench then runs without it.
    pub fn setup(cleanup: &Cleanup) -> Result<SchedTrace> {
        ensure_mounted(cleanup)?;
        if !has_event("sched/sched_switch") {
            bail!("this kernel has no sched:sched_switch event");
        }
        let read = |f: &str| read_whole(&Path::new(TRACEFS).join(f));
        let Some(layout) = PageLayout::parse(&read("events/header_page")?) else {
            bail!("events/header_page has no timestamp, commit and data fields");
        };
        let Some(format) = SwitchFormat::parse(&read("events/sched/sched_switch/format")?) else {
            bail!("sched_switch's format lacks a field the reader needs");
        };
        // Scheduler events come steadily, not in bursts: a small buffer does.
        let inst = Instance::create(cleanup, "-sched", 2048)?;
        for f in ["set_event_pid", "options/event-fork", "per_cpu"] {
            if !inst.dir.join(f).exists() {
                bail!("the trace instance has no {f}");
            }
        }
        Ok(SchedTrace {
            inst,
            layout,
            format,
        })
    }

    /// Start tracing bench, the `running` tasks (a workload started before its measured part)
    /// and everything they fork or clone from now on. Call it on the thread that will start
    /// the workload, before it does.
    pub fn start(&self, running: &[i32]) -> Result<Recording<RawReader>> {
        let mut pids = vec![std::process::id() as i32, nix::unistd::gettid().as_raw()];
        pids.extend(running);
        let list = pids
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        self.inst.record_raw(
            RawReader::new(self.layout, self.format.clone()),
            self.layout.page_size(),
            &["sched/sched_switch"],
            |dir| {
                std::fs::write(dir.join("options/event-fork"), "1")
                    .context("setting options/event-fork")?;
                std::fs::write(dir.join("set_event_pid"), list).context("writing set_event_pid")
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::lost_events;

    /// A `sched_switch` line of the kernel's text output (`trace`, `trace_pipe`), as the reader
    /// before the binary one took it; kept to check the binary reader against the text of the
    /// same events. Owned next_comm.
    type TextSwitch = (usize, u64, i32, i32, bool, String);

    /// e.g. `  reclaimlab-10901   [001] d..2.  9241.800748: sched_switch: prev_comm=reclaimlab
    /// prev_pid=10901 ... ==> next_comm=reclaimlab next_pid=10902 next_prio=120`. Comms may
    /// hold spaces, brackets and `=` but are at most 15 bytes.
    fn parse_text(line: &str) -> Option<TextSwitch> {
        const MARK: &str = ": sched_switch: ";
        let i = line.find(MARK)?;
        let (head, body) = (&line[..i], &line[i + MARK.len()..]);
        // The last `[digits]` token of the header is the CPU.
        let cpu = head.split_whitespace().rev().find_map(|t| {
            let d = t.strip_prefix('[')?.strip_suffix(']')?;
            (!d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .then(|| d.parse().ok())
                .flatten()
        })?;
        let j = body.rfind(" next_pid=")?;
        let next = body[j + " next_pid=".len()..]
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        let k = body[..j].rfind(" ==> next_comm=")?;
        let m = body[..k].rfind(" prev_pid=")?;
        let prev = body[m + " prev_pid=".len()..k]
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        let st = body[m..k].rfind(" prev_state=")?;
        let runnable = body[m + st + " prev_state=".len()..k].starts_with('R');
        let comm = body[k + " ==> next_comm=".len()..j].to_string();
        // "secs.usecs" → ns
        let (secs, usecs) = head.split_whitespace().last()?.split_once('.')?;
        let ts = secs.parse::<u64>().ok()? * 1_000_000_000 + usecs.parse::<u64>().ok()? * 1000;
        Some((cpu, ts, prev, next, runnable, comm))
    }

    /// A record from text lines, settled.
    fn from_text<'a>(lines: impl IntoIterator<Item = &'a str>) -> Record {
        let mut r = Record::default();
        for l in lines {
            if let Some(n) = lost_events(l) {
                r.lost += n;
            } else if let Some((cpu, ts_ns, prev, next, prev_runnable, c)) = parse_text(l) {
                r.add(&Switch {
                    cpu,
                    ts_ns,
                    prev,
                    next,
                    prev_runnable,
                    next_comm: c.as_bytes(),
                });
            }
        }
        r.settle();
        r
    }

    fn reader() -> RawReader {
        RawReader::new(
            PageLayout::parse(include_str!("../tests/data/header_page")).unwrap(),
            SwitchFormat::parse(include_str!("../tests/data/sched_switch.format")).unwrap(),
        )
    }

    /// Pages the kernel gave for a short traced run (a shell, a CPU-bound loop on CPU 1,
    /// short sleeps and synchronous writes) and the `trace` text of the same buffer, read
    /// before the pages were consumed: both readers must agree on every field.
    #[test]
    fn binary_and_text_readers_agree_on_captured_pages() {
        let mut raw = reader();
        for (cpu, bytes) in [
            (
                0,
                &include_bytes!("../tests/data/sched_switch.cpu0.raw")[..],
            ),
            (
                1,
                &include_bytes!("../tests/data/sched_switch.cpu1.raw")[..],
            ),
        ] {
            assert_eq!(bytes.len() % 4096, 0);
            for page in bytes.chunks(4096) {
                raw.add_page(cpu, page);
            }
        }
        assert_eq!(raw.bad_pages, 0);
        let raw = raw.into_record();
        let text = from_text(include_str!("../tests/data/sched_switch.trace").lines());
        // Not a vacuous match: both CPUs, several tasks, both kinds of switch-out.
        assert!(raw.events > 500, "{}", raw.events);
        let cpus: std::collections::BTreeSet<usize> = raw
            .tasks
            .values()
            .flat_map(|t| t.switch_ins.keys().copied())
            .collect();
        assert_eq!(cpus.len(), 2);
        assert!(raw.tasks.len() > 3);
        assert!(raw.tasks.values().any(|t| t.switch_outs.preempted > 0));
        assert!(raw.tasks.values().any(|t| t.switch_outs.blocked > 0));
        // The text keeps microseconds only.
        let mut coarse = raw.clone();
        for t in coarse.tasks.values_mut() {
            for ns in t.first_seen_ns.values_mut() {
                *ns = (*ns + 500) / 1000 * 1000;
            }
        }
        assert_eq!(text, coarse);
    }

    #[test]
    fn decodes_a_switch_payload() {
        let r = reader();
        let mut p = vec![0u8; 64];
        p[..2].copy_from_slice(&372u16.to_le_bytes());
        p[24..28].copy_from_slice(&7i32.to_le_bytes());
        p[40..51].copy_from_slice(b"kworker/1:2");
        p[56..60].copy_from_slice(&9i32.to_le_bytes());
        for (state, runnable) in [
            (0i64, true),
            (0x100, true),
            (1, false),
            (2, false),
            (0x80, false),
        ] {
            p[32..40].copy_from_slice(&state.to_le_bytes());
            let sw = r.format.switch(1, 5, &p).unwrap();
            assert_eq!((sw.prev, sw.next, sw.cpu, sw.ts_ns), (7, 9, 1, 5));
            assert_eq!(sw.prev_runnable, runnable, "prev_state {state:#x}");
            assert_eq!(sw.next_comm, b"kworker/1:2");
        }
        p[..2].copy_from_slice(&373u16.to_le_bytes());
        assert_eq!(r.format.switch(1, 5, &p), None, "another event's id");
    }

    #[test]
    fn parses_text_lines_with_odd_comms() {
        let l = "       Web [5] x-3311    [001] d..2.  55.000001: sched_switch: prev_comm=Web [5] x prev_pid=3311 prev_prio=120 prev_state=S ==> next_comm=a next_pid=9 next_pid=4242 next_prio=120";
        assert_eq!(
            parse_text(l).map(|s| (s.0, s.1, s.2, s.3)),
            Some((1, 55_000_001_000, 3311, 4242))
        );
        let l = "   reclaimlab-7 (      7) [012] d..2.   1.5: sched_switch: prev_comm=reclaimlab prev_pid=7 prev_prio=120 prev_state=R+ ==> next_comm=Isolated Web Co next_pid=8 next_prio=120";
        let s = parse_text(l).unwrap();
        assert_eq!((s.0, s.2, s.3, s.4), (12, 7, 8, true));
        assert_eq!(s.5, "Isolated Web Co");
        assert_eq!(parse_text("CPU:1 [LOST 17 EVENTS]"), None);
    }

    fn sw(cpu: usize, ts_ns: u64, prev: i32, next: i32) -> Switch<'static> {
        Switch {
            cpu,
            ts_ns,
            prev,
            next,
            prev_runnable: false,
            next_comm: b"reclaimlab",
        }
    }

    #[test]
    fn keeps_the_first_cpu_and_counts_switch_ins() {
        let mut r = Record::default();
        // Fed CPU by CPU, as the binary reader does: CPU 1's pages, then CPU 0's.
        for s in [
            sw(1, 10_000_000_000, 10901, 10902),
            sw(1, 11_000_000_000, 10902, 10901),
            sw(1, 11_500_000_000, 10901, 10902),
            sw(0, 10_500_000_000, 0, 10902),
            sw(0, 12_000_000_000, 10902, 0),
            // 10903's switch-in is missing: it is seen first where it is switched out.
            sw(0, 12_500_000_000, 10903, 0),
            // 10904 is seen on both CPUs in the same nanosecond: the lower CPU wins.
            sw(1, 13_000_000_400, 0, 10904),
            sw(0, 13_000_000_400, 0, 10904),
        ] {
            r.add(&s);
        }
        r.settle();
        assert_eq!(r.events, 8);
        assert_eq!(r.tasks.len(), 4, "idle (pid 0) is not kept");
        let t = &r.tasks[&10902];
        assert_eq!(t.first_cpu, 1);
        assert_eq!(t.switch_ins, BTreeMap::from([(0, 1), (1, 2)]));
        assert_eq!(t.first_seen, BTreeMap::from([(0, 10.5), (1, 10.0)]));
        assert_eq!(r.tasks[&10901].first_cpu, 1);
        let t = &r.tasks[&10903];
        assert_eq!((t.first_cpu, t.switch_ins.len()), (0, 0));
        assert_eq!(t.first_seen, BTreeMap::from([(0, 12.5)]));
        let t = &r.tasks[&10904];
        assert_eq!(t.first_cpu, 0);
        // Rounded to the microsecond as the text prints it.
        assert_eq!(t.first_seen[&0], 13.000_000);
        let mut r = Record::default();
        r.add(&sw(1, 5_000_000_000, 0, 3));
        r.add(&sw(0, 4_999_999_999, 0, 3));
        r.settle();
        assert_eq!(
            r.tasks[&3].first_cpu, 0,
            "the earliest time wins, not the order read"
        );
    }

    #[test]
    fn counts_why_a_task_left_its_cpu() {
        let mut r = Record::default();
        for (runnable, comm, next) in [
            (true, &b"kworker/1:2"[..], 40),
            (true, b"kworker/u8:0", 41),
            (true, b"ksoftirqd/1", 12),
            (false, b"swapper/1", 0),
            (false, b"reclaimlab", 8),
        ] {
            r.add(&Switch {
                prev_runnable: runnable,
                next_comm: comm,
                ..sw(1, 1, 7, next)
            });
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
