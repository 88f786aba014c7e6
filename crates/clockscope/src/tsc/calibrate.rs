//! Calibrating a counter against a reference clock.
