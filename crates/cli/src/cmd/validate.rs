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
        // A swap file's disk is measured too: its latency is the block rows' clock.
        let disk = match &swap {
            Some(reclaimlab_host::SwapRequest::File { dir, .. }) => Some(dir.as_path()),
            _ => None,
        };
        Some(super::calibrate::session_profile(
            profile.as_deref(),
            o,
            disk,
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
