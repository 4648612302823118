//! `reclaimlab profiles [NAME|FILE]`: the shipped machine profiles, or one profile's costs with
//! their provenance.

use crate::cli::ProfilesArgs;
use crate::output::{self, Format, ProfilesReport};
use anyhow::Result;
use reclaimlab_core::profile::{self, LoadedProfile, SHIPPED};
use std::process::ExitCode;

/// Print the list (no name) or one profile in full.
pub fn run(a: ProfilesArgs) -> Result<ExitCode> {
    let format = if a.json { Format::Json } else { Format::Text };
    match a.name.as_deref() {
        None => {
            let all: Vec<LoadedProfile> = SHIPPED
                .iter()
                .map(|(n, _)| profile::load(n))
                .collect::<Result<_>>()?;
            output::print(&ProfilesReport::List(&all), format)?;
        }
        Some(n) => {
            let p = profile::load(n)?;
            // The same check a run makes: every cost must name a simulator cost.
            let arch = match p.profile.machine.arch.as_str() {
                "arm64" => reclaimlab_sim::arch::Arch::Arm64,
                _ => reclaimlab_sim::arch::Arch::X86,
            };
            reclaimlab_sim::cost::CostTable::for_arch(arch)
                .overlay(p.profile.costs.iter().map(|(k, c)| (k.as_str(), c.ns)))
                .map_err(|e| anyhow::anyhow!("profile {}: {e}", p.origin))?;
            output::print(&ProfilesReport::One(&p), format)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
