//! `reclaimlab validate`: one scenario, or a suite of configurations (`--suite FILE`, issue 6),
//! each run on the host (`bench`) and then in the simulator modelling this machine (its CPU
//! count and memory), compared per stolen page (`reclaimlab_core::validate`).

use crate::render;
use anyhow::Result;
use reclaimlab_core::suite::Suite;
use reclaimlab_core::validate::{ratio_table, RatioRow};
use reclaimlab_core::{ResultDoc, Scenario, Target};
use reclaimlab_host::SwapRequest;
use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// Run `scenario` with `sets` on the host (or read `host_result`), then simulate it as the
/// host machine (machine.cpus and machine.memory set from the host result).
pub fn host_and_sim(
    scenario: &str,
    sets: &[String],
    repeat: u64,
    swap: Option<SwapRequest>,
    host_result: Option<&Path>,
    json: bool,
) -> Result<(ResultDoc, ResultDoc)> {
    let (cpus, memory_bytes) = reclaimlab_host::machine_limits();
    let host = match host_result {
        Some(p) => crate::read_doc(p)?,
        None => {
            let s = Scenario::load(scenario, sets, Target::Host { cpus, memory_bytes })?;
            let bar = crate::progress_bar(json, "host repetition");
            let cb = |i: usize, n: usize, frac: f64| crate::show_repetition(&bar, i, n, frac);
            let opts = reclaimlab_host::BenchOptions {
                repeat: repeat as usize,
                swap,
                trace: false,
                progress: Some(&cb),
                prior: Vec::new(),
                on_run: None,
            };
            let d = crate::finish_scenario(&s, reclaimlab_host::bench(&s, &opts))?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            d
        }
    };
    let mut sets = sets.to_vec();
    sets.push(format!("machine.cpus={}", host.machine.cpus.max(1)));
    sets.push(format!(
        "machine.memory={}",
        host.machine.memory_bytes.max(64 << 20)
    ));
    let s = Scenario::load(scenario, &sets, Target::Sim)?;
    let sim = crate::finish_scenario(&s, reclaimlab_sim::run(&s, &Default::default()))?;
    Ok((host, sim))
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
    /// The two result documents (written with --out only).
    #[serde(skip)]
    pub docs: Option<(ResultDoc, ResultDoc)>,
}

impl ConfigResult {
    fn oom_cell(&self) -> String {
        let k: Vec<String> = self.host_oom_kills.iter().map(|k| k.to_string()).collect();
        format!(
            "host {} (valid runs {}/{}), sim {}",
            if k.is_empty() {
                "-".into()
            } else {
                k.join(", ")
            },
            self.host_valid_runs,
            self.host_runs,
            self.sim_oom_kills
        )
    }
}

fn run_config(
    c: &reclaimlab_core::suite::SuiteConfig,
    cli_sets: &[String],
    repeat: u64,
    swap: Option<SwapRequest>,
    json: bool,
) -> ConfigResult {
    let t0 = Instant::now();
    let mut sets = c.sets.clone();
    sets.extend(cli_sets.iter().cloned());
    let mut r = ConfigResult {
        name: c.name.clone(),
        scenario: c.scenario.clone(),
        sets: sets.clone(),
        rows: vec![],
        host_oom_kills: vec![],
        host_valid_runs: 0,
        host_runs: 0,
        sim_oom_kills: 0,
        seconds: 0.0,
        error: None,
        docs: None,
    };
    match host_and_sim(&c.scenario, &sets, repeat, swap, None, json) {
        Ok((host, sim)) => {
            r.rows = ratio_table(&host, &sim);
            r.host_oom_kills = host.runs.iter().map(|x| x.oom_kills).collect();
            r.host_valid_runs = host.runs.iter().filter(|x| x.valid).count();
            r.host_runs = host.runs.len();
            r.sim_oom_kills = sim.runs.iter().map(|x| x.oom_kills).sum();
            r.docs = Some((host, sim));
        }
        Err(e) => r.error = Some(format!("{e:#}")),
    }
    r.seconds = t0.elapsed().as_secs_f64();
    r
}

