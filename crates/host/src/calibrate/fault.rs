//! Anonymous faults and resident page access, timed in a fresh single-threaded mm.
//!
//! - A first read of an anonymous page maps the shared zero page (do_anonymous_page without an
//!   allocation): the exception, handle_mm_fault and the PTE install, nothing else. That is what
//!   the simulator's `fault_base` stands for.
//! - A first write allocates, zeroes (clear_page), charges the memcg and adds the folio to the
//!   LRU and the rmap: the whole first-touch path.
//! - clear_page itself is timed in user space with the instruction the kernel uses on ERMS CPUs
//!   (`rep stosb`), over a region larger than the last-level cache.
//! - A resident page's store and load pass: the workload's `touch_page`.
//!
//! Each sample is the median over 2 MiB batches of the time per page.

use super::mem::{batched_median, clear_bytes, clear_page, pin, Region, PAGE};
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// Pages per timed batch: 2 MiB, about one page-table page per batch for the faults.
const BATCH: usize = 512;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Faults {
    /// ns per page, first read (zero-page mapping), one entry per sample.
    pub read: Vec<f64>,
    /// ns per page, first write (allocate, zero, charge, map).
    pub write: Vec<f64>,
}

/// `samples` pairs of (first-read sweep, first-write sweep) over fresh regions of `pages`.
pub fn anon_faults(pages: usize, samples: usize) -> Result<Faults> {
    pin(0)?;
    let mut out = Faults::default();
    for _ in 0..samples {
        let r = Region::anon(pages)?;
        out.read.push(batched_median(pages, BATCH, |i| {
            r.read(i);
        }));
        drop(r);
        let w = Region::anon(pages)?;
        out.write
            .push(batched_median(pages, BATCH, |i| w.write(i, 1)));
    }
    Ok(out)
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Access {
    /// ns per page: `rep stosb` over the page (clear_page_erms).
    pub clear: Vec<f64>,
    /// ns per page: one `rep stosb` over each 2 MiB of the region (the kernel's memset of a
    /// PMD-sized folio in folio_zero_segment).
    #[serde(default)]
    pub clear_2m: Vec<f64>,
    /// ns per page: a store pass (memset) over a resident page.
    pub store: Vec<f64>,
    /// ns per page: a load pass (summing its words) over a resident page.
    pub load: Vec<f64>,
}

/// Passes over a resident region of `pages` (larger than the LLC, so each page comes from
/// memory as a workload streaming over its data set sees it).
pub fn resident_access(pages: usize, samples: usize) -> Result<Access> {
    pin(0)?;
    let r = Region::anon(pages)?;
    for i in 0..pages {
        r.write(i, 1);
    }
    let mut out = Access::default();
    for s in 0..samples {
        out.clear
            .push(batched_median(pages, BATCH, |i| clear_page(r.page(i))));
        // BATCH pages are 2 MiB: one clear per batch.
        out.clear_2m.push(
            batched_median(pages / BATCH, 1, |i| {
                clear_bytes(r.page(i * BATCH), BATCH * PAGE)
            }) / BATCH as f64,
        );
        out.store.push(batched_median(pages, BATCH, |i| {
            // SAFETY: one page inside the region.
            unsafe { std::ptr::write_bytes(r.page(i), s as u8 + 1, PAGE) }
        }));
        let mut sum = 0u64;
        out.load.push(batched_median(pages, BATCH, |i| {
            // SAFETY: one initialised page inside the region, read as words.
            let words = unsafe { std::slice::from_raw_parts(r.page(i) as *const u64, PAGE / 8) };
            sum = sum.wrapping_add(words.iter().fold(0u64, |a, w| a.wrapping_add(*w)));
        }));
        std::hint::black_box(sum);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_runs_give_positive_per_page_figures() {
        let f = anon_faults(64, 2).unwrap();
        assert_eq!((f.read.len(), f.write.len()), (2, 2));
        assert!(f.read.iter().chain(&f.write).all(|v| *v > 0.0));
        let a = resident_access(1024, 2).unwrap();
        assert_eq!(a.clear_2m.len(), 2);
        assert!(a
            .clear
            .iter()
            .chain(&a.clear_2m)
            .chain(&a.store)
            .chain(&a.load)
            .all(|v| *v > 0.0));
    }
}
