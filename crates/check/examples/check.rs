//! Ad-hoc runner until the CLI wires `reclaimlab check` (same flags):
//! `cargo run -p reclaimlab-check --release --example check -- [--policy P] [--arch A]
//!  [--cpus N] [--pages N] [--file-pages N] [--mms N] [--depth N] [--passes N]
//!  [--mutation M] [--no-file-pageout] [--mprotect] [--json]`
use reclaimlab_check::{check, Arch, CheckConfig, Mutation};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let num = |k: &str| get(k).map(|v| v.parse::<u8>().expect("a number"));
    let mut cfg = match CheckConfig::new(&get("--policy").unwrap_or_else(|| "6.18".into())) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Some(a) = get("--arch") {
        cfg.arch = Arch::parse(&a).unwrap();
    }
    cfg.cpus = num("--cpus").unwrap_or(cfg.cpus);
    cfg.pages = num("--pages").unwrap_or(cfg.pages);
    cfg.file_pages = num("--file-pages").or(cfg.file_pages);
    cfg.mms = num("--mms").or(cfg.mms);
    cfg.passes = num("--passes").unwrap_or(cfg.passes);
    cfg.file_pageout = !args.iter().any(|a| a == "--no-file-pageout");
    cfg.mprotect = args.iter().any(|a| a == "--mprotect");
    cfg.depth = get("--depth").map(|d| d.parse().unwrap());
    cfg.mutation = get("--mutation").map(|m| Mutation::parse(&m).unwrap());
    let r = match check(&cfg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if args.iter().any(|a| a == "--json") {
        println!("{}", serde_json::to_string_pretty(&r).unwrap());
    } else {
        print!("{r}");
    }
    std::process::exit(if r.passed() { 0 } else { 1 });
}
