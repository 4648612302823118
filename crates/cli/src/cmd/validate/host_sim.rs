//! The step every validation makes: the scenario on the host (`bench`, or a stored host
//! result), then in the simulator modelling that machine (its CPU count and memory), given
//! what `--background-from-host` and `--placement-from-host` take from the host runs.

use crate::cmd::finish_scenario;
use crate::progress::{progress_bar, show_repetition};
use anyhow::Result;
use reclaimlab_core::background::BackgroundLoad;
use reclaimlab_core::foreign::BackgroundFromHost;
use reclaimlab_core::{ResultDoc, Scenario, Target};
use reclaimlab_host::SwapRequest;

/// `--background-from-host`: the simulator's `machine.background_load` (user tasks) and
/// `machine.background_kthreads` (kernel threads) from the host runs' median foreign record
/// (`reclaimlab_core::foreign`). With a `declared` load (the configuration's own
/// `machine.background_load`, which bench started beside the workload), the user tasks less
/// bench's load tasks go to `machine.background_other` instead, and the declared load stays
/// (`foreign::beside`). None when no foreign task ran; an error when the host document has no
/// record (written before bench kept one).
pub fn derived_background(
    host: &ResultDoc,
    declared: Option<&BackgroundLoad>,
) -> Result<Option<BackgroundFromHost>> {
    use reclaimlab_core::foreign;
    let derived = match declared {
        None => foreign::of_doc(host).map(|f| foreign::background_load(&f)),
        Some(l) => foreign::beside::of_doc(host, l).map(|f| foreign::beside::background_beside(&f)),
    };
    derived.ok_or_else(|| {
        anyhow::anyhow!(
            "--background-from-host: the host runs have no foreign-load record (runs[].foreign; \
             bench writes it since this option exists): run the host side again"
        )
    })
}

/// The configuration's own `machine.background_load` (None: it declares none), read on the
/// host's CPU count (its `cpus` are checked against it).
pub fn declared_load(
    scenario: &str,
    sets: &[String],
    host: &ResultDoc,
) -> Result<Option<BackgroundLoad>> {
    let mut sets = sets.to_vec();
    sets.push(format!("machine.cpus={}", host.machine.cpus.max(1)));
    let s = Scenario::load(scenario, &sets, Target::Sim)?;
    BackgroundLoad::from_scenario(&s)
}

/// What the simulation takes from the host runs besides the machine's size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FromHost {
    /// `--background-from-host`: machine.background_load from the runs' foreign record.
    pub background: bool,
    /// `--placement-from-host`: one simulation per host run, started where that run's
    /// threads started (sim.start_placement from its scheduler trace; anon-sweep only).
    pub placement: bool,
    /// `--sim-seeds N`: N simulations with run.seed 1..=N (0 or 1: one, the scenario's seed).
    pub seeds: u64,
}

/// One validation: the two documents and what the simulation was given from the host.
pub struct HostAndSim {
    pub host: ResultDoc,
    pub sim: ResultDoc,
    /// `--background-from-host`: the derived load (None: off, or no foreign task ran).
    pub background: Option<BackgroundFromHost>,
    /// `--placement-from-host`: each valid host run's start placement, in run order (the
    /// simulation's runs are in the same order).
    pub placements: Option<Vec<String>>,
}

/// `--placement-from-host`: each valid host run's `sim.start_placement`, in run order.
pub fn host_placements(host: &ResultDoc, scn: &Scenario) -> Result<Vec<String>> {
    let reclaimlab_core::Workload::AnonSweep(w) = &scn.workload else {
        anyhow::bail!(
            "--placement-from-host: applies to anon-sweep (where each process's main thread \
             clones its sweepers); this configuration runs {}",
            scn.name
        );
    };
    host.runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.valid)
        .map(|(i, r)| {
            reclaimlab_core::start_placement::of_run(r, w.processes, w.threads).ok_or_else(|| {
                anyhow::anyhow!(
                    "--placement-from-host: host run {} has no scheduler trace of its {} \
                     processes (placement.processes; bench records it since this option \
                     exists): run the host side again",
                    i + 1,
                    w.processes
                )
            })
        })
        .collect()
}

/// One simulation per value of `key` (each distinct value once: the simulator is
/// deterministic), gathered as one document whose runs follow `values` (its summary the
/// median over them); `none`: the error when there is no value.
fn sim_per(
    scenario: &str,
    sets: &[String],
    key: &str,
    values: &[String],
    none: &str,
) -> Result<ResultDoc> {
    let mut by: std::collections::BTreeMap<&str, ResultDoc> = Default::default();
    for v in values {
        if by.contains_key(v.as_str()) {
            continue;
        }
        let mut sets = sets.to_vec();
        sets.push(format!("{key}={v}"));
        let s = Scenario::load(scenario, &sets, Target::Sim)?;
        let d = finish_scenario(&s, reclaimlab_sim::run(&s, &Default::default()))?;
        by.insert(v, d);
    }
    let mut doc = by
        .values()
        .next()
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("{none}"))?;
    doc.runs = values
        .iter()
        .flat_map(|v| by[v.as_str()].runs.clone())
        .collect();
    doc.summarize();
    Ok(doc)
}

