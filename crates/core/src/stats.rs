//! Median/min/max over repetitions: real runs are noisy, so we report order statistics.

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// None for an empty series. NaNs sort last and are never the median of a non-NaN majority.
pub fn summarize(v: &[f64]) -> Option<Summary> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    let median = if !n.is_multiple_of(2) {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    Some(Summary {
        median,
        min: s[0],
        max: s[n - 1],
    })
}

/// Relative change from `before` to `after`, in percent; None when `before` is zero.
pub fn pct_change(before: f64, after: f64) -> Option<f64> {
    if before == 0.0 {
        None
    } else {
        Some((after - before) / before.abs() * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistics() {
        assert_eq!(summarize(&[]), None);
        let s = summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(summarize(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert_eq!(pct_change(200.0, 150.0), Some(-25.0));
        assert_eq!(pct_change(0.0, 1.0), None);
    }
}
