//! `reclaimlab bench`: one scenario on the live kernel, in a memcg, with repetitions; with
//! `--out`, each finished repetition is journalled so that `--resume` continues a broken run.

use super::finish_scenario;
use crate::cli::BenchArgs;
use crate::journal::Journal;
use crate::progress::{fraction_bar, show_repetition};
use anyhow::Result;
use reclaimlab_core::{RunResult, Scenario, Target};
use std::collections::BTreeMap;
use std::process::ExitCode;

/// With --out, the journal (FILE.partial) and the repetitions it already holds.
fn open_journal(a: &BenchArgs) -> Result<(Option<Journal>, BTreeMap<String, RunResult>)> {
    let Some(p) = &a.out.out else {
        return Ok((None, Default::default()));
    };
    let mut header = serde_json::json!({
        "bench": a.scn.scenario,
        "sets": a.scn.sets,
        "repeat": a.repeat,
        "swap": a.swap.as_ref().map(|s| format!("{s:?}")),
        "trace": a.trace,
    });
    // Only when set, so journals written before the option existed still resume.
    if a.no_placement_trace {
        header["no_placement_trace"] = true.into();
    }
    let (j, d) = Journal::open::<RunResult>(p, &header, a.resume)?;
    Ok((Some(j), d))
}

pub fn run(a: BenchArgs) -> Result<ExitCode> {
    a.out.check()?;
    let (jn, done) = open_journal(&a)?;
    let BenchArgs {
        scn,
        repeat,
        swap,
        trace,
        no_placement_trace,
        out,
        ..
    } = a;
    let prior: Vec<RunResult> = done.into_values().collect();
    if !prior.is_empty() {
        eprintln!(
            "reclaimlab: resuming: {} of {repeat} repetitions already done",
            prior.len()
        );
    }
    let record = |i: usize, r: &RunResult| match &jn {
        Some(j) => j.record(&format!("run/{i:04}"), r),
        None => Ok(()),
    };
    let (cpus, memory_bytes) = reclaimlab_host::machine_limits();
    let scenario = match Scenario::load(
        &scn.scenario,
        &scn.sets,
        Target::Host { cpus, memory_bytes },
    ) {
        Err(e) if jn.is_some() => {
            return jn.expect("journal").fail(Err(e.into()));
        }
        r => r?,
    };
    let bar = fraction_bar(out.json);
    let cb = |i: usize, n: usize, frac: f64| show_repetition(&bar, i, n, frac);
    let opts = reclaimlab_host::BenchOptions {
        repeat: repeat as usize,
        swap,
        trace,
        no_placement_trace,
        progress: Some(&cb),
        prior,
        on_run: Some(&record),
    };
    let res = finish_scenario(&scenario, reclaimlab_host::bench(&scenario, &opts));
    let doc = match (res, &jn) {
        (Err(e), Some(_)) => return jn.expect("journal").fail(Err(e)),
        (r, _) => r?,
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    super::emit(&doc, &out)?;
    if let Some(j) = jn {
        j.finish()?;
    }
    Ok(ExitCode::SUCCESS)
}
