//! One module per subcommand, each with a `run` taking its parsed arguments; the helpers
//! several commands share.

pub mod bench;
pub mod calibrate;
pub mod check;
pub mod compare;
pub mod policies;
pub mod profiles;
pub mod scenarios;
pub mod sim;
pub mod sweep;
pub mod validate;

use crate::cli::{Cli, Cmd, OutputArgs};
use crate::output::{self, ResultReport};
use anyhow::{Context, Result};
use reclaimlab_core::{ResultDoc, Scenario, Target};
use std::process::ExitCode;

/// Run the command `cli` names.
pub fn run(mut cli: Cli) -> Result<ExitCode> {
    output::style::set_style(cli.cmd.resolve_format());
    match cli.cmd {
        Cmd::Sim(a) => sim::run(a),
        Cmd::Bench(a) => bench::run(a),
        Cmd::Calibrate(a) => calibrate::run(a),
        Cmd::Compare(a) => compare::run(a),
        Cmd::Validate(a) => validate::run(a),
        Cmd::Sweep(a) => sweep::run(a),
        Cmd::Check(a) => check::run(a),
        Cmd::Policies => policies::run(),
        Cmd::Profiles(a) => profiles::run(a),
        Cmd::Scenarios(a) => scenarios::run(a),
    }
}

/// `--profile X` is `--set machine.profile=X`, given last so that it wins.
pub fn push_profile(sets: &mut Vec<String>, profile: Option<String>) {
    if let Some(p) = profile {
        sets.push(format!("machine.profile={p:?}"));
    }
}

/// Simulate `scenario` under the kernel policy `spec` (PRESET[+PATCH...]).
pub fn simulate_policy(scenario: &str, sets: &[String], spec: &str) -> Result<ResultDoc> {
    let k = reclaimlab_core::policy::KernelPolicy::parse(spec).map_err(anyhow::Error::msg)?;
    let mut sets = sets.to_vec();
    sets.extend(k.scenario_sets());
    let s = Scenario::load(scenario, &sets, Target::Sim)?;
    reclaimlab_host::workload::HostConfig::check_section(&s)?;
    finish_scenario(&s, reclaimlab_sim::run(&s, &Default::default()))
}

/// The backend has read its own section; now every key must have been used. A backend that
/// failed says why first: the key it stopped on leaves the keys after it unread, and "unknown
/// key" for those would hide the real error.
pub fn finish_scenario(scn: &Scenario, res: Result<ResultDoc>) -> Result<ResultDoc> {
    let doc = res?;
    scn.finish()?;
    Ok(doc)
}

/// Run `f` on a pool of `jobs` threads (`--jobs`; None: rayon's global pool, one per core).
pub fn with_jobs<R: Send>(jobs: Option<u16>, f: impl FnOnce() -> R + Send) -> Result<R> {
    match jobs {
        None => Ok(f()),
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n.into())
                .build()?;
            Ok(pool.install(f))
        }
    }
}

/// A result file (`--out` of sim, bench or another reclaimlab).
pub fn read_doc(p: &std::path::Path) -> Result<ResultDoc> {
    let text =
        std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
    ResultDoc::from_json(&text)
        .with_context(|| format!("{} is not a reclaimlab result", p.display()))
}

/// Check that `spec` names a kernel policy (before any simulation spends time).
pub fn check_policy(spec: &str) -> Result<()> {
    reclaimlab_core::policy::KernelPolicy::parse(spec).map_err(anyhow::Error::msg)?;
    Ok(())
}

/// `--plot FILE`: its format known and the file writable before any work.
pub fn check_plot(plot: Option<&std::path::Path>) -> Result<()> {
    if let Some(p) = plot {
        output::plot::Format::of(p)?;
        output::file::check_writable(p, "--plot")?;
    }
    Ok(())
}

/// A run's result: written to `--out` (JSON) and printed in `--format` (`sim`, `bench`).
pub fn emit(doc: &ResultDoc, out: &OutputArgs) -> Result<()> {
    let r = ResultReport {
        doc,
        all: out.all,
        raw_names: out.raw_names,
    };
    if let Some(p) = &out.out {
        output::file::write_atomic(p, output::json_text(doc)?.as_bytes())?;
    }
    output::print(&r, out.format)
}
