//! PostgreSQL EXPLAIN ANALYZE overhead measurement.
