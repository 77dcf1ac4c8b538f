//! The configuration the CLI runs with: defaults < `GDIO_CONFIG` file < environment.

/// The layered configuration in effect for this process.
pub fn load() -> gdio::Result<gdio::LoadedConfig> {
    gdio::Config::load()
}
