//! Property-based fuzzing of every loader a user can feed: `--set`, scenario files, result
//! documents (and `compare` on whatever loads), suite files and machine profiles. Each input
//! must give a value or an error of bounded length, never a panic.
//!
//! A few hundred cases per target run with the normal tests; a long run sets the case count:
//! `PROPTEST_CASES=250000 cargo test --release -p reclaimlab-core --test fuzz`
//! (docs/results/2026-11-25-robustness.md records one).

use proptest::prelude::*;
use reclaimlab_core::compare::compare;
use reclaimlab_core::mismatch::{config_differences, unusable};
use reclaimlab_core::profile::Profile;
use reclaimlab_core::result::{ResultDoc, RunResult, Throughput, SCHEMA};
use reclaimlab_core::scenario::BUILTIN;
use reclaimlab_core::suite::Suite;
use reclaimlab_core::{Scenario, Target};
use std::path::Path;

/// Longest acceptable error line: messages quote at most 100 characters of any input.
const MAX_LINE: usize = 700;

fn bounded(msg: &str) -> Result<(), TestCaseError> {
    for l in msg.lines() {
        prop_assert!(
            l.chars().count() <= MAX_LINE,
            "error line of {} characters: {}",
            l.len(),
            &l.chars().take(300).collect::<String>()
        );
    }
    Ok(())
}

const KEYS: &[&str] = &[
    "name",
    "description",
    "machine.cpus",
    "machine.arch",
    "machine.memory",
    "memcg.limit",
    "memcg.swappiness",
    "swap.size",
    "run.duration",
    "run.seed",
    "kernel.preset",
    "kernel.patches",
    "workload.kind",
    "workload.workers",
    "workload.bytes",
    "workload.cpus",
    "workload.method",
    "workload.no_madvise",
    "workload.file_bytes",
    "workload.reclaim_bytes",
    "workload.threads",
    "workload.processes",
    "workload.write",
    "workload.write_ratio",
    "workload.pattern",
    "workload.dir",
    "workload.records",
    "workload.record_bytes",
    "workload.read_ratio",
    "workload.zipf_theta",
    "workload.access",
    "workload.readers",
    "workload.sparse",
    "workload.readahead_pages",
    "sim.tlb_entries",
    "host.grace",
    "workload.bogus",
];

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        any::<u64>().prop_map(|v| v.to_string()),
        (0u64..70).prop_map(|b| (1u128 << b).to_string()),
        Just("0".to_string()),
        Just("-1".to_string()),
        any::<f64>().prop_map(|v| v.to_string()),
        prop::sample::select(vec![
            "inf", "-inf", "nan", "1e308", "-0.0", "7.0", "1e12", "0.5"
        ])
        .prop_map(str::to_string),
    ]
}

fn value() -> impl Strategy<Value = String> {
    let unit = prop::sample::select(vec![
        "", "K", "M", "G", "T", "P", "KiB", "b", "ns", "us", "ms", "s", "m", "min", "h", "x",
    ]);
    prop_oneof![
        4 => number(),
        4 => (number(), unit).prop_map(|(n, u)| format!("{n}{u}")),
        1 => prop::sample::select(vec![
            "all", "0-3,5", "[0,1]", "[0, 4096]", "3-1", "true", "false", "\"x\"", "[]", "{}",
            "[\"batch-dirty-flush\"]", "stress-vm", "anon-sweep", "random", "sequential",
            "pread", "arm64", "6.18", "4.2", "7.0", "[[1]]", "'", "\"", "=", "",
        ])
        .prop_map(str::to_string),
        1 => "\\PC{0,40}",
        1 => ("[a-z0-9.]{1,3}", 1usize..3000).prop_map(|(s, n)| s.repeat(n)),
    ]
}

fn set_arg() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (prop::sample::select(KEYS), value()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => "\\PC{0,60}",
        1 => ("[a-z]{1,8}\\.[a-z_]{1,12}", value()).prop_map(|(k, v)| format!("{k}={v}")),
    ]
}

fn result_doc() -> ResultDoc {
    let mut d = ResultDoc {
        schema: SCHEMA.into(),
        scenario: "stress-vm".into(),
        backend: "sim".into(),
        kernel: "sim-6.18".into(),
        policy: "6.18".into(),
        config: serde_json::json!({"machine": {"cpus": 2}, "kernel": {"preset": "6.18"}}),
        runs: vec![RunResult {
            counters: [
                ("tlb_shootdowns".to_string(), 10),
                ("pswpout".to_string(), 3),
            ]
            .into(),
            wall_seconds: 1.0,
            throughput: Throughput {
                value: 5.0,
                unit: "bogo_ops_per_sec".into(),
            },
            valid: true,
            ..Default::default()
        }],
        ..Default::default()
    };
    d.summarize();
    d
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
            .map_or(serde_json::Value::Null, serde_json::Value::Number)),
        "\\PC{0,20}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replace the value at a random path of `v` (objects and arrays), or a new key.
