//! What writing a dirty page-cache page back costs the CPUs, by the state of the file's
//! blocks. A file made with fallocate has unwritten extents: ext4 writes such a page into its
//! unwritten block (ext4_writepages maps it with EXT4_GET_BLOCKS_IO_CREATE_EXT, splitting the
//! extent) and, when the write completes, converts the extent to written in a kernel worker
//! (ext4_end_io_rsv_work → ext4_convert_unwritten_io_end_vec) before the folio's writeback
//! ends (ext4_release_io_end → folio_end_writeback). A block already written needs neither.
//!
//! Each sample dirties pages through a shared mapping and writes them back with
//! sync_file_range (writepages in the caller, no journal commit), timing the caller's thread
//! CPU (the submission side: what the flusher thread spends in do_writepages) and the CPU time
//! of every kernel thread meanwhile (the completion side, from /proc/PID/schedstat).

use super::derive::Derived;
use super::mem::{ns_since, pin, PAGE};
use super::reclaim::thread_cpu_ns;
use super::stats::paired_diff;
use super::{diff, find, put, Measurement};
use crate::foreign::{parse_schedstat, parse_stat, PF_KTHREAD};
use crate::workers::Mapping;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Instant;

/// One pass: ns per page written back.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Pass {
    /// The writing thread's CPU time in sync_file_range (writepages, page_mkclean, bio
    /// submission; it sleeps while the device works).
    pub caller_cpu: f64,
    /// Kernel threads' CPU time over the same window (completion work: extent conversion,
    /// the block layer's workers).
    pub kthread_cpu: f64,
    /// Kernel threads' CPU time over an idle window as long, right after: what they spend
    /// anyway (per page of the pass, to subtract).
    #[serde(default)]
    pub kthread_idle: f64,
    pub wall: f64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Writeback {
    /// Isolated dirty pages (a random 1 in `SPREAD` of the file) over unwritten blocks.
    pub random_unwritten: Vec<Pass>,
    /// The same pages dirtied again once their blocks are written.
    pub random_written: Vec<Pass>,
    /// Every page of a new fallocated file, dirtied in index order (one long run).
    pub seq_unwritten: Vec<Pass>,
    /// Page-cache folios by order after the first sample's long run (kpageflags): whether
    /// its per-page figures come from large folios.
    #[serde(default)]
    pub seq_folio_orders: BTreeMap<u32, u64>,
}

/// The random passes dirty one page in this many.
pub const SPREAD: usize = 8;

/// Sum of every kernel thread's run time so far (ns, schedstat).
fn kthreads_run_ns() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut sum = 0;
    for e in dir.flatten() {
        let name = e.file_name();
        if name.to_string_lossy().parse::<i32>().is_err() {
            continue;
        }
        let p = e.path();
        let kthread = std::fs::read_to_string(p.join("stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
            .is_some_and(|s| s.flags & PF_KTHREAD != 0);
        if !kthread {
            continue;
        }
        if let Some((run, _, _)) = std::fs::read_to_string(p.join("schedstat"))
            .ok()
            .and_then(|t| parse_schedstat(&t))
        {
            sum += run;
        }
    }
    sum
}

/// Dirty `pages` of the mapping (a store to each), then write the file back and wait.
fn dirty_and_sync(f: &std::fs::File, m: &Mapping, pages: &[usize]) -> Result<Pass> {
    for &i in pages {
        m.touch(i, true);
    }
    let k0 = kthreads_run_ns();
    let c0 = thread_cpu_ns();
    let t = Instant::now();
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
        | libc::SYNC_FILE_RANGE_WRITE
        | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: a valid fd; offset 0 and length 0 mean the whole file.
    if unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, flags) } != 0 {
        return Err(std::io::Error::last_os_error()).context("sync_file_range");
    }
    let wall = ns_since(t);
    let caller = thread_cpu_ns() - c0;
    // Completion work queued as the last writes finished may still be running.
    let settle = std::time::Duration::from_millis(20);
    std::thread::sleep(settle);
    let kthreads = kthreads_run_ns().saturating_sub(k0) as f64;
    // The same length of time with nothing written: the kernel threads' own background.
    let k1 = kthreads_run_ns();
    std::thread::sleep(std::time::Duration::from_nanos(wall as u64) + settle);
    let idle = kthreads_run_ns().saturating_sub(k1) as f64;
    let n = pages.len() as f64;
    Ok(Pass {
        caller_cpu: caller / n,
        kthread_cpu: kthreads / n,
        kthread_idle: idle / n,
        wall: wall / n,
    })
}

