//! What every host workload plugs into: the run environment (its memcg, the clean-up registry,
//! duration and grace, progress), the meter that samples counters around the measured part, and
//! the [`HostWorkload`] trait. Adding a workload means one module implementing the trait and one
//! arm in [`for_scenario`].

use crate::cgroup::Memcg;
use crate::cleanup::Cleanup;
use crate::counters::{deltas, Deltas, Snapshot};
use crate::sched_trace::SchedTrace;
use crate::trace::{Histogram, Recording, Tracer};
use anyhow::{bail, Result};
use reclaimlab_core::{Scenario, Throughput, Workload};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Host-only tunables from the scenario's `[host]` section.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// How long past `run.duration` a run may take before bench gives up on it (`host.grace`).
    pub grace: Duration,
    /// The stress-ng binary (`host.stress_ng`).
    pub stress_ng: String,
    /// The foreign load bench starts for each run (`machine.background_load`), if any.
    pub background: Option<reclaimlab_core::background::BackgroundLoad>,
}

impl HostConfig {
    pub fn read(scn: &Scenario) -> Result<HostConfig> {
        let s = &scn.source;
        let grace = s.check_range(
            "host.grace",
            s.duration_ns_or("host.grace", 30_000_000_000)?,
            0,
            reclaimlab_core::scenario::limits::MAX_DURATION_NS,
            reclaimlab_core::scenario::fmt_duration,
            "a deadline past run.duration, and a day at most",
        )?;
        let stress_ng = s.str_or("host.stress_ng", "stress-ng")?;
        if stress_ng.trim().is_empty() {
            return Err(s
                .err("host.stress_ng", "is empty: give the stress-ng binary")
                .into());
        }
        Ok(HostConfig {
            grace: Duration::from_nanos(grace),
            stress_ng,
            background: reclaimlab_core::background::BackgroundLoad::from_scenario(scn)?,
        })
    }

    /// The `[host]` keys bench reads: `sim` validates them too (a typo is an error there as
    /// well, though it does not use them).
    pub const KEYS: &'static [&'static str] = &["host.grace", "host.stress_ng"];

    /// Check the `[host]` section without running anything: values in range, no unknown key.
    pub fn check_section(scn: &Scenario) -> Result<()> {
        HostConfig::read(scn)?;
        for k in scn.source.keys_under("host") {
            if !Self::KEYS.contains(&k.as_str()) {
                return Err(scn
                    .source
                    .err(&k, "unknown key (host.grace, host.stress_ng)")
                    .into());
            }
        }
        Ok(())
    }
}

/// Everything a workload needs for one repetition.
pub struct Env<'a> {
    pub cg: &'a Memcg,
    pub cleanup: &'a Cleanup,
    pub duration: Duration,
    pub grace: Duration,
    pub seed: u64,
    /// Repetition index (0-based), for unique file names.
    pub index: usize,
    pub progress: &'a dyn Fn(f64),
}

impl Env<'_> {
    /// Deadline for a phase that should take `expected`.
    pub fn deadline(&self, expected: Duration) -> Instant {
        Instant::now() + expected + self.grace
    }

    /// Called by a workload once its processes run inside the memcg: the fault-injection point
    /// of the clean-up tests (`RECLAIMLAB_TEST_FAULT=panic|error`).
    pub fn started(&self) -> Result<()> {
        match std::env::var("RECLAIMLAB_TEST_FAULT").as_deref() {
            Ok("panic") => panic!("RECLAIMLAB_TEST_FAULT=panic: injected panic after set-up"),
            Ok("error") => bail!("RECLAIMLAB_TEST_FAULT=error: injected error after set-up"),
            _ => Ok(()),
        }
    }
}

/// Samples counters (and the traces) around the measured part of a run.
pub struct Meter<'a> {
    cg: &'a Memcg,
    tracer: Option<&'a Tracer>,
    sched: Option<&'a SchedTrace>,
    before: Option<(Snapshot, Instant)>,
    rec: Option<Recording>,
    sched_rec: Option<Recording<crate::sched_trace::RawReader>>,
    /// What the run should say about the meter (a scheduler trace that failed to start).
    pub notes: Vec<String>,
    done: Option<(Deltas, f64, Option<Histogram>)>,
    placement: Option<crate::placement::Sampler>,
    /// The `placement` section, once stopped.
    pub placement_report: Option<serde_json::Value>,
    foreign_before: Option<crate::foreign::Scan>,
    /// The tasks outside the memcg during the window (`runs[].foreign`), once stopped.
    pub foreign: Option<reclaimlab_core::foreign::ForeignLoad>,
}

