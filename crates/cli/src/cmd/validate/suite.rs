//! `validate --suite FILE`: every configuration of a suite, each run on the host (`bench`)
//! and then in the simulator modelling this machine (its CPU count and memory), compared per
//! stolen page (`reclaimlab_core::validate`); and that host-then-sim step, which a single
//! `validate SCENARIO` runs too.

use crate::cmd::finish_scenario;
use crate::output::{self, SuiteReport};
use crate::progress::{progress_bar, show_repetition};
use anyhow::Result;
use reclaimlab_core::foreign::BackgroundFromHost;
use reclaimlab_core::suite::{Suite, SuiteConfig};
use reclaimlab_core::validate::{ratio_table, RatioRow};
use reclaimlab_core::{ResultDoc, Scenario, Target};
use reclaimlab_host::SwapRequest;
use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// `--background-from-host`: the simulator's `machine.background_load` from the host runs'
/// median foreign record (`reclaimlab_core::foreign`). None when no foreign user task ran; an
/// error when the host document has no record (written before bench kept one).
pub fn derived_background(host: &ResultDoc) -> Result<Option<BackgroundFromHost>> {
    match reclaimlab_core::foreign::of_doc(host) {
        Some(f) => Ok(reclaimlab_core::foreign::background_load(&f)),
        None => anyhow::bail!(
            "--background-from-host: the host runs have no foreign-load record (runs[].foreign; \
             bench writes it since this option exists): run the host side again"
        ),
    }
}

/// What the simulation takes from the host runs besides the machine's size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FromHost {
    /// `--background-from-host`: machine.background_load from the runs' foreign record.
    pub background: bool,
    /// `--placement-from-host`: one simulation per host run, started where that run's
    /// threads started (sim.start_placement from its scheduler trace; anon-sweep only).
    pub placement: bool,
}

/// One validation: the two documents and what the simulation was given from the host.
pub struct HostAndSim {
    pub host: ResultDoc,
    pub sim: ResultDoc,
    /// `--background-from-host`: the derived load (None: off, or no foreign user task ran).
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

/// One simulation per start placement (each distinct one once: the simulator is
/// deterministic), gathered as one document whose runs follow `placements`.
fn sim_per_placement(scenario: &str, sets: &[String], placements: &[String]) -> Result<ResultDoc> {
    let mut by: std::collections::BTreeMap<&str, ResultDoc> = Default::default();
    for p in placements {
        if by.contains_key(p.as_str()) {
            continue;
        }
        let mut sets = sets.to_vec();
        sets.push(format!("sim.start_placement={p}"));
        let s = Scenario::load(scenario, &sets, Target::Sim)?;
        let d = finish_scenario(&s, reclaimlab_sim::run(&s, &Default::default()))?;
        by.insert(p, d);
    }
    let mut doc = by
        .values()
        .next()
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("--placement-from-host: no valid host run"))?;
    doc.runs = placements
        .iter()
        .flat_map(|p| by[p.as_str()].runs.clone())
        .collect();
    doc.summarize();
    Ok(doc)
}

/// Run `scenario` with `sets` on the host (or read `host_result`), then simulate it as the
/// host machine (machine.cpus and machine.memory set from the host result; with
/// `background_from_host`, machine.background_load from its foreign record, after `sets`).
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
    let background = if from.background {
        derived_background(&host)?
    } else {
        None
    };
    if let Some(b) = &background {
        sets.extend(b.sets());
    } else if from.background {
        // No foreign user task ran: the model's quiet machine is what the host had.
        sets.push("machine.background_load.tasks=0".into());
    }
    sets.push(format!("machine.cpus={}", host.machine.cpus.max(1)));
    sets.push(format!(
        "machine.memory={}",
        host.machine.memory_bytes.max(64 << 20)
    ));
    // A host that swapped to a disk is simulated with the block device, unless the sets name one.
    if reclaimlab_core::scenario::host_swap_is_block(&host.machine.swap)
        && !sets.iter().any(|s| s.starts_with("swap.device="))
    {
        sets.push("swap.device=block".into());
    }
    let s = Scenario::load(scenario, &sets, Target::Sim)?;
    if from.placement {
        let placements = host_placements(&host, &s)?;
        drop(s);
        let sim = sim_per_placement(scenario, &sets, &placements)?;
        return Ok(HostAndSim {
            host,
            sim,
            background,
            placements: Some(placements),
        });
    }
    let sim = finish_scenario(&s, reclaimlab_sim::run(&s, &Default::default()))?;
    Ok(HostAndSim {
        host,
        sim,
        background,
        placements: None,
    })
}

