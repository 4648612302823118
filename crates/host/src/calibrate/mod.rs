//! `reclaimlab calibrate`: measure, on the live kernel, the costs the simulator charges
//! (crates/sim's `CostTable`), and write them as a machine profile with every sample kept.
//!
//! One module per benchmark family: [`fault`] (anonymous faults), [`fault`]'s resident access
//! (`access`), [`flush`] (local TLB flushes), [`shootdown`] (the IPI round trip), [`zram`]
//! (compress/decompress by data), [`readahead`] (file read faults), [`blockio`] (the disk's
//! request latency, as swap on a disk sees it), [`reclaim`] (memcg reclaim
//! by page type, swap-in, one CPU against two). [`derive`](mod@derive) turns the measurements into costs
//! and checks; [`output`] into a profile and the raw document. Every change to the machine goes
//! through [`crate::cleanup`], as in `bench`.

pub mod blockio;
pub mod child;
pub mod contention;
pub mod cycle;
pub mod derive;
pub mod devrate;
pub mod fault;
pub mod flush;
pub mod ipi;
pub mod machine;
pub mod mem;
pub mod output;
pub mod pagemap;
pub mod parallel;
pub mod paths;
pub mod readahead;
pub mod reclaim;
pub mod shootdown;
pub mod stats;
pub mod writeback;
pub mod zram;

use crate::cgroup::MemcgRoot;
use crate::cleanup::Cleanup;
use crate::counters;
use anyhow::{bail, Context, Result};
use derive::{Check, Derived};
use mem::Data;
use reclaim::Prep;
use serde::{Deserialize, Serialize};
use stats::{paired_diff, Measurement};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The benchmark families, in the order they run (`--only` takes a subset).
pub const FAMILIES: [&str; 12] = [
    "parallel",
    "fault",
    "access",
    "flush",
    "shootdown",
    "zram",
    "readahead",
    "writeback",
    "blockio",
    "reclaim",
    "contention",
    "cycle",
];

pub const SCHEMA: &str = "reclaimlab-calibrate/1";

/// Progress callback: (family index, family count, family name).
pub type Progress<'a> = dyn Fn(usize, usize, &str) + 'a;

pub struct Options<'a> {
    pub quick: bool,
    /// A subset of [`FAMILIES`]; None runs them all.
    pub only: Option<Vec<String>>,
    /// Where the file benchmarks write their data (a disk filesystem, not tmpfs).
    pub dir: PathBuf,
    /// Called before each family: (index, count, family).
    pub progress: Option<&'a Progress<'a>>,
}

/// The raw output: every sample, the costs derived from them and the checks.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Calibration {
    pub schema: String,
    /// The command line that produced it (set by the caller).
    #[serde(default)]
    pub command: String,
    pub quick: bool,
    pub families: Vec<String>,
    pub machine: machine::Facts,
    pub seconds: f64,
    /// /proc/loadavg before each family and at the end: how busy the rest of the machine was.
    pub loadavg: Vec<String>,
    pub measurements: Vec<Measurement>,
    pub costs: BTreeMap<String, Derived>,
    pub checks: Vec<Check>,
    pub notes: Vec<String>,
}

/// How much each family measures: the default run takes a few minutes, `--quick` under one.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub samples: usize,
    pub fault_pages: usize,
    pub access_pages: usize,
    pub flush_iters: usize,
    pub shootdown_iters: usize,
    pub zram_pages: usize,
    pub readahead_pages: usize,
    /// Requests per blockio sample.
    pub blockio_reqs: usize,
    /// Seconds per blockio run at the device's queue depth (each direction).
    pub blockio_qd_secs: f64,
    /// Dirty pages written back per writeback sample.
    pub writeback_pages: usize,
    pub reclaim_pages: usize,
}

impl Sizes {
    pub fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                samples: 5,
                fault_pages: 4096,
                access_pages: 128 * 1024,
                flush_iters: 200,
                shootdown_iters: 1000,
                zram_pages: 1024,
                readahead_pages: 4096,
                blockio_reqs: 64,
                blockio_qd_secs: 0.5,
                writeback_pages: 1024,
                reclaim_pages: 4096,
            }
        } else {
            Sizes {
                samples: 11,
                fault_pages: 16 * 1024,
                access_pages: 128 * 1024,
                flush_iters: 1000,
                shootdown_iters: 5000,
                zram_pages: 4096,
                readahead_pages: 16 * 1024,
                blockio_reqs: 256,
                blockio_qd_secs: 1.0,
                writeback_pages: 4096,
                reclaim_pages: 16 * 1024,
            }
        }
    }
}

fn preflight() -> Result<MemcgRoot> {
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "calibrate measures the live kernel and needs root (it creates memcgs, a zram device \
             and swap, and reads /proc/kpageflags): run it as root, e.g. sudo reclaimlab calibrate"
        );
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        bail!("calibrate needs at least 2 CPUs (the shootdown and contention benchmarks)");
    }
    crate::cgroup::detect()
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The families `only` selects, in run order; an unknown name is an error naming it.
pub fn select(only: Option<&[String]>) -> Result<Vec<&'static str>> {
    let Some(only) = only else {
        return Ok(FAMILIES.to_vec());
    };
    for o in only {
        if !FAMILIES.contains(&o.as_str()) {
            bail!(
                "unknown benchmark family {o:?} in --only (families: {})",
                FAMILIES.join(", ")
            );
        }
    }
    Ok(FAMILIES
        .into_iter()
        .filter(|f| only.iter().any(|o| o == f))
        .collect())
}

struct Ctx<'a> {
    root: &'a MemcgRoot,
    cleanup: &'a Cleanup,
    sizes: Sizes,
    dir: &'a Path,
    /// The zram swap, set up by the first family that needs it.
    swap_on: std::cell::Cell<bool>,
}

const CHILD_LIMIT: Duration = Duration::from_secs(240);

/// Run the selected benchmarks and derive the costs. Needs root, a memory controller and two
/// CPUs; undoes every change it makes on every exit path.
pub fn calibrate(opts: &Options) -> Result<Calibration> {
    let families = select(opts.only.as_deref())?;
    let root = preflight()?;
    crate::workers::check_dir(&opts.dir.to_string_lossy()).context("--dir")?;
    for m in crate::leftovers::sweep(
        &root,
        &[opts.dir.as_path()],
        crate::trace::mounted(),
        Duration::from_secs(5),
    ) {
        eprintln!("reclaimlab: {m}");
    }
    let cleanup = Cleanup::new();
    if root.needs_subtree_memory() {
        let r2 = root.clone();
        cleanup.apply(
            format!("+memory in {}/cgroup.subtree_control", root.dir.display()),
            || root.set_subtree_memory(true),
            move || r2.set_subtree_memory(false),
        )?;
    }
    let ctx = Ctx {
        root: &root,
        cleanup: &cleanup,
        sizes: Sizes::new(opts.quick),
        dir: &opts.dir,
        swap_on: std::cell::Cell::new(false),
    };
    let t0 = Instant::now();
    let mut ms = Vec::new();
    let mut notes = Vec::new();
    let mut load = Vec::new();
    for (i, fam) in families.iter().enumerate() {
        if let Some(p) = opts.progress {
            p(i, families.len(), fam);
        }
        load.push(loadavg());
        let r = match *fam {
            "parallel" => fam_parallel(&ctx),
            "fault" => fam_fault(&ctx),
            "access" => fam_access(&ctx),
            "flush" => fam_flush(&ctx),
            "shootdown" => fam_shootdown(&ctx),
            "zram" => fam_zram(&ctx),
            "readahead" => fam_readahead(&ctx),
            "writeback" => fam_writeback(&ctx),
            "blockio" => fam_blockio(&ctx),
            "reclaim" => fam_reclaim(&ctx),
            "contention" => fam_contention(&ctx),
            "cycle" => fam_cycle(&ctx),
            _ => unreachable!(),
        };
        match r {
            Ok(mut v) => ms.append(&mut v),
            Err(e) => {
                // A signal's clean-up may have failed the benchmark: let it exit the process.
                crate::cleanup::park_if_stopping();
                eprintln!("reclaimlab: calibrate {fam}: {e:#}");
                notes.push(format!("{fam}: not measured: {e:#}"));
            }
        }
    }
    if let Some(p) = opts.progress {
        p(families.len(), families.len(), "clean-up");
    }
    load.push(loadavg());
    let errors = cleanup.run_all();
    if !errors.is_empty() {
        bail!(
            "the benchmarks finished but clean-up failed:\n{}",
            errors.join("\n")
        );
    }
    let (costs, checks, mut more) = derive_all(&ms);
    notes.append(&mut more);
    Ok(Calibration {
        schema: SCHEMA.into(),
        command: String::new(),
        quick: opts.quick,
        families: families.iter().map(|f| f.to_string()).collect(),
        machine: machine::facts(root.version.as_str()),
        seconds: t0.elapsed().as_secs_f64(),
        loadavg: load,
        measurements: ms,
        costs,
        checks,
        notes,
    })
}

