//! Per-entity load tracking (kernel/sched/pelt.c), simplified: one geometric average per task
//! and per CPU, in integers so that runs are bit-for-bit reproducible.
//!
//! Time is cut into 1024 µs periods (as in the kernel); each period's contribution decays by
//! y per period with y^32 = 1/2. The kernel keeps a running sum and divides by LOAD_AVG_MAX;
//! here the average itself is decayed and topped up: avg' = avg·y^n + w·(1 − y^n) for n
//! elapsed periods at weight w. Partial periods carry over. Two signals per task: load_avg
//! (its weight, sched_prio_to_weight of its nice, while runnable) and util_avg
//! (SCHED_CAPACITY_SCALE while running); no runnable_avg and no util_est. Group entities'
//! loads are derived from their tasks' (fair_group.rs). Readers see a signal brought up to
//! their own time ([`Avg::at`]): a sleeping task's load and utilisation decay on its last CPU
//! as update_blocked_averages would have decayed them.

/// One PELT period: 1024 µs.
pub const PERIOD_NS: u64 = 1024 * 1024;
/// scale_load_down(NICE_0_LOAD): the weight of a nice-0 task.
pub const NICE_0_LOAD: u64 = 1024;

/// SCHED_CAPACITY_SCALE: a CPU's full capacity, and a running task's utilisation.
pub const SCHED_CAPACITY_SCALE: u64 = 1024;

/// y^n for n in 0..32 as 32-bit fractions (runnable_avg_yN_inv in the kernel's tables).
const YN_INV: [u64; 32] = {
    // y = 2^(-1/32) = 0xfa83b2db / 2^32; powers by repeated multiplication (deterministic).
    const Y: u64 = 0xfa83_b2db;
    let mut t = [0u64; 32];
    let mut v: u64 = 1 << 32;
    let mut n = 0;
    while n < 32 {
        t[n] = v;
        v = (v * Y) >> 32;
        n += 1;
    }
    t
};

/// decay_load: `val` · y^n.
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n >= 63 * 32 {
        return 0;
    }
    let v = val >> (n / 32);
    (v * YN_INV[(n % 32) as usize]) >> 32
}

/// A geometric average of a weight over time (sched_avg, reduced to one signal).
#[derive(Clone, Copy, Debug, Default)]
pub struct Avg {
    pub avg: u64,
    /// Time of the last update (ns), rounded down to a period boundary plus the carried part.
    pub last: u64,
}

impl Avg {
    /// A new task starts at full weight (init_entity_runnable_average).
    pub fn new_task(now: u64) -> Avg {
        Avg {
            avg: NICE_0_LOAD,
            last: now,
        }
    }

    /// The average as an update to `now` at weight `w` would leave it, without updating:
    /// what a reader at `now` sees of a signal last updated earlier.
    pub fn at(&self, now: u64, w: u64) -> u64 {
        let n = now.saturating_sub(self.last) / PERIOD_NS;
        if n == 0 {
            return self.avg;
        }
        decay_load(self.avg, n) + w - decay_load(w, n)
    }

    /// ___update_load_avg over [last, now) during which the weight was `w`.
    pub fn update(&mut self, now: u64, w: u64) {
        let n = now.saturating_sub(self.last) / PERIOD_NS;
        self.avg = self.at(now, w);
        self.last += n * PERIOD_NS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn half_life_is_32_periods() {
        assert!(decay_load(1024, 32).abs_diff(512) <= 1);
        assert!(decay_load(1024, 64).abs_diff(256) <= 1);
        assert_eq!(decay_load(1024, 0), 1024);
    }
    #[test]
    fn reading_ahead_equals_updating() {
        let mut a = Avg::new_task(0);
        a.update(5 * PERIOD_NS + 7, 1024);
        for (now, w) in [
            (9 * PERIOD_NS, 0),
            (40 * PERIOD_NS + 3, 1024),
            (5 * PERIOD_NS, 0),
        ] {
            let mut b = a;
            b.update(now, w);
            assert_eq!(a.at(now, w), b.avg);
        }
        // A sleeper's load halves every 32 periods.
        assert!(a.at(a.last + 32 * PERIOD_NS, 0).abs_diff(a.avg / 2) <= 1);
    }
    #[test]
    fn converges_to_the_weight() {
        let mut a = Avg::default();
        a.update(400 * PERIOD_NS, 1024);
        assert!(a.avg >= 1000, "{}", a.avg);
        // A 25% duty cycle settles near a quarter of the weight.
        let mut a = Avg::new_task(0);
        let mut t = 0;
        for _ in 0..200 {
            a.update(t + PERIOD_NS, 1024);
            a.update(t + 4 * PERIOD_NS, 0);
            t += 4 * PERIOD_NS;
        }
        assert!((200..330).contains(&a.avg), "{}", a.avg);
    }
}
