//! `reclaimlab sweep`: simulate a grid of scenario variations under two policies, in parallel,
//! and report each metric's delta per grid point. Results do not depend on the parallelism:
//! every point is an independent deterministic simulation, collected in grid order.

use anyhow::{bail, Result};
use rayon::prelude::*;
use reclaimlab_core::compare::{compare, Comparison};
use reclaimlab_core::ResultDoc;
use serde::Serialize;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// One `--vary KEY=V1,V2,...`.
#[derive(Clone, Debug)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

impl std::str::FromStr for Axis {
    type Err = String;
    fn from_str(s: &str) -> Result<Axis, String> {
        let (k, v) = s.split_once('=').ok_or_else(|| {
            format!("bad --vary {s:?}: use KEY=V1,V2,... e.g. machine.cpus=2,4,8")
        })?;
        let values: Vec<String> = v
            .split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect();
        if k.trim().is_empty() || values.is_empty() {
            return Err(format!(
                "bad --vary {s:?}: needs a key and at least one value"
            ));
        }
        Ok(Axis {
            key: k.trim().to_string(),
            values,
        })
    }
}

#[derive(Debug, Serialize)]
pub struct Point {
    /// (key, value) for every axis, in --vary order.
    pub at: Vec<(String, String)>,
    pub comparison: Comparison,
}

/// Cartesian product of the axes, first axis varying slowest.
pub fn grid(axes: &[Axis]) -> Vec<Vec<(String, String)>> {
    let mut pts: Vec<Vec<(String, String)>> = vec![vec![]];
    for a in axes {
        pts = pts
            .into_iter()
            .flat_map(|p| {
                a.values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((a.key.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    pts
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
            let sets: Vec<String> = pts[*i].iter().map(|(k, v)| format!("{k}={v}")).collect();
            let d = sim(&sets, pol)?;
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
        out.push(Point {
            at,
            comparison: compare(&b, &a, false),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_order() {
        let axes: Vec<Axis> = ["a=1,2", "b=x,y,z"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let g = grid(&axes);
        assert_eq!(g.len(), 6);
        assert_eq!(
            g[0],
            vec![("a".into(), "1".into()), ("b".into(), "x".into())]
        );
        assert_eq!(
            g[5],
            vec![("a".into(), "2".into()), ("b".into(), "z".into())]
        );
        assert!("a".parse::<Axis>().is_err());
        assert!("a=".parse::<Axis>().is_err());
    }

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