/// Run `body` in a forked child inside a fresh memcg (removed afterwards).
fn in_child<T: Serialize + serde::de::DeserializeOwned>(
    ctx: &Ctx,
    what: &str,
    body: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let (cg, undo) = child::fresh_memcg(ctx.root, ctx.cleanup)?;
    let r = child::run_in(&cg, ctx.cleanup, what, CHILD_LIMIT, body);
    undo.run()?;
    r
}

/// Run `body` in a child (its own memcg) on a data file of ours in `--dir`, removed afterwards
/// whatever happens.
fn with_data_file<T: Serialize + serde::de::DeserializeOwned>(
    ctx: &Ctx,
    tag: &str,
    what: &str,
    body: impl FnOnce(&Path) -> Result<T>,
) -> Result<T> {
    let path = reclaim::data_path(ctx.dir, tag);
    let p2 = path.clone();
    let undo = ctx
        .cleanup
        .defer(format!("data file {}", path.display()), move || {
            crate::cleanup::remove_file(&p2)
        })?;
    let r = in_child(ctx, what, || body(&path));
    undo.run()?;
    r
}

fn fam_parallel(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let s = ctx.sizes;
    let iters = if s.samples > 5 {
        50_000_000
    } else {
        20_000_000
    };
    let v = in_child(ctx, "two CPUs at once", move || {
        parallel::two_vs_one(0, 1, iters, s.samples)
    })?;
    // 64 MiB a CPU: far beyond the caches, so every page is cleared cache-cold.
    let clear_pages = 16_384;
    let c = in_child(ctx, "clearing pages on two CPUs at once", move || {
        parallel::clear_two_vs_one(0, 1, clear_pages, s.samples)
    })?;
    let turns = if s.samples > 5 { 1_000_000 } else { 200_000 };
    let (one, two) = in_child(ctx, "a cache line between two CPUs", move || {
        Ok((
            parallel::line_handover(0, 0, turns, s.samples)?,
            parallel::line_handover(0, 1, turns, s.samples)?,
        ))
    })?;
    Ok(vec![
        Measurement::new(
            "cpu-loop-two-vs-one",
            "ratio",
            &format!("wall time of a {iters}-step register-only loop on CPUs 0 and 1 at once over CPU 0 alone (1: independent CPUs, 2: one shared physical CPU)"),
            v,
        )?,
        Measurement::new(
            "clear-page-two-vs-one",
            "ratio",
            &format!("ns per page of rep stosb over each page of a resident {} MiB region (clear_page_erms), on CPUs 0 and 1 at once (each its own region) over CPU 0 alone (1: the CPUs' stores do not slow each other)", (clear_pages * 4096) >> 20),
            c,
        )?,
        Measurement::new(
            "line-turn-one-cpu",
            "ns/turn",
            &format!("{turns} x 2 turns at one counter alone on its cache line, both parities taken by one thread on CPU 0 (the line stays)"),
            one,
        )?,
        Measurement::new(
            "line-turn-two-cpus",
            "ns/turn",
            &format!("{turns} turns each by a thread on CPU 0 and one on CPU 1, each waiting for the other's increment (the line moves every turn)"),
            two,
        )?,
    ])
}

fn fam_fault(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let s = ctx.sizes;
    let f = in_child(ctx, "anon faults", move || {
        fault::anon_faults(s.fault_pages, s.samples)
    })?;
    let n = s.fault_pages;
    Ok(vec![
        Measurement::new(
            "anon-read-fault",
            "ns/page",
            &format!("first read of each page of a fresh {n}-page anonymous mapping (maps the shared zero page), in a memcg, CPU 0"),
            f.read,
        )?,
        Measurement::new(
            "anon-write-fault",
            "ns/page",
            &format!("first write of each page of a fresh {n}-page anonymous mapping (allocate, zero, charge, map), in a memcg, CPU 0"),
            f.write,
        )?,
    ])
}

fn fam_access(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let s = ctx.sizes;
    let a = in_child(ctx, "resident access", move || {
        fault::resident_access(s.access_pages, s.samples)
    })?;
    let mib = (s.access_pages * mem::PAGE) >> 20;
    Ok(vec![
        Measurement::new(
            "clear-page",
            "ns/page",
            &format!(
                "rep stosb over each page of a resident {mib} MiB region (clear_page_erms), CPU 0"
            ),
            a.clear,
        )?,
        Measurement::new(
            "clear-2m",
            "ns/page",
            &format!(
                "one rep stosb over each 2 MiB of a resident {mib} MiB region (the memset folio_zero_segment does for a PMD-sized folio), per 4 KiB, CPU 0"
            ),
            a.clear_2m,
        )?,
        Measurement::new(
            "page-store",
            "ns/page",
            &format!("memset of each page of a resident {mib} MiB region, CPU 0"),
            a.store,
        )?,
        Measurement::new(
            "page-load",
            "ns/page",
            &format!("sum of the words of each page of a resident {mib} MiB region, CPU 0"),
            a.load,
        )?,
    ])
}

fn fam_flush(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let s = ctx.sizes;
    let series = in_child(ctx, "local flushes", move || {
        flush::mprotect_series(s.flush_iters, s.samples)
    })?;
    let mut one = Vec::new();
    let mut all = Vec::new();
    let mut fixed = Vec::new();
    for x in &series {
        let f = flush::derive(x).context("mprotect series: no line fit")?;
        one.push(f.one);
        all.push(f.all);
        fixed.push(f.ranged_fixed);
    }
    let raw = serde_json::to_value(&series)?;
    Ok(vec![
        Measurement::new(
            "flush-invlpg-fit",
            "ns/page",
            &format!(
                "median mprotect of n present minus n none PTEs ({} pairs per n): slope over n = 1..32 minus slope over n = 40..256: one INVLPG",
                s.flush_iters
            ),
            one,
        )?
        .observe("series", raw),
        Measurement::new(
            "flush-full-fit",
            "ns",
            "the same series: intercept over n = 40..256 (a full local flush and the flush path's fixed work)",
            all,
        )?,
        Measurement::new(
            "flush-ranged-fixed-fit",
            "ns",
            "the same series: intercept over n = 1..32 (the fixed work of a ranged flush, beyond its PTE changes and INVLPGs)",
            fixed,
        )?,
    ])
}

