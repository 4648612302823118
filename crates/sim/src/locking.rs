//! Shared spinlocks as queues in simulated time (kernel/locking/spinlock.c, and the lruvec's
//! `lru_lock` users in mm/vmscan.c and mm/swap.c).
//!
//! A lock is the list of intervals during which some CPU holds it. A CPU that wants it at its
//! clock `t` for `hold` ns takes the earliest free slot starting at or after `t` that fits the
//! whole hold, spins (its clock advances) until the slot starts, then holds it.
//!
//! Why intervals rather than "free at": the engine steps the CPU with the smallest clock, but a
//! step (a whole direct reclaim, unless `sim.interleave = "folio"`) runs that CPU's clock ahead
//! of the others. Another CPU processed afterwards may want the lock at a time *earlier* than a
//! hold already placed; with intervals it takes the gap before that hold (as it would have on
//! hardware, being first), instead of queueing behind a hold that had not happened yet.
//!
//! Where this is wrong (documented in docs/sim-model.md, "Contention"):
//! * A wait is charged to the CPU that is processed second, whole: the earlier-placed holder
//!   never waits for a later-processed CPU even if, in time, the later one would have taken a
//!   gap that is now too small, and the rest of a step is not re-ordered by the wait.
//! * Only the last [`LOCK_HISTORY`] holds are remembered; a request older than all of them
//!   sees the lock free. Steps run ahead by about one reclaim call, far fewer holds.
//! * Spinning is FIFO-free: whoever is processed first gets the slot (the kernel's queued
//!   spinlock is FIFO among waiters that are spinning at the same time).

use crate::kernel::{CpuId, Kernel};
use crate::timeline::{BlockTimeline, Timeline};

/// Holds remembered per lock (see the module doc).
pub const LOCK_HISTORY: usize = 4096;
/// folio_batch capacity (PAGEVEC_SIZE, include/linux/pagevec.h): the per-CPU lru_add batch
/// takes lru_lock once per this many folios.
pub const FOLIO_BATCH_SIZE: u32 = 31;

/// CPUs from which a lock's holds are kept in blocks (below, in one vector): with few CPUs a
/// new hold lands near the latest, where one vector is cheapest; with many, a lagging CPU's
/// hold lands far behind it. The two keep the same intervals (only speed differs).
const BLOCK_HOLDS_FROM_CPUS: usize = 32;

/// A lock's busy periods.
#[derive(Clone, Debug)]
enum Holds {
    Flat(Timeline),
    Blocks(BlockTimeline),
}

/// One spinlock: its busy periods and its statistics.
#[derive(Clone, Debug)]
pub struct SpinLock {
    holds: Holds,
    /// Acquisitions, those that had to spin, and the total spin time (ns).
    pub acquired: u64,
    pub contended: u64,
    pub wait_ns: u64,
    /// Total hold time (ns).
    pub hold_ns: u64,
}

impl Default for SpinLock {
    fn default() -> SpinLock {
        SpinLock::new(1)
    }
}

impl SpinLock {
    /// A lock on a machine of `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> SpinLock {
        SpinLock {
            holds: if nr_cpus >= BLOCK_HOLDS_FROM_CPUS {
                Holds::Blocks(BlockTimeline::new(LOCK_HISTORY))
            } else {
                Holds::Flat(Timeline::new(LOCK_HISTORY))
            },
            acquired: 0,
            contended: 0,
            wait_ns: 0,
            hold_ns: 0,
        }
    }

    /// Acquire at time `t` for `hold` ns: returns the time the hold starts (>= t), the start
    /// of the first gap at or after `t` that fits the hold.
    pub fn acquire(&mut self, t: u64, hold: u64) -> u64 {
        let s = match &self.holds {
            Holds::Flat(h) => h.first_fit(t, hold),
            Holds::Blocks(h) => h.first_fit(t, hold),
        };
        self.acquired += 1;
        self.hold_ns += hold;
        if s > t {
            self.contended += 1;
            self.wait_ns += s - t;
        }
        match &mut self.holds {
            Holds::Flat(h) => h.add(s, s + hold),
            Holds::Blocks(h) => h.add(s, s + hold),
        }
        s
    }
}

