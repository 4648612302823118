//! A fixed-size CPU bitmap (include/linux/cpumask.h), deterministic to iterate.

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuMask {
    words: Vec<u64>,
}

impl CpuMask {
    pub fn new(nr_cpus: usize) -> CpuMask {
        CpuMask {
            words: vec![0; nr_cpus.div_ceil(64)],
        }
    }
    pub fn set(&mut self, cpu: usize) {
        self.words[cpu / 64] |= 1 << (cpu % 64);
    }
    pub fn clear(&mut self, cpu: usize) {
        self.words[cpu / 64] &= !(1 << (cpu % 64));
    }
    pub fn test(&self, cpu: usize) -> bool {
        self.words[cpu / 64] & (1 << (cpu % 64)) != 0
    }
    pub fn or(&mut self, other: &CpuMask) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= *b;
        }
    }
    pub fn clear_all(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }
    pub fn weight(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// cpumask_any_but: is some CPU other than `cpu` set?
    pub fn any_but(&self, cpu: usize) -> bool {
        self.words.iter().enumerate().any(|(i, w)| {
            let w = if i == cpu / 64 {
                w & !(1 << (cpu % 64))
            } else {
                *w
            };
            w != 0
        })
    }
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
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
    }
}
