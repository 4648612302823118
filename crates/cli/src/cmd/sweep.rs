//! `reclaimlab sweep`: simulate a grid of scenario variations under two policies, in parallel,
//! and report each metric's delta per grid point. Results do not depend on the parallelism:
//! every point is an independent deterministic simulation, collected in grid order.

use super::{check_plot, check_policy, push_profile, simulate_policy, with_jobs};
use crate::cli::SweepArgs;
use crate::journal::Journal;
use crate::output::{self, Format, SweepReport};
use crate::progress::progress_bar;
use anyhow::{bail, Result};
use rayon::prelude::*;
use reclaimlab_core::sweep::{grid, point_sets, Axis, Point};
use reclaimlab_core::ResultDoc;
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// With --out, the journal (FILE.partial) and the simulations it already holds.
fn open_journal(a: &SweepArgs) -> Result<(Option<Journal>, BTreeMap<String, ResultDoc>)> {
    let Some(p) = &a.out else {
        return Ok((None, Default::default()));
    };
    output::file::check_writable(p, "--out")?;
    let header = serde_json::json!({
        "sweep": a.scenario,
        "vary": a.vary.iter().map(|x| (&x.key, &x.values)).collect::<Vec<_>>(),
        "before": a.before,
        "after": a.after,
        "sets": a.sets,
    });
    let (j, d) = Journal::open(p, &header, a.resume)?;
    Ok((Some(j), d))
}

pub fn run(mut a: SweepArgs) -> Result<ExitCode> {
    push_profile(&mut a.sets, a.profile.take());
    check_plot(a.plot.as_deref())?;
    for spec in [&a.before, &a.after] {
        check_policy(spec)?;
    }
    let (jn, done) = open_journal(&a)?;
    let bar = progress_bar(a.json, "points done");
    if let Some(b) = &bar {
        b.enable_steady_tick(std::time::Duration::from_millis(200));
    }
    let show = |done: usize, n: usize| {
        if let Some(b) = &bar {
            b.set_length(n as u64);
            b.set_position(done as u64);
        }
    };
    let sim = |extra: &[String], pol: &str| {
        let mut all = a.sets.clone();
        all.extend_from_slice(extra);
        simulate_policy(&a.scenario, &all, pol)
    };
    let points = match with_jobs(a.jobs, || {
        run_kept(&a.vary, &a.before, &a.after, sim, jn.as_ref(), done, &show)
    })? {
        Err(e) if jn.is_some() => return jn.expect("journal").fail(Err(e)),
        r => r?,
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let (Some(p), Some(j)) = (&a.out, jn) {
        output::file::write_atomic(p, serde_json::to_string_pretty(&points)?.as_bytes())?;
        j.finish()?;
    }
    if let Some(p) = &a.plot {
        output::plot::sweep_plot(&points, &format!("{} vs {}", a.after, a.before), p)?;
    }
    let format = if a.json { Format::Json } else { Format::Text };
    output::print(&SweepReport(&points), format)?;
    Ok(ExitCode::SUCCESS)
}

/// Run every (point, policy) simulation on all cores (`sim` maps extra sets and a policy to a
/// result), recording each finished simulation in `journal` (keyed "point/policy") and
/// skipping those in `done` (from an interrupted run's journal: each is deterministic, so
/// the result is the same as an uninterrupted run's). `progress` is told (points done,
/// points) at the start and whenever both simulations of a point have finished.
pub fn run_kept<F>(
    axes: &[Axis],
    before: &str,
    after: &str,
    sim: F,
    journal: Option<&Journal>,
    done: BTreeMap<String, ResultDoc>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Point>>
where
    F: Fn(&[String], &str) -> Result<ResultDoc> + Sync,
{
    if axes.is_empty() {
        bail!("sweep needs at least one --vary KEY=V1,V2,...");
    }
    let pts = grid(axes);
    let jobs: Vec<(usize, &str)> = (0..pts.len())
        .flat_map(|i| [(i, before), (i, after)])
        .collect();
    if !done.is_empty() {
        eprintln!(
            "reclaimlab: resuming: {} of {} simulations already done",
            done.len().min(jobs.len()),
            jobs.len()
        );
    }
    let key = |j: usize| format!("{}/{}", j / 2, ["before", "after"][j % 2]);
    // Simulations finished per point (those kept from a journal count from the start).
    let sides: Vec<AtomicUsize> = (0..pts.len())
        .map(|i| {
            AtomicUsize::new(
                (0..2)
                    .filter(|s| done.contains_key(&key(2 * i + s)))
                    .count(),
            )
        })
        .collect();
    let points_done = AtomicUsize::new(sides.iter().filter(|s| s.load(Relaxed) == 2).count());
    progress(points_done.load(Relaxed), pts.len());
    let docs: Vec<Result<ResultDoc>> = jobs
        .par_iter()
        .enumerate()
        .map(|(j, (i, pol))| {
            if let Some(d) = done.get(&key(j)) {
                return Ok(d.clone());
            }
            let d = sim(&point_sets(&pts[*i]), pol)?;
            if let Some(jn) = journal {
                jn.record(&key(j), &d)?;
            }
            if sides[*i].fetch_add(1, Relaxed) == 1 {
                progress(points_done.fetch_add(1, Relaxed) + 1, pts.len());
            }
            Ok(d)
        })
        .collect();
    let mut docs = docs.into_iter();
    let mut out = Vec::new();
    for at in pts {
        let b = docs.next().expect("one per job")?;
        let a = docs.next().expect("one per job")?;
        out.push(Point::new(at, &b, &a));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_counts_points_not_simulations() {
        let axes: Vec<Axis> = vec!["machine.cpus=2,4,8".parse().unwrap()];
        let seen = std::sync::Mutex::new(Vec::new());
        let show = |d: usize, n: usize| seen.lock().unwrap().push((d, n));
        let doc = |_: &[String], _: &str| -> Result<ResultDoc> { Ok(ResultDoc::default()) };
        // Point 1's "before" is kept from an interrupted run.
        let kept = [("1/before".to_string(), ResultDoc::default())].into();
        let pts = run_kept(&axes, "6.18", "7.0", doc, None, kept, &show).unwrap();
        assert_eq!(pts.len(), 3);
        let mut seen = seen.into_inner().unwrap();
        assert_eq!(seen[0], (0, 3), "the start, before any point is done");
        seen.sort();
        assert_eq!(seen, [(0, 3), (1, 3), (2, 3), (3, 3)]);
    }
}
