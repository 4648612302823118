//! The seeds' Before/After/Delta table, built from two results' medians.

use crate::result::ResultDoc;
use crate::stats::pct_change;
use serde::Serialize;

/// Rows the seed tables show first, in their order; other common counters follow with `all`.
pub const HEADLINE: &[&str] = &[
    "throughput",
    "tlb_shootdowns",
    "function_call_interrupts",
    "pgscan_anon",
    "pgsteal_anon",
    "pgscan_file",
    "pgsteal_file",
    "pswpout",
    "pswpin",
    "workingset_refault_anon",
    "workingset_refault_file",
    "pgactivate",
    "pgpgin",
    "wall_seconds",
];

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub metric: String,
    pub before: f64,
    pub after: f64,
    pub delta: f64,
    pub delta_pct: Option<f64>,
    /// True when each side has at least two valid runs and their min–max ranges do not
    /// overlap; false otherwise (see `assessed`).
    pub significant: bool,
    /// Whether significance could be judged at all: at least two valid runs on each side (a
    /// single run, e.g. one deterministic simulation, has no spread to judge it by).
    #[serde(default)]
    pub assessed: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub before: String,
    pub after: String,
    pub throughput_unit: String,
    pub rows: Vec<Row>,
    /// What differs between the two results besides the kernel (compare --allow-mismatch);
    /// empty for a like-for-like comparison.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
}

fn label(d: &ResultDoc) -> String {
    let what = if d.policy.is_empty() {
        &d.kernel
    } else {
        &d.policy
    };
    format!("{} {} ({})", d.backend, what, d.scenario)
}

/// Compare medians. `all` adds every counter both results have (non-zero in either).
pub fn compare(before: &ResultDoc, after: &ResultDoc, all: bool) -> Comparison {
    let mut keys: Vec<String> = HEADLINE.iter().map(|s| s.to_string()).collect();
    if all {
        for k in before.median.keys() {
            if after.median.contains_key(k) && !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let nb = before.runs.iter().filter(|r| r.valid).count();
    let na = after.runs.iter().filter(|r| r.valid).count();
    let rows = keys
        .into_iter()
        .filter_map(|k| {
            let (b, a) = (*before.median.get(&k)?, *after.median.get(&k)?);
            if b == 0.0 && a == 0.0 {
                return None;
            }
            let overlap = match (
                before.min.get(&k),
                before.max.get(&k),
                after.min.get(&k),
                after.max.get(&k),
            ) {
                (Some(bmin), Some(bmax), Some(amin), Some(amax)) => bmin <= amax && amin <= bmax,
                _ => false,
            };
            // Significance needs a spread on both sides: two valid runs each at least.
            let assessed = nb >= 2 && na >= 2;
            let significant = assessed && !overlap;
            Some(Row {
                metric: k,
                before: b,
                after: a,
                delta: a - b,
                delta_pct: pct_change(b, a),
                significant,
                assessed,
            })
        })
        .collect();
    Comparison {
        before: label(before),
        after: label(after),
        throughput_unit: before.throughput_unit().to_string(),
        rows,
        differences: Vec::new(),
    }
}

/// Fixed-point with thousands kept readable: integers stay integers.
pub fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

impl Row {
    /// Judged and found not significant (ranges overlap with ≥ 2 runs per side).
    pub fn not_significant(&self) -> bool {
        self.assessed && !self.significant
    }

    pub fn delta_text(&self) -> String {
        let sign = if self.delta >= 0.0 { "+" } else { "" };
        let pct = match self.delta_pct {
            Some(p) => format!("{}{p:.1}%", if p >= 0.0 { "+" } else { "" }),
            None => "n/a".into(),
        };
        let ns = if self.not_significant() { " n.s." } else { "" };
        format!("{sign}{} ({pct}){ns}", fmt_num(self.delta))
    }
}

impl Comparison {
    pub fn metric_label(&self, m: &str) -> String {
        if m == "throughput" && !self.throughput_unit.is_empty() {
            format!("throughput ({})", self.throughput_unit)
        } else {
            m.to_string()
        }
    }

    pub fn markdown(&self) -> String {
        let mut s = format!("Before: {}  \nAfter: {}\n\n", self.before, self.after);
        if !self.differences.is_empty() {
            s.push_str("**Not like for like** (compare --allow-mismatch):\n\n");
            for d in &self.differences {
                s.push_str(&format!("- {d}\n"));
            }
            s.push('\n');
        }
        s.push_str("| Metric | Before | After | Delta (abs / %) |\n| --- | ---: | ---: | ---: |\n");
        for r in &self.rows {
            s.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                self.metric_label(&r.metric),
                fmt_num(r.before),
                fmt_num(r.after),
                r.delta_text()
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{RunResult, SCHEMA};

    fn doc(vals: &[u64]) -> ResultDoc {
        let mut d = ResultDoc {
            schema: SCHEMA.into(),
            backend: "host".into(),
            runs: vals
                .iter()
                .map(|v| RunResult {
                    counters: [("tlb_shootdowns".to_string(), *v)].into(),
                    valid: true,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        d.summarize();
        d
    }

    #[test]
    fn deltas_and_significance() {
        let c = compare(&doc(&[100, 110, 90]), &doc(&[30, 35, 32]), false);
        let r = c
            .rows
            .iter()
            .find(|r| r.metric == "tlb_shootdowns")
            .unwrap();
        assert_eq!((r.before, r.after), (100.0, 32.0));
        assert!((r.delta_pct.unwrap() + 68.0).abs() < 1e-9);
        assert!(r.significant && r.assessed);
        assert_eq!(r.delta_text(), "-68 (-68.0%)");
        // One run a side: no spread, so no significance claimed (and no "n.s." either).
        let c = compare(&doc(&[100]), &doc(&[30]), false);
        assert!(!c.rows[0].significant && !c.rows[0].assessed);
        assert_eq!(c.rows[0].delta_text(), "-70 (-70.0%)");
        let c = compare(&doc(&[100, 110, 90]), &doc(&[95, 120, 105]), false);
        let r = c
            .rows
            .iter()
            .find(|r| r.metric == "tlb_shootdowns")
            .unwrap();
        assert!(!r.significant);
        assert!(c.markdown().contains("n.s."));
    }
}
