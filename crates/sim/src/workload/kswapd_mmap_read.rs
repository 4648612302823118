//! `kswapd-mmap-read`: vm-scalability's lru-file-mmap-read (seed 003). `readers` processes,
//! each with its own (sparse) file of `file_bytes / readers` mapped shared and read-only, read
//! once from start to end (or at random pages until `run.duration`). The files exceed the
//! machine's memory and no memcg limit applies, so the node's watermarks drive reclaim:
//! kswapd from the low watermark, direct reclaim below min (mm/page_alloc.rs, mm/kswapd.rs).
//!
//! Throughput: pages read per simulated second; `wall_seconds` is the elapsed time until the
//! last reader finished (the seed's elapsed), or `run.duration` if one did not.

use super::file_mmap::{mmap_rw_model, populate_model};
use crate::engine::Engine;
use crate::kernel::{Backing, File, Kernel};
use crate::mm::page_alloc::Pgdat;
use crate::SimOptions;
use reclaimlab_core::result::Throughput;
use reclaimlab_core::scenario::{KswapdMmapRead, Pattern};
use reclaimlab_core::{ResultDoc, Scenario};

const PAGE: u64 = 4096;

pub fn simulate(
    scn: &Scenario,
    w: &KswapdMmapRead,
    mut k: Kernel,
    opts: &SimOptions,
) -> (Kernel, ResultDoc) {
    // The readers run without a memcg limit (vm-scalability uses the root cgroup). A limit
    // equal to the machine's memory would still bind before the node's watermarks do (the
    // per-CPU charge stocks count against it), so one at or above machine memory is none.
    if scn.memcg.limit_bytes >= scn.machine.memory_bytes {
        k.memcg.limit = u64::MAX / 2;
    }
    let wsf = k.policy.settings.watermark_scale_factor;
    k.pgdat = Pgdat::new(scn.machine.memory_bytes / PAGE, wsf);
    k.ra.ra_pages = w.readahead_pages;
    k.ra.sparse = w.sparse;
    let random = matches!(w.pattern, Pattern::Random);
    let model = if random {
        mmap_rw_model(false, true)
    } else {
        populate_model()
    };
    let pages = w.bytes_per_reader() / PAGE;
    let mut e = Engine::new(k, model);
    e.progress = opts.progress;
    for i in 0..w.readers {
        e.k.files.push(File {
            cache: vec![0; pages as usize],
        });
        let mm = e.k.mm_alloc(pages, Backing::File(i), false);
        e.k.task_new(mm, w.cpus.for_worker(i), 0, pages);
    }
    e.place_tasks();
    // kswapd is created after the readers are placed: it sleeps until the first wakeup.
    e.k.kswapd_run();
    let duration = scn.run.duration_ns;
    e.run_until(duration, duration);
    let readers = &e.k.tasks[..w.readers];
    let finished = readers.iter().filter_map(|t| t.done_at).collect::<Vec<_>>();
    let mut notes = vec![
        "one NUMA node with one kswapd and one zone (docs/sim-model.md); the seed's machine had a kswapd per node".to_string(),
    ];
    let elapsed_ns = if !random && finished.len() == w.readers {
        finished.iter().copied().max().unwrap_or(0)
    } else {
        if !random {
            notes.push(format!(
                "{} of {} readers did not finish within run.duration: wall_seconds is run.duration",
                w.readers - finished.len(),
                w.readers
            ));
        }
        duration
    };
    let secs = elapsed_ns as f64 / 1e9;
    let read: u64 = readers.iter().map(|t| t.pages_touched).sum();
    let thr = Throughput {
        value: if secs > 0.0 { read as f64 / secs } else { 0.0 },
        unit: "pages_per_sec".into(),
    };
    let mut doc = crate::result::build(scn, &e.k, secs, thr, notes);
    if !finished.is_empty() {
        // The spread of the readers' finish times: the reader sharing its CPU with kswapd,
        // or one that took a long direct reclaim, finishes last and sets the elapsed time.
        let mut f = finished.clone();
        f.sort_unstable();
        let s = |ns: u64| serde_json::Value::from(ns as f64 / 1e9);
        doc.runs[0].extra.insert(
            "reader_finish_seconds".into(),
            serde_json::json!({"min": s(f[0]), "median": s(f[f.len() / 2]), "max": s(f[f.len() - 1])}),
        );
    }
    (e.k, doc)
}
