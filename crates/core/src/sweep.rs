//! A sweep's grid and its points: the scenario variations `reclaimlab sweep` simulates under
//! two policies, shared by the CLI (which runs them on its cores) and the Python package (which
//! hands them to an executor), so that both visit the same points with the same `--set`s.

use crate::compare::{compare, Comparison};
use crate::result::ResultDoc;
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

/// Where a point is: (key, value) for every axis, in --vary order.
pub type At = Vec<(String, String)>;

#[derive(Debug, Serialize)]
pub struct Point {
    pub at: At,
    pub comparison: Comparison,
}

impl Point {
    /// The point's row of the sweep: "after" against "before" on the headline metrics.
    pub fn new(at: At, before: &ResultDoc, after: &ResultDoc) -> Point {
        Point {
            at,
            comparison: compare(before, after, false),
        }
    }
}

/// Cartesian product of the axes, first axis varying slowest.
pub fn grid(axes: &[Axis]) -> Vec<At> {
    let mut pts: Vec<At> = vec![vec![]];
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

/// The `--set KEY=VALUE`s that put a scenario at a point (given after the sweep's own sets).
pub fn point_sets(at: &At) -> Vec<String> {
    at.iter().map(|(k, v)| format!("{k}={v}")).collect()
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
        assert_eq!(point_sets(&g[5]), ["a=2", "b=z"]);
        assert!("a".parse::<Axis>().is_err());
        assert!("a=".parse::<Axis>().is_err());
    }
}
