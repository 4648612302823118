//! CPU time by what it was spent on. Every charge to a CPU's clock names what it pays for, so a
//! run's time per stolen page can be set beside a host profile's, component by component
//! (`perf record -g` grouped by the innermost kernel function that stands for each:
//! scripts/anon-path-perf.py). Reported as `runs[].extra.cpu_time_ns`, the components with
//! time only. Idle time and waits for a sleeping task are not CPU time and are not counted.

use serde_json::{Map, Value};

macro_rules! spent {
    ($($(#[$doc:meta])* $item:ident = $name:literal,)*) => {
        /// What a charge to a CPU's clock pays for.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Spent { $($(#[$doc])* $item,)* }

        impl Spent {
            pub const ALL: &'static [Spent] = &[$(Spent::$item,)*];
            pub fn name(self) -> &'static str {
                match self { $(Spent::$item => $name,)* }
            }
        }
    };
}

spent! {
    /// The workload's own access to a page once translated (`touch_page`, a stress-ng pass,
    /// a YCSB operation).
    User = "user",
    /// The hardware page walk after a TLB miss.
    TlbWalk = "tlb_walk",
    /// MADV_POPULATE_READ's walk per resident page.
    Gup = "gup",
    /// Exception entry and handle_mm_fault's own work.
    Fault = "fault",
    /// clear_page of a new anonymous or hole folio.
    ZeroPage = "zero_page",
    /// A new folio's allocation (rmqueue, rmap, counters).
    AllocFolio = "alloc_folio",
    /// do_swap_page beyond the allocation and the read.
    DoSwapPage = "do_swap_page",
    /// zram's decompression of a swapped-in page.
    ZramDecompress = "zram_decompress",
    /// zram's compression of a page written out.
    ZramCompress = "zram_compress",
    /// The swap write path beyond compression.
    SwapWriteout = "swap_writeout",
    /// folio_alloc_swap and the swap-cache insert.
    AddToSwap = "add_to_swap",
    /// The memcg charge.
    MemcgCharge = "memcg_charge",
    /// folio_referenced (the rmap walk and its PTE tests).
    FolioReferenced = "folio_referenced",
    /// try_to_unmap (the rmap walk and its PTE clears).
    TryToUnmap = "try_to_unmap",
    /// __remove_mapping, the uncharge and the free (its locked part included).
    RemoveMapping = "remove_mapping",
    /// shrink_folio_list's own work per folio.
    ShrinkFolio = "shrink_folio_list",
    /// lru_lock sections that isolate folios (the spin and the hold).
    LruIsolate = "lru_isolate",
    /// lru_lock sections that put folios back.
    LruPutback = "lru_putback",
    /// lru_lock sections of the lru_add batch.
    LruAdd = "lru_add",
    /// MGLRU's aging walk and eviction bookkeeping.
    Mglru = "mglru",
    /// TLB flushes on this CPU and the IPIs it sends (not the wait for them).
    TlbFlush = "tlb_flush",
    /// csd_lock_wait: spinning until the targets acknowledge.
    FlushWait = "flush_wait",
    /// Cross-CPU call handlers run on this CPU.
    IpiHandler = "ipi_handler",
    /// Context switches.
    ContextSwitch = "context_switch",
    /// A fault that finds its folio locked by reclaim elsewhere.
    FolioLockWait = "folio_lock_wait",
    /// Page-cache reads, inserts, deletes and buffer heads.
    PageCache = "page_cache",
    /// Writeback submission and completion, swap I/O submission and completion.
    Writeback = "writeback",
    /// arm64 TLBI and DSB, x86 INVLPGB and TLBSYNC.
    TlbBroadcast = "tlb_broadcast",
    /// Work items run by the system workqueue's kworkers (workqueue.rs), with the worker
    /// loop's own time.
    Workqueue = "workqueue",
    /// Foreign tasks and kernel threads the scenario runs beside the workload; forked
    /// processes' start-up.
    Other = "other",
}

/// How many components there are.
const COMPONENTS: usize = Spent::ALL.len();

/// CPU time (ns, all CPUs) by what it was spent on. A fixed array: `add` runs on every charge
/// to a CPU's clock, the hottest call of the simulator, so it is one add with no bounds check.
#[derive(Clone, Debug)]
pub struct CpuTime {
    ns: [u64; COMPONENTS],
}

impl Default for CpuTime {
    fn default() -> CpuTime {
        CpuTime {
            ns: [0; COMPONENTS],
        }
    }
}

impl CpuTime {
    #[inline]
    pub fn add(&mut self, what: Spent, ns: u64) {
        // `what as usize` < COMPONENTS: the enum's variants are exactly ALL.
        self.ns[what as usize] += ns;
    }

    pub fn get(&self, what: Spent) -> u64 {
        self.ns[what as usize]
    }

    pub fn total(&self) -> u64 {
        self.ns.iter().sum()
    }

    /// The components with time, by name, in declaration order.
    pub fn json(&self) -> Value {
        let mut m = Map::new();
        for &s in Spent::ALL {
            let ns = self.get(s);
            if ns > 0 {
                m.insert(s.name().into(), Value::from(ns));
            }
        }
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_by_component_and_reports_only_those_with_time() {
        let mut t = CpuTime::default();
        assert_eq!(t.total(), 0);
        t.add(Spent::Fault, 390);
        t.add(Spent::Fault, 10);
        t.add(Spent::User, 5);
        assert_eq!(t.get(Spent::Fault), 400);
        assert_eq!(t.total(), 405);
        let j = t.json();
        assert_eq!(j["fault"], 400);
        assert_eq!(j["user"], 5);
        assert!(j.get("zero_page").is_none());
        // Names are distinct (they are JSON keys).
        let mut names: Vec<_> = Spent::ALL.iter().map(|s| s.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Spent::ALL.len());
    }
}
