//! `CLOCKSCOPE_CLOCK` forces the system clock, both in
//! `instant::detect::detect` and in the process's lazy initialisation.
//!
//! One test in its own binary: it sets the environment variable, and no
//! other thread runs while it does.

use clockscope::instant::detect::{detect, SYSTEM_CLOCK_NAME};
use clockscope::instant::{self, ClockMode, Config, Instant, ENV_VAR};

#[test]
fn environment_variable_forces_the_system_clock() {
    std::env::set_var(ENV_VAR, "system");
    let info = detect(&Config::default());
    assert_eq!(info.mode, ClockMode::System);
    assert!(info.forced);
    assert!(
        info.reasons[0].contains("CLOCKSCOPE_CLOCK=system"),
        "{:?}",
        info.reasons
    );

    // An unknown value takes the safe choice and names the value.
    std::env::set_var(ENV_VAR, "fastest-please");
    let info = detect(&Config::default());
    assert_eq!((info.mode, info.forced), (ClockMode::System, true));
    assert!(info.reasons[0].contains("\"fastest-please\""), "{:?}", info.reasons);

    // `auto`, empty or unset: the evidence decides (whatever it says here).
    for value in [Some("auto"), Some(""), None] {
        match value {
            Some(v) => std::env::set_var(ENV_VAR, v),
            None => std::env::remove_var(ENV_VAR),
        }
        let info = detect(&Config::default());
        assert!(!info.forced, "{value:?}: {:?}", info.reasons);
        assert!(!info.reasons.is_empty());
        assert_eq!(info.mode == ClockMode::Counter, info.trusted, "{:?}", info.reasons);
    }

    // The lazy initialisation of the first reading reads it too.
    std::env::set_var(ENV_VAR, "system");
    let a = Instant::now();
    let info = instant::clock_info();
    assert_eq!(info.mode, ClockMode::System);
    assert_eq!(info.clock_name, SYSTEM_CLOCK_NAME);
    assert!(info.forced && info.reasons[0].contains("CLOCKSCOPE_CLOCK=system"));
    assert!(Instant::now_precise() >= a);
    std::env::remove_var(ENV_VAR);
}