impl<'a> Meter<'a> {
    pub fn new(
        cg: &'a Memcg,
        tracer: Option<&'a Tracer>,
        sched: Option<&'a SchedTrace>,
    ) -> Meter<'a> {
        Meter {
            cg,
            tracer,
            sched,
            before: None,
            rec: None,
            sched_rec: None,
            notes: Vec::new(),
            done: None,
            placement: None,
            placement_report: None,
            foreign_before: None,
            foreign: None,
        }
    }

    /// Start measuring: workloads call it before they fork anything, so the scheduler trace
    /// sees their tasks from birth.
    pub fn start(&mut self) -> Result<()> {
        // First, so the scan's own CPU time lies before the counters' window.
        self.foreign_before = Some(crate::foreign::Scan::take(&self.cg.procs_path()));
        if let Some(s) = self.sched {
            // A workload that started before its measured part (file-reclaim) is traced from
            // here on: every thread already in the memcg.
            let running = crate::placement::memcg_tids(&self.cg.procs_path());
            match s.start(&running) {
                Ok(r) => self.sched_rec = Some(r),
                Err(e) => self.notes.push(format!(
                    "the scheduler trace did not start ({e:#}): placement.processes has no CPUs"
                )),
            }
        }
        self.rec = match self.tracer {
            Some(t) => Some(t.start()?),
            None => None,
        };
        self.before = Some((Snapshot::take(Some(self.cg)), Instant::now()));
        self.placement = Some(crate::placement::Sampler::start(self.cg.procs_path()));
        Ok(())
    }

    pub fn stop(&mut self) {
        let after = Snapshot::take(Some(self.cg));
        // The window is the counters': stopping the trace readers and the sampler below (their
        // last polls and drains, ~0.1 s) is not in it.
        let end = Instant::now();
        let sched = self.sched_rec.take().map(|r| match r.finish_with_cpu() {
            Some((reader, cpu)) => {
                if reader.bad_pages > 0 {
                    self.notes.push(format!(
                        "scheduler trace: {} ring-buffer pages did not decode; their events are \
                         not in placement.processes",
                        reader.bad_pages
                    ));
                }
                let mut rec = reader.into_record();
                rec.reader_cpu_s = cpu;
                rec
            }
            None => {
                self.notes
                    .push("the scheduler trace's reader failed".into());
                Default::default()
            }
        });
        self.placement_report = self.placement.take().map(|s| s.finish(sched.as_ref()));
        if let Some((before, t0)) = self.before.take() {
            let wall = end.duration_since(t0).as_secs_f64();
            let hist = self.rec.take().map(|r| r.finish());
            self.done = Some((deltas(&before, &after), wall, hist));
        }
        // Last, after the counters' window has closed.
        if let Some(b) = self.foreign_before.take() {
            let a = crate::foreign::Scan::take(&self.cg.procs_path());
            let mut f = crate::foreign::record(&b, &a, std::process::id() as i32);
            // Workers that ended before the second scan: their time from the sampler.
            let sampled: f64 = self
                .placement_report
                .as_ref()
                .and_then(|p| p["tasks"].as_array())
                .map(|ts| ts.iter().filter_map(|t| t["cpu_seconds"].as_f64()).sum())
                .unwrap_or(0.0);
            if sampled > f.workload_cpu_seconds {
                f.unaccounted_busy_seconds -= sampled - f.workload_cpu_seconds;
                f.workload_cpu_seconds = sampled;
            }
            self.foreign = Some(f);
        }
    }

    /// (counter deltas, wall seconds of the measured part, trace histogram).
    pub fn finish(self) -> Result<(Deltas, f64, Option<Histogram>)> {
        // (bench takes `placement_report` before this)
        match self.done {
            Some(d) => Ok(d),
            None => bail!("internal: the workload never stopped its meter"),
        }
    }
}

