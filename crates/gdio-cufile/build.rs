//! Gives libcufile.so the soname of NVIDIA's library, so programs linked against or loading
//! `libcufile.so.0` take this one unchanged. No version script: NVIDIA's exports are
//! unversioned too.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcufile.so.0");
    println!("cargo:rerun-if-changed=build.rs");
}
