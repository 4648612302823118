//! Whether the two CPUs run at once: the same CPU-bound loop (no memory traffic) on one CPU
//! alone, then on two CPUs together. Independent CPUs take the same wall time both ways (ratio
//! 1); two vCPUs the hypervisor runs on one physical CPU take twice as long together (ratio 2).
//! Every two-CPU figure (shootdowns, contention) depends on this.

use super::mem::{ns_since, pin};
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

/// `samples` ratios: wall time of the loop on CPUs `a` and `b` at once over `a` alone.
pub fn two_vs_one(a: usize, b: usize, iters: u64, samples: usize) -> Result<Vec<f64>> {
    let mut v = Vec::new();
    for _ in 0..samples {
        let alone = timed(a, iters)?;
        let other = std::thread::spawn(move || timed(b, iters));
        let mine = timed(a, iters)?;
        let theirs = other
            .join()
            .map_err(|_| anyhow::anyhow!("the second thread panicked"))??;
        v.push(mine.max(theirs) / alone);
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
}
