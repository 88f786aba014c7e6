//! The drop-in for PostgreSQL 19's pg_test_timing.
