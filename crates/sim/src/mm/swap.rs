//! The swap device (mm/swapfile.c's swap_info_struct, what the model needs). Slots are counted
//! against the device size. What backs them is `swap.device`:
//!
//! - `zram` (the default): drivers/block/zram with SWP_SYNCHRONOUS_IO. Writes compress
//!   synchronously on the reclaiming CPU, reads decompress on the faulting CPU; no queue, no
//!   sleep (drivers/zram.rs).
//! - `block`: a disk (a swap partition or swap file on NVMe, SATA or virtio-blk), which does
//!   not set SWP_SYNCHRONOUS_IO. Swap-out starts writeback and returns; the folio is freed by a
//!   later scan once the write completed (mm/page_io.rs). Swap-in goes through the swap cache
//!   with readahead and the faulting task sleeps until its read completes
//!   (mm/swap_state.rs); the device's completion interrupt wakes it from the CPU
//!   `swap.irq_cpu` names. Its slots have places (mm/swapfile.rs): on a rotational device
//!   (`swap.rotational`) readahead reads a slot's neighbours on the device, on a
//!   non-rotational one the faulting address's neighbours in the VMA.

use crate::kernel::{CpuId, MmId};
use crate::mm::folio::Pfn;
use crate::mm::swapfile::SwapMap;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Where the block device's completion interrupt runs (`swap.irq_cpu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqCpu {
    /// Per-CPU hardware queues (NVMe, blk-mq with one queue per CPU): the completion arrives
    /// on the CPU that submitted the request.
    Submitter,
    /// A single-queue device whose interrupt is routed to one CPU (virtio-blk with one queue:
    /// every completion on that CPU in /proc/interrupts).
    Cpu(CpuId),
}

/// `[swap]` settings beyond `swap.size` (SimConfig::swap).
#[derive(Clone, Debug, Default)]
pub struct SwapConfig {
    /// `swap.device = "block"` (None: zram).
    pub block: Option<BlockConfig>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockConfig {
    pub irq: IrqCpu,
    /// vm.page-cluster (`swap.page_cluster`, default 3): readahead reads up to 2^page_cluster
    /// pages (swap_ra_info caps the order at SWAP_RA_ORDER_CEILING).
    pub page_cluster: u32,
    /// `swap.rotational` (default false): the device's queue/rotational. Without
    /// SWP_SOLIDSTATE the allocator has one cursor for the device (mm/swapfile.rs) and, since
    /// nr_rotate_swap is then non-zero, swapin_readahead reads slot clusters
    /// (swap_cluster_readahead) instead of VMA windows (swap_use_vma_readahead).
    pub rotational: bool,
    /// `swap.scheduler` (default "none"): the disk's I/O scheduler. With mq-deadline a write
    /// that waits on a stopped queue merges into a waiting request it extends
    /// (page_io.rs `swap_submit_cpu`).
    pub scheduler: Elevator,
    /// `swap.request_pages` (default 0): the largest request the disk takes, in pages
    /// (queue/max_segments for separate 4 KiB folios, and max_sectors_kb / 4). With it, the
    /// writes of one shrink_lruvec merge across write bios into requests of adjacent slots up
    /// to that size, as its plug merges them (blk_attempt_plug_merge against the plug's last
    /// request); 0: each write bio's requests stand alone.
    pub request_pages: u32,
    /// `swap.ring_descriptors` (default 0: no limit): the disk's virtqueue size. A request
    /// that finds too few free waits, with every later one, for the next completion's
    /// restart of the queue on kblockd (drivers/virtio_blk.rs).
    pub ring_descriptors: u32,
    /// `swap.indirect_desc` (default false): VIRTIO_RING_F_INDIRECT_DESC, a request takes
    /// one ring descriptor whatever its segments.
    pub indirect_desc: bool,
}

/// The disk's I/O scheduler, as far as the model tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elevator {
    /// No scheduler: a submission dispatches to the driver from the submitting task.
    None,
    /// mq-deadline: waiting writes merge (elv_attempt_insert_merge).
    MqDeadline,
}

/// SWAP_RA_ORDER_CEILING on 64-bit.
pub const SWAP_RA_ORDER_CEILING: u32 = 5;

