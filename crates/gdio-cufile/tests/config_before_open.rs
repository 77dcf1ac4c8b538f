//! What the parameter getters and `cuFileDriverGetProperties` show before the driver opens:
//! the values open will apply (the defaults, then `CUFILE_ENV_PATH_JSON`'s file, then the
//! `CUFILE_*` variables, then staged values), not the defaults alone. A binary of its own: it
//! sets environment variables, which every test of one process would share.

mod common;

use std::ffi::c_int;

use common::*;
use cufile::abi::*;
use cufile::params::{flag, size};
use cufile::*;

fn size_param(p: usize) -> usize {
    let mut v = 0usize;
    assert_eq!(cuFileGetParameterSizeT(p as c_int, &mut v).err, 0);
    v
}

fn bool_param(p: usize) -> bool {
    let mut v = true;
    assert_eq!(cuFileGetParameterBool(p as c_int, &mut v).err, 0);
    v
}

fn compat_in_properties() -> bool {
    let mut p = CUfileDrvProps_t::default();
    assert_eq!(cuFileDriverGetProperties(&mut p).err, 0);
    p.nvfs.dcontrolflags & CONTROL_ALLOW_COMPAT_MODE != 0
}

#[test]
fn getters_before_open_show_the_file_the_variables_and_staged_values() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cufile.json");
    std::fs::write(
        &json,
        r#"{ // NVIDIA's files carry comments
          "properties": {"max_direct_io_size_kb": 1024, "allow_compat_mode": false,
                         "max_device_cache_size_kb": 4096}}"#,
    )
    .unwrap();
    let default_direct = size_param(size::MAX_DIRECT_IO_SIZE_KB);
    assert_ne!(default_direct, 1024);
    assert!(compat_in_properties(), "compat allowed by default");

    // SAFETY: the only test of this binary; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var("CUFILE_ENV_PATH_JSON", &json) };
    assert_eq!(size_param(size::MAX_DIRECT_IO_SIZE_KB), 1024, "from the file");
    assert_eq!(size_param(size::MAX_DEVICE_CACHE_SIZE_KB), 4096);
    assert!(!bool_param(flag::ALLOW_COMPAT_MODE));
    assert!(!compat_in_properties(), "the file turned compat off");
    let mut p = CUfileDrvProps_t::default();
    assert_eq!(cuFileDriverGetProperties(&mut p).err, 0);
    assert_eq!(p.nvfs.max_direct_io_size, 1024);
    assert_eq!(p.max_device_cache_size, 4096);

    // A variable over the file, a staged value over both; none of it opened the driver.
    // SAFETY: as above.
    unsafe { std::env::set_var("CUFILE_ALLOW_COMPAT_MODE", "true") };
    assert!(bool_param(flag::ALLOW_COMPAT_MODE));
    assert!(compat_in_properties());
    assert_eq!(cuFileSetParameterSizeT(size::MAX_DIRECT_IO_SIZE_KB as c_int, 64).err, 0);
    assert_eq!(size_param(size::MAX_DIRECT_IO_SIZE_KB), 64);
    assert_eq!(cuFileUseCount(), 0, "reading parameters does not open the driver");

    // Open applies exactly what the getters showed.
    assert_eq!(cuFileDriverOpen().err, 0);
    assert_eq!(size_param(size::MAX_DIRECT_IO_SIZE_KB), 64);
    assert_eq!(size_param(size::MAX_DEVICE_CACHE_SIZE_KB), 4096);
    assert!(bool_param(flag::ALLOW_COMPAT_MODE));
    assert!(compat_in_properties());
    assert_eq!(cuFileDriverClose_v2().err, 0);
    // SAFETY: as above.
    unsafe {
        std::env::remove_var("CUFILE_ALLOW_COMPAT_MODE");
        std::env::remove_var("CUFILE_ENV_PATH_JSON");
    }
}
