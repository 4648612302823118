//! The TLB shootdown round trip: one page's mprotect in an mm whose second thread runs on the
//! other CPU (flush_tlb_mm_range → flush_tlb_multi: an IPI, the remote flush_tlb_func, the
//! wait for its acknowledgement), minus the same mprotect while the mm runs on one CPU only.
//!
//! The remote thread spins reading the page and the clock; each interruption it sees is the
//! receiving side of one shootdown (interrupt entry, flush_tlb_func, exit; in a VM also the
//! interrupt's delivery into the vCPU), which is `ipi_handle`; only the interruptions that
//! start inside a slow call (one that waited for an IPI) count, not timer ticks or the host
//! running the other vCPU instead.
//! /proc/interrupts' TLB line counts the shootdowns the remote CPU received.

use super::mem::{ns_since, pin, Region};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Shootdown {
    /// Median ns per mprotect call, mm on one CPU (no IPI).
    pub one_cpu: Vec<f64>,
    /// Mean ns per call with the mm's second thread spinning on the other CPU: what a
    /// shootdown costs on average here, IPI or not.
    pub two_cpu_mean: Vec<f64>,
    /// Median ns of the calls that were slow (above the one-CPU calls' 99th percentile + 1 us):
    /// the calls that sent an IPI and waited for it.
    pub two_cpu_slow: Vec<f64>,
    /// Fraction of the two-CPU calls that were slow.
    pub slow_fraction: Vec<f64>,
    /// TLB shootdowns the other CPU received per call (/proc/interrupts).
    pub ipis_per_call: Vec<f64>,
    /// Median of the spinning thread's interruptions that overlapped a slow call, ns (one per
    /// sample): the receiving side of the shootdowns.
    pub receiver_gap: Vec<f64>,
    /// How many interruptions overlapped a slow call, per sample.
    pub matched_gaps: Vec<f64>,
    /// Median of the interruptions that started inside any two-CPU call, ns (one per sample):
    /// the receiving side where the calls that sent an IPI are not the slow ones (a guest whose
    /// IPIs cost the sender less than the one-CPU calls' spread).
    pub receiver_gap_any: Vec<f64>,
    /// How many interruptions started inside any two-CPU call, per sample.
    pub matched_gaps_any: Vec<f64>,
    /// All interruptions the spinning thread saw per shootdown received (timer ticks and
    /// host preemptions included).
    pub gaps_per_ipi: Vec<f64>,
}

/// Shootdowns received by `cpu` so far (the `TLB:` line of /proc/interrupts).
pub fn tlb_interrupts(text: &str, cpu: usize) -> Option<u64> {
    let l = text.lines().find(|l| l.trim_start().starts_with("TLB:"))?;
    l.split_whitespace().nth(1 + cpu)?.parse().ok()
}

fn tlb_now(cpu: usize) -> Result<u64> {
    let t = std::fs::read_to_string("/proc/interrupts").context("reading /proc/interrupts")?;
    tlb_interrupts(&t, cpu).context("no TLB: line for that CPU in /proc/interrupts")
}

/// Interruptions longer than this count as one event on the spinning CPU.
const GAP_NS: u128 = 700;

/// Each call's (start, duration) in ns since `epoch`: `iters` pairs of mprotect of one page
/// (write off, write on).
fn mprotect_calls(r: &Region, iters: usize, epoch: Instant) -> Result<Vec<(f64, f64)>> {
    let mut v = Vec::with_capacity(2 * iters);
    for _ in 0..iters {
        for write in [false, true] {
            let t = Instant::now();
            r.protect(0, 1, write)?;
            v.push((t.duration_since(epoch).as_nanos() as f64, ns_since(t)));
        }
    }
    Ok(v)
}

/// The durations of the `gaps` (start, duration) that start inside one of the `windows`
/// (start, duration); both sorted by start. A shootdown's handler starts while its sender waits
/// (its exit and return to the interrupted code may outlast the call); the host running the
/// other vCPU instead of this one makes a gap that starts before the call, and is left out.
pub fn starting_inside(gaps: &[(f64, f64)], windows: &[(f64, f64)]) -> Vec<f64> {
    let mut out = Vec::new();
    let mut w = 0;
    for &(gs, gd) in gaps {
        while w < windows.len() && windows[w].0 + windows[w].1 < gs {
            w += 1;
        }
        if w < windows.len() && windows[w].0 <= gs {
            out.push(gd);
        }
    }
    out
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s[((s.len() - 1) as f64 * q).round() as usize]
}

/// The slow calls of `two` against the one-CPU calls `one`: (fraction, median of the slow).
pub fn slow_calls(one: &[f64], two: &[f64]) -> (f64, f64) {
    let cut = quantile(one, 0.99) + 1000.0;
    let slow: Vec<f64> = two.iter().copied().filter(|d| *d > cut).collect();
    let frac = slow.len() as f64 / two.len().max(1) as f64;
    let med = reclaimlab_core::stats::summarize(&slow).map_or(f64::NAN, |s| s.median);
    (frac, med)
}

