//! Private tracefs instances, and `--trace`: a histogram of `tlb:tlb_flush` events (by reason
//! and by pages) for the measured part of each run.
//!
//! tracefs is mounted at /sys/kernel/tracing if it is not (and unmounted afterwards). All tracing
//! happens in private instances `instances/reclaimlab-<pid>[-<what>]`, so no global tracing knob
//! changes; each instance is removed afterwards. This kernel has no hist triggers
//! (CONFIG_HIST_TRIGGERS is not set on the machines checked), so a reader thread consumes an
//! instance during the run: its `trace_pipe` text, a line at a time to a [`LineSink`]
//! (`--trace`), or each CPU's binary `trace_pipe_raw` pages to a [`PageSink`] (the scheduler
//! trace: no text formatting in the kernel); events the ring buffer dropped are reported as
//! `lost`.

use crate::cleanup::Cleanup;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub const TRACEFS: &str = "/sys/kernel/tracing";

/// What consumes an instance's `trace_pipe`, one line at a time.
pub trait LineSink: Send + 'static {
    fn add_line(&mut self, line: &str);
}

/// What consumes an instance's per-CPU `trace_pipe_raw`, one ring-buffer page at a time.
pub trait PageSink: Send + 'static {
    fn add_page(&mut self, cpu: usize, page: &[u8]);
}

/// N from the ring buffer's `CPU:N [LOST M EVENTS]` line, if `line` is one.
pub fn lost_events(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("CPU:")?;
    let i = rest.find("[LOST ")?;
    rest[i + 6..].split_whitespace().next()?.parse().ok()
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Histogram {
    pub events: u64,
    /// Events the ring buffer dropped before they were read.
    pub lost: u64,
    pub by_reason: BTreeMap<String, u64>,
    /// Pages per flush; "all" is a full flush (pages = -1, TLB_FLUSH_ALL).
    pub by_pages: BTreeMap<String, u64>,
}

impl Histogram {
    /// Count one `trace_pipe` line.
    pub fn add_line(&mut self, line: &str) {
        if let Some(n) = lost_events(line) {
            self.lost += n;
            return;
        }
        let Some(i) = line.find("tlb_flush: pages:") else {
            return;
        };
        let rest = &line[i + "tlb_flush: pages:".len()..];
        let Some((pages, reason)) = rest.split_once(" reason:") else {
            return;
        };
        // "flush on task switch (0)" → "flush on task switch"
        let reason = match reason.trim_end().rsplit_once(" (") {
            Some((r, _)) => r,
            None => reason.trim_end(),
        };
        let pages = match pages.trim() {
            "-1" => "all".to_string(),
            p => p.to_string(),
        };
        self.events += 1;
        *self.by_reason.entry(reason.to_string()).or_default() += 1;
        *self.by_pages.entry(pages).or_default() += 1;
    }
}

impl LineSink for Histogram {
    fn add_line(&mut self, line: &str) {
        Histogram::add_line(self, line)
    }
}

/// /sys/kernel/tracing if tracefs is mounted there.
pub fn mounted() -> Option<&'static Path> {
    tracefs_mounted(TRACEFS).then(|| Path::new(TRACEFS))
}

fn tracefs_mounted(at: &str) -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 2 && f[1] == at && f[2] == "tracefs"
        })
}

