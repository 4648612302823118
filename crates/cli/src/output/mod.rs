//! The one output layer. A command hands what it reports (a [`Report`]) to [`print()`] with
//! the format it was asked for; each format's renderer is a module here (text tables,
//! Markdown, mail), JSON is the reported value's own serialisation. Result files
//! ([`file`](mod@file)) and plots ([`plot`]) are written from here too.

pub mod file;
pub mod mail;
pub mod markdown;
pub mod plot;
mod report;
pub mod style;
pub mod text;

pub use report::*;

use anyhow::Result;
use reclaimlab_core::compare::HEADLINE;
use reclaimlab_core::ResultDoc;

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

/// What a command prints, in every format it has. Each method returns the whole text, with
/// its final newline.
pub trait Report {
    /// The table for people.
    fn text(&self) -> String;
    /// The reported value as pretty-printed JSON.
    fn json(&self) -> Result<String>;
    /// The Markdown form (a report without one prints its text).
    fn markdown(&self) -> String {
        self.text()
    }
    /// The form to quote in a mail (a report without one prints its text, which is ASCII in
    /// any format but `text`: `style::set_style`).
    fn mail(&self) -> String {
        self.text()
    }
}

/// Print `r` in `format` on stdout.
pub fn print(r: &dyn Report, format: Format) -> Result<()> {
    let s = match format {
        Format::Text => r.text(),
        Format::Mail => r.mail(),
        Format::Markdown => r.markdown(),
        Format::Json => r.json()?,
    };
    write(&s);
    Ok(())
}

/// Write `s` to stdout as it is. A closed pipe (`... | head`) ends the process quietly
/// instead of panicking: by then every result is written and bench has cleaned up.
pub fn write(s: &str) {
    use std::io::Write as _;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(s.as_bytes()).and_then(|_| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        panic!("failed printing to stdout: {e}");
    }
}

/// `v` as pretty-printed JSON with a final newline: stdout's JSON and a result file's.
pub fn json_text<T: serde::Serialize + ?Sized>(v: &T) -> Result<String> {
    Ok(format!("{}\n", serde_json::to_string_pretty(v)?))
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
