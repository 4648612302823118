//! The modelled CPU architecture: one type for the scenario (`machine.arch`), the simulator's
//! arch dispatch (arch/*) and the checker (`check --arch`).

use serde::Serialize;
use std::fmt;

/// Which architecture's TLB semantics the kernel runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// IPI shootdowns to the batch cpumask; lazy CPUs skipped and caught by `tlb_gen` at
    /// switch (arch/x86/mm/tlb.c).
    X86,
    /// Broadcast TLBI issued at `arch_tlbbatch_add_pending`, completed by the DSB at flush
    /// (arch/arm64/include/asm/tlbflush.h).
    Arm64,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::X86, Arch::Arm64];

    /// The name results, profiles and errors use.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86 => "x86",
            Arch::Arm64 => "arm64",
        }
    }

    /// `x86` or `arm64`; the kernel's and the toolchains' spellings (`x86_64`, `x86-64`,
    /// `aarch64`) are accepted too, as `uname -m` prints them.
    pub fn parse(s: &str) -> Result<Arch, String> {
        match s {
            "x86" | "x86_64" | "x86-64" => Ok(Arch::X86),
            "arm64" | "aarch64" => Ok(Arch::Arm64),
            _ => Err(format!(
                "unknown arch {}: one of x86, arm64",
                crate::units::clip(s)
            )),
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases_resolve() {
        for a in Arch::ALL {
            assert_eq!(Arch::parse(a.name()), Ok(a));
            assert_eq!(serde_json::to_value(a).unwrap(), a.name());
        }
        assert_eq!(Arch::parse("aarch64"), Ok(Arch::Arm64));
        assert_eq!(Arch::parse("x86_64"), Ok(Arch::X86));
        let e = Arch::parse("riscv").unwrap_err();
        assert!(e.contains("\"riscv\"") && e.contains("x86, arm64"), "{e}");
    }
}
