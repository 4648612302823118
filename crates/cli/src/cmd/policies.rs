//! `reclaimlab policies`: the kernel presets and the policies (patch series), one line each.

use crate::output;
use anyhow::Result;
use reclaimlab_core::policy::{Patch, PRESETS};
use std::process::ExitCode;

pub fn run() -> Result<ExitCode> {
    let mut s = String::from("Kernel presets (--kernel):\n");
    for (name, patches, what) in PRESETS {
        let p: Vec<&str> = patches.iter().map(|p| p.name()).collect();
        s.push_str(&format!("  {name:<6} {what} [{}]\n", p.join(", ")));
    }
    s.push_str("Policies (--patch, or PRESET+NAME):\n");
    for p in Patch::ALL {
        s.push_str(&format!("  {:<24} {}\n", p.name(), p.summary()));
    }
    output::write(&s);
    Ok(ExitCode::SUCCESS)
}
