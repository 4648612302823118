//! What the benchmarks share: anonymous regions without THP, CPU pinning, the clock, and the page
//! contents each workload writes.

use anyhow::{bail, Context, Result};
use std::time::Instant;

pub const PAGE: usize = 4096;

/// An anonymous private mapping with transparent huge pages off (MADV_NOHUGEPAGE), so every
/// fault is a 4 KiB fault.
pub struct Region {
    ptr: *mut u8,
    len: usize,
}

impl Region {
    pub fn anon(pages: usize) -> Result<Region> {
        let len = pages * PAGE;
        // SAFETY: a fresh anonymous mapping; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context("mmap of an anonymous region");
        }
        // SAFETY: the range was just mapped.
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        Ok(Region { ptr: p.cast(), len })
    }

    pub fn pages(&self) -> usize {
        self.len / PAGE
    }

    pub fn page(&self, i: usize) -> *mut u8 {
        assert!(i < self.pages());
        // SAFETY: inside the mapping.
        unsafe { self.ptr.add(i * PAGE) }
    }

    /// Read one byte of page `i` (a read fault on first access).
    pub fn read(&self, i: usize) -> u8 {
        // SAFETY: inside the live mapping.
        unsafe { std::ptr::read_volatile(self.page(i)) }
    }

    /// Write one byte of page `i` (a write fault on first access).
    pub fn write(&self, i: usize, v: u8) {
        // SAFETY: inside the live, writable mapping.
        unsafe { std::ptr::write_volatile(self.page(i), v) }
    }

    /// Fill page `i` with `data` (one page).
    pub fn fill(&self, i: usize, data: &[u8]) {
        assert_eq!(data.len(), PAGE);
        // SAFETY: one page inside the mapping.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.page(i), PAGE) }
    }

    /// mprotect pages [first, first + n).
    pub fn protect(&self, first: usize, n: usize, write: bool) -> Result<()> {
        let prot = libc::PROT_READ | if write { libc::PROT_WRITE } else { 0 };
        // SAFETY: a page-aligned range inside the mapping.
        if unsafe { libc::mprotect(self.page(first).cast(), n * PAGE, prot) } != 0 {
            return Err(std::io::Error::last_os_error()).context("mprotect");
        }
        Ok(())
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: our mapping, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

// SAFETY: the region is plain memory; the benchmarks synchronise their threads themselves.
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

/// Pin the calling thread to `cpu`.
pub fn pin(cpu: usize) -> Result<()> {
    crate::workers::pin(Some(cpu))
}

/// Nanoseconds since `t`.
pub fn ns_since(t: Instant) -> f64 {
    t.elapsed().as_nanos() as f64
}

/// Run `f(i)` for i in 0..n, timed in batches of `batch`; the median over batches of the ns per
/// item. A batch the scheduler or the hypervisor interrupted is an outlier instead of part of a
/// mean (the machine is shared).
pub fn batched_median(n: usize, batch: usize, mut f: impl FnMut(usize)) -> f64 {
    let mut per = Vec::with_capacity(n / batch.max(1) + 1);
    let mut i = 0;
    while i < n {
        let end = (i + batch.max(1)).min(n);
        let t = Instant::now();
        for k in i..end {
            f(k);
        }
        per.push(ns_since(t) / (end - i) as f64);
        i = end;
    }
    reclaimlab_core::stats::summarize(&per).map_or(0.0, |s| s.median)
}

/// clear_page as x86 kernels with ERMS do it (clear_page_erms: `rep stosb` over the page).
pub fn clear_page(p: *mut u8) {
    clear_bytes(p, PAGE)
}

/// One `rep stosb` of `len` zero bytes at `p`: clear_page_erms for a page, the kernel's memset
/// (__pi_memset) for folio_zero_segment over a whole large folio.
pub fn clear_bytes(p: *mut u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: p points to len writable bytes; rep stosb writes rcx bytes at rdi.
    unsafe {
        std::arch::asm!(
            "rep stosb",
            inout("rcx") len => _,
            inout("rdi") p => _,
            in("al") 0u8,
            options(nostack, preserves_flags)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: p points to len writable bytes.
    unsafe {
        std::ptr::write_bytes(p, 0, len)
    }
}

/// The page contents the project's workloads write, for the zram benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Data {
    /// All zero: zram stores it as a same-filled page without compressing it.
    Zero,
    /// A zero page with one byte changed (what anon-sweep's touch leaves): compresses to almost
    /// nothing, but goes through the compressor.
    Sparse,
    /// A stress-ng-like pattern: 64-bit words counting up from the page's index (its `--vm`
    /// methods write such counters and bit patterns).
    Pattern,
    /// Pseudo-random bytes: incompressible, stored uncompressed after a compression attempt.
    Random,
}

impl Data {
    pub const ALL: [Data; 4] = [Data::Zero, Data::Sparse, Data::Pattern, Data::Random];

    pub fn name(self) -> &'static str {
        match self {
            Data::Zero => "zero",
            Data::Sparse => "sparse",
            Data::Pattern => "pattern",
            Data::Random => "random",
        }
    }

    /// Page `index`'s contents.
    pub fn page(self, index: u64) -> Vec<u8> {
        let mut v = vec![0u8; PAGE];
        match self {
            Data::Zero => {}
            Data::Sparse => v[0] = 1,
            Data::Pattern => {
                for (w, c) in v.chunks_exact_mut(8).enumerate() {
                    c.copy_from_slice(&(index * 512 + w as u64).to_le_bytes());
                }
            }
            Data::Random => {
                // xorshift64*, seeded by the page index: the same bytes on every run.
                let mut x = index.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for c in v.chunks_exact_mut(8) {
                    x ^= x >> 12;
                    x ^= x << 25;
                    x ^= x >> 27;
                    c.copy_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
                }
            }
        }
        v
    }
}

/// A `Data` name as given on the command line or in the raw output.
pub fn data_named(s: &str) -> Result<Data> {
    match Data::ALL.into_iter().find(|d| d.name() == s) {
        Some(d) => Ok(d),
        None => bail!("unknown page data {s:?} (zero, sparse, pattern, random)"),
    }
}

/// Create `path` (it must not exist) with `pages` pages of `data`, flushed to the device (so its
/// cache can be dropped and its blocks are written, not unwritten extents).
pub fn write_data_file(path: &std::path::Path, pages: usize, data: Data) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    for i in 0..pages {
        f.write_all(&data.page(i as u64))?;
    }
    f.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_data_is_deterministic_and_distinct() {
        for d in Data::ALL {
            assert_eq!(d.page(3), d.page(3));
            assert_eq!(d.page(3).len(), PAGE);
            assert_eq!(data_named(d.name()).unwrap(), d);
        }
        assert!(Data::Zero.page(1).iter().all(|b| *b == 0));
        assert_eq!(Data::Sparse.page(1).iter().filter(|b| **b != 0).count(), 1);
        assert_ne!(Data::Random.page(1), Data::Random.page(2));
        assert_ne!(Data::Pattern.page(1), Data::Pattern.page(2));
        assert!(data_named("ones").is_err());
    }

    #[test]
    fn batches_cover_every_item_once() {
        let mut seen = vec![0; 10];
        let v = batched_median(10, 3, |i| seen[i] += 1);
        assert_eq!(seen, vec![1; 10]);
        assert!(v >= 0.0);
    }

    #[test]
    fn region_faults_protects_and_clears() {
        let r = Region::anon(4).unwrap();
        assert_eq!(r.read(0), 0);
        r.write(1, 7);
        assert_eq!(r.read(1), 7);
        r.fill(2, &Data::Pattern.page(0));
        clear_page(r.page(2));
        assert_eq!(r.read(2), 0);
        r.protect(0, 2, false).unwrap();
        assert_eq!(r.read(1), 7);
        r.protect(0, 2, true).unwrap();
        r.write(0, 1);
    }
}
