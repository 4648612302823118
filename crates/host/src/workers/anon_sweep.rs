//! `anon-sweep`: one forked worker process per `workload.processes`, each joining the
//! memcg, mapping `workload.bytes` of private anonymous memory and running `workload.threads`
//! threads that share it, each pinned where `AnonSweep::cpu_of` says (unpinned for "all").
//!
//! With the sequential pattern thread t of T sweeps its slice [n·t/T, n·(t+1)/T) of the n
//! pages; with the random pattern it first populates its slice the same way, then touches
//! uniformly random pages of the whole buffer (seeded by `run.seed`, process and thread). The
//! first pass over the slice writes every page (the buffer is populated, so a read never maps
//! the zero page); after it each page touched is written with probability `write_ratio` and
//! read otherwise. Each worker reports the pages its threads touched over its pipe; throughput
//! is the total over `run.duration` (`pages_per_sec`). The load should never be OOM-killed:
//! a run with an OOM kill is invalid.

use super::{
    finish, maybe_hang, parse_result, pin, report_sweeps, touch_until, wait_line, Mapping,
};
use crate::proc::{fork_in_memcg, Forked};
use crate::workload::{Env, HostWorkload, Meter, Outcome};
use anyhow::{Context, Result};
use reclaimlab_core::scenario::{AnonSweep as Spec, Pattern};
use reclaimlab_core::Throughput;
use std::time::{Duration, Instant};

pub struct AnonSweep {
    spec: Spec,
}

impl AnonSweep {
    pub fn new(spec: &Spec) -> AnonSweep {
        AnonSweep { spec: spec.clone() }
    }
}

/// xorshift64*: cheap enough not to show in the sweep's cost.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, p: usize, t: usize) -> Rng {
        let k = 0x9E37_79B9_7F4A_7C15u64;
        Rng(
            (seed ^ k.wrapping_mul(p as u64 + 1) ^ k.rotate_left(17).wrapping_mul(t as u64 + 1))
                | 1,
        )
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Pages touched by thread `t` of process `p` in `dur`.
fn sweep(map: &Mapping, spec: &Spec, p: usize, t: usize, dur: Duration, seed: u64) -> u64 {
    let n = map.pages().max(1);
    let (start, end) = (n * t / spec.threads, n * (t + 1) / spec.threads);
    let deadline = Instant::now() + dur;
    let mut rng = Rng::new(seed, p, t);
    // write with probability write_ratio: compare 32 random bits against ratio × 2^32.
    let threshold = (spec.write_ratio * (1u64 << 32) as f64) as u64;
    if start == end {
        // More threads than pages: this one has nothing to touch.
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        return 0;
    }
    // The populate pass writes every page of the slice once, then the pattern runs; the
    // deadline is read as touch_until reads it, so a slow touch (a swap-in from a block
    // device) does not carry the count past the run's end.
    let mut populate = start;
    let mut i = start;
    touch_until(deadline, || {
        if populate < end {
            map.touch(populate, true);
            populate += 1;
            return;
        }
        let page = match spec.pattern {
            Pattern::Sequential => {
                let page = i;
                i = if i + 1 >= end { start } else { i + 1 };
                page
            }
            Pattern::Random => (rng.next() % n as u64) as usize,
        };
        map.touch(page, (rng.next() >> 32) < threshold);
    })
}

/// Run `f` with the calling thread pinned to `cpu` (if any), then restore its affinity.
fn with_affinity<T>(cpu: Option<usize>, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let Some(c) = cpu else { return f() };
    let me = nix::unistd::Pid::from_raw(0);
    let saved = nix::sched::sched_getaffinity(me).context("sched_getaffinity")?;
    pin(Some(c))?;
    let r = f();
    nix::sched::sched_setaffinity(me, &saved).context("restoring the CPU affinity")?;
    r
}

/// The body of worker process `p`: map, sweep with pinned threads, report "result N ...".
fn worker(spec: &Spec, p: usize, dur: Duration, seed: u64, mut to: std::fs::File) -> Result<()> {
    maybe_hang();
    let map = Mapping::anon(spec.bytes_per_process as usize)?;
    let spec = spec.clone();
    report_sweeps(
        spec.threads,
        move |t| {
            pin(spec.cpu_of(p, t))?;
            Ok(sweep(&map, &spec, p, t, dur, seed))
        },
        &mut to,
    )
}

impl HostWorkload for AnonSweep {
    fn oom_invalidates(&self) -> bool {
        true
    }

    fn oom_note(&self) -> &'static str {
        " (anon-sweep should never be OOM-killed: the run is invalid, not averaged in)"
    }

    fn run(&mut self, env: &Env, meter: &mut Meter) -> Result<Outcome> {
        let (dur, seed) = (env.duration, env.seed);
        meter.start()?;
        let t0 = Instant::now();
        let mut workers: Vec<(Forked, crate::cleanup::Undo)> = Vec::new();
        for p in 0..self.spec.processes {
            let spec = self.spec.clone();
            // Fork with this thread pinned to the process's first CPU, so the child runs only
            // there from its birth: x86 never clears a CPU from mm_cpumask on switch-away, so
            // one early tick of the child on another CPU would make every later reclaim flush
            // reach that CPU too.
            let w = with_affinity(self.spec.cpu_of(p, 0), || {
                fork_in_memcg(
                    env.cg,
                    env.cleanup,
                    &format!("anon-sweep worker {p}"),
                    move |_from, to| worker(&spec, p, dur, seed, to),
                )
            })?;
            workers.push(w);
        }
        env.started()?;
        let mut lines = Vec::new();
        for (w, _) in workers.iter_mut() {
            let mut buf = Vec::new();
            lines.push(wait_line(w, &mut buf, env, env.duration, "anon-sweep")?);
        }
        let secs = t0.elapsed().as_secs_f64();
        meter.stop();
        let mut out = Outcome {
            throughput: Throughput {
                value: 0.0,
                unit: "pages_per_sec".into(),
            },
            completed: true,
            ..Default::default()
        };
        let mut per_thread: Vec<u64> = Vec::new();
        for (p, ((mut w, undo), line)) in workers.into_iter().zip(lines).enumerate() {
            let ended = finish(&mut w, env)?;
            undo.run()?;
            match parse_result(line.as_deref()) {
                Some(per) if ended.ok() => per_thread.extend(per),
                _ => {
                    out.completed = false;
                    out.notes.push(format!(
                        "anon-sweep worker {p} {} before it reported",
                        ended.describe()
                    ));
                }
            }
        }
        let total: u64 = per_thread.iter().sum();
        out.throughput.value = total as f64 / env.duration.as_secs_f64();
        out.extra.insert("pages_touched".into(), total.into());
        out.extra
            .insert("pages_touched_per_thread".into(), per_thread.into());
        out.extra.insert("worker_seconds".into(), secs.into());
        Ok(out)
    }
}
