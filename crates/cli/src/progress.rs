//! Progress bars on stderr (only on a terminal, never with --json): whole things done, or a
//! fraction of a run.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A bar over whole things (`{pos}/{len} UNIT`), on stderr when it is a terminal and not
/// with --json.
pub fn progress_bar(json: bool, unit: &str) -> Option<ProgressBar> {
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::new(1);
    b.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} [{{bar:40}}] {{pos}}/{{len}} {unit} {{msg}} (eta {{eta}})"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    Some(b)
}

/// The style of a bar whose position is in units finer than those its message counts.
fn fraction_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} [{bar:40}] {msg} (eta {eta})")
        .expect("valid template")
        .progress_chars("=> ")
}

/// A bar whose message says how far a run is (`sim`, `bench`).
pub fn fraction_bar(json: bool) -> Option<ProgressBar> {
    let b = progress_bar(json, "")?;
    b.set_style(fraction_style());
    Some(b)
}

/// Bench's progress callback: repetition `i` of `n`, `frac` of the way through.
pub fn show_repetition(bar: &Option<ProgressBar>, i: usize, n: usize, frac: f64) {
    if let Some(b) = bar {
        // The bar moves by thousandths of a repetition; the text counts repetitions.
        b.set_style(fraction_style());
        b.set_length(n as u64 * 1000);
        b.set_position(i as u64 * 1000 + (frac.clamp(0.0, 1.0) * 1000.0) as u64);
        b.set_message(repetition_text(i, n, frac));
    }
}

/// `sim`'s progress: simulated seconds done of the run's (the callback gives nanoseconds).
pub fn sim_progress_text(done_ns: u64, total_ns: u64) -> String {
    let s = |ns: u64| ns as f64 / 1e9;
    format!("{:.1}/{:.1} simulated s", s(done_ns), s(total_ns))
}

/// `bench`'s progress: which repetition, and how far into it.
fn repetition_text(i: usize, n: usize, frac: f64) -> String {
    format!(
        "repetition {} of {n}, {:.0}%",
        (i + 1).min(n),
        frac.clamp(0.0, 1.0) * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_in_the_units_it_names() {
        // The simulator reports nanoseconds; a 60 s run near its end.
        assert_eq!(
            sim_progress_text(59_944_000_000, 60_000_000_000),
            "59.9/60.0 simulated s"
        );
        assert_eq!(sim_progress_text(0, 1_000_000_000), "0.0/1.0 simulated s");
        assert_eq!(repetition_text(1, 3, 0.45), "repetition 2 of 3, 45%");
        assert_eq!(repetition_text(3, 3, 1.0), "repetition 3 of 3, 100%");
    }
}
