//! `cargo bench -p reclaimlab-sim [-- SCENARIO [KEY=VALUE...]]`: simulate the 16-CPU seed-000
//! stress-vm scenario (60 simulated seconds) and print simulated seconds per wall second and per
//! CPU second (user + system: what to compare on a shared machine), simulated events per
//! second, wall time, peak RSS and bytes per simulated 4 KiB page.
//!
//! `cargo bench -p reclaimlab-sim -- --oracle-cost [SCENARIO [KEY=VALUE...]]` instead runs the
//! scenario alternately with the lost-write oracle off and on (5 times each) and prints the
//! median CPU time of each and their ratio (CPU time, not wall time, so that other load on the
//! machine matters less).

use reclaimlab_core::{Scenario, Target, Workload};
use std::time::Instant;

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// This process's user + system CPU time in seconds (/proc/self/stat utime + stime).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may contain spaces) start at state (field 3).
    let rest = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|x| x.parse().ok()).unwrap_or(0.0);
    ticks / 100.0 // USER_HZ
}

fn oracle_cost(name: &str, sets: &[String]) {
    let mut times = [Vec::new(), Vec::new()];
    for rep in 0..5 {
        for (i, on) in [false, true].into_iter().enumerate() {
            let mut s = sets.to_vec();
            s.push(format!("sim.oracle={on}"));
            let scn = Scenario::load(name, &s, Target::Sim).expect("scenario");
            let t = cpu_seconds();
            reclaimlab_sim::run(&scn, &Default::default()).expect("simulation");
            let dt = cpu_seconds() - t;
            eprintln!("rep {rep} oracle {on}: {dt:.2} s CPU");
            times[i].push(dt);
        }
    }
    for t in &mut times {
        t.sort_by(f64::total_cmp);
    }
    let (off, on) = (times[0][2], times[1][2]);
    println!(
        "scenario {name}: median CPU time oracle off {off:.2} s, on {on:.2} s: oracle costs {:+.1}%",
        (on / off - 1.0) * 100.0
    );
}

fn main() {
    let cost = std::env::args().any(|a| a == "--oracle-cost");
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let name = args.first().cloned().unwrap_or_else(|| "stress-vm".into());
    let sets: Vec<String> = args.iter().skip(1).cloned().collect();
    if cost {
        return oracle_cost(&name, &sets);
    }
    let scn = Scenario::load(&name, &sets, Target::Sim).expect("scenario");
    let base_kib = vm_hwm_kib();
    let t = Instant::now();
    let cpu0 = cpu_seconds();
    let doc = reclaimlab_sim::run(&scn, &Default::default()).expect("simulation");
    scn.finish().expect("scenario keys");
    let wall = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let run = &doc.runs[0];
    let c = &run.counters;
    let events = run.extra["sim_steps"].as_u64().unwrap_or(0)
        + c["pgfault"]
        + c["pgscan_anon"]
        + c["pgscan_file"]
        + c["tlb_shootdowns"];
    let pages = match &scn.workload {
        Workload::StressVm(w) => w.bytes_total / 4096,
        Workload::FileReclaim(w) => w.file_bytes / 4096,
        Workload::FileMmapRw(w) => w.file_bytes / 4096,
        Workload::AnonSweep(w) => w.processes as u64 * w.bytes_per_process / 4096,
        Workload::YcsbB(w) => w.file_bytes() / 4096,
        Workload::KswapdMmapRead(w) => w.file_bytes / 4096,
        Workload::LimitReclaim(w) => w.bytes / 4096,
    };
    let hwm = vm_hwm_kib();
    println!(
        "scenario {name}: {:.1} simulated s in {wall:.2} s wall ({:.2} simulated s per wall s), \
         {cpu:.2} s CPU ({:.2} simulated s per CPU s)",
        run.wall_seconds,
        run.wall_seconds / wall,
        run.wall_seconds / cpu.max(0.01)
    );
    println!(
        "simulated events: {events} ({:.2} M/s; steps + faults + scanned pages + shootdowns)",
        events as f64 / wall / 1e6
    );
    println!(
        "peak RSS (VmHWM): {} KiB, {} KiB above start; {:.1} bytes per simulated page ({pages} pages)",
        hwm,
        hwm - base_kib,
        (hwm - base_kib) as f64 * 1024.0 / pages as f64
    );
    let g = |k: &str| c.get(k).copied().unwrap_or(0) as f64;
    let steal = g("pgsteal_anon").max(1.0);
    println!(
        "throughput {:.0} {}; per stolen anon page: tlb_shootdowns {:.2}, function_call_interrupts {:.2}, pgscan_anon {:.2}, pswpout {:.2}",
        run.throughput.value,
        run.throughput.unit,
        g("tlb_shootdowns") / steal,
        g("function_call_interrupts") / steal,
        g("pgscan_anon") / steal,
        g("pswpout") / steal
    );
    let mut keys: Vec<_> = c.iter().collect();
    keys.sort();
    for (k, v) in keys {
        if *v != 0 {
            println!("  {k:32} {v}");
        }
    }
    println!("  oom_kills {}", run.oom_kills);
    for (k, v) in &run.extra {
        println!("  extra.{k} = {v}");
    }
}
