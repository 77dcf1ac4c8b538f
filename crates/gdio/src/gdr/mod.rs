//! GPU memory mapped into the CPU (GDRCopy).
