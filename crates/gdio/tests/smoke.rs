mod common;
use common::*;
use gdio::{DirectIoPolicy, FileHandle};

#[test]
fn smoke_host_and_sim() {
    for (_, d) in dirs() {
        let data = random_bytes(1, 1 << 20);
        let p = write_file(d.path(), "a", &data);
        for direct in [DirectIoPolicy::Off, DirectIoPolicy::On] {
            let drv = sim_driver(tiny_config(direct, 4), 1);
            let f = FileHandle::open(&p).unwrap();
            let mut host = vec![0u8; data.len()];
            assert_eq!(drv.read(&f, 0, &mut host, 0, data.len()).unwrap(), data.len());
            assert_eq!(host, data);
            let mut dev = drv.alloc_device(0, data.len()).unwrap();
            assert_eq!(drv.read(&f, 123, &mut dev, 5, data.len() - 200).unwrap(), data.len() - 200);
            let back = dev.to_vec().unwrap();
            assert_eq!(&back[5..5 + data.len() - 200], &data[123..123 + data.len() - 200]);
        }
    }
}
