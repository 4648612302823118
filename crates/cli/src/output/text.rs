//! Text tables for people: a result's counters, the Before/After/Delta comparison, the
//! validation ratios, a sweep's deltas, machine profiles and calibrations.

use super::result_keys;
use super::style::{cells, preset, styled, table};
use crate::cmd::validate::suite::ConfigResult;
use reclaimlab_core::compare::{fmt_num, Comparison};
use reclaimlab_core::profile::{LoadedProfile, Provenance};
use reclaimlab_core::validate::RatioRow;
use reclaimlab_core::ResultDoc;
use reclaimlab_host::calibrate::Calibration;
use reclaimlab_sim::cost::CostTable;

/// "SCENARIO on BACKEND (POLICY), N CPUs, R runs": the line above a result's table.
pub fn result_heading(d: &ResultDoc) -> String {
    let runs = d.runs.len();
    format!(
        "{} on {} ({}), {} CPUs, {} run{}",
        d.scenario,
        d.backend,
        if d.policy.is_empty() {
            &d.kernel
        } else {
            &d.policy
        },
        d.machine.cpus,
        runs,
        if runs == 1 { "" } else { "s" }
    )
}

/// Headline counters first (in the seeds' order), then every other non-zero counter.
pub fn result_table(d: &ResultDoc, all: bool) -> String {
    let multi = d.runs.len() > 1;
    let mut t = if multi {
        table(&["metric", "median", "min", "max"])
    } else {
        table(&["metric", "value"])
    };
    for k in result_keys(d, all) {
        let label = if k == "throughput" {
            format!("throughput ({})", d.throughput_unit())
        } else {
            k.to_string()
        };
        let med = fmt_num(d.median[k]);
        if multi {
            t.add_row(cells(vec![
                label,
                med,
                fmt_num(d.min[k]),
                fmt_num(d.max[k]),
            ]));
        } else {
            t.add_row(cells(vec![label, med]));
        }
    }
    let invalid = d.runs.iter().filter(|r| !r.valid).count();
    let oom: u64 = d.runs.iter().map(|r| r.oom_kills).sum();
    let mut head = result_heading(d);
    if oom > 0 || invalid > 0 {
        head.push_str(&format!(", OOM kills {oom}, invalid runs {invalid}"));
    }
    if let Some(f) = reclaimlab_core::foreign::of_doc(d) {
        head.push_str(&format!("\n{}", reclaimlab_core::foreign::summary(&f)));
    }
    let mut notes = String::new();
    for (i, r) in d.runs.iter().enumerate() {
        let tag = if r.valid {
            ""
        } else {
            " (invalid, left out of the medians)"
        };
        for n in &r.notes {
            notes.push_str(&format!("\nrun {}{tag}: {n}", i + 1));
        }
        if r.notes.is_empty() && !r.valid {
            notes.push_str(&format!("\nrun {}{tag}", i + 1));
        }
    }
    styled(format!("{head}\n{t}{notes}"))
}

pub fn compare_table(c: &Comparison) -> String {
    let mut t = table(&["Metric", "Before", "After", "Delta (abs / %)"]);
    for r in &c.rows {
        t.add_row(cells(vec![
            c.metric_label(&r.metric),
            fmt_num(r.before),
            fmt_num(r.after),
            r.delta_text(),
        ]));
    }
    let mut head = String::new();
    if !c.differences.is_empty() {
        head.push_str("NOT LIKE FOR LIKE (--allow-mismatch):\n");
        for d in &c.differences {
            head.push_str(&format!("  {d}\n"));
        }
    }
    let mut out = format!(
        "{head}Before: {}\nAfter:  {}\n{t}\n(n.s. = min–max ranges overlap; judged only with ≥ 2 valid runs a side)",
        c.before, c.after
    );
    for n in &c.notes {
        out.push_str(&format!("\nNote: {n}"));
    }
    styled(out)
}

fn opt(v: Option<f64>) -> String {
    v.map(fmt_num).unwrap_or_else(|| "-".into())
}

/// The cells of [`validate_table`]: ratio, host median [min–max], sim, sim error.
pub fn validate_cells(rows: &[RatioRow]) -> Vec<[String; 4]> {
    rows.iter()
        .map(|r| {
            let err = match r.error_pct {
                Some(e) => format!(
                    "{e:+.1}%{}",
                    if e.abs() <= 25.0 {
                        ""
                    } else {
                        " (outside ±25%)"
                    }
                ),
                None => "-".into(),
            };
            [
                r.ratio.clone(),
                format!(
                    "{} [{}–{}]",
                    opt(r.host_median),
                    opt(r.host_min),
                    opt(r.host_max)
                ),
                match (r.sim_min, r.sim_max) {
                    (Some(lo), Some(hi)) => {
                        format!("{} [{}–{}]", opt(r.sim), opt(Some(lo)), opt(Some(hi)))
                    }
                    _ => opt(r.sim),
                },
                err,
            ]
        })
        .collect()
}

