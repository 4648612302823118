//! The simulator backend (`reclaimlab sim`). Being built under issue 3.

use reclaimlab_core::{ResultDoc, Scenario};

/// Options that are not part of the scenario (they never change the result).
#[derive(Default)]
pub struct SimOptions<'a> {
    /// Called now and then with (simulated ns done, simulated ns total).
    pub progress: Option<&'a dyn Fn(u64, u64)>,
}

/// Run a scenario in the model and return the shared result document (`backend = "sim"`).
pub fn run(scn: &Scenario, _opts: &SimOptions) -> anyhow::Result<ResultDoc> {
    scn.skip_section("host");
    anyhow::bail!("the simulator is not built yet (scenario {})", scn.name)
}
