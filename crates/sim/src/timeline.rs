//! Disjoint time intervals [start, end) kept sorted, with a bounded history: the busy periods
//! of a lock (locking.rs) and the interrupts-off periods of a CPU (smp.rs).
//!
//! Events arrive nearly in time order (the engine steps the CPU with the smallest clock), so a
//! sorted deque that mostly appends at the back is much cheaper than a tree; the oldest
//! intervals are dropped beyond the capacity.

use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    iv: VecDeque<(u64, u64)>,
    cap: usize,
}

impl Timeline {
    pub fn new(cap: usize) -> Timeline {
        Timeline {
            iv: VecDeque::new(),
            cap,
        }
    }

    /// The latest end of any interval kept (0 when empty): nothing is busy at or after it.
    pub fn last_end(&self) -> u64 {
        self.iv.back().map_or(0, |&(_, e)| e)
    }

    /// Index of the first interval starting after `t`.
    fn after(&self, t: u64) -> usize {
        partition_point_back(&self.iv, |&(s, _)| s <= t)
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
        let mut i = self.after(s);
        if i > 0 && self.iv[i - 1].1 > s {
            s = self.iv[i - 1].1;
        }
        while i < self.iv.len() && self.iv[i].0 < s + len.max(1) {
            s = s.max(self.iv[i].1);
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
            if i > 0 && self.iv[i - 1].1 >= s {
                i -= 1;
                s = s.min(self.iv[i].0);
            }
            let mut j = i;
            while j < self.iv.len() && self.iv[j].0 <= e {
                e = e.max(self.iv[j].1);
                j += 1;
            }
            if j > i {
                // Merged into the intervals [i, j): the first holds the union, the rest go.
                self.iv[i] = (s, e);
                if j > i + 1 {
                    self.iv.drain(i + 1..j);
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
pub fn partition_point_back<T>(v: &VecDeque<T>, mut pred: impl FnMut(&T) -> bool) -> usize {
    // Invariant: every element at or after `hi` fails `pred`.
    let mut hi = v.len();
    let mut stride = 1;
    while hi > 0 {
        let probe = hi.saturating_sub(stride);
        if pred(&v[probe]) {
            // The boundary is in (probe, hi].
            let (mut lo, mut h) = (probe + 1, hi);
            while lo < h {
                let mid = lo + (h - lo) / 2;
                if pred(&v[mid]) {
                    lo = mid + 1;
                } else {
                    h = mid;
                }
            }
            return lo;
        }
        hi = probe;
        stride *= 2;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::{partition_point_back, Timeline};
    use std::collections::VecDeque;

    #[test]
    fn partition_point_back_matches_partition_point() {
        for n in 0..40u64 {
            let v: VecDeque<u64> = (0..n).map(|x| x * 2).collect();
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
}