fn mutate(v: &mut serde_json::Value, path: &[usize], new: serde_json::Value) {
    match (v, path.split_first()) {
        (serde_json::Value::Object(m), Some((i, rest))) if !m.is_empty() => {
            let k = m.keys().nth(i % m.len()).cloned().expect("non-empty");
            mutate(m.get_mut(&k).expect("key"), rest, new);
        }
        (serde_json::Value::Array(a), Some((i, rest))) if !a.is_empty() => {
            let n = a.len();
            mutate(&mut a[i % n], rest, new);
        }
        (slot, _) => *slot = new,
    }
}

proptest! {
    #[test]
    fn set_parser(scn in prop::sample::select(BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>()),
                  sets in prop::collection::vec(set_arg(), 0..6),
                  host in any::<bool>()) {
        let target = if host {
            Target::Host { cpus: 2, memory_bytes: 24 << 30 }
        } else {
            Target::Sim
        };
        match Scenario::load(scn, &sets, target) {
            Ok(s) => {
                s.skip_section("sim");
                s.skip_section("host");
                if let Err(e) = s.finish() {
                    bounded(&e.to_string())?;
                }
                let _ = s.to_json();
            }
            Err(e) => bounded(&e.to_string())?,
        }
    }

    #[test]
    fn scenario_file(lines in prop::collection::vec(prop_oneof![
            set_arg().prop_map(|s| s.replacen('=', " = ", 1)),
            prop::sample::select(vec!["[workload]", "[memcg]", "[sim]", "[[x]]", "a.b = {c = 1}"])
                .prop_map(str::to_string),
            "\\PC{0,30}",
        ], 0..10)) {
        let text = lines.join("\n");
        let r = reclaimlab_core::Source::parse("fuzz.toml", &text)
            .and_then(|src| Scenario::resolve(src, Target::Sim));
        if let Err(e) = r {
            bounded(&e.to_string())?;
        }
    }

    #[test]
    fn result_loader(edits in prop::collection::vec(
            (prop::collection::vec(any::<usize>(), 0..4), json_value()), 0..4),
            cut in any::<Option<usize>>()) {
        let mut v = serde_json::to_value(result_doc()).expect("serializes");
        for (path, new) in edits {
            mutate(&mut v, &path, new);
        }
        let mut text = v.to_string();
        if let Some(c) = cut {
            let at = c % (text.len() + 1);
            text = text.chars().take(at).collect();
        }
        match ResultDoc::from_json(&text) {
            Ok(d) => {
                let good = result_doc();
                let bad: Vec<String> = [unusable("before", &good), unusable("after", &d)].concat();
                for b in &bad {
                    bounded(b)?;
                }
                for line in config_differences(&good, &d) {
                    bounded(&line)?;
                }
                let c = compare(&good, &d, true);
                let _ = c.markdown();
            }
            Err(e) => bounded(&e.to_string())?,
        }
    }

    #[test]
    fn suite_loader(parts in prop::collection::vec(prop_oneof![
            Just("[[config]]".to_string()),
            "[a-z-]{0,12}".prop_map(|n| format!("name = \"{n}\"")),
            prop::sample::select(BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>())
                .prop_map(|n| format!("scenario = \"{n}\"")),
            prop::collection::vec(set_arg(), 0..3)
                .prop_map(|s| format!("sets = {}", serde_json::to_string(&s).expect("strings"))),
            Just("description = \"d\"".to_string()),
            Just("scenario = \"missing.toml\"".to_string()),
            "\\PC{0,30}",
        ], 0..10)) {
        let text = parts.join("\n");
        match Suite::parse("fuzz-suite.toml", &text, Path::new(".")) {
            Ok(s) => {
                for c in &s.configs {
                    if let Err(e) = Scenario::load(&c.scenario, &c.sets, Target::Sim) {
                        bounded(&e.to_string())?;
                    }
                }
            }
            Err(e) => bounded(&e.to_string())?,
        }
    }

    #[test]
    fn profile_loader(parts in prop::collection::vec(prop_oneof![
            prop::sample::select(vec!["[profile]", "[machine]", "[machine.topology]",
                "[costs.ipi_send]", "[costs.x]", "provenance = \"measured\"",
                "provenance = \"estimate\"", "spread = [1.0, 2.0]"])
                .prop_map(str::to_string),
            prop::sample::select(vec!["name", "description", "arch", "cpus", "cpu_model",
                "ns", "provenance", "source", "raw", "spread", "samples", "kernel", "date",
                "sockets", "cores_per_socket", "threads_per_core"])
                .prop_flat_map(|k| value().prop_map(move |v| {
                    let v = if v.parse::<f64>().is_ok() { v } else { format!("{v:?}") };
                    format!("{k} = {v}")
                })),
            "\\PC{0,30}",
        ], 0..14)) {
        let text = parts.join("\n");
        match Profile::parse(&text, "fuzz.toml") {
            Ok(p) => {
                let again = Profile::parse(&p.to_toml().expect("serializes"), "again");
                prop_assert!(again.is_ok(), "a written profile reads back: {again:?}");
            }
            Err(e) => bounded(&format!("{e:#}"))?,
        }
    }
}
