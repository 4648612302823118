//! zram's compress and decompress per page, for each kind of data the workloads write.
//!
//! Pages are written to and read back from a zram block device of our own with O_DIRECT, one
//! 4 KiB request each (zram_write_page / zram_read_page). An all-zero page takes zram's
//! same-filled path, which neither compresses nor allocates: the same request with zero data is
//! the baseline, so that (data − zero) per page is the compressor and its zsmalloc store on the
//! write side, the lookup and decompressor on the read side. Both baselines also include a
//! pass over the page (the same-filled scan on write, the fill on read), so the differences
//! understate the codec by that much (~a page's memset).

use super::mem::{batched_median, pin, Data, Region, PAGE};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Requests per timed batch (the median over batches is the sample).
const BATCH: usize = 64;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct BlockRw {
    /// ns per page written, per data kind, one entry per sample.
    pub write: BTreeMap<String, Vec<f64>>,
    /// ns per page read back.
    pub read: BTreeMap<String, Vec<f64>>,
    /// /sys/block/zramN/mm_stat after the writes (orig, compressed, used, limit, max used,
    /// same-filled pages, compacted, huge pages, ...).
    pub mm_stat: String,
}

/// Bytes of device `samples` rounds of `pages` per data kind need.
pub fn device_bytes(pages: usize, samples: usize) -> u64 {
    (pages * samples * Data::ALL.len() * PAGE) as u64
}

/// Write then read `pages` pages of each data kind, `samples` times, each round to fresh
/// sectors (an overwrite would add zram's free of the old slot).
pub fn block_rw(dev: &Path, pages: usize, samples: usize) -> Result<BlockRw> {
    pin(0)?;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .with_context(|| format!("opening {} with O_DIRECT", dev.display()))?;
    let fd = f.as_raw_fd();
    let src = Region::anon(pages)?;
    let dst = Region::anon(pages)?;
    let mut out = BlockRw::default();
    let mut sector_page = 0usize;
    for s in 0..samples {
        for d in Data::ALL {
            for i in 0..pages {
                src.fill(i, &d.page((s * pages + i) as u64));
                dst.write(i, 0xff);
            }
            let base = sector_page;
            sector_page += pages;
            let mut err = None;
            let w = batched_median(pages, BATCH, |i| {
                let off = ((base + i) * PAGE) as i64;
                // SAFETY: one page of our mapping, page-aligned as O_DIRECT needs.
                if unsafe { libc::pwrite(fd, src.page(i).cast(), PAGE, off) } != PAGE as isize {
                    err.get_or_insert(std::io::Error::last_os_error());
                }
            });
            if let Some(e) = err.take() {
                return Err(e).context("zram write");
            }
            let r = batched_median(pages, BATCH, |i| {
                let off = ((base + i) * PAGE) as i64;
                // SAFETY: as above.
                if unsafe { libc::pread(fd, dst.page(i).cast(), PAGE, off) } != PAGE as isize {
                    err.get_or_insert(std::io::Error::last_os_error());
                }
            });
            if let Some(e) = err {
                return Err(e).context("zram read");
            }
            for i in [0, pages - 1] {
                // SAFETY: one page of each mapping.
                let (a, b) = unsafe {
                    (
                        std::slice::from_raw_parts(src.page(i), PAGE),
                        std::slice::from_raw_parts(dst.page(i), PAGE),
                    )
                };
                if a != b {
                    bail!(
                        "zram read back different {} data than was written",
                        d.name()
                    );
                }
            }
            out.write.entry(d.name().into()).or_default().push(w);
            out.read.entry(d.name().into()).or_default().push(r);
        }
    }
    let name = dev.file_name().and_then(|n| n.to_str()).unwrap_or("zram0");
    out.mm_stat = std::fs::read_to_string(format!("/sys/block/{name}/mm_stat"))
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    Ok(out)
}
