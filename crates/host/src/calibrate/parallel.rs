//! Whether the two CPUs run at once: the same CPU-bound loop (no memory traffic) on one CPU
//! alone, then on two CPUs together. Independent CPUs take the same wall time both ways (ratio
//! 1); two vCPUs the hypervisor runs on one physical CPU take twice as long together (ratio 2).
//! Every two-CPU figure (shootdowns, contention) depends on this.
//!
//! And what moving one cache line between the two CPUs costs: two threads take turns
//! incrementing one counter (each waits for the other's value, then adds one), so every turn
//! moves the line to the other CPU; the same turns on one CPU are the baseline. What a lock or
//! counter that two reclaimers share costs per handover (lru_lock, the i_pages lock, memcg
//! counters) starts from this.

use super::mem::{clear_page, ns_since, pin, Region};
use anyhow::Result;
use std::time::Instant;

/// A loop of dependent multiply-xorshift steps: registers only.
fn spin(iters: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..iters {
        x ^= x << 13;
        x ^= x >> 7;
        x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
    }
    x
}

fn timed(cpu: usize, iters: u64) -> Result<f64> {
    pin(cpu)?;
    let t = Instant::now();
    std::hint::black_box(spin(iters));
    Ok(ns_since(t))
}

/// `samples` ratios of `run(cpu, state)` on CPUs `a` and `b` at once (the slower of the two)
/// over `a` alone; each CPU has its own state, which the second thread owns while it runs.
fn pair_ratios<S: Send + 'static>(
    a: usize,
    b: usize,
    samples: usize,
    (sa, mut sb): (S, S),
    run: fn(usize, &S) -> Result<f64>,
) -> Result<Vec<f64>> {
    let mut v = Vec::new();
    for _ in 0..samples {
        let alone = run(a, &sa)?;
        let other = std::thread::spawn(move || run(b, &sb).map(|x| (x, sb)));
        let mine = run(a, &sa)?;
        let (theirs, back) = other
            .join()
            .map_err(|_| anyhow::anyhow!("the second thread panicked"))??;
        sb = back;
        v.push(mine.max(theirs) / alone);
    }
    Ok(v)
}

/// `samples` ratios: wall time of the loop on CPUs `a` and `b` at once over `a` alone.
pub fn two_vs_one(a: usize, b: usize, iters: u64, samples: usize) -> Result<Vec<f64>> {
    pair_ratios(a, b, samples, (iters, iters), |cpu, &n| timed(cpu, n))
}

/// Clear every page of `r` once (clear_page_erms); returns ns per page.
fn clear_all(cpu: usize, r: &Region) -> Result<f64> {
    pin(cpu)?;
    let t = Instant::now();
    for i in 0..r.pages() {
        clear_page(r.page(i));
    }
    Ok(ns_since(t) / r.pages() as f64)
}

/// A resident region of `pages` pages (every page written once, so no fault is timed).
fn resident(pages: usize) -> Result<Region> {
    let r = Region::anon(pages)?;
    for i in 0..r.pages() {
        r.write(i, 1);
    }
    Ok(r)
}

/// `samples` ratios of memory-bound work: ns per page of clearing a resident region larger
/// than the caches (what the kernel's clear_page does for every new page) on CPUs `a` and `b`
/// at once, each its own region, over `a` alone. 1: the two CPUs' stores do not slow each
/// other; above 1: they share memory bandwidth (or a physical core).
pub fn clear_two_vs_one(a: usize, b: usize, pages: usize, samples: usize) -> Result<Vec<f64>> {
    pair_ratios(
        a,
        b,
        samples,
        (resident(pages)?, resident(pages)?),
        clear_all,
    )
}

/// One counter alone on its cache line.
#[repr(align(64))]
struct Line(std::sync::atomic::AtomicU64);

/// Take `turns` turns at `line` as `parity` (0 or 1): wait until the counter's parity is ours,
/// then add one.
fn take_turns(line: &Line, parity: u64, turns: u64) {
    use std::sync::atomic::Ordering;
    let mut done = 0;
    while done < turns {
        let v = line.0.load(Ordering::Acquire);
        if v % 2 == parity {
            line.0.store(v + 1, Ordering::Release);
            done += 1;
        } else {
            std::hint::spin_loop();
        }
    }
}

/// `samples` figures of ns per turn with the two turn-takers on CPUs `a` and `b` (a == b: one
/// CPU alternates the two parities itself, the line never moves).
pub fn line_handover(a: usize, b: usize, turns: u64, samples: usize) -> Result<Vec<f64>> {
    let mut v = Vec::new();
    for _ in 0..samples {
        let line = std::sync::Arc::new(Line(std::sync::atomic::AtomicU64::new(0)));
        pin(a)?;
        if a == b {
            let t = Instant::now();
            for _ in 0..turns {
                take_turns(&line, 0, 1);
                take_turns(&line, 1, 1);
            }
            v.push(ns_since(t) / (2 * turns) as f64);
            continue;
        }
        let l2 = line.clone();
        let other = std::thread::spawn(move || -> Result<()> {
            pin(b)?;
            take_turns(&l2, 1, turns);
            Ok(())
        });
        let t = Instant::now();
        take_turns(&line, 0, turns);
        other
            .join()
            .map_err(|_| anyhow::anyhow!("the second thread panicked"))??;
        v.push(ns_since(t) / (2 * turns) as f64);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_positive() {
        let v = two_vs_one(0, 0, 1000, 2).unwrap();
        assert_eq!(v.len(), 2);
        assert!(v.iter().all(|r| *r > 0.0));
    }

    #[test]
    fn clearing_gives_one_finite_ratio_per_sample() {
        let v = clear_two_vs_one(0, 0, 64, 3).unwrap();
        assert_eq!(v.len(), 3);
        assert!(v.iter().all(|r| r.is_finite() && *r > 0.0), "{v:?}");
    }

    #[test]
    fn turns_alternate_and_finish() {
        // Both parities on one CPU: the counter reaches 2 * turns.
        let v = line_handover(0, 0, 1000, 2).unwrap();
        assert_eq!(v.len(), 2);
        assert!(v.iter().all(|ns| *ns > 0.0));
    }
}
