//! The project's own file workloads: a forked worker process joins the memcg, maps a data file
//! shared by threads pinned one per CPU, and talks to bench over a pipe (`ready ...`,
//! `result ...` lines; bench closing its end means "finish").

pub mod anon_sweep;
pub mod file_mmap_rw;
pub mod file_reclaim;
pub mod page_cache;

use crate::cleanup::{Cleanup, Undo};
use crate::proc::{read_line, Ended, Forked};
use crate::workload::Env;
use anyhow::{bail, Context, Result};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Refuse a data directory whose pages would not be file pages (tmpfs is shmem: swap-backed).
pub fn check_dir(dir: &str) -> Result<()> {
    let p = Path::new(dir);
    if !p.is_dir() {
        bail!("workload.dir {dir:?} is not a directory");
    }
    let st = nix::sys::statfs::statfs(p).with_context(|| format!("statfs {dir}"))?;
    if st.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC {
        bail!(
            "workload.dir {dir:?} is on tmpfs, whose pages are shmem (swap-backed), not file \
             pages: use a directory on a disk filesystem, e.g. /var/tmp"
        );
    }
    Ok(())
}

/// fallocate(2) of `bytes` from offset 0, mode 0: real (unwritten) blocks, no holes.
pub fn allocate(f: &std::fs::File, bytes: u64) -> std::io::Result<()> {
    let mode = nix::fcntl::FallocateFlags::empty();
    nix::fcntl::fallocate(f.as_raw_fd(), mode, 0, bytes as libc::off_t).map_err(Into::into)
}

/// Create `dir/reclaimlab-<pid>-<index>.dat` of `bytes`, allocated (fallocate) but never
/// read, so none of it is in the page cache until the worker maps it. Run the returned undo at
/// the end of the repetition (clean-up removes it on every other path).
pub fn create_data_file(
    cleanup: &Cleanup,
    dir: &str,
    index: usize,
    bytes: u64,
) -> Result<(PathBuf, Undo)> {
    let path = Path::new(dir).join(format!("reclaimlab-{}-{index}.dat", std::process::id()));
    let p2 = path.clone();
    cleanup
        .apply(
            format!("data file {}", path.display()),
            || {
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .with_context(|| format!("creating {}", path.display()))?;
                if let Err(e) = allocate(&f, bytes) {
                    let _ = std::fs::remove_file(&path);
                    return Err(e).with_context(|| format!("fallocate {} bytes", bytes));
                }
                Ok(())
            },
            move || crate::cleanup::remove_file(&p2),
        )
        .map(|((), undo)| (path, undo))
}

/// A shared mapping of a whole file.
pub struct Mapping {
    pub addr: usize,
    pub len: usize,
}

impl Mapping {
    pub fn map(path: &Path, write: bool) -> Result<Mapping> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        let len = f.metadata()?.len() as usize;
        let prot = libc::PROT_READ | if write { libc::PROT_WRITE } else { 0 };
        // SAFETY: mapping a regular file we opened; the mapping outlives the fd legitimately.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context("mmap");
        }
        Ok(Mapping {
            addr: p as usize,
            len,
        })
    }

    /// A private anonymous mapping of `len` bytes, not populated, with transparent huge pages
    /// refused (MADV_NOHUGEPAGE) so it is reclaimed page by page whatever THP mode is on.
    pub fn anon(len: usize) -> Result<Mapping> {
        // SAFETY: a fresh anonymous mapping.
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
            return Err(std::io::Error::last_os_error()).context("mmap anonymous");
        }
        let m = Mapping {
            addr: p as usize,
            len,
        };
        // SAFETY: our own mapping.
        if unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) } != 0 {
            return Err(std::io::Error::last_os_error()).context("madvise(MADV_NOHUGEPAGE)");
        }
        Ok(m)
    }

    pub fn pages(&self) -> usize {
        self.len / 4096
    }

    /// Read (and with `write`, also write) one byte of page `i`. On x86-64 the compiler makes
    /// the write one read-modify-write instruction (`incb`), so a page that is not mapped
    /// takes a single write fault (no read fault first: no fault-around, on a shared file
    /// mapping do_shared_fault), as the simulator's store-only write models it.
    #[inline]
    pub fn touch(&self, i: usize, write: bool) {
        let p = (self.addr + i * 4096) as *mut u8;
        // SAFETY: i < pages(); the mapping is live and (for write) writable.
        unsafe {
            let v = std::ptr::read_volatile(p);
            if write {
                std::ptr::write_volatile(p, v.wrapping_add(1));
            }
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
    }
}

