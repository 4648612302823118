//! Shared by both backends: scenario files, the result schema, statistics and the compare table.

pub mod arch;
pub mod background;
pub mod compare;
pub mod foreign;
pub mod mismatch;
pub mod policy;
pub mod profile;
pub mod result;
pub mod scenario;
pub mod source;
pub mod start_placement;
pub mod stats;
pub mod suite;
pub mod sweep;
pub mod units;
pub mod validate;
pub mod workload;

pub use arch::Arch;
pub use result::{MachineInfo, ResultDoc, RunResult, SwapInfo, Throughput, SCHEMA};
pub use scenario::{Scenario, Target, Workload};
pub use source::{ScenarioError, Source};
