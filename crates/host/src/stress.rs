//! The `stress-vm` workload: the distribution's stress-ng, vm stressor with `--vm-keep`, run
//! inside the memcg.
//!
//! Decisions (checked against stress-ng 0.15.06, see docs/host-backend.md):
//! - `--vm-bytes` is the total over all `--vm` workers (each gets bytes / workers), although
//!   `--help` says "per vm worker"; `workload.bytes` is passed through as the total.
//! - `--no-madvise` (default on, `workload.no_madvise`) stops the random madvise() advice stress-ng
//!   applies to each buffer, which otherwise adds MADV_PAGEOUT/COLD/DONTNEED-driven reclaim and
//!   swap traffic that has nothing to do with limit reclaim.
//! - Throughput is `bogo-ops-per-second-real-time` of the vm stressor from `--yaml`.
//! - Pinning: a CPU list becomes `--taskset LIST` (stress-ng and all its workers are confined to
//!   the set; stress-ng does not place one worker per CPU).

use crate::cleanup::remove_file;
use crate::proc::{Ended, JoinMemcg};
use crate::workload::{Env, HostConfig, HostWorkload, Meter, Outcome};
use anyhow::{bail, Context, Result};
use reclaimlab_core::scenario::{CpuSet, StressVm as Spec};
use reclaimlab_core::{Scenario, Throughput};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

pub struct StressVm {
    bin: String,
    args: Vec<String>,
    yaml: PathBuf,
    log: PathBuf,
    version: Option<String>,
}

/// `2G`, `300M`, or a byte count, as stress-ng reads sizes.
fn size_arg(b: u64) -> String {
    if b & ((1 << 30) - 1) == 0 {
        format!("{}G", b >> 30)
    } else if b & ((1 << 20) - 1) == 0 {
        format!("{}M", b >> 20)
    } else if b & 1023 == 0 {
        format!("{}K", b >> 10)
    } else {
        b.to_string()
    }
}

/// The stress-ng arguments for the scenario (without the binary).
pub fn args_for(w: &Spec, duration_ns: u64, yaml: &str) -> Vec<String> {
    let secs = duration_ns.div_ceil(1_000_000_000).max(1);
    let mut a: Vec<String> = vec![
        "--vm".into(),
        w.workers.to_string(),
        "--vm-bytes".into(),
        size_arg(w.bytes_total),
        "--vm-keep".into(),
        "--vm-method".into(),
        w.method.clone(),
        "--timeout".into(),
        format!("{secs}s"),
        "--metrics-brief".into(),
    ];
    if w.no_madvise {
        a.push("--no-madvise".into());
    }
    if let CpuSet::List(l) = &w.cpus {
        let mut l = l.clone();
        l.sort();
        l.dedup();
        let s: Vec<String> = l.iter().map(|c| c.to_string()).collect();
        a.push("--taskset".into());
        a.push(s.join(","));
    }
    a.push("--yaml".into());
    a.push(yaml.into());
    a
}

/// `bogo-ops-per-second-real-time` (and friends) of the vm stressor in stress-ng's YAML output.
pub fn parse_yaml_metrics(text: &str) -> Option<(f64, serde_json::Value)> {
    let mut in_vm = false;
    let mut found = serde_json::Map::new();
    for l in text.lines() {
        let t = l.trim();
        if let Some(name) = t.strip_prefix("- stressor:") {
            in_vm = name.trim() == "vm";
            continue;
        }
        if !in_vm {
            continue;
        }
        if let Some((k, v)) = t.split_once(':') {
            if let Ok(x) = v.trim().parse::<f64>() {
                found.insert(k.trim().to_string(), x.into());
            }
        }
    }
    let real = found.get("bogo-ops-per-second-real-time")?.as_f64()?;
    Some((real, serde_json::Value::Object(found)))
}

impl StressVm {
    pub fn new(w: &Spec, scn: &Scenario, cfg: &HostConfig) -> StressVm {
        let base =
            std::env::temp_dir().join(format!("reclaimlab-{}-stress-ng", std::process::id()));
        let yaml = base.with_extension("yaml");
        let log = base.with_extension("log");
        StressVm {
            bin: cfg.stress_ng.clone(),
            args: args_for(w, scn.run.duration_ns, &yaml.to_string_lossy()),
            yaml,
            log,
            version: None,
        }
    }

    fn last_log_lines(&self) -> String {
        let t = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(8)..].join("\n")
    }
}

