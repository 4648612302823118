//! Shared spinlocks as queues in simulated time (kernel/locking/spinlock.c): the lruvec's
//! `lru_lock` (its users in mm/vmscan.c and mm/swap.c) and each file's `i_pages` lock (the
//! page cache's xa_lock: __filemap_add_folio in mm/filemap.c, __remove_mapping in
//! mm/vmscan.c).
//!
//! A lock is the list of intervals during which some CPU holds it. A CPU that wants it at its
//! clock `t` for `hold` ns takes the earliest free slot starting at or after `t` that fits the
//! whole hold, spins (its clock advances) until the slot starts, then holds it.
//!
//! A section is also longer when the CPU before it in the lock's order was another one: the
//! lock word and the data the lock guards (list heads, counters, the xarray's root) were last
//! written there, so each of those cache lines is fetched from that CPU's cache before the
//! section's work can go on (`line_transfer` ns each; the number of lines a section touches is
//! its call site's, from the kernel source). Two CPUs reclaiming one memcg thus lengthen each
//! other's sections, which queueing for unchanged sections cannot give (calibrate's
//! `contention` family measures it: twice the CPU per page for no gain in wall time).
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
//! * A section placed in a gap before a later-placed hold of another CPU lengthens itself if
//!   its predecessor was remote, but the section after it is not lengthened in turn.
//! * The lines a section transfers are all or none: the model does not follow single lines
//!   (an xarray node both CPUs touched, a folio at the LRU's end), only "another CPU held
//!   this lock last".

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel};
use crate::timeline::{BlockHistory, BlockTimeline, Fit, Pos, Timeline};

/// Holds remembered per lock (see the module doc).
pub const LOCK_HISTORY: usize = 4096;
/// Holders remembered per lock, to find who held it last before a new section: a CPU whose
/// step ran ahead leaves a run of its own holds that a lagging CPU's sections land among. Two
/// CPUs' runs reach thousands of holds (on the file suite's random reader, fewer than 4096
/// remembered undercount the hand-overs; on 16 CPUs a shorter lru_lock history moves seed
/// 000's figures too), so as many as the holds themselves.
const HOLDER_HISTORY: usize = LOCK_HISTORY;
/// A remembered holder's CPU in the low bits (65 536 CPUs), its end in the rest (2^48 ns,
/// 78 hours of simulated time; run.duration is at most a day).
const HOLDER_CPU_BITS: u32 = 16;

/// Cache lines a lru_lock section writes that the previous holder wrote too: the lock word
/// and the lruvec's list heads (struct lruvec: lists[] then lru_lock, two lines), and the
/// per-memcg LRU sizes (mem_cgroup_per_node.lru_zone_size, update_lru_size). Estimate from
/// the structures' layout, not measured.
pub const LRU_LOCK_LINES: u64 = 3;
/// Lines __remove_mapping's section writes for a file folio: the inode's i_lock (taken
/// before xa_lock_irq), the address_space's xa_lock with xa_head and nrpages
/// (page_cache_delete), and workingset_eviction's nonresident_age counter of the memcg's
/// lruvec and of its parent (workingset_age_nonresident walks up the hierarchy). The xarray
/// leaf node is not counted: two CPUs rarely free slots of one node at the same time.
/// Estimate from the source, not measured.
pub const PAGE_CACHE_DELETE_LINES: u64 = 4;
/// Lines __filemap_add_folio's xas_lock_irq section writes: the xa_lock with xa_head, and
/// nrpages with the mapping's other counters. Estimate from the source, not measured.
pub const PAGE_CACHE_INSERT_LINES: u64 = 2;

