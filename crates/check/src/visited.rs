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
        reclaimlab_sim::prefetch::prefetch(&self.slots[self.home(&k.0)]);
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

/// Where each packed 8-byte chunk's scope bits go in a key: the chunk's bits under its mask,
/// gathered (a parallel bit extract, `pext` where the CPU has it) and laid end to end after
/// bit 0.
pub struct KeyLayout {
    /// Per chunk: its mask, its bits' first position in the key (word × 64 + bit), and, for
    /// the portable gather, each byte's mask width.
    chunks: [(u64, u32, [u8; 8]); PACKED / 8],
    /// Per packed byte, the bits outside its scope (for the exactness check).
    outside: [u8; PACKED],
    words: usize,
    /// The CPU has BMI2's `pext`.
    bmi2: bool,
}

impl KeyLayout {
    pub fn new(model: &Model) -> KeyLayout {
        let masks = scope_maxima(model).pack().map(value_mask);
        // Bit 0 of word 0 marks a slot in use.
        let mut at = 1u32;
        let chunks = std::array::from_fn(|c| {
            let m: [u8; 8] = masks[8 * c..8 * c + 8].try_into().unwrap();
            let mask = u64::from_le_bytes(m);
            let first = at;
            at += mask.count_ones();
            (mask, first, m.map(|b| b.count_ones() as u8))
        });
        KeyLayout {
            chunks,
            outside: masks.map(|m| !m),
            words: at.div_ceil(64) as usize,
            bmi2: bmi2(),
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
        k[0] = 1;
        for (c, &(mask, first, widths)) in self.chunks.iter().enumerate() {
            if mask == 0 {
                continue;
            }
            let x = u64::from_le_bytes(b[8 * c..8 * c + 8].try_into().unwrap());
            let v = if self.bmi2 {
                pext(x, mask)
            } else {
                gather(x, widths)
            };
            let (w, off) = ((first / 64) as usize, first % 64);
            k[w] |= v << off;
            // The bits that did not fit in word `w` (none when it starts at bit 0).
            if off != 0 && w + 1 < N {
                k[w + 1] |= v >> (64 - off);
            }
        }
        Key(k)
    }
}

/// The low `widths[j]` bits of each byte `j` of `x`, end to end: `pext` for masks that are low
/// bits of each byte (`x` has no bit above them: the caller checked).
fn gather(x: u64, widths: [u8; 8]) -> u64 {
    let (mut v, mut at) = (0u64, 0u32);
    for (j, &w) in widths.iter().enumerate() {
        v |= ((x >> (8 * j)) & 0xff) << at;
        at += w as u32;
    }
    v
}

#[cfg(target_arch = "x86_64")]
fn bmi2() -> bool {
    std::arch::is_x86_feature_detected!("bmi2")
}

#[cfg(not(target_arch = "x86_64"))]
fn bmi2() -> bool {
    false
}

#[inline]
fn pext(x: u64, mask: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: only called when `bmi2()` found the instruction on this CPU.
        unsafe { std::arch::x86_64::_pext_u64(x, mask) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        unreachable!("pext without BMI2: {x} {mask}")
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

    /// The portable gather and `pext` give the same key (the search uses whichever the CPU has).
    #[test]
    fn gather_is_pext() {
        let c = CheckConfig::new("6.18").unwrap();
        let m = c.model().unwrap();
        let mut l = KeyLayout::new(&m);
        let mut s = m.initial();
        s.tlb[1] = [1, 2];
        s.pc.phase = Phase::FinalFree;
        s.f_dirty = 3;
        let fast = l.key::<2>(&s);
        l.bmi2 = false;
        assert!(fast == l.key::<2>(&s));
        assert!(fast != l.key::<2>(&m.initial()));
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
