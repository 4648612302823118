//! `--trace`: a histogram of `tlb:tlb_flush` events (by reason and by pages) for the measured part
//! of each run.
//!
//! tracefs is mounted at /sys/kernel/tracing if it is not (and unmounted afterwards). All tracing
//! happens in a private instance `instances/reclaimlab-<pid>`, so no global tracing knob changes;
//! the instance is removed afterwards. This kernel has no hist triggers (CONFIG_HIST_TRIGGERS is
//! not set on the machines checked), so a reader thread consumes the instance's `trace_pipe`
//! during the run and counts the events in user space; events the ring buffer dropped are
//! reported as `lost`.

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

/// Set by the instance's clean-up: every reader thread stops and closes its `trace_pipe`
/// (an instance with an open file cannot be removed).
static STOP_ALL: AtomicBool = AtomicBool::new(false);
static READERS: AtomicUsize = AtomicUsize::new(0);

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
        if let Some(i) = line.find("[LOST ") {
            if let Some(n) = line[i + 6..].split_whitespace().next() {
                self.lost += n.parse::<u64>().unwrap_or(0);
            }
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

/// A private trace instance with tlb:tlb_flush available.
pub struct Tracer {
    inst: PathBuf,
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

impl Tracer {
    /// Mount tracefs if needed and create the instance; both are undone by `cleanup`.
    pub fn setup(cleanup: &Cleanup) -> Result<Tracer> {
        if !tracefs_mounted(TRACEFS) {
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
                    nix::mount::umount(TRACEFS)
                        .or_else(|_| nix::mount::umount2(TRACEFS, nix::mount::MntFlags::MNT_DETACH))
                        .with_context(|| format!("umount {TRACEFS}"))
                },
            )?;
        }
        let ev = Path::new(TRACEFS).join("events/tlb/tlb_flush");
        if !ev.exists() {
            anyhow::bail!(
                "--trace: this kernel has no tlb:tlb_flush event ({} is missing)",
                ev.display()
            );
        }
        let inst = Path::new(TRACEFS).join(format!("instances/reclaimlab-{}", std::process::id()));
        let i2 = inst.clone();
        cleanup.apply(
            format!("trace instance {}", inst.display()),
            || std::fs::create_dir(&inst).with_context(|| format!("creating {}", inst.display())),
            move || {
                let _ = std::fs::write(i2.join("events/tlb/tlb_flush/enable"), "0");
                STOP_ALL.store(true, Ordering::SeqCst);
                let t = std::time::Instant::now();
                while READERS.load(Ordering::SeqCst) > 0 && t.elapsed().as_secs() < 5 {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                loop {
                    match std::fs::remove_dir(&i2) {
                        Err(e)
                            if e.raw_os_error() == Some(libc::EBUSY)
                                && t.elapsed().as_secs() < 5 =>
                        {
                            std::thread::sleep(std::time::Duration::from_millis(20))
                        }
                        r => {
                            STOP_ALL.store(false, Ordering::SeqCst);
                            return r.with_context(|| format!("removing {}", i2.display()));
                        }
                    }
                }
            },
        )?;
        // A roomier per-CPU buffer (the instance's own, gone with it).
        let _ = std::fs::write(inst.join("buffer_size_kb"), "8192");
        Ok(Tracer { inst })
    }

    /// Clear the instance's buffer, enable the event and start reading.
    pub fn start(&self) -> Result<Recording> {
        std::fs::write(self.inst.join("trace"), "").context("clearing the trace buffer")?;
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.inst.join("trace_pipe"))
            .context("opening trace_pipe")?;
        let enable = self.inst.join("events/tlb/tlb_flush/enable");
        std::fs::write(&enable, "1").context("enabling tlb:tlb_flush")?;
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        READERS.fetch_add(1, Ordering::SeqCst);
        let reader = std::thread::spawn(move || {
            let h = read_pipe(pipe, &s2);
            READERS.fetch_sub(1, Ordering::SeqCst);
            h
        });
        Ok(Recording {
            enable,
            stop,
            reader: Some(reader),
        })
    }
}

fn read_pipe(mut pipe: std::fs::File, stop: &AtomicBool) -> Histogram {
    let mut h = Histogram::default();
    let mut buf = vec![0u8; 1 << 16];
    let mut partial = String::new();
    let mut idle_after_stop = 0;
    while !STOP_ALL.load(Ordering::SeqCst) {
        match pipe.read(&mut buf) {
            Ok(n) if n > 0 => {
                partial.push_str(&String::from_utf8_lossy(&buf[..n]));
                while let Some(i) = partial.find('\n') {
                    h.add_line(&partial[..i]);
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
    h
}

/// A running recording; `finish` disables the event and returns the histogram.
pub struct Recording {
    enable: PathBuf,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<Histogram>>,
}

impl Recording {
    pub fn finish(mut self) -> Histogram {
        let _ = std::fs::write(&self.enable, "0");
        self.stop.store(true, Ordering::SeqCst);
        self.reader
            .take()
            .and_then(|r| r.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.enable, "0");
        self.stop.store(true, Ordering::SeqCst);
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
