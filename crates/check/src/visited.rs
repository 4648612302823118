//! The search's visited set: each state as a compact exact key.
//!
//! Most of a packed [`State`] is zero in any one scope (a 3-CPU, 2-page scope uses 2 bits of a
//! page mask's 8 and no bit of the fourth CPU's TLB), and a visited set of ~1.3 M states is
//! bound by cache misses. So a key keeps, of each packed byte, only the low bits its field can
//! use in this scope ([`scope_maxima`]), laid end to end in `N` words (two for the default
//! scope: 16 bytes a state, where the set used to hold the whole state, its hash and an index).
//! Exact, not a fingerprint: two states share a key only if they are equal. A byte with a bit
//! outside its range would break that, so [`KeyLayout::key`] asserts it never has one.

use crate::model::{Model, Pc, Phase, State, MAX_CPUS, MAX_MMS, PACKED};

/// A state's key: its scope bits in `N` words. Bit 0 of word 0 is always set, so an all-zero
/// slot of [`KeySet`] is empty.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key<const N: usize>([u64; N]);

/// The set of keys seen: open addressing with linear probing, keys stored in the slots. A
/// lookup usually reads one cache line (four two-word keys), where a hash set with a control
/// byte array and a separate index or entry array reads two or three, each a cache miss once
/// the set outgrows the caches.
pub struct KeySet<const N: usize> {
    slots: Vec<[u64; N]>,
    len: usize,
    /// 64 − log2(slots): a key's home slot is the top bits of its hash.
    shift: u32,
}

/// Multiplier of the hash (FxHash's): odd, with well-spread bits.
const K: u64 = 0xf135_7aea_2e62_a9c5;

impl<const N: usize> Default for KeySet<N> {
    fn default() -> Self {
        KeySet::with_slots(1 << 16)
    }
}

