//! The text tables' style, chosen once per process: box drawing on a terminal with a UTF-8
//! locale, plain ASCII otherwise (a pipe, a mail, `LANG=C`).

use super::Format;
use comfy_table::presets::{ASCII_FULL_CONDENSED, UTF8_FULL_CONDENSED};
use comfy_table::{CellAlignment, Table};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

/// Text tables in plain ASCII (set once, before anything is printed).
pub(super) static ASCII: AtomicBool = AtomicBool::new(false);

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
pub fn styled(s: String) -> String {
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
pub fn cells(row: Vec<String>) -> Vec<String> {
    if ascii() {
        row.iter().map(|c| to_ascii(c)).collect()
    } else {
        row
    }
}

/// A table in this process's style with `header`, every column but the first right-aligned.
pub fn table(header: &[&str]) -> Table {
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
}
