//! The configuration the CLI runs with.

/// The configuration in effect for this process.
pub fn load() -> gdio::Result<gdio::Config> {
    Ok(gdio::Config::default())
}
