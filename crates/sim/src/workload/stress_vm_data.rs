//! What each stress-ng vm method leaves in its buffer, as zram pays for it: lzo-rle's time to
//! compress a page of the method's data when reclaim swaps it out, and to decompress it when
//! the worker faults it back, per method. The methods differ by 1000x: a same-filled page
//! (write64, zero-one, incdec) is never compressed; checkerboard's and swap's pages take
//! ~5 us to decompress; flip's, rand-set's and ror's 6-8 us to compress.
//!
//! Measured on the kvm-guest-2vcpu machine (lzo-rle, Linux 6.18), two ways:
//! - `Source::Reclaim`: `scripts/stress-vm-zram-perf.py` ran each method alone
//!   (`reclaimlab bench stress-vm`, one worker, 400M in a 256M memcg, zram swap, 6 s) under
//!   `perf record -a -F 999 -e cpu-clock`; lzo-rle's compressor samples per pswpout and its
//!   decompressor's per pswpin. Raw: profiles/kvm-guest-2vcpu.stress-vm-zram-perf.json.
//! - `Source::Capture`, for the methods that swapped fewer than 10 000 pages in that run:
//!   `scripts/stress-vm-page-data.py` copied the method's buffer (2 s, no memory pressure) out
//!   of /proc/PID/mem and timed O_DIRECT zram writes and reads of it against a zero page's
//!   (write and read time beyond a same-filled page, so a little more than lzo alone). Raw:
//!   profiles/kvm-guest-2vcpu.stress-vm-zram.json. Where both exist they agree within ~20%
//!   except cache-lines (the capture after hundreds of passes decompresses 6x slower than the
//!   pages reclaim meets).
//!
//! Each method started on a zeroed buffer. In the `all` cycle a method that only reads its
//! buffer (read64) holds the data the method before it wrote and costs what that one does;
//! methods that write but restore (incdec) are taken as measured (same-filled).
//!
//! A profile other than kvm-guest-2vcpu scales the figures by its own pattern-page costs
//! (`zram_compress`, `zram_decompress`) over this machine's: an estimate that lzo-rle's speed
//! differs between machines by one factor for all data.

use super::stress_vm::{methods_run, Step};
use crate::cost::CostTable;

/// Where a row of `MEASURED_NS` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// lzo-rle's CPU time per page in reclaim's swap-out and the fault's swap-in (perf).
    Reclaim,
    /// A zram write/read of the captured buffer, beyond a zero page's.
    Capture,
}

/// (method, compress ns, decompress ns, source) per page, as measured.
pub const MEASURED_NS: [(&str, f64, f64, Source); 35] = [
    ("cache-lines", 1005.3, 838.8, Source::Reclaim),
    ("cache-stripe", 768.1, 278.4, Source::Reclaim),
    ("checkerboard", 806.2, 5131.7, Source::Reclaim),
    ("flip", 8039.9, 2053.6, Source::Reclaim),
    ("fwdrev", 3.3, 2.5, Source::Reclaim),
    ("galpat-0", 288.8, 323.1, Source::Reclaim),
    ("galpat-1", 231.4, 1436.6, Source::Reclaim),
    ("gray", 819.0, 210.1, Source::Reclaim),
    ("grayflip", 717.2, 258.5, Source::Reclaim),
    ("rowhammer", 1.3, 2.7, Source::Reclaim),
    ("incdec", 4.1, 9.8, Source::Reclaim),
    ("inc-nybble", 8.2, 4.1, Source::Reclaim),
    ("lfsr32", 2111.8, 801.5, Source::Reclaim),
    ("rand-set", 6445.1, 4121.8, Source::Reclaim),
    ("rand-sum", 961.0, 376.1, Source::Reclaim),
    ("read64", 1.9, 0.0, Source::Capture),
    ("ror", 6739.5, 4280.2, Source::Reclaim),
    ("swap", 1724.3, 5180.6, Source::Reclaim),
    ("move-inv", 878.2, 0.0, Source::Reclaim),
    ("modulo-x", 741.4, 2178.4, Source::Reclaim),
    ("mscan", 2.9, 0.0, Source::Reclaim),
    ("wrrd128nt", 2028.2, 727.9, Source::Reclaim),
    ("prime-0", 348.6, 1447.2, Source::Reclaim),
    ("prime-1", 394.1, 341.5, Source::Reclaim),
    ("prime-gray-0", 448.0, 1209.8, Source::Reclaim),
    ("prime-gray-1", 246.9, 140.3, Source::Reclaim),
    ("prime-incdec", 0.0, 0.0, Source::Capture),
    ("walk-0d", 0.0, 0.0, Source::Reclaim),
    ("walk-1d", 6.2, 2.2, Source::Reclaim),
    ("walk-0a", 281.1, 1251.9, Source::Capture),
    ("walk-1a", 885.2, 311.7, Source::Reclaim),
    ("write64", 1.5, 0.0, Source::Reclaim),
    ("write64nt", 31.4, 0.0, Source::Capture),
    ("write1024v", 2.0, 1.0, Source::Reclaim),
    ("zero-one", 5.1, 0.0, Source::Reclaim),
];