fn new_unwritten(path: &Path, pages: usize) -> Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    crate::workers::allocate(&f, (pages * PAGE) as u64).context("fallocate")?;
    Ok(f)
}

/// Write every block of the file, so that ext4 merges its thousands of small extents back
/// into a few: freeing a fragmented file is slow where the filesystem discards each freed
/// extent (the `discard` mount option), tens of seconds for a few thousand extents.
fn written_whole(f: &std::fs::File, pages: usize) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let chunk = vec![0u8; 256 * PAGE];
    let mut at = 0;
    while at < pages * PAGE {
        let n = chunk.len().min(pages * PAGE - at);
        f.write_all_at(&chunk[..n], at as u64)?;
        at += n;
    }
    f.sync_all().context("fsync")
}

fn one_sample(path: &Path, pages: usize, out: &mut Writeback) -> Result<()> {
    let file_pages = pages * SPREAD;
    let f = new_unwritten(path, file_pages)?;
    let m = Mapping::map(path, true)?;
    let mut chosen: Vec<usize> = super::readahead::shuffled(file_pages)[..pages].to_vec();
    chosen.sort_unstable();
    out.random_unwritten.push(dirty_and_sync(&f, &m, &chosen)?);
    out.random_written.push(dirty_and_sync(&f, &m, &chosen)?);
    drop(m);
    written_whole(&f, file_pages)?;
    drop(f);
    std::fs::remove_file(path)?;
    let f = new_unwritten(path, pages)?;
    let m = Mapping::map(path, true)?;
    let all: Vec<usize> = (0..pages).collect();
    out.seq_unwritten.push(dirty_and_sync(&f, &m, &all)?);
    if out.seq_folio_orders.is_empty() {
        out.seq_folio_orders = crate::workers::page_cache::folio_orders(path).unwrap_or_default();
    }
    drop(m);
    drop(f);
    std::fs::remove_file(path)?;
    Ok(())
}

/// `samples` samples of each pass, `pages` dirty pages each, on CPU 0.
pub fn measure(path: &Path, pages: usize, samples: usize) -> Result<Writeback> {
    pin(0)?;
    let mut out = Writeback::default();
    for _ in 0..samples {
        let r = one_sample(path, pages, &mut out);
        // Removed whether or not the sample worked (a SIGKILL leaves it to crate::leftovers).
        let _ = std::fs::remove_file(path);
        r?;
    }
    Ok(out)
}

/// Mean pages per folio of a folios-by-order count.
fn pages_per_folio(orders: &BTreeMap<u32, u64>) -> f64 {
    let folios: u64 = orders.values().sum();
    let pages: u64 = orders.iter().map(|(o, n)| n << o).sum();
    if folios == 0 {
        1.0
    } else {
        pages as f64 / folios as f64
    }
}

