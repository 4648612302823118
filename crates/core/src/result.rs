//! The result document both backends write (schema `reclaimlab.result/1`, documented in
//! docs/result-schema.md). Counter keys are the kernel's own /proc/vmstat names; the two
//! /proc/interrupts rows are `tlb_shootdowns` (TLB) and `function_call_interrupts` (CAL).

use crate::stats::summarize;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "reclaimlab.result/1";

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Throughput {
    pub value: f64,
    /// e.g. "bogo_ops_per_sec", "pages_per_sec", "reclaim_seconds".
    pub unit: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SwapInfo {
    /// "none", "zram" or "file" (set up for the run), "existing", or "sim".
    pub kind: String,
    pub devices: Vec<String>,
    pub bytes: u64,
    /// Whether any active swap device sits on a rotational disk (its queue/rotational), which
    /// makes swap-in read slot clusters (swap_use_vma_readahead is false while
    /// nr_rotate_swap > 0) and slot allocation use one cursor; absent where not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// The I/O scheduler of the disk under the swap device (queue/scheduler's bracketed
    /// entry: "mq-deadline", "none", ...); absent where not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// The largest request that disk takes in 4 KiB pages of separate folios: the smaller of
    /// queue/max_segments and queue/max_sectors_kb / 4; absent where not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_pages: Option<u32>,
    /// A virtio-blk disk's ring: its descriptors and whether a request takes one
    /// (VIRTIO_RING_F_INDIRECT_DESC) rather than one per segment and two; absent for another
    /// driver or where not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtio_ring: Option<(u32, bool)>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct MachineInfo {
    pub cpus: usize,
    pub memory_bytes: u64,
    pub arch: String,
    /// "v1", "v2", or "sim".
    pub cgroup: String,
    pub swap: SwapInfo,
    /// Host: the scheduler options on the kernel's command line (`sched_*` from
    /// /proc/cmdline), which change placement (validate reads `sched_vcpu_pack`); absent
    /// where none or not recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sched_cmdline: Vec<String>,
}

/// One repetition. `counters` are deltas over the measured run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    pub counters: BTreeMap<String, u64>,
    /// Per-CPU deltas (at least `tlb_shootdowns` and `function_call_interrupts`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_cpu: BTreeMap<String, Vec<u64>>,
    /// The memcg's memory.stat deltas (host) or the simulated memcg's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub memcg_stat: BTreeMap<String, i64>,
    /// Host: measured wall time. Sim: simulated seconds (deterministic), never host time.
    pub wall_seconds: f64,
    pub throughput: Throughput,
    #[serde(default)]
    pub oom_kills: u64,
    /// False when the run must not be averaged in (e.g. OOM kills in a workload that should have none).
    #[serde(default = "yes")]
    pub valid: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Backend-specific extras (trace histograms, per-worker figures, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
    /// Host: the tasks outside the run's memcg during the measured window (crate::foreign).
    /// Absent in documents written before it existed and in sim results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign: Option<crate::foreign::ForeignLoad>,
}

fn yes() -> bool {
    true
}

impl RunResult {
    /// One numeric `field` ("cpu_seconds", "wait_seconds", ...) of the placement record's
    /// tasks of one `kind` ("worker", "helper", "background", ...), in the record's order
    /// (empty without a record).
    pub fn task_values(&self, kind: &str, field: &str) -> Vec<f64> {
        let tasks = self
            .extra
            .get("placement")
            .and_then(|p| p["tasks"].as_array());
        tasks
            .into_iter()
            .flatten()
            .filter(|t| t["kind"] == kind)
            .filter_map(|t| t[field].as_f64())
            .collect()
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ResultDoc {
    pub schema: String,
    pub scenario: String,
    /// "host" or "sim".
    pub backend: String,
    /// Host: `uname -r`. Sim: the modelled kernel preset, e.g. "sim-6.18".
    pub kernel: String,
    /// Sim: preset and patches, e.g. "6.18+batch-dirty-flush". Host: empty.
    #[serde(default)]
    pub policy: String,
    pub machine: MachineInfo,
    /// The fully resolved scenario.
    pub config: serde_json::Value,
    /// Host: the exact workload command line and its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_version: Option<String>,
    pub runs: Vec<RunResult>,
    /// Over the valid runs: every counter key plus `throughput` and `wall_seconds`.
    pub median: BTreeMap<String, f64>,
    pub min: BTreeMap<String, f64>,
    pub max: BTreeMap<String, f64>,
}

impl ResultDoc {
    /// Fill `median`/`min`/`max` from the valid runs (all runs if none is valid).
    pub fn summarize(&mut self) {
        let valid: Vec<&RunResult> = self.runs.iter().filter(|r| r.valid).collect();
        let runs: Vec<&RunResult> = if valid.is_empty() {
            self.runs.iter().collect()
        } else {
            valid
        };
        let mut series: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in &runs {
            for (k, v) in &r.counters {
                series.entry(k.clone()).or_default().push(*v as f64);
            }
            series
                .entry("throughput".into())
                .or_default()
                .push(r.throughput.value);
            series
                .entry("wall_seconds".into())
                .or_default()
                .push(r.wall_seconds);
        }
        self.median.clear();
        self.min.clear();
        self.max.clear();
        for (k, v) in series {
            if let Some(s) = summarize(&v) {
                self.median.insert(k.clone(), s.median);
                self.min.insert(k.clone(), s.min);
                self.max.insert(k, s.max);
            }
        }
    }

    pub fn throughput_unit(&self) -> &str {
        self.runs
            .first()
            .map(|r| r.throughput.unit.as_str())
            .unwrap_or("")
    }

    pub fn from_json(text: &str) -> anyhow::Result<ResultDoc> {
        let d: ResultDoc = serde_json::from_str(text)?;
        if d.schema != SCHEMA {
            anyhow::bail!(
                "unsupported result schema {} (expected {SCHEMA})",
                crate::units::clip(&d.schema)
            );
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(v: u64, thr: f64, valid: bool) -> RunResult {
        RunResult {
            counters: [("pgsteal_anon".to_string(), v)].into(),
            wall_seconds: 1.0,
            throughput: Throughput {
                value: thr,
                unit: "bogo_ops_per_sec".into(),
            },
            valid,
            ..Default::default()
        }
    }

    #[test]
    fn summary_skips_invalid_runs() {
        let mut d = ResultDoc {
            schema: SCHEMA.into(),
            runs: vec![
                run(10, 1.0, true),
                run(30, 3.0, true),
                run(1000, 9.0, false),
                run(20, 2.0, true),
            ],
            ..Default::default()
        };
        d.summarize();
        assert_eq!(d.median["pgsteal_anon"], 20.0);
        assert_eq!(d.min["pgsteal_anon"], 10.0);
        assert_eq!(d.max["throughput"], 3.0);
        let back = ResultDoc::from_json(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn runs_without_a_foreign_record_still_load() {
        let old = r#"{"counters": {"pgsteal_anon": 5}, "wall_seconds": 1.0,
            "throughput": {"value": 2.0, "unit": "pages_per_sec"}}"#;
        let r: RunResult = serde_json::from_str(old).unwrap();
        assert_eq!(r.foreign, None);
        assert!(!serde_json::to_string(&r).unwrap().contains("foreign"));
    }
}
