//! `gdio save --via gpu:N` keeps host memory bounded by its bounce buffers, not by the
//! checkpoint: the process's peak resident memory, saving a 256 MiB checkpoint through a
//! simulated GPU (whose "device" memory is itself host memory, so the checkpoint counts once),
//! stays under the checkpoint plus 128 MiB, where a save that copied the checkpoint to the host
//! first would need it twice. The file written is compared with the one read. A test binary of
//! its own: the peak is read with `getrusage(RUSAGE_CHILDREN)`, the largest of this process's
//! finished children.

use std::process::Command;

use gdio::safetensors::{save, Dtype, SaveOptions, SaveTensor};
use rand::{RngCore, SeedableRng};

#[test]
fn a_save_through_the_gpu_holds_the_checkpoint_once_in_host_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = rand::rngs::StdRng::seed_from_u64(77);
    let piece = 8 << 20;
    let data: Vec<Vec<u8>> = (0..32)
        .map(|_| {
            let mut d = vec![0u8; piece];
            r.fill_bytes(&mut d);
            d
        })
        .collect();
    let names: Vec<String> = (0..data.len()).map(|i| format!("w{i}")).collect();
    let tensors: Vec<SaveTensor<'_>> = data
        .iter()
        .zip(&names)
        .map(|(d, n)| SaveTensor::host(n, Dtype::U8, &[d.len() as u64], d).unwrap())
        .collect();
    let driver = gdio::Driver::new(gdio::Config::default()).unwrap();
    let src = dir.path().join("big.safetensors");
    save(&driver, &tensors, &src, &SaveOptions::default()).unwrap();
    drop(tensors);
    drop(data);
    let checkpoint = std::fs::metadata(&src).unwrap().len();

    let out = dir.path().join("out.safetensors");
    let run = Command::new(env!("CARGO_BIN_EXE_gdio"))
        .arg("save")
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .args(["--via", "gpu:0", "--sim-gpus", "1", "--json"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    // SAFETY: getrusage fills the struct it is given; zeroed is a valid rusage.
    let peak = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut u), 0);
        u.ru_maxrss as u64 * 1024
    };
    assert!(
        peak < checkpoint + (128 << 20),
        "peak resident memory {} MiB for a {} MiB checkpoint",
        peak >> 20,
        checkpoint >> 20
    );
    assert!(peak > checkpoint, "the simulated GPU holds the checkpoint: {} MiB", peak >> 20);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&src).unwrap());
}
