//! The simulator backend (`reclaimlab sim`): a mechanistic, deterministic model of Linux page
//! reclaim and TLB shootdowns on x86 and arm64 (Linux 6.18 semantics). See docs/sim-model.md.
//!
//! Modules are named after the kernel code they mirror: `mm::vmscan`, `mm::rmap`,
//! `mm::memcontrol`, `mm::workingset`, `arch::x86::tlb`, ...

pub mod arch;
pub mod config;
pub mod cost;
pub mod cpumask;
pub mod drivers;
pub mod engine;
pub mod footprint;
pub mod invariants;
pub mod kernel;
pub mod locking;
pub mod mm;
pub mod oracle;
pub mod replay;
pub mod result;
pub mod sched;
pub mod smp;
pub mod timeline;
pub mod watchdog;
pub mod workload;

use config::{Policy, SimConfig};
use engine::Engine;
use kernel::{Backing, File, Kernel};
use reclaimlab_core::result::Throughput;
use reclaimlab_core::scenario::{CpuSet, Pattern};
use reclaimlab_core::{ResultDoc, Scenario, Workload};

const PAGE: u64 = 4096;

/// Options that are not part of the scenario (they never change the result).
#[derive(Default)]
pub struct SimOptions<'a> {
    /// Called now and then with (simulated ns done, simulated ns total).
    pub progress: Option<&'a dyn Fn(u64, u64)>,
}

/// Run a scenario in the model and return the shared result document (`backend = "sim"`).
pub fn run(scn: &Scenario, opts: &SimOptions) -> anyhow::Result<ResultDoc> {
    scn.skip_section("host");
    let cfg = SimConfig::from_scenario(scn)?;
    let policy = Policy::from_scenario(scn)?;
    arch::arm64_tlbi_range(scn)?;
    cost::CostTable::for_scenario(scn)?;
    // Before anything is allocated: a model too large for the host is an error, not an abort.
    footprint::check(scn, &cfg)?;
    // Every key is read by now: reject unknown ones before a long simulation, not after.
    scn.finish()?;
    let (k, doc) = simulate(scn, cfg.clone(), policy.clone(), opts)?;
    if let Some(stall) = &k.stalled {
        anyhow::bail!("{stall}");
    }
    if let Some(first) = k.oracle.findings.first().cloned() {
        // Run again (deterministic) watching the first finding's page for the trace.
        let (owner, page) = first.page();
        let nr = match first {
            oracle::Finding::LostWrite { pages, .. } => pages,
            _ => 1,
        };
        let trace = trace_page(scn, cfg, policy, (owner, page, nr))?;
        anyhow::bail!("{}", oracle::report(&k.oracle, &first, &trace));
    }
    let errs = {
        let mut k = k;
        k.check_invariants()
    };
    if !errs.is_empty() {
        anyhow::bail!(
            "simulator invariant violated ({} problems):\n  {}",
            errs.len(),
            errs.join("\n  ")
        );
    }
    Ok(doc)
}

/// Re-run the scenario with the oracle watching one page; returns that page's events.
pub fn trace_page(
    scn: &Scenario,
    cfg: SimConfig,
    policy: Policy,
    watch: (oracle::Owner, u64, u64),
) -> anyhow::Result<Vec<String>> {
    let watch = std::cell::Cell::new(Some(watch));
    let (k, _) = simulate_with(
        scn,
        cfg,
        policy,
        &SimOptions::default(),
        &|k: &mut Kernel| {
            k.oracle.watch = watch.take();
        },
    )?;
    Ok(k.oracle.trace)
}

fn pinned(cpus: &CpuSet, i: usize) -> Option<usize> {
    cpus.for_worker(i)
}

/// Run the model; returns the final kernel state (for invariant checks and tests) and the doc.
pub fn simulate(
    scn: &Scenario,
    cfg: SimConfig,
    policy: Policy,
    opts: &SimOptions,
) -> anyhow::Result<(Kernel, ResultDoc)> {
    simulate_with(scn, cfg, policy, opts, &|_| {})
}