impl SwapConfig {
    /// Read `swap.device`, `swap.irq_cpu`, `swap.page_cluster` and `swap.rotational`.
    pub fn from_scenario(scn: &reclaimlab_core::Scenario) -> anyhow::Result<SwapConfig> {
        let s = &scn.source;
        let block = match s.str_or("swap.device", "zram")?.as_str() {
            "zram" => false,
            "block" => true,
            o => {
                return Err(s
                    .err(
                        "swap.device",
                        format!("{}: use zram or block", reclaimlab_core::units::clip(o)),
                    )
                    .into())
            }
        };
        // Every key of the simulated swap device but the device's kind.
        for &key in &reclaimlab_core::scenario::SIM_SWAP_KEYS[1..] {
            if !block && s.has(key) {
                return Err(s
                    .err(
                        key,
                        "applies to a block device only: set swap.device = \"block\"",
                    )
                    .into());
            }
        }
        if !block {
            return Ok(SwapConfig { block: None });
        }
        let irq = match s.str_or("swap.irq_cpu", "submitter")?.as_str() {
            "submitter" => IrqCpu::Submitter,
            o => match o.parse::<usize>() {
                Ok(c) if c < scn.machine.cpus => IrqCpu::Cpu(c),
                _ => {
                    return Err(s
                        .err(
                            "swap.irq_cpu",
                            format!(
                                "{}: use submitter (per-CPU queues) or a CPU number 0-{}",
                                reclaimlab_core::units::clip(o),
                                scn.machine.cpus - 1
                            ),
                        )
                        .into())
                }
            },
        };
        let page_cluster = s.check_range(
            "swap.page_cluster",
            s.u64_or("swap.page_cluster", 3)?,
            0,
            31,
            |v| v.to_string(),
            "vm.page-cluster is a power-of-two exponent (the kernel caps readahead at 2^5 pages)",
        )? as u32;
        let rotational = s.bool_or("swap.rotational", false)?;
        let scheduler = match s.str_or("swap.scheduler", "none")?.as_str() {
            "none" => Elevator::None,
            "mq-deadline" => Elevator::MqDeadline,
            o => {
                return Err(s
                    .err(
                        "swap.scheduler",
                        format!(
                            "{}: the model knows none and mq-deadline",
                            reclaimlab_core::units::clip(o)
                        ),
                    )
                    .into())
            }
        };
        let u32_or_0 =
            |key| -> anyhow::Result<u32> { Ok(s.u64_or(key, 0)?.min(u64::from(u32::MAX)) as u32) };
        let request_pages = u32_or_0("swap.request_pages")?;
        let ring_descriptors = u32_or_0("swap.ring_descriptors")?;
        let indirect_desc = s.bool_or("swap.indirect_desc", false)?;
        Ok(SwapConfig {
            block: Some(BlockConfig {
                irq,
                page_cluster,
                rotational,
                scheduler,
                request_pages,
                ring_descriptors,
                indirect_desc,
            }),
        })
    }
}

/// A read in flight: when the device completes it and the CPU its interrupt runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read {
    pub done: u64,
    pub irq: CpuId,
}

/// vma->swap_readahead_info: the last swap fault (or readahead hit) address, the window it
/// used and the readahead hits since.
#[derive(Clone, Copy, Debug, Default)]
pub struct VmaRa {
    pub addr: u64,
    pub win: u64,
    pub hits: u64,
}

/// The block device's swap state and counters.
#[derive(Debug, Default)]
pub struct BlockSwap {
    pub cfg: Option<BlockConfig>,
    /// Reads in flight by folio (the folio stays locked until its read completes), and the
    /// same in completion order (to retire them).
    pub reads: BTreeMap<Pfn, Read>,
    pub read_order: VecDeque<(u64, Pfn)>,
    /// The write bio being built by one shrink_folio_list (swap_io_ctx): submitted when it
    /// holds SWAP_CLUSTER_MAX folios or when the list is done (swap_write_submit).
    pub write_batch: Vec<Pfn>,
    /// PG_readahead of swap-cache folios readahead brought in, by slot (mm, page).
    pub readahead: BTreeSet<(MmId, u64)>,
    /// vma->swap_readahead_info per mm (one VMA each).
    pub vma_ra: Vec<VmaRa>,
    /// Where each swapped page's slot is (mm/swapfile.rs).
    pub map: Option<SwapMap>,
    /// swap_cluster_readahead's global state (swapin_nr_pages: prev_offset,
    /// last_readahead_pages, swapin_readahead_hits).
    pub cluster_ra: ClusterRa,
    /// Per CPU: the last request in the reclaiming task's plug (its last slot, its pages),
    /// which the next write bio of an adjacent slot extends (`swap.request_pages`).
    pub plug_last: Vec<Option<(u32, u32)>>,
    /// The writes mq-deadline holds (`swap.scheduler`, `swap.request_pages`).
    pub elevator: crate::mm::swapfile::HeldWrites,
    /// The disk's virtqueue (`swap.ring_descriptors`).
    pub virtqueue: crate::drivers::virtio_blk::VirtQueue,
}

