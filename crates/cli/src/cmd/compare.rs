//! `reclaimlab compare`: the Before/After/Delta table of two result files, or of two
//! simulations of one scenario under two kernel policies (run at once: each is deterministic
//! on its own).

use super::{check_plot, check_policy, push_profile, read_doc, simulate_policy, with_jobs};
use crate::cli::CompareArgs;
use crate::output::{self, CompareReport, Format};
use crate::progress::progress_bar;
use anyhow::{bail, Result};
use reclaimlab_core::ResultDoc;
use std::process::ExitCode;

pub fn run(args: CompareArgs) -> Result<ExitCode> {
    if args.profile.is_some() && args.before.is_none() {
        bail!("--profile applies to simulations: give one scenario with --before and --after, not result files");
    }
    let mut sets = args.sets.clone();
    push_profile(&mut sets, args.profile.clone());
    check_plot(args.plot.as_deref())?;
    let (b, a) = match (args.inputs.as_slice(), &args.before, &args.after) {
        ([b, a], None, None) if sets.is_empty() => (read_doc(b.as_ref())?, read_doc(a.as_ref())?),
        ([scn], Some(before), Some(after)) => simulate_both(&args, scn, &sets, before, after)?,
        _ => bail!(
            "compare takes two result files, or one scenario with --before and --after \
             (--set only with a scenario)"
        ),
    };
    let side_sets: Vec<String> = args
        .before_sets
        .iter()
        .chain(&args.after_sets)
        .cloned()
        .collect();
    let c = reclaimlab_core::mismatch::checked_compare(
        &b,
        &a,
        args.all,
        args.allow_mismatch,
        &side_sets,
    )
    .map_err(anyhow::Error::msg)?;
    if let Some(p) = &args.plot {
        let title = format!("{}: {} vs {}", b.scenario, doc_policy(&b), doc_policy(&a));
        output::plot::compare_plot(&c, &title, p)?;
    }
    let r = CompareReport {
        c: &c,
        before: &b,
        after: &a,
        all: args.all,
        raw_names: args.raw_names,
    };
    output::print(&r, args.format)?;
    Ok(ExitCode::SUCCESS)
}

/// Simulate `scn` under `before` and `after` at once (each side with its own --before-set or
/// --after-set after the common `sets`).
fn simulate_both(
    args: &CompareArgs,
    scn: &str,
    sets: &[String],
    before: &str,
    after: &str,
) -> Result<(ResultDoc, ResultDoc)> {
    // Reject a bad spec before spending time on the other simulation.
    for spec in [before, after] {
        check_policy(spec)?;
    }
    let bar = progress_bar(args.format == Format::Json, "simulations done");
    if let Some(b) = &bar {
        b.set_length(2);
        b.enable_steady_tick(std::time::Duration::from_millis(200));
    }
    let side = |spec: &str, own: &[String]| {
        let sets = [sets, own].concat();
        let r = simulate_policy(scn, &sets, spec);
        if let Some(b) = &bar {
            b.inc(1);
        }
        r
    };
    let (b, af) = with_jobs(args.jobs, || {
        rayon::join(
            || side(before, &args.before_sets),
            || side(after, &args.after_sets),
        )
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok((b?, af?))
}

/// What a result ran: its policy spec (sim), else its kernel release (host), with the backend.
fn doc_policy(d: &ResultDoc) -> String {
    let what = if d.policy.is_empty() {
        &d.kernel
    } else {
        &d.policy
    };
    format!("{} {what}", d.backend)
}