fn fam_shootdown(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let s = ctx.sizes;
    let r = in_child(ctx, "TLB shootdown", move || {
        shootdown::round_trip(0, 1, s.shootdown_iters, s.samples)
    })?;
    let calls = 2 * s.shootdown_iters;
    let mut v = vec![
        Measurement::new(
            "mprotect-1page-one-cpu",
            "ns/call",
            &format!("median of {calls} mprotect calls on one present page, each timed, the mm running on CPU 0 only"),
            r.one_cpu,
        )?,
        Measurement::new(
            "mprotect-1page-two-cpus-mean",
            "ns/call",
            &format!("mean of {calls} such calls with a second thread of the mm spinning on CPU 1 (a shootdown IPI unless the hypervisor reports that vCPU preempted)"),
            r.two_cpu_mean,
        )?
        .observe("tlb_ipis_per_call", r.ipis_per_call.clone())
        .observe("slow_fraction", r.slow_fraction.clone()),
    ];
    let slow: Vec<f64> = r
        .two_cpu_slow
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    if !slow.is_empty() {
        v.push(
            Measurement::new(
                "mprotect-1page-two-cpus-ipi",
                "ns/call",
                "median of those two-CPU calls slower than the one-CPU calls' 99th percentile + 1 us (the calls that sent an IPI and waited for it)",
                slow,
            )?
            .observe("tlb_ipis_per_call", r.ipis_per_call.clone())
            .observe("slow_fraction", r.slow_fraction.clone()),
        );
    }
    let tlb_ipis: Vec<f64> = r
        .ipis_per_call
        .iter()
        .map(|x| (x * calls as f64).round())
        .collect();
    v.push(
        Measurement::new(
            "shootdown-receiver-gap",
            "ns",
            "median of the interruptions (> 0.7 us) of the thread spinning on CPU 1 that started inside a slow two-CPU call (the receiving side of a shootdown)",
            r.receiver_gap,
        )?
        .observe("tlb_ipis", tlb_ipis.clone())
        .observe("tlb_ipis_per_call", r.ipis_per_call.clone())
        .observe("matched_gaps", r.matched_gaps)
        .observe("all_gaps_per_ipi", r.gaps_per_ipi),
    );
    v.push(
        Measurement::new(
            "shootdown-receiver-gap-any-call",
            "ns",
            "median of the interruptions (> 0.7 us) of the thread spinning on CPU 1 that started inside any two-CPU call (every call sends an IPI unless the hypervisor reports that vCPU preempted)",
            r.receiver_gap_any,
        )?
        .observe("tlb_ipis", tlb_ipis.clone())
        .observe("matched_gaps", r.matched_gaps_any),
    );
    Ok(v)
}

fn fam_zram(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let s = ctx.sizes;
    // A scope of its own: the device is reset before the reclaim families set up swap.
    let scope = Cleanup::new();
    let dev = crate::swap::setup_zram_block(&scope, zram::device_bytes(s.zram_pages, s.samples))?;
    let d2 = dev.clone();
    let r = in_child(ctx, "zram block", move || {
        zram::block_rw(&d2, s.zram_pages, s.samples)
    })?;
    let errors = scope.run_all();
    if !errors.is_empty() {
        bail!("resetting {}: {}", dev.display(), errors.join("; "));
    }
    let mut v = Vec::new();
    for d in Data::ALL {
        let n = d.name();
        for (dir, map) in [("write", &r.write), ("read", &r.read)] {
            let m = Measurement::new(
                &format!("zram-{dir}-{n}"),
                "ns/page",
                &format!(
                    "O_DIRECT 4 KiB {dir}s of {} pages of {n} data to a zram block device ({}), CPU 0",
                    s.zram_pages,
                    crate::calibrate::machine::facts("").zram_algorithm
                ),
                map.get(n).cloned().unwrap_or_default(),
            )?;
            v.push(if dir == "write" && d == Data::Random {
                m.observe("mm_stat", r.mm_stat.clone())
            } else {
                m
            });
        }
    }
    Ok(v)
}

fn fam_readahead(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let s = ctx.sizes;
    let r = with_data_file(ctx, "ra", "file read faults", move |p| {
        readahead::sweep(p, s.readahead_pages, s.samples)
    })?;
    let ra_kb = std::fs::read_to_string("/sys/block/vda/queue/read_ahead_kb").unwrap_or_default();
    let n = s.readahead_pages;
    Ok(vec![
        Measurement::new(
            "file-read-fault-cold",
            "ns/page",
            &format!("sequential read of each page of a mapped {n}-page file just dropped from the page cache (readahead, device reads, fault-around), CPU 0"),
            r.cold,
        )?
        .observe("majflt_per_page", r.majflt_per_page)
        .observe("resident_before", r.resident_before_cold)
        .observe("read_ahead_kb", ra_kb.trim()),
        Measurement::new(
            "file-read-fault-warm",
            "ns/page",
            "the same sweep over a new mapping of the file once cached (fault-around only)",
            r.warm,
        )?,
        Measurement::new(
            "file-read-fault-unwritten-seq",
            "ns/page",
            &format!("read of each page of a mapped {n}-page file just made with fallocate and never written (unwritten extents: the page cache filled by zeroing, no I/O), in index order, CPU 0"),
            r.unwritten_seq,
        )?,
        Measurement::new(
            "file-read-fault-unwritten-random",
            "ns/page",
            "the same over a new such file, its pages in a fixed shuffled order",
            r.unwritten_random,
        )?,
    ])
}

fn fam_writeback(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let s = ctx.sizes;
    let n = s.writeback_pages;
    let r = with_data_file(ctx, "wb", "page-cache writeback", move |p| {
        writeback::measure(p, n, s.samples)
    })?;
    let spread = writeback::SPREAD;
    let mut v = Vec::new();
    for (tag, passes, what) in [
        (
            "random-unwritten",
            &r.random_unwritten,
            format!("{n} dirty pages, a random 1 in {spread} of a new fallocated file (unwritten extents), dirtied through a shared mapping and written back with sync_file_range, CPU 0"),
        ),
        (
            "random-written",
            &r.random_written,
            "the same pages dirtied again once their blocks are written".to_string(),
        ),
        (
            "seq-unwritten",
            &r.seq_unwritten,
            format!("every page of a new fallocated {n}-page file, dirtied in index order, written back the same way"),
        ),
    ] {
        let col = |f: fn(&writeback::Pass) -> f64| passes.iter().map(f).collect::<Vec<f64>>();
        let submit = Measurement::new(
            &format!("writeback-{tag}-submit"),
            "ns/page",
            &format!("{what}: the writing thread's CPU time in sync_file_range (do_writepages: page_mkclean, block mapping, bio submission), per page"),
            col(|p| p.caller_cpu),
        )?;
        let complete = Measurement::new(
                &format!("writeback-{tag}-complete"),
                "ns/page",
                &format!("{what}: all kernel threads' CPU time (schedstat) over the same window minus their time over an idle window as long right after, per page: the completion side (ext4's extent conversion workers, the block layer)"),
                col(|p| p.kthread_cpu - p.kthread_idle),
            )?
            .observe("wall_ns_per_page", col(|p| p.wall))
            .observe("kthread_ns_per_page", col(|p| p.kthread_cpu))
            .observe("kthread_idle_ns_per_page", col(|p| p.kthread_idle));
        // The long run's folio orders (recorded once): its figures per page become per folio.
        if tag == "seq-unwritten" {
            let orders = serde_json::json!(r.seq_folio_orders);
            v.push(submit.observe("folio_orders", orders.clone()));
            v.push(complete.observe("folio_orders", orders));
        } else {
            v.push(submit);
            v.push(complete);
        }
    }
    Ok(v)
}

