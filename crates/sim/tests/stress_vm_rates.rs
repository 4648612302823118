//! stress-vm's rates that do not depend on where the method cycle stops.

use reclaimlab_core::{Scenario, Target};

#[test]
fn per_method_ops_add_up_and_every_worker_has_an_end_method() {
    let sets: Vec<String> = [
        "run.duration=1s",
        "machine.cpus=2",
        "workload.workers=3",
        "workload.bytes=48M",
        "memcg.limit=32M",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let scn = Scenario::load("stress-vm", &sets, Target::Sim).unwrap();
    let d = reclaimlab_sim::run(&scn, &Default::default()).unwrap();
    let r = &d.runs[0];
    let e = &r.extra;
    let by: f64 = e["bogo_ops_by_method"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    // stress-ng's total floors the summed units once; the per-method split keeps fractions.
    let total = r.throughput.value * r.wall_seconds;
    assert!(by >= total && by < total + 1.0, "{by} vs {total}");
    let ends = e["stress_vm_end_methods"].as_array().unwrap();
    assert_eq!(ends.len(), 3);
    let pages = e["pages_touched"].as_u64().unwrap() as f64;
    let rate = e["pages_touched_per_sec"].as_f64().unwrap();
    assert!(rate > 0.0 && (rate - pages / r.wall_seconds).abs() < 1e-6);
    // Every worker's time is attributed to some method: the seconds add up to workers x run.
    let secs: f64 = e["method_seconds"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((secs - 3.0 * r.wall_seconds).abs() < 1e-6, "{secs}");
    for (m, rate) in e["bogo_ops_per_sec_by_method"].as_object().unwrap() {
        let ops = e["bogo_ops_by_method"][m].as_f64().unwrap();
        let s = e["method_seconds"][m].as_f64().unwrap();
        assert!(
            (rate.as_f64().unwrap() - ops / (s / 3.0)).abs() < 1e-6,
            "{m}"
        );
    }
    // The note that names each worker's method agrees with the field.
    let note = r.notes.iter().find(|n| n.contains("ends in")).unwrap();
    for m in ends {
        assert!(note.contains(m.as_str().unwrap()), "{note}");
    }
}
