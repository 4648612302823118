//! /proc/self/pagemap and /proc/kpageflags: which pages of a mapping are in swap, and how many
//! of its resident pages belong to large folios (root only: PFNs are hidden otherwise).

use anyhow::{Context, Result};
use std::os::unix::fs::FileExt;

const PM_PRESENT: u64 = 1 << 63;
const PM_SWAP: u64 = 1 << 62;
const PM_PFN: u64 = (1 << 55) - 1;
const KPF_COMPOUND_HEAD: u64 = 1 << 15;
const KPF_COMPOUND_TAIL: u64 = 1 << 16;

/// The pagemap entries of `pages` pages from `addr`.
pub fn entries(addr: usize, pages: usize) -> Result<Vec<u64>> {
    let f = std::fs::File::open("/proc/self/pagemap").context("opening /proc/self/pagemap")?;
    let mut buf = vec![0u8; pages * 8];
    f.read_exact_at(&mut buf, (addr / 4096 * 8) as u64)
        .context("reading /proc/self/pagemap")?;
    Ok(buf
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

/// Indices of the entries that are in swap.
pub fn swapped(entries: &[u64]) -> Vec<usize> {
    (0..entries.len())
        .filter(|i| entries[*i] & PM_SWAP != 0 && entries[*i] & PM_PRESENT == 0)
        .collect()
}

/// Resident pages, pages in large folios, and large folios (their heads) among `entries`.
#[derive(Debug, Default, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FolioCount {
    pub resident: u64,
    pub in_large: u64,
    pub large_heads: u64,
}

pub fn folio_count(entries: &[u64]) -> Result<FolioCount> {
    let f = std::fs::File::open("/proc/kpageflags").context("opening /proc/kpageflags")?;
    let mut c = FolioCount::default();
    for e in entries {
        let pfn = e & PM_PFN;
        if e & PM_PRESENT == 0 || pfn == 0 {
            continue;
        }
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, pfn * 8)
            .context("reading /proc/kpageflags")?;
        let flags = u64::from_le_bytes(b);
        c.resident += 1;
        if flags & (KPF_COMPOUND_HEAD | KPF_COMPOUND_TAIL) != 0 {
            c.in_large += 1;
        }
        if flags & KPF_COMPOUND_HEAD != 0 {
            c.large_heads += 1;
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_swapped_entries() {
        let e = [PM_PRESENT | 5, PM_SWAP | 7, 0, PM_SWAP | 9];
        assert_eq!(swapped(&e), vec![1, 3]);
    }

    #[test]
    fn reads_our_own_pagemap() {
        let r = super::super::mem::Region::anon(4).unwrap();
        r.write(0, 1);
        let e = entries(r.page(0) as usize, 4).unwrap();
        assert_eq!(e.len(), 4);
        assert!(e[0] & PM_PRESENT != 0);
        assert!(e[3] & PM_PRESENT == 0);
    }
}