fn fam_blockio(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let s = ctx.sizes;
    // 64 MiB: larger than a device cache line of readahead, small enough to write in a second.
    let file_pages = 16 * 1024;
    let r = with_data_file(ctx, "blk", "block device requests", move |p| {
        blockio::measure(p, file_pages, s.blockio_reqs, s.samples)
    })?;
    let dev = blockio::device_of(ctx.dir);
    let sched = std::fs::read_to_string(format!("/sys/class/block/{dev}/queue/scheduler"))
        .unwrap_or_default();
    let c = blockio::CLUSTER_PAGES;
    let n = s.blockio_reqs;
    let m = |name: &str, what: &str, v: Vec<f64>| {
        Measurement::new(
            name,
            "ns/request",
            &format!("{what}: O_DIRECT, one request in flight, {n} requests per sample at random aligned offsets of a written 64 MiB file on {dev}, CPU 0"),
            v,
        )
    };
    let mut out = vec![
        m("blk-read-1", "1-page read", r.read_1)?
            .observe("device", dev.as_str())
            .observe("scheduler", sched.trim()),
        m(
            "blk-read-cluster",
            &format!("{c}-page read"),
            r.read_cluster,
        )?,
        m("blk-write-1", "1-page write", r.write_1)?,
        m(
            "blk-write-cluster",
            &format!("{c}-page write"),
            r.write_cluster,
        )?,
    ];
    match blockio_at_depth(ctx) {
        Ok(mut v) => out.append(&mut v),
        // The one-in-flight figures stand on their own; the derivation notes the reason.
        Err(e) => {
            crate::cleanup::park_if_stopping();
            eprintln!("reclaimlab: calibrate blockio at the queue depth: {e:#}");
            out[0] = out[0].clone().observe("at_depth_error", format!("{e:#}"));
        }
    }
    Ok(out)
}

/// The disk's random 4 KiB read and write rates with its tags full (devrate.rs), on a 1 GiB
/// file of ours in --dir, removed afterwards whatever happens.
fn blockio_at_depth(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let (s, file_pages) = (ctx.sizes, 256 * 1024);
    let (disk, tags, depth) = devrate::queue_depth(ctx.dir);
    let secs = s.blockio_qd_secs;
    let r = with_data_file(ctx, "blkqd", "block device requests at depth", move |p| {
        devrate::measure(p, file_pages, depth, secs, s.samples)
    })?;
    let m = |name: &str, what: &str, runs: devrate::Runs| {
        Measurement::new(
            name,
            "ns/request",
            &format!("random 4 KiB O_DIRECT {what}s through io_uring, {depth} in flight (nr_tags {tags:?}, capped at {}), {secs} s a run, reads and writes alternating, at page offsets of a written 1 GiB file on {disk}: run time over requests completed", devrate::MAX_DEPTH),
            runs.ns_per_request,
        )
        .map(|x| {
            x.observe("depth", depth)
                .observe("nr_tags", tags.clone())
                .observe("disk", disk.as_str())
                .observe("engine", "io_uring")
                .observe("per_second", runs.per_second)
                .observe("requests", runs.requests)
        })
    };
    Ok(vec![
        m(devrate::READ, "read", r.read)?,
        m(devrate::WRITE, "write", r.write)?,
    ])
}

/// zram swap for the anonymous reclaim, once.
fn ensure_swap(ctx: &Ctx) -> Result<()> {
    if !ctx.swap_on.get() {
        let bytes = (ctx.sizes.reclaim_pages * mem::PAGE * 4) as u64;
        crate::swap::setup_zram(ctx.cleanup, bytes.max(256 << 20))?;
        ctx.swap_on.set(true);
    }
    Ok(())
}

fn per_page(out: &reclaim::RunOut, ns: f64, what: &str) -> Result<f64> {
    stats::per_unit(ns, out.pages_reclaimed, what)
}

fn fam_reclaim(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let s = ctx.sizes;
    let n = s.reclaim_pages;
    let half = (n / 2 * mem::PAGE) as u64;
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut small_pages = Vec::new();
    let mut large_pages = Vec::new();
    let mut folios = Vec::new();
    for _ in 0..s.samples {
        for (chunk, tag) in [(1, "small"), (512, "large")] {
            let job = Prep::File {
                path: reclaim::data_path(ctx.dir, tag),
                pages: n,
                chunk,
                observe: true,
            };
            let out = reclaim::run(ctx.root, ctx.cleanup, vec![(0, job)], half, 0, CHILD_LIMIT)?;
            let v = per_page(&out, out.children[0].reclaim_ns, "file reclaim")?;
            if chunk == 1 {
                small.push(v);
                small_pages.push(out.pages_reclaimed);
            } else {
                large.push(v);
                large_pages.push(out.pages_reclaimed);
                folios.push(out.children[0].folios);
            }
        }
    }
    ensure_swap(ctx)?;
    let mut anon = Vec::new();
    let mut anon_pages = Vec::new();
    let mut swapin = Vec::new();
    let mut swapped = Vec::new();
    for _ in 0..s.samples {
        let job = Prep::Anon {
            pages: n,
            data: Data::Pattern,
        };
        let out = reclaim::run(
            ctx.root,
            ctx.cleanup,
            vec![(0, job)],
            half,
            100,
            CHILD_LIMIT,
        )?;
        anon.push(per_page(&out, out.children[0].reclaim_ns, "anon reclaim")?);
        anon_pages.push(out.pages_reclaimed);
        swapped.push(out.children[0].swapped);
        if let Some(v) = out.children[0].swapin_ns_per_page {
            swapin.push(v);
        }
    }
    let mib = (n * mem::PAGE) >> 20;
    let mut v = vec![
        Measurement::new(
            "reclaim-file-order0",
            "ns/page",
            &format!("memcg limit reclaim of half of a clean, unmapped {mib} MiB file written 4 KiB at a time (order-0 folios); time of the limit write / pages the usage dropped, CPU 0"),
            small,
        )?
        .observe("pages_reclaimed", small_pages),
        Measurement::new(
            "reclaim-file-large",
            "ns/page",
            "the same for a file written 2 MiB at a time (large folios where the filesystem gives them)",
            large,
        )?
        .observe("pages_reclaimed", large_pages)
        .observe("folios_after", serde_json::to_value(&folios)?),
        Measurement::new(
            "reclaim-anon-zram",
            "ns/page",
            &format!("memcg limit reclaim of half of a {mib} MiB anonymous region of stress-ng-like data to zram swap (swappiness 100), CPU 0"),
            anon,
        )?
        .observe("pages_reclaimed", anon_pages),
    ];
    if !swapin.is_empty() {
        v.push(
            Measurement::new(
                "swapin-fault-zram",
                "ns/page",
                "read fault on each page of that region found in swap (pagemap), zram synchronous swap-in, CPU 0",
                swapin,
            )?
            .observe("pages_swapped", swapped),
        );
    }
    Ok(v)
}

