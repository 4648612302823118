//! `validate --suite FILE`: every configuration of a suite through the host-then-sim step
//! (`host_sim`), printed as each finishes and written to `--out` after each, so that
//! `--resume` can continue an interrupted run (`stored`).

use super::host_sim::{declared_load, derived_background, host_and_sim, host_placements, FromHost};
use super::stored::{host_from, kept, Kept};
use crate::output::{self, SuiteReport};
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
    /// Simulations behind the sim column (`--sim-seeds`, or one per host run with
    /// `--placement-from-host`; the column is their median).
    pub sim_runs: usize,
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
            sim_runs: 0,
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
        self.sim_runs = sim.runs.len();
        self.sim_oom_kills = sim.runs.iter().map(|x| x.oom_kills).sum();
        self.docs = Some((host, sim));
    }
}

/// What identifies a suite run besides the suite (checked by --resume).
struct RunKey<'a> {
    repeat: u64,
    cli_sets: &'a [String],
    from: FromHost,
}

/// The `--out` document: the summary plus each configuration's two result documents;
/// `complete` is false while configurations are still to run (or after an interrupt).
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
        "sim_seeds": key.from.seeds.max(1),
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
                s.skip_section(reclaimlab_core::background::KTHREADS_KEY);
                s.skip_section(reclaimlab_core::background::TIMER_KTHREADS_KEY);
                s.skip_section(reclaimlab_core::background::OTHER_KEY);
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
        match declared_load(&c.scenario, &r.sets, &h)
            .and_then(|l| derived_background(&h, l.as_ref()))
        {
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
