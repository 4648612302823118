//! `bench`: the repetitions of one scenario on the live kernel, each in a fresh memcg, with
//! every change undone on every exit path (see [`crate::cleanup`]).

use crate::cgroup::{self, Memcg, MemcgRoot};
use crate::cleanup::Cleanup;
use crate::sched_trace::SchedTrace;
use crate::trace::Tracer;
use crate::workload::{for_scenario, Env, HostConfig, HostWorkload, Meter};
use crate::{swap, BenchOptions, SwapRequest};
use anyhow::{bail, Result};
use reclaimlab_core::{MachineInfo, ResultDoc, RunResult, Scenario, SwapInfo, SCHEMA};
use std::time::Duration;

/// Root and a memory controller, or an error saying what is missing.
pub fn preflight() -> Result<MemcgRoot> {
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "bench runs the scenario on the live kernel and needs root (it creates a memcg, may \
             set up swap and tracing): run it as root, e.g. sudo reclaimlab bench ..."
        );
    }
    cgroup::detect()
}

pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The scheduler options on the kernel's command line (`sched_*` words of /proc/cmdline,
/// before a `--` that ends the kernel's own options).
pub fn sched_cmdline() -> Vec<String> {
    let line = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    sched_options(&line)
}

fn sched_options(line: &str) -> Vec<String> {
    line.split_whitespace()
        .take_while(|w| *w != "--")
        .filter(|w| w.starts_with("sched_"))
        .map(str::to_string)
        .collect()
}

pub fn bench(scn: &Scenario, opts: &BenchOptions) -> Result<ResultDoc> {
    let (cfg, root, mut wl) = prepare(scn)?;
    sweep_leftovers(&root, wl.as_ref(), opts);
    let cleanup = Cleanup::new();
    let set_up = set_up(&cleanup, &root, scn, opts)?;
    let ctx = RunCtx {
        scn,
        root: &root,
        cleanup: &cleanup,
        tracer: set_up.tracer.as_ref(),
        sched: set_up.sched.as_ref(),
        cfg: &cfg,
    };
    let runs = ctx.repetitions(wl.as_mut(), opts)?;
    let errors = cleanup.run_all();
    if !errors.is_empty() {
        bail!(
            "the run finished but clean-up failed:\n{}",
            errors.join("\n")
        );
    }
    Ok(result_doc(scn, &root, set_up.swap, wl.as_ref(), runs))
}

/// Read the scenario's host keys, check for root and a memory controller, and build the
/// workload: every key is read, and a bad one rejected, before anything changes.
fn prepare(scn: &Scenario) -> Result<(HostConfig, MemcgRoot, Box<dyn HostWorkload>)> {
    crate::workload::reject_sim_only(scn)?;
    scn.skip_section("sim");
    // The swap device is the one the machine has or `--swap` sets up.
    scn.skip_keys(&reclaimlab_core::scenario::SIM_SWAP_KEYS);
    // The live machine has its own topology; `machine.background_load` is started for each
    // run (background.rs) on top of whatever else the machine runs.
    scn.skip_section("machine.topology");
    // Kernel threads and the other user tasks are the machine's own (the simulator's
    // stand-ins for them).
    scn.skip_section(reclaimlab_core::background::KTHREADS_KEY);
    scn.skip_section(reclaimlab_core::background::TIMER_KTHREADS_KEY);
    scn.skip_section(reclaimlab_core::background::OTHER_KEY);
    // ... and its own sched_autogroup_enabled.
    scn.skip_section("sched");
    let cfg = HostConfig::read(scn)?;
    let root = preflight()?;
    let mut wl = for_scenario(scn, &cfg)?;
    // Every key has been read now: fail on an unknown one before changing anything.
    scn.finish()?;
    wl.check()?;
    Ok((cfg, root, wl))
}

/// Undo what killed benches left behind (devices, memcgs, data and swap files, tracing).
fn sweep_leftovers(root: &MemcgRoot, wl: &dyn HostWorkload, opts: &BenchOptions) {
    let mut data_dirs: Vec<&std::path::Path> = wl.data_dir().into_iter().collect();
    // Swap files of killed benches (not swap any more) are swept where they were made.
    if let Some(SwapRequest::File { dir, .. }) = &opts.swap {
        data_dirs.push(dir);
    }
    for m in crate::leftovers::sweep_devices(std::path::Path::new(crate::state::DIR)) {
        eprintln!("reclaimlab: {m}");
    }
    for m in crate::leftovers::sweep(
        root,
        &data_dirs,
        crate::trace::mounted(),
        Duration::from_secs(5),
    ) {
        eprintln!("reclaimlab: {m}");
    }
}

