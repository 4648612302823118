//! A file read fault with readahead: a sequential read sweep over a mapping of a file that is
//! not in the page cache (filemap_fault → page_cache_sync_ra / async readahead, the device
//! reads, fault-around), against the same sweep once the file is cached (filemap_map_pages
//! only). Their difference per page is what filling the page cache from the device costs,
//! amortised by readahead: the simulator's `file_read_page`.

use super::mem::{ns_since, pin, Data, PAGE};
use crate::workers::Mapping;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Instant;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ReadSweep {
    /// ns per page, file not cached.
    pub cold: Vec<f64>,
    /// ns per page, file cached.
    pub warm: Vec<f64>,
    /// Major faults per page during the cold sweep.
    pub majflt_per_page: Vec<f64>,
    /// Pages still cached after dropping the file's cache (should be 0).
    pub resident_before_cold: Vec<u64>,
    /// ns per page, a fallocated file never written (unwritten extents: the page cache is
    /// filled by zeroing, no device read), swept in index order and in a shuffled order.
    #[serde(default)]
    pub unwritten_seq: Vec<f64>,
    #[serde(default)]
    pub unwritten_random: Vec<f64>,
}

fn majflt() -> i64 {
    // SAFETY: getrusage fills the struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u.ru_majflt
}

/// Indices of the pages of a file mapping at `addr` that are in the page cache (mincore).
pub fn cached_pages(addr: usize, pages: usize) -> Result<Vec<usize>> {
    let mut v = vec![0u8; pages];
    // SAFETY: the mapping covers `pages` pages; v has one byte per page.
    if unsafe { libc::mincore(addr as *mut libc::c_void, pages * PAGE, v.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error()).context("mincore");
    }
    Ok((0..pages).filter(|i| v[*i] & 1 != 0).collect())
}

fn resident(m: &Mapping, pages: usize) -> Result<u64> {
    Ok(cached_pages(m.addr, pages)?.len() as u64)
}

/// Page indices 0..pages in a fixed pseudo-random order (Fisher-Yates with an LCG).
pub(crate) fn shuffled(pages: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..pages).collect();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in (1..pages).rev() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        v.swap(i, (x >> 33) as usize % (i + 1));
    }
    v
}

/// ns per page to fault in every page of a new fallocated (never written) file at `path`, in
/// `order`: filemap_fault's read-around fills the page cache from unwritten extents by
/// zeroing (ext4_mpage_readpages), so this is the CPU cost of a page-cache fill without I/O,
/// the random reader's fill in the file suite.
fn unwritten_sweep(path: &Path, order: &[usize]) -> Result<f64> {
    let r = unwritten_sweep_file(path, order);
    // Removed whether or not the sweep worked (a SIGKILL leaves it to crate::leftovers).
    let _ = std::fs::remove_file(path);
    r
}

fn unwritten_sweep_file(path: &Path, order: &[usize]) -> Result<f64> {
    let pages = order.len();
    {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .with_context(|| format!("creating {}", path.display()))?;
        crate::workers::allocate(&f, (pages * PAGE) as u64).context("fallocate")?;
    }
    let m = Mapping::map(path, false)?;
    let t = Instant::now();
    for &i in order {
        m.touch(i, false);
    }
    Ok(ns_since(t) / pages as f64)
}

/// Write a file of `pages`, then `samples` times: drop its cache, sweep it cold, sweep it warm.
pub fn sweep(path: &Path, pages: usize, samples: usize) -> Result<ReadSweep> {
    pin(0)?;
    super::mem::write_data_file(path, pages, Data::Pattern)?;
    let mut out = ReadSweep::default();
    for _ in 0..samples {
        let f = std::fs::File::open(path)?;
        // SAFETY: a valid fd; the file is clean (fsync'ed), so its cache can be dropped.
        let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if r != 0 {
            bail!(
                "posix_fadvise(DONTNEED) failed: {}",
                std::io::Error::from_raw_os_error(r)
            );
        }
        let m = Mapping::map(path, false)?;
        out.resident_before_cold.push(resident(&m, pages)?);
        let mj = majflt();
        let t = Instant::now();
        for i in 0..pages {
            m.touch(i, false);
        }
        out.cold.push(ns_since(t) / pages as f64);
        out.majflt_per_page
            .push((majflt() - mj) as f64 / pages as f64);
        drop(m);
        let m = Mapping::map(path, false)?;
        let t = Instant::now();
        for i in 0..pages {
            m.touch(i, false);
        }
        out.warm.push(ns_since(t) / pages as f64);
    }
    // Beside the written file (same directory, removed by the same clean-up if we die).
    let unwritten = path.with_extension("unwritten.dat");
    let seq: Vec<usize> = (0..pages).collect();
    let random = shuffled(pages);
    for _ in 0..samples {
        out.unwritten_seq.push(unwritten_sweep(&unwritten, &seq)?);
        out.unwritten_random
            .push(unwritten_sweep(&unwritten, &random)?);
    }
    Ok(out)
}
