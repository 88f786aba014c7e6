//! Report formats of `clockscope check`: text, JSON, Prometheus, SVG.
