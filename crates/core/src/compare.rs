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

/// Rates a simulator result keeps in `extra` that belong beside `throughput` in the table.
pub const EXTRA_RATES: &[&str] = &["pages_touched_per_sec"];

/// stress-vm: the method each worker of each side ends in (`stress_vm_end_methods`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct EndMethods {
    pub before: Vec<String>,
    pub after: Vec<String>,
    /// The two sides end in different methods: their bogo ops/s are not comparable as a
    /// throughput (each method counts bogo ops at its own rate per page).
    pub differ: bool,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_methods: Option<EndMethods>,
    /// Caveats for a reader of the table (printed under it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Median, min and max of a numeric `extra` key over a result's valid runs.
fn extra_summary(d: &ResultDoc, key: &str) -> Option<crate::stats::Summary> {
    let v: Vec<f64> = d
        .runs
        .iter()
        .filter(|r| r.valid)
        .filter_map(|r| r.extra.get(key)?.as_f64())
        .collect();
    crate::stats::summarize(&v)
}

fn end_methods(d: &ResultDoc) -> Option<Vec<String>> {
    let v = d
        .runs
        .first()?
        .extra
        .get("stress_vm_end_methods")?
        .as_array()?;
    v.iter().map(|m| m.as_str().map(str::to_string)).collect()
}

/// The distinct methods of one side, in order of first appearance.
fn distinct(v: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for m in v {
        if !out.contains(&m.as_str()) {
            out.push(m);
        }
    }
    out
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
    let mut rows: Vec<Row> = keys
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
    // Rates kept in `extra` (the simulator's), right after throughput.
    let at = rows
        .iter()
        .position(|r| r.metric == "throughput")
        .map_or(0, |i| i + 1);
    for (i, k) in EXTRA_RATES.iter().enumerate() {
        if let (Some(b), Some(a)) = (extra_summary(before, k), extra_summary(after, k)) {
            let overlap = b.min <= a.max && a.min <= b.max;
            rows.insert(
                (at + i).min(rows.len()),
                Row {
                    metric: k.to_string(),
                    before: b.median,
                    after: a.median,
                    delta: a.median - b.median,
                    delta_pct: pct_change(b.median, a.median),
                    significant: nb >= 2 && na >= 2 && !overlap,
                    assessed: nb >= 2 && na >= 2,
                },
            );
        }
    }
    // With `all`: each stress-vm method's own bogo ops/s (the rate while the workers are in
    // it), for the methods both sides ran.
    if all {
        let rates = |d: &ResultDoc| -> Option<serde_json::Map<String, serde_json::Value>> {
            d.runs
                .first()?
                .extra
                .get("bogo_ops_per_sec_by_method")?
                .as_object()
                .cloned()
        };
        if let (Some(b), Some(a)) = (rates(before), rates(after)) {
            for (m, bv) in &b {
                if let (Some(bv), Some(av)) = (bv.as_f64(), a.get(m).and_then(|v| v.as_f64())) {
                    rows.push(Row {
                        metric: format!("bogo_ops_per_sec:{m}"),
                        before: bv,
                        after: av,
                        delta: av - bv,
                        delta_pct: pct_change(bv, av),
                        // One figure a side (the first run's): no spread to judge.
                        significant: false,
                        assessed: false,
                    });
                }
            }
        }
    }
    let mut notes = Vec::new();
    let end_methods = match (end_methods(before), end_methods(after)) {
        (Some(b), Some(a)) => {
            let differ = distinct(&b) != distinct(&a);
            if differ {
                notes.push(format!(
                    "the two sides end in different stress-ng methods (before: {}; after: {}): bogo ops/s counts each method's ops at its own rate, so its delta mixes the policies' effect with where the method cycle stopped; pages_touched_per_sec does not",
                    distinct(&b).join(", "),
                    distinct(&a).join(", ")
                ));
            }
            Some(EndMethods {
                before: b,
                after: a,
                differ,
            })
        }
        _ => None,
    };
    Comparison {
        before: label(before),
        after: label(after),
        throughput_unit: before.throughput_unit().to_string(),
        rows,
        end_methods,
        notes,
        differences: Vec::new(),
    }
}