/// `samples` rounds of `iters` mprotect pairs, on CPU `a`, with and without a thread of the same
/// mm spinning on CPU `b`.
pub fn round_trip(a: usize, b: usize, iters: usize, samples: usize) -> Result<Shootdown> {
    pin(a)?;
    let r = Arc::new(Region::anon(2)?);
    r.write(0, 1);
    r.write(1, 1);
    let mut out = Shootdown::default();
    let epoch = Instant::now();
    for _ in 0..samples {
        let one: Vec<f64> = mprotect_calls(&r, iters, epoch)?
            .into_iter()
            .map(|c| c.1)
            .collect();

        let stop = Arc::new(AtomicBool::new(false));
        let ready = Arc::new(AtomicBool::new(false));
        let (r2, s2, rd2) = (r.clone(), stop.clone(), ready.clone());
        let spinner = std::thread::spawn(move || -> Result<Vec<(f64, f64)>> {
            pin(b)?;
            rd2.store(true, Ordering::SeqCst);
            let mut gaps = Vec::new();
            let mut last = Instant::now();
            while !s2.load(Ordering::Relaxed) {
                std::hint::black_box(r2.read(1));
                let now = Instant::now();
                let d = now.duration_since(last).as_nanos();
                if d > GAP_NS {
                    gaps.push((last.duration_since(epoch).as_nanos() as f64, d as f64));
                }
                last = now;
            }
            Ok(gaps)
        });
        while !ready.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        let before = tlb_now(b)?;
        let calls2 = mprotect_calls(&r, iters, epoch)?;
        let after = tlb_now(b)?;
        stop.store(true, Ordering::SeqCst);
        let gaps = spinner
            .join()
            .map_err(|_| anyhow::anyhow!("the spinning thread panicked"))??;
        let two: Vec<f64> = calls2.iter().map(|c| c.1).collect();
        let calls = two.len() as f64;
        let ipis = after.saturating_sub(before) as f64;
        let (frac, slow) = slow_calls(&one, &two);
        let cut = quantile(&one, 0.99) + 1000.0;
        let matched_any = starting_inside(&gaps, &calls2);
        let windows: Vec<(f64, f64)> = calls2.into_iter().filter(|c| c.1 > cut).collect();
        let matched = starting_inside(&gaps, &windows);
        out.one_cpu.push(quantile(&one, 0.5));
        out.two_cpu_mean.push(two.iter().sum::<f64>() / calls);
        out.two_cpu_slow.push(slow);
        out.slow_fraction.push(frac);
        out.ipis_per_call.push(ipis / calls);
        out.gaps_per_ipi.push(gaps.len() as f64 / ipis.max(1.0));
        out.matched_gaps.push(matched.len() as f64);
        out.matched_gaps_any.push(matched_any.len() as f64);
        out.receiver_gap_any.push(
            reclaimlab_core::stats::summarize(&matched_any)
                .map(|s| s.median)
                .unwrap_or(0.0),
        );
        out.receiver_gap.push(
            reclaimlab_core::stats::summarize(&matched)
                .map(|s| s.median)
                .unwrap_or(0.0),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_tlb_line() {
        let t = "           CPU0       CPU1       \n  0:         10          0  IO-APIC   2-edge  timer\n\
                 CAL:       500        600   Function call interrupts\n\
                 TLB:        17         42   TLB shootdowns\n";
        assert_eq!(tlb_interrupts(t, 0), Some(17));
        assert_eq!(tlb_interrupts(t, 1), Some(42));
        assert_eq!(tlb_interrupts(t, 2), None);
        assert_eq!(tlb_interrupts("CAL: 1 2\n", 0), None);
    }

    #[test]
    fn keeps_the_interruptions_that_start_inside_a_slow_call() {
        let windows = [(100.0, 50.0), (1000.0, 20.0)];
        // Before, inside, straddling the end of the first, between, inside the second,
        // spanning all of the second (starts before it), after.
        let gaps = [
            (10.0, 5.0),
            (120.0, 7.0),
            (140.0, 30.0),
            (500.0, 9.0),
            (1005.0, 11.0),
            (990.0, 100.0),
            (2000.0, 13.0),
        ];
        assert_eq!(starting_inside(&gaps, &windows), vec![7.0, 30.0, 11.0]);
        assert!(starting_inside(&gaps, &[]).is_empty());
    }

    #[test]
    fn separates_the_calls_that_waited_for_an_ipi() {
        let one: Vec<f64> = (0..100).map(|i| 1000.0 + i as f64).collect();
        let mut two: Vec<f64> = (0..100).map(|i| 1000.0 + i as f64).collect();
        two.extend([21000.0, 22000.0, 23000.0]);
        let (frac, med) = slow_calls(&one, &two);
        assert!((frac - 3.0 / 103.0).abs() < 1e-12);
        assert_eq!(med, 22000.0);
        let (frac, med) = slow_calls(&one, &one);
        assert_eq!(frac, 0.0);
        assert!(med.is_nan());
    }
}
