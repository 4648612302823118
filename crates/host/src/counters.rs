//! Kernel counters sampled before and after the measured part of a run: /proc/interrupts TLB and
//! CAL rows (per CPU), every /proc/vmstat counter, and the memcg's memory.stat.

use crate::cgroup::{parse_kv, Memcg};
use std::collections::BTreeMap;

/// `/proc/interrupts` rows → result keys.
pub const IRQ_ROWS: &[(&str, &str)] = &[
    ("TLB", "tlb_shootdowns"),
    ("CAL", "function_call_interrupts"),
];

/// Per-CPU counts of the named rows of `/proc/interrupts` text.
pub fn parse_interrupts(text: &str) -> BTreeMap<String, Vec<u64>> {
    let mut lines = text.lines();
    let ncpu = lines
        .next()
        .map(|h| {
            h.split_whitespace()
                .filter(|w| w.starts_with("CPU"))
                .count()
        })
        .unwrap_or(0);
    let mut out = BTreeMap::new();
    for l in lines {
        let Some((name, rest)) = l.trim_start().split_once(':') else {
            continue;
        };
        if let Some((_, key)) = IRQ_ROWS.iter().find(|(row, _)| *row == name) {
            let v: Vec<u64> = rest
                .split_whitespace()
                .take(ncpu)
                .map_while(|w| w.parse().ok())
                .collect();
            out.insert(key.to_string(), v);
        }
    }
    out
}

/// Every `/proc/vmstat` counter.
pub fn parse_vmstat(text: &str) -> BTreeMap<String, u64> {
    parse_kv(text)
        .into_iter()
        .map(|(k, v)| (k, v.max(0) as u64))
        .collect()
}

/// One sample of everything.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub irqs: BTreeMap<String, Vec<u64>>,
    pub vmstat: BTreeMap<String, u64>,
    pub memcg: BTreeMap<String, i64>,
}

impl Snapshot {
    pub fn take(cg: Option<&Memcg>) -> Snapshot {
        Snapshot {
            irqs: parse_interrupts(
                &std::fs::read_to_string("/proc/interrupts").unwrap_or_default(),
            ),
            vmstat: parse_vmstat(&std::fs::read_to_string("/proc/vmstat").unwrap_or_default()),
            memcg: cg.and_then(|c| c.stat().ok()).unwrap_or_default(),
        }
    }
}

/// Deltas between two samples, in the result's shape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Deltas {
    /// Every vmstat counter plus the interrupt totals.
    pub counters: BTreeMap<String, u64>,
    pub per_cpu: BTreeMap<String, Vec<u64>>,
    pub memcg_stat: BTreeMap<String, i64>,
}

/// `after − before`. vmstat "counters" that are really gauges (nr_*) can go down; those deltas
/// are clamped at 0 in `counters` (the memcg deltas keep their sign).
pub fn deltas(before: &Snapshot, after: &Snapshot) -> Deltas {
    let mut d = Deltas::default();
    for (k, a) in &after.vmstat {
        let b = before.vmstat.get(k).copied().unwrap_or(0);
        d.counters.insert(k.clone(), a.saturating_sub(b));
    }
    for (k, a) in &after.irqs {
        let b = before.irqs.get(k).cloned().unwrap_or_default();
        let per: Vec<u64> = a
            .iter()
            .enumerate()
            .map(|(i, x)| x.saturating_sub(b.get(i).copied().unwrap_or(0)))
            .collect();
        d.counters.insert(k.clone(), per.iter().sum());
        d.per_cpu.insert(k.clone(), per);
    }
    for (k, a) in &after.memcg {
        let b = before.memcg.get(k).copied().unwrap_or(0);
        d.memcg_stat.insert(k.clone(), a - b);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    const IRQ: &str = "           CPU0       CPU1       \n\
  0:         40          0   IO-APIC   2-edge      timer\n\
NMI:          0          0   Non-maskable interrupts\n\
CAL:      37778      28207   Function call interrupts\n\
TLB:       9044       9775   TLB shootdowns\n\
ERR:          0\n";

    #[test]
    fn parses_interrupt_rows_per_cpu() {
        let m = parse_interrupts(IRQ);
        assert_eq!(m["tlb_shootdowns"], vec![9044, 9775]);
        assert_eq!(m["function_call_interrupts"], vec![37778, 28207]);
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn deltas_cover_every_counter() {
        let before = Snapshot {
            irqs: parse_interrupts(IRQ),
            vmstat: parse_vmstat("pgsteal_anon 10\npswpout 5\nnr_free_pages 1000\n"),
            memcg: parse_kv("cache 100\nrss 50\n"),
        };
        let after = Snapshot {
            irqs: parse_interrupts(&IRQ.replace("9044", "9050").replace("28207", "28307")),
            vmstat: parse_vmstat(
                "pgsteal_anon 25\npswpout 5\nnr_free_pages 900\nthp_fault_alloc 3\n",
            ),
            memcg: parse_kv("cache 40\nrss 80\n"),
        };
        let d = deltas(&before, &after);
        assert_eq!(d.counters["pgsteal_anon"], 15);
        assert_eq!(d.counters["pswpout"], 0);
        assert_eq!(d.counters["nr_free_pages"], 0);
        assert_eq!(d.counters["thp_fault_alloc"], 3);
        assert_eq!(d.counters["tlb_shootdowns"], 6);
        assert_eq!(d.per_cpu["tlb_shootdowns"], vec![6, 0]);
        assert_eq!(d.counters["function_call_interrupts"], 100);
        assert_eq!(d.memcg_stat["cache"], -60);
        assert_eq!(d.memcg_stat["rss"], 30);
    }
}
