//! Disjoint time intervals [start, end) kept sorted, with a bounded history: the busy periods
//! of a lock (locking.rs) and the interrupts-off periods of a CPU (smp.rs).
//!
//! Events arrive nearly in time order (the engine steps the CPU with the smallest clock), so a
//! sorted vector that mostly appends at the back, searched from the back, is much cheaper than
//! a tree; the oldest intervals are dropped beyond the capacity.

/// A sorted sequence with a bounded history: a `Vec` whose front `head` elements are dropped
/// lazily (compacted once they are as many as the capacity), so the live part is one slice
/// (cheap to index and search) and dropping the oldest costs O(1) amortized.
#[derive(Clone, Debug, Default)]
pub struct History<T> {
    v: Vec<T>,
    head: usize,
}

impl<T: Copy> History<T> {
    pub fn new() -> History<T> {
        History {
            v: Vec::new(),
            head: 0,
        }
    }

    pub fn as_slice(&self) -> &[T] {
        &self.v[self.head..]
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.v[self.head..]
    }

    pub fn len(&self) -> usize {
        self.v.len() - self.head
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn back(&self) -> Option<&T> {
        self.as_slice().last()
    }

    pub fn push_back(&mut self, x: T) {
        self.v.push(x);
    }

    /// Insert at live index `i`.
    pub fn insert(&mut self, i: usize, x: T) {
        self.v.insert(self.head + i, x);
    }

    /// Remove the live elements [i, j).
    pub fn remove_range(&mut self, i: usize, j: usize) {
        self.v.drain(self.head + i..self.head + j);
    }

    /// Drop the oldest (first) element.
    pub fn pop_front(&mut self) {
        debug_assert!(!self.is_empty());
        self.head += 1;
        if self.head >= 64 && self.head >= self.len() {
            self.v.drain(..self.head);
            self.head = 0;
        }
    }
}

impl<T> std::ops::Index<usize> for History<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.v[self.head + i]
    }
}

impl<T> std::ops::IndexMut<usize> for History<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.v[self.head + i]
    }
}

/// The intervals in one vector (searched from the back): the cheapest while requests come
/// near the latest interval, as a CPU's interrupts-off windows do.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    iv: History<(u64, u64)>,
    cap: usize,
}

impl Timeline {
    pub fn new(cap: usize) -> Timeline {
        Timeline {
            iv: History::new(),
            cap,
        }
    }

    /// The latest end of any interval kept (0 when empty): nothing is busy at or after it.
    pub fn last_end(&self) -> u64 {
        self.iv.back().map_or(0, |&(_, e)| e)
    }

    /// Index of the first interval starting after `t`.
    fn after(&self, t: u64) -> usize {
        partition_point_back(self.iv.as_slice(), |&(s, _)| s <= t)
    }

    /// The end of the interval holding `t`, if one does.
    pub fn busy_until(&self, t: u64) -> Option<u64> {
        self.busy_until_at(t).0
    }

    /// `busy_until(t)`, and the index of the first interval starting after `t`, which is also
    /// the first starting after the time returned (intervals never touch: `add` merges them),
    /// so `add_at` can start an interval there without searching again.
    pub fn busy_until_at(&self, t: u64) -> (Option<u64>, usize) {
        if t >= self.last_end() {
            return (None, self.iv.len());
        }
        let i = self.after(t);
        ((i > 0 && self.iv[i - 1].1 > t).then(|| self.iv[i - 1].1), i)
    }

    /// The start of the first gap at or after `t` that holds `len` ns.
    pub fn first_fit(&self, t: u64, len: u64) -> u64 {
        self.first_fit_at(t, len).start
    }

    /// `first_fit`, with the index of the first interval starting after the gap's start
    /// (for `add_at`, or `refit` to a longer length).
    pub fn first_fit_at(&self, t: u64, len: u64) -> Fit<usize> {
        if t >= self.last_end() {
            return Fit {
                start: t,
                at: self.iv.len(),
            };
        }
        let iv = self.iv.as_slice();
        let i = self.after(t);
        let s = if i > 0 && iv[i - 1].1 > t {
            iv[i - 1].1
        } else {
            t
        };
        self.refit(Fit { start: s, at: i }, len)
    }

