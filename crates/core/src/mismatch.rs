//! Whether two results may be compared: the same scenario under the same configuration (only
//! the kernel may differ — that is what a Before/After table is for), each with valid runs and
//! sane figures. `compare` refuses otherwise, listing what differs.

use crate::compare::{compare, Comparison};
use crate::result::ResultDoc;
use crate::units::{clip, clip_raw};
use serde_json::Value;
use std::collections::BTreeMap;

/// Largest figure a result can hold: counters are 64-bit.
const MAX_FIGURE: f64 = u64::MAX as f64;

/// Config keys that may differ between Before and After: the kernel under test, and text.
fn may_differ(key: &str) -> bool {
    key == "kernel" || key.starts_with("kernel.") || key == "description"
}

/// `config` flattened to dotted keys (`workload.no_madvise` → `false`).
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// The Before/After table of two results, refused (with the reasons) when either result is
/// unusable or, unless `allow_mismatch`, when they differ in more than the kernel; allowed
/// differences head the table.
pub fn checked_compare(
    before: &ResultDoc,
    after: &ResultDoc,
    all: bool,
    allow_mismatch: bool,
    side_sets: &[String],
) -> Result<Comparison, String> {
    let bad: Vec<String> = [unusable("before", before), unusable("after", after)].concat();
    if !bad.is_empty() {
        return Err(format!(
            "cannot compare these results:\n  {}",
            bad.join("\n  ")
        ));
    }
    // Keys set per side (compare's --before-set/--after-set) differ by request: named under
    // the table, not refused.
    let (by_side, differences) =
        split_side_differences(config_differences(before, after), side_sets);
    if !differences.is_empty() && !allow_mismatch {
        return Err(format!(
            "the two results differ in more than the kernel, so their deltas would not \
             measure the kernel:\n  {}\n(--allow-mismatch compares them anyway, with these \
             differences in the table's header)",
            differences.join("\n  ")
        ));
    }
    let mut c = compare(before, after, all);
    c.differences = differences;
    for d in by_side {
        c.notes.push(format!(
            "the sides differ by --before-set/--after-set in {d}"
        ));
    }
    Ok(c)
}

/// Split configuration differences into those of keys in `side_sets` (KEY=VALUE) and the rest.
fn split_side_differences(
    differences: Vec<String>,
    side_sets: &[String],
) -> (Vec<String>, Vec<String>) {
    let keys: Vec<&str> = side_sets
        .iter()
        .filter_map(|s| s.split_once('=').map(|(k, _)| k.trim()))
        .collect();
    differences
        .into_iter()
        .partition(|d| keys.iter().any(|k| d.starts_with(&format!("{k}: "))))
}

/// Configuration differences between two results, one line per key (kernel keys excluded).
pub fn config_differences(before: &ResultDoc, after: &ResultDoc) -> Vec<String> {
    let mut d = Vec::new();
    if before.scenario != after.scenario {
        d.push(format!(
            "scenario: {} vs {}",
            clip(&before.scenario),
            clip(&after.scenario)
        ));
    }
    if before.throughput_unit() != after.throughput_unit() {
        d.push(format!(
            "throughput unit: {} vs {}",
            clip(before.throughput_unit()),
            clip(after.throughput_unit())
        ));
    }
    let (mut b, mut a) = (BTreeMap::new(), BTreeMap::new());
    flatten("", &before.config, &mut b);
    flatten("", &after.config, &mut a);
    let keys: std::collections::BTreeSet<&String> = b.keys().chain(a.keys()).collect();
    for k in keys {
        if may_differ(k) {
            continue;
        }
        let (x, y) = (b.get(k), a.get(k));
        if x != y {
            let show = |v: Option<&String>| v.map_or("(absent)".to_string(), |s| clip_raw(s));
            d.push(format!("{}: {} vs {}", clip_raw(k), show(x), show(y)));
        }
    }
    d
}

/// Problems that make one result unusable in any comparison: no valid run, or a figure that
/// no counter can hold (negative, non-finite, beyond 64 bits).
pub fn unusable(side: &str, d: &ResultDoc) -> Vec<String> {
    let mut p = Vec::new();
    if d.runs.is_empty() {
        p.push(format!("{side}: has no runs"));
    } else if !d.runs.iter().any(|r| r.valid) {
        p.push(format!(
            "{side}: all {} runs are invalid (e.g. OOM kills), so it has no medians to compare",
            d.runs.len()
        ));
    }
    for (name, map) in [("median", &d.median), ("min", &d.min), ("max", &d.max)] {
        for (k, v) in map {
            if !v.is_finite() || *v < 0.0 || *v > MAX_FIGURE {
                p.push(format!(
                    "{side}: {name} {} = {v} is not a counter value",
                    clip(k)
                ));
            }
        }
    }
    for (i, r) in d.runs.iter().enumerate() {
        for (k, v) in [
            ("throughput", r.throughput.value),
            ("wall_seconds", r.wall_seconds),
        ] {
            if !v.is_finite() || v < 0.0 {
                p.push(format!(
                    "{side}: run {} {k} = {v} is not a valid figure",
                    i + 1
                ));
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{RunResult, Throughput, SCHEMA};

    fn doc(scn: &str, unit: &str, config: Value, valid: bool) -> ResultDoc {
        let mut d = ResultDoc {
            schema: SCHEMA.into(),
            scenario: scn.into(),
            backend: "host".into(),
            config,
            runs: vec![RunResult {
                counters: [("tlb_shootdowns".to_string(), 7)].into(),
                throughput: Throughput {
                    value: 1.0,
                    unit: unit.into(),
                },
                valid,
                ..Default::default()
            }],
            ..Default::default()
        };
        d.summarize();
        d
    }

    #[test]
    fn kernel_may_differ_nothing_else() {
        let c = |cpus: u64, preset: &str, nm: bool| {
            serde_json::json!({"machine": {"cpus": cpus}, "kernel": {"preset": preset},
                "workload": {"no_madvise": nm}})
        };
        let b = doc("stress-vm", "bogo", c(2, "6.18", true), true);
        let a = doc("stress-vm", "bogo", c(2, "7.0", true), true);
        assert!(config_differences(&b, &a).is_empty());
        let a = doc("stress-vm", "bogo", c(4, "6.18", false), true);
        let d = config_differences(&b, &a);
        assert_eq!(
            d,
            vec!["machine.cpus: 2 vs 4", "workload.no_madvise: true vs false"]
        );
        let a = doc("anon-sweep", "pages", c(2, "6.18", true), true);
        let d = config_differences(&b, &a);
        assert!(
            d[0].starts_with("scenario:") && d[1].starts_with("throughput unit"),
            "{d:?}"
        );
    }

    #[test]
    fn invalid_only_and_absurd_figures_are_unusable() {
        let b = doc("s", "u", Value::Null, false);
        assert!(unusable("before", &b)[0].contains("all 1 runs are invalid"));
        let mut g = doc("s", "u", Value::Null, true);
        assert!(unusable("after", &g).is_empty());
        g.median.insert("tlb_shootdowns".into(), -1.0);
        g.median.insert("pswpin".into(), 1e308);
        g.median.insert("pswpout".into(), f64::NAN);
        assert_eq!(unusable("after", &g).len(), 3);
    }
}
