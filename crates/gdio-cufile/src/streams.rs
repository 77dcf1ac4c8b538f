//! [`StreamTable`]: the streams registered with `cuFileStreamRegister` and the promises their
//! flags make (ABI bookkeeping; the stream-ordered I/O itself is `gdio::Driver::submit_on_stream`).

use std::collections::HashMap;
use std::sync::Mutex;

/// What the caller promises about the I/O queued on a stream (cuFile's
/// `CU_FILE_STREAM_*` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamFlags(pub u32);

impl StreamFlags {
    /// The buffer offset is known when the I/O is queued.
    pub const FIXED_BUF_OFFSET: u32 = 1;
    /// The file offset is known when the I/O is queued.
    pub const FIXED_FILE_OFFSET: u32 = 2;
    /// The size is known when the I/O is queued.
    pub const FIXED_FILE_SIZE: u32 = 4;
    /// Offsets and size are 4 KiB aligned.
    pub const PAGE_ALIGNED_INPUTS: u32 = 8;

    /// True when all four flags are set: every argument is fixed (and aligned) at queue time,
    /// so it may be read then rather than when the stream reaches the I/O.
    pub fn all_fixed(self) -> bool {
        let all = Self::FIXED_BUF_OFFSET
            | Self::FIXED_FILE_OFFSET
            | Self::FIXED_FILE_SIZE
            | Self::PAGE_ALIGNED_INPUTS;
        self.0 & all == all
    }
}

/// Registered streams, keyed by the stream's handle value (the null stream is a valid key).
#[derive(Debug, Default)]
pub struct StreamTable {
    streams: Mutex<HashMap<u64, StreamFlags>>,
}

impl StreamTable {
    /// Registers `stream`; false if it already is (cuFile: `INVALID_VALUE`). Unknown flag bits
    /// are kept and ignored, as cuFile does.
    pub fn register(&self, stream: u64, flags: u32) -> bool {
        let mut m = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        if m.contains_key(&stream) {
            return false;
        }
        m.insert(stream, StreamFlags(flags));
        true
    }

    /// Deregisters `stream`; false if it was not registered.
    pub fn deregister(&self, stream: u64) -> bool {
        self.streams.lock().unwrap_or_else(|p| p.into_inner()).remove(&stream).is_some()
    }

    /// The flags of a registered stream; `None` for one never registered (then nothing is
    /// promised: arguments are read when the stream reaches the I/O).
    pub fn flags(&self, stream: u64) -> Option<StreamFlags> {
        self.streams.lock().unwrap_or_else(|p| p.into_inner()).get(&stream).copied()
    }

    /// Forgets every stream (driver close).
    pub fn clear(&self) {
        self.streams.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_twice_and_unknown_deregister_fail() {
        let t = StreamTable::default();
        assert!(t.register(0x1234, 0xF));
        assert!(!t.register(0x1234, 0));
        assert_eq!(t.flags(0x1234), Some(StreamFlags(0xF)));
        assert!(t.flags(0x1234).unwrap().all_fixed());
        assert!(!StreamFlags(3).all_fixed());
        assert!(!StreamFlags(7).all_fixed());
        assert!(StreamFlags(0x1F).all_fixed());
        assert!(t.register(0, 0x10));
        assert!(t.deregister(0x1234));
        assert!(!t.deregister(0x1234));
        assert_eq!(t.flags(0x1234), None);
        t.clear();
        assert!(!t.deregister(0));
    }
}
