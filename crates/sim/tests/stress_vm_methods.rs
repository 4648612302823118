//! stress-ng 0.15.06's vm method table (workload/stress_vm.rs): the order of `--vm-method
//! all`, the pages each method's passes visit and the bogo units each call adds, against
//! figures worked out by hand from stress-vm.c (ColinIanKing/stress-ng; the 2023 revision
//! whose `vm_methods[]` matches the list `stress-ng --vm-method which` prints for 0.15.06).

mod common;

use reclaimlab_sim::config::Policy;
use reclaimlab_sim::cost::CostTable;
use reclaimlab_sim::engine::Engine;
use reclaimlab_sim::kernel::{Backing, Kernel};
use reclaimlab_sim::workload::stress_vm::{access_model, methods, names_by_phase};
use reclaimlab_sim::workload::{Order, Pass, Sweep};

/// `stress-ng --vm 1 --vm-method which` of 0.15.06, without "all".
const ORDER: &str = "cache-lines cache-stripe checkerboard flip fwdrev galpat-0 galpat-1 gray \
grayflip rowhammer incdec inc-nybble lfsr32 rand-set rand-sum read64 ror swap move-inv \
modulo-x mscan wrrd128nt prime-0 prime-1 prime-gray-0 prime-gray-1 prime-incdec walk-0d \
walk-1d walk-0a walk-1a write64 write64nt write1024v zero-one";

#[test]
fn all_steps_the_methods_in_stress_ng_order_each_after_the_loops_populate() {
    let names: Vec<&str> = methods().iter().map(|m| m.name).collect();
    assert_eq!(names, ORDER.split_whitespace().collect::<Vec<_>>());
    let cfg = common::cfg(0);
    let m = access_model(&cfg, &CostTable::x86(), "all").unwrap();
    let by_phase = names_by_phase("all");
    assert_eq!(by_phase.len(), m.sweeps.len());
    // Each method's first sweep is stress_vm_child's stress_mincore_touch_pages.
    let mut seen = Vec::new();
    for (i, s) in m.sweeps.iter().enumerate() {
        if i == 0 || by_phase[i] != by_phase[i - 1] {
            assert_eq!(
                *s,
                Sweep::Populate,
                "{} starts with the populate",
                by_phase[i]
            );
            seen.push(by_phase[i]);
        }
    }
    assert_eq!(seen, names);
    assert!(access_model(&cfg, &CostTable::x86(), "no-such-method").is_err());
}

fn pages(order: Order, n: u64) -> Vec<u64> {
    let p = Pass {
        order,
        write: true,
        units: 1,
        ns: 1,
    };
    let mut next = 0;
    // A fake "random" source: 0, 1, 2, ... mod n.
    let mut rnd = |n: u64| {
        next += 1;
        (next - 1) % n
    };
    (0..p.len(n)).map(|i| p.page(i, n, &mut rnd)).collect()
}

#[test]
fn page_orders_follow_the_source() {
    // fwdrev: fwdptr up from buf, revptr down from buf_end, alternating stores.
    assert_eq!(pages(Order::FwdRev, 4), vec![0, 3, 1, 2, 2, 1, 3, 0]);
    // move-inv's second half runs from buf_end down.
    assert_eq!(pages(Order::Rev, 4), vec![3, 2, 1, 0]);
    // prime-incdec's prime stride (prime > sz + 4096, so one page and a few bytes per step)
    // visits every page once per wrap, 4096 wraps.
    let w = pages(Order::Wraps(4096), 4);
    assert_eq!(w.len(), 4 * 4096);
    assert_eq!(&w[..6], &[0, 1, 2, 3, 0, 1]);
    // walk-1a on 4 pages: per page p, p (`*ptr = d1`), p (masks < 4096), p^1, p^2.
    assert_eq!(
        pages(Order::WalkAddr { zero: false }, 4),
        vec![0, 0, 1, 2, 1, 1, 0, 3, 2, 2, 3, 0, 3, 3, 2, 1]
    );
    // walk-0a: ptr ^ (~mask & sz_mask): the mirror p^3, then p^(3^1), p^(3^2).
    assert_eq!(
        pages(Order::WalkAddr { zero: true }, 4),
        vec![0, 3, 2, 1, 1, 2, 3, 0, 2, 1, 0, 3, 3, 0, 1, 2]
    );
    // walk-1a on 3 pages (slots per page: 2 + log2(4)): page 1's p^2 = 3 is outside the
    // buffer; page 2's first far address 2^1 = 3 is outside, so the mask sticks there and
    // the in-range 2^2 = 0 is never reached (stress-ng's `continue` before `mask <<= 1`).
    assert_eq!(
        pages(Order::WalkAddr { zero: false }, 3),
        vec![0, 0, 1, 2, 1, 1, 0, 1, 2, 2, 2, 2]
    );
    // swap: each home page, then 64 random chunk partners.
    let s = pages(Order::Swap { rev: true }, 2);
    assert_eq!(s.len(), 130);
    assert_eq!((s[0], s[65]), (1, 0));
}