/// The swap-in/reclaim cycle profiled with perf (cycle.rs): per stolen page, each class of
/// kernel work; several windows, one sample each.
fn fam_cycle(ctx: &Ctx) -> Result<Vec<Measurement>> {
    cycle::perf_available()?;
    ensure_swap(ctx)?;
    let quick = ctx.sizes.samples <= 5;
    let (limit_pages, warm, secs, windows) = if quick {
        (8192usize, 1.0f64, 2.0f64, 2usize)
    } else {
        (16384, 2.0, 4.0, 3)
    };
    let freq = 4999;
    let mut got: Vec<cycle::Window> = Vec::new();
    for _ in 0..windows {
        let (cg, undo) = child::fresh_memcg(ctx.root, ctx.cleanup)?;
        cg.set_limit((limit_pages * mem::PAGE) as u64)?;
        let dir = ctx.dir.to_path_buf();
        let cg_procs = cg.clone();
        let prof = std::thread::spawn(
            move || -> Result<(
                String,
                counters::Snapshot,
                counters::Snapshot,
                f64,
                u64,
                Option<f64>,
            )> {
                // perf and its sampling stay off the measured CPU.
                mem::pin(1)?;
                std::thread::sleep(Duration::from_secs_f64(warm));
                let procs = cg_procs.pids().unwrap_or_default();
                let cpu0 = cycle::cpu_ns(&procs);
                let ticks0 = cycle::cpu_ticks(1);
                let before = counters::Snapshot::take(None);
                let t = Instant::now();
                let data = cycle::record_cpu0(&dir, secs, freq)?;
                let took = t.elapsed().as_secs_f64();
                let after = counters::Snapshot::take(None);
                let cpu1_busy = cycle::busy_share(ticks0, cycle::cpu_ticks(1));
                let task_ns = cycle::cpu_ns(&procs).saturating_sub(cpu0);
                // Symbolising takes seconds: after the window's counters are read.
                let text = cycle::script(&data);
                Ok((text?, before, after, took, task_ns, cpu1_busy))
            },
        );
        // Fork from CPU 0: a child that ever ran on CPU 1 keeps it in its mm_cpumask (6.18
        // trims the mask only on flushes that name the mm), and try_to_unmap would then defer
        // its flushes and send IPIs to whatever runs there.
        let saved = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))?;
        mem::pin(0)?;
        let run = child::run_in(&cg, ctx.cleanup, "reclaim cycle", CHILD_LIMIT, move || {
            mem::pin(0)?;
            let r = mem::Region::anon(2 * limit_pages)?;
            // Outlive the recording (perf's start-up included) by a margin.
            let until = Instant::now() + Duration::from_secs_f64(warm + secs + 3.0);
            let mut touched = 0u64;
            while Instant::now() < until {
                for i in 0..r.pages() {
                    // One byte per page, as anon-sweep's worker: the page stays nearly zero.
                    r.write(i, r.read(i).wrapping_add(1));
                }
                touched += r.pages() as u64;
            }
            Ok((std::process::id() as i64, touched))
        });
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &saved)?;
        let prof = prof
            .join()
            .map_err(|_| anyhow::anyhow!("the perf thread panicked"))?;
        undo.run()?;
        let (pid, _touched) = run?;
        let (text, before, after, took, task_ns, cpu1_busy) = prof?;
        let d = |k: &str| {
            after
                .vmstat
                .get(k)
                .copied()
                .unwrap_or(0)
                .saturating_sub(before.vmstat.get(k).copied().unwrap_or(0))
        };
        let w = cycle::Window {
            classes: cycle::classes(&cycle::parse_script(&text), pid),
            freq,
            pgsteal: d("pgsteal_anon"),
            pgscan: d("pgscan_anon"),
            pswpin: d("pswpin"),
            pgfault: d("pgfault"),
            seconds: took,
            task_ns,
            cpu1_busy,
        };
        if w.total_samples() < 100 || w.pgsteal == 0 {
            bail!(
                "the profiled window had {} samples of the sweeping task and {} steals: perf \
                 cannot sample the kernel here, or the cycle did not reclaim",
                w.total_samples(),
                w.pgsteal
            );
        }
        got.push(w);
    }
    cycle::measurements(&got, limit_pages)
}

fn fam_contention(ctx: &Ctx) -> Result<Vec<Measurement>> {
    let mut v = one_vs_two(ctx, "file")?;
    ensure_swap(ctx)?;
    v.append(&mut one_vs_two(ctx, "anon")?);
    Ok(v)
}

/// One reclaimer against two at once in one memcg (CPUs 0 and 1), of clean order-0 page
/// cache (`file`) or of anonymous memory to zram swap (`anon`): the same pages in all.
fn one_vs_two(ctx: &Ctx, kind: &str) -> Result<Vec<Measurement>> {
    let s = ctx.sizes;
    let n = s.reclaim_pages;
    let bytes = (n * mem::PAGE) as u64;
    let anon = kind == "anon";
    let job = |tag: &str, pages| {
        if anon {
            Prep::Anon {
                pages,
                data: Data::Pattern,
            }
        } else {
            Prep::File {
                path: reclaim::data_path(ctx.dir, tag),
                pages,
                chunk: 1,
                observe: false,
            }
        }
    };
    let swappiness = if anon { 100 } else { 0 };
    let mut one = Vec::new();
    let mut one_cpu = Vec::new();
    let mut two_wall = Vec::new();
    let mut two_cpu = Vec::new();
    let mut two_wallsum = Vec::new();
    for _ in 0..s.samples {
        let solo = reclaim::run(
            ctx.root,
            ctx.cleanup,
            vec![(0, job("solo", 2 * n))],
            bytes,
            swappiness,
            CHILD_LIMIT,
        )?;
        one.push(per_page(
            &solo,
            solo.children[0].reclaim_ns,
            "one-CPU reclaim",
        )?);
        one_cpu.push(per_page(
            &solo,
            solo.children[0].reclaim_cpu_ns,
            "one-CPU reclaim",
        )?);
        let pair = reclaim::run(
            ctx.root,
            ctx.cleanup,
            vec![(0, job("pair", n)), (1, job("pair", n))],
            bytes,
            swappiness,
            CHILD_LIMIT,
        )?;
        let wall = pair
            .children
            .iter()
            .map(|c| c.reclaim_ns)
            .fold(0.0, f64::max);
        let wallsum: f64 = pair.children.iter().map(|c| c.reclaim_ns).sum();
        let cpu: f64 = pair.children.iter().map(|c| c.reclaim_cpu_ns).sum();
        two_wall.push(per_page(&pair, wall, "two-CPU reclaim")?);
        two_wallsum.push(per_page(&pair, wallsum, "two-CPU reclaim")?);
        two_cpu.push(per_page(&pair, cpu, "two-CPU reclaim")?);
    }
    let mib = (n * mem::PAGE) >> 20;
    let what = if anon {
        format!("{mib} MiB of anonymous memory (stress-ng-like data) to zram swap, swappiness 100; each reclaimer's own pages are mapped by its own process, so with two the flushes of the other's pages are shootdowns to the other CPU")
    } else {
        format!("{mib} MiB of clean order-0 page cache")
    };
    let name = |suffix: &str| format!("reclaim-{kind}-{suffix}");
    Ok(vec![
        Measurement::new(
            &name("one-cpu"),
            "ns/page",
            &format!("one reclaimer on CPU 0 takes {what} from a memcg holding twice that"),
            one,
        )?
        // Pages reclaimed in all: the contention checks run the model with the same.
        .observe("reclaim_pages", n as u64),
        Measurement::new(
            &name("two-cpus-wall"),
            "ns/page",
            &format!("two reclaimers (CPU 0 and CPU 1) at once in one memcg take {what} in all: wall time (the slower one) per page"),
            two_wall,
        )?,
        Measurement::new(
            &name("one-cpu-cputime"),
            "ns/page",
            "the one reclaimer's thread CPU time (CLOCK_THREAD_CPUTIME_ID) in its reclaiming write, per page",
            one_cpu,
        )?,
        Measurement::new(
            &name("two-cpus-wallsum"),
            "ns/page",
            "the two reclaimers' wall times added, per page (each write lasts until the usage is under the limit, so this is about twice the wall time whether or not they worked in parallel)",
            two_wallsum,
        )?,
        Measurement::new(
            &name("two-cpus-cputime"),
            "ns/page",
            "the two reclaimers' thread CPU times (CLOCK_THREAD_CPUTIME_ID) in their writes added, per page",
            two_cpu,
        )?,
    ])
}

