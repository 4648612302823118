//! `file-mmap-rw`: threads pinned per CPU read (with `write`, also write) a shared file mapping
//! larger than the memcg limit for `run.duration`; throughput is pages touched per second.

use super::{
    check_dir, create_data_file, finish, maybe_hang, parse_result, pin, report_sweeps, touch_until,
    wait_line, Mapping,
};
use crate::proc::fork_in_memcg;
use crate::workload::{Env, HostWorkload, Meter, Outcome};
use anyhow::Result;
use reclaimlab_core::scenario::{FileMmapRw as Spec, Pattern};
use reclaimlab_core::Throughput;
use std::time::{Duration, Instant};

pub struct FileMmapRw {
    spec: Spec,
}

impl FileMmapRw {
    pub fn new(spec: &Spec) -> FileMmapRw {
        FileMmapRw { spec: spec.clone() }
    }
}

/// Pages touched by thread `t` of `threads` in `dur`.
fn sweep(map: &Mapping, spec: &Spec, t: usize, dur: Duration, seed: u64) -> u64 {
    let n = map.pages().max(1);
    let end = Instant::now() + dur;
    let mut i = n * t / spec.threads;
    let mut x = seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(t as u64 + 1)) | 1;
    touch_until(end, || {
        let page = match spec.pattern {
            Pattern::Sequential => {
                i += 1;
                if i >= n {
                    i = 0;
                }
                i
            }
            Pattern::Random => {
                // xorshift64*
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                (x.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
            }
        };
        map.touch(page, spec.write);
    })
}

fn worker(
    spec: &Spec,
    path: &std::path::Path,
    dur: Duration,
    seed: u64,
    mut to: std::fs::File,
) -> Result<()> {
    maybe_hang();
    let map = Mapping::map(path, spec.write)?;
    let spec = spec.clone();
    report_sweeps(
        spec.threads,
        move |t| {
            pin(spec.cpus.for_worker(t))?;
            Ok(sweep(&map, &spec, t, dur, seed))
        },
        &mut to,
    )
}

impl HostWorkload for FileMmapRw {
    fn check(&mut self) -> Result<()> {
        check_dir(&self.spec.dir)
    }

    fn data_dir(&self) -> Option<&std::path::Path> {
        Some(std::path::Path::new(&self.spec.dir))
    }

    fn run(&mut self, env: &Env, meter: &mut Meter) -> Result<Outcome> {
        let (path, file_undo) =
            create_data_file(env.cleanup, &self.spec.dir, env.index, self.spec.file_bytes)?;
        // Every repetition starts with none of the file cached.
        super::page_cache::drop_file_cache(&path)?;
        let (spec, p2, dur, seed) = (self.spec.clone(), path.clone(), env.duration, env.seed);
        meter.start()?;
        let t0 = Instant::now();
        let (mut w, undo) = fork_in_memcg(
            env.cg,
            env.cleanup,
            "file-mmap-rw worker",
            move |_from, to| worker(&spec, &p2, dur, seed, to),
        )?;
        env.started()?;
        let mut buf = Vec::new();
        let line = wait_line(&mut w, &mut buf, env, env.duration, "file-mmap-rw")?;
        let secs = t0.elapsed().as_secs_f64();
        meter.stop();
        let ended = finish(&mut w, env)?;
        undo.run()?;
        let mut out = Outcome {
            throughput: Throughput {
                value: 0.0,
                unit: "pages_per_sec".into(),
            },
            completed: ended.ok() && line.is_some(),
            ..Default::default()
        };
        match parse_result(line.as_deref()) {
            Some(per) => {
                let total: u64 = per.iter().sum();
                out.throughput.value = total as f64 / env.duration.as_secs_f64();
                out.extra.insert("pages_touched".into(), total.into());
                out.extra
                    .insert("pages_touched_per_thread".into(), per.into());
                out.extra.insert("worker_seconds".into(), secs.into());
            }
            None => out.notes.push(format!(
                "the worker {} before it reported",
                ended.describe()
            )),
        }
        // What the kernel built the page cache from, then drop it (and its dirty pages'
        // writeback) before the next repetition.
        super::page_cache::record(&path, &self.spec.dir, &mut out.extra);
        super::page_cache::drop_file_cache(&path)?;
        file_undo.run()?;
        Ok(out)
    }
}