    /// The first gap from `fit` on that holds `len` ns (at least the length `fit` was found
    /// for): `first_fit_at(t, len)` for the `t` that gave `fit`, without searching again.
    pub fn refit(&self, fit: Fit<usize>, len: u64) -> Fit<usize> {
        let iv = self.iv.as_slice();
        let (mut s, mut i) = (fit.start, fit.at);
        while i < iv.len() && iv[i].0 < s + len.max(1) {
            s = s.max(iv[i].1);
            i += 1;
        }
        Fit { start: s, at: i }
    }

    /// Add [start, end), merged with the intervals it overlaps or touches.
    pub fn add(&mut self, start: u64, end: u64) {
        self.add_found(start, end, None);
    }

    /// `add`, with the index of the first interval starting after `start` already found (by
    /// `busy_until_at`, nothing added since).
    pub fn add_at(&mut self, start: u64, end: u64, after_start: usize) {
        debug_assert_eq!(after_start, self.after(start));
        self.add_found(start, end, Some(after_start));
    }

    fn add_found(&mut self, start: u64, end: u64, after_start: Option<usize>) {
        if end <= start {
            return;
        }
        if self.iv.back().is_none_or(|&(_, e)| e < start) {
            self.iv.push_back((start, end));
        } else {
            let (mut s, mut e) = (start, end);
            let mut i = after_start.unwrap_or_else(|| self.after(s));
            let iv = self.iv.as_slice();
            if i > 0 && iv[i - 1].1 >= s {
                i -= 1;
                s = s.min(iv[i].0);
            }
            let mut j = i;
            while j < iv.len() && iv[j].0 <= e {
                e = e.max(iv[j].1);
                j += 1;
            }
            if j > i {
                // Merged into the intervals [i, j): the first holds the union, the rest go.
                self.iv[i] = (s, e);
                if j > i + 1 {
                    self.iv.remove_range(i + 1, j);
                }
            } else {
                self.iv.insert(i, (s, e));
            }
        }
        if self.iv.len() > self.cap {
            self.iv.pop_front();
        }
    }
}

/// A gap found by `first_fit_at`: its start, and the place of the first interval starting
/// after it (an index, or a block timeline's place).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fit<P> {
    pub start: u64,
    pub at: P,
}

/// Intervals per block at most (a block that grows past it is split in two halves).
const BLOCK: usize = 128;

/// The intervals in order, in blocks of at most `BLOCK`, for a lock shared by every CPU: with
/// many CPUs a lagging one's request lands far behind the latest holds, and inserting it moves
/// at most one block's tail instead of everything after it. Searches go from the back over the
/// blocks (by their first start), then within the block (`partition_point_block`). The oldest
/// intervals are forgotten from the first block by a cursor (as in [`BlockHistory`]), the
/// block itself once it is used up: a full timeline forgets one interval per add, which must
/// not move the first block each time.
#[derive(Clone, Debug, Default)]
pub struct BlockTimeline {
    blocks: Vec<Vec<(u64, u64)>>,
    /// Intervals of `blocks[0]` already forgotten (older than every live one).
    front: usize,
    len: usize,
    cap: usize,
}

/// A place in a [`BlockTimeline`]: (block, index in it); `(blocks.len(), 0)` is the end. Always
/// normalized: the index is inside its block's live part unless the place is the end.
pub type Pos = (usize, usize);

impl BlockTimeline {
    pub fn new(cap: usize) -> BlockTimeline {
        BlockTimeline {
            blocks: Vec::new(),
            front: 0,
            len: 0,
            cap,
        }
    }

    /// The first live index of block `k`.
    fn lo(&self, k: usize) -> usize {
        if k == 0 {
            self.front
        } else {
            0
        }
    }

    /// The latest end of any interval kept (0 when empty): nothing is busy at or after it.
    pub fn last_end(&self) -> u64 {
        self.blocks
            .last()
            .and_then(|b| b.last())
            .map_or(0, |&(_, e)| e)
    }