/// One configuration's outcome.
#[derive(Serialize)]
pub struct ConfigResult {
    pub name: String,
    pub scenario: String,
    pub sets: Vec<String>,
    /// Empty when the configuration failed (see `error`).
    pub rows: Vec<RatioRow>,
    /// OOM kills per host run (any makes an anon-sweep run invalid).
    pub host_oom_kills: Vec<u64>,
    pub host_valid_runs: usize,
    pub host_runs: usize,
    pub sim_oom_kills: u64,
    /// Wall seconds the configuration took (host runs and simulation).
    pub seconds: f64,
    pub error: Option<String>,
    /// `--background-from-host`: the load the simulation was given (null: none ran, or off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_from_host: Option<BackgroundFromHost>,
    /// `--placement-from-host`: each valid host run's start placement (sim.start_placement).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement_from_host: Option<Vec<String>>,
    /// The two result documents (written with --out only).
    #[serde(skip)]
    pub docs: Option<(ResultDoc, ResultDoc)>,
}

fn run_config(
    c: &SuiteConfig,
    cli_sets: &[String],
    repeat: u64,
    swap: Option<SwapRequest>,
    host: Option<ResultDoc>,
    json: bool,
    from: FromHost,
) -> ConfigResult {
    let t0 = Instant::now();
    let mut sets = c.sets.clone();
    sets.extend(cli_sets.iter().cloned());
    let mut r = ConfigResult::new(c, sets.clone(), 0.0);
    match host_and_sim(&c.scenario, &sets, repeat, swap, host, json, from) {
        Ok(v) => {
            r.background_from_host = v.background;
            r.placement_from_host = v.placements;
            r.fill(v.host, v.sim)
        }
        Err(e) => r.error = Some(format!("{e:#}")),
    }
    r.seconds = t0.elapsed().as_secs_f64();
    r
}

impl ConfigResult {
    /// A configuration's outcome before anything is known of it.
    fn new(c: &SuiteConfig, sets: Vec<String>, seconds: f64) -> ConfigResult {
        ConfigResult {
            name: c.name.clone(),
            scenario: c.scenario.clone(),
            sets,
            rows: vec![],
            host_oom_kills: vec![],
            host_valid_runs: 0,
            host_runs: 0,
            sim_oom_kills: 0,
            seconds,
            error: None,
            background_from_host: None,
            placement_from_host: None,
            docs: None,
        }
    }

    /// Everything the table shows, from the configuration's two result documents.
    fn fill(&mut self, host: ResultDoc, sim: ResultDoc) {
        self.rows = ratio_table(&host, &sim);
        self.host_oom_kills = host.runs.iter().map(|x| x.oom_kills).collect();
        self.host_valid_runs = host.runs.iter().filter(|x| x.valid).count();
        self.host_runs = host.runs.len();
        self.sim_oom_kills = sim.runs.iter().map(|x| x.oom_kills).sum();
        self.docs = Some((host, sim));
    }
}

/// Configurations an interrupted `validate --suite --out FILE` finished, by name, when FILE
/// belongs to the same suite, repeat and --set: (sets, seconds, host, sim).
type Kept = std::collections::BTreeMap<String, (Vec<String>, f64, ResultDoc, ResultDoc)>;

fn kept(p: &Path, suite: &Suite, repeat: u64, cli_sets: &[String], from: FromHost) -> Result<Kept> {
    let v = read_suite_result(p, "--resume")?;
    if v["suite"] != serde_json::json!(suite.file)
        || v["repeat"] != serde_json::json!(repeat)
        || v["cli_sets"] != serde_json::json!(cli_sets)
        || v["background_from_host"].as_bool().unwrap_or(false) != from.background
        || v["placement_from_host"].as_bool().unwrap_or(false) != from.placement
    {
        anyhow::bail!(
            "--resume: {} belongs to a different run (suite, --repeat, --set, \
             --background-from-host or --placement-from-host differ)",
            p.display()
        );
    }
    Ok(stored_configs(&v))
}