/// The header of the validation table (text and Markdown).
pub const VALIDATE_HEADER: [&str; 4] = ["ratio", "host median [min–max]", "sim", "sim error"];

/// Host median [min–max] beside the sim figure and its relative error.
pub fn validate_table(rows: &[RatioRow]) -> String {
    let mut t = table(&VALIDATE_HEADER);
    for c in validate_cells(rows) {
        t.add_row(cells(c.to_vec()));
    }
    styled(t.to_string())
}

/// One row per grid point: the varied values, then each headline metric's delta in percent.
pub fn sweep_table(points: &[reclaimlab_core::sweep::Point]) -> String {
    let Some(first) = points.first() else {
        return String::new();
    };
    let metrics = [
        "throughput",
        "tlb_shootdowns",
        "function_call_interrupts",
        "pgsteal_anon",
    ];
    let mut header: Vec<String> = first.at.iter().map(|(k, _)| k.clone()).collect();
    header.extend(metrics.iter().map(|m| format!("{m} Δ%")));
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = table(&h);
    for p in points {
        let mut row: Vec<String> = p.at.iter().map(|(_, v)| v.clone()).collect();
        for m in metrics {
            let cell = p
                .comparison
                .rows
                .iter()
                .find(|r| r.metric == m)
                .map(|r| match r.delta_pct {
                    Some(d) => format!("{d:+.1}%"),
                    None => "n/a".into(),
                })
                .unwrap_or_else(|| "-".into());
            row.push(cell);
        }
        t.add_row(cells(row));
    }
    styled(format!(
        "Before: {}\nAfter:  {}\n{t}",
        first.comparison.before, first.comparison.after
    ))
}

