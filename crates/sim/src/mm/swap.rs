//! The swap device: a zram-like compressed RAM disk (drivers/block/zram, mm/page_io.c).
//! Writes compress synchronously on the reclaiming CPU, reads decompress on the faulting CPU;
//! there is no seek and no queue. Slots are counted against the device size.

pub struct SwapDevice {
    pub total: u64,
    pub used: u64,
    /// SWP_SYNCHRONOUS_IO (zram sets it): do_swap_page reads an entry with swap count 1
    /// straight into a new folio, bypassing (and freeing) the swap cache slot.
    pub synchronous_io: bool,
    /// What the swapped pages hold: zram's time per page depends on it (drivers/zram.rs).
    pub data: crate::drivers::zram::PageData,
}

impl SwapDevice {
    pub fn new(total: u64) -> SwapDevice {
        SwapDevice {
            total,
            used: 0,
            synchronous_io: true,
            data: crate::drivers::zram::PageData::Pattern,
        }
    }
    /// folio_alloc_swap: false when the device is full.
    pub fn alloc_slot(&mut self) -> bool {
        if self.used < self.total {
            self.used += 1;
            true
        } else {
            false
        }
    }
    /// swap_free / folio_free_swap.
    pub fn free_slot(&mut self) {
        self.used -= 1;
    }
    /// vm_swap_full (what mem_cgroup_swap_full uses on cgroup v1): over half used.
    pub fn vm_swap_full(&self) -> bool {
        self.used * 2 > self.total
    }
}
