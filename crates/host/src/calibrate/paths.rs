//! Path costs: what a whole kernel path measured per page costs beyond the parts the simulator
//! charges under their own names. Each is a residual over samples taken in one run (whole path
//! minus its measured parts, sample by sample), so it carries their noise; where a part has no
//! measurement its estimate is subtracted and the source says so.

use super::derive::Derived;
use super::stats::paired_diff;
use super::{find, put, Measurement};
use reclaimlab_sim::cost::CostTable;
use std::collections::BTreeMap;

/// `a - b - c ...` sample by sample over the named measurements (None if one is missing).
fn residual(ms: &[Measurement], plus: &str, minus: &[&str]) -> Option<Vec<f64>> {
    let mut v = find(ms, plus)?.samples.clone();
    for m in minus {
        v = paired_diff(&v, &find(ms, m)?.samples);
    }
    Some(v)
}

fn add(v: Vec<f64>, x: f64) -> Vec<f64> {
    v.into_iter().map(|s| s + x).collect()
}

/// zram by data: each kind's write (read) minus the zero page's, which takes the same-filled
/// path (drivers/zram.rs in the simulator).
fn zram_by_data(
    ms: &[Measurement],
    costs: &mut BTreeMap<String, Derived>,
    notes: &mut Vec<String>,
) {
    for (data, what) in [
        (
            "sparse",
            "a zero page with one byte changed (what anon-sweep leaves)",
        ),
        (
            "random",
            "pseudo-random, incompressible bytes (stored whole)",
        ),
    ] {
        for (dir, cost, verb) in [
            ("write", "zram_compress", "write"),
            ("read", "zram_decompress", "read"),
        ] {
            let (a, z) = (format!("zram-{dir}-{data}"), format!("zram-{dir}-zero"));
            if find(ms, &a).is_none() {
                continue;
            }
            put(
                costs,
                notes,
                &format!("{cost}_{data}"),
                residual(ms, &a, &[&z]).and_then(|v| {
                    Derived::new(
                        v,
                        &format!(
                            "zram {verb} of {what} minus the same {verb} of a zero page \
                             (same-filled), O_DIRECT, paired per sample"
                        ),
                        &[&a, &z],
                    )
                }),
                &format!("the {verb} difference was negative (noise larger than the codec)"),
            );
        }
    }
}

/// The fault paths: the first-touch write fault and the zram swap-in, minus what the simulator
/// charges on them under other names.
fn faults(ms: &[Measurement], costs: &mut BTreeMap<String, Derived>, notes: &mut Vec<String>) {
    let charge = CostTable::x86().memcg_charge as f64 / 64.0;
    if find(ms, "anon-write-fault").is_some() {
        put(
            costs,
            notes,
            "alloc_anon_folio",
            residual(ms, "anon-write-fault", &["anon-read-fault", "clear-page"]).and_then(|v| {
                Derived::new(
                    add(v, -charge),
                    &format!(
                        "first-touch write fault minus the read fault (fault_base) minus clearing \
                         a page (zero_page), minus memcg_charge's estimate over its batch of 64 \
                         ({charge:.1} ns): do_anonymous_page's allocation, rmap and LRU entry"
                    ),
                    &["anon-write-fault", "anon-read-fault", "clear-page"],
                )
            }),
            "the write fault was not slower than a read fault plus a page clear",
        );
    }
    if find(ms, "swapin-fault-zram").is_some() {
        // swap-in − fault_base − decompress − alloc_anon_folio − charge, where
        // alloc_anon_folio = write fault − read fault − clear − charge: the read faults cancel.
        put(
            costs,
            notes,
            "do_swap_page",
            (|| {
                let decompress = residual(ms, "zram-read-pattern", &["zram-read-zero"])?;
                let alloc = residual(ms, "anon-write-fault", &["anon-read-fault", "clear-page"])?;
                let v = residual(ms, "swapin-fault-zram", &["anon-read-fault"])?;
                let v = paired_diff(&paired_diff(&v, &decompress), &alloc);
                Derived::new(
                    v,
                    "zram swap-in fault per page (stress-ng-like data) minus the read fault \
                     (fault_base), the decompression (zram-read-pattern minus zram-read-zero) and \
                     the new folio with its charge (alloc_anon_folio's residual): the swap cache \
                     lookup, swap_read_folio's call into zram, swap_free_nr and the PTE install",
                    &[
                        "swapin-fault-zram",
                        "anon-read-fault",
                        "zram-read-pattern",
                        "zram-read-zero",
                        "anon-write-fault",
                        "clear-page",
                    ],
                )
            })(),
            "the swap-in was not slower than its measured parts",
        );
    }
}

/// flush_tlb_mm_range's fixed work for a ranged flush: the intercept of the INVLPG series.
fn flush_fixed(ms: &[Measurement], costs: &mut BTreeMap<String, Derived>, notes: &mut Vec<String>) {
    if let Some(m) = find(ms, "flush-ranged-fixed-fit") {
        put(
            costs,
            notes,
            "flush_tlb_range_fixed",
            Derived::new(
                m.samples.clone(),
                "mprotect of n present minus n none PTEs over n = 1..32: intercept (the ranged \
                 flush's work that is neither a PTE change nor an INVLPG)",
                &["flush-ranged-fixed-fit"],
            ),
            "the fitted intercept was negative",
        );
    }
}

/// Every path cost the measurements allow.
pub fn derive(ms: &[Measurement], costs: &mut BTreeMap<String, Derived>, notes: &mut Vec<String>) {
    zram_by_data(ms, costs, notes);
    faults(ms, costs, notes);
    flush_fixed(ms, costs, notes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, v: &[f64]) -> Measurement {
        Measurement::new(name, "ns/page", "synthetic", v.to_vec()).unwrap()
    }

    #[test]
    fn residuals_subtract_the_measured_parts_sample_by_sample() {
        let ms = vec![
            m("anon-read-fault", &[800.0, 900.0]),
            m("anon-write-fault", &[1800.0, 1950.0]),
            m("clear-page", &[400.0, 450.0]),
            m("zram-read-zero", &[1300.0, 1300.0]),
            m("zram-read-pattern", &[5800.0, 5900.0]),
            m("zram-write-zero", &[1400.0, 1500.0]),
            m("zram-write-sparse", &[1700.0, 1850.0]),
            m("swapin-fault-zram", &[8000.0, 8300.0]),
        ];
        let (mut costs, mut notes) = (BTreeMap::new(), Vec::new());
        derive(&ms, &mut costs, &mut notes);
        let charge = CostTable::x86().memcg_charge as f64 / 64.0;
        // 1800 - 800 - 400 = 600 and 1950 - 900 - 450 = 600, less the charge's estimate.
        assert_eq!(costs["alloc_anon_folio"].ns, 600.0 - charge);
        assert_eq!(costs["zram_compress_sparse"].ns, 325.0);
        // 8000 - 800 - 4500 - 600 = 2100; 8300 - 900 - 4600 - 600 = 2200.
        assert_eq!(costs["do_swap_page"].ns, 2150.0);
        // No random data measured: nothing said about it, nothing set.
        assert!(!costs.contains_key("zram_compress_random"));
        // A negative difference is not a cost, and the note says so.
        let ms = vec![
            m("zram-write-zero", &[2000.0]),
            m("zram-write-sparse", &[1000.0]),
        ];
        let (mut costs, mut notes) = (BTreeMap::new(), Vec::new());
        derive(&ms, &mut costs, &mut notes);
        assert!(costs.is_empty());
        assert!(
            notes[0].starts_with("zram_compress_sparse not set"),
            "{notes:?}"
        );
    }
}
