//! `reclaimlab check`: the exhaustive small-scope search for a store through a stale TLB entry;
//! exits 1 with the shortest counterexample.

use crate::cli::CheckArgs;
use crate::output::{self, CheckReport, Format};
use anyhow::Result;
use reclaimlab_check::{check, Arch, CheckConfig};
use std::process::ExitCode;

pub fn run(a: CheckArgs) -> Result<ExitCode> {
    let mut cfg = CheckConfig::new(&a.policy).map_err(anyhow::Error::msg)?;
    cfg.arch = Arch::parse(&a.arch).map_err(anyhow::Error::msg)?;
    if let Some(n) = a.cpus {
        cfg.cpus = n;
    }
    if let Some(n) = a.pages {
        cfg.pages = n;
    }
    if a.file_pages.is_some() {
        cfg.file_pages = a.file_pages;
    }
    if let Some(n) = a.passes {
        cfg.passes = n;
    }
    cfg.depth = a.depth;
    cfg.mprotect = a.mprotect;
    cfg.invlpgb = a.invlpgb;
    if a.flusher {
        cfg.flusher = true;
        cfg.file_pageout = false;
    }
    let report = check(&cfg).map_err(anyhow::Error::msg)?;
    let format = if a.json { Format::Json } else { Format::Text };
    output::print(&CheckReport(&report), format)?;
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
