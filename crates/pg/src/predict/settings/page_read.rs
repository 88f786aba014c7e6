//! The reference an I/O's timing cost is set against: one 8 kB `pread`
//! served from the OS page cache, the cheapest I/O PostgreSQL times,
//! measured on this machine (`check` and `explain` alike).

/// Bytes of one read: PostgreSQL's default block size.
pub const PAGE_BYTES: usize = 8192;
/// Pages in the file read (2 MiB).
pub const PAGE_READ_PAGES: u64 = 256;
/// Passes over the file: 2,560 reads, a few ms.
pub const PAGE_READ_ROUNDS: usize = 10;

/// One page-cache read: the median ns per 8 kB `pread` over the passes and
/// its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageReadSample {
    /// Median ns of one read.
    pub ns: f64,
    /// The median's 95% interval, ns (null with too few passes).
    pub low_ns: Option<f64>,
    /// The interval's high end, ns.
    pub high_ns: Option<f64>,
}

impl PageReadSample {
    /// As the judge takes it.
    pub fn estimate(&self) -> super::Estimate {
        super::Estimate::new(self.ns, self.low_ns, self.high_ns)
    }
}

/// Reads 8 kB pages of a 2 MiB file in the temp dir over and over (after one
/// warming pass, so they come from the page cache): the median ns per read
/// of `rounds` passes and its interval; None when the file cannot be made or
/// read (then the I/O costs have no reference). About 256 x `rounds` reads.
#[cfg(unix)]
pub fn measure_page_cache_read(rounds: usize) -> Option<PageReadSample> {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    const PAGES: u64 = PAGE_READ_PAGES;
    let mut file = tempfile::tempfile().ok()?;
    let page = vec![0x5a_u8; PAGE_BYTES];
    for _ in 0..PAGES {
        file.write_all(&page).ok()?;
    }
    let mut buf = vec![0_u8; PAGE_BYTES];
    let pass = |buf: &mut [u8]| -> Option<std::time::Duration> {
        let start = std::time::Instant::now();
        for i in 0..PAGES {
            if file.read_at(buf, i * PAGE_BYTES as u64).ok()? != PAGE_BYTES {
                return None;
            }
        }
        Some(start.elapsed())
    };
    pass(&mut buf)?;
    let per_read: Vec<f64> = (0..rounds.max(1))
        .map(|_| pass(&mut buf).map(|d| d.as_nanos() as f64 / PAGES as f64))
        .collect::<Option<_>>()?;
    let ns = clockscope_system::stats::median(&per_read).filter(|v| v.is_finite() && *v > 0.0)?;
    let interval = clockscope_system::stats::median_interval(&per_read, clockscope_system::stats::CONFIDENCE);
    Some(PageReadSample {
        ns,
        low_ns: interval.map(|i| i.low),
        high_ns: interval.map(|i| i.high),
    })
}

/// No page-cache reference off unix.
#[cfg(not(unix))]
pub fn measure_page_cache_read(_rounds: usize) -> Option<PageReadSample> {
    None
}
