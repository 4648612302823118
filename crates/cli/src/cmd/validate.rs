//! `reclaimlab validate`: a scenario on the host and in the simulator modelling this machine,
//! compared per stolen page; `--suite FILE` runs every configuration of a suite (`suite`).

pub mod host_sim;
mod stored;
pub mod suite;

use super::{push_profile, read_doc};
use crate::cli::ValidateArgs;
use crate::output::{self, ValidateReport};
use anyhow::{bail, Result};
use std::process::ExitCode;

/// The directory of the data file the runs read and write (`workload.dir` of a file workload;
/// the first configuration of a suite that has one), if any.
fn data_dir(
    suite: Option<&std::path::Path>,
    scenario: Option<&str>,
    sets: &[String],
) -> Result<Option<std::path::PathBuf>> {
    let runs: Vec<(String, Vec<String>)> = match (suite, scenario) {
        (Some(f), _) => reclaimlab_core::suite::Suite::load(f)?
            .configs
            .into_iter()
            .map(|c| {
                let mut v = c.sets;
                v.extend(sets.iter().cloned());
                (c.scenario, v)
            })
            .collect(),
        (None, Some(n)) => vec![(n.to_string(), sets.to_vec())],
        (None, None) => Vec::new(),
    };
    for (name, sets) in runs {
        // Resolved only to read workload.dir (the runs check every key themselves).
        let s = reclaimlab_core::Scenario::load(&name, &sets, reclaimlab_core::Target::Sim)?;
        if let Some(dir) = s.workload.data_dir() {
            return Ok(Some(std::path::PathBuf::from(dir)));
        }
    }
    Ok(None)
}

pub fn run(a: ValidateArgs) -> Result<ExitCode> {
    let ValidateArgs {
        scenario,
        mut sets,
        profile,
        suite,
        repeat,
        swap,
        host_result,
        background_from_host,
        placement_from_host,
        sim_seeds,
        calibrate: session,
        out,
        resume,
        ..
    } = a;
    let profile = if session {
        let Some(o) = out.out.as_deref() else {
            bail!("--calibrate writes the session's profile beside --out FILE: give --out");
        };
        // The disk under a swap file, or under a file workload's data file, is measured too:
        // its latency is the block rows' and the file writers' clock.
        let disk = match &swap {
            Some(reclaimlab_host::SwapRequest::File { dir, .. }) => Some(dir.clone()),
            _ => data_dir(suite.as_deref(), scenario.as_deref(), &sets)?,
        };
        Some(super::calibrate::session_profile(
            profile.as_deref(),
            o,
            disk.as_deref(),
        )?)
    } else {
        profile
    };
    push_profile(&mut sets, profile);
    let from_host = host_sim::FromHost {
        background: background_from_host,
        placement: placement_from_host,
        seeds: sim_seeds,
    };
    out.check()?;
    if let Some(f) = suite {
        return suite::run_suite(
            &f,
            &sets,
            suite::SuiteRun {
                repeat,
                swap,
                host_from: host_result.as_deref(),
                format: out.format,
                out_resume: out.out.as_deref().map(|p| (p, resume)),
                from_host,
            },
        );
    }
    let v = host_sim::host_and_sim(
        &scenario.unwrap_or_default(),
        &sets,
        repeat,
        swap,
        host_result.as_deref().map(read_doc).transpose()?,
        out.json,
        from_host,
    )?;
    let rows = reclaimlab_core::validate::ratio_table(&v.host, &v.sim);
    if let Some(p) = &out.out {
        let doc = serde_json::json!({"host": v.host, "sim": v.sim, "rows": rows,
            "background_from_host": v.background, "placement_from_host": v.placements});
        output::file::write_atomic(p, serde_json::to_string_pretty(&doc)?.as_bytes())?;
    }
    let r = ValidateReport {
        rows: &rows,
        host: &v.host,
        sim: &v.sim,
        placements: v.placements.as_deref(),
        background: from_host.background.then_some(v.background.as_ref()),
    };
    output::print(&r, out.format)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::data_dir;
    use std::path::{Path, PathBuf};

    fn suite(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../validation")
            .join(name)
    }

    #[test]
    fn the_disk_calibrate_measures_is_the_data_files() {
        let file = suite("file.toml");
        assert_eq!(
            data_dir(Some(&file), None, &[]).unwrap(),
            Some(PathBuf::from("/var/tmp"))
        );
        let sets = vec!["workload.dir=/srv/data".to_string()];
        assert_eq!(
            data_dir(Some(&file), None, &sets).unwrap(),
            Some(PathBuf::from("/srv/data"))
        );
        // Anonymous memory has no data file.
        assert_eq!(
            data_dir(Some(&suite("default.toml")), None, &[]).unwrap(),
            None
        );
        assert_eq!(data_dir(None, Some("stress-vm"), &[]).unwrap(), None);
        assert_eq!(
            data_dir(None, Some("file-reclaim"), &[]).unwrap(),
            Some(PathBuf::from("/var/tmp"))
        );
    }
}