/// CPUs from which a lock's holds are kept in blocks (below, in one vector): with few CPUs a
/// new hold lands near the latest, where one vector is cheapest; with many, a lagging CPU's
/// hold lands far behind it. The two keep the same intervals (only speed differs). At 16 CPUs
/// (seed 000) blocks already win: lru_lock's holds from the workers' nested reclaims land
/// behind the reclaimer's, and one vector moved them (1.1% fewer instructions with blocks).
const BLOCK_HOLDS_FROM_CPUS: usize = 16;

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
    /// Total hold time (ns), line transfers included.
    pub hold_ns: u64,
    /// Sections whose previous holder was another CPU, and the cache lines they fetched.
    pub remote_handoffs: u64,
    pub line_transfers: u64,
    /// The latest holds' (end, CPU), sorted by end (searched from the back: a new hold
    /// mostly lands near the latest), packed as end << 16 | CPU, in blocks: a lagging CPU's
    /// hold (or a reader's behind kswapd's run of holds) moves at most one block.
    holders: BlockHistory<u64>,
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
            remote_handoffs: 0,
            line_transfers: 0,
            holders: BlockHistory::new(),
        }
    }

    /// Acquire at time `t` for `hold` ns: returns the time the hold starts (>= t), the start
    /// of the first gap at or after `t` that fits the hold.
    pub fn acquire(&mut self, t: u64, hold: u64) -> u64 {
        self.acquire_section(t, 0, hold, Section::default()).0
    }

    /// Acquire at time `t` on `cpu` for a section of `hold` ns of work that writes
    /// `sec.lines` cache lines the previous holder wrote: if that holder was another CPU, each
    /// line costs `sec.transfer` ns more. Returns the hold's start and its length.
    pub fn acquire_section(&mut self, t: u64, cpu: CpuId, hold: u64, sec: Section) -> (u64, u64) {
        let placed = match &mut self.holds {
            Holds::Flat(h) => place_hold(h, &mut self.holders, t, cpu, hold, sec),
            Holds::Blocks(h) => place_hold(h, &mut self.holders, t, cpu, hold, sec),
        };
        let (s, len) = (placed.start, placed.len);
        if placed.remote {
            self.remote_handoffs += 1;
            self.line_transfers += sec.lines;
        }
        self.acquired += 1;
        self.hold_ns += len;
        if s > t {
            self.contended += 1;
            self.wait_ns += s - t;
        }
        (s, len)
    }
}

/// A hold placed by `place_hold`.
struct Placed {
    start: u64,
    len: u64,
    /// Its previous holder was another CPU (the section fetched `sec.lines`).
    remote: bool,
}

/// A lock's busy periods, in one vector or in blocks.
trait HoldTimeline {
    type Pos: Copy;
    fn first_fit_at(&self, t: u64, len: u64) -> Fit<Self::Pos>;
    fn refit(&self, fit: Fit<Self::Pos>, len: u64) -> Fit<Self::Pos>;
    fn add_at(&mut self, start: u64, end: u64, at: Self::Pos);
}

impl HoldTimeline for Timeline {
    type Pos = usize;
    fn first_fit_at(&self, t: u64, len: u64) -> Fit<usize> {
        Timeline::first_fit_at(self, t, len)
    }
    fn refit(&self, fit: Fit<usize>, len: u64) -> Fit<usize> {
        Timeline::refit(self, fit, len)
    }
    fn add_at(&mut self, start: u64, end: u64, at: usize) {
        Timeline::add_at(self, start, end, at)
    }
}

impl HoldTimeline for BlockTimeline {
    type Pos = Pos;
    fn first_fit_at(&self, t: u64, len: u64) -> Fit<Pos> {
        BlockTimeline::first_fit_at(self, t, len)
    }
    fn refit(&self, fit: Fit<Pos>, len: u64) -> Fit<Pos> {
        BlockTimeline::refit(self, fit, len)
    }
    fn add_at(&mut self, start: u64, end: u64, at: Pos) {
        BlockTimeline::add_at(self, start, end, at)
    }
}