/// Run one call (the loop's populate + the method) of `method` on a 4-page buffer with no
/// memory pressure; (bogo units, user page visits).
fn one_call(method: &str) -> (u64, u64) {
    let cfg = common::cfg(0);
    let mut model = access_model(&cfg, &CostTable::x86(), method).unwrap();
    model.one_cycle = true;
    let mut k = Kernel::new(cfg, Policy::linux_6_18(), 1, 1024, 1 << 20, 60, 1);
    let mm = k.mm_alloc(4, Backing::Anon, true);
    k.task_new(mm, Some(0), 0, 4);
    let mut e = Engine::new(k, model);
    e.place_tasks();
    e.run_until(u64::MAX / 4, 1);
    let t = &e.k.tasks[0];
    assert!(t.done, "{method}: one call finished");
    (t.bogo_units, t.pages_touched)
}

#[test]
fn one_call_adds_the_sources_units_and_visits_the_sources_pages() {
    // Hand-derived from stress-vm.c for n = 4 pages (sz = 16384 bytes); units = the bogo
    // counter (c) the method adds, visits = user page visits (populates excluded).
    let cases: &[(&str, u64, u64)] = &[
        // 0.15.06 reports no bogo ops for cache-lines (measured); store + verify pass.
        ("cache-lines", 0, 8),
        // c++ per 64-byte stripe: 16384 / 64 = 256; store + verify pass.
        ("cache-stripe", 256, 8),
        // c++ per 8 words in the verify loop: 256; write, swap, verify.
        ("checkerboard", 256, 12),
        // c++ per 8 bytes in the fill and each of 8 flip passes: 9 × 2048; 10 passes.
        ("flip", 9 * 2048, 40),
        // c++ per 16 bytes in the write and the verify loop: 2 × 1024; two visits per page
        // per loop.
        ("fwdrev", 2048, 16),
        // c++ per 8 words of the bit count: 256; memset, 4 stray bits, count.
        ("galpat-0", 256, 12),
        // c += 4 per 4 bytes verified: 16384.
        ("gray", 16384, 8),
        // bogo += VM_ROWHAMMER_LOOPS (10^6) per call; fill, two rows, verify.
        ("rowhammer", 1_000_000, 10),
        // c += sz: 16384; memset, inc, dec, verify.
        ("incdec", 16384, 16),
        // c += sz / 8 four times: 4 × 2048.
        ("move-inv", 8192, 24),
        // c++ per complement byte, 22 of 23 bytes, 23 offsets: 22 × 16384 = 360448 (the
        // table rounds 4096 × 22 / 23 to 3918 per page: 360456); 69 passes.
        ("modulo-x", 23 * 3918 * 4, 69 * 4),
        // stress_bogo_set(c) with c = start + 2 sz: 32768; four passes.
        ("mscan", 32768, 16),
        // c++ per byte incremented and per byte decremented: 2 × 16384; memset, inc, 4096
        // wraps of the prime stride, verify.
        ("prime-incdec", 32768, 4 + 4 + 4096 * 4 + 4),
        // c++ per 61-byte stride point in each of 8 passes (67 per page): 8 × 268.
        ("prime-0", 8 * 67 * 4, 40),
        // c++ per 256 bytes: 64; memset, then 4 slots per page.
        ("walk-1a", 64, 4 + 16),
        // c++ per chunk of 64 bytes, forward and reverse: 2 × 256; memset, 2 × 65 visits per
        // page, verify.
        ("swap", 512, 4 + 2 * 65 * 4 + 4),
        // i++ per 256 bytes: 64.
        ("read64", 64, 4),
        ("write64", 64, 4),
        // i++ per 128-byte vector store: 128.
        ("write1024v", 128, 4),
        // c += sz / 8 twice: 4096.
        ("zero-one", 4096, 16),
    ];
    for &(method, units, visits) in cases {
        assert_eq!(one_call(method), (units, visits), "{method}");
    }
}

#[test]
fn restart_after_oom_starts_the_cycle_again_and_runs_are_deterministic() {
    // A worker killed by the memcg OOM killer is restarted by stress_oomable_child as a new
    // process, whose stress_vm_all index starts at cache-lines again: no swap and a limit
    // below the buffer force kills.
    let sets = [
        "machine.cpus=2",
        "workload.workers=2",
        "workload.bytes=16M",
        "memcg.limit=4M",
        "swap.size=0",
        "run.duration=200ms",
    ];
    let a = common::sim_with("stress-vm", &sets, &[]);
    let r = &a.runs[0];
    assert!(r.oom_kills > 0);
    // Without swap a restarted worker never gets past populating its buffer in the first
    // method call (cache-lines, which 0.15.06 counts no bogo ops for).
    assert_eq!(r.throughput.value, 0.0);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("0+cache-lines 0+cache-lines")),
        "{:?}",
        r.notes
    );
    let b = common::sim_with("stress-vm", &sets, &[]);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}
