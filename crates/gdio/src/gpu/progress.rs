//! A stream's progress word: 32 bits of host memory that the stream itself sets, in stream
//! order, to the sequence number of the last marker it passed ([`super::GpuStream::signal`]).
//! Any thread can then tell whether a copy has landed with one load, without a driver call
//! and without holding the stream (as a completion callback would).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// What keeps a progress word's memory alive (the pinned allocation, or a plain box), and
/// frees it when the last [`ProgressWord`] for it goes.
pub(crate) trait WordOwner: Send + Sync {
    /// The word; valid for as long as the owner lives.
    fn word(&self) -> &AtomicU32;
}

/// A shared handle to one stream's progress word.
#[derive(Clone)]
pub struct ProgressWord {
    owner: Arc<dyn WordOwner>,
}

impl ProgressWord {
    pub(crate) fn new(owner: Arc<dyn WordOwner>) -> ProgressWord {
        ProgressWord { owner }
    }

    /// True once the stream has passed the marker numbered `seq` (or a later one). Numbers
    /// wrap: a word at most 2^31 markers ahead counts as past `seq`.
    pub fn reached(&self, seq: u32) -> bool {
        let now = self.owner.word().load(Ordering::Acquire);
        now.wrapping_sub(seq) as i32 >= 0
    }

    /// Sets the word from the host (runtimes whose streams run on a host thread).
    pub(crate) fn store(&self, seq: u32) {
        self.owner.word().store(seq, Ordering::Release);
    }
}

impl std::fmt::Debug for ProgressWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ProgressWord").field(&self.owner.word().load(Ordering::Relaxed)).finish()
    }
}

/// A word in ordinary memory, for runtimes that set it from a host thread.
pub(crate) struct BoxedWord(pub AtomicU32);

impl WordOwner for BoxedWord {
    fn word(&self) -> &AtomicU32 {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reached_counts_through_the_wrap() {
        let w = ProgressWord::new(Arc::new(BoxedWord(AtomicU32::new(0))));
        assert!(w.reached(0));
        assert!(!w.reached(1));
        w.store(5);
        assert!(w.reached(4) && w.reached(5) && !w.reached(6));
        w.store(u32::MAX);
        assert!(w.reached(u32::MAX - 3) && !w.reached(0));
        w.store(2); // wrapped
        assert!(w.reached(u32::MAX) && w.reached(1) && !w.reached(3));
    }
}
