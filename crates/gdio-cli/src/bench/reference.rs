//! What the bytes must be, without a copy of them: the digest of every 8 MiB chunk, and where
//! to get a chunk again to name the first wrong byte (the seed of a generated file, or the
//! input file). Memory for verifying stays the same whatever `--size` is.

use std::fs::File;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};

use gdio::DeviceBuffer;

use super::data::{self, AlignedBuf, CHUNK};

/// Where the expected bytes come from.
pub enum Source {
    /// Random bytes from this seed ([`data::generate_chunk`]).
    Seed(u64),
    /// The input file (read again only to point at a difference).
    File(File),
}

/// The expected content of `[0, size)`.
pub struct Reference {
    /// Bytes.
    pub size: u64,
    /// Digest of every chunk.
    pub digests: Vec<u64>,
    /// Where the bytes come from.
    pub source: Source,
}

/// The memory the bench reads into and writes from.
pub enum Memory {
    /// GPU memory.
    Device(DeviceBuffer),
    /// Host memory (rounded up to 4096 bytes for `O_DIRECT`).
    Host(AlignedBuf),
}

const POISON: u8 = 0xA5;
const WINDOW: usize = 8 * CHUNK;

impl Memory {
    /// The address of the first byte.
    pub fn addr(&self) -> u64 {
        match self {
            Memory::Device(d) => d.addr(),
            Memory::Host(h) => h.addr() as u64,
        }
    }

    /// Overwrites the first `len` bytes with a byte no random chunk matches, so that a pass
    /// that moves nothing cannot pass for one that worked.
    pub fn poison(&mut self, len: u64) -> Result<(), String> {
        match self {
            Memory::Host(h) => h.as_mut_slice()[..len as usize].fill(POISON),
            Memory::Device(d) => {
                let p = vec![POISON; WINDOW.min(len as usize)];
                let mut off = 0usize;
                while (off as u64) < len {
                    let n = (len as usize - off).min(WINDOW);
                    d.copy_from_host(off, &p[..n]).map_err(|e| e.to_string())?;
                    off += n;
                }
            }
        }
        Ok(())
    }
}

impl Reference {
    fn chunks(&self) -> u64 {
        self.size.div_ceil(CHUNK as u64)
    }

    fn chunk_len(&self, k: u64) -> usize {
        (self.size - k * CHUNK as u64).min(CHUNK as u64) as usize
    }

    /// Chunk `k` of the expected bytes, into `out` (of the chunk's length).
    pub fn expected(&self, k: u64, out: &mut [u8]) -> Result<(), String> {
        match &self.source {
            Source::Seed(s) => {
                data::generate_chunk(*s, k, out);
                Ok(())
            }
            Source::File(f) => {
                let got = gdio::file::posix::pread_full(f.as_fd(), out, k * CHUNK as u64).map_err(
                    |e| {
                        format!("reading the input again: {}", std::io::Error::from_raw_os_error(e))
                    },
                )?;
                if got < out.len() {
                    return Err("the input file shrank during the bench".into());
                }
                Ok(())
            }
        }
    }

    /// `None` when chunk `k` is `actual`, else the offset of its first wrong byte.
    fn check_chunk(&self, k: u64, actual: &[u8]) -> Result<Option<u64>, String> {
        if data::digest(actual) == self.digests[k as usize] {
            return Ok(None);
        }
        let mut want = vec![0u8; actual.len()];
        self.expected(k, &mut want)?;
        let at = data::first_difference(actual, &want).unwrap_or(0);
        Ok(Some(k * CHUNK as u64 + at as u64))
    }

    /// Compares `mem` with the expected bytes: `None`, or the first wrong byte.
    pub fn verify_memory(&self, mem: &Memory, threads: usize) -> Result<Option<u64>, String> {
        match mem {
            Memory::Host(h) => {
                let first = AtomicU64::new(u64::MAX);
                let bytes = &h.as_slice()[..self.size as usize];
                data::parallel_chunks(self.size, threads, |k, off, n| {
                    if let Some(at) = self.check_chunk(k, &bytes[off as usize..off as usize + n])? {
                        first.fetch_min(at, Ordering::Relaxed);
                    }
                    Ok(())
                })?;
                Ok(Some(first.into_inner()).filter(|&a| a != u64::MAX))
            }
            Memory::Device(d) => {
                let mut tmp = vec![0u8; CHUNK.min(self.size as usize)];
                for k in 0..self.chunks() {
                    let n = self.chunk_len(k);
                    let t = &mut tmp[..n];
                    d.copy_to_host(k as usize * CHUNK, t).map_err(|e| e.to_string())?;
                    if let Some(at) = self.check_chunk(k, t)? {
                        return Ok(Some(at));
                    }
                }
                Ok(None)
            }
        }
    }

    /// Compares the first `size` bytes of `file` with the expected bytes.
    pub fn verify_file(
        &self,
        file: &File,
        what: &str,
        threads: usize,
    ) -> Result<Option<u64>, String> {
        let got = data::file_digests(file, what, self.size, threads)?;
        for k in 0..self.chunks() {
            if got[k as usize] != self.digests[k as usize] {
                let mut actual = vec![0u8; self.chunk_len(k)];
                gdio::file::posix::pread_full(file.as_fd(), &mut actual, k * CHUNK as u64)
                    .map_err(|e| {
                        format!("reading {what} again: {}", std::io::Error::from_raw_os_error(e))
                    })?;
                return Ok(Some(self.check_chunk(k, &actual)?.unwrap_or(k * CHUNK as u64)));
            }
        }
        Ok(None)
    }

    /// Puts the expected bytes into `mem` (for a write without a read before it).
    pub fn load_into(&self, mem: &mut Memory, threads: usize) -> Result<(), String> {
        match mem {
            Memory::Host(h) => {
                let base = h.addr();
                data::parallel_chunks(self.size, threads, |k, off, n| {
                    // SAFETY: chunk `k` of `h`, which holds at least `size` bytes; the chunks
                    // of different threads do not overlap and `h` outlives the threads.
                    let out = unsafe {
                        std::slice::from_raw_parts_mut((base + off as usize) as *mut u8, n)
                    };
                    self.expected(k, out)
                })
            }
            Memory::Device(d) => {
                let mut tmp = vec![0u8; CHUNK.min(self.size as usize)];
                for k in 0..self.chunks() {
                    let t = &mut tmp[..self.chunk_len(k)];
                    self.expected(k, t)?;
                    d.copy_from_host(k as usize * CHUNK, t).map_err(|e| e.to_string())?;
                }
                Ok(())
            }
        }
    }
}
