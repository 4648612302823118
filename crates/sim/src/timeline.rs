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
        if t >= self.last_end() {
            return None;
        }
        let i = self.after(t);
        (i > 0 && self.iv[i - 1].1 > t).then(|| self.iv[i - 1].1)
    }

    /// The start of the first gap at or after `t` that holds `len` ns.
    pub fn first_fit(&self, t: u64, len: u64) -> u64 {
        let mut s = t;
        if s >= self.last_end() {
            return s;
        }
        let iv = self.iv.as_slice();
        let mut i = self.after(s);
        if i > 0 && iv[i - 1].1 > s {
            s = iv[i - 1].1;
        }
        while i < iv.len() && iv[i].0 < s + len.max(1) {
            s = s.max(iv[i].1);
            i += 1;
        }
        s
    }

    /// Add [start, end), merged with the intervals it overlaps or touches.
    pub fn add(&mut self, start: u64, end: u64) {
        if end <= start {
            return;
        }
        if self.iv.back().is_none_or(|&(_, e)| e < start) {
            self.iv.push_back((start, end));
        } else {
            let (mut s, mut e) = (start, end);
            let mut i = self.after(s);
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
    use super::{partition_point_back, History, Timeline};

    #[test]
    fn partition_point_back_matches_partition_point() {
        for n in 0..40u64 {
            let v: Vec<u64> = (0..n).map(|x| x * 2).collect();
            for t in 0..(2 * n + 2) {
                assert_eq!(
                    partition_point_back(&v, |&x| x <= t),
                    v.partition_point(|&x| x <= t),
                    "n {n} t {t}"
                );
            }
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
