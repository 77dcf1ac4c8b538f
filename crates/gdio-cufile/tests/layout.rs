//! Struct sizes and offsets against NVIDIA's 1.15 header (cufile-abi.md §3).

use std::mem::{offset_of, size_of};

use cufile::abi::*;

#[test]
fn sizes_match_cufile_1_15() {
    assert_eq!(size_of::<CUfileError_t>(), 8);
    assert_eq!(size_of::<CUfileDescr_t>(), 24);
    assert_eq!(size_of::<CUfileDrvProps_t>(), 56);
    assert_eq!(size_of::<CUfileIOParams_t>(), 64);
    assert_eq!(size_of::<CUfileIOEvents_t>(), 24);
    assert_eq!(size_of::<CUfileOpCounter_t>(), 16);
    assert_eq!(size_of::<CUfileStatsLevel1_t>(), 512);
    assert_eq!(size_of::<CUfileStatsLevel2_t>(), 1024);
    assert_eq!(size_of::<CUfilePerGpuStats_t>(), 248);
    assert_eq!(size_of::<CUfileStatsLevel3_t>(), 5000);
}

#[test]
fn offsets_match_cufile_1_15() {
    assert_eq!(offset_of!(CUfileError_t, cu_err), 4);
    assert_eq!(offset_of!(CUfileDescr_t, handle), 8);
    assert_eq!(offset_of!(CUfileDescr_t, fs_ops), 16);
    assert_eq!(offset_of!(CUfileDrvProps_t, nvfs), 0);
    assert_eq!(offset_of!(CUfileNvfsProps, minor_version), 4);
    assert_eq!(offset_of!(CUfileNvfsProps, poll_thresh_size), 8);
    assert_eq!(offset_of!(CUfileNvfsProps, max_direct_io_size), 16);
    assert_eq!(offset_of!(CUfileNvfsProps, dstatusflags), 24);
    assert_eq!(offset_of!(CUfileNvfsProps, dcontrolflags), 28);
    assert_eq!(offset_of!(CUfileDrvProps_t, fflags), 32);
    assert_eq!(offset_of!(CUfileDrvProps_t, max_device_cache_size), 36);
    assert_eq!(offset_of!(CUfileDrvProps_t, per_buffer_cache_size), 40);
    assert_eq!(offset_of!(CUfileDrvProps_t, max_device_pinned_mem_size), 44);
    assert_eq!(offset_of!(CUfileDrvProps_t, max_batch_io_size), 48);
    assert_eq!(offset_of!(CUfileDrvProps_t, max_batch_io_timeout_msecs), 52);
    assert_eq!(offset_of!(CUfileIOParams_t, dev_ptr_base), 8);
    assert_eq!(offset_of!(CUfileIOParams_t, file_offset), 16);
    assert_eq!(offset_of!(CUfileIOParams_t, dev_ptr_offset), 24);
    assert_eq!(offset_of!(CUfileIOParams_t, size), 32);
    assert_eq!(offset_of!(CUfileIOParams_t, fh), 40);
    assert_eq!(offset_of!(CUfileIOParams_t, opcode), 48);
    assert_eq!(offset_of!(CUfileIOParams_t, cookie), 56);
    assert_eq!(offset_of!(CUfileIOEvents_t, status), 8);
    assert_eq!(offset_of!(CUfileIOEvents_t, ret), 16);
    assert_eq!(offset_of!(CUfileStatsLevel1_t, read_bytes), 96);
    assert_eq!(offset_of!(CUfileStatsLevel1_t, batch_submit_ops), 176);
    assert_eq!(offset_of!(CUfileStatsLevel1_t, batch_read_bytes), 416);
    assert_eq!(offset_of!(CUfileStatsLevel1_t, last_batch_write_bytes), 504);
    assert_eq!(offset_of!(CUfileStatsLevel2_t, read_size_kb_hist), 512);
    assert_eq!(offset_of!(CUfileStatsLevel2_t, write_size_kb_hist), 768);
    assert_eq!(offset_of!(CUfilePerGpuStats_t, read_bytes), 16);
    assert_eq!(offset_of!(CUfilePerGpuStats_t, n_reads_err), 112);
    assert_eq!(offset_of!(CUfilePerGpuStats_t, writes_bytes), 120);
    assert_eq!(offset_of!(CUfilePerGpuStats_t, n_mmap), 208);
    assert_eq!(offset_of!(CUfilePerGpuStats_t, reg_bytes), 240);
    assert_eq!(offset_of!(CUfileStatsLevel3_t, num_gpus), 1024);
    assert_eq!(offset_of!(CUfileStatsLevel3_t, per_gpu_stats), 1032);
}
