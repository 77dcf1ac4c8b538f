//! Splitting a request into tasks, and a task's byte range into buffered and direct pieces.
//! Pure arithmetic, so every edge is unit-tested.

/// One task: a contiguous part of a request, run by one worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// Offset of the task from the start of the request (and of the buffer).
    pub rel: u64,
    /// File offset.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

fn align_down(x: u64, a: u64) -> u64 {
    x / a * a
}

/// Splits `[offset, offset+len)` into tasks of about `task_size` bytes whose file boundaries
/// fall on multiples of `align`, so every task after the first starts aligned. The first task
/// runs to the first aligned boundary at or after `offset + task_size`.
pub fn split(offset: u64, len: u64, task_size: u64, align: u64) -> Vec<Task> {
    let align = align.max(1);
    let task_size = align_up(task_size.max(align), align);
    let end = offset + len;
    let mut tasks = Vec::with_capacity((len / task_size + 2) as usize);
    let mut pos = offset;
    while pos < end {
        let next = align_down(pos + task_size, align).max(align_up(pos + 1, align)).min(end);
        tasks.push(Task { rel: pos - offset, offset: pos, len: next - pos });
        pos = next;
    }
    tasks
}

/// How a range is read: a buffered head up to the first aligned offset, an aligned middle for
/// `O_DIRECT`, and a buffered tail after the last aligned offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pieces {
    /// Bytes at the start read buffered.
    pub head: u64,
    /// Bytes in the middle read with `O_DIRECT` (a multiple of the alignment).
    pub middle: u64,
    /// Bytes at the end read buffered.
    pub tail: u64,
}

/// Splits `[offset, offset+len)` by `align`. When no aligned block fits, it is all head.
pub fn pieces(offset: u64, len: u64, align: u64) -> Pieces {
    let align = align.max(1);
    let end = offset + len;
    let a = align_up(offset, align);
    let b = align_down(end, align);
    if a >= b {
        return Pieces { head: len, middle: 0, tail: 0 };
    }
    Pieces { head: a - offset, middle: b - a, tail: end - b }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn examples() {
        assert_eq!(split(0, 0, 4096, 512), vec![]);
        assert_eq!(split(0, 10, 4096, 512), vec![Task { rel: 0, offset: 0, len: 10 }]);
        let t = split(100, 10_000, 4096, 4096);
        assert_eq!(t[0], Task { rel: 0, offset: 100, len: 3996 });
        assert_eq!(t[1], Task { rel: 3996, offset: 4096, len: 4096 });
        assert_eq!(t.last().unwrap().offset + t.last().unwrap().len, 10_100);
        assert_eq!(
            pieces(100, 10_000, 4096),
            Pieces { head: 3996, middle: 4096, tail: 10_100 - 8192 }
        );
        assert_eq!(pieces(4096, 8192, 4096), Pieces { head: 0, middle: 8192, tail: 0 });
        assert_eq!(pieces(1, 100, 4096), Pieces { head: 100, middle: 0, tail: 0 });
    }

    proptest! {
        #[test]
        fn split_covers_exactly_with_aligned_inner_boundaries(
            offset in 0u64..1 << 40, len in 0u64..1 << 26, ts_kib in 1u64..64, align_shift in 0u32..16
        ) {
            let align = 1u64 << align_shift;
            let ts = ts_kib * 1024;
            let tasks = split(offset, len, ts, align);
            let mut pos = offset;
            for (i, t) in tasks.iter().enumerate() {
                prop_assert_eq!(t.offset, pos);
                prop_assert_eq!(t.rel, pos - offset);
                prop_assert!(t.len > 0);
                if i > 0 { prop_assert_eq!(t.offset % align, 0); }
                prop_assert!(t.len <= ts.max(align).div_ceil(align) * align + align);
                pos += t.len;
            }
            prop_assert_eq!(pos, offset + len);
        }

        #[test]
        fn pieces_cover_and_middle_is_aligned(offset in 0u64..1 << 40, len in 0u64..1 << 24, align_shift in 0u32..16) {
            let align = 1u64 << align_shift;
            let p = pieces(offset, len, align);
            prop_assert_eq!(p.head + p.middle + p.tail, len);
            prop_assert_eq!(p.middle % align, 0);
            if p.middle > 0 {
                prop_assert_eq!((offset + p.head) % align, 0);
                prop_assert!(p.head < align);
                prop_assert!(p.tail < align);
            }
        }
    }
}
