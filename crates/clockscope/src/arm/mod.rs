//! The ARM generic timer: frequency, homogeneity of cores, counter errata, trust.
