//! Event counters (mm/vmstat.c, include/linux/vmstat.h): one array indexed by
//! [`VmEventItem`] (the list is mm/vm_event_item.rs), serialised by name; and the per-CPU
//! /proc/interrupts TLB and CAL counts.

pub use super::vm_event_item::VmEventItem;
use super::vm_event_item::NR_VM_EVENT_ITEMS;
use std::collections::BTreeMap;

/// Where the result document carries an item (result.rs serialises each place where, and
/// under the condition, it reports that part of the model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Place {
    /// `runs[].counters`: the host's /proc/vmstat names.
    Vmstat,
    /// `runs[].extra`, always.
    Extra,
    /// `runs[].extra` with sim.interleave=folio.
    InterleaveFolio,
    /// `runs[].extra` on arm64 only.
    Arm64,
    /// `runs[].extra` with INVLPGB in use.
    Invlpgb,
    /// `runs[].extra` with the LUF patch.
    Luf,
    /// `runs[].extra` with the multi-gen LRU.
    Mglru,
    /// `runs[].extra.mglru_breakdown` (an object) with the multi-gen LRU.
    MglruBreakdown,
    /// `runs[].extra` with global reclaim (kswapd) on.
    Kswapd,
    /// `runs[].counters` with the block swap device.
    VmstatBlockSwap,
    /// `runs[].extra` when nonzero.
    ExtraNonzero,
    /// `runs[].extra` once a page-cache read happened (any of the place's items nonzero).
    FileRead,
    /// `runs[].extra` with the flusher thread and some writeback.
    Flusher,
    /// `runs[].extra.flusher_runs` (an object) once something was written back.
    FlusherRuns,
    /// `runs[].extra.flusher_mkclean_flushes` (an object) once the flusher thread flushed
    /// another CPU's mm.
    FlusherFlushes,
    /// `runs[].extra.dirty_throttling` (an object) once a writer or reclaim waited.
    DirtyThrottling,
    /// `runs[].extra.swap_block` (an object) with the block swap device.
    SwapBlock,
    /// `runs[].extra.placement.migrations_by_cause` (an object).
    MigrationsByCause,
    /// Counted, but result.rs writes it itself: in other units (seconds, a mean), or under
    /// a condition of its own.
    Custom,
}

/// vm_event_states: every counter, indexed by item. The model is deterministic and runs on
/// one host thread, so one array stands for the kernel's per-CPU ones summed.
#[derive(Clone, Debug)]
pub struct VmEvents([u64; NR_VM_EVENT_ITEMS]);

impl Default for VmEvents {
    fn default() -> Self {
        VmEvents([0; NR_VM_EVENT_ITEMS])
    }
}

impl VmEvents {
    /// count_vm_event.
    #[inline]
    pub fn count_vm_event(&mut self, item: VmEventItem) {
        self.0[item as usize] += 1;
    }

    /// count_vm_events.
    #[inline]
    pub fn count_vm_events(&mut self, item: VmEventItem, n: u64) {
        self.0[item as usize] += n;
    }

    /// The items of `place` by name (vmstat_start/vmstat_show for one place).
    pub fn to_map(&self, place: Place) -> BTreeMap<String, u64> {
        VmEventItem::ALL
            .iter()
            .filter(|i| i.place() == place)
            .map(|&i| (i.name().to_string(), self[i]))
            .collect()
    }

    /// The same as JSON values, to extend a result's `extra` with.
    pub fn json(&self, place: Place) -> impl Iterator<Item = (String, serde_json::Value)> {
        self.to_map(place).into_iter().map(|(k, v)| (k, v.into()))
    }
}

impl std::ops::Index<VmEventItem> for VmEvents {
    type Output = u64;
    #[inline]
    fn index(&self, item: VmEventItem) -> &u64 {
        &self.0[item as usize]
    }
}

/// Per-CPU interrupt counts (/proc/interrupts rows TLB and CAL).
#[derive(Clone, Debug, Default)]
pub struct IrqStat {
    /// irq_tlb_count: flush_tlb_func run on behalf of another CPU.
    pub tlb_shootdowns: Vec<u64>,
    /// irq_call_count: every call-function IPI taken.
    pub function_call_interrupts: Vec<u64>,
}

impl IrqStat {
    pub fn new(cpus: usize) -> IrqStat {
        IrqStat {
            tlb_shootdowns: vec![0; cpus],
            function_call_interrupts: vec![0; cpus],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_item_is_serialised_once_under_a_unique_name_in_its_place() {
        let mut ev = VmEvents::default();
        // A distinct value per item, so that a map entry shows which item it came from.
        for (n, &i) in VmEventItem::ALL.iter().enumerate() {
            ev.count_vm_events(i, n as u64 + 1);
        }
        let places: BTreeSet<Place> = VmEventItem::ALL.iter().map(|i| i.place()).collect();
        let mut seen = BTreeSet::new();
        for &p in &places {
            for (name, v) in ev.to_map(p) {
                let item = VmEventItem::ALL[v as usize - 1];
                assert_eq!((item.name(), item.place()), (name.as_str(), p));
                assert!(seen.insert(item), "{item:?} serialised twice");
            }
        }
        assert_eq!(
            seen.len(),
            NR_VM_EVENT_ITEMS,
            "an item is missing from its place"
        );
    }

    #[test]
    fn names_are_unique_within_a_place_and_count_helpers_add() {
        let mut names = BTreeSet::new();
        for &i in VmEventItem::ALL {
            assert!(names.insert((i.place(), i.name())), "{} twice", i.name());
        }
        let mut ev = VmEvents::default();
        ev.count_vm_event(VmEventItem::PGFAULT);
        ev.count_vm_events(VmEventItem::PGFAULT, 4);
        assert_eq!(ev[VmEventItem::PGFAULT], 5);
        assert_eq!(ev.to_map(Place::Vmstat)["pgfault"], 5);
    }
}
