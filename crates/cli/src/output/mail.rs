//! `--format mail`: what a kernel developer quotes in a cover letter. First the configuration
//! (one line per item; where the two sides differ, both values), then fixed-width plain-ASCII
//! columns with readable metric names, and notes wrapped to a mail's width.

use super::style::to_ascii;
use comfy_table::{CellAlignment, Table};
use reclaimlab_core::compare::{fmt_num, readable_name, Comparison};
use reclaimlab_core::scenario::fmt_duration;
use reclaimlab_core::units::fmt_size;
use reclaimlab_core::ResultDoc;
use serde_json::Value;

/// Width the notes are wrapped to (a quoted mail line stays under 80 columns).
const WRAP: usize = 72;
/// Width of the header's labels ("memcg limit: ").
const LABEL: usize = 14;

/// How the rows are named and which are shown.
#[derive(Clone, Copy, Debug, Default)]
pub struct MailOpts {
    /// Every counter, and the wall-clock row.
    pub all: bool,
    /// The /proc/vmstat keys instead of readable names.
    pub raw_names: bool,
}

fn metric(key: &str, unit: &str, o: MailOpts) -> String {
    if !o.raw_names {
        readable_name(key, unit)
    } else if key == "throughput" && !unit.is_empty() {
        format!("throughput ({unit})")
    } else {
        key.to_string()
    }
}

/// What a side ran: its policy (sim) or kernel release (host).
fn kernel(d: &ResultDoc) -> String {
    if d.policy.is_empty() {
        d.kernel.clone()
    } else {
        d.policy.clone()
    }
}

fn backend(d: &ResultDoc) -> String {
    match d.backend.as_str() {
        "sim" => {
            let profile = d.config["machine"]["profile"]
                .as_str()
                .map_or(String::new(), |p| format!(", machine profile {p}"));
            format!("reclaimlab sim (the simulator){profile}")
        }
        "host" => "reclaimlab bench (the live kernel, in a memcg)".into(),
        other => other.into(),
    }
}

/// A machine's memory: exact when a whole number of megabytes, else to a tenth of its unit
/// (a host's MemTotal is rarely round).
fn memory(b: u64) -> String {
    if b.is_multiple_of(1 << 20) {
        return fmt_size(b);
    }
    let (unit, m) = [("T", 1u64 << 40), ("G", 1 << 30), ("M", 1 << 20)]
        .into_iter()
        .find(|(_, m)| b >= *m)
        .unwrap_or(("K", 1 << 10));
    format!("{:.1}{unit}", b as f64 / m as f64)
}

fn swap(d: &ResultDoc) -> String {
    let s = &d.machine.swap;
    match s.kind.as_str() {
        "none" | "" => "none".into(),
        "sim" if s.devices.iter().any(|d| d == "block-model") => {
            format!("{} (block device model)", fmt_size(s.bytes))
        }
        "sim" => format!("{} (zram model)", fmt_size(s.bytes)),
        "zram" => format!("{} zram", fmt_size(s.bytes)),
        _ if s.devices.is_empty() => fmt_size(s.bytes),
        _ => format!("{} ({})", fmt_size(s.bytes), s.devices.join(", ")),
    }
}