/// Place a section of `hold` ns wanted at `t` on `cpu`: the first gap at or after `t` that
/// fits it, longer by the line transfers if the CPU whose remembered hold ended last at or
/// before the gap's start was another one (then the first gap that fits the longer section).
/// Records the hold and its holder. Each history is searched once: the gap's place serves the
/// longer search and the add, the holder's place (the last ending at or before the start) is
/// moved forward to the new hold's end.
fn place_hold<H: HoldTimeline>(
    holds: &mut H,
    holders: &mut BlockHistory<u64>,
    t: u64,
    cpu: CpuId,
    hold: u64,
    sec: Section,
) -> Placed {
    let end_of = |p: &u64| p >> HOLDER_CPU_BITS;
    let mut fit = holds.first_fit_at(t, hold);
    let mut len = hold;
    let mut remote = false;
    let mut holder_at = None;
    if sec.lines > 0 {
        let at = holders.place(|p| end_of(p) <= fit.start);
        let cpu_of = |p: u64| (p & ((1 << HOLDER_CPU_BITS) - 1)) as CpuId;
        if holders.before(at).is_some_and(|p| cpu_of(p) != cpu) {
            len += sec.lines * sec.transfer;
            fit = holds.refit(fit, len);
            remote = true;
        }
        holder_at = Some(at);
    }
    let end = fit.start + len;
    holds.add_at(fit.start, end, fit.at);
    debug_assert!(end < 1 << (64 - HOLDER_CPU_BITS) && cpu < 1 << HOLDER_CPU_BITS);
    let ends_by = |p: &u64| end_of(p) <= end;
    let at = match holder_at {
        Some(at) => holders.advance(at, ends_by),
        None => holders.place(ends_by),
    };
    holders.insert_at(end << HOLDER_CPU_BITS | cpu as u64, at);
    if holders.len() > HOLDER_HISTORY {
        holders.pop_front();
    }
    Placed {
        start: fit.start,
        len,
        remote,
    }
}

/// What a section costs beyond its work when the lock comes from another CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct Section {
    /// Cache lines written under the lock that the previous holder wrote too.
    pub lines: u64,
    /// ns to fetch one such line from another CPU's cache (`line_transfer`).
    pub transfer: u64,
}

/// Which of the model's locks a section takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockId {
    /// The memcg lruvec's lru_lock.
    LruLock,
    /// The page cache lock (mapping->i_pages) of the model's file with this index.
    IPages(usize),
    /// The file's mapping->i_private_lock, which guards its folios' buffer heads.
    PrivateLock(usize),
}

/// The model's shared locks.
#[derive(Default)]
pub struct Locks {
    /// lruvec->lru_lock of the (single) memcg lruvec, taken with spin_lock_irq.
    pub lru_lock: SpinLock,
    /// Each file's mapping->i_pages lock (xa_lock_irq), by file index, made on first use.
    pub i_pages: Vec<SpinLock>,
    /// Each file's mapping->i_private_lock (spin_lock, interrupts on), by file index.
    pub i_private: Vec<SpinLock>,
}

impl Locks {
    pub fn new(nr_cpus: usize) -> Locks {
        Locks {
            lru_lock: SpinLock::new(nr_cpus),
            i_pages: Vec::new(),
            i_private: Vec::new(),
        }
    }

    fn lock(&mut self, id: LockId) -> &mut SpinLock {
        match id {
            LockId::LruLock => &mut self.lru_lock,
            // One file's lock is shared by its readers and whoever reclaims its pages, a
            // few CPUs: its holds land near the latest, where one vector is cheapest,
            // whatever the machine's size.
            LockId::IPages(file) => per_file(&mut self.i_pages, file),
            LockId::PrivateLock(file) => per_file(&mut self.i_private, file),
        }
    }
}

/// `file`'s lock in a per-file vector, made on first use.
fn per_file(locks: &mut Vec<SpinLock>, file: usize) -> &mut SpinLock {
    if locks.len() <= file {
        locks.resize_with(file + 1, || SpinLock::new(1));
    }
    &mut locks[file]
}

impl Kernel {
    /// spin_lock_irq(&lruvec->lru_lock) ... spin_unlock_irq for `hold` ns of work on `cpu`:
    /// the CPU spins until the lock is free, then holds it. Interrupts are off from the first
    /// spin to the unlock, so an IPI arriving meanwhile waits (kernel/smp.rs, `IrqOff`).
    pub fn lru_lock_irq_section(&mut self, cpu: CpuId, hold: u64, what: Spent) {
        self.lock_irq_section(cpu, LockId::LruLock, (hold, what), LRU_LOCK_LINES);
    }

    /// A section under `lock` taken with interrupts off (spin_lock_irq / xa_lock_irq) for
    /// `hold` ns of work writing `lines` cache lines the lock guards: the CPU spins until the
    /// lock is free, fetches the lines if another CPU held it last, and holds it. Interrupts
    /// are off from the first spin to the unlock, so an IPI arriving meanwhile waits. `hold`
    /// is the work's time and what it is spent on.
    pub fn lock_irq_section(&mut self, cpu: CpuId, lock: LockId, hold: (u64, Spent), lines: u64) {
        let t = self.cpus[cpu].clock;
        let end = self.lock_section(cpu, lock, hold, lines);
        self.smp.irq_off[cpu].push(t, end);
    }

