//! The data disk's request rate at its queue depth: random 4 KiB O_DIRECT reads, then writes,
//! with as many requests in flight as the device has tags (blk-mq's `nr_tags`, what the
//! flusher's writeback or a burst of readahead can fill), through io_uring from one thread. The
//! time per request at that depth is the device's service time per request, the simulator's
//! `file_read_page` + `file_read_request` (the device in `blk_submit` takes requests one after
//! another). blockio's one-request-in-flight latencies cannot show it: they wait out the whole
//! round trip.
//!
//! Without io_uring (a kernel built without it, or `kernel.io_uring_disabled` set) nothing is
//! measured: the family's other benchmarks still run, a note says why, and the two request
//! costs keep the profile's values.

use super::blockio::{next, open_direct};
use super::derive::Derived;
use super::mem::{Data, Region, PAGE};
use super::stats::Measurement;
use super::{find, put};
use anyhow::{bail, Context, Result};
use io_uring::{opcode, types, IoUring};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// The most requests kept in flight, whatever the device offers (NVMe disks offer 1023 tags a
/// queue; beyond a few hundred one submitting thread is the limit, not the device).
pub const MAX_DEPTH: usize = 256;
/// The depth when the device's tag count cannot be read (a stacked device without blk-mq):
/// the default `nr_requests` of a single-queue scheduler is 64; stay below it.
pub const FALLBACK_DEPTH: usize = 32;
/// The benchmark names: ns per request at the queue depth, one sample per timed run.
pub const READ: &str = "blk-randread-qd";
pub const WRITE: &str = "blk-randwrite-qd";

/// The whole disk under a block device name: a partition's parent (`/sys/class/block/vda1`
/// has a `partition` file and lives under `.../block/vda/`), else the name itself.
fn whole_disk(dev: &str) -> String {
    let class = Path::new("/sys/class/block").join(dev);
    if class.join("partition").exists() {
        if let Some(parent) = std::fs::canonicalize(&class)
            .ok()
            .and_then(|p| p.parent().and_then(|p| p.file_name()).map(|n| n.to_owned()))
        {
            return parent.to_string_lossy().into_owned();
        }
    }
    dev.to_string()
}

/// The depth to measure at for a disk's tag counts (one per hardware queue) or, without
/// blk-mq, its `nr_requests`: one submitting thread fills one hardware queue, so the largest
/// queue's tags, capped at [`MAX_DEPTH`]; [`FALLBACK_DEPTH`] when neither is known.
pub fn pick_depth(nr_tags: &[usize], nr_requests: Option<usize>) -> usize {
    let d = nr_tags
        .iter()
        .copied()
        .max()
        .or(nr_requests)
        .unwrap_or(FALLBACK_DEPTH);
    d.clamp(1, MAX_DEPTH)
}

/// The disk under `dir`, its tag counts (`/sys/block/DISK/mq/*/nr_tags`) and the depth picked.
pub fn queue_depth(dir: &Path) -> (String, Vec<usize>, usize) {
    let disk = whole_disk(&super::blockio::device_of(dir));
    let sys = Path::new("/sys/block").join(&disk);
    let read = |p: &Path| -> Option<usize> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let mut tags: Vec<usize> = std::fs::read_dir(sys.join("mq"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| read(&e.path().join("nr_tags")))
                .collect()
        })
        .unwrap_or_default();
    tags.sort_unstable();
    let depth = pick_depth(&tags, read(&sys.join("queue/nr_requests")));
    (disk, tags, depth)
}

/// One direction's timed runs: ns per request and requests per second, run by run.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Runs {
    pub ns_per_request: Vec<f64>,
    pub per_second: Vec<f64>,
    pub requests: Vec<u64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Rates {
    pub read: Runs,
    pub write: Runs,
}

/// Keep `depth` random one-page requests in flight for `dur`, then wait for the last.
/// Returns (requests completed, ns from the first submission to the last completion).
fn timed_run(
    ring: &mut IoUring,
    fd: i32,
    bufs: &Region,
    file_pages: u64,
    write: bool,
    dur: Duration,
    seed: &mut u64,
) -> Result<(u64, f64)> {
    let depth = bufs.pages();
    let sqe = |slot: usize, seed: &mut u64| {
        let off = (next(seed) % file_pages) * PAGE as u64;
        let (fd, buf, len) = (types::Fd(fd), bufs.page(slot), PAGE as u32);
        let e = if write {
            opcode::Write::new(fd, buf, len).offset(off).build()
        } else {
            opcode::Read::new(fd, buf, len).offset(off).build()
        };
        e.user_data(slot as u64)
    };
    let push = |ring: &mut IoUring, e: io_uring::squeue::Entry| -> Result<()> {
        // SAFETY: the buffer (one page of `bufs`, alive for the whole run) is used by this
        // request alone until its completion is reaped.
        unsafe { ring.submission().push(&e) }.map_err(|_| anyhow::anyhow!("io_uring SQ full"))
    };
    let t = Instant::now();
    for slot in 0..depth {
        push(ring, sqe(slot, seed))?;
    }
    let (mut inflight, mut done, mut last) = (depth, 0u64, t);
    while inflight > 0 {
        ring.submit_and_wait(1).context("io_uring_enter")?;
        let reaped: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let now = Instant::now();
        let more = now.duration_since(t) < dur;
        for (slot, res) in reaped {
            if res != PAGE as i32 {
                bail!(
                    "O_DIRECT {} of one page through io_uring: {}",
                    if write { "write" } else { "read" },
                    if res < 0 {
                        std::io::Error::from_raw_os_error(-res).to_string()
                    } else {
                        format!("{res} bytes")
                    }
                );
            }
            done += 1;
            last = now;
            if more {
                push(ring, sqe(slot as usize, seed))?;
            } else {
                inflight -= 1;
            }
        }
    }
    Ok((done, last.duration_since(t).as_nanos() as f64))
}

