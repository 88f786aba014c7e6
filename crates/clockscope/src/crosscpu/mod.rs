//! Whether a clock agrees across CPUs: the kernel's warp test and a ping-pong offset estimate.
