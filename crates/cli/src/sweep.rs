//! `reclaimlab sweep`: simulate a grid of scenario variations under two policies, in parallel,
//! and report each metric's delta per grid point. Results do not depend on the parallelism:
//! every point is an independent deterministic simulation, collected in grid order.

use anyhow::{bail, Result};
use rayon::prelude::*;
use reclaimlab_core::compare::{compare, Comparison};
use reclaimlab_core::ResultDoc;
use serde::Serialize;

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
/// the result is the same as an uninterrupted run's).
pub fn run_kept<F>(
    axes: &[Axis],
    before: &str,
    after: &str,
    sim: F,
    journal: Option<&crate::journal::Journal>,
    done: std::collections::BTreeMap<String, ResultDoc>,
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
    let docs: Vec<Result<ResultDoc>> = jobs
        .par_iter()
        .enumerate()
        .map(|(j, (i, pol))| {
            let key = format!("{i}/{}", if j % 2 == 0 { "before" } else { "after" });
            if let Some(d) = done.get(&key) {
                return Ok(d.clone());
            }
            let sets: Vec<String> = pts[*i].iter().map(|(k, v)| format!("{k}={v}")).collect();
            let d = sim(&sets, pol)?;
            if let Some(jn) = journal {
                jn.record(&key, &d)?;
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
}
