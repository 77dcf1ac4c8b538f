//! 16 threads read and write one registered handle at once, each through its own
//! `bufPtr_offset` into one registered base (as KvikIO's thread pool does), checked against a
//! model of the file.

mod common;

use std::fs::OpenOptions;
use std::sync::{Arc, Mutex};

use common::*;
use cufile::*;
use rand::{Rng, SeedableRng};

const THREADS: usize = 16;
const STRIPE: usize = 256 * 1024;
const OPS: usize = 150;

#[test]
fn sixteen_threads_on_one_handle_match_the_model() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared");
    let initial = random_bytes(42, THREADS * STRIPE);
    std::fs::write(&path, &initial).unwrap();
    let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
    let fh = register(&f) as usize;
    // One registered base; thread t uses [t*STRIPE, (t+1)*STRIPE) of it.
    let mut base = vec![0u8; THREADS * STRIPE];
    let base_addr = base.as_mut_ptr() as usize;
    assert_eq!(cuFileBufRegister(base_addr as *const _, base.len(), 0).err, 0);
    let model = Arc::new(Mutex::new(initial));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let model = model.clone();
            std::thread::spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(1000 + t as u64);
                let stripe = t * STRIPE;
                for _ in 0..OPS {
                    let off = rng.random_range(0..STRIPE - 1);
                    let len = rng.random_range(1..=(STRIPE - off).min(64 * 1024));
                    let boff = stripe + rng.random_range(0..=STRIPE - len);
                    // SAFETY: this thread alone uses [stripe, stripe + STRIPE) of the base.
                    let region = unsafe {
                        std::slice::from_raw_parts_mut((base_addr + boff) as *mut u8, len)
                    };
                    let foff = (stripe + off) as i64;
                    if rng.random_bool(0.5) {
                        rng.fill(&mut region[..]);
                        let n = cuFileWrite(
                            fh as CUfileHandle_t,
                            base_addr as *const _,
                            len,
                            foff,
                            boff as i64,
                        );
                        assert_eq!(n, len as isize);
                        model.lock().unwrap()[foff as usize..foff as usize + len]
                            .copy_from_slice(region);
                    } else {
                        let n = cuFileRead(
                            fh as CUfileHandle_t,
                            base_addr as *mut _,
                            len,
                            foff,
                            boff as i64,
                        );
                        assert_eq!(n, len as isize);
                        let m = model.lock().unwrap();
                        assert_eq!(
                            &region[..],
                            &m[foff as usize..foff as usize + len],
                            "thread {t}"
                        );
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(std::fs::read(&path).unwrap(), *model.lock().unwrap());
    assert_eq!(cuFileBufDeregister(base.as_ptr().cast()).err, 0);
    cuFileHandleDeregister(fh as CUfileHandle_t);
    closed();
}
