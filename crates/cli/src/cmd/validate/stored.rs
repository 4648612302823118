//! Stored suite results (`validate --suite ... --out FILE`): `--resume` keeps the
//! configurations an interrupted run finished, `--host-result` reuses their host runs.

use super::host_sim::FromHost;
use anyhow::Result;
use reclaimlab_core::suite::Suite;
use reclaimlab_core::ResultDoc;
use std::path::Path;

/// Configurations an interrupted `validate --suite --out FILE` finished, by name, when FILE
/// belongs to the same suite, repeat and --set: (sets, seconds, host, sim).
pub type Kept = std::collections::BTreeMap<String, (Vec<String>, f64, ResultDoc, ResultDoc)>;

pub fn kept(
    p: &Path,
    suite: &Suite,
    repeat: u64,
    cli_sets: &[String],
    from: FromHost,
) -> Result<Kept> {
    let v = read_suite_result(p, "--resume")?;
    if v["suite"] != serde_json::json!(suite.file)
        || v["repeat"] != serde_json::json!(repeat)
        || v["cli_sets"] != serde_json::json!(cli_sets)
        || v["background_from_host"].as_bool().unwrap_or(false) != from.background
        || v["placement_from_host"].as_bool().unwrap_or(false) != from.placement
    {
        anyhow::bail!(
            "--resume: {} belongs to a different run (suite, --repeat, --set, \
             --background-from-host or --placement-from-host differ)",
            p.display()
        );
    }
    Ok(stored_configs(&v))
}

fn read_suite_result(p: &Path, flag: &str) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(p)
        .map_err(|e| anyhow::anyhow!("{flag}: cannot read {}: {e}", p.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{flag}: {} is not a suite result: {e}", p.display()))?;
    if !v["configs"].is_array() {
        anyhow::bail!(
            "{flag}: {} is not a suite result (no \"configs\"; write one with validate --suite ... --out FILE)",
            p.display()
        );
    }
    Ok(v)
}

/// The configurations of a stored suite result that finished with both documents.
fn stored_configs(v: &serde_json::Value) -> Kept {
    let mut out = Kept::new();
    for c in v["configs"].as_array().into_iter().flatten() {
        let (Some(name), Some(h), Some(s)) = (c["name"].as_str(), c.get("host"), c.get("sim"))
        else {
            continue;
        };
        if !c["error"].is_null() {
            continue;
        }
        let sets: Vec<String> = serde_json::from_value(c["sets"].clone()).unwrap_or_default();
        let (Ok(h), Ok(s)) = (
            serde_json::from_value::<ResultDoc>(h.clone()),
            serde_json::from_value::<ResultDoc>(s.clone()),
        ) else {
            continue;
        };
        out.insert(
            name.to_string(),
            (sets, c["seconds"].as_f64().unwrap_or(0.0), h, s),
        );
    }
    out
}

/// The sets that reach the host: `sim.*` keys describe the machine to the simulator only (the
/// host ignores them), so a suite may add or change them after its host run was stored. A
/// key renamed since is read under its new name (`host.hold` is now `workload.hold`).
fn host_sets(sets: &[String]) -> Vec<String> {
    sets.iter()
        .filter(|s| !s.starts_with("sim."))
        .map(|s| match s.strip_prefix("host.hold=") {
            Some(v) => format!("workload.hold={v}"),
            None => s.clone(),
        })
        .collect()
}

/// `--host-result SUITE.json` with `--suite`: each configuration's stored host document, by
/// name. A configuration must be stored with the suite's own sets, `sim.*` keys aside (the
/// stored run's --set may differ: they are the simulator's business now), so a host run is
/// never matched to another configuration.
pub fn host_from(p: &Path, suite: &Suite) -> Result<std::collections::BTreeMap<String, ResultDoc>> {
    let v = read_suite_result(p, "--host-result")?;
    let stored = stored_configs(&v);
    let mut out = std::collections::BTreeMap::new();
    let mut missing = Vec::new();
    for c in &suite.configs {
        match stored.get(&c.name) {
            Some((sets, _, h, _)) if host_sets(sets).starts_with(&host_sets(&c.sets)) => {
                out.insert(c.name.clone(), h.clone());
            }
            Some(_) => anyhow::bail!(
                "--host-result: configuration {:?} in {} was run with other sets than the suite gives",
                c.name,
                p.display()
            ),
            None => missing.push(c.name.clone()),
        }
    }
    if !missing.is_empty() {
        anyhow::bail!(
            "--host-result: {} has no finished host run for {}",
            p.display(),
            missing
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::host_sets;

    #[test]
    fn a_stored_host_hold_is_read_as_workload_hold_and_sim_keys_are_left_out() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let stored = v(&["memcg.limit=2G", "sim.tick=1ms", "host.hold=sleep"]);
        let suite = v(&["memcg.limit=2G", "workload.hold=sleep", "sim.cgroup=v1"]);
        assert_eq!(host_sets(&stored), host_sets(&suite));
        assert_ne!(
            host_sets(&v(&["host.hold=spin"])),
            host_sets(&v(&["workload.hold=sleep"]))
        );
    }
}