/// What a workload reports for one repetition (counters come from the meter).
#[derive(Debug, Default)]
pub struct Outcome {
    pub throughput: Throughput,
    /// False when the workload did not run to its end (killed, failed): the run is invalid.
    pub completed: bool,
    pub notes: Vec<String>,
    pub extra: BTreeMap<String, serde_json::Value>,
}

pub trait HostWorkload {
    /// Check what the workload needs (binaries, directories) before anything is changed.
    fn check(&mut self) -> Result<()> {
        Ok(())
    }
    /// The exact command line of the workload program, if it is an external one.
    fn command(&self) -> Option<String> {
        None
    }
    /// The workload program's version, if external.
    fn version(&self) -> Option<String> {
        None
    }
    /// Whether an OOM kill in the memcg makes the run invalid (a workload that should never be
    /// OOM-killed). stress-ng's workers are routinely killed and restarted, so not for it.
    fn oom_invalidates(&self) -> bool {
        false
    }
    /// The directory the workload puts its data files in, if any (for [`crate::leftovers`]).
    fn data_dir(&self) -> Option<&std::path::Path> {
        None
    }
    /// Appended to the note about OOM kills (what they mean for this workload).
    fn oom_note(&self) -> &'static str {
        ""
    }
    /// Run one repetition inside `env.cg`, calling `meter.start()`/`stop()` around the measured
    /// part. Every process or file it creates is registered with `env.cleanup`.
    fn run(&mut self, env: &Env, meter: &mut Meter) -> Result<Outcome>;
}

/// The host implementation of the scenario's workload (reads its own `host.*` keys).
pub fn for_scenario(scn: &Scenario, cfg: &HostConfig) -> Result<Box<dyn HostWorkload>> {
    Ok(match &scn.workload {
        Workload::StressVm(w) => Box::new(crate::stress::StressVm::new(w, scn, cfg)),
        Workload::FileReclaim(w) => {
            Box::new(crate::workers::file_reclaim::FileReclaim::new(w, scn)?)
        }
        Workload::FileMmapRw(w) => Box::new(crate::workers::file_mmap_rw::FileMmapRw::new(w)),
        Workload::AnonSweep(w) => Box::new(crate::workers::anon_sweep::AnonSweep::new(w)),
        Workload::YcsbB(_) | Workload::KswapdMmapRead(_) | Workload::LimitReclaim(_) => {
            reject_sim_only(scn)?;
            unreachable!("reject_sim_only rejects the sim-only workloads")
        }
    })
}

/// Workloads the host backend cannot run (checked before anything touches the machine).
pub fn reject_sim_only(scn: &Scenario) -> Result<()> {
    if let Workload::YcsbB(_) = &scn.workload {
        anyhow::bail!(
            "workload.kind = ycsb-b has no host backend: it needs a YCSB client and a file-backed \
             store (e.g. MongoDB) on the machine; use `reclaimlab sim` for it"
        );
    }
    if let Workload::KswapdMmapRead(_) = &scn.workload {
        anyhow::bail!(
            "workload.kind = kswapd-mmap-read is sim only: it needs machine-wide memory pressure \
             (global reclaim by kswapd), which bench cannot create inside a memcg without \
             starving the host; run it with `reclaimlab sim`"
        );
    }
    if let Workload::LimitReclaim(_) = &scn.workload {
        anyhow::bail!(
            "workload.kind = limit-reclaim is sim only: its host side is `reclaimlab calibrate \
             --only contention`, which runs the same set-up on this machine"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_core::Target;

    #[test]
    fn ycsb_b_is_rejected_with_a_clear_error() {
        let t = Target::Host {
            cpus: 2,
            memory_bytes: 24 << 30,
        };
        let scn = Scenario::load("ycsb-b", &[], t).unwrap();
        let cfg = HostConfig::read(&scn).unwrap();
        let e = for_scenario(&scn, &cfg)
            .err()
            .expect("no host backend")
            .to_string();
        assert!(e.contains("ycsb-b") && e.contains("reclaimlab sim"), "{e}");
    }
}
