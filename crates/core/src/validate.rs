//! Sim against host: per-stolen-page ratios, host median [min–max] beside the sim figure.
//!
//! Ratios per stolen page (not raw counts) because the two backends steal different numbers of
//! pages in the same time; what the model must get right is the mechanism's cost per page.

use crate::result::{ResultDoc, RunResult};
use crate::stats::summarize;
use serde::Serialize;

/// Numerators divided by `pgsteal_anon` (the validation ratios).
pub const RATIOS: &[&str] = &[
    "tlb_shootdowns",
    "function_call_interrupts",
    "pgscan_anon",
    "pswpout",
    "workingset_refault_anon",
];
pub const DENOMINATOR: &str = "pgsteal_anon";
/// The `placement` field compared by [`ratio_table`].
pub const MIGRATIONS_PER_TASK_PER_S: &str = "worker_migrations_per_task_per_second";

/// The same for page-cache reclaim (the file workloads): numerators divided by
/// `pgsteal_file`. pgrotated (folios whose writeback ended with PG_reclaim set, moved to the
/// inactive tail) and nr_vmscan_immediate_reclaim (dirty folios reclaim tagged PG_reclaim)
/// measure how reclaim met dirty and writeback folios.
pub const FILE_RATIOS: &[&str] = &[
    "tlb_shootdowns",
    "function_call_interrupts",
    "pgscan_file",
    "workingset_refault_file",
    "nr_vmscan_immediate_reclaim",
    "pgrotated",
];
pub const FILE_DENOMINATOR: &str = "pgsteal_file";

