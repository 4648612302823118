//! `ycsb-b` (seed 002): YCSB workload B against a store whose records live in a shared,
//! writable file mapping. Each operation picks a record with YCSB's scrambled zipfian
//! generator (ScrambledZipfianGenerator: a zipfian rank over 10^10 items with constant 0.99,
//! hashed with FNV-1a 64 onto the record count, so hot records are spread over the file), reads
//! it with probability `read_ratio` and otherwise updates it (a store to its page, which dirties
//! the page-cache folio). A record lies inside one page (`record_bytes` divides 4K).
//!
//! The generator is YCSB's own algorithm (Gray et al., "Quickly generating billion-record
//! synthetic databases"), coded here rather than taken from a crate: rand_distr's Zipf draws
//! from the same distribution but not YCSB's sequence shape (the 10^10-item scrambled space),
//! and this keeps every draw on the kernel's one ChaCha8 stream.
//!
//! Each operation costs `OP_CPU_NS` of CPU besides its memory access (the server's request
//! handling; an estimate, docs/cost-model.md). Faults and reclaim are charged on the CPU as
//! everywhere in the model: a thread waiting for a read does not give its CPU to another
//! thread (no I/O overlap), which the real server gets from its ~31 requests in flight.

use super::{AccessModel, Outcome, Sweep};
use crate::config::SimConfig;
use crate::engine::Engine;
use crate::kernel::{Backing, File, Kernel};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use reclaimlab_core::scenario::YcsbB;
use reclaimlab_core::Scenario;

/// YCSB's ScrambledZipfianGenerator constants (ITEM_COUNT, ZETAN for theta 0.99).
const ITEM_COUNT: u64 = 10_000_000_000;
const ZETAN_099: f64 = 26.469_028_201_783_02;
/// CPU time of one operation outside the page access (request parsing, the store's lookup,
/// the reply): ~10 us. Estimate, not measured.
pub const OP_CPU_NS: u64 = 10_000;

/// The YCSB key chooser and operation mix.
#[derive(Clone, Debug)]
pub struct YcsbGen {
    records: u64,
    records_per_page: u64,
    read_ratio: f64,
    items: u64,
    zetan: f64,
    alpha: f64,
    eta: f64,
    half_pow_theta: f64,
    pub op_ns: u64,
    /// pread/pwrite instead of loads and stores through the mapping.
    pub fd: bool,
}

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

/// Utils.fnvhash64 (YCSB): FNV-1 over the 8 bytes, absolute value as a Java long.
pub fn fnvhash64(mut val: u64) -> u64 {
    let mut h: i64 = 0xCBF2_9CE4_8422_2325_u64 as i64;
    for _ in 0..8 {
        let octet = (val & 0xff) as i64;
        val >>= 8;
        h ^= octet;
        h = h.wrapping_mul(1_099_511_628_211);
    }
    h.wrapping_abs() as u64
}

impl YcsbGen {
    pub fn new(w: &YcsbB) -> YcsbGen {
        // The constant 0.99 uses YCSB's precomputed zeta over 10^10 items; another constant
        // computes zeta over the record count (YCSB would over 10^10, too slow here).
        let (items, zetan) = if (w.zipf_theta - 0.99).abs() < 1e-12 {
            (ITEM_COUNT, ZETAN_099)
        } else {
            (w.records, zeta(w.records, w.zipf_theta))
        };
        let theta = w.zipf_theta;
        let zeta2 = zeta(2, theta);
        YcsbGen {
            records: w.records,
            records_per_page: 4096 / w.record_bytes,
            read_ratio: w.read_ratio,
            items,

            zetan,
            alpha: 1.0 / (1.0 - theta),
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
            half_pow_theta: 0.5f64.powf(theta),
            op_ns: OP_CPU_NS,
            fd: w.pread,
        }
    }

