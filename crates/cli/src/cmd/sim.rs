//! `reclaimlab sim`: one scenario in the model of the kernel's reclaim path.

use super::{emit, finish_scenario, push_profile};
use crate::cli::SimArgs;
use crate::progress::{fraction_bar, sim_progress_text};
use anyhow::Result;
use reclaimlab_core::{Scenario, Target};
use std::process::ExitCode;

pub fn run(a: SimArgs) -> Result<ExitCode> {
    let SimArgs {
        mut scn,
        kernel,
        patches,
        seed,
        profile,
        out,
    } = a;
    push_profile(&mut scn.sets, profile);
    if let Some(k) = kernel {
        scn.sets.push(format!("kernel.preset={k:?}"));
    }
    if !patches.is_empty() {
        let list: Vec<String> = patches.iter().map(|p| format!("{p:?}")).collect();
        scn.sets
            .push(format!("kernel.patches=[{}]", list.join(",")));
    }
    if let Some(s) = seed {
        scn.sets.push(format!("run.seed={s}"));
    }
    out.check()?;
    let scenario = Scenario::load(&scn.scenario, &scn.sets, Target::Sim)?;
    reclaimlab_host::workload::HostConfig::check_section(&scenario)?;
    let bar = fraction_bar(out.json);
    let cb = |done: u64, total: u64| {
        if let Some(b) = &bar {
            // The bar moves by simulated milliseconds; the text says seconds.
            b.set_length(total / 1_000_000);
            b.set_position(done / 1_000_000);
            b.set_message(sim_progress_text(done, total));
        }
    };
    // SimOptions grows fields the CLI leaves at their defaults.
    #[allow(clippy::needless_update)]
    let opts = reclaimlab_sim::SimOptions {
        progress: Some(&cb),
        ..Default::default()
    };
    let doc = finish_scenario(&scenario, reclaimlab_sim::run(&scenario, &opts))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    emit(&doc, &out)?;
    Ok(ExitCode::SUCCESS)
}
