//! The block device under the data directory, as swap on a disk sees it: O_DIRECT reads and
//! writes of one page (a swap-in without readahead, one swap-out bio) and of 8 pages (swap
//! readahead's cluster at page-cluster=3; swap_writepage bios merged by the plug), one request
//! in flight at a time, at random page-aligned offsets of a file whose blocks are all written
//! (no unwritten extents, so every read reaches the device). Their difference per extra page
//! separates a request's fixed cost from its transfer.

use super::mem::{ns_since, pin, Data, Region, PAGE};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Instant;

/// Pages per request of the "cluster" size: SWAP_CLUSTER readahead's 1 << page-cluster (3).
pub const CLUSTER_PAGES: usize = 8;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct BlockIo {
    /// ns per request, one sample per batch of requests.
    pub read_1: Vec<f64>,
    pub read_cluster: Vec<f64>,
    pub write_1: Vec<f64>,
    pub write_cluster: Vec<f64>,
}

/// A xorshift step: the offsets are pseudo-random but the same every run.
pub(super) fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Mean ns per request of `reqs` O_DIRECT requests of `pages` pages each.
fn timed(
    fd: i32,
    buf: &Region,
    file_pages: usize,
    pages: usize,
    reqs: usize,
    write: bool,
    seed: &mut u64,
) -> Result<f64> {
    let bytes = pages * PAGE;
    let slots = (file_pages / pages) as u64;
    let t = Instant::now();
    for _ in 0..reqs {
        let off = (next(seed) % slots) as usize * bytes;
        // SAFETY: buf holds at least `bytes`, page-aligned; fd is open O_DIRECT.
        let n = unsafe {
            if write {
                libc::pwrite(
                    fd,
                    buf.page(0) as *const libc::c_void,
                    bytes,
                    off as libc::off_t,
                )
            } else {
                libc::pread(
                    fd,
                    buf.page(0) as *mut libc::c_void,
                    bytes,
                    off as libc::off_t,
                )
            }
        };
        if n != bytes as isize {
            return Err(std::io::Error::last_os_error()).context(format!(
                "O_DIRECT {} of {bytes} bytes",
                if write { "write" } else { "read" }
            ));
        }
    }
    Ok(ns_since(t) / reqs as f64)
}

/// `path` opened for reading and writing with O_DIRECT (the page cache bypassed: every request
/// reaches the device).
pub(super) fn open_direct(path: &Path) -> Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .with_context(|| format!("opening {} with O_DIRECT", path.display()))
}

/// Write a file of `file_pages` at `path`, then `samples` batches of `reqs` requests of each kind.
pub fn measure(path: &Path, file_pages: usize, reqs: usize, samples: usize) -> Result<BlockIo> {
    pin(0)?;
    super::mem::write_data_file(path, file_pages, Data::Random)?;
    let f = open_direct(path)?;
    let fd = f.as_raw_fd();
    // Page-aligned, as O_DIRECT needs.
    let buf = Region::anon(CLUSTER_PAGES)?;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut out = BlockIo::default();
    for _ in 0..samples {
        out.read_1
            .push(timed(fd, &buf, file_pages, 1, reqs, false, &mut seed)?);
        out.read_cluster.push(timed(
            fd,
            &buf,
            file_pages,
            CLUSTER_PAGES,
            reqs,
            false,
            &mut seed,
        )?);
        out.write_1
            .push(timed(fd, &buf, file_pages, 1, reqs, true, &mut seed)?);
        out.write_cluster.push(timed(
            fd,
            &buf,
            file_pages,
            CLUSTER_PAGES,
            reqs,
            true,
            &mut seed,
        )?);
    }
    Ok(out)
}

/// The block device a directory's filesystem is on (`/sys/dev/block/M:m` resolved), for the
/// raw output.
pub fn device_of(dir: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let Ok(md) = std::fs::metadata(dir) else {
        return "unknown".into();
    };
    let dev = md.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    std::fs::read_link(format!("/sys/dev/block/{major}:{minor}"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("{major}:{minor}"))
}