/// Set a derived cost, or say why it is not set.
fn put(
    costs: &mut BTreeMap<String, Derived>,
    notes: &mut Vec<String>,
    name: &str,
    d: Option<Derived>,
    why: &str,
) {
    match d {
        Some(d) => {
            costs.insert(name.to_string(), d);
        }
        None => notes.push(format!("{name} not set: {why}")),
    }
}

fn find<'a>(ms: &'a [Measurement], name: &str) -> Option<&'a Measurement> {
    ms.iter().find(|m| m.name == name)
}

fn median_observed(m: &Measurement, key: &str) -> Option<f64> {
    let v: Vec<f64> = serde_json::from_value(m.observed.get(key)?.clone()).ok()?;
    reclaimlab_core::stats::summarize(&v).map(|s| s.median)
}

/// Costs and checks from the measurements (pure: unit-tested with synthetic measurements).
pub fn derive_all(ms: &[Measurement]) -> (BTreeMap<String, Derived>, Vec<Check>, Vec<String>) {
    let mut costs = BTreeMap::new();
    let mut notes = Vec::new();
    derive_cpu_costs(ms, &mut costs, &mut notes);
    derive_zram_costs(ms, &mut costs, &mut notes);
    derive_flush_costs(ms, &mut costs, &mut notes);
    derive_line_transfer(ms, &mut costs, &mut notes);
    derive_device_costs(ms, &mut costs, &mut notes);
    ipi::derive_ipi_handle(ms, &mut costs, &mut notes);
    ipi::derive_ipi_delivery(ms, &mut costs, &mut notes);
    paths::derive(ms, &mut costs, &mut notes);
    writeback::derive(ms, &mut costs, &mut notes);
    cycle::derive(ms, &mut costs, &mut notes);
    let checks = checks(ms, &costs);
    (costs, checks, notes)
}

/// A cost that is one benchmark's samples.
fn direct(ms: &[Measurement], m: &str, source: &str) -> Option<Derived> {
    find(ms, m).and_then(|x| Derived::new(x.samples.clone(), source, &[m]))
}

/// A cost that is one benchmark minus another, paired per sample.
pub(super) fn diff(ms: &[Measurement], a: &str, b: &str, source: &str) -> Option<Derived> {
    let (x, y) = (find(ms, a)?, find(ms, b)?);
    Derived::new(paired_diff(&x.samples, &y.samples), source, &[a, b])
}

/// The fault and page costs: the zero-page fault, clearing and storing a page.
fn derive_cpu_costs(
    ms: &[Measurement],
    costs: &mut BTreeMap<String, Derived>,
    notes: &mut Vec<String>,
) {
    if find(ms, "anon-read-fault").is_some() {
        put(
            costs,
            notes,
            "fault_base",
            direct(
                ms,
                "anon-read-fault",
                "first read fault of an anonymous page (the zero page is mapped: exception, \
                 handle_mm_fault, PTE install; no allocation, zeroing or charge)",
            ),
            "negative median",
        );
    }
    // One clear's cost, page by page or over a whole 2 MiB folio; a workload's store pass.
    for (cost, bench, source) in [
        ("zero_page", "clear-page", "rep stosb over a resident, cache-cold 4 KiB page in user space (what clear_page_erms runs)"),
        ("zero_page_long", "clear-2m", "one rep stosb over each resident, cache-cold 2 MiB in user space, per 4 KiB (the memset of folio_zero_segment over a PMD-sized folio)"),
        ("touch_page", "page-store", "memset of a resident, cache-cold 4 KiB page (a workload's store pass)"),
    ] {
        if find(ms, bench).is_some() {
            put(costs, notes, cost, direct(ms, bench, source), "negative median");
        }
    }
}

/// zram's compression and decompression, by what the page holds.
fn derive_zram_costs(
    ms: &[Measurement],
    costs: &mut BTreeMap<String, Derived>,
    notes: &mut Vec<String>,
) {
    if find(ms, "zram-write-pattern").is_some() {
        put(
            costs,
            notes,
            "zram_compress",
            diff(
                ms,
                "zram-write-pattern",
                "zram-write-zero",
                "zram write of a stress-ng-like page minus the same write of a zero page (same-filled: no compression), O_DIRECT, paired per sample",
            ),
            "the write difference was negative (noise larger than the compressor)",
        );
        put(
            costs,
            notes,
            "zram_decompress",
            diff(
                ms,
                "zram-read-pattern",
                "zram-read-zero",
                "zram read of a stress-ng-like page minus the same read of a zero page (filled, not decompressed), O_DIRECT, paired per sample",
            ),
            "the read difference was negative (noise larger than the decompressor)",
        );
    }
}

/// Local TLB flushes: one page (INVLPG) and the whole mm.
fn derive_flush_costs(
    ms: &[Measurement],
    costs: &mut BTreeMap<String, Derived>,
    notes: &mut Vec<String>,
) {
    if find(ms, "flush-invlpg-fit").is_some() {
        put(
            costs,
            notes,
            "local_flush_one",
            direct(ms, "flush-invlpg-fit", "mprotect of n present minus n none PTEs: slope over n = 1..32 (PTE change + INVLPG) minus slope over n = 40..256 (PTE change)"),
            "the fitted difference was negative",
        );
        put(
            costs,
            notes,
            "local_flush_all",
            direct(ms, "flush-full-fit", "the same series: intercept over n = 40..256 (a full flush with the flush path's fixed work; the PTE changes are the slope)"),
            "the fitted intercept was negative",
        );
    }
}

/// A cache line written last by the other CPU, fetched and written (a locked section after
/// another CPU's, locking.rs in the simulator).
fn derive_line_transfer(
    ms: &[Measurement],
    costs: &mut BTreeMap<String, Derived>,
    notes: &mut Vec<String>,
) {
    if find(ms, "line-turn-two-cpus").is_some() {
        put(
            costs,
            notes,
            "line_transfer",
            diff(
                ms,
                "line-turn-two-cpus",
                "line-turn-one-cpu",
                "a counter's cache line handed between CPUs 0 and 1 (each turn reads the other CPU's increment and writes its own) minus the same turns on one CPU, paired per sample",
            ),
            "the two-CPU turn was not slower than the one-CPU turn",
        );
    }
}

