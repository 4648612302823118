//! Tables for people: a result's counters, and the Before/After/Delta comparison.

use comfy_table::{presets::UTF8_FULL_CONDENSED, CellAlignment, Table};
use reclaimlab_core::compare::{fmt_num, Comparison, HEADLINE};
use reclaimlab_core::validate::RatioRow;
use reclaimlab_core::ResultDoc;

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_header(header.to_vec());
    for i in 1..header.len() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// Headline counters first (in the seeds' order), then every other non-zero counter.
pub fn result_table(d: &ResultDoc, all: bool) -> String {
    let multi = d.runs.len() > 1;
    let mut t = if multi {
        table(&["metric", "median", "min", "max"])
    } else {
        table(&["metric", "value"])
    };
    let mut keys: Vec<&str> = HEADLINE
        .iter()
        .copied()
        .filter(|k| d.median.contains_key(*k))
        .collect();
    // OOM kills (host runs) beside throughput: they make stress-ng's bogo ops/s noisy and an
    // anon-sweep run invalid.
    if d.median.contains_key("oom_kills") {
        let at = keys
            .iter()
            .position(|k| *k == "throughput")
            .map_or(0, |i| i + 1);
        keys.insert(at, "oom_kills");
    }
    if all {
        keys.extend(
            d.median
                .keys()
                .map(String::as_str)
                .filter(|k| !HEADLINE.contains(k) && *k != "oom_kills" && d.median[*k] != 0.0),
        );
    }
    for k in keys {
        let label = if k == "throughput" {
            format!("throughput ({})", d.throughput_unit())
        } else {
            k.to_string()
        };
        let med = fmt_num(d.median[k]);
        if multi {
            t.add_row(vec![label, med, fmt_num(d.min[k]), fmt_num(d.max[k])]);
        } else {
            t.add_row(vec![label, med]);
        }
    }
    let runs = d.runs.len();
    let invalid = d.runs.iter().filter(|r| !r.valid).count();
    let oom: u64 = d.runs.iter().map(|r| r.oom_kills).sum();
    let mut head = format!(
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
    );
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
    format!("{head}\n{t}{notes}")
}

pub fn compare_table(c: &Comparison) -> String {
    let mut t = table(&["Metric", "Before", "After", "Delta (abs / %)"]);
    for r in &c.rows {
        t.add_row(vec![
            c.metric_label(&r.metric),
            fmt_num(r.before),
            fmt_num(r.after),
            r.delta_text(),
        ]);
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
    out
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
                opt(r.sim),
                err,
            ]
        })
        .collect()
}

/// Host median [min–max] beside the sim figure and its relative error.
pub fn validate_table(rows: &[RatioRow], markdown: bool) -> String {
    let cells = validate_cells(rows);
    let header = ["ratio", "host median [min–max]", "sim", "sim error"];
    if markdown {
        let mut s = format!("| {} |\n| --- | ---: | ---: | ---: |\n", header.join(" | "));
        for c in cells {
            s.push_str(&format!("| {} |\n", c.join(" | ")));
        }
        s
    } else {
        let mut t = table(&header);
        for c in cells {
            t.add_row(c.to_vec());
        }
        t.to_string()
    }
}

/// One row per grid point: the varied values, then each headline metric's delta in percent.
pub fn sweep_table(points: &[crate::sweep::Point]) -> String {
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
        t.add_row(row);
    }
    format!(
        "Before: {}\nAfter:  {}\n{t}",
        first.comparison.before, first.comparison.after
    )
}
