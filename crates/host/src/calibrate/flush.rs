//! Local TLB flushes, timed through mprotect in a single-threaded mm (no other CPU runs it, so
//! flush_tlb_mm_range flushes only this CPU).
//!
//! mprotect of n present pages changes n PTEs and flushes: one INVLPG per page up to
//! tlb_single_page_flush_ceiling (33), the whole ASID above it (flush_tlb_mm_range). The same
//! mprotect over n PTEs that are none (page table present, pages zapped) changes and flushes
//! nothing. Their difference, against n:
//! - n <= 32: slope = PTE change + INVLPG per page;
//! - n > 33: slope = PTE change per page, intercept = one full flush.
//!
//! So `local_flush_one` = low slope − high slope (one INVLPG) and `local_flush_all` = high
//! intercept: the whole-ASID flush with whatever fixed work the flush path adds. The low
//! intercept is the fixed work of a ranged flush of a few pages, which the simulator does not
//! charge (it charges n × `local_flush_one`): a check.

use super::mem::{ns_since, pin, Region};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Page counts timed at or below the ceiling (one INVLPG each)...
pub const LOW: [usize; 6] = [1, 2, 4, 8, 16, 32];
/// ... and above it (one full flush).
pub const HIGH: [usize; 4] = [40, 64, 128, 256];
/// The kernel's default tlb_single_page_flush_ceiling (arch/x86/mm/tlb.c).
pub const CEILING: usize = 33;

/// One sample: for each n, ns per mprotect call over present PTEs and over none PTEs.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Series {
    pub n: Vec<usize>,
    pub present: Vec<f64>,
    pub none: Vec<f64>,
}

/// Median ns of one mprotect call over `iters` pairs (write off, write on), each pair timed on
/// its own so that an interrupted pair is an outlier, not part of a mean.
fn time_calls(r: &Region, n: usize, iters: usize) -> Result<f64> {
    let mut v = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        r.protect(0, n, false)?;
        r.protect(0, n, true)?;
        v.push(ns_since(t) / 2.0);
    }
    Ok(reclaimlab_core::stats::summarize(&v).map_or(0.0, |s| s.median))
}

/// `samples` series of `iters` mprotect pairs per page count.
pub fn mprotect_series(iters: usize, samples: usize) -> Result<Vec<Series>> {
    pin(0)?;
    let max = HIGH[HIGH.len() - 1];
    // One page past the range stays present in both, so the VMA splits and merges the same way
    // and the page table exists.
    let present = Region::anon(max + 1)?;
    let none = Region::anon(max + 1)?;
    for i in 0..=max {
        present.write(i, 1);
        none.write(i, 1);
    }
    // Zap the pages but keep the page table: MADV_DONTNEED frees pages, not tables.
    // SAFETY: a range inside the mapping.
    unsafe {
        libc::madvise(
            none.page(0).cast(),
            max * super::mem::PAGE,
            libc::MADV_DONTNEED,
        )
    };
    let mut out = Vec::new();
    for _ in 0..samples {
        let mut s = Series::default();
        for n in LOW.into_iter().chain(HIGH) {
            s.n.push(n);
            s.present.push(time_calls(&present, n, iters)?);
            s.none.push(time_calls(&none, n, iters)?);
        }
        out.push(s);
    }
    Ok(out)
}

/// What one series says, in ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// One more page of a ranged flush: INVLPG.
    pub one: f64,
    /// A flush above the ceiling, beyond its PTE changes: the full flush and its fixed work.
    pub all: f64,
    /// The fixed work of a ranged flush (n <= 32), beyond n PTE changes and n INVLPGs.
    pub ranged_fixed: f64,
}

pub fn derive(s: &Series) -> Option<Fit> {
    let pick = |low: bool| -> (Vec<f64>, Vec<f64>) {
        s.n.iter()
            .zip(s.present.iter().zip(&s.none))
            .filter(|(n, _)| (**n <= CEILING) == low)
            .map(|(n, (p, z))| (*n as f64, p - z))
            .unzip()
    };
    let (xl, yl) = pick(true);
    let (xh, yh) = pick(false);
    let (sl, il) = super::stats::linear_fit(&xl, &yl)?;
    let (sh, ih) = super::stats::linear_fit(&xh, &yh)?;
    Some(Fit {
        one: sl - sh,
        all: ih,
        ranged_fixed: il,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_invlpg_and_full_flush_from_a_synthetic_series() {
        // PTE change 10 ns/page, INVLPG 100 ns, a ranged flush's fixed work 1200 ns, a full
        // flush 600 ns; none PTEs cost 1000 ns + 2 ns/page of walking.
        let mut s = Series::default();
        for n in LOW.into_iter().chain(HIGH) {
            let walk = 1000.0 + 2.0 * n as f64;
            let flush = if n <= CEILING {
                1200.0 + 100.0 * n as f64
            } else {
                600.0
            };
            s.n.push(n);
            s.none.push(walk);
            s.present.push(walk + 10.0 * n as f64 + flush);
        }
        let f = derive(&s).unwrap();
        assert!((f.one - 100.0).abs() < 1e-6, "{f:?}");
        assert!((f.all - 600.0).abs() < 1e-6, "{f:?}");
        assert!((f.ranged_fixed - 1200.0).abs() < 1e-6, "{f:?}");
    }

    #[test]
    fn a_short_run_measures_every_count() {
        let v = mprotect_series(3, 1).unwrap();
        assert_eq!(v[0].n.len(), LOW.len() + HIGH.len());
        assert!(v[0].present.iter().all(|t| *t > 0.0));
    }
}
