//! `reclaimlab scenarios [NAME]`: the shipped scenarios with their descriptions, or one
//! scenario's TOML.

use crate::cli::ScenariosArgs;
use crate::output;
use anyhow::Result;
use std::process::ExitCode;

pub fn run(a: ScenariosArgs) -> Result<ExitCode> {
    match a.name {
        Some(n) => {
            let (_, text) = reclaimlab_core::scenario::locate(&n)?;
            output::write(&text);
        }
        None => {
            let mut s = String::new();
            for (n, text) in reclaimlab_core::scenario::BUILTIN {
                let desc = text
                    .lines()
                    .find_map(|l| l.strip_prefix("description = "))
                    .unwrap_or("")
                    .trim_matches('"');
                s.push_str(&format!("{n:<17} {desc}\n"));
            }
            output::write(&s);
        }
    }
    Ok(ExitCode::SUCCESS)
}
