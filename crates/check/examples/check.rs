//! Ad-hoc runner until the CLI wires `reclaimlab check`:
//! `cargo run -p reclaimlab-check --release --example check -- POLICY [arch] [cpus] [pages] [passes] [mutation] [--json]`
use reclaimlab_check::{check, Arch, CheckConfig, Mutation};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let a: Vec<&String> = args.iter().filter(|a| *a != "--json").collect();
    let spec = a.first().map(|s| s.as_str()).unwrap_or("6.18");
    let mut cfg = match CheckConfig::new(spec) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Some(x) = a.get(1) {
        cfg.arch = Arch::parse(x).unwrap();
    }
    if let Some(x) = a.get(2) {
        cfg.cpus = x.parse().unwrap();
    }
    if let Some(x) = a.get(3) {
        cfg.pages = x.parse().unwrap();
    }
    if let Some(x) = a.get(4) {
        cfg.passes = x.parse().unwrap();
    }
    if let Some(x) = a.get(5) {
        cfg.mutation = Some(Mutation::parse(x).unwrap());
    }
    let r = check(&cfg).unwrap();
    if json {
        println!("{}", serde_json::to_string_pretty(&r).unwrap());
    } else {
        print!("{r}");
    }
    std::process::exit(if r.passed() { 0 } else { 1 });
}