/// swapin_nr_pages's statics for swap_cluster_readahead.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterRa {
    pub prev_offset: u64,
    pub last_pages: u64,
    pub hits: u64,
}

pub struct SwapDevice {
    pub total: u64,
    pub used: u64,
    /// SWP_SYNCHRONOUS_IO (zram sets it): do_swap_page reads an entry with swap count 1
    /// straight into a new folio, bypassing (and freeing) the swap cache slot.
    pub synchronous_io: bool,
    /// What the swapped pages hold: zram's time per page depends on it (drivers/zram.rs).
    pub data: crate::drivers::zram::PageData,
    /// stress-vm with `sim.page_data = "auto"`: zram's extra (write, read) ns per page while
    /// the page's worker is in each phase of its method cycle (workload/stress_vm_data.rs);
    /// empty: every page is `data`.
    pub data_by_phase: Vec<(u64, u64)>,
    /// `swap.device = "block"`: the disk's state (mm/page_io.rs, mm/swap_state.rs).
    pub block: Option<BlockSwap>,
}

impl SwapDevice {
    pub fn new(total: u64) -> SwapDevice {
        SwapDevice {
            total,
            used: 0,
            synchronous_io: true,
            data: crate::drivers::zram::PageData::Pattern,
            data_by_phase: Vec::new(),
            block: None,
        }
    }
    /// A block device (no SWP_SYNCHRONOUS_IO) as `cfg` describes, on `cpus` CPUs.
    pub fn set_block(&mut self, cfg: BlockConfig, cpus: usize) {
        self.synchronous_io = false;
        self.block = Some(BlockSwap {
            cfg: Some(cfg),
            map: Some(SwapMap::new(self.total, !cfg.rotational, cpus)),
            plug_last: vec![None; cpus],
            virtqueue: crate::drivers::virtio_blk::VirtQueue::new(cfg.ring_descriptors),
            ..Default::default()
        });
    }
    /// Whether swapin_readahead reads slot clusters (a rotational block device).
    pub fn cluster_readahead(&self) -> bool {
        self.block
            .as_ref()
            .and_then(|b| b.cfg)
            .is_some_and(|c| c.rotational)
    }
    /// folio_alloc_swap for page `vp` of `mm`, reclaimed on `cpu`: false when the device is
    /// full.
    pub fn alloc_slot(&mut self, cpu: CpuId, mm: MmId, vp: u64) -> bool {
        if self.used >= self.total {
            return false;
        }
        if let Some(map) = self.block.as_mut().and_then(|b| b.map.as_mut()) {
            if map.alloc(cpu, mm, vp).is_none() {
                return false;
            }
        }
        self.used += 1;
        true
    }
    /// swap_free / folio_free_swap of the slot page `vp` of `mm` holds.
    pub fn free_slot(&mut self, mm: MmId, vp: u64) {
        if let Some(map) = self.block.as_mut().and_then(|b| b.map.as_mut()) {
            map.free(mm, vp);
        }
        self.used -= 1;
    }
    /// exit_mmap left the swap-cache folio `pfn` of page `vp` of `mm` to reclaim (isolated):
    /// its slot is freed with it (`free_orphan_slot`).
    pub fn orphan_slot(&mut self, mm: MmId, vp: u64, pfn: Pfn) {
        if let Some(map) = self.block.as_mut().and_then(|b| b.map.as_mut()) {
            map.orphan(mm, vp, pfn);
        }
    }
    /// Reclaim frees the orphan `pfn` and the slot exit_mmap left with it.
    pub fn free_orphan_slot(&mut self, pfn: Pfn) {
        if let Some(map) = self.block.as_mut().and_then(|b| b.map.as_mut()) {
            map.free_orphan(pfn);
        }
        self.used -= 1;
    }
    /// vm_swap_full (what mem_cgroup_swap_full uses on cgroup v1): over half used.
    pub fn vm_swap_full(&self) -> bool {
        self.used * 2 > self.total
    }
    /// The read still in flight into `pfn` at `now`, if any.
    pub fn read_in_flight(&self, pfn: Pfn, now: u64) -> Option<Read> {
        let b = self.block.as_ref()?;
        if b.reads.is_empty() {
            return None;
        }
        b.reads.get(&pfn).copied().filter(|r| r.done > now)
    }
}