/// The instances of other benches still running: unmounting under them would strand their
/// instances (an instance outlives the mount, and their paths would no longer resolve).
fn live_foreign_instances() -> Vec<String> {
    let me = std::process::id() as i32;
    std::fs::read_dir(Path::new(TRACEFS).join("instances"))
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| {
                    n.strip_prefix("reclaimlab-")
                        .and_then(|r| r.split('-').next()?.parse::<i32>().ok())
                        .is_some_and(|p| p != me && Path::new(&format!("/proc/{p}")).exists())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Mount tracefs at [`TRACEFS`] unless it is; the unmount is registered with `cleanup` (and
/// the mount journalled first). Registered before any instance, so it is undone after them.
pub fn ensure_mounted(cleanup: &Cleanup) -> Result<()> {
    if tracefs_mounted(TRACEFS) {
        return Ok(());
    }
    // Journalled first: a mount has no owner a later bench could recognise.
    crate::state::record(|j| j.tracefs_mount_started = true)?;
    cleanup.apply(
        format!("mount tracefs on {TRACEFS}"),
        || {
            nix::mount::mount(
                Some("nodev"),
                TRACEFS,
                Some("tracefs"),
                nix::mount::MsFlags::empty(),
                None::<&str>,
            )
            .with_context(|| format!("mount -t tracefs nodev {TRACEFS}"))
        },
        || {
            let others = live_foreign_instances();
            if !others.is_empty() {
                eprintln!(
                    "reclaimlab: left tracefs mounted on {TRACEFS}: other benches still trace \
                     there ({})",
                    others.join(", ")
                );
                return Ok(());
            }
            nix::mount::umount(TRACEFS)
                .or_else(|_| nix::mount::umount2(TRACEFS, nix::mount::MntFlags::MNT_DETACH))
                .with_context(|| format!("umount {TRACEFS}"))
        },
    )?;
    Ok(())
}

/// Whether this kernel has the event `group/name` (tracefs mounted).
pub fn has_event(event: &str) -> bool {
    Path::new(TRACEFS).join("events").join(event).exists()
}

/// What an instance's clean-up shares with its readers: it sets `stop_all`, so every reader
/// stops and closes its `trace_pipe` (an instance with an open file cannot be removed), and
/// waits for `count` to reach 0.
#[derive(Default)]
struct Readers {
    stop_all: AtomicBool,
    count: AtomicUsize,
}

/// A private trace instance `instances/reclaimlab-<pid><suffix>`, removed (its events
/// disabled, its readers stopped) by the clean-up it was created with.
pub struct Instance {
    pub dir: PathBuf,
    readers: Arc<Readers>,
}

impl Instance {
    /// Mount tracefs if needed and create the instance with a per-CPU buffer of `buffer_kb`
    /// (the instance's own, gone with it); both are undone by `cleanup`.
    pub fn create(cleanup: &Cleanup, suffix: &str, buffer_kb: u32) -> Result<Instance> {
        ensure_mounted(cleanup)?;
        let dir = Path::new(TRACEFS).join(format!(
            "instances/reclaimlab-{}{suffix}",
            std::process::id()
        ));
        let readers = Arc::new(Readers::default());
        let (d2, r2) = (dir.clone(), readers.clone());
        cleanup.apply(
            format!("trace instance {}", dir.display()),
            || std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display())),
            move || {
                let _ = std::fs::write(d2.join("events/enable"), "0");
                r2.stop_all.store(true, Ordering::SeqCst);
                let t = std::time::Instant::now();
                while r2.count.load(Ordering::SeqCst) > 0 && t.elapsed().as_secs() < 5 {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                loop {
                    match std::fs::remove_dir(&d2) {
                        Err(e)
                            if e.raw_os_error() == Some(libc::EBUSY)
                                && t.elapsed().as_secs() < 5 =>
                        {
                            std::thread::sleep(std::time::Duration::from_millis(20))
                        }
                        r => return r.with_context(|| format!("removing {}", d2.display())),
                    }
                }
            },
        )?;
        let _ = std::fs::write(dir.join("buffer_size_kb"), buffer_kb.to_string());
        Ok(Instance { dir, readers })
    }

    /// Clear the buffer, start a reader thread feeding `sink` the lines of `trace_pipe`, run
    /// `arm` (the instance's filters and options: after the reader exists, so a pid filter
    /// inherited through fork does not cover it), then enable `events` (`group/name`).
    pub fn record<H: LineSink>(
        &self,
        sink: H,
        events: &[&str],
        arm: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<Recording<H>> {
        self.clear()?;
        let pipe = open_nonblock(&self.dir.join("trace_pipe"))?;
        self.start(events, arm, move |stop, stop_all| {
            read_pipe(pipe, stop, stop_all, sink)
        })
    }

    /// As [`Instance::record`], but the reader takes each CPU's binary ring-buffer pages
    /// (`per_cpu/cpuN/trace_pipe_raw`, `page_size` bytes a read) and hands them to `sink`
    /// undecoded: the kernel formats nothing.
    pub fn record_raw<H: PageSink>(
        &self,
        sink: H,
        page_size: usize,
        events: &[&str],
        arm: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<Recording<H>> {
        self.clear()?;
        let mut cpus = Vec::new();
        for e in std::fs::read_dir(self.dir.join("per_cpu")).context("listing per_cpu")? {
            let e = e?;
            let name = e.file_name();
            if let Some(cpu) = name
                .to_str()
                .and_then(|n| n.strip_prefix("cpu")?.parse().ok())
            {
                cpus.push((cpu, open_nonblock(&e.path().join("trace_pipe_raw"))?));
            }
        }
        cpus.sort_by_key(|c| c.0);
        self.start(events, arm, move |stop, stop_all| {
            read_raw(cpus, page_size, stop, stop_all, sink)
        })
    }

    fn clear(&self) -> Result<()> {
        std::fs::write(self.dir.join("trace"), "").context("clearing the trace buffer")
    }

    /// Start `read` on a reader thread, then arm and enable.
    fn start<H: Send + 'static>(
        &self,
        events: &[&str],
        arm: impl FnOnce(&Path) -> Result<()>,
        read: impl FnOnce(&AtomicBool, &AtomicBool) -> H + Send + 'static,
    ) -> Result<Recording<H>> {
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, r2) = (stop.clone(), self.readers.clone());
        r2.count.fetch_add(1, Ordering::SeqCst);
        let reader = spawn_reader(move || {
            let h = read(&s2, &r2.stop_all);
            r2.count.fetch_sub(1, Ordering::SeqCst);
            h
        });
        let reader = match reader {
            Ok(r) => r,
            Err(e) => {
                self.readers.count.fetch_sub(1, Ordering::SeqCst);
                return Err(e);
            }
        };
        let mut rec = Recording {
            enable: Vec::new(),
            stop,
            reader: Some(reader),
        };
        arm(&self.dir)?;
        for e in events {
            let enable = self.dir.join("events").join(e).join("enable");
            std::fs::write(&enable, "1").with_context(|| format!("enabling {e}"))?;
            rec.enable.push(enable);
        }
        Ok(rec)
    }
}

fn open_nonblock(path: &Path) -> Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

/// Feed `sink` every page of every CPU's `trace_pipe_raw` until `stop` (once all are drained)
/// or `stop_all` (at once). Each read gives one page, a partly filled one too
/// (`tracing_buffers_read` → `ring_buffer_read_page`, kernel/trace/trace.c); an empty buffer
/// gives EAGAIN.
fn read_raw<H: PageSink>(
    mut cpus: Vec<(usize, std::fs::File)>,
    page_size: usize,
    stop: &AtomicBool,
    stop_all: &AtomicBool,
    mut sink: H,
) -> H {
    let mut buf = vec![0u8; page_size];
    let mut idle = Idle::default();
    while !stop_all.load(Ordering::SeqCst) {
        let mut got = false;
        for (cpu, f) in cpus.iter_mut() {
            while let Ok(n) = f.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.add_page(*cpu, &buf[..n]);
                got = true;
            }
        }
        if got {
            idle.reset();
        } else if idle.wait(stop) {
            break;
        }
    }
    sink
}

/// A reader's pause when there was nothing to read: after `stop`, three empty polls in a row
/// mean the buffer is drained.
#[derive(Default)]
struct Idle(u32);

impl Idle {
    fn reset(&mut self) {
        self.0 = 0;
    }

    /// Sleep 20 ms, or say the reader is done.
    fn wait(&mut self, stop: &AtomicBool) -> bool {
        if stop.load(Ordering::SeqCst) {
            self.0 += 1;
            if self.0 > 2 {
                return true;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        false
    }
}

/// Start a reader thread (named `rl-trace`, so it is easy to find in `/proc/PID/task` or a
/// profile) that runs `read` and returns what it gave with the thread's own CPU time.
fn spawn_reader<H: Send + 'static>(
    read: impl FnOnce() -> H + Send + 'static,
) -> Result<JoinHandle<(H, f64)>> {
    std::thread::Builder::new()
        .name("rl-trace".into())
        .spawn(move || {
            let h = read();
            (h, thread_cpu_seconds())
        })
        .context("starting a trace reader thread")
}

/// The calling thread's CPU time (user and system), seconds.
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the call to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Feed every complete line of `pipe` to `sink` until `stop` (once the pipe is drained) or
/// `stop_all` (at once).
fn read_pipe<H: LineSink>(
    mut pipe: std::fs::File,
    stop: &AtomicBool,
    stop_all: &AtomicBool,
    mut sink: H,
) -> H {
    let mut buf = vec![0u8; 1 << 16];
    let mut partial = String::new();
    let mut idle = Idle::default();
    while !stop_all.load(Ordering::SeqCst) {
        match pipe.read(&mut buf) {
            Ok(n) if n > 0 => {
                partial.push_str(&String::from_utf8_lossy(&buf[..n]));
                while let Some(i) = partial.find('\n') {
                    sink.add_line(&partial[..i]);
                    partial.drain(..=i);
                }
                idle.reset();
            }
            _ => {
                if idle.wait(stop) {
                    break;
                }
            }
        }
    }
    sink
}

/// A private trace instance with tlb:tlb_flush available.
pub struct Tracer {
    inst: Instance,
}

impl Tracer {
    /// Mount tracefs if needed and create the instance; both are undone by `cleanup`.
    pub fn setup(cleanup: &Cleanup) -> Result<Tracer> {
        ensure_mounted(cleanup)?;
        if !has_event("tlb/tlb_flush") {
            anyhow::bail!(
                "--trace: this kernel has no tlb:tlb_flush event ({} is missing)",
                Path::new(TRACEFS).join("events/tlb/tlb_flush").display()
            );
        }
        // A roomier per-CPU buffer: flushes come in bursts.
        Ok(Tracer {
            inst: Instance::create(cleanup, "", 8192)?,
        })
    }

    /// Clear the instance's buffer, enable the event and start reading.
    pub fn start(&self) -> Result<Recording> {
        self.inst
            .record(Histogram::default(), &["tlb/tlb_flush"], |_| Ok(()))
    }
}

/// A running recording; `finish` disables its events and returns what the sink gathered.
pub struct Recording<H = Histogram> {
    enable: Vec<PathBuf>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<(H, f64)>>,
}

impl<H> Recording<H> {
    fn disable(&self) {
        for e in &self.enable {
            let _ = std::fs::write(e, "0");
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    /// What the sink gathered (empty if the reader thread panicked).
    pub fn finish(self) -> H
    where
        H: Default,
    {
        self.finish_with_cpu().unwrap_or_default().0
    }

    /// What the sink gathered and the CPU time (s) its reader thread used; `None` if the
    /// reader thread panicked.
    pub fn finish_with_cpu(mut self) -> Option<(H, f64)> {
        self.disable();
        self.reader.take().and_then(|r| r.join().ok())
    }
}

impl<H> Drop for Recording<H> {
    fn drop(&mut self) {
        self.disable();
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_from_trace_pipe_lines() {
        let mut h = Histogram::default();
        for l in [
            "          <idle>-0       [001] d..2.   100.000001: tlb_flush: pages:-1 reason:flush on task switch (0)",
            "       stress-ng-123     [000] .....   100.000002: tlb_flush: pages:1 reason:remote shootdown (1)",
            "       stress-ng-123     [000] .....   100.000003: tlb_flush: pages:1 reason:local shootdown (2)",
            "CPU:1 [LOST 17 EVENTS]",
            "garbage",
        ] {
            h.add_line(l);
        }
        assert_eq!(h.events, 3);
        assert_eq!(h.lost, 17);
        assert_eq!(h.by_reason["remote shootdown"], 1);
        assert_eq!(h.by_reason["flush on task switch"], 1);
        assert_eq!(h.by_pages["all"], 1);
        assert_eq!(h.by_pages["1"], 2);
    }
}