/// A scenario value as it would be written: sizes in K/M/G/T, lists comma-separated.
fn value(key: &str, v: &Value) -> String {
    match v {
        Value::Number(n) if key.contains("bytes") => n.as_u64().map_or(n.to_string(), fmt_size),
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(|x| value("", x)).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

fn workload(d: &ResultDoc) -> String {
    let w = &d.config["workload"];
    let mut s = w["kind"].as_str().unwrap_or(&d.scenario).to_string();
    if let Some(m) = w.as_object() {
        for (k, v) in m.iter().filter(|(k, _)| *k != "kind") {
            s.push_str(&format!(" {k}={}", value(k, v)));
        }
    }
    s
}

/// The simulator's tunables the scenario set (`[sim]`, recorded as written).
fn tunables(d: &ResultDoc) -> String {
    let Some(m) = d.config["sim"].as_object() else {
        return String::new();
    };
    m.iter()
        .map(|(k, v)| {
            let v = v
                .as_str()
                .map_or(v.to_string(), |s| s.trim_matches('"').to_string());
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn runs(d: &ResultDoc) -> String {
    let n = d.runs.len();
    let bad = d.runs.iter().filter(|r| !r.valid).count();
    if bad > 0 {
        format!("{n} ({bad} invalid, left out of the medians)")
    } else {
        n.to_string()
    }
}

/// The header's items, in order: (label, value of one side); an empty value is left out.
fn items(d: &ResultDoc) -> Vec<(&'static str, String)> {
    let c = &d.config;
    let mut v = vec![
        ("Scenario", d.scenario.clone()),
        ("Backend", backend(d)),
        ("Arch", d.machine.arch.clone()),
        ("CPUs", d.machine.cpus.to_string()),
        ("Memory", memory(d.machine.memory_bytes)),
        ("Swap", swap(d)),
        (
            "memcg limit",
            c["memcg"]["limit_bytes"]
                .as_u64()
                .map_or("none".into(), fmt_size),
        ),
        ("Workload", workload(d)),
        ("Command", d.workload_command.clone().unwrap_or_default()),
        ("Tunables", tunables(d)),
        (
            "Duration",
            c["run"]["duration_ns"]
                .as_u64()
                .map_or(String::new(), fmt_duration),
        ),
    ];
    if d.backend == "sim" {
        v.push((
            "Seed",
            c["run"]["seed"]
                .as_u64()
                .map_or(String::new(), |s| s.to_string()),
        ));
    }
    v
}

fn line(out: &mut String, label: &str, value: &str) {
    let l = if label.is_empty() {
        String::new()
    } else {
        format!("{label}:")
    };
    out.push_str(&format!("{l:<LABEL$}{value}\n"));
}

/// Word-wrap `text` to [`WRAP`] columns, continuation lines indented by `indent`.
fn wrap(text: &str, indent: usize) -> String {
    let mut out = String::new();
    let mut col = 0;
    for w in text.split_whitespace() {
        if col > indent && col + 1 + w.len() > WRAP {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
        } else if col > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(w);
        col += w.len();
    }
    out
}

/// Fixed-width columns: the first left-aligned, the others right-aligned three spaces apart,
/// a dashed line under the header, no trailing blanks.
fn columns(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut t = Table::new();
    // Only the line under the header is drawn.
    // Cells spelled in ASCII before the widths are measured (the mail text is ASCII).
    t.load_preset("     -             ")
        .set_header(header.iter().map(|h| to_ascii(h)).collect::<Vec<_>>());
    for r in rows {
        t.add_row(r.iter().map(|c| to_ascii(c)).collect::<Vec<_>>());
    }
    for (i, c) in t.column_iter_mut().enumerate() {
        if i == 0 {
            c.set_padding((0, 0));
        } else {
            c.set_padding((3, 0));
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let s = t.to_string();
    s.lines()
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `compare --format mail`.
pub fn compare_mail(c: &Comparison, b: &ResultDoc, a: &ResultDoc, o: MailOpts) -> String {
    let mut out = String::new();
    if !c.differences.is_empty() {
        out.push_str("NOT LIKE FOR LIKE (--allow-mismatch):\n");
        for d in &c.differences {
            out.push_str(&format!("  {}\n", wrap(d, 2)));
        }
        out.push('\n');
    }
    line(&mut out, "Before", &kernel(b));
    line(&mut out, "After", &kernel(a));
    for ((label, vb), (_, va)) in items(b).into_iter().zip(items(a)) {
        if vb == va {
            if !vb.is_empty() {
                line(&mut out, label, &wrap(&vb, LABEL));
            }
        } else {
            line(&mut out, label, &wrap(&format!("{vb} (before)"), LABEL));
            line(&mut out, "", &wrap(&format!("{va} (after)"), LABEL));
        }
    }
    let (rb, ra) = (runs(b), runs(a));
    if rb == ra {
        line(&mut out, "Runs", &format!("{rb} per side"));
    } else {
        line(&mut out, "Runs", &format!("{rb} before, {ra} after"));
    }
    out.push('\n');
    let shown: Vec<_> = c
        .rows
        .iter()
        .filter(|r| o.all || r.metric != "wall_seconds")
        .collect();
    let any_ns = shown.iter().any(|r| r.not_significant());
    let rows = shown
        .iter()
        .map(|r| {
            let mut row = vec![
                metric(&r.metric, &c.throughput_unit, o),
                fmt_num(r.before),
                fmt_num(r.after),
                format!(
                    "{}{}",
                    if r.delta >= 0.0 { "+" } else { "" },
                    fmt_num(r.delta)
                ),
                r.delta_pct.map_or("n/a".into(), |p| {
                    format!("{}{p:.1}%", if p >= 0.0 { "+" } else { "" })
                }),
            ];
            if any_ns {
                row.push(if r.not_significant() { "n.s." } else { "" }.into());
            }
            row
        })
        .collect();
    let mut header = vec!["", "before", "after", "delta", "delta %"];
    if any_ns {
        header.push("");
    }
    out.push_str(&columns(&header, rows));
    out.push('\n');
    if any_ns {
        out.push_str(&format!(
            "\n{}\n",
            wrap("n.s.: the min-max ranges of the two sides overlap.", 0)
        ));
    }
    for n in &c.notes {
        out.push_str(&format!("\nNote: {}\n", wrap(n, 6)));
    }
    to_ascii(&out)
}

/// `sim`/`bench --format mail`: one result's configuration and counters (those not zero,
/// unless `all`).
pub fn result_mail(d: &ResultDoc, keys: &[&str], o: MailOpts) -> String {
    let mut out = String::new();
    line(&mut out, "Kernel", &kernel(d));
    for (label, v) in items(d) {
        if !v.is_empty() {
            line(&mut out, label, &wrap(&v, LABEL));
        }
    }
    line(&mut out, "Runs", &runs(d));
    out.push('\n');
    let multi = d.runs.len() > 1;
    let unit = d.throughput_unit();
    let rows = keys
        .iter()
        .filter(|k| o.all || (**k != "wall_seconds" && d.median[**k] != 0.0))
        .map(|k| {
            let mut row = vec![metric(k, unit, o), fmt_num(d.median[*k])];
            if multi {
                row.extend([fmt_num(d.min[*k]), fmt_num(d.max[*k])]);
            }
            row
        })
        .collect();
    let header: &[&str] = if multi {
        &["", "median", "min", "max"]
    } else {
        &["", "value"]
    };
    out.push_str(&columns(header, rows));
    out.push('\n');
    to_ascii(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes() {
        assert_eq!(memory(32 << 30), "32G");
        assert_eq!(memory(25276502016), "23.5G");
        assert_eq!(memory(1536 << 20), "1536M");
    }

    #[test]
    fn wraps_at_mail_width() {
        let long = "word ".repeat(40);
        let w = wrap(&long, 6);
        assert!(w.lines().all(|l| l.len() <= WRAP), "{w}");
        assert!(w.lines().skip(1).all(|l| l.starts_with("      w")), "{w}");
    }

    #[test]
    fn columns_align_right_and_trim() {
        let s = columns(
            &["", "before", "after"],
            vec![
                vec!["TLB shootdowns".into(), "1".into(), "22".into()],
                vec!["x".into(), "333".into(), "4".into()],
            ],
        );
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 4, "{s}");
        assert!(lines[1].chars().all(|c| c == '-'), "{s}");
        assert!(lines.iter().all(|l| l.len() == lines[1].len()), "{s}");
        assert!(lines[2].starts_with("TLB shootdowns   "), "{s}");
    }
}