/// The disk: a file read fault's device part, and a block swap device's request latency and transfer.
fn derive_device_costs(
    ms: &[Measurement],
    costs: &mut BTreeMap<String, Derived>,
    notes: &mut Vec<String>,
) {
    if find(ms, "file-read-fault-cold").is_some() {
        put(
            costs,
            notes,
            "file_read_page",
            diff(
                ms,
                "file-read-fault-cold",
                "file-read-fault-warm",
                "sequential read sweep of a mapped file not cached minus the same sweep cached, per page (device read and page-cache fill, amortised by readahead)",
            ),
            "cold was not slower than warm",
        );
    }
    if let (Some(one), Some(cl)) = (find(ms, "blk-read-1"), find(ms, "blk-read-cluster")) {
        // A request's time = its latency + a transfer per page: the slope between the 1- and
        // the 8-page reads is the transfer, the rest of the 1-page request the latency.
        let per = (blockio::CLUSTER_PAGES - 1) as f64;
        let transfer: Vec<f64> = paired_diff(&cl.samples, &one.samples)
            .into_iter()
            .map(|d| d / per)
            .collect();
        let tr = Derived::new(
            transfer,
            "O_DIRECT 8-page read minus 1-page read, per extra page (one request in flight, the disk under --dir)",
            &["blk-read-cluster", "blk-read-1"],
        );
        // Without a transfer the split is unknown: no latencies either.
        let t = tr.as_ref().map(|d| d.ns);
        put(
            costs,
            notes,
            "swap_page_transfer",
            tr,
            "the 8-page read was not slower than the 1-page read",
        );
        // The disk under --dir is the swap file's and the data files' alike: the page
        // cache's request latencies are the same figures.
        for (cost, bench, what) in [
            ("swap_read_latency", "blk-read-1", "read"),
            ("swap_write_latency", "blk-write-1", "write"),
            ("file_read_latency", "blk-read-1", "read"),
            ("file_write_latency", "blk-write-1", "write"),
        ] {
            let d = find(ms, bench).zip(t).and_then(|(m, t)| {
                Derived::new(
                    m.samples.iter().map(|x| x - t).collect(),
                    &format!("O_DIRECT 1-page {what}, one request in flight, minus swap_page_transfer (the disk under --dir)"),
                    &[bench, "blk-read-cluster", "blk-read-1"],
                )
            });
            put(
                costs,
                notes,
                cost,
                d,
                "the request took less than its transfer",
            );
        }
    }
    if let Some(e) = find(ms, "blk-read-1").and_then(|m| m.observed.get("at_depth_error")) {
        notes.push(format!(
            "blockio at the queue depth not measured (file_read_request and file_write_request not set): {}",
            e.as_str().unwrap_or_default()
        ));
    }
    let (read_page, write_page) = device_page_costs(costs);
    devrate::derive(ms, &read_page, &write_page, costs, notes);
}

/// The page costs the request costs are net of, without a profile to take them from: this
/// run's `file_read_page` if the readahead family measured it, else the built-in table's
/// (calibrate does not measure `file_write_page`). `validate --calibrate` derives the request
/// costs again against the base profile's page costs ([`derive_device_requests`]).
fn device_page_costs(costs: &BTreeMap<String, Derived>) -> (devrate::PageCost, devrate::PageCost) {
    let t = reclaimlab_sim::cost::CostTable::x86();
    let builtin = |ns: u64| devrate::PageCost {
        ns: ns as f64,
        what: "the built-in table's".into(),
    };
    let read = costs.get("file_read_page").map_or_else(
        || builtin(t.file_read_page),
        |d| devrate::PageCost {
            ns: d.ns,
            what: "this run's".into(),
        },
    );
    (read, builtin(t.file_write_page))
}

/// `file_read_request` and `file_write_request` again, net of a profile's page costs (the
/// profile they are laid over, so that page + request is the measured time per request): `None`
/// keeps the figure `derive_all` subtracted.
pub fn derive_device_requests(
    cal: &mut Calibration,
    read_page: Option<devrate::PageCost>,
    write_page: Option<devrate::PageCost>,
) {
    let (r, w) = device_page_costs(&cal.costs);
    let (r, w) = (read_page.unwrap_or(r), write_page.unwrap_or(w));
    cal.notes.retain(|n| {
        ![
            "file_read_request",
            "file_write_request",
            "swap_read_request",
            "swap_write_request",
        ]
        .iter()
        .any(|c| n.starts_with(c))
    });
    devrate::derive(&cal.measurements, &r, &w, &mut cal.costs, &mut cal.notes);
}

fn checks(ms: &[Measurement], costs: &BTreeMap<String, Derived>) -> Vec<Check> {
    let mut v = Vec::new();
    ipi::ipi_checks(ms, costs, &mut v);
    reclaim_checks(ms, costs, &mut v);
    contention::checks(ms, costs, &mut v);
    v
}

