//! The order of the runs: balanced blocks of pairs (OFF-ON, ON-OFF) and the
//! A/A control's blocks (OFF against OFF), and the control's runs.

/// What one pair of runs is, by its place in the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// TIMING OFF against ON; `on_first` gives the order.
    Effect { on_first: bool },
    /// The A/A control: TIMING OFF against TIMING OFF; `b_first` says
    /// whether the run in ON's role ran first.
    Control { b_first: bool },
}

/// The repeating schedule of pairs: two balanced blocks (OFF ON, ON OFF,
/// OFF ON, ON OFF), then one A/A control block.
pub const SCHEDULE: [Slot; 6] = [
    Slot::Effect { on_first: false },
    Slot::Effect { on_first: true },
    Slot::Effect { on_first: false },
    Slot::Effect { on_first: true },
    Slot::Control { b_first: false },
    Slot::Control { b_first: true },
];

/// The order, in words, for the report.
pub const ORDER_TEXT: &str = "pairs alternate OFF-ON and ON-OFF (balanced blocks of two), a model slice before each \
                              pair's first run; every third block an A/A control (OFF against OFF)";

/// Control blocks the noise control waits for (an interval needs 6).
pub const CONTROL_MIN_BLOCKS: usize = 6;

/// The A/A control's runs (all TIMING OFF), pair by pair in run order:
/// `a_ms` in TIMING OFF's role, `b_ms` in ON's; pair k ran its `b` first
/// when k is odd ([`SCHEDULE`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ControlRuns {
    pub a_ms: Vec<f64>,
    pub b_ms: Vec<f64>,
}

impl ControlRuns {
    /// The control's block ratios (b / a per block).
    pub fn block_ratios(&self) -> Vec<f64> {
        crate::stats::block_ratios(&self.a_ms, &self.b_ms, &alternating(self.a_ms.len()))
    }
}

/// The order of `n` pairs under [`SCHEDULE`]: the second of each block ran
/// its ON (or its ON's role) first.
pub fn alternating(n: usize) -> Vec<bool> {
    (0..n).map(|k| k % 2 == 1).collect()
}
