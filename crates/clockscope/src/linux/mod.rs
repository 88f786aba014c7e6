//! What the Linux kernel publishes about its clocks, read under a root path so tests can use a fake tree.