    fn end(&self) -> Pos {
        (self.blocks.len(), 0)
    }

    fn get(&self, p: Pos) -> (u64, u64) {
        self.blocks[p.0][p.1]
    }

    fn next(&self, p: Pos) -> Pos {
        if p.1 + 1 < self.blocks[p.0].len() {
            (p.0, p.1 + 1)
        } else {
            (p.0 + 1, 0)
        }
    }

    fn prev(&self, p: Pos) -> Option<Pos> {
        if p.1 > self.lo(p.0) {
            Some((p.0, p.1 - 1))
        } else if p.0 > 0 {
            Some((p.0 - 1, self.blocks[p.0 - 1].len() - 1))
        } else {
            None
        }
    }

    /// The first interval starting after `t`.
    fn after(&self, t: u64) -> Pos {
        // Blocks whose first interval starts at or before t (block 0's first may be a
        // forgotten one: older than its live ones, so the order holds).
        let k = partition_point_back(&self.blocks, |b| b[0].0 <= t);
        if k == 0 {
            return (0, self.front);
        }
        let b = &self.blocks[k - 1];
        let lo = self.lo(k - 1);
        let i = lo + partition_point_block(&b[lo..], |&(s, _)| s <= t);
        if i == b.len() {
            (k, 0)
        } else {
            (k - 1, i)
        }
    }

    /// The end of the interval holding `t`, if one does.
    pub fn busy_until(&self, t: u64) -> Option<u64> {
        if t >= self.last_end() {
            return None;
        }
        let q = self.prev(self.after(t))?;
        let (_, e) = self.get(q);
        (e > t).then_some(e)
    }

    /// The start of the first gap at or after `t` that holds `len` ns.
    pub fn first_fit(&self, t: u64, len: u64) -> u64 {
        self.first_fit_at(t, len).start
    }

    /// `first_fit`, with the place of the first interval starting after the gap's start (for
    /// `add_at`, or `refit` to a longer length).
    pub fn first_fit_at(&self, t: u64, len: u64) -> Fit<Pos> {
        if t >= self.last_end() {
            return Fit {
                start: t,
                at: self.end(),
            };
        }
        let p = self.after(t);
        let s = match self.prev(p) {
            Some(q) if self.get(q).1 > t => self.get(q).1,
            _ => t,
        };
        self.refit(Fit { start: s, at: p }, len)
    }

    /// The first gap from `fit` on that holds `len` ns (at least the length `fit` was found
    /// for): `first_fit_at(t, len)` for the `t` that gave `fit`, without searching again.
    pub fn refit(&self, fit: Fit<Pos>, len: u64) -> Fit<Pos> {
        let (mut s, mut p) = (fit.start, fit.at);
        let end = self.end();
        while p != end {
            let (is, ie) = self.get(p);
            if is >= s + len.max(1) {
                break;
            }
            s = s.max(ie);
            p = self.next(p);
        }
        Fit { start: s, at: p }
    }

    /// Add [start, end), merged with the intervals it overlaps or touches.
    pub fn add(&mut self, start: u64, end: u64) {
        self.add_found(start, end, None);
    }

    /// `add`, with the place of the first interval starting after `start` already found (by
    /// `first_fit_at`, nothing added since).
    pub fn add_at(&mut self, start: u64, end: u64, after_start: Pos) {
        debug_assert_eq!(after_start, self.after(start));
        self.add_found(start, end, Some(after_start));
    }