impl<const N: usize> KeySet<N> {
    fn with_slots(n: usize) -> Self {
        KeySet {
            slots: vec![[0; N]; n],
            len: 0,
            shift: 64 - n.trailing_zeros(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn home(&self, k: &[u64; N]) -> usize {
        let mut h = 0u64;
        for &w in k {
            h = (h.rotate_left(26) ^ w).wrapping_mul(K);
        }
        (h >> self.shift) as usize
    }

    /// Start loading `k`'s home slot into the cache (a hint: no effect on the set).
    #[inline]
    pub fn prefetch(&self, k: &Key<N>) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let p = self.slots[self.home(&k.0)].as_ptr();
            // SAFETY: a prefetch only hints the cache; `p` points into `slots` anyway, and SSE
            // (which has the instruction) is part of every x86_64 CPU.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p as *const i8) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = k;
    }

    /// Add `k`; false if it was there already.
    #[inline]
    pub fn insert(&mut self, k: Key<N>) -> bool {
        // At most three quarters full: probes stay short.
        if 4 * (self.len + 1) > 3 * self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(&k.0);
        loop {
            let s = &mut self.slots[i];
            if s[0] == 0 {
                *s = k.0;
                self.len += 1;
                return true;
            }
            if *s == k.0 {
                return false;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old = std::mem::replace(self, KeySet::with_slots(2 * self.slots.len()));
        for k in old.slots.into_iter().filter(|s| s[0] != 0) {
            self.insert(Key(k));
        }
    }
}

/// The low bits that hold every value `0..=max` (a low mask is its own such mask).
fn value_mask(max: u8) -> u8 {
    (((1u16 << (8 - max.leading_zeros())) - 1) & 0xff) as u8
}

/// The set of `n` pages, CPUs, mms or folios.
fn set_mask(n: u8) -> u8 {
    (((1u16 << n) - 1) & 0xff) as u8
}

/// Every field of a state at the largest value it may take in `model`'s scope: a set of pages,
/// folios (folios ≤ pages, so the page set), CPUs or mms as its full low mask, an index as its
/// largest index. Packed like any state, so its layout cannot drift from [`State::pack`]'s.
pub fn scope_maxima(model: &Model) -> State {
    let cpus = set_mask(model.cpus);
    let mms = set_mask(model.mms);
    let pages = set_mask(model.pages);
    let live_cpu = |c: usize| c < model.cpus as usize;
    let live_mm = |m: usize| m < model.mms as usize;
    let per_cpu = |v: u8| std::array::from_fn(|c| if live_cpu(c) { v } else { 0 });
    let per_mm = |v: u8| std::array::from_fn(|m| if live_mm(m) { v } else { 0 });
    let per_cpu_mm: [[u8; MAX_MMS]; MAX_CPUS] = std::array::from_fn(|c| {
        if live_cpu(c) {
            per_mm(pages)
        } else {
            [0; MAX_MMS]
        }
    });
    State {
        cpu_mm: per_cpu(model.mms - 1),
        lazy: cpus,
        stale: per_cpu(mms),
        tlb: per_cpu_mm,
        doomed: per_cpu_mm,
        cpumask: per_mm(cpus),
        pte_present: per_mm(pages),
        pte_dirty: per_mm(pages),
        pte_ro: per_mm(pages),
        unsaved: pages,
        freed: pages,
        f_locked: pages,
        f_dirty: pages,
        f_swapcache: pages,
        f_removed: pages,
        f_writeback: pages,
        f_reclaim: pages,
        wb_newer: pages,
        free_batch: pages,
        dirty_batch: pages,
        unlock_at_flush: pages,
        ubc_cpus: cpus,
        ubc_flush_required: true,
        ubc_writable: true,
        wp: per_mm(pages),
        batched_pending: mms,
        pc: Pc {
            phase: Phase::Done,
            // The main loop's end (`resume` after the last folio) is one past the last folio.
            folio: model.nfolios(),
            mm: model.mms - 1,
            page: model.pages - 1,
            pass: model.passes - 1,
            batch: true,
            resume: model.nfolios(),
        },
    }
}

/// Where each packed byte's scope bits go in a key.
pub struct KeyLayout {
    /// (packed byte, shift in its word), for the bytes with any scope bit, word by word.
    fields: Vec<(u8, u8)>,
    /// Per word, the end of its run of `fields` (the last words of a wider key are empty).
    ends: [usize; 8],
    /// Per packed byte, the bits outside its scope (for the exactness check).
    outside: [u8; PACKED],
    words: usize,
}

impl KeyLayout {
    pub fn new(model: &Model) -> KeyLayout {
        let masks = scope_maxima(model).pack().map(value_mask);
        let mut fields = Vec::new();
        let mut ends = [0; 8];
        // Bit 0 of word 0 marks a slot in use.
        let (mut word, mut shift) = (0usize, 1u8);
        for (pos, &m) in masks.iter().enumerate() {
            if m == 0 {
                continue;
            }
            let width = m.count_ones() as u8;
            if shift + width > 64 {
                // A field never straddles two words: one shift per field.
                ends[word] = fields.len();
                word += 1;
                shift = 0;
            }
            fields.push((pos as u8, shift));
            shift += width;
        }
        for e in &mut ends[word..] {
            *e = fields.len();
        }
        KeyLayout {
            fields,
            ends,
            outside: masks.map(|m| !m),
            words: word + 1,
        }
    }

    /// Words a key needs in this scope.
    pub fn words(&self) -> usize {
        self.words
    }

    #[inline]
    pub fn key<const N: usize>(&self, s: &State) -> Key<N> {
        let b = s.pack();
        let stray = b.iter().zip(&self.outside).fold(0, |a, (v, o)| a | (v & o));
        assert!(
            stray == 0,
            "a state has a bit outside its scope's range ({:?}): the visited set would merge distinct states",
            s
        );
        let mut k = [0u64; N];
        let mut start = 0;
        for (w, kw) in k.iter_mut().enumerate() {
            // One accumulator per word: the ORs chain in a register, not through memory.
            let mut acc = 0u64;
            for &(pos, shift) in &self.fields[start..self.ends[w]] {
                acc |= (b[pos as usize % PACKED] as u64) << shift;
            }
            *kw = acc;
            start = self.ends[w];
        }
        k[0] |= 1;
        Key(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CheckConfig;

    fn layout(cpus: u8, pages: u8) -> KeyLayout {
        let mut c = CheckConfig::new("6.18").unwrap();
        c.cpus = cpus;
        c.pages = pages;
        KeyLayout::new(&c.model().unwrap())
    }

    #[test]
    fn key_words_by_scope() {
        assert_eq!(layout(2, 1).words(), 1);
        assert_eq!(layout(3, 2).words(), 2);
        assert_eq!(layout(2, 5).words(), 3);
        assert_eq!(layout(4, 8).words(), 6);
    }

    /// States that differ in one field get different keys; equal states equal keys.
    #[test]
    fn keys_tell_states_apart() {
        let c = CheckConfig::new("6.18").unwrap();
        let m = c.model().unwrap();
        let l = KeyLayout::new(&m);
        let a = m.initial();
        let mut b = a.clone();
        assert!(l.key::<2>(&a) == l.key::<2>(&b));
        b.tlb[2][1] = 2;
        assert!(l.key::<2>(&a) != l.key::<2>(&b));
        let mut b = a.clone();
        b.pc.phase = Phase::Done;
        assert!(l.key::<2>(&a) != l.key::<2>(&b));
    }

    #[test]
    #[should_panic(expected = "outside its scope")]
    fn a_bit_outside_the_scope_is_refused() {
        let c = CheckConfig::new("6.18").unwrap();
        let m = c.model().unwrap();
        let mut s = m.initial();
        // Page 2 does not exist in a 2-page scope.
        s.pte_dirty[0] = 1 << 2;
        KeyLayout::new(&m).key::<2>(&s);
    }
}