/// The writeback costs: per folio from the one long run (its figure per page times its pages
/// per folio; its few requests spread over thousands of folios), per request from the
/// isolated pages over written blocks less that, and what unwritten blocks add per request
/// from the isolated pages over unwritten blocks less the same pages over written ones.
pub fn derive(ms: &[Measurement], costs: &mut BTreeMap<String, Derived>, notes: &mut Vec<String>) {
    let Some(seq) = find(ms, "writeback-seq-unwritten-submit") else {
        return;
    };
    // The long run's figures are per page; its folios hold `per` pages on average.
    let per = seq
        .observed
        .get("folio_orders")
        .and_then(|v| serde_json::from_value::<BTreeMap<u32, u64>>(v.clone()).ok())
        .map(|o| pages_per_folio(&o))
        .unwrap_or(1.0);
    let scaled = |m: &Measurement| -> Measurement {
        let mut m = m.clone();
        m.samples.iter_mut().for_each(|v| *v *= per);
        m
    };
    let one = |side: &str, tag: &str| format!("writeback-{tag}-{side}");
    for (side, page, request, unwritten) in [
        (
            "submit",
            "writepages_folio",
            "writepages_request",
            "writepages_unwritten_request",
        ),
        (
            "complete",
            "writeback_complete_folio",
            "writeback_complete_request",
            "writeback_convert_request",
        ),
    ] {
        let (seq, rw, ru) = (
            one(side, "seq-unwritten"),
            one(side, "random-written"),
            one(side, "random-unwritten"),
        );
        let what = if side == "submit" {
            "the writing thread's CPU in sync_file_range"
        } else {
            "kernel threads' CPU (less an idle window)"
        };
        put(
            costs,
            notes,
            page,
            find(ms, &seq).and_then(|m| {
                Derived::new(
                    scaled(m).samples,
                    &format!("{what} per page writing back one long dirty run of a new fallocated file (a few requests over thousands of pages), times its pages per folio ({per:.2}, from the folio orders observed)"),
                    &[seq.as_str()],
                )
            }),
            "no sample",
        );
        put(
            costs,
            notes,
            request,
            find(ms, &rw).zip(find(ms, &seq)).and_then(|(a, b)| {
                Derived::new(
                    paired_diff(&a.samples, &scaled(b).samples),
                    &format!("{what} per isolated dirty page over written blocks (a request each, its folio taken as one page) minus the long run's figure per folio"),
                    &[rw.as_str(), seq.as_str()],
                )
            }),
            "isolated pages were not dearer than a long run",
        );
        put(
            costs,
            notes,
            unwritten,
            diff(
                ms,
                &ru,
                &rw,
                &format!("{what} per isolated dirty page over unwritten blocks minus the same pages over written blocks (ext4's extent split and conversion)"),
            ),
            "unwritten blocks were not dearer than written ones",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_split_into_page_request_and_unwritten_parts() {
        let m = |name: &str, v: &[f64]| {
            Measurement::new(name, "ns/page", "synthetic", v.to_vec()).unwrap()
        };
        let ms = vec![
            m("writeback-seq-unwritten-submit", &[800.0, 820.0]),
            m("writeback-random-written-submit", &[3400.0, 3420.0]),
            m("writeback-random-unwritten-submit", &[4200.0, 4240.0]),
            m("writeback-seq-unwritten-complete", &[400.0, 400.0]),
            m("writeback-random-written-complete", &[1200.0, 1100.0]),
            m("writeback-random-unwritten-complete", &[2300.0, 2300.0]),
        ];
        let (mut costs, mut notes) = (BTreeMap::new(), Vec::new());
        derive(&ms, &mut costs, &mut notes);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(costs["writepages_folio"].ns, 810.0);
        assert_eq!(costs["writepages_request"].ns, 2600.0);
        assert_eq!(costs["writepages_unwritten_request"].ns, 810.0);
        assert_eq!(costs["writeback_complete_request"].ns, 750.0);
        assert_eq!(costs["writeback_convert_request"].ns, 1150.0);
    }

    #[test]
    fn a_long_run_of_large_folios_costs_more_per_folio() {
        let m = |name: &str, v: &[f64]| {
            Measurement::new(name, "ns/page", "synthetic", v.to_vec()).unwrap()
        };
        // 2048 order-0 and 512 order-2 folios: 4096 pages in 2560 folios, 1.6 pages each.
        let orders = serde_json::json!({"0": 2048, "2": 512});
        let ms = vec![
            m("writeback-seq-unwritten-submit", &[500.0]).observe("folio_orders", orders),
            m("writeback-random-written-submit", &[2000.0]),
        ];
        let (mut costs, mut notes) = (BTreeMap::new(), Vec::new());
        derive(&ms, &mut costs, &mut notes);
        assert_eq!(costs["writepages_folio"].ns, 800.0);
        assert_eq!(costs["writepages_request"].ns, 1200.0);
    }

    #[test]
    fn kernel_threads_have_run() {
        // Every Linux system has run kernel threads (kthreadd, per-CPU workers) by now.
        assert!(kthreads_run_ns() > 0);
    }
}