    fn add_found(&mut self, start: u64, end: u64, after_start: Option<Pos>) {
        if end <= start {
            return;
        }
        if self.len == 0 || self.last_end() < start {
            match self.blocks.last_mut() {
                Some(b) if b.len() < BLOCK => b.push((start, end)),
                _ => self.blocks.push(vec![(start, end)]),
            }
            self.len += 1;
        } else {
            let (mut s, mut e) = (start, end);
            let mut i = after_start.unwrap_or_else(|| self.after(s));
            if let Some(q) = self.prev(i) {
                let (qs, qe) = self.get(q);
                if qe >= s {
                    i = q;
                    s = s.min(qs);
                }
            }
            let stop = self.end();
            let mut j = i;
            let mut merged = 0;
            while j != stop {
                let (js, je) = self.get(j);
                if js > e {
                    break;
                }
                e = e.max(je);
                merged += 1;
                j = self.next(j);
            }
            if merged > 0 {
                // Merged into the intervals [i, j): the first holds the union, the rest go.
                self.blocks[i.0][i.1] = (s, e);
                if merged > 1 {
                    let from = self.next(i);
                    if from.0 == j.0 {
                        self.blocks[from.0].drain(from.1..j.1);
                    } else {
                        self.blocks[from.0].truncate(from.1);
                        if j.0 < self.blocks.len() {
                            self.blocks[j.0].drain(..j.1);
                        }
                        self.blocks.drain(from.0 + 1..j.0);
                        self.blocks.retain(|b| !b.is_empty());
                    }
                    self.len -= merged - 1;
                }
            } else {
                // Inserted before i (i is not the end: the new interval starts before the
                // last one, which it does not touch).
                let mut i = i;
                if i.0 == 0 && self.front > 0 {
                    // Drop the forgotten front before it could be split off with live ones.
                    self.blocks[0].drain(..self.front);
                    i.1 -= self.front;
                    self.front = 0;
                }
                let b = &mut self.blocks[i.0];
                b.insert(i.1, (s, e));
                if b.len() > BLOCK {
                    let tail = b.split_off(b.len() / 2);
                    self.blocks.insert(i.0 + 1, tail);
                }
                self.len += 1;
            }
        }
        if self.len > self.cap {
            // Forget the oldest.
            self.front += 1;
            if self.front == self.blocks[0].len() {
                self.blocks.remove(0);
                self.front = 0;
            }
            self.len -= 1;
        }
    }
}

/// A sorted sequence with a bounded history in blocks of at most `BLOCK` (128; a block that grows
/// past it is split in two halves): inserting far behind the latest element moves at most one
/// block's tail, where one vector would move everything after it. Searched from the back over
/// the blocks (by their first element), then within the block (`partition_point_block`); the
/// oldest elements are dropped from the first block by a cursor, the block itself once it is
/// used up.
#[derive(Clone, Debug, Default)]
pub struct BlockHistory<T> {
    blocks: Vec<Vec<T>>,
    /// Elements of `blocks[0]` already dropped.
    front: usize,
    len: usize,
}

