//! Validation suites: a TOML file listing configurations, each a scenario with
//! `--set` overrides, that `reclaimlab validate --suite FILE` runs on the host and in the
//! simulator. Format (see validation/default.toml):
//!
//! ```toml
//! description = "..."
//! scenario = "anon-sweep"              # default scenario of every configuration
//! sets = ["run.duration=15s"]          # applied to every configuration first
//!
//! [[config]]
//! name = "two processes pinned to CPUs 0 and 1"
//! sets = ["workload.processes=2", "workload.cpus=[0,1]"]
//! # scenario = "..."                   # optional, overrides the default
//! ```
//!
//! A scenario given as a relative path to a `.toml` file is relative to the suite's directory.

use crate::source::ScenarioError;
use serde::Serialize;
use std::path::Path;
use toml_edit::{ImDocument, Item, Table, Value};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SuiteConfig {
    pub name: String,
    /// Scenario name or path.
    pub scenario: String,
    /// The suite's common sets, then the configuration's own.
    pub sets: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Suite {
    pub file: String,
    pub description: String,
    pub configs: Vec<SuiteConfig>,
}

fn err(file: &str, m: impl std::fmt::Display) -> ScenarioError {
    ScenarioError(format!("{file}: {m}"))
}

fn string(file: &str, t: &Table, key: &str, what: &str) -> Result<Option<String>, ScenarioError> {
    match t.get(key) {
        None => Ok(None),
        Some(Item::Value(Value::String(s))) => Ok(Some(s.value().clone())),
        Some(_) => Err(err(file, format!("{what}{key} must be a string"))),
    }
}

fn strings(file: &str, t: &Table, key: &str, what: &str) -> Result<Vec<String>, ScenarioError> {
    match t.get(key) {
        None => Ok(vec![]),
        Some(Item::Value(Value::Array(a))) => a
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.value().clone()),
                _ => Err(err(
                    file,
                    format!("{what}{key} must be a list of \"KEY=VALUE\" strings"),
                )),
            })
            .collect(),
        Some(_) => Err(err(
            file,
            format!("{what}{key} must be a list of \"KEY=VALUE\" strings"),
        )),
    }
}

fn only(file: &str, t: &Table, keys: &[&str], what: &str) -> Result<(), ScenarioError> {
    for (k, _) in t.iter() {
        if !keys.contains(&k) {
            return Err(err(
                file,
                format!("unknown key {what}{k} (known: {})", keys.join(", ")),
            ));
        }
    }
    Ok(())
}

impl Suite {
    pub fn load(path: &Path) -> Result<Suite, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| err(&file, format!("cannot read suite: {e}")))?;
        Suite::parse(&file, &text, path.parent().unwrap_or(Path::new(".")))
    }

    /// Parse suite text; relative `.toml` scenario paths are taken relative to `dir`.
    pub fn parse(file: &str, text: &str, dir: &Path) -> Result<Suite, ScenarioError> {
        let doc = ImDocument::parse(text.to_string()).map_err(|e| {
            err(
                file,
                format!(
                    "not valid TOML: {}",
                    crate::units::clip_lines(&e.to_string())
                ),
            )
        })?;
        let top = doc.as_table();
        only(
            file,
            top,
            &["description", "scenario", "sets", "config"],
            "",
        )?;
        let description = string(file, top, "description", "")?.unwrap_or_default();
        let default_scenario = string(file, top, "scenario", "")?;
        let common = strings(file, top, "sets", "")?;
        let tables = match top.get("config") {
            Some(Item::ArrayOfTables(a)) => a.iter().collect::<Vec<_>>(),
            _ => {
                return Err(err(
                    file,
                    "no [[config]] tables: a suite lists configurations",
                ))
            }
        };
        let mut configs = Vec::new();
        for (i, t) in tables.into_iter().enumerate() {
            let what = format!("config[{i}].");
            only(file, t, &["name", "scenario", "sets"], &what)?;
            let name = string(file, t, "name", &what)?
                .ok_or_else(|| err(file, format!("{what}name is missing")))?;
            if configs.iter().any(|c: &SuiteConfig| c.name == name) {
                return Err(err(
                    file,
                    format!("two configurations named {}", crate::units::clip(&name)),
                ));
            }
            let scenario = string(file, t, "scenario", &what)?
                .or_else(|| default_scenario.clone())
                .ok_or_else(|| {
                    err(
                        file,
                        format!("{what}scenario is missing (and the suite sets no default)"),
                    )
                })?;
            let scenario = if scenario.ends_with(".toml") && Path::new(&scenario).is_relative() {
                dir.join(&scenario).display().to_string()
            } else {
                scenario
            };
            let mut sets = common.clone();
            sets.extend(strings(file, t, "sets", &what)?);
            configs.push(SuiteConfig {
                name,
                scenario,
                sets,
            });
        }
        Ok(Suite {
            file: file.to_string(),
            description,
            configs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_defaults_and_common_sets() {
        let s = Suite::parse(
            "s.toml",
            "scenario = \"anon-sweep\"\nsets = [\"run.duration=1s\"]\n\
             [[config]]\nname = \"a\"\nsets = [\"workload.processes=2\"]\n\
             [[config]]\nname = \"b\"\nscenario = \"x.toml\"\n",
            Path::new("/v"),
        )
        .unwrap();
        assert_eq!(s.configs.len(), 2);
        assert_eq!(s.configs[0].scenario, "anon-sweep");
        assert_eq!(
            s.configs[0].sets,
            vec!["run.duration=1s", "workload.processes=2"]
        );
        assert_eq!(s.configs[1].scenario, "/v/x.toml");
        assert_eq!(s.configs[1].sets, vec!["run.duration=1s"]);
    }

    #[test]
    fn rejects_mistakes() {
        let e = |t: &str| Suite::parse("s.toml", t, Path::new(".")).unwrap_err().0;
        assert!(e("[[config]]\nname = \"a\"\n").contains("scenario is missing"));
        assert!(e("scenario = \"x\"\n").contains("no [[config]]"));
        assert!(e("scenario = \"x\"\n[[config]]\nname = \"a\"\nset = []\n")
            .contains("unknown key config[0].set"));
        assert!(
            e("scenario = \"x\"\n[[config]]\nname = \"a\"\n[[config]]\nname = \"a\"\n")
                .contains("two configurations named")
        );
        assert!(
            e("scenario = \"x\"\n[[config]]\nname = \"a\"\nsets = [1]\n")
                .contains("list of \"KEY=VALUE\"")
        );
    }

    #[test]
    fn default_suite_loads_and_every_config_resolves() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../validation");
        let s = Suite::load(&dir.join("default.toml")).unwrap();
        assert!(s.configs.len() >= 8, "{}", s.configs.len());
        for c in &s.configs {
            crate::Scenario::load(&c.scenario, &c.sets, crate::Target::Sim)
                .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        }
    }
}