/// What the machine-wide set-up gives the repetitions.
struct SetUp {
    swap: SwapInfo,
    tracer: Option<Tracer>,
    /// The scheduler trace, or why there is none.
    sched: Result<SchedTrace, String>,
}

/// The machine-wide changes every repetition shares, each registered with `cleanup` for undo.
fn set_up(
    cleanup: &Cleanup,
    root: &MemcgRoot,
    scn: &Scenario,
    opts: &BenchOptions,
) -> Result<SetUp> {
    // The set-up journal (crate::state): opened before the first change, removed by the last
    // undo action, so a SIGKILL anywhere in between leaves the next bench a record.
    cleanup.apply(
        "set-up journal",
        || crate::state::open_in(std::path::Path::new(crate::state::DIR)).map(|_| ()),
        crate::state::close,
    )?;
    let swap = swap::info(set_up_swap(cleanup, scn, opts)?);
    if root.needs_subtree_memory() {
        let r2 = root.clone();
        cleanup.apply(
            format!("+memory in {}/cgroup.subtree_control", root.dir.display()),
            || root.set_subtree_memory(true),
            move || r2.set_subtree_memory(false),
        )?;
    }
    let tracer = if opts.trace {
        Some(Tracer::setup(cleanup)?)
    } else {
        None
    };
    // On unless asked not to; a machine without it still runs, with a note.
    let sched = if opts.no_placement_trace {
        Err("no scheduler trace (--no-placement-trace): placement.processes has no CPUs".into())
    } else {
        SchedTrace::setup(cleanup)
            .map_err(|e| format!("no scheduler trace ({e:#}): placement.processes has no CPUs"))
    };
    Ok(SetUp {
        swap,
        tracer,
        sched,
    })
}

/// Swap as `--swap` asks (zram or a file), else the machine's own; an anon workload without
/// any is an error. Returns the kind, for `machine.swap`.
fn set_up_swap(cleanup: &Cleanup, scn: &Scenario, opts: &BenchOptions) -> Result<&'static str> {
    Ok(match &opts.swap {
        Some(SwapRequest::Zram { bytes }) => {
            swap::setup_zram(cleanup, *bytes)?;
            "zram"
        }
        Some(SwapRequest::File { bytes, dir }) => {
            swap::setup_file(cleanup, *bytes, dir)?;
            "file"
        }
        None if !swap::active().is_empty() => "existing",
        None if scn.workload.is_anon() => return Err(swap::no_swap_error(&scn.name)),
        None => "none",
    })
}

/// The result document of the runs.
fn result_doc(
    scn: &Scenario,
    root: &MemcgRoot,
    swap: SwapInfo,
    wl: &dyn HostWorkload,
    runs: Vec<RunResult>,
) -> ResultDoc {
    let (cpus, memory_bytes) = crate::machine_limits();
    let mut doc = ResultDoc {
        schema: SCHEMA.into(),
        scenario: scn.name.clone(),
        backend: "host".into(),
        kernel: kernel_release(),
        policy: String::new(),
        machine: MachineInfo {
            cpus,
            memory_bytes,
            arch: std::env::consts::ARCH.into(),
            cgroup: root.version.as_str().into(),
            swap,
            sched_cmdline: sched_cmdline(),
        },
        config: scn.to_json(),
        workload_command: wl.command(),
        workload_version: wl.version(),
        runs,
        ..Default::default()
    };
    doc.summarize();
    doc
}

/// What every repetition shares.
struct RunCtx<'a> {
    scn: &'a Scenario,
    root: &'a MemcgRoot,
    cleanup: &'a Cleanup,
    tracer: Option<&'a Tracer>,
    /// The scheduler trace, or why there is none.
    sched: Result<&'a SchedTrace, &'a String>,
    cfg: &'a HostConfig,
}

