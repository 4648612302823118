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
    Ok(out)
}
