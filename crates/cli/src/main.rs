//! `reclaimlab`: measure (host), predict (sim) and compare TLB-flush batching in page reclaim.
//!
//! `cli` holds the command line's types, `cmd` one module per subcommand, `output` the one
//! layer every command prints through (text tables, Markdown, mail, JSON, result files, plots).

mod alloc;
mod cli;
mod cmd;
mod journal;
mod output;
mod progress;

use clap::Parser;
use std::process::ExitCode;

#[global_allocator]
static GLOBAL: alloc::HugeAlloc = alloc::HugeAlloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cmd::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("reclaimlab: {}", error_text(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

/// A last guard against echoing huge inputs: no line longer than a few hundred characters
/// (the messages themselves quote at most 100 of any input).
fn error_text(msg: &str) -> String {
    let lines: Vec<String> = msg
        .lines()
        .map(|l| {
            if l.chars().count() > 400 {
                let head: String = l.chars().take(400).collect();
                format!("{head}... (line cut)")
            } else {
                l.to_string()
            }
        })
        .collect();
    lines.join("\n")
}
