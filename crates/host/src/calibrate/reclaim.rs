//! Memcg limit reclaim of a known set of pages, per page, by type: clean unmapped page cache in
//! order-0 folios, the same in large folios, and anonymous pages to zram (then faulted back in:
//! the swap-in cost). Also the same file reclaim on one CPU against two CPUs at once in the
//! same memcg (one lruvec: its lru_lock, the memcg's counters and the zone lock are shared).
//!
//! Each reclaimer is a forked child inside the memcg that prepares its pages, says "ready" and
//! waits. The parent then sends every child the order at once: on cgroup v1 (and v2 without
//! memory.reclaim) "limit T", lowering memory.limit_in_bytes to T = usage − the bytes to reclaim
//! (the write returns once usage is below T: mem_cgroup_resize_max reclaiming in the writer's
//! context); on v2 "reclaim X", a write to memory.reclaim. The pages reclaimed are the drop in
//! the memcg's usage, measured by the parent.

use super::child::fresh_memcg;
use super::mem::{ns_since, pin, Data, Region, PAGE};
use super::pagemap::{self, FolioCount};
use crate::cgroup::{MemcgRoot, Version};
use crate::cleanup::{remove_file, Cleanup};
use crate::proc::{fork_in_memcg, read_line};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a reclaim child puts in its memcg before the reclaim.
#[derive(Clone, Debug)]
pub enum Prep {
    /// A file of `pages` written `chunk` pages per write(2) (the page cache allocates folios
    /// of up to that size), fsync'ed: clean, unmapped page cache. `observe`: afterwards, count
    /// the rest's large folios through /proc/kpageflags.
    File {
        path: PathBuf,
        pages: usize,
        chunk: usize,
        observe: bool,
    },
    /// An anonymous region of `pages` filled with `data`; afterwards its swapped-out pages are
    /// read back, one fault each, timed.
    Anon { pages: usize, data: Data },
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ChildReport {
    /// Wall time of the reclaiming write.
    pub reclaim_ns: f64,
    /// The reclaimer thread's CPU time in that write (CLOCK_THREAD_CPUTIME_ID: user and
    /// system): below the wall time when it slept (waits, throttling), not when it spun.
    #[serde(default)]
    pub reclaim_cpu_ns: f64,
    /// Anon: pages found in swap after the reclaim and the ns per page of faulting them back.
    pub swapped: u64,
    pub swapin_ns_per_page: Option<f64>,
    pub folios: Option<FolioCount>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RunOut {
    pub pages_reclaimed: u64,
    /// From the order to the last child's return.
    pub wall_ns: f64,
    pub children: Vec<ChildReport>,
}

fn prepare(prep: &Prep) -> Result<Option<Region>> {
    match prep {
        Prep::File {
            path, pages, chunk, ..
        } => {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .with_context(|| format!("creating {}", path.display()))?;
            let mut buf = Vec::with_capacity(chunk * PAGE);
            let mut i = 0;
            while i < *pages {
                buf.clear();
                let n = (*chunk).min(pages - i);
                for k in 0..n {
                    buf.extend_from_slice(&Data::Pattern.page((i + k) as u64));
                }
                f.write_all(&buf)?;
                i += n;
            }
            f.sync_all().context("fsync")?;
            Ok(None)
        }
        Prep::Anon { pages, data } => {
            let r = Region::anon(*pages)?;
            for i in 0..*pages {
                r.fill(i, &data.page(i as u64));
            }
            Ok(Some(r))
        }
    }
}

fn after(prep: &Prep, region: Option<Region>, rep: &mut ChildReport) -> Result<()> {
    match (prep, region) {
        (Prep::Anon { pages, .. }, Some(r)) => {
            let swapped = pagemap::swapped(&pagemap::entries(r.page(0) as usize, *pages)?);
            rep.swapped = swapped.len() as u64;
            if !swapped.is_empty() {
                let t = Instant::now();
                for i in &swapped {
                    r.read(*i);
                }
                rep.swapin_ns_per_page = Some(ns_since(t) / swapped.len() as f64);
            }
        }
        (
            Prep::File {
                path,
                pages,
                observe: true,
                ..
            },
            _,
        ) => {
            // Only the pages still cached (mincore does not fault): touching a reclaimed
            // page would read it back in, in folios of readahead's choosing.
            let m = crate::workers::Mapping::map(path, false)?;
            let cached = super::readahead::cached_pages(m.addr, *pages)?;
            for i in &cached {
                m.touch(*i, false);
            }
            let e = pagemap::entries(m.addr, *pages)?;
            let e: Vec<u64> = cached.iter().map(|i| e[*i]).collect();
            rep.folios = Some(pagemap::folio_count(&e)?);
        }
        _ => {}
    }
    Ok(())
}

fn say(to: &mut File, line: &str) -> Result<()> {
    to.write_all(format!("{line}\n").as_bytes())
        .context("writing to the other side")
}

fn hear(from: &mut File, buf: &mut Vec<u8>, limit: Duration) -> Result<String> {
    match read_line(from, buf, Instant::now() + limit)? {
        Some(l) => Ok(l),
        None => bail!("no answer within {limit:?}"),
    }
}

/// This thread's CPU time so far, ns.
pub(super) fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// The child: prepare, "ready", obey the order (timed), "reclaimed NS", wait, the after-part,
/// then the JSON report.
fn child(cpu: usize, prep: Prep, cg_dir: PathBuf, mut rx: File, mut tx: File) -> Result<()> {
    pin(cpu)?;
    let region = prepare(&prep)?;
    say(&mut tx, "ready")?;
    let mut buf = Vec::new();
    let order = hear(&mut rx, &mut buf, Duration::from_secs(600))?;
    let (file, value) = match order.split_once(' ') {
        Some(("limit", v)) => ("memory.limit_in_bytes", v.to_string()),
        Some(("max", v)) => ("memory.max", v.to_string()),
        Some(("reclaim", v)) => ("memory.reclaim", v.to_string()),
        _ => bail!("bad order {order:?}"),
    };
    let c = thread_cpu_ns();
    let t = Instant::now();
    let r = std::fs::write(cg_dir.join(file), &value);
    let reclaim_ns = ns_since(t);
    let reclaim_cpu_ns = thread_cpu_ns() - c;
    match r {
        // memory.reclaim says EAGAIN when it reclaimed less than asked: the usage drop counts.
        Err(e) if file == "memory.reclaim" && e.raw_os_error() == Some(libc::EAGAIN) => {}
        Err(e) => return Err(e).with_context(|| format!("writing {value} to {file}")),
        Ok(()) => {}
    }
    say(&mut tx, &format!("reclaimed {reclaim_ns}"))?;
    hear(&mut rx, &mut buf, Duration::from_secs(600))?;
    let mut rep = ChildReport {
        reclaim_ns,
        reclaim_cpu_ns,
        ..Default::default()
    };
    after(&prep, region, &mut rep)?;
    say(&mut tx, &serde_json::to_string(&rep)?)
}

/// Run one reclaim of `bytes` in a fresh memcg by the children `jobs` (CPU, preparation) at
/// once. `swappiness` (v1 only) 0 keeps anon out of a file reclaim, 100 lets anon go.
pub fn run(
    root: &MemcgRoot,
    cleanup: &Cleanup,
    jobs: Vec<(usize, Prep)>,
    bytes: u64,
    swappiness: u32,
    limit: Duration,
) -> Result<RunOut> {
    let (cg, cg_undo) = fresh_memcg(root, cleanup)?;
    cg.set_swappiness(swappiness)?;
    let mut files = Vec::new();
    for (_, p) in &jobs {
        if let Prep::File { path, .. } = p {
            let p2 = path.clone();
            files.push(
                cleanup.defer(format!("data file {}", path.display()), move || {
                    remove_file(&p2)
                })?,
            );
        }
    }
    let n = jobs.len();
    let mut kids = Vec::new();
    for (cpu, prep) in jobs {
        let dir = cg.dir.clone();
        let (f, undo) = fork_in_memcg(&cg, cleanup, "calibrate reclaim child", move |rx, tx| {
            child(cpu, prep, dir, rx, tx)
        })?;
        kids.push((f, undo, Vec::new()));
    }
    for (f, _, buf) in kids.iter_mut() {
        let l = hear(&mut f.from_child, buf, limit)?;
        if l != "ready" {
            bail!("reclaim child said {l:?} instead of ready");
        }
    }
    let usage0 = cg.usage()?;
    let old_limit = cg.limit()?;
    let v2_reclaim = cg.version == Version::V2 && cg.dir.join("memory.reclaim").exists();
    let order = if v2_reclaim {
        format!("reclaim {}", bytes / n as u64)
    } else {
        let knob = if cg.version == Version::V1 {
            "limit"
        } else {
            "max"
        };
        format!("{knob} {}", usage0.saturating_sub(bytes).max(PAGE as u64))
    };
    let t = Instant::now();
    for (f, _, _) in kids.iter_mut() {
        say(f.to_child.as_mut().unwrap(), &order)?;
    }
    let mut children = Vec::new();
    for (f, _, buf) in kids.iter_mut() {
        let l = hear(&mut f.from_child, buf, limit)?;
        if !l.starts_with("reclaimed ") {
            bail!("reclaim child said {l:?}");
        }
    }
    let wall_ns = ns_since(t);
    let usage1 = cg.usage()?;
    if !v2_reclaim {
        match old_limit {
            u64::MAX if cg.version == Version::V2 => {
                std::fs::write(cg.dir.join("memory.max"), "max").context("memory.max")?
            }
            l => cg.set_limit(l)?,
        }
    }
    for (f, _, _) in kids.iter_mut() {
        say(f.to_child.as_mut().unwrap(), "continue")?;
    }
    for (mut f, undo, mut buf) in kids {
        let l = hear(&mut f.from_child, &mut buf, limit)?;
        children.push(
            serde_json::from_str::<ChildReport>(&l)
                .with_context(|| format!("bad child report {l:?}"))?,
        );
        let _ = f.proc.wait_until(Instant::now() + limit, &mut || {})?;
        undo.run()?;
    }
    for u in files {
        u.run()?;
    }
    cg_undo.run()?;
    Ok(RunOut {
        pages_reclaimed: usage0.saturating_sub(usage1) / PAGE as u64,
        wall_ns,
        children,
    })
}

/// A data file name in `dir` that the leftovers sweep recognises as ours.
pub fn data_path(dir: &Path, tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    dir.join(format!(
        "reclaimlab-{}-cal-{tag}-{n}.dat",
        std::process::id()
    ))
}
