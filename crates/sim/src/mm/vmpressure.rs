//! vmpressure (mm/vmpressure.c): the pages reclaim scanned and reclaimed, summed per memcg,
//! and a work item on the system workqueue each time a window of them has been scanned.
//!
//! shrink_node ends each pass over the node with vmpressure(tree = true) for the reclaim's
//! target, unless the reclaim is proactive (memory.reclaim): the memcg for limit reclaim, the
//! root memcg for global reclaim (memcg_to_vmpressure(NULL)). Under sr_lock the pass's pages
//! are added to vmpr->tree_scanned and tree_reclaimed; once tree_scanned reaches
//! vmpressure_win (SWAP_CLUSTER_MAX * 16 = 512 pages) the call does schedule_work(&vmpr->work),
//! which does nothing while the item is still pending. vmpressure_work_fn takes the two sums,
//! zeroes them and signals each level's listeners up the hierarchy: the window starts again
//! when the work runs, not when it is queued. do_try_to_free_pages also calls vmpressure_prio
//! before each priority's pass; at priority 3 (vmpressure_level_critical_prio) and below it
//! adds a whole window scanned with nothing reclaimed.
//!
//! The gfp test at vmpressure's top always passes here: memcg reclaim's mask carries
//! GFP_HIGHUSER_MOVABLE's zone bits and kswapd's is GFP_KERNEL. tree = false (the memcg's own
//! socket-pressure signal) queues no work and is not modelled.

use super::vmscan::SWAP_CLUSTER_MAX;
use crate::kernel::{CpuId, Kernel};
use crate::mm::vmstat::VmEventItem::*;
use crate::workqueue::Work;

/// vmpressure_win: pages scanned before the work is queued.
pub const VMPRESSURE_WIN: u64 = SWAP_CLUSTER_MAX * 16;
/// vmpressure_level_critical_prio: ilog2(100 / 10).
pub const VMPRESSURE_LEVEL_CRITICAL_PRIO: i32 = 3;

/// Whose struct vmpressure: the workload's memcg or the root memcg (global reclaim).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vmpr {
    Memcg,
    Root,
}

/// struct vmpressure's subtree sums (tree_scanned, tree_reclaimed).
#[derive(Clone, Debug, Default)]
pub struct VmprSums {
    pub tree_scanned: u64,
    pub tree_reclaimed: u64,
}

/// The two vmpressure structs the model's reclaim can reach.
#[derive(Clone, Debug, Default)]
pub struct Vmpressures {
    pub memcg: VmprSums,
    pub root: VmprSums,
}

impl Vmpressures {
    pub fn get(&self, v: Vmpr) -> &VmprSums {
        match v {
            Vmpr::Memcg => &self.memcg,
            Vmpr::Root => &self.root,
        }
    }

    fn get_mut(&mut self, v: Vmpr) -> &mut VmprSums {
        match v {
            Vmpr::Memcg => &mut self.memcg,
            Vmpr::Root => &mut self.root,
        }
    }
}

impl Kernel {
    /// vmpressure(gfp, memcg, tree = true, scanned, reclaimed) from reclaim on `cpu`.
    pub fn vmpressure(&mut self, cpu: CpuId, v: Vmpr, scanned: u64, reclaimed: u64) {
        if scanned == 0 {
            return;
        }
        let s = self.vmpressure.get_mut(v);
        s.tree_scanned += scanned;
        s.tree_reclaimed += reclaimed;
        if s.tree_scanned < VMPRESSURE_WIN {
            return;
        }
        self.schedule_work(cpu, Work::Vmpressure(v));
    }

    /// vmpressure_prio: a priority at or below the critical one counts as a window scanned
    /// with nothing reclaimed.
    pub fn vmpressure_prio(&mut self, cpu: CpuId, v: Vmpr, priority: i32) {
        if priority > VMPRESSURE_LEVEL_CRITICAL_PRIO {
            return;
        }
        self.vmpressure(cpu, v, VMPRESSURE_WIN, 0);
    }

    /// vmpressure_work_fn's effect: the sums are taken and zeroed (nothing to do if another
    /// run already took them). Its time is the work item's cost (workqueue.rs).
    pub(crate) fn vmpressure_work_fn(&mut self, v: Vmpr) {
        let s = self.vmpressure.get_mut(v);
        if s.tree_scanned == 0 {
            return;
        }
        *s = VmprSums::default();
        self.vmstat.count_vm_event(VMPRESSURE_EVENTS);
    }
}
