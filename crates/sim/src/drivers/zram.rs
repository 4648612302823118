//! drivers/block/zram/zram_drv.c: what one swapped page costs to store and to load, by what the
//! page holds.
//!
//! zram_write_page first scans the page (page_same_filled): a page of one repeated word is
//! recorded by that word, with no compression and no zsmalloc allocation. Any other page goes
//! through zcomp_compress, whose time depends on the data (lzo-rle runs through zero runs far
//! faster than through a pattern of counters), and a page that does not compress is stored
//! whole. zram_read_page fills a same-filled page from its word, copies a page stored whole, and
//! decompresses the rest. The fixed part (the scan, the bio, the slot) is common to every page and
//! not charged here.

use crate::cost::CostTable;
use reclaimlab_core::Workload;
use serde::Serialize;

/// What a workload's anonymous pages hold when reclaim swaps them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PageData {
    /// One repeated word (all zero): zram's same-filled path.
    Zero,
    /// A zero page with a byte or a few changed: compressible almost to nothing, but compressed.
    Sparse,
    /// Counters and bit patterns, as stress-ng's vm methods write.
    Pattern,
    /// Incompressible bytes: a compression attempt, then stored whole.
    Random,
}

impl PageData {
    /// What each workload leaves in its anonymous pages (the file workloads do not swap).
    pub fn of(w: &Workload) -> PageData {
        match w {
            // The host worker (and so the model's workload) increments one byte of a page that
            // the first write fault zeroed: crates/host/src/workers Mapping::touch.
            Workload::AnonSweep(_) => PageData::Sparse,
            // stress-ng's vm methods fill their buffers with counters, address patterns and
            // bit patterns; one figure stands for the method cycle.
            _ => PageData::Pattern,
        }
    }
}

/// zram_write_page's time for one page of `data`, beyond the path every page takes.
pub fn zram_write_ns(cost: &CostTable, data: PageData) -> u64 {
    match data {
        PageData::Zero => 0,
        PageData::Sparse => cost.zram_compress_sparse,
        PageData::Pattern => cost.zram_compress,
        PageData::Random => cost.zram_compress_random,
    }
}

/// zram_read_page's time for one page of `data`, beyond the path every page takes.
pub fn zram_read_ns(cost: &CostTable, data: PageData) -> u64 {
    match data {
        PageData::Zero => 0,
        PageData::Sparse => cost.zram_decompress_sparse,
        PageData::Pattern => cost.zram_decompress,
        PageData::Random => cost.zram_decompress_random,
    }
}

impl crate::kernel::Kernel {
    /// zram_write_page's and zram_read_page's extra time for a page of `mm`: its data as its
    /// worker's current method leaves it (for a read, not as it was when written: an
    /// approximation for the pages a method finds swapped out from the method before).
    pub(crate) fn zram_page_ns(&self, mm: crate::kernel::MmId) -> (u64, u64) {
        match self.swap.data_by_phase.get(self.mms[mm].data_phase) {
            Some(&ns) => ns,
            None => (
                zram_write_ns(&self.cost, self.swap.data),
                zram_read_ns(&self.cost, self.swap.data),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_filled_pages_cost_nothing_beyond_the_common_path() {
        let t = CostTable::x86();
        assert_eq!(zram_write_ns(&t, PageData::Zero), 0);
        assert_eq!(zram_read_ns(&t, PageData::Zero), 0);
        assert!(zram_write_ns(&t, PageData::Sparse) < zram_write_ns(&t, PageData::Pattern));
        assert_eq!(zram_write_ns(&t, PageData::Pattern), t.zram_compress);
        assert_eq!(zram_read_ns(&t, PageData::Random), t.zram_decompress_random);
    }
}