/// Run `scenario` with `sets` on the host (or read `host_result`), then simulate it as the
/// host machine (machine.cpus and machine.memory set from the host result; with
/// `background_from_host`, the foreign load from its record, after `sets`: see
/// [`derived_background`]).
pub fn host_and_sim(
    scenario: &str,
    sets: &[String],
    repeat: u64,
    swap: Option<SwapRequest>,
    host_result: Option<ResultDoc>,
    json: bool,
    from: FromHost,
) -> Result<HostAndSim> {
    let (cpus, memory_bytes) = reclaimlab_host::machine_limits();
    let host = match host_result {
        Some(d) => d,
        None => {
            let s = Scenario::load(scenario, sets, Target::Host { cpus, memory_bytes })?;
            let bar = progress_bar(json, "host repetition");
            let cb = |i: usize, n: usize, frac: f64| show_repetition(&bar, i, n, frac);
            let opts = reclaimlab_host::BenchOptions {
                repeat: repeat as usize,
                swap,
                trace: false,
                no_placement_trace: false,
                progress: Some(&cb),
                prior: Vec::new(),
                on_run: None,
            };
            let d = finish_scenario(&s, reclaimlab_host::bench(&s, &opts))?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            d
        }
    };
    let mut sets = sets.to_vec();
    let (background, declared) = if from.background {
        let declared = declared_load(scenario, &sets, &host)?;
        (derived_background(&host, declared.as_ref())?, declared)
    } else {
        (None, None)
    };
    if let Some(b) = &background {
        sets.extend(b.sets());
    } else if from.background && declared.is_none() {
        // No foreign user task ran: the model's quiet machine is what the host had (beside a
        // declared load, machine.background_other is already none).
        sets.push("machine.background_load.tasks=0".into());
    }
    sets.push(format!("machine.cpus={}", host.machine.cpus.max(1)));
    sets.push(format!(
        "machine.memory={}",
        host.machine.memory_bytes.max(64 << 20)
    ));
    // A host that swapped to a disk is simulated with the block device, unless the sets name one.
    if reclaimlab_core::scenario::host_swap_is_block(&host.machine.swap) {
        push_unless_set(&mut sets, "swap.device", "block");
        // On a rotational disk swap-in reads slot clusters and slots come from one cursor
        // (runs recorded before bench noted it: the model's default, non-rotational).
        if let Some(r) = host.machine.swap.rotational {
            push_unless_set(&mut sets, "swap.rotational", &r.to_string());
        }
        // The disk's I/O scheduler: mq-deadline holds swap writes for kblockd (page_io.rs).
        if let Some(e) = &host.machine.swap.scheduler {
            push_unless_set(&mut sets, "swap.scheduler", e);
        }
        // The disk's largest request: the plug merges adjacent writes up to it.
        if let Some(n) = host.machine.swap.request_pages {
            push_unless_set(&mut sets, "swap.request_pages", &n.to_string());
        }
        // A full virtio ring stops the queue: kblockd dispatches what waited.
        if let Some((descs, indirect)) = host.machine.swap.virtio_ring {
            push_unless_set(&mut sets, "swap.ring_descriptors", &descs.to_string());
            push_unless_set(&mut sets, "swap.indirect_desc", &indirect.to_string());
        }
    }
    // A guest kernel booted with sched_vcpu_pack places interrupt wake-ups on the idle waker.
    if host
        .machine
        .sched_cmdline
        .iter()
        .any(|o| o.split('=').next() == Some("sched_vcpu_pack"))
    {
        push_unless_set(&mut sets, "sched.vcpu_pack", "true");
    }
    // The host's memcg version (writeback_throttling_sane, the dirty domain), unless set.
    if matches!(host.machine.cgroup.as_str(), "v1" | "v2") {
        push_unless_set(&mut sets, "sim.cgroup", &host.machine.cgroup);
    }
    let s = Scenario::load(scenario, &sets, Target::Sim)?;
    if from.placement && from.seeds > 1 {
        anyhow::bail!(
            "--placement-from-host already gives one simulation per host run: drop --sim-seeds"
        );
    }
    let (sim, placements) = if from.seeds > 1 {
        if sets.iter().any(|s| s.starts_with("run.seed=")) {
            anyhow::bail!("--sim-seeds sets run.seed itself: drop --set run.seed");
        }
        let seeds: Vec<String> = (1..=from.seeds).map(|n| n.to_string()).collect();
        let none = "--sim-seeds: at least one";
        (sim_per(scenario, &sets, "run.seed", &seeds, none)?, None)
    } else if from.placement {
        let placements = host_placements(&host, &s)?;
        let none = "--placement-from-host: no valid host run";
        let key = "sim.start_placement";
        let sim = sim_per(scenario, &sets, key, &placements, none)?;
        (sim, Some(placements))
    } else {
        let sim = finish_scenario(&s, reclaimlab_sim::run(&s, &Default::default()))?;
        (sim, None)
    };
    Ok(HostAndSim {
        host,
        sim,
        background,
        placements,
    })
}

/// Append `key=value` unless the sets already give `key` a value (a suite's or the command
/// line's choice stands).
fn push_unless_set(sets: &mut Vec<String>, key: &str, value: &str) {
    let prefix = format!("{key}=");
    if !sets.iter().any(|s| s.starts_with(&prefix)) {
        sets.push(format!("{prefix}{value}"));
    }
}

#[cfg(test)]
mod tests {
    use super::push_unless_set;

    #[test]
    fn a_host_fact_is_added_only_where_the_sets_leave_it_open() {
        let mut sets = vec!["memcg.limit=64M".to_string()];
        push_unless_set(&mut sets, "sim.cgroup", "v1");
        assert_eq!(sets, ["memcg.limit=64M", "sim.cgroup=v1"]);
        // A suite's or the command line's own choice stands.
        let mut sets = vec!["sim.cgroup=v2".to_string()];
        push_unless_set(&mut sets, "sim.cgroup", "v1");
        assert_eq!(sets, ["sim.cgroup=v2"]);
        // A key that merely starts the same is another key.
        let mut sets = vec!["sim.cgroupx=1".to_string()];
        push_unless_set(&mut sets, "sim.cgroup", "v1");
        assert_eq!(sets.len(), 2);
    }
}
