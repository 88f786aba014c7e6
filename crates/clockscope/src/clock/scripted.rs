//! A scripted clock for deterministic tests: it returns readings a test
//! chose (backward steps included) instead of the time.

use super::ClockSource;
use crate::convert::Scale;
use crate::ticks::Ticks;
use std::cell::RefCell;

type Script = Box<dyn FnMut(u64) -> u64>;

/// A clock whose n-th reading (counting every `now` and `now_ordered` call
/// from 0) is `script(n)`.
pub struct ScriptedClock {
    name: &'static str,
    scale: Scale,
    script: RefCell<(u64, Script)>,
}

impl ScriptedClock {
    /// A clock computing each reading from its call index.
    pub fn new(name: &'static str, scale: Scale, script: impl FnMut(u64) -> u64 + 'static) -> Self {
        ScriptedClock {
            name,
            scale,
            script: RefCell::new((0, Box::new(script))),
        }
    }

    /// A clock that returns `readings` in order and panics when they run out
    /// (a test that reads more than it scripted is wrong).
    pub fn from_readings(name: &'static str, scale: Scale, readings: Vec<u64>) -> Self {
        ScriptedClock::new(name, scale, move |n| match readings.get(n as usize) {
            Some(&r) => r,
            None => panic!(
                "scripted clock {name}: read #{n} but only {} readings were scripted",
                readings.len()
            ),
        })
    }

    /// How many readings were taken.
    pub fn reads(&self) -> u64 {
        self.script.borrow().0
    }
}

impl ClockSource for ScriptedClock {
    fn name(&self) -> &'static str {
        self.name
    }
    fn now(&self) -> Ticks {
        let mut s = self.script.borrow_mut();
        let n = s.0;
        s.0 += 1;
        Ticks::from_raw((s.1)(n))
    }
    fn scale(&self) -> Scale {
        self.scale
    }
}
