//! A fixed-size CPU bitmap (include/linux/cpumask.h), deterministic to iterate.

/// Words kept inline (up to 256 CPUs): masks are cloned and built on the flush path, and an
/// inline mask costs no allocation.
const INLINE: usize = 4;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuMask {
    /// Words in use (nr_cpus / 64, rounded up).
    n: usize,
    inline: [u64; INLINE],
    /// The words when more than INLINE are needed (else empty, unallocated).
    heap: Vec<u64>,
}

impl CpuMask {
    pub fn new(nr_cpus: usize) -> CpuMask {
        let n = nr_cpus.div_ceil(64);
        CpuMask {
            n,
            inline: [0; INLINE],
            heap: if n > INLINE { vec![0; n] } else { Vec::new() },
        }
    }

    #[inline]
    fn words(&self) -> &[u64] {
        if self.n > INLINE {
            &self.heap
        } else {
            &self.inline[..self.n]
        }
    }

    #[inline]
    fn words_mut(&mut self) -> &mut [u64] {
        if self.n > INLINE {
            &mut self.heap
        } else {
            &mut self.inline[..self.n]
        }
    }

    pub fn set(&mut self, cpu: usize) {
        self.words_mut()[cpu / 64] |= 1 << (cpu % 64);
    }
    pub fn clear(&mut self, cpu: usize) {
        self.words_mut()[cpu / 64] &= !(1 << (cpu % 64));
    }
    pub fn test(&self, cpu: usize) -> bool {
        self.words()[cpu / 64] & (1 << (cpu % 64)) != 0
    }
    pub fn or(&mut self, other: &CpuMask) {
        for (a, b) in self.words_mut().iter_mut().zip(other.words()) {
            *a |= *b;
        }
    }
    pub fn clear_all(&mut self) {
        self.words_mut().iter_mut().for_each(|w| *w = 0);
    }
    pub fn is_empty(&self) -> bool {
        self.words().iter().all(|w| *w == 0)
    }
    pub fn weight(&self) -> usize {
        self.words().iter().map(|w| w.count_ones() as usize).sum()
    }
    /// cpumask_any_but: is some CPU other than `cpu` set?
    pub fn any_but(&self, cpu: usize) -> bool {
        self.words().iter().enumerate().any(|(i, w)| {
            let w = if i == cpu / 64 {
                w & !(1 << (cpu % 64))
            } else {
                *w
            };
            w != 0
        })
    }
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words().iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(i * 64 + b)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn set_iter_any_but() {
        let mut m = CpuMask::new(130);
        m.set(3);
        m.set(129);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![3, 129]);
        assert!(m.any_but(3));
        m.clear(129);
        assert!(!m.any_but(3));
        assert_eq!(m.weight(), 1);
        let mut big = CpuMask::new(300);
        big.set(299);
        big.set(0);
        let mut c = CpuMask::new(300);
        c.or(&big);
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![0, 299]);
        assert!(c.any_but(0) && c.any_but(299));
        c.clear_all();
        assert!(c.is_empty());
    }
}