/// The (numerators, denominator) for a host result: file ratios when it stole more file
/// pages than anon ones.
fn ratio_set(host: &[&RunResult]) -> (&'static [&'static str], &'static str) {
    let sum = |k: &str| -> u64 {
        host.iter()
            .map(|r| r.counters.get(k).copied().unwrap_or(0))
            .sum()
    };
    if sum(FILE_DENOMINATOR) > sum(DENOMINATOR) {
        (FILE_RATIOS, FILE_DENOMINATOR)
    } else {
        (RATIOS, DENOMINATOR)
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RatioRow {
    /// e.g. "tlb_shootdowns/pgsteal_anon", or "throughput".
    pub ratio: String,
    pub host_median: Option<f64>,
    pub host_min: Option<f64>,
    pub host_max: Option<f64>,
    /// The simulations' median (one simulation: its figure).
    pub sim: Option<f64>,
    /// With several simulations (`validate --sim-seeds`, `--placement-from-host`): their
    /// range; absent with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_max: Option<f64>,
    /// (sim − host median) / host median, in percent.
    pub error_pct: Option<f64>,
    pub within_25pct: Option<bool>,
}

fn ratio(r: &RunResult, num: &str, den: &str) -> Option<f64> {
    let d = *r.counters.get(den)? as f64;
    if d == 0.0 {
        return None;
    }
    Some(*r.counters.get(num).unwrap_or(&0) as f64 / d)
}

fn valid_runs(d: &ResultDoc) -> Vec<&RunResult> {
    let v: Vec<&RunResult> = d.runs.iter().filter(|r| r.valid).collect();
    if v.is_empty() {
        d.runs.iter().collect()
    } else {
        v
    }
}

fn row(name: String, host: Vec<f64>, sim: Vec<f64>) -> RatioRow {
    let h = summarize(&host);
    let range = summarize(&sim).filter(|_| sim.len() > 1);
    let s = summarize(&sim).map(|s| s.median);
    let error_pct = match (h, s) {
        (Some(h), Some(s)) if h.median != 0.0 => Some((s - h.median) / h.median * 100.0),
        (Some(h), Some(s)) if h.median == 0.0 && s == 0.0 => Some(0.0),
        _ => None,
    };
    RatioRow {
        ratio: name,
        host_median: h.map(|h| h.median),
        host_min: h.map(|h| h.min),
        host_max: h.map(|h| h.max),
        sim: s,
        sim_min: range.map(|r| r.min),
        sim_max: range.map(|r| r.max),
        within_25pct: error_pct.map(|e| e.abs() <= 25.0),
        error_pct,
    }
}

/// One row per ratio, plus throughput (absolute, same unit in both backends).
pub fn ratio_table(host: &ResultDoc, sim: &ResultDoc) -> Vec<RatioRow> {
    let (h, s) = (valid_runs(host), valid_runs(sim));
    let (nums, den) = ratio_set(&h);
    let mut rows: Vec<RatioRow> = nums
        .iter()
        .map(|num| {
            row(
                format!("{num}/{den}"),
                h.iter().filter_map(|r| ratio(r, num, den)).collect(),
                s.iter().filter_map(|r| ratio(r, num, den)).collect(),
            )
        })
        .collect();
    // Placement beside its consequence: how often a worker migrates (the result's
    // `placement` section; host: /proc/PID/sched, sim: the scheduler model).
    let placement = |r: &&RunResult| {
        r.extra
            .get("placement")?
            .get(MIGRATIONS_PER_TASK_PER_S)?
            .as_f64()
    };
    let (hp, sp): (Vec<f64>, Vec<f64>) = (
        h.iter().filter_map(placement).collect(),
        s.iter().filter_map(placement).collect(),
    );
    if !hp.is_empty() && !sp.is_empty() {
        rows.push(row("migrations per worker per second".into(), hp, sp));
    }
    if host.throughput_unit() == sim.throughput_unit() {
        rows.push(row(
            format!("throughput ({})", host.throughput_unit()),
            h.iter().map(|r| r.throughput.value).collect(),
            s.iter().map(|r| r.throughput.value).collect(),
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(runs: &[(u64, u64)]) -> ResultDoc {
        ResultDoc {
            runs: runs
                .iter()
                .map(|(shoot, steal)| RunResult {
                    counters: [
                        ("tlb_shootdowns".to_string(), *shoot),
                        ("pgsteal_anon".to_string(), *steal),
                    ]
                    .into(),
                    valid: true,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn placement_row_when_both_sides_have_it() {
        let mut host = doc(&[(200, 100), (100, 100)]);
        let mut sim = doc(&[(250, 100)]);
        assert!(!ratio_table(&host, &sim)
            .iter()
            .any(|r| r.ratio.starts_with("migrations")));
        for (r, v) in host.runs.iter_mut().zip([0.1, 0.3]) {
            r.extra.insert(
                "placement".into(),
                serde_json::json!({ MIGRATIONS_PER_TASK_PER_S: v }),
            );
        }
        sim.runs[0].extra.insert(
            "placement".into(),
            serde_json::json!({ MIGRATIONS_PER_TASK_PER_S: 0.4 }),
        );
        let t = ratio_table(&host, &sim);
        let r = t
            .iter()
            .find(|r| r.ratio == "migrations per worker per second")
            .unwrap();
        assert_eq!(
            (r.host_min, r.host_max, r.sim),
            (Some(0.1), Some(0.3), Some(0.4))
        );
    }

    /// Several simulations (seeds) give the sim column their median and range; one gives no
    /// range.
    #[test]
    fn several_simulations_give_a_range() {
        let host = doc(&[(50, 100)]);
        let t = ratio_table(&host, &doc(&[(40, 100), (90, 100), (60, 100)]));
        let r = &t[0];
        assert_eq!(r.ratio, "tlb_shootdowns/pgsteal_anon");
        assert_eq!(
            (r.sim, r.sim_min, r.sim_max),
            (Some(0.6), Some(0.4), Some(0.9))
        );
        let one = ratio_table(&host, &doc(&[(40, 100)]));
        assert_eq!((one[0].sim_min, one[0].sim_max), (None, None));
    }

    #[test]
    fn ratios_and_error() {
        let host = doc(&[(200, 100), (100, 100), (300, 100)]);
        let sim = doc(&[(250, 100)]);
        let t = ratio_table(&host, &sim);
        let r = &t[0];
        assert_eq!(r.ratio, "tlb_shootdowns/pgsteal_anon");
        assert_eq!(
            (r.host_median, r.host_min, r.host_max),
            (Some(2.0), Some(1.0), Some(3.0))
        );
        assert_eq!(r.sim, Some(2.5));
        assert_eq!(r.error_pct, Some(25.0));
        assert_eq!(r.within_25pct, Some(true));
        // pswpout is absent in both: ratio 0 = 0, no error.
        let p = t.iter().find(|r| r.ratio.starts_with("pswpout")).unwrap();
        assert_eq!(p.error_pct, Some(0.0));
    }

    #[test]
    fn file_reclaim_uses_file_ratios() {
        let d = |steal_file: u64, scan_file: u64| ResultDoc {
            runs: vec![RunResult {
                counters: [
                    ("pgsteal_file".to_string(), steal_file),
                    ("pgscan_file".to_string(), scan_file),
                ]
                .into(),
                valid: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        let t = ratio_table(&d(100, 220), &d(100, 200));
        let r = t
            .iter()
            .find(|r| r.ratio == "pgscan_file/pgsteal_file")
            .unwrap();
        assert_eq!(r.host_median, Some(2.2));
        assert!(t.iter().all(|r| !r.ratio.ends_with("pgsteal_anon")));
    }

    #[test]
    fn no_steal_means_no_ratio() {
        let t = ratio_table(&doc(&[(5, 0)]), &doc(&[(5, 0)]));
        assert_eq!(t[0].host_median, None);
        assert_eq!(t[0].error_pct, None);
    }
}
