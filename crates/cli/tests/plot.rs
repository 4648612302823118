//! `compare --plot` and `sweep --plot`: the format follows the extension, a bad one is refused
//! before anything is simulated or read, and the output is what it claims to be.

mod common;

use common::{run, write_doc};
use std::path::{Path, PathBuf};

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rl-plot-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A PNG signature, then the IHDR chunk: its width and height (big-endian u32s).
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(
        bytes.len() > 24,
        "too short for a PNG: {} bytes",
        bytes.len()
    );
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR", "first chunk is not IHDR");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn bad_extension_is_refused_before_any_work() {
    let dir = tmpdir("ext");
    let out = dir.join("plot.pdf");
    // A scenario that does not exist and files that cannot be read: the plot name must be the
    // first thing checked, so its error is the one reported.
    for args in [
        vec![
            "compare",
            "no-such-scenario",
            "--before",
            "6.18",
            "--after",
            "6.18",
        ],
        vec!["compare", "/nonexistent/b.json", "/nonexistent/a.json"],
        vec![
            "sweep",
            "no-such-scenario",
            "--vary",
            "machine.cpus=2,4",
            "--after",
            "6.18+batch-dirty-flush",
        ],
    ] {
        let mut a = args.clone();
        a.extend(["--plot", s(&out)]);
        let (code, _, err) = run(&a);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("plot.pdf") && err.contains(".svg or .png"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("no scenario named") && !err.contains("cannot read"));
        assert!(!out.exists());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_of_result_files_plots_svg_and_png() {
    let dir = tmpdir("files");
    let b = write_doc(&dir, "b.json", &[100, 120, 110], &[10.0, 11.0, 12.0]);
    let a = write_doc(&dir, "a.json", &[30, 35, 40], &[11.5, 12.5, 13.0]);
    let svg = dir.join("c.svg");
    let (code, out, err) = run(&["compare", &b, &a, "--plot", s(&svg)]);
    assert_eq!(code, 0, "{err}");
    // The table is still printed.
    assert!(out.contains("tlb_shootdowns"), "{out}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..60.min(text.len())]);
    for needle in [
        "stress-vm: host 6.18.0 vs host 6.18.0",
        "throughput (bogo_ops_per_sec)",
        "tlb_shootdowns",
        "pgsteal_anon",
        "-68.2%",
        // Throughput's ranges overlap: labelled not significant.
        "+13.6% n.s.",
    ] {
        assert!(text.contains(needle), "{needle} missing from the SVG");
    }
    // Same inputs, same bytes.
    let svg2 = dir.join("c2.svg");
    let (code, _, err) = run(&["compare", &b, &a, "--plot", s(&svg2)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(text, std::fs::read_to_string(&svg2).unwrap());

    let png = dir.join("c.PNG");
    let (code, _, err) = run(&["compare", &b, &a, "--json", "--plot", s(&png)]);
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(&png).unwrap();
    // Four rows with a delta % (throughput, shootdowns, pgsteal, wall_seconds): 140 + 44 * 4.
    assert_eq!(png_size(&bytes), (960, 316));
    // Bars, axes and text, not a blank canvas (a white 960x316 PNG compresses to ~1 KiB).
    assert!(bytes.len() > 8000, "{} bytes", bytes.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_and_sweep_of_simulations_plot() {
    let dir = tmpdir("sim");
    let small = ["--set", "run.duration=1s", "--set", "machine.cpus=4"];
    let png = dir.join("c.png");
    let mut args = vec![
        "compare",
        "stress-vm",
        "--before",
        "6.18",
        "--after",
        "6.18+batch-dirty-flush",
        "--plot",
        s(&png),
    ];
    args.extend(small);
    let (code, _, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let (w, h) = png_size(&std::fs::read(&png).unwrap());
    // Throughput, shootdowns, IPIs, scan/steal, swap...: at least four bars.
    assert!(w == 960 && h >= 140 + 44 * 4, "{w}x{h}");

    let sweep = |file: &Path| {
        let (code, _, err) = run(&[
            "sweep",
            "stress-vm",
            "--vary",
            "machine.cpus=2,4",
            "--vary",
            "workload.workers=2,4",
            "--set",
            "run.duration=1s",
            // One method that counts bogo ops from its first call (stress-ng's "all" cycle
            // starts with cache-lines, which counts none), so throughput has a delta.
            "--set",
            "workload.method=cache-stripe",
            "--after",
            "6.18+batch-dirty-flush",
            "--plot",
            s(file),
        ]);
        assert_eq!(code, 0, "{err}");
    };
    let (s1, s2, p) = (dir.join("1.svg"), dir.join("2.svg"), dir.join("s.png"));
    sweep(&s1);
    sweep(&s2);
    sweep(&p);
    let text = std::fs::read_to_string(&s1).unwrap();
    for m in [
        "throughput",
        "tlb_shootdowns",
        "function_call_interrupts",
        "pgsteal_anon",
    ] {
        assert!(
            text.contains(&format!("{m}: delta % vs machine.cpus")),
            "{m} panel missing"
        );
    }
    // The second axis is the legend.
    assert!(text.contains("workload.workers=2") && text.contains("workload.workers=4"));
    assert_eq!(
        text,
        std::fs::read_to_string(&s2).unwrap(),
        "SVG not deterministic"
    );
    // Four panels of 340 pixels.
    assert_eq!(png_size(&std::fs::read(&p).unwrap()), (960, 1360));
    std::fs::remove_dir_all(&dir).unwrap();
}
