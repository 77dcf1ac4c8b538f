//! [`LoadedConfig`]: the configuration with the source of every value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{env, json, keys, Config};
use crate::error::{ErrorKind, Result};

/// Where a configuration value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The built-in default.
    Default,
    /// The config file (`GDIO_CONFIG` or `CUFILE_ENV_PATH_JSON`).
    File,
    /// An environment variable.
    Env,
    /// Set by the program ([`LoadedConfig::set`]).
    Code,
}

impl Source {
    /// `default`, `file`, `env` or `code`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::File => "file",
            Source::Env => "env",
            Source::Code => "code",
        }
    }
}

/// One key of the effective configuration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConfigEntry {
    /// The key, as in the config file (`allow_compat_mode`, `fs.wekafs.rdma_write_support`).
    pub key: String,
    /// Its value.
    pub value: Value,
    /// Which layer set it.
    pub source: Source,
    /// The file or variable that set it, when not the default or code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// The configuration and where each value came from.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    config: Config,
    sources: BTreeMap<String, (Source, Option<String>)>,
    file: Option<PathBuf>,
    unknown_env: Vec<env::UnknownVar>,
}

impl Default for LoadedConfig {
    fn default() -> Self {
        LoadedConfig::defaults()
    }
}

impl From<Config> for LoadedConfig {
    /// A config built in code: every value that differs from the default counts as `code`.
    fn from(config: Config) -> Self {
        let base = Config::default();
        let mut sources = BTreeMap::new();
        for key in keys::all(&config) {
            if keys::get(&config, &key) != keys::get(&base, &key) {
                sources.insert(key, (Source::Code, None));
            }
        }
        LoadedConfig { config, sources, file: None, unknown_env: Vec::new() }
    }
}

impl LoadedConfig {
    /// The built-in defaults alone.
    pub fn defaults() -> Self {
        LoadedConfig {
            config: Config::default(),
            sources: BTreeMap::new(),
            file: None,
            unknown_env: Vec::new(),
        }
    }

    /// Builds defaults < file < environment from the variables `vars`.
    pub(crate) fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Result<Self> {
        let vars: Vec<(String, String)> = vars.into_iter().collect();
        let mut loaded = LoadedConfig::defaults();
        let file_var = env::FILE_VARS.iter().find_map(|name| {
            vars.iter()
                .rev()
                .find(|(k, v)| k == name && !v.trim().is_empty())
                .map(|(k, v)| (k.clone(), v.clone()))
        });
        if let Some((var, path)) = file_var {
            let path = PathBuf::from(path);
            let settings = json::read(&path).map_err(|e| {
                crate::Error::new(ErrorKind::Config, format!("{} (named by {var})", e))
                    .with_path(&path)
            })?;
            for s in settings {
                let origin = format!("config file {}, key {}", path.display(), s.written);
                let detail = Some(path.display().to_string());
                loaded.apply(&s.key, &s.value, Source::File, &origin, detail)?;
            }
            loaded.file = Some(path);
        }
        for s in env::settings(&vars)? {
            let origin = format!("environment variable {}", s.var);
            loaded.apply(&s.key, &s.value, Source::Env, &origin, Some(s.var.clone()))?;
        }
        loaded.config.validate()?;
        loaded.unknown_env = env::unknown_vars(&vars);
        for u in &loaded.unknown_env {
            tracing::warn!("{u}");
        }
        Ok(loaded)
    }

    /// The `GDIO_*` environment variables that gdio does not know (misspelt keys, most likely),
    /// each with the nearest known name; empty for a config not loaded from an environment.
    /// [`Config::load`] also logs each as a `tracing` warning.
    pub fn unknown_env(&self) -> &[env::UnknownVar] {
        &self.unknown_env
    }

    fn apply(
        &mut self,
        key: &str,
        value: &Value,
        source: Source,
        origin: &str,
        detail: Option<String>,
    ) -> Result<()> {
        keys::set(&mut self.config, key, value, origin)?;
        let key = match keys::split_fs_key(key) {
            Some((name, k)) => format!("fs.{}.{k}", keys::fs_name(name)),
            None => key.to_owned(),
        };
        self.sources.insert(key, (source, detail));
        Ok(())
    }

    /// Sets `key` from code (source `code`, above every other layer). An unknown key, a value
    /// of the wrong type, or a value that makes the configuration invalid is an error naming the
    /// key; the configuration is unchanged then.
    pub fn set(&mut self, key: &str, value: impl Into<Value>) -> Result<()> {
        let before = self.clone();
        let value = value.into();
        let r = self
            .apply(key, &value, Source::Code, &format!("code, key {key}"), None)
            .and_then(|()| self.config.validate());
        if r.is_err() {
            *self = before;
        }
        r
    }

    /// The effective configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The configuration, consumed.
    pub fn into_config(self) -> Config {
        self.config
    }

    /// The config file that was read, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Which layer set `key` (`default` for keys never set).
    pub fn source(&self, key: &str) -> Source {
        self.sources.get(key).map_or(Source::Default, |s| s.0)
    }

    /// Every key with its value and source, in a stable order (flat keys, then per filesystem).
    pub fn entries(&self) -> Vec<ConfigEntry> {
        keys::all(&self.config)
            .into_iter()
            .map(|key| {
                let value = keys::get(&self.config, &key).unwrap_or(Value::Null);
                let (source, origin) =
                    self.sources.get(&key).cloned().unwrap_or((Source::Default, None));
                ConfigEntry { key, value, source, origin }
            })
            .collect()
    }
}