/// The Markdown table of a whole suite: one block of rows per configuration.
pub fn suite_markdown(results: &[ConfigResult]) -> String {
    let mut s = String::from(
        "| configuration | ratio | host median [min–max] | sim | sim error |\n\
         | --- | --- | ---: | ---: | ---: |\n",
    );
    for r in results {
        let mut first = true;
        let mut name = || {
            if std::mem::take(&mut first) {
                r.name.clone()
            } else {
                String::new()
            }
        };
        if let Some(e) = &r.error {
            s.push_str(&format!(
                "| {} | failed: {} | | | |\n",
                name(),
                e.replace('\n', " ")
            ));
            continue;
        }
        for c in render::validate_cells(&r.rows) {
            s.push_str(&format!("| {} | {} |\n", name(), c.join(" | ")));
        }
        s.push_str(&format!(
            "| {} | OOM kills | {} | | |\n",
            name(),
            r.oom_cell()
        ));
    }
    s
}

fn print_config_text(r: &ConfigResult) {
    outln!("{} ({}; {:.0} s)", r.name, r.sets.join(" "), r.seconds);
    match &r.error {
        Some(e) => outln!("  failed: {e}\n"),
        None => {
            outln!("{}", render::validate_table(&r.rows, false));
            outln!("OOM kills: {}\n", r.oom_cell());
        }
    }
}

/// The `--out` document: the summary plus each configuration's two result documents;
/// `complete` is false while configurations are still to run (or after an interrupt).
fn write_full(
    p: &Path,
    suite: &Suite,
    repeat: u64,
    seconds: f64,
    results: &[ConfigResult],
    complete: bool,
) -> Result<()> {
    let mut full = serde_json::json!({
        "suite": suite.file,
        "description": suite.description,
        "repeat": repeat,
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
    crate::output::write_atomic(p, serde_json::to_string_pretty(&full)?.as_bytes())
}

/// `reclaimlab validate --suite FILE`.
pub fn run_suite(
    file: &Path,
    cli_sets: &[String],
    repeat: u64,
    swap: Option<SwapRequest>,
    markdown: bool,
    json: bool,
    out: Option<&Path>,
) -> Result<ExitCode> {
    let suite = Suite::load(file)?;
    // Resolve every configuration before running any: a typo fails in a second, not at the end
    // (the backends' own sections, host.* and sim.*, are checked when they run).
    for c in &suite.configs {
        let mut sets = c.sets.clone();
        sets.extend(cli_sets.iter().cloned());
        Scenario::load(&c.scenario, &sets, Target::Sim)
            .and_then(|s| {
                s.skip_section("host");
                s.skip_section("sim");
                s.finish()
            })
            .map_err(|e| anyhow::anyhow!("configuration {:?}: {e}", c.name))?;
    }
    let t0 = Instant::now();
    let mut results = Vec::new();
    for (i, c) in suite.configs.iter().enumerate() {
        eprintln!(
            "reclaimlab: [{}/{}] {} ...",
            i + 1,
            suite.configs.len(),
            c.name
        );
        let r = run_config(c, cli_sets, repeat, swap.clone(), json);
        if let Some(e) = &r.error {
            eprintln!("reclaimlab: configuration {:?} failed: {e}", c.name);
        }
        if !json && !markdown {
            print_config_text(&r);
        }
        results.push(r);
        // Keep what finished: the file is rewritten (atomically) after every configuration,
        // marked incomplete until the last one is in.
        if let Some(p) = out {
            let done = results.len() == suite.configs.len();
            write_full(
                p,
                &suite,
                repeat,
                t0.elapsed().as_secs_f64(),
                &results,
                done,
            )?;
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
        "seconds": total,
        "configs": results,
    });
    if let Some(p) = out {
        write_full(p, &suite, repeat, total, &results, true)?;
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else if markdown {
        print!("{}", suite_markdown(&results));
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
