//! The scenario's foreign load on the live machine (`machine.background_load`): the same
//! duty-cycle tasks the simulator runs (sim/src/sched/background.rs), started by bench for the
//! run so that a loaded machine is one setting on both sides, not an uncontrolled neighbour.
//!
//! Task `i` belongs to session `i % groups`: one forked process per session (setsid, so its
//! own autogroup, at `group_nice` through /proc/self/autogroup), outside the run's memcg, with
//! one thread per task at `nice`, allowed on `cpus`. A task's first period starts
//! `period * i / tasks` after the load starts; in each period it burns `duty * period` of its
//! own CPU time (CLOCK_THREAD_CPUTIME_ID: preempted time does not count, as in the simulator)
//! and sleeps until the next period's start, skipping periods it fell a whole period behind
//! on. The processes die when bench closes their pipe, or with bench (PR_SET_PDEATHSIG).

use crate::cleanup::{Cleanup, Undo};
use crate::proc::{fork_child, ChildSetup, Forked};
use anyhow::{bail, Context, Result};
use reclaimlab_core::background::BackgroundLoad;
use std::io::Read;
use std::time::{Duration, Instant};

/// The running load: its session processes.
pub struct Running {
    procs: Vec<(Forked, Undo)>,
}

/// Start the load. Every process is registered for clean-up before it runs.
pub fn start(b: &BackgroundLoad, cleanup: &Cleanup) -> Result<Running> {
    let origin = now_ns(libc::CLOCK_MONOTONIC);
    let mut procs = Vec::new();
    for g in 0..b.groups {
        let tasks: Vec<usize> = (0..b.tasks).filter(|i| i % b.groups == g).collect();
        let b2 = b.clone();
        let what = format!("foreign load session {g} ({} tasks)", tasks.len());
        let p = fork_child(
            ChildSetup::Session,
            cleanup,
            &what,
            move |mut from_parent, _| {
                session(&b2, &tasks, origin)?;
                // Until bench closes the pipe (or dies): then the threads end with the process.
                let _ = from_parent.read(&mut [0u8; 1]);
                Ok(())
            },
        )?;
        procs.push(p);
    }
    Ok(Running { procs })
}

impl Running {
    /// Stop every session process and reap it; one that does not leave within a second of
    /// its pipe closing is killed.
    pub fn stop(mut self) -> Result<()> {
        for (f, _) in &mut self.procs {
            f.to_child.take();
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut failed = Vec::new();
        for (f, undo) in self.procs.drain(..) {
            match f.proc.wait_until(deadline, &mut || {})? {
                Some(e) if e.ok() => {}
                Some(e) => failed.push(format!("pid {} {}", f.proc.pid, e.describe())),
                None => failed.push(format!("pid {} did not leave: killed", f.proc.pid)),
            }
            undo.run()?;
        }
        if !failed.is_empty() {
            bail!("the foreign load's processes: {}", failed.join("; "));
        }
        Ok(())
    }
}

/// In a session process: its autogroup's nice, then one thread per task.
fn session(b: &BackgroundLoad, tasks: &[usize], origin: u64) -> Result<()> {
    if b.group_nice != 0 {
        std::fs::write("/proc/self/autogroup", b.group_nice.to_string())
            .context("setting the session's autogroup nice (/proc/self/autogroup)")?;
    }
    for &i in tasks {
        let b = b.clone();
        let first = origin + b.period_ns * i as u64 / b.tasks as u64;
        std::thread::Builder::new()
            .name(format!(
                "{}{i}",
                reclaimlab_core::background::LOAD_COMM_PREFIX
            ))
            .spawn(move || task(&b, first))
            .context("starting a foreign-load thread")?;
    }
    Ok(())
}

/// One task: place itself, then burst and sleep for ever (the process's end stops it).
fn task(b: &BackgroundLoad, first: u64) {
    if let Err(e) = place(b) {
        crate::proc::raw_eprint(&format!("reclaimlab foreign load: {e:#}\n"));
        // SAFETY: ends the whole session process, so bench sees it fail.
        unsafe { libc::_exit(1) };
    }
    let run = b.run_ns();
    let mut period_start = first;
    sleep_until(period_start);
    loop {
        let until = now_ns(libc::CLOCK_THREAD_CPUTIME_ID) + run;
        while now_ns(libc::CLOCK_THREAD_CPUTIME_ID) < until {
            for _ in 0..256 {
                std::hint::spin_loop();
            }
        }
        if b.duty >= 1.0 {
            continue;
        }
        let now = now_ns(libc::CLOCK_MONOTONIC);
        period_start += b.period_ns;
        while period_start + b.period_ns <= now {
            period_start += b.period_ns;
        }
        sleep_until(period_start);
    }
}

/// This thread's CPUs and nice level.
fn place(b: &BackgroundLoad) -> Result<()> {
    if let Some(cpus) = &b.cpus {
        let mut set = nix::sched::CpuSet::new();
        for &c in cpus {
            set.set(c)
                .context("a CPU of machine.background_load.cpus")?;
        }
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
            .context("sched_setaffinity for machine.background_load.cpus")?;
    }
    if b.nice != 0 {
        // SAFETY: plain syscalls; for PRIO_PROCESS a thread ID names one thread on Linux.
        let r = unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, b.nice)
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error())
                .context("setpriority for machine.background_load.nice");
        }
    }
    Ok(())
}

fn now_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec for a clock every Linux has.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (t_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid timespec; EINTR just ends the sleep early, and the loop re-checks.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_cpu_clock_counts_only_this_threads_time() {
        let a = now_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        std::thread::sleep(Duration::from_millis(20));
        let b = now_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        // A sleep burns almost no CPU time.
        assert!(b - a < 5_000_000, "{} ns of CPU while asleep", b - a);
    }
}