    /// ZipfianGenerator.nextLong: a rank in 0..items, 0 the most popular.
    fn zipf(&self, rng: &mut ChaCha8Rng) -> u64 {
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1;
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }

    /// ScrambledZipfianGenerator.nextValue: the record number.
    pub fn next_record(&self, rng: &mut ChaCha8Rng) -> u64 {
        fnvhash64(self.zipf(rng)) % self.records
    }

    /// One operation: (file page, is an update).
    pub fn next_op(&self, rng: &mut ChaCha8Rng) -> (u64, bool) {
        let rec = self.next_record(rng);
        let update = rng.gen::<f64>() >= self.read_ratio;
        (rec / self.records_per_page, update)
    }

    /// Pages of the record file.
    pub fn pages(&self) -> u64 {
        self.records.div_ceil(self.records_per_page)
    }
}

impl super::Workload for YcsbB {
    fn access_model(&self, _k: &Kernel) -> anyhow::Result<AccessModel> {
        Ok(access_model(self))
    }

    /// The store's record file, mapped shared and writable by every client thread.
    fn fork(&self, _scn: &Scenario, _cfg: &SimConfig, e: &mut Engine) -> anyhow::Result<()> {
        let pages = e.k.runner.model.ycsb.as_ref().map_or(0, |y| y.pages());
        e.k.files.push(File::new(pages as usize));
        let mm = e.k.mm_alloc(pages, Backing::File(0), true);
        for i in 0..self.threads {
            e.k.task_new(mm, self.cpus.for_worker(i), 0, pages);
        }
        Ok(())
    }

    /// Throughput: operations per second.
    fn run(&self, e: &mut Engine, duration_ns: u64) -> Outcome {
        e.run_until(duration_ns, duration_ns);
        let ops = super::pages_touched(&e.k);
        let mut r = Outcome::per_sec(duration_ns, ops as f64, "ops_per_sec");
        r.notes.push(format!(
            "ycsb-b: {ops} operations, {} us of CPU per operation besides its page access (estimate)",
            OP_CPU_NS / 1000
        ));
        r
    }
}

pub fn access_model(w: &YcsbB) -> AccessModel {
    AccessModel {
        sweeps: vec![Sweep::Read],
        random: true,
        random_write: false,
        bogo_units_per_store: 0,
        one_cycle: false,
        ycsb: Some(YcsbGen::new(w)),
        byte_touch: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn fnv_matches_ycsb() {
        // fnvhash64(0): FNV offset basis times the prime 8 times (octets 0), as a Java long.
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(1_099_511_628_211);
        }
        assert_eq!(fnvhash64(0), (h as i64).wrapping_abs() as u64);
    }

    #[test]
    fn zipfian_is_skewed_and_deterministic() {
        let w = YcsbB {
            records: 100_000,
            record_bytes: 1024,
            threads: 1,
            cpus: reclaimlab_core::scenario::CpuSet::List(vec![0]),
            read_ratio: 0.95,
            zipf_theta: 0.99,
            pread: false,
        };
        let g = YcsbGen::new(&w);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut counts = std::collections::BTreeMap::new();
        let mut updates = 0;
        for _ in 0..100_000 {
            let (p, u) = g.next_op(&mut rng);
            assert!(p < g.pages());
            *counts.entry(p).or_insert(0u64) += 1;
            updates += u as u64;
        }
        let mut v: Vec<u64> = counts.values().copied().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        // The hottest 1% of touched pages take far more than 1% of the operations.
        let top: u64 = v.iter().take(v.len() / 100).sum();
        assert!(top > 20_000, "top 1% pages got {top} of 100000 ops");
        assert!((4_000..6_000).contains(&updates), "{updates} updates");
        let mut rng2 = ChaCha8Rng::seed_from_u64(7);
        assert_eq!(g.next_op(&mut rng2), {
            let mut r = ChaCha8Rng::seed_from_u64(7);
            g.next_op(&mut r)
        });
    }
}