/// Call `touch` until `end` and return how many times it ran. The clock is read between
/// batches that start at one call and double while a batch takes under a millisecond (up to
/// 256), halving when one takes longer: a sweep of slow touches (a device read each) stops
/// within one touch of `end` and counts exactly, and a fast one reads the clock once per 256.
pub fn touch_until(end: Instant, mut touch: impl FnMut()) -> u64 {
    const FAST: Duration = Duration::from_millis(1);
    let mut batch = 1u64;
    let mut count = 0u64;
    loop {
        let t = Instant::now();
        if t >= end {
            return count;
        }
        for _ in 0..batch {
            touch();
        }
        count += batch;
        batch = if t.elapsed() < FAST {
            (batch * 2).min(256)
        } else {
            (batch / 2).max(1)
        };
    }
}

/// Pin the calling thread to `cpu` (None: leave it to the scheduler).
pub fn pin(cpu: Option<usize>) -> Result<()> {
    if let Some(c) = cpu {
        let mut set = nix::sched::CpuSet::new();
        set.set(c).context("CPU number")?;
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
            .with_context(|| format!("pinning to CPU {c}"))?;
    }
    Ok(())
}

/// In a worker: run `threads` sweeping threads, `body(t)` returning how many pages thread t
/// touched, and report the counts to bench as one line `result N0 N1 ...`.
pub fn report_sweeps(
    threads: usize,
    body: impl Fn(usize) -> Result<u64> + Send + Sync + 'static,
    to: &mut std::fs::File,
) -> Result<()> {
    use std::io::Write;
    let body = std::sync::Arc::new(body);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let body = body.clone();
            std::thread::spawn(move || body(t))
        })
        .collect();
    let mut per = Vec::new();
    for h in handles {
        per.push(
            h.join()
                .map_err(|_| anyhow::anyhow!("a sweeping thread panicked"))?
                .context("sweeping thread")?
                .to_string(),
        );
    }
    writeln!(to, "result {}", per.join(" "))?;
    Ok(())
}

/// The per-thread counts of a worker's `result ...` line.
pub fn parse_result(line: Option<&str>) -> Option<Vec<u64>> {
    let r = line?.strip_prefix("result ")?;
    Some(
        r.split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect(),
    )
}

/// The clean-up tests' "workload hangs" fault: RECLAIMLAB_TEST_FAULT=hang makes the worker
/// sleep instead of working, until bench's deadline kills it.
pub fn maybe_hang() {
    if std::env::var("RECLAIMLAB_TEST_FAULT").as_deref() == Ok("hang") {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

/// Wait for the next line from the worker, reporting progress as elapsed / `expected`.
/// Ok(None) when the worker ended (e.g. was killed) before it wrote one; error at the deadline.
pub fn wait_line(
    w: &mut Forked,
    buf: &mut Vec<u8>,
    env: &Env,
    expected: Duration,
    what: &str,
) -> Result<Option<String>> {
    let t0 = Instant::now();
    let deadline = env.deadline(expected);
    loop {
        let step = (Instant::now() + Duration::from_millis(200)).min(deadline);
        match read_line(&mut w.from_child, buf, step) {
            Ok(Some(l)) => return Ok(Some(l)),
            Ok(None) if Instant::now() >= deadline => bail!(
                "the {what} worker (pid {}) did not report within {:.0}s (run.duration + \
                 host.grace): killed it",
                w.proc.pid,
                (expected + env.grace).as_secs_f64()
            ),
            Ok(None) => {
                (env.progress)(t0.elapsed().as_secs_f64() / expected.as_secs_f64().max(1e-9))
            }
            Err(_) => return Ok(None),
        }
    }
}

/// Close the pipe to the worker (it finishes) and wait for it to exit.
pub fn finish(w: &mut Forked, env: &Env) -> Result<Ended> {
    w.to_child.take();
    match w
        .proc
        .wait_until(env.deadline(Duration::ZERO), &mut || {})?
    {
        Some(e) => Ok(e),
        None => bail!("the worker (pid {}) did not exit: killed it", w.proc.pid),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn touch_until_stops_within_one_slow_touch_of_its_end() {
        use std::time::{Duration, Instant};
        // 2 ms touches for 50 ms: about 25 of them, not a batch of 256 past the end.
        let start = Instant::now();
        let n = super::touch_until(start + Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_millis(2))
        });
        let took = start.elapsed();
        assert!((1..=26).contains(&n), "{n}");
        // A batch of 256 would have run 512 ms past the end.
        assert!(took < Duration::from_millis(400), "{took:?}");
        // Fast touches: counted exactly, the clock read in batches.
        let mut calls = 0u64;
        let n = super::touch_until(Instant::now() + Duration::from_millis(5), || calls += 1);
        assert_eq!(n, calls);
    }
}