fn record(r: &mut Runs, (n, ns): (u64, f64)) -> Result<()> {
    if n == 0 || ns <= 0.0 {
        bail!("no request completed in a timed run");
    }
    r.ns_per_request.push(ns / n as f64);
    r.per_second.push(n as f64 * 1e9 / ns);
    r.requests.push(n);
    Ok(())
}

/// Write a file of `file_pages` at `path` (every block written: reads reach the device), then
/// `runs` times a read run and a write run of `secs` each at `depth`.
pub fn measure(
    path: &Path,
    file_pages: usize,
    depth: usize,
    secs: f64,
    runs: usize,
) -> Result<Rates> {
    let mut ring = IoUring::new(depth as u32).context(
        "io_uring_setup (io_uring unavailable: a kernel without CONFIG_IO_URING, or \
         kernel.io_uring_disabled set)",
    )?;
    super::mem::write_data_file(path, file_pages, Data::Zero)?;
    let f = open_direct(path)?;
    // One page-aligned buffer per request in flight, faulted in before the clock starts.
    let bufs = Region::anon(depth)?;
    for i in 0..depth {
        // SAFETY: page i of a mapping of `depth` pages.
        unsafe { std::ptr::write_bytes(bufs.page(i), 0, PAGE) };
    }
    let (fd, dur) = (f.as_raw_fd(), Duration::from_secs_f64(secs));
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut out = Rates::default();
    for _ in 0..runs {
        let r = timed_run(
            &mut ring,
            fd,
            &bufs,
            file_pages as u64,
            false,
            dur,
            &mut seed,
        )?;
        record(&mut out.read, r)?;
        let w = timed_run(
            &mut ring,
            fd,
            &bufs,
            file_pages as u64,
            true,
            dur,
            &mut seed,
        )?;
        record(&mut out.write, w)?;
    }
    Ok(out)
}

/// The page cost subtracted from the time per request, and where it comes from.
#[derive(Clone, Debug)]
pub struct PageCost {
    pub ns: f64,
    pub what: String,
}

