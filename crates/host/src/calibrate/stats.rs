//! The statistics calibrate reports: a benchmark's samples with their median and range, paired
//! differences of samples taken back to back, and least-squares lines.

use anyhow::{bail, Result};
use reclaimlab_core::stats::summarize;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One benchmark's result: every sample (each already a per-unit figure, e.g. ns per page),
/// their median and range, and how they were taken.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub name: String,
    pub unit: String,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub samples: Vec<f64>,
    /// One sentence: what was timed and over how much.
    pub method: String,
    /// Side facts the benchmark observed (counters, folio sizes), for the raw output.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub observed: BTreeMap<String, serde_json::Value>,
}

impl Measurement {
    pub fn new(name: &str, unit: &str, method: &str, samples: Vec<f64>) -> Result<Measurement> {
        if samples.iter().any(|s| !s.is_finite()) {
            bail!("benchmark {name}: a sample is not a finite number ({samples:?})");
        }
        let Some(s) = summarize(&samples) else {
            bail!("benchmark {name}: no samples");
        };
        Ok(Measurement {
            name: name.into(),
            unit: unit.into(),
            median: s.median,
            min: s.min,
            max: s.max,
            samples,
            method: method.into(),
            observed: BTreeMap::new(),
        })
    }

    pub fn observe(mut self, key: &str, v: impl Into<serde_json::Value>) -> Measurement {
        self.observed.insert(key.into(), v.into());
        self
    }
}

/// `a[i] - b[i]` for samples taken back to back (their slow drift cancels).
pub fn paired_diff(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

/// Least-squares line through the points: (slope, intercept). None with fewer than two distinct
/// x values.
pub fn linear_fit(xs: &[f64], ys: &[f64]) -> Option<(f64, f64)> {
    let n = xs.len().min(ys.len());
    if n < 2 {
        return None;
    }
    let mx = xs[..n].iter().sum::<f64>() / n as f64;
    let my = ys[..n].iter().sum::<f64>() / n as f64;
    let sxx: f64 = xs[..n].iter().map(|x| (x - mx) * (x - mx)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = xs[..n]
        .iter()
        .zip(ys)
        .map(|(x, y)| (x - mx) * (y - my))
        .sum();
    let slope = sxy / sxx;
    Some((slope, my - slope * mx))
}

/// Nanoseconds per unit from a duration and a count (0 units is an error: nothing was timed).
pub fn per_unit(ns: f64, units: u64, what: &str) -> Result<f64> {
    if units == 0 {
        bail!("{what}: nothing to divide by (0 units were measured)");
    }
    Ok(ns / units as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measurement_summarizes_and_refuses_bad_samples() {
        let m = Measurement::new("x", "ns/page", "timed", vec![5.0, 1.0, 3.0, 100.0]).unwrap();
        assert_eq!((m.median, m.min, m.max), (4.0, 1.0, 100.0));
        assert!(Measurement::new("x", "ns", "t", vec![]).is_err());
        let e = Measurement::new("y", "ns", "t", vec![1.0, f64::NAN]).unwrap_err();
        assert!(e.to_string().contains("benchmark y"), "{e}");
    }

    #[test]
    fn fits_a_line_and_pairs_differences() {
        // y = 3x + 7 exactly, then with symmetric noise that leaves the fit unchanged.
        let xs = [1.0, 2.0, 4.0, 8.0];
        let ys: Vec<f64> = xs.iter().map(|x| 3.0 * x + 7.0).collect();
        let (s, i) = linear_fit(&xs, &ys).unwrap();
        assert!((s - 3.0).abs() < 1e-9 && (i - 7.0).abs() < 1e-9, "{s} {i}");
        let (s, i) = linear_fit(&[1.0, 1.0, 3.0, 3.0], &[9.0, 11.0, 15.0, 17.0]).unwrap();
        assert!((s - 3.0).abs() < 1e-9 && (i - 7.0).abs() < 1e-9, "{s} {i}");
        assert!(linear_fit(&[2.0, 2.0], &[1.0, 5.0]).is_none());
        assert!(linear_fit(&[2.0], &[1.0]).is_none());
        assert_eq!(paired_diff(&[5.0, 7.0], &[1.0, 10.0]), vec![4.0, -3.0]);
        assert_eq!(per_unit(1000.0, 4, "t").unwrap(), 250.0);
        assert!(per_unit(1000.0, 0, "t").is_err());
    }
}