/// kvm-guest-2vcpu's pattern-page costs (profiles/kvm-guest-2vcpu.toml zram_compress,
/// zram_decompress), the machine the table was measured on.
const MEASURED_ON: (f64, f64) = (6398.4, 4499.3);

/// zram's extra (write ns, read ns) per page while a worker is in each phase of
/// `names_by_phase(method)`, for a machine of `cost`.
pub fn zram_ns_by_phase(method: &str, cost: &CostTable) -> Vec<(u64, u64)> {
    let scale = |ns: f64, on: f64, here: u64| (ns * here as f64 / on) as u64;
    let mut out = Vec::new();
    let mut held = (0, 0);
    for (me, phases) in methods_run(method) {
        let writes = me
            .steps
            .iter()
            .any(|s| matches!(s, Step::U { write: true, .. }));
        if writes || method != "all" {
            let (_, w, r, _) = MEASURED_NS
                .iter()
                .find(|row| row.0 == me.name)
                .copied()
                .expect("every vm method is measured");
            held = (
                scale(w, MEASURED_ON.0, cost.zram_compress),
                scale(r, MEASURED_ON.1, cost.zram_decompress),
            );
        }
        out.extend(std::iter::repeat_n(held, phases));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::stress_vm::names_by_phase;

    fn raw(name: &str) -> serde_json::Value {
        let path = format!("{}/../../profiles/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn the_table_is_the_raw_measurements() {
        let perf = raw("kvm-guest-2vcpu.stress-vm-zram-perf.json");
        let capture = raw("kvm-guest-2vcpu.stress-vm-zram.json");
        for (name, w, r, source) in MEASURED_NS {
            let p = &perf["methods"][name];
            let enough = p["pswpout"].as_u64().unwrap() >= 10_000;
            assert_eq!(source == Source::Reclaim, enough, "{name}");
            let (rw, rr) = match source {
                Source::Reclaim => (&p["compress_ns"], &p["decompress_ns"]),
                Source::Capture => (
                    &capture["methods"][name]["write_ns"],
                    &capture["methods"][name]["read_ns"],
                ),
            };
            // Negative capture figures (noise around a same-filled page) are taken as 0.
            assert_eq!(w, rw.as_f64().unwrap().max(0.0), "{name} write");
            assert_eq!(r, rr.as_f64().unwrap().max(0.0), "{name} read");
        }
        assert_eq!(
            MEASURED_NS.len(),
            crate::workload::stress_vm::methods().len()
        );
    }

    #[test]
    fn a_read_only_method_in_the_cycle_costs_what_the_method_before_it_wrote() {
        let cost = CostTable::x86();
        let names = names_by_phase("all");
        let by = zram_ns_by_phase("all", &cost);
        assert_eq!(by.len(), names.len());
        let first = |m: &str| names.iter().position(|n| *n == m).unwrap();
        let read64 = first("read64");
        assert_eq!(names[read64 - 1], "rand-sum");
        assert_eq!(by[read64], by[read64 - 1]);
        assert!(by[read64].0 > 0, "rand-sum's data is compressed");
        // Alone, read64 reads a zeroed buffer: nothing to compress (a few ns of noise).
        let alone = zram_ns_by_phase("read64", &cost)[0];
        assert!(alone.0 <= 2 && alone.1 <= 2, "{alone:?}");
        // A same-filled method costs nothing; flip's data costs more than a pattern page.
        let w64 = by[first("write64")];
        assert!(w64.0 <= 2 && w64.1 <= 2, "{w64:?}");
        assert!(by[first("flip")].0 > cost.zram_compress);
    }

    #[test]
    fn the_measured_machine_gets_the_figures_as_measured() {
        let mut cost = CostTable::x86();
        cost.zram_compress = MEASURED_ON.0 as u64;
        cost.zram_decompress = MEASURED_ON.1 as u64;
        let by = zram_ns_by_phase("checkerboard", &cost);
        let (_, w, r, _) = MEASURED_NS[2];
        assert_eq!(MEASURED_NS[2].0, "checkerboard");
        assert!(by[0].0.abs_diff(w as u64) <= 1 && by[0].1.abs_diff(r as u64) <= 1);
    }
}