/// `1:1;0,1:0 ×2, 0:0;1:1 ×1`: each distinct start placement and how many host runs had it.
pub fn placement_cell(p: &[String]) -> String {
    let mut n: std::collections::BTreeMap<&str, usize> = Default::default();
    for x in p {
        *n.entry(x.as_str()).or_default() += 1;
    }
    n.iter()
        .map(|(k, v)| format!("{k} ×{v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--placement-from-host`: one line per host run beside the simulation of its start, since
/// the medians of a bimodal row hide which mode each run was in.
pub fn per_run_lines(host: &ResultDoc, sim: &ResultDoc, placements: &[String]) -> Vec<String> {
    let tlb = |r: &reclaimlab_core::RunResult| {
        let c = &r.counters;
        let steal = c.get("pgsteal_anon").copied().unwrap_or(0)
            + c.get("pgsteal_file").copied().unwrap_or(0);
        c.get("tlb_shootdowns").copied().unwrap_or(0) as f64 / steal.max(1) as f64
    };
    host.runs
        .iter()
        .filter(|r| r.valid)
        .zip(&sim.runs)
        .zip(placements)
        .enumerate()
        .map(|(i, ((h, m), p))| {
            format!(
                "run {}: start {p}: TLB shootdowns/steal host {:.3}, model {:.3}; throughput host {:.0}, model {:.0} ({:+.1}%)",
                i + 1,
                tlb(h),
                tlb(m),
                h.throughput.value,
                m.throughput.value,
                (m.throughput.value / h.throughput.value.max(1e-9) - 1.0) * 100.0
            )
        })
        .collect()
}

/// `--placement-from-host` above a validation table: the placements, then (with both
/// documents) each host run beside its simulation.
pub fn placement_lines(docs: Option<(&ResultDoc, &ResultDoc)>, p: &[String]) -> String {
    let mut s = format!(
        "start placement from host (MAIN_CPUS:SWEEPER_CPUS per process): {}\n",
        placement_cell(p)
    );
    if let Some((h, m)) = docs {
        for l in per_run_lines(h, m, p) {
            s.push_str(&format!("  {l}\n"));
        }
    }
    s
}

/// A suite configuration's OOM kills: each host run's, and the simulation's.
pub fn oom_cell(r: &ConfigResult) -> String {
    let k: Vec<String> = r.host_oom_kills.iter().map(|k| k.to_string()).collect();
    format!(
        "host {} (valid runs {}/{}), sim {}",
        if k.is_empty() {
            "-".into()
        } else {
            k.join(", ")
        },
        r.host_valid_runs,
        r.host_runs,
        r.sim_oom_kills
    )
}

/// `validate --suite`: one configuration, printed as it finishes.
pub fn suite_config(r: &ConfigResult) -> String {
    let mut s = format!("{} ({}; {:.0} s)\n", r.name, r.sets.join(" "), r.seconds);
    match &r.error {
        Some(e) => s.push_str(&format!("  failed: {e}\n\n")),
        None => {
            if let Some(b) = &r.background_from_host {
                s.push_str(&format!("{}\n", b.summary()));
            }
            if let Some(p) = &r.placement_from_host {
                let docs = r.docs.as_ref().map(|(h, m)| (h, m));
                s.push_str(&placement_lines(docs, p));
            }
            s.push_str(&format!("{}\n", validate_table(&r.rows)));
            s.push_str(&format!("OOM kills: {}\n\n", oom_cell(r)));
        }
    }
    s
}

/// `profiles`: one line per shipped profile.
pub fn profile_list(all: &[LoadedProfile]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(preset());
    t.set_header([
        "name",
        "CPU model",
        "arch",
        "CPUs",
        "kernel",
        "date",
        "measured",
        "published",
        "estimate",
    ]);
    for p in all {
        let c = p.profile.counts();
        let n = |k| c.get(&k).copied().unwrap_or(0).to_string();
        let m = &p.profile.machine;
        t.add_row([
            p.profile.profile.name.clone(),
            m.cpu_model.clone(),
            m.arch.clone(),
            m.cpus.to_string(),
            m.kernel.clone(),
            m.date.clone(),
            n(Provenance::Measured),
            n(Provenance::Published),
            n(Provenance::Estimate),
        ]);
    }
    format!("{t}\n")
}

/// `profiles NAME`: every cost with its provenance and source.
pub fn profile_detail(p: &LoadedProfile) -> String {
    let m = &p.profile.machine;
    let mut out = format!(
        "{} ({})\n{}\nCPU: {}, {} ({} CPUs), kernel {}, figures of {}\n",
        p.profile.profile.name,
        p.origin,
        p.profile.profile.description,
        m.cpu_model,
        m.arch,
        m.cpus,
        m.kernel,
        m.date
    );
    let mut t = comfy_table::Table::new();
    t.load_preset(preset());
    // Wrap the long source column at the terminal's width (or 160 columns in a pipe).
    t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    if t.width().is_none() {
        t.set_width(160);
    }
    t.set_header(["cost", "ns", "provenance", "source"]);
    for (name, c) in &p.profile.costs {
        let mut src = c.source.clone();
        if let Some(r) = &c.raw {
            src.push_str(&format!(" [raw: {r}]"));
        }
        if let Some([lo, hi]) = c.spread {
            src.push_str(&format!(" [spread {lo}-{hi}]"));
        }
        t.add_row([
            name.clone(),
            format!("{}", c.ns),
            c.provenance.as_str().to_string(),
            src,
        ]);
    }
    out.push_str(&format!("{t}\n"));
    out
}

fn num(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// The default value of a cost, by its CostTable field name.
fn default_of(name: &str) -> Option<u64> {
    serde_json::to_value(CostTable::x86())
        .ok()?
        .get(name)?
        .as_u64()
}

/// Measurements, costs (beside cost.rs's defaults) and checks, as tables.
pub fn calibration(cal: &Calibration) -> String {
    let mut m = table(&["benchmark", "median", "min", "max", "unit", "samples"]);
    for x in &cal.measurements {
        m.add_row(vec![
            x.name.clone(),
            num(x.median),
            num(x.min),
            num(x.max),
            x.unit.clone(),
            x.samples.len().to_string(),
        ]);
    }
    let mut c = table(&[
        "cost (ns)",
        "measured",
        "min",
        "max",
        "cost.rs default",
        "from",
    ]);
    for (k, d) in &cal.costs {
        c.add_row(vec![
            k.clone(),
            num(d.ns),
            num(d.min),
            num(d.max),
            default_of(k).map_or("-".into(), |v| v.to_string()),
            d.from.join(", "),
        ]);
    }
    let mut k = table(&[
        "check",
        "measured",
        "sim (defaults)",
        "sim (calibrated)",
        "measured / sim",
        "unit",
    ]);
    for x in &cal.checks {
        k.add_row(vec![
            x.name.clone(),
            num(x.measured),
            num(x.sim_default),
            num(x.sim_calibrated),
            num(x.ratio_calibrated),
            x.unit.clone(),
        ]);
    }
    let mut s = format!("{m}\n\n{c}\n\n{k}\n");
    for n in &cal.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s.push_str(&format!(
        "{:.0} s; load average before each family and at the end: {}\n",
        cal.seconds,
        cal.loadavg
            .iter()
            .map(|l| l.split_whitespace().next().unwrap_or("?"))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_tables_keep_their_columns_aligned() {
        // Spelled before layout: "±" becoming "+/-" must widen the column, not the row.
        super::super::style::ASCII.store(true, std::sync::atomic::Ordering::Relaxed);
        let row = |ratio: &str, err: f64| reclaimlab_core::validate::RatioRow {
            ratio: ratio.into(),
            host_median: Some(0.5),
            host_min: Some(0.4),
            host_max: Some(0.6),
            sim: Some(0.9),
            sim_min: None,
            sim_max: None,
            error_pct: Some(err),
            within_25pct: Some(err.abs() <= 25.0),
        };
        let t = validate_table(&[row("a/b", 80.0), row("c/d", 1.0)]);
        assert!(t.is_ascii(), "{t}");
        let widths: std::collections::BTreeSet<usize> = t.lines().map(|l| l.len()).collect();
        assert_eq!(widths.len(), 1, "ragged table:\n{t}");
    }
}