    /// The same section under a plain spin_lock (interrupts stay on): the CPU spins until the
    /// lock is free, then holds it. Returns when it is released.
    pub fn lock_section(
        &mut self,
        cpu: CpuId,
        lock: LockId,
        (hold, what): (u64, Spent),
        lines: u64,
    ) -> u64 {
        let t = self.cpus[cpu].clock;
        let sec = Section {
            lines,
            transfer: self.cost.line_transfer,
        };
        let (start, len) = self.locks.lock(lock).acquire_section(t, cpu, hold, sec);
        let end = start + len;
        self.cpu_time.add(what, end - t);
        self.cpus[cpu].clock = end;
        end
    }

    /// __filemap_add_folio's xas_lock_irq section for a new folio in `file`'s page cache.
    pub fn page_cache_insert_locked(&mut self, cpu: CpuId, file: usize) {
        let hold = self.cost.page_cache_insert_locked;
        let hold = (hold, Spent::PageCache);
        self.lock_irq_section(cpu, LockId::IPages(file), hold, PAGE_CACHE_INSERT_LINES);
    }

    /// move_folios_to_lru (and MGLRU's putback in evict_folios): `nr` folios back on their
    /// lists under lru_lock.
    pub fn lru_putback_locked(&mut self, cpu: CpuId, nr: u64) {
        if nr > 0 {
            self.lru_lock_irq_section(
                cpu,
                nr * self.cost.lru_lock_putback_per_folio,
                Spent::LruPutback,
            );
        }
    }

