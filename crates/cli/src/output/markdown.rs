//! Markdown for docs and mails: a result, the Before/After/Delta comparison, a validation and a
//! validation suite.

use super::text;
use crate::cmd::validate::suite::ConfigResult;
use reclaimlab_core::compare::{fmt_num, Comparison};
use reclaimlab_core::validate::RatioRow;
use reclaimlab_core::ResultDoc;

/// A result as a Markdown table (median, and min and max with several runs).
pub fn result(d: &ResultDoc, all: bool) -> String {
    let multi = d.runs.len() > 1;
    let mut s = format!("{}\n\n", super::text::result_heading(d));
    s.push_str(if multi {
        "| metric | median | min | max |\n| --- | ---: | ---: | ---: |\n"
    } else {
        "| metric | value |\n| --- | ---: |\n"
    });
    for k in super::result_keys(d, all) {
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

/// The comparison as core builds it (its unit tests and fuzzing exercise it there).
pub fn comparison(c: &Comparison) -> String {
    c.markdown()
}

/// A validation's ratios: host median [min–max] beside the sim figure and its relative error.
pub fn validate(rows: &[RatioRow]) -> String {
    let mut s = format!(
        "| {} |\n| --- | ---: | ---: | ---: |\n",
        text::VALIDATE_HEADER.join(" | ")
    );
    for c in text::validate_cells(rows) {
        s.push_str(&format!("| {} |\n", c.join(" | ")));
    }
    s
}

/// The Markdown table of a whole suite: one block of rows per configuration.
pub fn suite(results: &[ConfigResult]) -> String {
    let mut s = String::from(
        "| configuration | ratio | host median [min–max] | sim | sim error |\n\
         | --- | --- | ---: | ---: | ---: |\n",
    );
    for r in results {
        let mut first = true;
        let mut name = || {
            if std::mem::take(&mut first) {
                r.name.clone()
            } else {
                String::new()
            }
        };
        if let Some(e) = &r.error {
            s.push_str(&format!(
                "| {} | failed: {} | | | |\n",
                name(),
                e.replace('\n', " ")
            ));
            continue;
        }
        if let Some(b) = &r.background_from_host {
            s.push_str(&format!(
                "| {} | sim background load (from host) | {} | | |\n",
                name(),
                b.cell()
            ));
        }
        if let Some(p) = &r.placement_from_host {
            s.push_str(&format!(
                "| {} | sim start placement (from host) | {} | | |\n",
                name(),
                text::placement_cell(p)
            ));
            if let Some((h, m)) = &r.docs {
                for l in text::per_run_lines(h, m, p) {
                    s.push_str(&format!("| {} | {} | | | |\n", name(), l));
                }
            }
        }
        for c in text::validate_cells(&r.rows) {
            s.push_str(&format!("| {} | {} |\n", name(), c.join(" | ")));
        }
        s.push_str(&format!(
            "| {} | OOM kills | {} | | |\n",
            name(),
            text::oom_cell(r)
        ));
    }
    s
}
