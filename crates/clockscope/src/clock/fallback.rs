//! Architectures without a supported CPU counter: only the POSIX clocks exist.

use super::{ClockError, ClockId, ClockVisitor};
use crate::convert::Scale;

pub(super) fn counter_supported(id: ClockId) -> Result<(), ClockError> {
    Err(ClockError::OtherArchitecture(id.display_name()))
}

pub(super) fn visit_counter<V: ClockVisitor>(id: ClockId, _scale: Scale, _visitor: V) -> Result<V::Output, ClockError> {
    Err(ClockError::OtherArchitecture(id.display_name()))
}