/// [`simulate`], with a hook that sees the kernel before the workload starts.
fn simulate_with(
    scn: &Scenario,
    cfg: SimConfig,
    policy: Policy,
    opts: &SimOptions,
    setup: &dyn Fn(&mut Kernel),
) -> anyhow::Result<(Kernel, ResultDoc)> {
    let limit_pages = scn.memcg.limit_bytes / PAGE;
    let mut k = Kernel::new(
        cfg.clone(),
        policy,
        scn.machine.cpus,
        limit_pages,
        scn.swap_bytes / PAGE,
        scn.memcg.swappiness as u64,
        scn.run.seed,
    );
    k.set_arch(scn.machine.arch);
    k.cost = cost::CostTable::for_scenario(scn)?;
    k.swap.data = cfg
        .page_data
        .unwrap_or_else(|| drivers::zram::PageData::of(&scn.workload));
    k.wb.global_dirtyable = scn.machine.memory_bytes / PAGE;
    k.arm64_tlbi_range = arch::arm64_tlbi_range(scn)?;
    if scn.machine.invlpgb && k.policy.settings.uses_invlpgb {
        k.invlpgb = Some(arch::x86::invlpgb::Invlpgb::new(scn.machine.cpus));
    }
    setup(&mut k);
    let duration = scn.run.duration_ns;
    let secs = duration as f64 / 1e9;
    let mut notes = Vec::new();
    if cfg.start_placement.is_some() && !matches!(scn.workload, Workload::AnonSweep(_)) {
        return Err(scn
            .source
            .err("sim.start_placement", "applies to anon-sweep only")
            .into());
    }
    match &scn.workload {
        Workload::AnonSweep(w) => {
            let pages = w.bytes_per_process / PAGE;
            let mut e = Engine::new(k, workload::anon_sweep::access_model(w));
            e.progress = opts.progress;
            // Processes forked together: every main thread is running while the sweepers
            // are cloned.
            let mains: Vec<_> = (0..w.processes)
                .map(|p| {
                    let mm = e.k.mm_alloc(pages, Backing::Anon, true);
                    workload::anon_sweep::main_thread(&mut e.k, w, p, mm)
                })
                .collect();
            match &cfg.start_placement {
                None => {
                    for (p, &(main, _)) in mains.iter().enumerate() {
                        workload::anon_sweep::clone_threads(&mut e.k, w, p, main, pages);
                    }
                    // The main threads ran first (mmap, clone) and now wait in join.
                    for (main, cpu) in mains {
                        e.k.run_helper(main, &[cpu]);
                    }
                }
                Some(start) => {
                    workload::anon_sweep::check_start(w, start, e.k.nr_cpus())
                        .map_err(|m| scn.source.err("sim.start_placement", m))?;
                    for (p, &(main, _)) in mains.iter().enumerate() {
                        workload::anon_sweep::clone_threads_onto(
                            &mut e.k,
                            w,
                            p,
                            main,
                            pages,
                            &start[p].sweepers,
                        );
                        let cpus = workload::anon_sweep::start_mm_cpus(w, p, &start[p]);
                        e.k.run_helper(main, &cpus);
                    }
                }
            }
            e.place_tasks();
            e.run_until(duration, duration);
            let touched: u64 = e.k.tasks.iter().map(|t| t.pages_touched).sum();
            Ok(finish(
                scn,
                e.k,
                secs,
                touched as f64 / secs,
                "pages_per_sec",
                notes,
            ))
        }
        Workload::StressVm(w) => {
            let pages = w.bytes_per_worker() / PAGE;
            let model = workload::stress_vm::access_model(&cfg, &k.cost, &w.method)?;
            let mut e = Engine::new(k, model);
            e.progress = opts.progress;
            let workers: Vec<_> = (0..w.workers)
                .map(|i| {
                    let mm = e.k.mm_alloc(pages, Backing::Anon, true);
                    e.k.task_new(mm, pinned(&w.cpus, i), 0, pages)
                })
                .collect();
            if cfg.stress_ng_fork {
                workload::stress_ng::fork_tree(&mut e.k, &workers, cfg.stress_ng_launch_cpu);
            }
            e.place_tasks();
            e.run_until(duration, duration);
            let mut extra = std::collections::BTreeMap::new();
            let units: u64 = e.k.tasks.iter().map(|t| t.bogo_units).sum();
            let ops = (units >> workload::stress_vm::VM_BOGO_SHIFT) as f64;
            let names = workload::stress_vm::names_by_phase(&w.method);
            let at: Vec<String> =
                e.k.tasks
                    .iter()
                    .filter(|t| t.is_worker())
                    .map(|t| format!("{}+{}", t.passes, names[t.phase]))
                    .collect();
            notes.push(format!(
                "stress-vm method each worker ends in (full cycles done + method): {}",
                at.join(" ")
            ));
            workload::stress_vm::report_rates(&e.k, &w.method, secs, &mut extra);
            notes.push(
                "bogo ops: stress-ng 0.15.06's vm method table (35 methods for \"all\", one per loop iteration), units per pass from stress-vm.c (see docs/sim-model.md)"
                    .to_string(),
            );
            let (k, mut doc) = finish(scn, e.k, secs, ops / secs, "bogo_ops_per_sec", notes);
            doc.runs[0].extra.append(&mut extra);
            Ok((k, doc))
        }
        Workload::FileMmapRw(w) => {
            let pages = w.file_bytes / PAGE;
            let model =
                workload::file_mmap::mmap_rw_model(w.write, matches!(w.pattern, Pattern::Random));
            let mut e = Engine::new(k, model);
            e.progress = opts.progress;
            e.k.files.push(File {
                cache: vec![0; pages as usize],
            });
            e.k.file_readahead_setup(&cfg);
            // bench's data file: fallocated, never written before the run.
            e.k.file_fallocated(0);
            let mm = e.k.mm_alloc(pages, Backing::File(0), w.write);
            for i in 0..w.threads {
                // As bench's worker: thread i starts at i/threads of the file and sweeps the
                // whole file, wrapping at its end (random: the whole file).
                let (s, _) = slice(pages, w.threads, i);
                let id = e.k.task_new(mm, pinned(&w.cpus, i), 0, pages);
                if !matches!(w.pattern, Pattern::Random) {
                    e.k.tasks[id].cursor = s;
                }
            }
            e.place_tasks();
            // The flusher runs as a kernel thread (created after the workers are placed: it
            // sleeps until reclaim first wakes it).
            e.k.flusher_run();
            e.run_until(duration, duration);
            let touched: u64 = e.k.tasks.iter().map(|t| t.pages_touched).sum();
            Ok(finish(
                scn,
                e.k,
                secs,
                touched as f64 / secs,
                "pages_per_sec",
                notes,
            ))
        }
        Workload::YcsbB(w) => {
            let model = workload::ycsb::access_model(w);
            let pages = model.ycsb.as_ref().map_or(0, |y| y.pages());
            let mut e = Engine::new(k, model);
            e.progress = opts.progress;
            e.k.files.push(File {
                cache: vec![0; pages as usize],
            });
            let mm = e.k.mm_alloc(pages, Backing::File(0), true);
            for i in 0..w.threads {
                e.k.task_new(mm, pinned(&w.cpus, i), 0, pages);
            }
            e.place_tasks();
            e.run_until(duration, duration);
            let ops: u64 = e.k.tasks.iter().map(|t| t.pages_touched).sum();
            notes.push(format!(
                "ycsb-b: {ops} operations, {} us of CPU per operation besides its page access (estimate)",
                workload::ycsb::OP_CPU_NS / 1000
            ));
            Ok(finish(
                scn,
                e.k,
                secs,
                ops as f64 / secs,
                "ops_per_sec",
                notes,
            ))
        }
        Workload::FileReclaim(w) => {
            let pages = w.file_bytes / PAGE;
            let mut e = Engine::new(k, workload::file_mmap::populate_model());
            e.progress = opts.progress;
            e.k.files.push(File {
                cache: vec![0; pages as usize],
            });
            e.k.file_readahead_setup(&cfg);
            e.k.file_fallocated(0);
            let mm = e.k.mm_alloc(pages, Backing::File(0), false);
            for i in 0..w.threads {
                let (s, t) = slice(pages, w.threads, i);
                if s < t {
                    e.k.task_new(mm, pinned(&w.cpus, i), s, t);
                }
            }
            e.place_tasks();
            e.run_until(u64::MAX, duration);
            // memory.reclaim, written by a shell on CPU 0 once the population is done.
            let start = e.k.cpus.iter().map(|c| c.clock).max().unwrap_or(0);
            if w.hold == reclaimlab_core::scenario::Hold::Spin {
                // The holders busy-wait on their CPUs without touching the mapping: the mm is
                // loaded there and not lazy, so reclaim's flushes reach them (should_flush_tlb).
                // Their loop is not stepped: it takes only the IPIs' time.
                let cpus: Vec<_> = e.k.tasks.iter().filter_map(|t| t.pinned).collect();
                for c in cpus.into_iter().filter(|&c| c != 0) {
                    e.k.cpus[c].clock = start;
                    e.k.switch_mm(c, Some(mm));
                }
            }
            let writer = e.k.mm_alloc(1, Backing::Anon, true);
            let wt = e.k.task_new(writer, Some(0), 0, 1);
            e.k.tasks[wt].done = true;
            e.k.cpus[0].clock = start;
            e.k.context_switch(0, Some(wt));
            let t0 = e.k.cpus[0].clock;
            let reclaimed = e.k.memory_reclaim(0, w.reclaim_bytes / PAGE);
            let reclaim_s = (e.k.cpus[0].clock - t0) as f64 / 1e9;
            notes.push(format!(
                "memory.reclaim reclaimed {} of {} pages",
                reclaimed,
                w.reclaim_bytes / PAGE
            ));
            let secs = e.k.cpus[0].clock as f64 / 1e9;
            Ok(finish(scn, e.k, secs, reclaim_s, "reclaim_seconds", notes))
        }
        Workload::KswapdMmapRead(w) => Ok(workload::kswapd_mmap_read::simulate(scn, w, k, opts)),
    }
}

/// The result document for a finished run, handing back the kernel for checks.
fn finish(
    scn: &Scenario,
    k: Kernel,
    secs: f64,
    value: f64,
    unit: &str,
    notes: Vec<String>,
) -> (Kernel, ResultDoc) {
    let thr = Throughput {
        value,
        unit: unit.into(),
    };
    let doc = result::build(scn, &k, secs, thr, notes);
    (k, doc)
}

/// Thread i's share [s, t) of `pages`.
fn slice(pages: u64, n: usize, i: usize) -> (u64, u64) {
    let n = n as u64;
    let i = i as u64;
    (pages * i / n, pages * (i + 1) / n)
}
