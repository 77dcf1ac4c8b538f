//! Gives libgdrapi.so the soname of upstream GDRCopy 2.x, so programs linked against
//! upstream load this library unchanged.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libgdrapi.so.2");
    println!("cargo:rerun-if-changed=build.rs");
}
