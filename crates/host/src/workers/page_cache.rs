//! The file workloads' page cache, seen from outside: which filesystem holds the data file,
//! which folio sizes the kernel gave its cached pages (/proc/self/pagemap → PFN,
//! /proc/kpageflags → compound head/tail), and dropping the file's pages so that every
//! repetition starts from an empty cache (fdatasync, then posix_fadvise(POSIX_FADV_DONTNEED)).

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// KPF_COMPOUND_HEAD and KPF_COMPOUND_TAIL (Documentation/admin-guide/mm/pagemap.rst).
const KPF_COMPOUND_HEAD: u64 = 1 << 15;
const KPF_COMPOUND_TAIL: u64 = 1 << 16;
/// pagemap: bit 63 present, bits 0-54 the PFN (zero without CAP_SYS_ADMIN).
const PM_PRESENT: u64 = 1 << 63;
const PM_PFN_MASK: u64 = (1 << 55) - 1;
const PAGE: usize = 4096;

/// The filesystem type of the mount holding `dir` (the longest mount point prefix in
/// /proc/self/mounts), e.g. "ext4".
pub fn filesystem_of(dir: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_dev, mnt, ty) = (f.next()?, f.next()?, f.next()?);
            dir.starts_with(mnt).then(|| (mnt.len(), ty.to_string()))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, ty)| ty)
}

/// Write back and drop every cached page of `path` (fdatasync + POSIX_FADV_DONTNEED).
pub fn drop_file_cache(path: &Path) -> Result<()> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {} to drop its cache", path.display()))?;
    f.sync_data()
        .with_context(|| format!("fdatasync {}", path.display()))?;
    // SAFETY: a valid fd; advice only.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(std::io::Error::from_raw_os_error(r))
            .with_context(|| format!("posix_fadvise DONTNEED {}", path.display()));
    }
    Ok(())
}

/// Folios by order from the kpageflags of consecutive cached pages: a compound head starts a
/// folio, tails extend it, any other page is an order-0 folio.
pub fn orders_from_flags(flags: &[Option<u64>]) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    let mut run: Option<u64> = None;
    let mut close = |run: &mut Option<u64>| {
        if let Some(n) = run.take() {
            *out.entry(63 - n.leading_zeros()).or_insert(0) += 1;
        }
    };
    for f in flags {
        match f {
            Some(f) if f & KPF_COMPOUND_TAIL != 0 && run.is_some() => {
                *run.as_mut().unwrap() += 1;
            }
            Some(f) => {
                close(&mut run);
                run = Some(1);
                if f & KPF_COMPOUND_HEAD == 0 {
                    close(&mut run);
                }
            }
            None => close(&mut run),
        }
    }
    close(&mut run);
    out
}

/// The folio orders of `path`'s cached pages: map the file read-only, fault in only the
/// pages mincore says are cached (mapping an existing folio, no I/O), read their PFNs and
/// kpageflags. Needs root (PFNs). Returns folios per order.
pub fn folio_orders(path: &Path) -> Result<BTreeMap<u32, u64>> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let len = f.metadata()?.len() as usize;
    if len == 0 {
        return Ok(BTreeMap::new());
    }
    // SAFETY: read-only shared mapping of a file we opened; unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error()).context("mmap for folio orders");
    }
    let pages = len.div_ceil(PAGE);
    let result = (|| {
        let mut vec = vec![0u8; pages];
        // SAFETY: p/len is our mapping; vec has one byte per page.
        if unsafe { libc::mincore(p, len, vec.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error()).context("mincore");
        }
        for (i, v) in vec.iter().enumerate() {
            if v & 1 != 0 {
                // SAFETY: inside the mapping; a read of a cached page maps it.
                unsafe { std::ptr::read_volatile((p as *const u8).add(i * PAGE)) };
            }
        }
        let mut pm = std::fs::File::open("/proc/self/pagemap")?;
        let mut raw = vec![0u8; pages * 8];
        std::io::Seek::seek(
            &mut pm,
            std::io::SeekFrom::Start((p as u64 / PAGE as u64) * 8),
        )?;
        pm.read_exact(&mut raw)?;
        let kpf = std::fs::File::open("/proc/kpageflags").context("/proc/kpageflags")?;
        let mut flags = Vec::with_capacity(pages);
        for (i, c) in raw.chunks_exact(8).enumerate() {
            let e = u64::from_le_bytes(c.try_into().unwrap());
            let pfn = e & PM_PFN_MASK;
            if vec[i] & 1 == 0 || e & PM_PRESENT == 0 || pfn == 0 {
                flags.push(None);
                continue;
            }
            let mut b = [0u8; 8];
            kpf.read_exact_at(&mut b, pfn * 8)?;
            flags.push(Some(u64::from_le_bytes(b)));
        }
        Ok(orders_from_flags(&flags))
    })();
    // SAFETY: our mapping.
    unsafe { libc::munmap(p, len) };
    result
}

/// The page-cache facts a file workload records in its result's `extra`.
pub fn record(path: &Path, dir: &str, extra: &mut BTreeMap<String, serde_json::Value>) {
    if let Some(fs) = filesystem_of(Path::new(dir)) {
        extra.insert("filesystem".into(), fs.into());
    }
    match folio_orders(path) {
        Ok(o) => {
            let large = o.keys().any(|&k| k > 0);
            let by: BTreeMap<String, u64> = o.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            extra.insert(
                "page_cache_folios_by_order".into(),
                serde_json::to_value(by).unwrap_or_default(),
            );
            extra.insert("page_cache_large_folios".into(), large.into());
        }
        Err(e) => {
            extra.insert(
                "page_cache_folios_by_order".into(),
                format!("not read: {e:#}").into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_and_tails_make_orders() {
        let h = Some(KPF_COMPOUND_HEAD);
        let t = Some(KPF_COMPOUND_TAIL);
        let small = Some(0);
        // order 2 (head + 3 tails), order 0, a hole, then a head with two of its tails present
        // (partly mapped: counted at the floor order, 1).
        let f = [h, t, t, t, small, None, h, t, t];
        let o = orders_from_flags(&f);
        assert_eq!(o.get(&2), Some(&1));
        assert_eq!(o.get(&0), Some(&1));
        assert_eq!(o.get(&1), Some(&1));
        assert_eq!(o.values().sum::<u64>(), 3);
    }

    #[test]
    fn filesystem_of_root_is_known() {
        assert!(filesystem_of(Path::new("/")).is_some());
    }
}