impl RunCtx<'_> {
    /// The repetitions still to run after `opts.prior` (a resumed bench), each reported to
    /// `opts.on_run` as it ends.
    fn repetitions(
        &self,
        wl: &mut dyn HostWorkload,
        opts: &BenchOptions,
    ) -> Result<Vec<RunResult>> {
        let repeat = opts.repeat.max(1);
        let mut runs = opts.prior.clone();
        runs.truncate(repeat);
        for i in runs.len()..repeat {
            let progress = |f: f64| {
                if let Some(p) = opts.progress {
                    p(i, repeat, f.clamp(0.0, 1.0))
                }
            };
            let r = self.run_once(wl, i, &progress)?;
            if let Some(f) = opts.on_run {
                f(i, &r)?;
            }
            runs.push(r);
            progress(1.0);
        }
        Ok(runs)
    }

    /// One repetition in a fresh memcg, removed before it returns.
    fn run_once(
        &self,
        wl: &mut dyn HostWorkload,
        index: usize,
        progress: &dyn Fn(f64),
    ) -> Result<RunResult> {
        let RunCtx {
            scn,
            root,
            cleanup,
            tracer,
            sched,
            cfg,
        } = *self;
        let name = root.unique_name();
        let cg = Memcg {
            version: root.version,
            dir: root.dir.join(&name),
        };
        let cg2 = cg.clone();
        let (_, undo) = cleanup.apply(
            format!("memcg {}", cg.dir.display()),
            || root.create(&name),
            move || cg2.remove(),
        )?;
        cg.set_limit(scn.memcg.limit_bytes)?;
        let mut notes = Vec::new();
        if !cg.set_swappiness(scn.memcg.swappiness)? {
            notes
                .push("cgroup v2 has no per-memcg swappiness: memcg.swappiness not applied".into());
        }
        let env = Env {
            cg: &cg,
            cleanup,
            duration: Duration::from_nanos(scn.run.duration_ns),
            grace: cfg.grace,
            seed: scn.run.seed,
            index,
            progress,
        };
        // Counters are system-wide: the load before the run says how busy the rest was.
        let load: Option<f64> = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next()?.parse().ok());
        if let Err(why) = sched {
            notes.push(why.clone());
        }
        let load_tasks = match &cfg.background {
            Some(b) => Some(crate::background::start(b, cleanup)?),
            None => None,
        };
        let mut meter = Meter::new(&cg, tracer, sched.ok());
        let out = wl.run(&env, &mut meter)?;
        if let Some(l) = load_tasks {
            l.stop()?;
        }
        notes.append(&mut meter.notes);
        let placement = meter.placement_report.take();
        let foreign = meter.foreign.take();
        let (d, wall, hist) = meter.finish()?;
        let oom_kills = cg.oom_kills()?;
        undo.run()?;

        let mut counters = d.counters;
        counters.insert("oom_kills".into(), oom_kills);
        notes.extend(out.notes);
        if oom_kills > 0 {
            notes.push(format!(
                "{oom_kills} OOM kill(s) in the memcg during this run{}",
                wl.oom_note()
            ));
        }
        let valid = out.completed && !(oom_kills > 0 && wl.oom_invalidates());
        if out.completed && !valid {
            notes.push(
                "OOM kills in a workload that should have none: this run is marked invalid".into(),
            );
        }
        if !out.completed {
            notes.push("the workload did not run to its end: this run is marked invalid".into());
        }
        let mut extra = out.extra;
        if let Some(l) = load {
            extra.insert("loadavg_1m_before".into(), l.into());
        }
        if let Some(h) = hist {
            extra.insert("tlb_flush_trace".into(), serde_json::to_value(h)?);
        }
        if let Some(mut p) = placement {
            // Per-CPU TLB shootdowns received, beside each CPU's busy time.
            if let (Some(cpus), Some(tlb)) =
                (p["cpus"].as_array_mut(), d.per_cpu.get("tlb_shootdowns"))
            {
                for (c, n) in cpus.iter_mut().zip(tlb) {
                    c["tlb_shootdowns"] = (*n).into();
                }
            }
            extra.insert("placement".into(), p);
        }
        Ok(RunResult {
            counters,
            per_cpu: d.per_cpu,
            memcg_stat: d.memcg_stat,
            wall_seconds: wall,
            throughput: out.throughput,
            oom_kills,
            valid,
            notes,
            extra,
            foreign,
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sched_options_are_the_kernels_own_sched_words() {
        let line = "console=ttyS0 sched_vcpu_pack=15 quiet -- --sched_fake init";
        assert_eq!(super::sched_options(line), vec!["sched_vcpu_pack=15"]);
        assert!(super::sched_options("quiet\n").is_empty());
    }
}
