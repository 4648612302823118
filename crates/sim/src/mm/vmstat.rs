//! Event counters under the kernel's own names (/proc/vmstat, /proc/interrupts TLB and CAL).

use std::collections::BTreeMap;

macro_rules! vmstat_items {
    ($($name:ident),* $(,)?) => {
        /// Machine-wide event counters (enum vm_event_item / node_stat_item names).
        #[derive(Clone, Debug, Default)]
        pub struct VmStat { $(pub $name: u64,)* }
        impl VmStat {
            pub fn to_map(&self) -> BTreeMap<String, u64> {
                let mut m = BTreeMap::new();
                $(m.insert(stringify!($name).to_string(), self.$name);)*
                m
            }
        }
    };
}

vmstat_items!(
    pgfault,
    pgmajfault,
    pgscan_anon,
    pgscan_file,
    pgscan_direct,
    pgsteal_anon,
    pgsteal_file,
    pgsteal_direct,
    pgrefill,
    pgactivate,
    pgdeactivate,
    pswpin,
    pswpout,
    nr_vmscan_write,
    nr_vmscan_immediate_reclaim,
    workingset_refault_anon,
    workingset_refault_file,
    workingset_activate_anon,
    workingset_activate_file,
    workingset_restore_anon,
    workingset_restore_file,
    nr_tlb_remote_flush,
    nr_tlb_remote_flush_received,
    nr_tlb_local_flush_all,
    nr_tlb_local_flush_one,
    oom_kill,
);

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