impl HostWorkload for StressVm {
    fn check(&mut self) -> Result<()> {
        let out = Command::new(&self.bin).arg("--version").output();
        match out {
            Ok(o) if o.status.success() => {
                self.version = Some(String::from_utf8_lossy(&o.stdout).trim().to_string());
                Ok(())
            }
            Ok(o) => {
                // Say what happened even when the program printed nothing (e.g. /bin/false).
                let said = String::from_utf8_lossy(if o.stderr.is_empty() {
                    &o.stdout
                } else {
                    &o.stderr
                })
                .trim()
                .to_string();
                bail!(
                    "{} --version failed ({}){}: host.stress_ng must name stress-ng",
                    reclaimlab_core::units::clip(&self.bin),
                    o.status,
                    if said.is_empty() {
                        " and printed nothing".to_string()
                    } else {
                        // Its first line names the program (e.g. "false (GNU coreutils) 9.1").
                        format!(
                            ": {}",
                            reclaimlab_core::units::clip_raw(said.lines().next().unwrap_or(""))
                        )
                    }
                )
            }
            Err(e) => bail!(
                "cannot run {} ({e}): the stress-vm scenario needs the distribution's stress-ng: \
                 apt-get install stress-ng (or set host.stress_ng to its path)",
                self.bin
            ),
        }
    }

    fn command(&self) -> Option<String> {
        Some(format!("{} {}", self.bin, self.args.join(" ")))
    }

    fn version(&self) -> Option<String> {
        self.version.clone()
    }

    fn oom_note(&self) -> &'static str {
        " (stress-ng restarts killed workers, so bogo ops/s is noisy)"
    }

    fn run(&mut self, env: &Env, meter: &mut Meter) -> Result<Outcome> {
        if env.index == 0 {
            for p in [self.yaml.clone(), self.log.clone()] {
                env.cleanup
                    .defer(format!("remove {}", p.display()), move || remove_file(&p))?;
            }
        }
        remove_file(&self.yaml)?;
        let log = std::fs::File::create(&self.log)
            .with_context(|| format!("creating {}", self.log.display()))?;
        let join = JoinMemcg::new(env.cg)?;
        let mut cmd = Command::new(&self.bin);
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        // SAFETY: in_child only makes async-signal-safe syscalls.
        unsafe { cmd.pre_exec(move || join.in_child()) };

        meter.start()?;
        let (child, undo) = crate::proc::spawn(env.cleanup, "stress-ng", &mut cmd)?;
        env.started()?;

        let t0 = std::time::Instant::now();
        let total = env.duration.as_secs_f64().max(1e-9);
        let ended = child.wait_until(env.deadline(env.duration), &mut || {
            (env.progress)(t0.elapsed().as_secs_f64() / total)
        })?;
        meter.stop();
        let Some(ended) = ended else {
            undo.run()?;
            bail!(
                "stress-ng did not finish within run.duration + host.grace ({:.0}s); killed it. \
                 Last output:\n{}",
                (env.duration + env.grace).as_secs_f64(),
                self.last_log_lines()
            );
        };
        // Reaped: nothing left for the undo (workers that outlive stress-ng die with the memcg).
        undo.run()?;

        let mut out = Outcome {
            completed: ended.ok(),
            throughput: Throughput {
                value: 0.0,
                unit: "bogo_ops_per_sec".into(),
            },
            ..Default::default()
        };
        match std::fs::read_to_string(&self.yaml)
            .ok()
            .and_then(|t| parse_yaml_metrics(&t))
        {
            Some((ops, all)) => {
                out.throughput.value = ops;
                out.extra.insert("stress_ng_metrics".into(), all);
            }
            None => {
                out.completed = false;
                out.notes
                    .push("stress-ng wrote no vm metrics: throughput unknown".into());
            }
        }
        if ended != Ended::Exited(0) {
            out.notes.push(format!(
                "stress-ng {}; last output:\n{}",
                ended.describe(),
                self.last_log_lines()
            ));
        }
        remove_file(&self.yaml)?;
        remove_file(&self.log)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_core::scenario::AllTag;

    #[test]
    fn command_line() {
        let w = Spec {
            workers: 2,
            bytes_total: 300 << 20,
            cpus: CpuSet::All(AllTag::All),
            method: "all".into(),
            no_madvise: true,
        };
        assert_eq!(
            args_for(&w, 8_000_000_000, "x.yaml").join(" "),
            "--vm 2 --vm-bytes 300M --vm-keep --vm-method all --timeout 8s --metrics-brief \
             --no-madvise --yaml x.yaml"
        );
        let w = Spec {
            cpus: CpuSet::List(vec![1, 0, 1]),
            no_madvise: false,
            bytes_total: (2 << 30) + 4096,
            ..w
        };
        assert_eq!(
            args_for(&w, 1_500_000_000, "y").join(" "),
            "--vm 2 --vm-bytes 2097156K --vm-keep --vm-method all --timeout 2s --metrics-brief \
             --taskset 0,1 --yaml y"
        );
    }

    #[test]
    fn yaml_metrics() {
        let y = "---\nsystem-info:\n      stress-ng-version: 0.15.06\n\nmetrics:\n    - stressor: vm\n      bogo-ops: 836464\n      bogo-ops-per-second-usr-sys-time: 105093.900070\n      bogo-ops-per-second-real-time: 208045.010426\n      wall-clock-time: 4.020591\n...\n";
        let (v, all) = parse_yaml_metrics(y).unwrap();
        assert!((v - 208045.010426).abs() < 1e-6);
        assert_eq!(all["bogo-ops"], 836464.0);
        assert!(parse_yaml_metrics("---\nmetrics:\n").is_none());
    }
}