/// A metric's name for people (a mail or a plot) rather than its /proc/vmstat key:
/// `throughput` by its unit, the /proc/interrupts rows by what they count, the others as the
/// kernel spells them without underscores. A key not listed keeps its spelling, `_` as spaces.
pub fn readable_name(key: &str, throughput_unit: &str) -> String {
    if key == "throughput" {
        return match throughput_unit {
            "" => "throughput".into(),
            u => readable_name(u, ""),
        };
    }
    if let Some(m) = key.strip_prefix("bogo_ops_per_sec:") {
        return format!("bogo ops/s ({m})");
    }
    let name = match key {
        "bogo_ops_per_sec" => "bogo ops/s",
        "pages_per_sec" => "pages/s",
        "ops_per_sec" => "ops/s",
        "pages_touched_per_sec" => "pages touched/s",
        "pgsteal_per_sec" => "pgsteal/s",
        "tlb_shootdowns_per_sec" => "TLB shootdowns/s",
        "function_call_interrupts_per_sec" => "function call IPIs/s",
        "reclaim_seconds" => "reclaim time (s)",
        "tlb_shootdowns" => "TLB shootdowns",
        "function_call_interrupts" => "function call IPIs",
        "pswpout" => "pswpout (pages)",
        "pswpin" => "pswpin (pages)",
        "pgpgin" => "pgpgin (KiB)",
        "pgpgout" => "pgpgout (KiB)",
        "pgfault" => "page faults",
        "pgmajfault" => "major faults",
        "oom_kill" | "oom_kills" => "OOM kills",
        "nr_tlb_remote_flush" => "remote TLB flushes",
        "nr_tlb_remote_flush_received" => "remote TLB flushes received",
        "nr_tlb_local_flush_one" => "local TLB flushes (one)",
        "nr_tlb_local_flush_all" => "local TLB flushes (all)",
        "wall_seconds" => "wall-clock time (s)",
        other => return other.replace('_', " "),
    };
    name.into()
}

/// Whether a rise in the metric is an improvement: `Some(true)` for rates of work done,
/// `Some(false)` for interrupts, flushes and time taken, `None` where it depends on the
/// workload (pages scanned, stolen, swapped).
pub fn higher_is_better(key: &str, throughput_unit: &str) -> Option<bool> {
    match key {
        "throughput" => higher_is_better(throughput_unit, ""),
        "reclaim_seconds"
        | "tlb_shootdowns"
        | "function_call_interrupts"
        | "oom_kill"
        | "oom_kills"
        | "tlb_shootdowns_per_sec"
        | "function_call_interrupts_per_sec" => Some(false),
        k if k.starts_with("nr_tlb_") => Some(false),
        k if k.starts_with("bogo_ops_per_sec") => Some(true),
        "pages_per_sec" | "ops_per_sec" | "pages_touched_per_sec" => Some(true),
        _ => None,
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
        for n in &self.notes {
            s.push_str(&format!("\nNote: {n}\n"));
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

    #[test]
    fn readable_names_and_directions() {
        assert_eq!(
            readable_name("throughput", "bogo_ops_per_sec"),
            "bogo ops/s"
        );
        assert_eq!(readable_name("throughput", ""), "throughput");
        assert_eq!(readable_name("tlb_shootdowns", ""), "TLB shootdowns");
        assert_eq!(
            readable_name("function_call_interrupts", ""),
            "function call IPIs"
        );
        assert_eq!(readable_name("pgsteal_anon", ""), "pgsteal anon");
        assert_eq!(
            readable_name("bogo_ops_per_sec:flip", ""),
            "bogo ops/s (flip)"
        );
        assert_eq!(
            higher_is_better("throughput", "bogo_ops_per_sec"),
            Some(true)
        );
        assert_eq!(
            higher_is_better("throughput", "reclaim_seconds"),
            Some(false)
        );
        assert_eq!(higher_is_better("tlb_shootdowns", ""), Some(false));
        assert_eq!(higher_is_better("pgsteal_anon", ""), None);
    }

    fn stress_doc(ends: &[&str], pages_per_sec: f64) -> ResultDoc {
        let mut d = doc(&[100]);
        let e = &mut d.runs[0].extra;
        e.insert("stress_vm_end_methods".into(), serde_json::json!(ends));
        e.insert(
            "pages_touched_per_sec".into(),
            serde_json::json!(pages_per_sec),
        );
        d
    }

    #[test]
    fn notes_when_the_sides_end_in_different_methods() {
        let c = compare(
            &stress_doc(&["swap", "swap"], 1000.0),
            &stress_doc(&["swap", "swap"], 1100.0),
            false,
        );
        let em = c.end_methods.as_ref().unwrap();
        assert!(!em.differ);
        assert!(c.notes.is_empty());
        let r = c
            .rows
            .iter()
            .find(|r| r.metric == "pages_touched_per_sec")
            .unwrap();
        assert!((r.delta_pct.unwrap() - 10.0).abs() < 1e-9);
        let c = compare(
            &stress_doc(&["swap", "swap"], 1000.0),
            &stress_doc(&["swap", "flip"], 1000.0),
            false,
        );
        assert!(c.end_methods.as_ref().unwrap().differ);
        assert!(!c
            .rows
            .iter()
            .any(|r| r.metric.starts_with("bogo_ops_per_sec:")));
        assert_eq!(c.notes.len(), 1);
        assert!(
            c.notes[0].contains("before: swap; after: swap, flip"),
            "{}",
            c.notes[0]
        );
        assert!(c
            .markdown()
            .contains("Note: the two sides end in different"));
        let j = serde_json::to_value(&c).unwrap();
        assert_eq!(j["end_methods"]["differ"], true);
        // Results without the stress-vm extras (host, other workloads) get neither.
        let c = compare(&doc(&[1]), &doc(&[2]), false);
        assert!(c.end_methods.is_none() && c.notes.is_empty());
        assert!(serde_json::to_value(&c)
            .unwrap()
            .get("end_methods")
            .is_none());
    }
}
