//! The simulator backend (`reclaimlab sim`): a mechanistic, deterministic model of Linux page
//! reclaim and TLB shootdowns on x86 and arm64 (Linux 6.18 semantics). See docs/sim-model.md.
//!
//! Modules are named after the kernel code they mirror: `mm::vmscan`, `mm::rmap`,
//! `mm::memcontrol`, `mm::workingset`, `arch::x86::tlb`, ...

pub mod arch;
pub mod config;
pub mod cost;
pub mod cpumask;
pub mod cputime;
pub mod drivers;
pub mod engine;
pub mod footprint;
pub mod invariants;
pub mod kblockd;
pub mod kernel;
pub mod locking;
pub mod mm;
pub mod oracle;
pub mod prefetch;
pub mod replay;
pub mod result;
pub mod sched;
pub mod smp;
pub mod softirq;
pub mod timeline;
pub mod watchdog;
pub mod workload;
pub mod workqueue;

use config::{Policy, SimConfig};
use engine::Engine;
use kernel::Kernel;
use reclaimlab_core::{ResultDoc, Scenario};
pub use workload::Workload;

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
    let mut k = start_kernel(scn, &cfg, policy)?;
    setup(&mut k);
    let w = workload::of(&scn.workload);
    if cfg.start_placement.is_some() && !w.takes_start_placement() {
        return Err(scn
            .source
            .err("sim.start_placement", "applies to anon-sweep only")
            .into());
    }
    w.prepare(scn, &mut k);
    let model = w.access_model(&k)?;
    let mut e = Engine::new(k, model);
    e.progress = opts.progress;
    w.fork(scn, &cfg, &mut e)?;
    e.place_tasks();
    w.kthreads(&mut e.k);
    let mut r = w.run(&mut e, scn.run.duration_ns);
    let mut doc = result::build(scn, &e.k, r.secs, r.throughput, r.notes);
    doc.runs[0].extra.append(&mut r.extra);
    Ok((e.k, doc))
}

/// The simulated machine at boot: its CPUs, memcg, swap device, costs and TLB features.
fn start_kernel(scn: &Scenario, cfg: &SimConfig, policy: Policy) -> anyhow::Result<Kernel> {
    let mut k = Kernel::new(
        cfg.clone(),
        policy,
        scn.machine.cpus,
        scn.memcg.limit_bytes / PAGE,
        scn.swap_bytes / PAGE,
        scn.memcg.swappiness as u64,
        scn.run.seed,
    );
    k.set_arch(scn.machine.arch);
    k.cost = cost::CostTable::for_scenario(scn)?;
    k.swap.data = cfg
        .page_data
        .unwrap_or_else(|| drivers::zram::PageData::of(&scn.workload));
    if let (None, reclaimlab_core::scenario::Workload::StressVm(w)) = (cfg.page_data, &scn.workload)
    {
        // Each method's data, as measured (workload/stress_vm_data.rs).
        k.swap.data_by_phase = workload::stress_vm_data::zram_ns_by_phase(&w.method, &k.cost);
    }
    k.wb.global_dirtyable = scn.machine.memory_bytes / PAGE;
    k.arm64_tlbi_range = arch::arm64_tlbi_range(scn)?;
    if scn.machine.invlpgb && k.policy.settings.uses_invlpgb {
        k.invlpgb = Some(arch::x86::invlpgb::Invlpgb::new(scn.machine.cpus));
    }
    Ok(k)
}
