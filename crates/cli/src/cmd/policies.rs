//! `reclaimlab policies`: the kernel presets and the policies (patch series), one line each.

use crate::output;
use anyhow::Result;
use std::process::ExitCode;

pub fn run() -> Result<ExitCode> {
    // The table's own listing (core's policy table), one line per preset and per patch.
    let s = format!("{}\n", reclaimlab_core::policy::listing().trim_end());
    output::write(&s);
    Ok(ExitCode::SUCCESS)
}