impl<T: Copy> BlockHistory<T> {
    pub fn new() -> BlockHistory<T> {
        BlockHistory {
            blocks: Vec::new(),
            front: 0,
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The live elements of block `k`.
    fn live(&self, k: usize) -> &[T] {
        let b = &self.blocks[k];
        if k == 0 {
            &b[self.front..]
        } else {
            b
        }
    }

    /// The place just after every element that satisfies `pred` (true on a prefix, false
    /// after): (block, index in the block's vector), or None before every live element.
    fn boundary(&self, pred: &mut impl FnMut(&T) -> bool) -> Option<(usize, usize)> {
        // Blocks whose first (possibly dropped) element satisfies pred; the dropped ones of
        // block 0 are older than its live ones, so at worst the search ends at its front.
        let k = partition_point_back(&self.blocks, |b| pred(&b[0]));
        let k = k.checked_sub(1)?;
        let lo = if k == 0 { self.front } else { 0 };
        Some((k, lo + partition_point_block(self.live(k), &mut *pred)))
    }

    /// The last element satisfying `pred` (true on a prefix, false after).
    pub fn last_where(&self, mut pred: impl FnMut(&T) -> bool) -> Option<T> {
        let (k, i) = self.boundary(&mut pred)?;
        let lo = if k == 0 { self.front } else { 0 };
        (i > lo).then(|| self.blocks[k][i - 1])
    }

    /// The place just after every element that satisfies `pred` (true on a prefix, false
    /// after), for `before`, `advance` and `insert_at`: (block, index in the block's vector),
    /// the index past the block's first live element unless the place is before them all.
    pub fn place(&self, mut pred: impl FnMut(&T) -> bool) -> (usize, usize) {
        self.boundary(&mut pred).unwrap_or((0, self.front))
    }

    /// The element just before `place` (the last one satisfying its search's `pred`).
    pub fn before(&self, (k, i): (usize, usize)) -> Option<T> {
        let lo = if k == 0 { self.front } else { 0 };
        (i > lo).then(|| self.blocks[k][i - 1])
    }

    /// `place` moved past the elements after it that satisfy `pred` (true on a prefix, and
    /// on every element before `place`): `place(pred)` without searching from the back.
    pub fn advance(
        &self,
        (mut k, mut i): (usize, usize),
        pred: impl Fn(&T) -> bool,
    ) -> (usize, usize) {
        loop {
            if i < self.blocks.get(k).map_or(0, Vec::len) {
                if !pred(&self.blocks[k][i]) {
                    return (k, i);
                }
                i += 1;
            } else if k + 1 < self.blocks.len() && pred(&self.blocks[k + 1][0]) {
                (k, i) = (k + 1, 1);
            } else {
                return (k, i);
            }
        }
    }

    /// Insert `x` after every element satisfying `pred` (true on a prefix: those that sort at
    /// or before `x`).
    pub fn insert_after(&mut self, x: T, pred: impl FnMut(&T) -> bool) {
        let at = self.place(pred);
        self.insert_at(x, at);
    }

    /// Insert `x` at `at`, a place found by `place` or `advance` (nothing inserted or
    /// dropped since).
    pub fn insert_at(&mut self, x: T, (k, i): (usize, usize)) {
        self.len += 1;
        if self.blocks.is_empty() {
            self.blocks.push(vec![x]);
            return;
        }
        if k + 1 == self.blocks.len() && i == self.blocks[k].len() && i >= BLOCK {
            // At the very end of a full block: a new block (appends stay cheap).
            self.blocks.push(vec![x]);
            return;
        }
        if k == 0 && self.front > 0 {
            // Drop the dead front before it could be split off with live elements.
            self.blocks[0].drain(..self.front);
            let i = i - self.front;
            self.front = 0;
            return self.insert_in_block(0, i, x);
        }
        self.insert_in_block(k, i, x);
    }

    fn insert_in_block(&mut self, k: usize, i: usize, x: T) {
        let b = &mut self.blocks[k];
        b.insert(i, x);
        if b.len() > BLOCK {
            let tail = b.split_off(b.len() / 2);
            self.blocks.insert(k + 1, tail);
        }
    }

    /// Drop the oldest (first) element.
    pub fn pop_front(&mut self) {
        debug_assert!(!self.is_empty());
        self.len -= 1;
        self.front += 1;
        if self.front == self.blocks[0].len() {
            self.blocks.remove(0);
            self.front = 0;
        }
    }
}

/// `v.partition_point(pred)` for a block: its end when its last element satisfies `pred` (a
/// request at or after the latest, as most holders are), else a bisection (a lagging CPU's
/// request lands tens of elements behind the latest, where galloping takes more probes).
fn partition_point_block<T>(v: &[T], mut pred: impl FnMut(&T) -> bool) -> usize {
    match v.split_last() {
        Some((last, rest)) if !pred(last) => rest.partition_point(pred),
        _ => v.len(),
    }
}

/// `v.partition_point(pred)` (`pred` true on a prefix of `v`, false after), searched from the
/// back: galloping towards the front, then a binary search in the last stride. Events arrive
/// nearly in time order, so the answer is usually near the end: O(log distance from the end).
pub fn partition_point_back<T>(v: &[T], mut pred: impl FnMut(&T) -> bool) -> usize {
    // Invariant: every element at or after `hi` fails `pred`.
    let mut hi = v.len();
    let mut stride = 1;
    while hi > 0 {
        let probe = hi.saturating_sub(stride);
        if pred(&v[probe]) {
            // The boundary is in (probe, hi].
            return probe + 1 + v[probe + 1..hi].partition_point(pred);
        }
        hi = probe;
        stride *= 2;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::{
        partition_point_back, partition_point_block, BlockHistory, BlockTimeline, History, Timeline,
    };

    #[test]
    fn block_history_matches_a_sorted_vector() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for round in 0..20 {
            let cap = [1, 100, 500, 4096][round % 4];
            let mut a = BlockHistory::new();
            // (key, insertion number): equal keys keep their insertion order.
            let mut b: Vec<(u64, u64)> = Vec::new();
            let mut now = 0u64;
            for n in 0..6000u64 {
                now += rng.gen_range(0..30);
                let back = if rng.gen_bool(0.2) {
                    rng.gen_range(0..50_000)
                } else {
                    rng.gen_range(0..100)
                };
                let x = (now.saturating_sub(back), n);
                a.insert_after(x, |e: &(u64, u64)| e.0 <= x.0);
                let at = b.partition_point(|e| e.0 <= x.0);
                b.insert(at, x);
                if b.len() > cap {
                    a.pop_front();
                    b.remove(0);
                }
                let t = now.saturating_sub(rng.gen_range(0..60_000));
                let want = b.iter().rev().find(|e| e.0 <= t).copied();
                assert_eq!(a.last_where(|e| e.0 <= t), want, "round {round} step {n}");
                assert_eq!(a.len(), b.len());
                assert!(a
                    .blocks
                    .iter()
                    .all(|x| !x.is_empty() && x.len() <= super::BLOCK));
            }
            let live: Vec<(u64, u64)> = (0..a.blocks.len())
                .flat_map(|k| a.live(k).to_vec())
                .collect();
            assert_eq!(live, b);
        }
    }

    #[test]
    fn blocks_match_the_flat_timeline() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for round in 0..40 {
            let cap = [3, 50, 300, 1000][round % 4];
            let mut a = BlockTimeline::new(cap);
            let mut b = Timeline::new(cap);
            let mut now = 0u64;
            for step in 0..4000 {
                now += rng.gen_range(0..40);
                // Mostly near the latest, sometimes far behind it.
                let back = if rng.gen_bool(0.2) {
                    rng.gen_range(0..20_000)
                } else {
                    rng.gen_range(0..200)
                };
                let s = now.saturating_sub(back);
                let len = rng.gen_range(0..60);
                a.add(s, s + len);
                b.add(s, s + len);
                let t = now.saturating_sub(rng.gen_range(0..25_000));
                let l = rng.gen_range(0..100);
                assert_eq!(
                    a.busy_until(t),
                    b.busy_until(t),
                    "round {round} step {step}"
                );
                assert_eq!(
                    a.first_fit(t, l),
                    b.first_fit(t, l),
                    "round {round} step {step}"
                );
                assert_eq!(a.last_end(), b.last_end());
                assert_eq!(a.len, b.iv.len());
                assert!(a
                    .blocks
                    .iter()
                    .all(|x| !x.is_empty() && x.len() <= super::BLOCK));
            }
            let flat: Vec<(u64, u64)> = a.blocks.concat();
            assert_eq!(&flat[a.front..], b.iv.as_slice());
        }
    }

    /// A gap found for one length and refitted to a longer one is the gap searched for the
    /// longer one, and its place is where `add` would search for it, in both timelines.
    #[test]
    fn refit_matches_first_fit_and_places_match_after() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let (mut a, mut b) = (BlockTimeline::new(700), Timeline::new(700));
        let mut now = 0u64;
        for step in 0..20_000 {
            now += rng.gen_range(0..40);
            let t = now.saturating_sub(rng.gen_range(0..30_000));
            let (l1, l2) = (rng.gen_range(0..50), rng.gen_range(0..150));
            let (fa, fb) = (a.first_fit_at(t, l1), b.first_fit_at(t, l1));
            assert_eq!(fa.start, b.first_fit(t, l1), "step {step}");
            assert_eq!((fa.start, fa.at), (fa.start, a.after(fa.start)));
            assert_eq!((fb.start, fb.at), (fb.start, b.after(fb.start)));
            let l2 = l1.max(l2);
            let (ra, rb) = (a.refit(fa, l2), b.refit(fb, l2));
            assert_eq!(ra.start, b.first_fit(t, l2), "step {step}");
            assert_eq!(rb.start, ra.start);
            assert_eq!(ra.at, a.after(ra.start));
            assert_eq!(rb.at, b.after(rb.start));
            a.add_at(ra.start, ra.start + l2, ra.at);
            b.add_at(rb.start, rb.start + l2, rb.at);
            assert_eq!(a.last_end(), b.last_end());
        }
    }