/// `file_read_request` and `file_write_request`: the device's time per request at its queue
/// depth minus the transfer of the request's one page (`read_page`, `write_page`), sample by
/// sample, so that the simulated device serves `file_X_page` + `file_X_request` per 4 KiB
/// request, the measured rate. A sample shorter than the page cost is taken as 0 (the model's
/// device cannot serve faster than one page's transfer) and the source and a note say so.
///
/// A block swap device on the same disk (a swap file under --dir) has the same service per
/// request: `swap_read_request` and `swap_write_request` are the same rates net of this run's
/// `swap_page_transfer` (the transfer the model's swap requests are charged), when blockio
/// measured it.
pub fn derive(
    ms: &[Measurement],
    read_page: &PageCost,
    write_page: &PageCost,
    costs: &mut BTreeMap<String, Derived>,
    notes: &mut Vec<String>,
) {
    let swap_page = costs.get("swap_page_transfer").map(|d| PageCost {
        ns: d.ns,
        what: "this run's".into(),
    });
    let mut wanted = vec![
        (
            "file_read_request",
            READ,
            "file_read_page",
            read_page.clone(),
        ),
        (
            "file_write_request",
            WRITE,
            "file_write_page",
            write_page.clone(),
        ),
    ];
    if let Some(sp) = swap_page {
        wanted.push(("swap_read_request", READ, "swap_page_transfer", sp.clone()));
        wanted.push(("swap_write_request", WRITE, "swap_page_transfer", sp));
    }
    for (cost, bench, page_cost, page) in wanted {
        let Some(m) = find(ms, bench) else { continue };
        let raw: Vec<f64> = m.samples.iter().map(|s| s - page.ns).collect();
        let clamped = raw.iter().filter(|v| **v < 0.0).count();
        let depth = m
            .observed
            .get("depth")
            .and_then(|d| d.as_u64())
            .map_or_else(|| "the queue depth".into(), |d| format!("{d} in flight"));
        let mut source = format!(
            "random 4 KiB O_DIRECT {}s through io_uring with {depth} (the data disk's tags, \
             the disk under --dir), {} runs: median {:.0} requests/s, {:.0} ns each, minus \
             {page_cost} ({:.0} ns, {})",
            if bench == READ { "read" } else { "write" },
            m.samples.len(),
            1e9 / m.median,
            m.median,
            page.ns,
            page.what
        );
        if clamped > 0 {
            source.push_str(&format!(
                "; {clamped} of {} runs served a request in less than {page_cost} and count \
                 as 0",
                raw.len()
            ));
            notes.push(format!(
                "{cost}: {clamped} of {} runs at the queue depth took less per request than \
                 {page_cost} ({:.0} ns), taken as 0: the model's device, one {page_cost} a \
                 page, is slower than this disk at depth",
                raw.len(),
                page.ns
            ));
        }
        let values = raw.into_iter().map(|v| v.max(0.0)).collect();
        let d = Derived::new(values, &source, &[bench]);
        put(costs, notes, cost, d, "no usable run at the queue depth");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, v: &[f64]) -> Measurement {
        Measurement::new(name, "ns/request", "synthetic", v.to_vec())
            .unwrap()
            .observe("depth", 128)
    }

    fn page(ns: f64) -> PageCost {
        PageCost {
            ns,
            what: "test".into(),
        }
    }

    #[test]
    fn the_request_cost_is_the_time_per_request_at_depth_minus_the_page() {
        // 91 704 reads/s = 10 905 ns a request; 90 000 and 100 000 around it.
        let ms = vec![
            m(READ, &[1e9 / 91_704.0, 1e9 / 90_000.0, 1e9 / 100_000.0]),
            m(WRITE, &[8_000.0, 9_000.0, 7_000.0]),
        ];
        let (mut costs, mut notes) = (BTreeMap::new(), Vec::new());
        derive(&ms, &page(2_296.0), &page(2_306.0), &mut costs, &mut notes);
        let r = &costs["file_read_request"];
        assert!((r.ns - (1e9 / 91_704.0 - 2_296.0)).abs() < 1e-6, "{}", r.ns);
        assert_eq!(r.values.len(), 3);
        assert!(r.source.contains("91704 requests/s"), "{}", r.source);
        assert!(r.source.contains("128 in flight"), "{}", r.source);
        assert_eq!(costs["file_write_request"].ns, 8_000.0 - 2_306.0);
        assert_eq!(costs["file_write_request"].min, 7_000.0 - 2_306.0);
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn a_swap_file_on_the_disk_gets_the_same_service_net_of_the_swap_transfer() {
        let ms = vec![
            m(READ, &[10_000.0, 11_000.0, 12_000.0]),
            m(WRITE, &[9_000.0]),
        ];
        let (mut costs, mut notes) = (BTreeMap::new(), Vec::new());
        // Without this run's swap transfer: the file costs only.
        derive(&ms, &page(2_000.0), &page(2_000.0), &mut costs, &mut notes);
        assert!(!costs.contains_key("swap_read_request"));
        costs.insert(
            "swap_page_transfer".into(),
            Derived::new(vec![3_000.0], "test", &["blk-read-cluster"]).unwrap(),
        );
        derive(&ms, &page(2_000.0), &page(2_000.0), &mut costs, &mut notes);
        assert_eq!(costs["swap_read_request"].ns, 11_000.0 - 3_000.0);
        assert_eq!(costs["swap_write_request"].ns, 9_000.0 - 3_000.0);
        assert_eq!(costs["file_read_request"].ns, 11_000.0 - 2_000.0);
        assert!(
            costs["swap_read_request"]
                .source
                .contains("swap_page_transfer"),
            "{}",
            costs["swap_read_request"].source
        );
    }

    #[test]
    fn a_request_faster_than_its_page_counts_as_zero_and_says_so() {
        let ms = vec![m(WRITE, &[9_000.0, 11_000.0, 12_000.0])];
        let (mut costs, mut notes) = (BTreeMap::new(), Vec::new());
        derive(&ms, &page(2_000.0), &page(10_000.0), &mut costs, &mut notes);
        let w = &costs["file_write_request"];
        assert_eq!(w.values, vec![0.0, 1_000.0, 2_000.0]);
        assert_eq!(w.ns, 1_000.0);
        assert!(w.source.contains("1 of 3 runs"), "{}", w.source);
        assert!(
            notes[0].starts_with("file_write_request: 1 of 3"),
            "{notes:?}"
        );
        // No read runs: no read cost, nothing said about it.
        assert!(!costs.contains_key("file_read_request"));
        // Every run faster: 0, never negative.
        let ms = vec![m(WRITE, &[5_000.0, 6_000.0])];
        let (mut costs, mut notes) = (BTreeMap::new(), Vec::new());
        derive(&ms, &page(0.0), &page(10_000.0), &mut costs, &mut notes);
        assert_eq!(costs["file_write_request"].ns, 0.0);
    }

    #[test]
    fn the_depth_is_the_largest_queue_capped() {
        assert_eq!(pick_depth(&[128], Some(256)), 128);
        assert_eq!(pick_depth(&[64, 1023], None), MAX_DEPTH);
        assert_eq!(pick_depth(&[], Some(64)), 64);
        assert_eq!(pick_depth(&[], None), FALLBACK_DEPTH);
        assert_eq!(pick_depth(&[0], None), 1);
    }
}