    /// Lock statistics for the result's `extra` (the i_pages locks of all files summed).
    pub fn lock_stats(&self) -> Vec<(&'static str, u64)> {
        let l = &self.locks.lru_lock;
        let ip = |f: fn(&SpinLock) -> u64| self.locks.i_pages.iter().map(f).sum::<u64>();
        let pl = |f: fn(&SpinLock) -> u64| self.locks.i_private.iter().map(f).sum::<u64>();
        let mut v = vec![
            ("lru_lock_acquired", l.acquired),
            ("lru_lock_contended", l.contended),
            ("lru_lock_wait_ns", l.wait_ns),
            ("lru_lock_hold_ns", l.hold_ns),
            ("lru_lock_remote_handoffs", l.remote_handoffs),
            ("i_pages_lock_acquired", ip(|l| l.acquired)),
            ("i_pages_lock_contended", ip(|l| l.contended)),
            ("i_pages_lock_wait_ns", ip(|l| l.wait_ns)),
            ("i_pages_lock_hold_ns", ip(|l| l.hold_ns)),
            ("i_pages_lock_remote_handoffs", ip(|l| l.remote_handoffs)),
            (
                "lock_line_transfers",
                l.line_transfers + ip(|l| l.line_transfers) + pl(|l| l.line_transfers),
            ),
        ];
        // Only where reclaim released buffer heads (written page-cache folios).
        if pl(|l| l.acquired) > 0 {
            v.extend([
                ("i_private_lock_acquired", pl(|l| l.acquired)),
                ("i_private_lock_contended", pl(|l| l.contended)),
                ("i_private_lock_wait_ns", pl(|l| l.wait_ns)),
                ("i_private_lock_hold_ns", pl(|l| l.hold_ns)),
            ]);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::{Section, SpinLock, HOLDER_CPU_BITS, HOLDER_HISTORY, LOCK_HISTORY};
    use crate::timeline::{BlockHistory, Timeline};

    /// A section placed with a search per question (the gap, the previous holder, the gap
    /// for the longer section, the add, the holder's insert): what `acquire_section` must
    /// give with its fused searches.
    fn searched_section(
        holds: &mut Timeline,
        holders: &mut BlockHistory<u64>,
        (t, cpu, hold): (u64, usize, u64),
        sec: Section,
    ) -> (u64, u64) {
        let mut s = holds.first_fit(t, hold);
        let mut len = hold;
        let before = holders.last_where(|&p| p >> HOLDER_CPU_BITS <= s);
        if sec.lines > 0 && before.is_some_and(|p| p & 0xffff != cpu as u64) {
            len += sec.lines * sec.transfer;
            s = holds.first_fit(t, len);
        }
        holds.add(s, s + len);
        let end = s + len;
        holders.insert_after(end << HOLDER_CPU_BITS | cpu as u64, |&p| {
            p >> HOLDER_CPU_BITS <= end
        });
        if holders.len() > HOLDER_HISTORY {
            holders.pop_front();
        }
        (s, len)
    }

    /// Random sections, mostly near the latest hold, some far behind it (before everything
    /// the lock remembers): the fused searches place each as the separate ones do, in one
    /// vector and in blocks, and keep the holders in the same places.
    #[test]
    fn fused_searches_place_sections_as_separate_searches_do() {
        use rand::{Rng, SeedableRng};
        for nr_cpus in [1, 16] {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
            let mut lock = SpinLock::new(nr_cpus);
            let mut holds = Timeline::new(LOCK_HISTORY);
            let mut holders = BlockHistory::new();
            let mut now = 0u64;
            let mut remote = 0;
            for n in 0..30_000 {
                // Phases of a saturated lock and of one with gaps between holds.
                now += rng.gen_range(0..[300, 1_000][n / 2_000 % 2]);
                let back = if rng.gen_bool(0.05) {
                    rng.gen_range(0..2_000_000)
                } else {
                    rng.gen_range(0..2_000)
                };
                let t = now.saturating_sub(back);
                let cpu = rng.gen_range(0..4);
                let hold = rng.gen_range(1..200);
                let sec = Section {
                    lines: [0, 1, 3][rng.gen_range(0..3)],
                    transfer: rng.gen_range(0..200),
                };
                let want = searched_section(&mut holds, &mut holders, (t, cpu, hold), sec);
                let before = lock.remote_handoffs;
                assert_eq!(lock.acquire_section(t, cpu, hold, sec), want, "section {n}");
                remote += lock.remote_handoffs - before;
                if n % 64 == 0 {
                    let same = format!("{:?}", lock.holders) == format!("{holders:?}");
                    assert!(same, "the holders are kept in the same places, section {n}");
                }
            }
            assert!(remote > 1000, "remote hand-overs were exercised: {remote}");
        }
    }

    const SEC: Section = Section {
        lines: 3,
        transfer: 60,
    };

    #[test]
    fn a_section_after_another_cpus_hold_fetches_its_lines_and_after_its_own_does_not() {
        let mut l = SpinLock::new(2);
        // Nobody held it before: no transfer.
        assert_eq!(l.acquire_section(0, 0, 100, SEC), (0, 100));
        // CPU 0 again: its own lines are still in its cache.
        assert_eq!(l.acquire_section(200, 0, 100, SEC), (200, 100));
        // CPU 1 after CPU 0: three lines fetched, 180 ns more.
        assert_eq!(l.acquire_section(400, 1, 100, SEC), (400, 280));
        // CPU 0 wants it at 450, inside CPU 1's hold: waits until 680, then fetches too.
        assert_eq!(l.acquire_section(450, 0, 100, SEC), (680, 280));
        assert_eq!((l.remote_handoffs, l.line_transfers), (2, 6));
        assert_eq!((l.contended, l.wait_ns), (1, 230));
        assert_eq!(l.hold_ns, 100 + 100 + 280 + 280);
    }

    #[test]
    fn the_previous_holder_is_the_one_before_the_slot_in_time_not_in_processing_order() {
        let mut l = SpinLock::new(2);
        // CPU 0's step ran ahead: holds at 1000 and 2000.
        l.acquire_section(1000, 0, 100, SEC);
        l.acquire_section(2000, 0, 100, SEC);
        // CPU 1, processed later, at 1500: its predecessor is CPU 0's hold ending at 1100.
        assert_eq!(l.acquire_section(1500, 1, 100, SEC), (1500, 280));
        // CPU 1 at 10: nothing ended before it, so nothing to fetch.
        assert_eq!(l.acquire_section(10, 1, 100, SEC), (10, 100));
        // CPU 1 at 1790: after its own hold ending at 1780.
        assert_eq!(l.acquire_section(1790, 1, 100, SEC), (1790, 100));
    }

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