fn read_suite_result(p: &Path, flag: &str) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(p)
        .map_err(|e| anyhow::anyhow!("{flag}: cannot read {}: {e}", p.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{flag}: {} is not a suite result: {e}", p.display()))?;
    if !v["configs"].is_array() {
        anyhow::bail!(
            "{flag}: {} is not a suite result (no \"configs\"; write one with validate --suite ... --out FILE)",
            p.display()
        );
    }
    Ok(v)
}

/// The configurations of a stored suite result that finished with both documents.
fn stored_configs(v: &serde_json::Value) -> Kept {
    let mut out = Kept::new();
    for c in v["configs"].as_array().into_iter().flatten() {
        let (Some(name), Some(h), Some(s)) = (c["name"].as_str(), c.get("host"), c.get("sim"))
        else {
            continue;
        };
        if !c["error"].is_null() {
            continue;
        }
        let sets: Vec<String> = serde_json::from_value(c["sets"].clone()).unwrap_or_default();
        let (Ok(h), Ok(s)) = (
            serde_json::from_value::<ResultDoc>(h.clone()),
            serde_json::from_value::<ResultDoc>(s.clone()),
        ) else {
            continue;
        };
        out.insert(
            name.to_string(),
            (sets, c["seconds"].as_f64().unwrap_or(0.0), h, s),
        );
    }
    out
}

/// The sets that reach the host: `sim.*` keys describe the machine to the simulator only (the
/// host ignores them), so a suite may add or change them after its host run was stored. A
/// key renamed since is read under its new name (`host.hold` is now `workload.hold`).
fn host_sets(sets: &[String]) -> Vec<String> {
    sets.iter()
        .filter(|s| !s.starts_with("sim."))
        .map(|s| match s.strip_prefix("host.hold=") {
            Some(v) => format!("workload.hold={v}"),
            None => s.clone(),
        })
        .collect()
}

/// `--host-result SUITE.json` with `--suite`: each configuration's stored host document, by
/// name. A configuration must be stored with the suite's own sets, `sim.*` keys aside (the
/// stored run's --set may differ: they are the simulator's business now), so a host run is
/// never matched to another configuration.
fn host_from(p: &Path, suite: &Suite) -> Result<std::collections::BTreeMap<String, ResultDoc>> {
    let v = read_suite_result(p, "--host-result")?;
    let stored = stored_configs(&v);
    let mut out = std::collections::BTreeMap::new();
    let mut missing = Vec::new();
    for c in &suite.configs {
        match stored.get(&c.name) {
            Some((sets, _, h, _)) if host_sets(sets).starts_with(&host_sets(&c.sets)) => {
                out.insert(c.name.clone(), h.clone());
            }
            Some(_) => anyhow::bail!(
                "--host-result: configuration {:?} in {} was run with other sets than the suite gives",
                c.name,
                p.display()
            ),
            None => missing.push(c.name.clone()),
        }
    }
    if !missing.is_empty() {
        anyhow::bail!(
            "--host-result: {} has no finished host run for {}",
            p.display(),
            missing
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(out)
}

/// The `--out` document: the summary plus each configuration's two result documents;
/// `complete` is false while configurations are still to run (or after an interrupt).
/// What identifies a suite run besides the suite (checked by --resume).
struct RunKey<'a> {
    repeat: u64,
    cli_sets: &'a [String],
    from: FromHost,
}

fn write_full(
    p: &Path,
    suite: &Suite,
    key: &RunKey,
    seconds: f64,
    results: &[ConfigResult],
    complete: bool,
) -> Result<()> {
    let mut full = serde_json::json!({
        "suite": suite.file,
        "description": suite.description,
        "repeat": key.repeat,
        "cli_sets": key.cli_sets,
        "background_from_host": key.from.background,
        "placement_from_host": key.from.placement,
        "seconds": seconds,
        "complete": complete,
        "configs_total": suite.configs.len(),
        "configs": results,
    });
    for (j, r) in full["configs"]
        .as_array_mut()
        .expect("configs")
        .iter_mut()
        .zip(results)
    {
        if let Some((h, s)) = &r.docs {
            j["host"] = serde_json::to_value(h)?;
            j["sim"] = serde_json::to_value(s)?;
        }
    }
    output::file::write_atomic(p, serde_json::to_string_pretty(&full)?.as_bytes())
}

/// How `validate --suite` runs, besides the suite and its --set.
pub struct SuiteRun<'a> {
    pub repeat: u64,
    pub swap: Option<SwapRequest>,
    /// A stored suite result whose host runs stand in for new ones.
    pub host_from: Option<&'a Path>,
    /// How the summary is printed (`text` prints each configuration as it finishes instead).
    pub format: output::Format,
    /// --out FILE, and whether to --resume from it.
    pub out_resume: Option<(&'a Path, bool)>,
    /// What each simulation takes from its host runs (foreign load, start placement).
    pub from_host: FromHost,
}

/// Resolve every configuration before running any: a typo fails in a second, not at the end
/// (the backends' own sections, host.* and sim.*, are checked when they run).
fn check_configs(suite: &Suite, cli_sets: &[String]) -> Result<()> {
    for c in &suite.configs {
        let mut sets = c.sets.clone();
        sets.extend(cli_sets.iter().cloned());
        Scenario::load(&c.scenario, &sets, Target::Sim)
            .and_then(|s| {
                s.skip_section("host");
                s.skip_section("sim");
                s.skip_keys(&reclaimlab_core::scenario::SIM_SWAP_KEYS);
                // Read by the sim backend (the scheduler model) when it runs.
                s.skip_section("machine.topology");
                s.skip_section("machine.background_load");
                s.skip_section("sched");
                s.finish()
            })
            .map_err(|e| anyhow::anyhow!("configuration {:?}: {e}", c.name))?;
    }
    Ok(())
}

/// A configuration an interrupted run finished with the same sets, kept as it was (what it
/// took from its host runs derived again from the stored host document).
fn kept_config(
    c: &SuiteConfig,
    sets: Vec<String>,
    seconds: f64,
    h: ResultDoc,
    s: ResultDoc,
    from: FromHost,
) -> ConfigResult {
    let mut r = ConfigResult::new(c, sets, seconds);
    if from.background {
        match derived_background(&h) {
            Ok(b) => r.background_from_host = b,
            Err(e) => r.error = Some(format!("{e:#}")),
        }
    }
    if from.placement {
        // The stored simulation's runs follow the host's valid runs.
        match Scenario::load(&c.scenario, &r.sets, Target::Sim)
            .map_err(anyhow::Error::from)
            .and_then(|scn| host_placements(&h, &scn))
        {
            Ok(p) => r.placement_from_host = Some(p),
            Err(e) => r.error = Some(format!("{e:#}")),
        }
    }
    r.fill(h, s);
    r
}

/// `reclaimlab validate --suite FILE`.
pub fn run_suite(file: &Path, cli_sets: &[String], run: SuiteRun) -> Result<ExitCode> {
    let SuiteRun {
        repeat,
        swap,
        host_from: host_file,
        format,
        out_resume,
        from_host: from,
    } = run;
    let json = format == output::Format::Json;
    let out = out_resume.map(|(p, _)| p);
    let resume = out_resume.is_some_and(|(_, r)| r);
    let suite = Suite::load(file)?;
    let mut stored_hosts = match host_file {
        Some(p) => host_from(p, &suite)?,
        None => Default::default(),
    };
    let mut kept = match (out, resume) {
        (Some(p), true) => kept(p, &suite, repeat, cli_sets, from)?,
        _ => Kept::new(),
    };
    check_configs(&suite, cli_sets)?;
    let key = RunKey {
        repeat,
        cli_sets,
        from,
    };
    let t0 = Instant::now();
    let mut results = Vec::new();
    for (i, c) in suite.configs.iter().enumerate() {
        eprintln!(
            "reclaimlab: [{}/{}] {} ...",
            i + 1,
            suite.configs.len(),
            c.name
        );
        let mut all_sets = c.sets.clone();
        all_sets.extend(cli_sets.iter().cloned());
        let r = match kept.remove(&c.name) {
            // Finished before the interrupt, with the same --set: kept as it was.
            Some((sets, seconds, h, s)) if sets == all_sets => {
                eprintln!("reclaimlab: {} kept from the interrupted run", c.name);
                kept_config(c, sets, seconds, h, s, from)
            }
            _ => run_config(
                c,
                cli_sets,
                repeat,
                swap.clone(),
                stored_hosts.remove(&c.name),
                json,
                from,
            ),
        };
        if let Some(e) = &r.error {
            eprintln!("reclaimlab: configuration {:?} failed: {e}", c.name);
        }
        if matches!(format, output::Format::Text | output::Format::Mail) {
            output::write(&output::text::suite_config(&r));
        }
        results.push(r);
        // Keep what finished: the file is rewritten (atomically) after every configuration,
        // marked incomplete until the last one is in.
        if let Some(p) = out {
            let done = results.len() == suite.configs.len();
            let secs = t0.elapsed().as_secs_f64();
            write_full(p, &suite, &key, secs, &results, done)?;
        }
    }
    let total = t0.elapsed().as_secs_f64();
    let failed = results.iter().filter(|r| r.error.is_some()).count();
    eprintln!(
        "reclaimlab: suite {} ({} configurations, {} failed) took {:.0} s",
        suite.file,
        results.len(),
        failed,
        total
    );
    let doc = serde_json::json!({
        "suite": suite.file,
        "description": suite.description,
        "repeat": repeat,
        "background_from_host": from.background,
        "placement_from_host": from.placement,
        "seconds": total,
        "configs": results,
    });
    if let Some(p) = out {
        write_full(p, &suite, &key, total, &results, true)?;
    }
    let r = SuiteReport {
        doc: &doc,
        results: &results,
    };
    output::print(&r, format)?;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::host_sets;

    #[test]
    fn a_stored_host_hold_is_read_as_workload_hold_and_sim_keys_are_left_out() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let stored = v(&["memcg.limit=2G", "sim.tick=1ms", "host.hold=sleep"]);
        let suite = v(&["memcg.limit=2G", "workload.hold=sleep", "sim.cgroup=v1"]);
        assert_eq!(host_sets(&stored), host_sets(&suite));
        assert_ne!(
            host_sets(&v(&["host.hold=spin"])),
            host_sets(&v(&["workload.hold=sleep"]))
        );
    }
}