/// Reclaim per page, by page type, against the charges of its path.
fn reclaim_checks(ms: &[Measurement], costs: &BTreeMap<String, Derived>, v: &mut Vec<Check>) {
    use derive::check;
    let c64 = |x: u64| x as f64;
    let file_path = |t: &reclaimlab_sim::cost::CostTable| c64(t.isolate_folio + t.remove_mapping);
    if let Some(m) = find(ms, "reclaim-file-order0") {
        v.push(check(
            "reclaim of a clean unmapped file page (order 0)",
            m,
            "isolate_folio + remove_mapping (an unmapped folio needs no rmap walk)",
            file_path,
            costs,
            "whole memcg limit-reclaim path per page: the LRU scan, shrink_folio_list, freeing",
        ));
    }
    if let Some(m) = find(ms, "reclaim-file-large") {
        let per_folio = m
            .observed
            .get("folios_after")
            .and_then(|f| {
                serde_json::from_value::<Vec<Option<pagemap::FolioCount>>>(f.clone()).ok()
            })
            .and_then(|v| {
                let (mut pages, mut folios) = (0u64, 0u64);
                for c in v.into_iter().flatten() {
                    pages += c.resident;
                    folios += c.large_heads + (c.resident - c.in_large);
                }
                (folios > 0).then(|| pages as f64 / folios as f64)
            })
            .unwrap_or(1.0);
        v.push(check(
            "reclaim of a clean unmapped file page in large folios",
            m,
            &format!(
                "(isolate_folio + remove_mapping) / {per_folio:.1} pages per folio (kpageflags of the pages left)"
            ),
            move |t| file_path(t) / per_folio,
            costs,
            "per page; the folio size is what /proc/kpageflags showed for the unreclaimed half",
        ));
    }
    if let Some(m) = find(ms, "reclaim-anon-zram") {
        v.push(check(
            "reclaim of an anon page to zram",
            m,
            "isolate_folio + 2 rmap_walk + add_to_swap + zram_compress + swap_writeout + remove_mapping + local_flush_all / 32",
            |t| {
                c64(t.isolate_folio + 2 * t.rmap_walk + t.add_to_swap + t.zram_compress)
                    + c64(t.swap_writeout + t.remove_mapping)
                    + c64(t.local_flush_all) / 32.0
            },
            costs,
            "one mapping, one CPU, stress-ng-like data. Not used to set swap_writeout: a v1 limit \
             write (mem_cgroup_resize_max) reclaims in calls of try_to_free_mem_cgroup_pages(1), \
             each a whole do_try_to_free_pages set-up for 32 pages, which reclaim from a charge \
             shares only in part",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, samples: &[f64]) -> Measurement {
        Measurement::new(name, "ns/page", "synthetic", samples.to_vec()).unwrap()
    }

    #[test]
    fn selects_families_in_run_order_and_names_a_bad_one() {
        assert_eq!(select(None).unwrap().len(), FAMILIES.len());
        let only = vec!["flush".to_string(), "fault".to_string()];
        assert_eq!(select(Some(&only)).unwrap(), vec!["fault", "flush"]);
        let e = select(Some(&["faults".to_string()]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"faults\"") && e.contains("fault, access"),
            "{e}"
        );
    }

    #[test]
    fn derives_costs_from_paired_differences() {
        let ms = vec![
            m("anon-read-fault", &[900.0, 1000.0, 1100.0]),
            m("zram-write-pattern", &[5000.0, 5200.0, 9000.0]),
            m("zram-write-zero", &[1000.0, 1100.0, 5000.0]),
            m("zram-read-pattern", &[3000.0, 3000.0, 3000.0]),
            m("zram-read-zero", &[3100.0, 3200.0, 3300.0]),
            m("flush-invlpg-fit", &[120.0, 130.0, 110.0]),
            m("flush-full-fit", &[400.0, 420.0, 380.0]),
            m("flush-ranged-fixed-fit", &[1000.0, 1000.0, 1000.0]),
            m("shootdown-receiver-gap", &[5120.0, 5130.0, 5110.0])
                .observe("matched_gaps", vec![890.0, 990.0, 940.0])
                .observe("tlb_ipis", vec![900.0, 1000.0, 950.0]),
            m("mprotect-1page-one-cpu", &[1000.0, 1000.0, 1000.0]),
            m("mprotect-1page-two-cpus-mean", &[11000.0, 12000.0, 10000.0])
                .observe("tlb_ipis_per_call", vec![0.5, 0.5, 0.49]),
            m("mprotect-1page-two-cpus-ipi", &[21000.0, 22000.0, 20000.0]),
        ];
        let (costs, checks, notes) = derive_all(&ms);
        assert_eq!(costs["fault_base"].ns, 1000.0);
        // Paired: 4000, 4100, 4000 -> 4000 (unpaired medians would say 5200 - 1100 = 4100).
        assert_eq!(costs["zram_compress"].ns, 4000.0);
        assert_eq!(
            costs["zram_compress"].from,
            vec!["zram-write-pattern", "zram-write-zero"]
        );
        // Reads of the pattern were not slower than zero reads: not set, and said why.
        assert!(!costs.contains_key("zram_decompress"));
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("zram_decompress not set")),
            "{notes:?}"
        );
        // ipi_handle = gap - local_flush_one (120).
        assert_eq!(costs["ipi_handle"].ns, 5000.0);
        let avg = checks
            .iter()
            .find(|c| c.name.starts_with("shootdown, average"))
            .unwrap();
        assert_eq!(avg.measured, 10000.0);
        assert!(avg.note.contains("0.500 IPIs per call"), "{}", avg.note);
        let rt = checks
            .iter()
            .find(|c| c.name.starts_with("shootdown round trip"))
            .unwrap();
        assert_eq!(rt.measured, 20000.0);
        let d = reclaimlab_sim::cost::CostTable::x86();
        assert_eq!(
            rt.sim_default,
            (d.ipi_send + d.ipi_delivery + d.ipi_handle + d.local_flush_one) as f64
        );
        let sd = checks
            .iter()
            .find(|c| c.name == "ipi_send + ipi_delivery")
            .unwrap();
        assert_eq!(sd.measured, 14880.0);
        // ipi_delivery takes the residual beyond ipi_send's estimate, so the calibrated
        // round trip is the measured one.
        assert_eq!(costs["ipi_delivery"].ns, 14880.0 - d.ipi_send as f64);
        assert_eq!(rt.sim_calibrated, 20000.0);
    }

    #[test]
    fn no_ipi_handle_when_the_remote_cpu_got_no_shootdowns() {
        let ms = vec![
            m("flush-invlpg-fit", &[100.0]),
            m("flush-full-fit", &[300.0]),
            m("shootdown-receiver-gap", &[3000.0])
                .observe("matched_gaps", vec![3.0])
                .observe("tlb_ipis", vec![0.0]),
            m("mprotect-1page-two-cpus-mean", &[1500.0]).observe("tlb_ipis_per_call", vec![0.0]),
        ];
        let (costs, _, notes) = derive_all(&ms);
        assert!(!costs.contains_key("ipi_handle"));
        assert!(
            notes.iter().any(|n| n.contains("received 0 shootdowns")),
            "{notes:?}"
        );
    }

    #[test]
    fn the_request_costs_are_net_of_the_page_costs_of_the_profile_they_join() {
        let qd = |name: &str, v: &[f64]| m(name, v).observe("depth", 128);
        let mut ms = vec![
            qd(devrate::READ, &[12_000.0, 11_000.0, 13_000.0]),
            qd(devrate::WRITE, &[11_000.0]),
        ];
        let t = reclaimlab_sim::cost::CostTable::x86();
        let (costs, _, _) = derive_all(&ms);
        // No readahead family: the built-in page costs.
        assert_eq!(
            costs["file_read_request"].ns,
            12_000.0 - t.file_read_page as f64
        );
        assert!(costs["file_read_request"]
            .source
            .contains("the built-in table's"));
        // This run's file_read_page when the readahead family measured it.
        ms.push(m("file-read-fault-cold", &[3_000.0, 3_000.0, 3_000.0]));
        ms.push(m("file-read-fault-warm", &[500.0, 500.0, 500.0]));
        let (costs, checks, notes) = derive_all(&ms);
        assert_eq!(costs["file_read_request"].ns, 12_000.0 - 2_500.0);
        // validate --calibrate: again, against the base profile's page costs.
        let mut cal = Calibration {
            schema: SCHEMA.into(),
            command: String::new(),
            quick: false,
            families: vec![],
            machine: machine::Facts::default(),
            seconds: 0.0,
            loadavg: vec![],
            measurements: ms,
            costs,
            checks,
            notes,
        };
        let page = |ns| devrate::PageCost {
            ns,
            what: "base".into(),
        };
        derive_device_requests(&mut cal, Some(page(2_000.0)), Some(page(2_300.0)));
        assert_eq!(cal.costs["file_read_request"].ns, 10_000.0);
        assert_eq!(cal.costs["file_write_request"].ns, 8_700.0);
        // No base page cost: the figure derive_all subtracted stays.
        derive_device_requests(&mut cal, None, None);
        assert_eq!(cal.costs["file_read_request"].ns, 9_500.0);
        assert!(!cal.notes.iter().any(|n| n.starts_with("file_read_request")));
    }

    #[test]
    fn the_disk_splits_into_a_request_latency_and_a_transfer_per_page() {
        let ms = vec![
            m("blk-read-1", &[100_000.0, 102_000.0, 101_000.0]),
            m("blk-read-cluster", &[114_000.0, 116_000.0, 115_000.0]),
            m("blk-write-1", &[110_000.0, 111_000.0, 109_000.0]),
        ];
        let (costs, _, notes) = derive_all(&ms);
        // (114 - 100) / 7 = 2 us a page, each sample.
        assert_eq!(costs["swap_page_transfer"].ns, 2_000.0);
        assert_eq!(costs["swap_read_latency"].ns, 99_000.0);
        assert_eq!(costs["swap_write_latency"].ns, 108_000.0);
        assert_eq!(costs["file_read_latency"].ns, 99_000.0);
        assert_eq!(costs["file_write_latency"].ns, 108_000.0);
        // A cluster read no slower than one page: no transfer, and no latencies from it.
        let ms = vec![
            m("blk-read-1", &[100_000.0]),
            m("blk-read-cluster", &[90_000.0]),
        ];
        let (costs, _, notes2) = derive_all(&ms);
        assert!(!costs.contains_key("swap_page_transfer"), "{notes:?}");
        assert!(!costs.contains_key("swap_read_latency"));
        assert!(
            notes2
                .iter()
                .any(|n| n.starts_with("swap_page_transfer not set")),
            "{notes2:?}"
        );
    }
}
