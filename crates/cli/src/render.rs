//! Tables for people: a result's counters, and the Before/After/Delta comparison.

use comfy_table::presets::{ASCII_FULL_CONDENSED, UTF8_FULL_CONDENSED};
use comfy_table::{CellAlignment, Table};
use reclaimlab_core::compare::{fmt_num, Comparison, HEADLINE};
use reclaimlab_core::validate::RatioRow;
use reclaimlab_core::ResultDoc;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

/// `--format`: how a command prints its table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A box-drawn table; plain ASCII when stdout is not a terminal or the locale is not UTF-8.
    #[default]
    Text,
    /// Plain ASCII to quote in a mail (an LKML cover letter): the configuration, then
    /// fixed-width columns with readable metric names.
    Mail,
    /// A Markdown table.
    Markdown,
    /// JSON only (no table, no progress).
    Json,
}

/// Text tables in plain ASCII (set once, before anything is printed).
static ASCII: AtomicBool = AtomicBool::new(false);

/// Whether a locale (the first set of LC_ALL, LC_CTYPE, LANG, as the C library picks it)
/// has a UTF-8 character set.
pub fn utf8_locale(lc_all: Option<&str>, lc_ctype: Option<&str>, lang: Option<&str>) -> bool {
    let locale = [lc_all, lc_ctype, lang]
        .into_iter()
        .flatten()
        .find(|v| !v.is_empty())
        .unwrap_or("C")
        .to_ascii_lowercase();
    locale.contains("utf-8") || locale.contains("utf8")
}

/// Choose the table style for this process: box drawing only for `text` on a terminal with
/// a UTF-8 locale.
pub fn set_style(format: Format) {
    let env = |k| std::env::var(k).ok();
    let unicode = format == Format::Text
        && std::io::stdout().is_terminal()
        && utf8_locale(
            env("LC_ALL").as_deref(),
            env("LC_CTYPE").as_deref(),
            env("LANG").as_deref(),
        );
    ASCII.store(!unicode, Ordering::Relaxed);
}

fn ascii() -> bool {
    ASCII.load(Ordering::Relaxed)
}

/// `s` with the few non-ASCII characters the tables use spelled in ASCII (others become `?`).
pub fn to_ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            c if c.is_ascii() => out.push(c),
            '–' | '—' | '−' => out.push('-'),
            '≥' => out.push_str(">="),
            '≤' => out.push_str("<="),
            'Δ' => out.push_str("delta "),
            '±' => out.push_str("+/-"),
            '×' => out.push('x'),
            '…' => out.push_str("..."),
            'µ' | 'μ' => out.push('u'),
            '→' => out.push_str("->"),
            '≈' => out.push('~'),
            _ => out.push('?'),
        }
    }
    out
}

/// A text table's final form: ASCII when the style says so.
fn styled(s: String) -> String {
    if ascii() {
        to_ascii(&s)
    } else {
        s
    }
}

/// The comfy-table preset of a text table in this process's style.
pub fn preset() -> &'static str {
    if ascii() {
        ASCII_FULL_CONDENSED
    } else {
        UTF8_FULL_CONDENSED
    }
}

/// A row's cells in this process's style: spelled in ASCII before comfy-table measures the
/// columns (spelling the rendered table afterwards would widen cells past their borders).
fn cells(row: Vec<String>) -> Vec<String> {
    if ascii() {
        row.iter().map(|c| to_ascii(c)).collect()
    } else {
        row
    }
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(preset())
        .set_header(cells(header.iter().map(|h| h.to_string()).collect()));
    for i in 1..header.len() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// A result's rows: headline counters first (in the seeds' order), then with `all` every
/// other non-zero counter.
pub fn result_keys(d: &ResultDoc, all: bool) -> Vec<&str> {
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
    keys
}

/// "SCENARIO on BACKEND (POLICY), N CPUs, R runs": the line above a result's table.
fn result_heading(d: &ResultDoc) -> String {
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

/// A result as a Markdown table (median, and min and max with several runs).
pub fn result_markdown(d: &ResultDoc, all: bool) -> String {
    let multi = d.runs.len() > 1;
    let mut s = format!("{}\n\n", result_heading(d));
    s.push_str(if multi {
        "| metric | median | min | max |\n| --- | ---: | ---: | ---: |\n"
    } else {
        "| metric | value |\n| --- | ---: |\n"
    });
    for k in result_keys(d, all) {
        let label = if k == "throughput" {
            format!("throughput ({})", d.throughput_unit())
        } else {
            k.to_string()
        };
        if multi {
            s.push_str(&format!(
                "| {label} | {} | {} | {} |\n",
                fmt_num(d.median[k]),
                fmt_num(d.min[k]),
                fmt_num(d.max[k])
            ));
        } else {
            s.push_str(&format!("| {label} | {} |\n", fmt_num(d.median[k])));
        }
    }
    s
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
                opt(r.sim),
                err,
            ]
        })
        .collect()
}

/// Host median [min–max] beside the sim figure and its relative error.
pub fn validate_table(rows: &[RatioRow], markdown: bool) -> String {
    let texts = validate_cells(rows);
    let header = ["ratio", "host median [min–max]", "sim", "sim error"];
    if markdown {
        let mut s = format!("| {} |\n| --- | ---: | ---: | ---: |\n", header.join(" | "));
        for c in texts.iter() {
            s.push_str(&format!("| {} |\n", c.join(" | ")));
        }
        s
    } else {
        let mut t = table(&header);
        for c in texts {
            t.add_row(cells(c.to_vec()));
        }
        styled(t.to_string())
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
        t.add_row(cells(row));
    }
    styled(format!(
        "Before: {}\nAfter:  {}\n{t}",
        first.comparison.before, first.comparison.after
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locale_picks_the_first_set_variable() {
        assert!(utf8_locale(None, None, Some("en_US.UTF-8")));
        assert!(utf8_locale(Some("C.utf8"), Some("C"), None));
        assert!(!utf8_locale(Some("C"), None, Some("en_US.UTF-8")));
        assert!(utf8_locale(Some(""), None, Some("de_DE.UTF-8")));
        assert!(!utf8_locale(None, None, None));
        assert!(!utf8_locale(None, Some("POSIX"), Some("en_US.UTF-8")));
    }

    #[test]
    fn ascii_spelling() {
        assert_eq!(
            to_ascii("min–max, ≥ 2, Δ%, ±25%"),
            "min-max, >= 2, delta %, +/-25%"
        );
        assert!(to_ascii("┌─┐").is_ascii());
    }

    #[test]
    fn ascii_tables_keep_their_columns_aligned() {
        // Spelled before layout: "±" becoming "+/-" must widen the column, not the row.
        ASCII.store(true, Ordering::Relaxed);
        let row = |ratio: &str, err: f64| reclaimlab_core::validate::RatioRow {
            ratio: ratio.into(),
            host_median: Some(0.5),
            host_min: Some(0.4),
            host_max: Some(0.6),
            sim: Some(0.9),
            error_pct: Some(err),
            within_25pct: Some(err.abs() <= 25.0),
        };
        let t = validate_table(&[row("a/b", 80.0), row("c/d", 1.0)], false);
        assert!(t.is_ascii(), "{t}");
        let widths: std::collections::BTreeSet<usize> = t.lines().map(|l| l.len()).collect();
        assert_eq!(widths.len(), 1, "ragged table:\n{t}");
    }
}