/// The model's shared locks and the per-CPU lru_add batches.
#[derive(Default)]
pub struct Locks {
    /// lruvec->lru_lock of the (single) memcg lruvec, taken with spin_lock_irq.
    pub lru_lock: SpinLock,
    /// Folios added to each CPU's lru_add folio_batch since its last drain.
    pub lru_add_pending: Vec<u32>,
}

impl Locks {
    pub fn new(nr_cpus: usize) -> Locks {
        Locks {
            lru_lock: SpinLock::new(nr_cpus),
            lru_add_pending: vec![0; nr_cpus],
        }
    }
}

impl Kernel {
    /// spin_lock_irq(&lruvec->lru_lock) ... spin_unlock_irq for `hold` ns of work on `cpu`:
    /// the CPU spins until the lock is free, then holds it. Interrupts are off from the first
    /// spin to the unlock, so an IPI arriving meanwhile waits (kernel/smp.rs, `IrqOff`).
    pub fn lru_lock_irq_section(&mut self, cpu: CpuId, hold: u64) {
        let t = self.cpus[cpu].clock;
        let start = self.locks.lru_lock.acquire(t, hold);
        let end = start + hold;
        self.smp.irq_off[cpu].push(t, end);
        self.cpus[cpu].clock = end;
    }

    /// folio_batch_add_and_move for the lru_add batch (mm/swap.c): `nr` folios join this CPU's
    /// batch; each time it fills, folio_batch_move_lru takes lru_lock once for the whole batch
    /// (lru_add per folio under the lock). The model puts a folio on its list at once (the list
    /// order and counters are unchanged); only the lock traffic is batched, so the batch's
    /// lock hold lands on the fault that fills it.
    pub fn lru_add_batch(&mut self, cpu: CpuId, nr: u32) {
        let p = &mut self.locks.lru_add_pending[cpu];
        *p += nr;
        if *p >= FOLIO_BATCH_SIZE {
            let n = u64::from(*p);
            *p = 0;
            self.lru_lock_irq_section(cpu, n * self.cost.lru_lock_add_per_folio);
        }
    }

    /// move_folios_to_lru (and MGLRU's putback in evict_folios): `nr` folios back on their
    /// lists under lru_lock.
    pub fn lru_putback_locked(&mut self, cpu: CpuId, nr: u64) {
        if nr > 0 {
            self.lru_lock_irq_section(cpu, nr * self.cost.lru_lock_putback_per_folio);
        }
    }

    /// Lock statistics for the result's `extra`.
    pub fn lock_stats(&self) -> Vec<(&'static str, u64)> {
        let l = &self.locks.lru_lock;
        vec![
            ("lru_lock_acquired", l.acquired),
            ("lru_lock_contended", l.contended),
            ("lru_lock_wait_ns", l.wait_ns),
            ("lru_lock_hold_ns", l.hold_ns),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::SpinLock;

    #[test]
    fn a_later_request_waits_for_the_hold_and_an_earlier_one_takes_the_gap_before_it() {
        let mut l = SpinLock::default();
        assert_eq!(l.acquire(100, 50), 100);
        // Overlaps [100, 150): spins until 150.
        assert_eq!(l.acquire(120, 10), 150);
        assert_eq!((l.contended, l.wait_ns), (1, 30));
        // Processed later but earlier in time, and it fits before 100: no wait.
        assert_eq!(l.acquire(40, 60), 40);
        // Does not fit in [0, 40) from 10: goes after the busy run [40, 160).
        assert_eq!(l.acquire(10, 40), 160);
        assert_eq!(l.acquired, 4);
        assert_eq!(l.contended, 2);
        assert_eq!(l.wait_ns, 30 + 150);
    }
}
