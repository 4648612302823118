//! From measurements to simulator costs and model checks.
//!
//! A cost is set only where one measurement (or the difference of two taken back to back)
//! isolates what the `CostTable` field stands for. Whole paths (a first-touch fault, reclaim of
//! a page by type, one CPU against two) are checks: the measured figure beside what the
//! simulator charges along the same path, with its default costs and with this calibration's
//! costs put in, so the remaining gap names a mechanism the model does not charge.

use super::stats::Measurement;
use reclaimlab_core::stats::summarize;
use reclaimlab_sim::cost::CostTable;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A simulator cost derived from measurements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    pub ns: f64,
    pub min: f64,
    pub max: f64,
    /// One derived value per sample.
    pub values: Vec<f64>,
    /// How: the benchmark(s) and the arithmetic.
    pub source: String,
    /// The measurements it comes from (names in `measurements`).
    pub from: Vec<String>,
}

impl Derived {
    /// None when there are no values or the median is not a usable cost (negative: the
    /// difference drowned in noise).
    pub fn new(values: Vec<f64>, source: &str, from: &[&str]) -> Option<Derived> {
        let s = summarize(&values)?;
        if !s.median.is_finite() || s.median < 0.0 {
            return None;
        }
        Some(Derived {
            ns: s.median,
            min: s.min,
            max: s.max,
            values,
            source: source.into(),
            from: from.iter().map(|f| f.to_string()).collect(),
        })
    }
}

/// A whole-path figure against the simulator's charges for the same path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub unit: String,
    pub measured: f64,
    pub min: f64,
    pub max: f64,
    /// What the simulator charges along this path, as a sum of CostTable fields.
    pub sim_charges: String,
    /// That sum with cost.rs's defaults...
    pub sim_default: f64,
    /// ... and with this calibration's measured costs in place of the defaults.
    pub sim_calibrated: f64,
    /// measured / sim_calibrated: what the model still misses on this path.
    pub ratio_calibrated: f64,
    pub note: String,
}

/// Put a measured cost into a table by its name (the table's own names: `CostTable::overlay`).
/// False for a name that is not a simulator cost, or a value that is not a cost.
pub fn set_cost(t: &mut CostTable, name: &str, ns: f64) -> bool {
    t.overlay([(name, ns.max(0.0))]).is_ok()
}

/// The default x86 table with `costs` put in.
pub fn calibrated(costs: &BTreeMap<String, Derived>) -> CostTable {
    let mut t = CostTable::x86();
    for (k, d) in costs {
        set_cost(&mut t, k, d.ns);
    }
    t
}

/// One check: `charges` names the sum, `f` computes it from a table.
pub fn check(
    name: &str,
    m: &Measurement,
    charges: &str,
    f: impl Fn(&CostTable) -> f64,
    costs: &BTreeMap<String, Derived>,
    note: &str,
) -> Check {
    check_values(name, &m.unit, &m.samples, charges, f, costs, note)
}

pub fn check_values(
    name: &str,
    unit: &str,
    values: &[f64],
    charges: &str,
    f: impl Fn(&CostTable) -> f64,
    costs: &BTreeMap<String, Derived>,
    note: &str,
) -> Check {
    let s = summarize(values).unwrap_or(reclaimlab_core::stats::Summary {
        median: f64::NAN,
        min: f64::NAN,
        max: f64::NAN,
    });
    let sim_default = f(&CostTable::x86());
    let sim_calibrated = f(&calibrated(costs));
    Check {
        name: name.into(),
        unit: unit.into(),
        measured: s.median,
        min: s.min,
        max: s.max,
        sim_charges: charges.into(),
        sim_default,
        sim_calibrated,
        ratio_calibrated: if sim_calibrated > 0.0 {
            s.median / sim_calibrated
        } else {
            f64::NAN
        },
        note: note.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_refuses_a_negative_median() {
        assert!(Derived::new(vec![-5.0, -1.0, 2.0], "x", &["m"]).is_none());
        assert!(Derived::new(vec![], "x", &["m"]).is_none());
        let d = Derived::new(vec![3.0, 1.0, 2.0], "x", &["m"]).unwrap();
        assert_eq!((d.ns, d.min, d.max), (2.0, 1.0, 3.0));
    }

    #[test]
    fn checks_use_defaults_and_calibrated_costs() {
        let mut costs = BTreeMap::new();
        costs.insert(
            "fault_base".to_string(),
            Derived::new(vec![1000.0], "t", &["m"]).unwrap(),
        );
        let m = Measurement::new("w", "ns/page", "t", vec![3000.0, 2800.0, 3200.0]).unwrap();
        let c = check(
            "write fault",
            &m,
            "fault_base + zero_page",
            |t| (t.fault_base + t.zero_page) as f64,
            &costs,
            "",
        );
        let d = CostTable::x86();
        assert_eq!(c.sim_default, (d.fault_base + d.zero_page) as f64);
        assert_eq!(c.sim_calibrated, (1000 + d.zero_page) as f64);
        assert!((c.ratio_calibrated - 3000.0 / c.sim_calibrated).abs() < 1e-12);
        assert!(!set_cost(&mut CostTable::x86(), "no_such_cost", 1.0));
        let mut t = CostTable::x86();
        assert!(set_cost(&mut t, "ipi_handle", 2499.6));
        assert_eq!(t.ipi_handle, 2500);
    }
}
