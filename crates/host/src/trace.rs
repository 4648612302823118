//! Private tracefs instances, and `--trace`: a histogram of `tlb:tlb_flush` events (by reason
//! and by pages) for the measured part of each run.
//!
//! tracefs is mounted at /sys/kernel/tracing if it is not (and unmounted afterwards). All tracing
//! happens in private instances `instances/reclaimlab-<pid>[-<what>]`, so no global tracing knob
//! changes; each instance is removed afterwards. This kernel has no hist triggers
//! (CONFIG_HIST_TRIGGERS is not set on the machines checked), so a reader thread consumes an
//! instance's `trace_pipe` during the run and hands each line to a [`LineSink`] in user space;
//! events the ring buffer dropped are reported as `lost`.

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

    /// Clear the buffer, start a reader thread feeding `sink`, run `arm` (the instance's
    /// filters and options: after the reader exists, so a pid filter inherited through fork
    /// does not cover it), then enable `events` (`group/name`).
    pub fn record<H: LineSink>(
        &self,
        sink: H,
        events: &[&str],
        arm: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<Recording<H>> {
        std::fs::write(self.dir.join("trace"), "").context("clearing the trace buffer")?;
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.dir.join("trace_pipe"))
            .context("opening trace_pipe")?;
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, r2) = (stop.clone(), self.readers.clone());
        r2.count.fetch_add(1, Ordering::SeqCst);
        let reader = std::thread::spawn(move || {
            let h = read_pipe(pipe, &s2, &r2.stop_all, sink);
            r2.count.fetch_sub(1, Ordering::SeqCst);
            h
        });
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
    let mut idle_after_stop = 0;
    while !stop_all.load(Ordering::SeqCst) {
        match pipe.read(&mut buf) {
            Ok(n) if n > 0 => {
                partial.push_str(&String::from_utf8_lossy(&buf[..n]));
                while let Some(i) = partial.find('\n') {
                    sink.add_line(&partial[..i]);
                    partial.drain(..=i);
                }
                idle_after_stop = 0;
            }
            _ => {
                if stop.load(Ordering::SeqCst) {
                    idle_after_stop += 1;
                    if idle_after_stop > 2 {
                        break;
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
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
    reader: Option<JoinHandle<H>>,
}

impl<H> Recording<H> {
    fn disable(&self) {
        for e in &self.enable {
            let _ = std::fs::write(e, "0");
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    /// What the sink gathered (empty if the reader thread panicked).
    pub fn finish(mut self) -> H
    where
        H: Default,
    {
        self.disable();
        self.reader
            .take()
            .and_then(|r| r.join().ok())
            .unwrap_or_default()
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
