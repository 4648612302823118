//! `reclaimlab sweep`: simulate a grid of scenario variations under two policies, in parallel,
//! and report each metric's delta per grid point. Results do not depend on the parallelism:
//! every point is an independent deterministic simulation, collected in grid order.

use anyhow::{bail, Result};
use rayon::prelude::*;
use reclaimlab_core::sweep::{grid, point_sets};
pub use reclaimlab_core::sweep::{Axis, Point};
use reclaimlab_core::ResultDoc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

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
    journal: Option<&crate::journal::Journal>,
    done: std::collections::BTreeMap<String, ResultDoc>,
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
