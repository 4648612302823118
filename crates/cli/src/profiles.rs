//! `reclaimlab profiles [NAME|FILE]`: the shipped machine profiles, or one profile's costs with
//! their provenance.

use anyhow::Result;
use reclaimlab_core::profile::{self, LoadedProfile, Provenance, SHIPPED};
use serde_json::{json, Value};

fn counts_json(p: &LoadedProfile) -> Value {
    p.summary()["costs"].clone()
}

fn row(p: &LoadedProfile) -> Value {
    let m = &p.profile.machine;
    json!({
        "name": p.profile.profile.name,
        "origin": p.origin,
        "description": p.profile.profile.description,
        "cpu_model": m.cpu_model,
        "arch": m.arch,
        "cpus": m.cpus,
        "kernel": m.kernel,
        "date": m.date,
        "costs": counts_json(p),
        "sha256": p.sha256,
    })
}

/// Print the list (no name) or one profile in full.
pub fn run(name: Option<&str>, as_json: bool) -> Result<()> {
    match name {
        None => {
            let all: Vec<LoadedProfile> = SHIPPED
                .iter()
                .map(|(n, _)| profile::load(n))
                .collect::<Result<_>>()?;
            if as_json {
                let rows: Vec<Value> = all.iter().map(row).collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                print!("{}", list_table(&all));
            }
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
            if as_json {
                let mut v = row(&p);
                v["costs_detail"] = serde_json::to_value(&p.profile.costs)?;
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print!("{}", detail_table(&p));
            }
        }
    }
    Ok(())
}

fn list_table(all: &[LoadedProfile]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(crate::render::preset());
    t.set_header([
        "name",
        "CPU model",
        "arch",
        "CPUs",
        "kernel",
        "date",
        "measured",
        "published",
        "estimate",
    ]);
    for p in all {
        let c = p.profile.counts();
        let n = |k| c.get(&k).copied().unwrap_or(0).to_string();
        let m = &p.profile.machine;
        t.add_row([
            p.profile.profile.name.clone(),
            m.cpu_model.clone(),
            m.arch.clone(),
            m.cpus.to_string(),
            m.kernel.clone(),
            m.date.clone(),
            n(Provenance::Measured),
            n(Provenance::Published),
            n(Provenance::Estimate),
        ]);
    }
    format!("{t}\n")
}

fn detail_table(p: &LoadedProfile) -> String {
    let m = &p.profile.machine;
    let mut out = format!(
        "{} ({})\n{}\nCPU: {}, {} ({} CPUs), kernel {}, figures of {}\n",
        p.profile.profile.name,
        p.origin,
        p.profile.profile.description,
        m.cpu_model,
        m.arch,
        m.cpus,
        m.kernel,
        m.date
    );
    let mut t = comfy_table::Table::new();
    t.load_preset(crate::render::preset());
    // Wrap the long source column at the terminal's width (or 160 columns in a pipe).
    t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    if t.width().is_none() {
        t.set_width(160);
    }
    t.set_header(["cost", "ns", "provenance", "source"]);
    for (name, c) in &p.profile.costs {
        let mut src = c.source.clone();
        if let Some(r) = &c.raw {
            src.push_str(&format!(" [raw: {r}]"));
        }
        if let Some([lo, hi]) = c.spread {
            src.push_str(&format!(" [spread {lo}-{hi}]"));
        }
        t.add_row([
            name.clone(),
            format!("{}", c.ns),
            c.provenance.as_str().to_string(),
            src,
        ]);
    }
    out.push_str(&format!("{t}\n"));
    out
}
