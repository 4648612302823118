//! Architecture code (arch/*). Only x86 so far; arm64 comes with issue 4.
pub mod x86;
