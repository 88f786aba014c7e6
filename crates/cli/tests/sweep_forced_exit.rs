//! The forced-exit hook `clockscope sweep` registers (what a second Ctrl-C or
//! SIGTERM runs before the process exits at once) restores the original
//! clocksource by itself. Its own test binary: the hooks are process-wide.

use clockscope_cli::commands::sweep::{sweep, unprotected, SweepArgs};
use clockscope_cli::exit;
use clockscope_cli::model::check::stats::ClockStats;
use clockscope_system::linux::clocksource::{SysfsClocksource, CLOCKSOURCE0};
use clockscope_system::linux::testing::FakeRoot;
use std::sync::Arc;

#[test]
fn the_forced_exit_hook_restores_the_original_mid_measurement() {
    let root = FakeRoot::new();
    root.write(&format!("{CLOCKSOURCE0}/current_clocksource"), "kvm-clock\n")
        .write(
            &format!("{CLOCKSOURCE0}/available_clocksource"),
            "tsc kvm-clock acpi_pm \n",
        );
    let control = Arc::new(SysfsClocksource::new(root.path()));
    let path = control.current_path();
    let args = SweepArgs {
        apply: true,
        only: vec!["acpi_pm".into()],
        sysfs_root: root.path().to_path_buf(),
        ..Default::default()
    };
    let dir = root.path().join(CLOCKSOURCE0).to_string_lossy().into_owned();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut m = |_: &str| -> anyhow::Result<ClockStats> {
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "acpi_pm\n");
            exit::run_forced_exit_hooks();
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                "kvm-clock\n",
                "the hook restored it"
            );
            // The real process exits here; the test leaves by unwinding.
            panic!("forced exit");
        };
        sweep(&args, control.clone(), &dir, 0, &mut m, &mut unprotected)
    }));
    let e = r.unwrap_err();
    assert_eq!(
        e.downcast_ref::<&str>(),
        Some(&"forced exit"),
        "the hook's own asserts held"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "kvm-clock\n");
    // Once the sweep is over its hook is gone: running the hooks writes nothing.
    std::fs::write(&path, "tsc\n").unwrap();
    exit::run_forced_exit_hooks();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "tsc\n");
}
