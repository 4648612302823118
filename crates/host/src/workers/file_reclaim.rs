//! `file-reclaim` (seeds 001/004): populate a file through a shared read-only mapping held by
//! threads pinned one per CPU, then reclaim part of it from the memcg and time the reclaim.
//! Counters cover the reclaim only; the populate time is in `extra`.

use super::{check_dir, create_data_file, finish, maybe_hang, pin, wait_line, Mapping};
use crate::proc::fork_in_memcg;
use crate::workload::{Env, HostWorkload, Meter, Outcome};
use anyhow::{bail, Context, Result};
use reclaimlab_core::scenario::FileReclaim as Spec;
use reclaimlab_core::scenario::Hold;
use reclaimlab_core::Throughput;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub struct FileReclaim {
    spec: Spec,
    hold: Hold,
}

impl FileReclaim {
    pub fn new(spec: &Spec, scn: &reclaimlab_core::Scenario) -> Result<FileReclaim> {
        let hold = match &scn.workload {
            reclaimlab_core::Workload::FileReclaim(w) => w.hold,
            _ => bail!("file-reclaim's worker for another workload"),
        };
        Ok(FileReclaim {
            spec: spec.clone(),
            hold,
        })
    }
}

/// The worker process: populate, say `ready <seconds>`, hold the mapping until bench closes
/// the pipe.
fn worker(
    spec: &Spec,
    hold: Hold,
    path: &std::path::Path,
    mut from: std::fs::File,
    mut to: std::fs::File,
) -> Result<()> {
    maybe_hang();
    let map = Arc::new(Mapping::map(path, false)?);
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel::<Result<()>>();
    let t0 = Instant::now();
    let n = map.pages();
    let threads: Vec<_> = (0..spec.threads)
        .map(|t| {
            let (map, stop, tx) = (map.clone(), stop.clone(), tx.clone());
            let cpu = spec.cpus.for_worker(t);
            let (lo, hi) = (n * t / spec.threads, n * (t + 1) / spec.threads);
            std::thread::spawn(move || {
                let r = pin(cpu);
                if r.is_ok() {
                    for i in lo..hi {
                        map.touch(i, false);
                    }
                }
                let _ = tx.send(r);
                // Hold the mapping, on this CPU, until bench is done reclaiming.
                while !stop.load(Ordering::Relaxed) {
                    match hold {
                        Hold::Spin => std::hint::spin_loop(),
                        Hold::Sleep => std::thread::sleep(std::time::Duration::from_millis(20)),
                    }
                }
            })
        })
        .collect();
    for _ in 0..spec.threads {
        rx.recv().context("populating thread died")??;
    }
    writeln!(to, "ready {}", t0.elapsed().as_secs_f64())?;
    let mut sink = Vec::new();
    let _ = from.read_to_end(&mut sink); // until bench closes its end
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

impl HostWorkload for FileReclaim {
    fn check(&mut self) -> Result<()> {
        check_dir(&self.spec.dir)
    }

    fn data_dir(&self) -> Option<&std::path::Path> {
        Some(std::path::Path::new(&self.spec.dir))
    }

    fn run(&mut self, env: &Env, meter: &mut Meter) -> Result<Outcome> {
        let (path, file_undo) =
            create_data_file(env.cleanup, &self.spec.dir, env.index, self.spec.file_bytes)?;
        super::page_cache::drop_file_cache(&path)?;
        let (spec, hold) = (self.spec.clone(), self.hold);
        let p2 = path.clone();
        let (mut w, undo) = fork_in_memcg(
            env.cg,
            env.cleanup,
            "file-reclaim worker",
            move |from, to| worker(&spec, hold, &p2, from, to),
        )?;
        env.started()?;
        let mut buf = Vec::new();
        let mut out = Outcome {
            throughput: Throughput {
                value: 0.0,
                unit: "reclaim_seconds".into(),
            },
            ..Default::default()
        };
        // Populating 1G takes about a second here; allow run.duration for it (plus grace).
        let Some(line) = wait_line(&mut w, &mut buf, env, env.duration, "file-reclaim")? else {
            meter.start()?;
            meter.stop();
            let ended = finish(&mut w, env)?;
            out.notes
                .push(format!("the worker {} while populating", ended.describe()));
            undo.run()?;
            file_undo.run()?;
            return Ok(out);
        };
        let populate: f64 = line
            .strip_prefix("ready ")
            .and_then(|s| s.trim().parse().ok())
            .with_context(|| format!("unexpected worker line {line:?}"))?;
        let charged = env.cg.usage()?;
        meter.start()?;
        let took = env.cg.reclaim(self.spec.reclaim_bytes);
        meter.stop();
        let after = env.cg.usage()?;
        let took = took?;
        let ended = finish(&mut w, env)?;
        undo.run()?;
        out.completed = ended.ok();
        if !out.completed {
            out.notes.push(format!("the worker {}", ended.describe()));
        }
        if charged < self.spec.reclaim_bytes {
            bail!(
                "only {} bytes were charged to the memcg after populating {} bytes: the file's \
                 pages were not charged to it",
                charged,
                self.spec.file_bytes
            );
        }
        out.throughput.value = took.as_secs_f64();
        out.extra.insert("populate_seconds".into(), populate.into());
        out.extra
            .insert("charged_before_bytes".into(), charged.into());
        out.extra.insert("charged_after_bytes".into(), after.into());
        out.extra.insert(
            "reclaimed_bytes".into(),
            charged.saturating_sub(after).into(),
        );
        // The folios left after reclaim (sampling before would add a mapping to reclaim's
        // rmap walks), then drop them.
        super::page_cache::record(&path, &self.spec.dir, &mut out.extra);
        super::page_cache::drop_file_cache(&path)?;
        file_undo.run()?;
        Ok(out)
    }
}
