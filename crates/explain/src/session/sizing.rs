//! Table sizing: the TEMP table's int4 rows per heap page, its size before it
//! is created, and the local buffers (temp_buffers) that hold it.

/// Bytes one int4 row takes in a heap page: 24-byte tuple header, the
/// 4-byte value padded to 8 (MAXALIGN), a 4-byte line pointer.
pub(crate) const HEAP_BYTES_PER_INT4_ROW: u64 = 24 + 8 + 4;
/// Page header bytes per heap page.
pub(crate) const HEAP_PAGE_HEADER_BYTES: u64 = 24;
/// Most local buffers we ask for (temp_buffers), so a 1e9-row table does not
/// reserve 36 GB of backend memory: 1 GiB.
pub(crate) const MAX_TEMP_BUFFERS_BYTES: u64 = 1 << 30;

/// Rows of int4 in one heap page of `block_size` bytes (226 in 8 kB).
pub(crate) fn rows_per_page(block_size: u64) -> u64 {
    ((block_size.saturating_sub(HEAP_PAGE_HEADER_BYTES)) / HEAP_BYTES_PER_INT4_ROW).max(1)
}

/// The TEMP table's expected size before it is created: whole pages of
/// [`rows_per_page`] rows, i.e. rows x 36 bytes (24-byte tuple header, the
/// value padded to 8, a 4-byte line pointer) plus a 24-byte header per page
/// and the unused tail of each page. The free-space and visibility maps are
/// left out (under 0.1% of the table).
pub(crate) fn estimated_table_bytes(rows: u64, block_size: u64) -> u64 {
    rows.div_ceil(rows_per_page(block_size)).saturating_mul(block_size)
}

/// The local buffers (in blocks of `block_size`) that hold a table of `rows`
/// int4 rows, with 64 blocks of slack, capped at [`MAX_TEMP_BUFFERS_BYTES`].
pub(crate) fn temp_buffers_blocks_for(rows: u64, block_size: u64) -> u64 {
    let pages = rows.div_ceil(rows_per_page(block_size)) + 64;
    pages.min(MAX_TEMP_BUFFERS_BYTES / block_size.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_buffers_cover_the_table() {
        // 8 kB pages hold 226 int4 rows.
        assert_eq!(temp_buffers_blocks_for(226, 8192), 1 + 64);
        assert_eq!(temp_buffers_blocks_for(1_000_000, 8192), 4425 + 64);
        assert_eq!(temp_buffers_blocks_for(1_000_000_000, 8192), (1 << 30) / 8192);
    }

    #[test]
    fn table_size_is_whole_pages() {
        assert_eq!(rows_per_page(8192), 226);
        assert_eq!(estimated_table_bytes(1, 8192), 8192);
        assert_eq!(estimated_table_bytes(226, 8192), 8192);
        assert_eq!(estimated_table_bytes(227, 8192), 2 * 8192);
        assert_eq!(estimated_table_bytes(1_000_000_000, 8192), 4_424_779 * 8192);
    }
}