    /// `advance` from an earlier element's place finds the place a search would.
    #[test]
    fn block_history_advance_matches_place() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
        let mut h = BlockHistory::new();
        let mut now = 0u64;
        for step in 0..20_000 {
            now += rng.gen_range(0..30);
            let t = now.saturating_sub(rng.gen_range(0..5_000));
            let u = t + rng.gen_range(0..3_000);
            let from = h.place(|&x| x <= t);
            let at = h.advance(from, |&x| x <= u);
            assert_eq!(at, h.place(|&x| x <= u), "step {step}");
            assert_eq!(h.before(from), h.last_where(|&x| x <= t));
            h.insert_at(u, at);
            if h.len() > 1000 {
                h.pop_front();
            }
        }
    }

    #[test]
    fn partition_point_back_and_block_match_partition_point() {
        for n in 0..40u64 {
            let v: Vec<u64> = (0..n).map(|x| x * 2).collect();
            for t in 0..(2 * n + 2) {
                assert_eq!(
                    partition_point_back(&v, |&x| x <= t),
                    v.partition_point(|&x| x <= t),
                    "n {n} t {t}"
                );
                assert_eq!(
                    partition_point_block(&v, |&x| x <= t),
                    v.partition_point(|&x| x <= t),
                    "n {n} t {t}"
                );
            }
        }
    }

    /// An interval added at the end of the busy period holding `t` (`busy_until_at`'s place)
    /// leaves the timeline as a plain `add` does, including merges and forgetting.
    #[test]
    fn add_at_the_found_place_matches_add() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (mut a, mut b) = (Timeline::new(64), Timeline::new(64));
        let mut now = 0u64;
        for _ in 0..20_000 {
            now += rng.gen_range(0..20);
            let t = now.saturating_sub(rng.gen_range(0..400));
            let len = rng.gen_range(1..40);
            let (busy, at) = a.busy_until_at(t);
            assert_eq!(busy, b.busy_until(t));
            let start = busy.unwrap_or(t);
            a.add_at(start, start + len, at);
            b.add(start, start + len);
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
    }

    #[test]
    fn intervals_merge_and_gaps_are_found() {
        let mut t = Timeline::new(16);
        t.add(100, 200);
        t.add(300, 400);
        t.add(200, 250); // touches [100, 200): one period [100, 250)
        assert_eq!(t.busy_until(150), Some(250));
        assert_eq!(t.busy_until(260), None);
        assert_eq!(t.first_fit(50, 40), 50);
        assert_eq!(t.first_fit(60, 50), 250, "[250, 300) fits 50 exactly");
        assert_eq!(t.first_fit(240, 60), 400, "[250, 300) is too short for 60");
        t.add(90, 310); // bridges both
        assert_eq!(t.busy_until(95), Some(400));
        let mut small = Timeline::new(2);
        small.add(0, 1);
        small.add(2, 3);
        small.add(4, 5);
        assert_eq!(small.busy_until(0), None, "the oldest is forgotten");
    }

    #[test]
    fn history_drops_from_the_front_and_compacts() {
        let mut h = History::new();
        for i in 0..1000u64 {
            h.push_back(i);
            if h.len() > 10 {
                h.pop_front();
            }
        }
        assert_eq!(h.as_slice(), &(990..1000).collect::<Vec<_>>()[..]);
        assert!(h.v.len() <= 10 + 64);
        h.insert(0, 5);
        h.remove_range(1, 3);
        assert_eq!(h[0], 5);
        assert_eq!(h[1], 992);
    }
}
