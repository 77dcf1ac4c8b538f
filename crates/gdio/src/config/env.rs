//! The environment layer: `GDIO_<KEY>` for every key, and the vendor variables of cuFile and
//! hipFile with their documented meaning.
//!
//! Booleans take `true/false/1/0/yes/no/on/off` in any case; anything else is an error naming
//! the variable and the value (hipFile silently ignores `1`; gdio refuses to guess).

use serde_json::Value;

use super::keys::{self, KeyKind};
use crate::error::{Error, ErrorKind, Result};

/// Vendor variables and the key each sets, applied before the `GDIO_` ones (which win).
pub const VENDOR_VARS: &[(&str, &str)] = &[
    ("CUFILE_ALLOW_COMPAT_MODE", "allow_compat_mode"),
    ("CUFILE_FORCE_COMPAT_MODE", "force_compat_mode"),
    ("CUFILE_USE_PCIP2PDMA", "use_pci_p2pdma"),
    ("HIPFILE_ALLOW_COMPAT_MODE", "allow_compat_mode"),
    ("HIPFILE_FORCE_COMPAT_MODE", "force_compat_mode"),
    ("HIPFILE_UNSUPPORTED_FILE_SYSTEMS", "unsupported_file_systems"),
];

/// Variables naming the config file, first found wins.
pub const FILE_VARS: &[&str] = &["GDIO_CONFIG", "CUFILE_ENV_PATH_JSON"];

/// Parses a boolean the strict way: `true/false/1/0/yes/no/on/off`, any case, surrounding
/// blanks ignored. `var` names the variable for the error.
pub fn parse_bool(var: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(Error::new(
            ErrorKind::Config,
            format!("environment variable {var}={value:?} is not a boolean: use true/false, 1/0, yes/no or on/off"),
        )),
    }
}

/// The environment variable name of `key`: `GDIO_` + the key in capitals, dots as `_`.
pub fn var_name(key: &str) -> String {
    format!("GDIO_{}", key.replace('.', "_").to_ascii_uppercase())
}

/// Turns the text of variable `var` into the JSON value `key` takes.
pub fn parse_value(var: &str, key: &str, kind: KeyKind, text: &str) -> Result<Value> {
    let bad = |want: &str| {
        Error::new(
            ErrorKind::Config,
            format!("environment variable {var}={text:?}: {key} must be {want}"),
        )
    };
    let t = text.trim();
    Ok(match kind {
        KeyKind::Bool => Value::Bool(parse_bool(var, text)?),
        KeyKind::Count => {
            let want = keys::bound(key)
                .map_or_else(|| "a whole number of at least 0".to_owned(), |b| b.describe());
            Value::from(t.parse::<u64>().map_err(|_| bad(&want))?)
        }
        KeyKind::Fraction => {
            let f = t.parse::<f64>().map_err(|_| bad("a number between 0 and 1"))?;
            serde_json::Number::from_f64(f)
                .map(Value::Number)
                .ok_or_else(|| bad("a number between 0 and 1"))?
        }
        KeyKind::DirectIo | KeyKind::IoEngine => Value::String(t.to_owned()),
        KeyKind::RoutingOrder | KeyKind::StatusCodes => {
            if t.starts_with('[') {
                serde_json::from_str(t).map_err(|_| bad("a JSON list or a comma-separated list"))?
            } else {
                let items = t.split(',').map(str::trim).filter(|s| !s.is_empty());
                if kind == KeyKind::StatusCodes {
                    let codes: std::result::Result<Vec<u64>, _> = items.map(str::parse).collect();
                    Value::from(codes.map_err(|_| bad("a comma-separated list of status codes"))?)
                } else {
                    Value::Array(items.map(|s| Value::String(s.to_owned())).collect())
                }
            }
        }
    })
}

/// Variables gdio (library, CLI, tests) reads that are not configuration keys.
pub const OTHER_VARS: &[&str] = &[
    "GDIO_CONFIG",
    "GDIO_REQUIRE_GPU",
    "GDIO_REQUIRE_TORCH",
    "GDIO_PY_POOL",
    "GDIO_SIMULATE_GPUS",
    "GDIO_GDR_DEVICE",
    "GDIO_STRESS_SECS",
    "GDIO_LOG",
];

/// A `GDIO_*` variable gdio does not know.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnknownVar {
    /// The variable's name.
    pub var: String,
    /// The nearest known variable, when one is close.
    pub suggestion: Option<String>,
}

impl std::fmt::Display for UnknownVar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "environment variable {} is not a gdio setting and is ignored", self.var)?;
        match &self.suggestion {
            Some(s) => write!(f, " (did you mean {s}?)"),
            None => Ok(()),
        }
    }
}

/// Whether `var` is a per-filesystem variable `GDIO_FS_<NAME>_<KEY>`.
fn is_fs_var(var: &str) -> bool {
    let Some(rest) = var.strip_prefix("GDIO_FS_") else { return false };
    keys::FS_KEYS.iter().any(|(k, _)| {
        rest.strip_suffix(&format!("_{}", k.to_ascii_uppercase())).is_some_and(|n| !n.is_empty())
    })
}

/// The `GDIO_*` variables of `vars` that are neither a key's variable nor one of
/// [`OTHER_VARS`], each with the nearest known name (edit distance), in name order.
pub fn unknown_vars(vars: &[(String, String)]) -> Vec<UnknownVar> {
    let known: Vec<String> = keys::KEYS
        .iter()
        .map(|(k, _)| var_name(k))
        .chain(OTHER_VARS.iter().map(|v| (*v).to_owned()))
        .collect();
    let mut out: Vec<UnknownVar> = vars
        .iter()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with("GDIO_") && !known.contains(k) && !is_fs_var(k))
        .map(|var| UnknownVar {
            var: var.clone(),
            suggestion: keys::nearest(var, known.iter().map(String::as_str)).map(str::to_owned),
        })
        .collect();
    out.sort_by(|a, b| a.var.cmp(&b.var));
    out.dedup();
    out
}

/// One setting found in the environment: variable, key, value.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvSetting {
    /// The variable's name.
    pub var: String,
    /// The key it sets.
    pub key: String,
    /// The value, typed.
    pub value: Value,
}

/// The settings the variables `vars` make, in the order to apply them: vendor variables first,
/// then `GDIO_` ones. Variables that are not configuration are skipped; a configuration
/// variable with a bad value is an error naming it.
pub fn settings(vars: &[(String, String)]) -> Result<Vec<EnvSetting>> {
    let lookup = |name: &str| vars.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let mut out = Vec::new();
    for (var, key) in VENDOR_VARS {
        if let Some(text) = lookup(var) {
            let value = parse_value(var, key, KeyKind::Bool, text)?;
            out.push(EnvSetting { var: (*var).to_owned(), key: (*key).to_owned(), value });
        }
    }
    for (key, kind) in keys::KEYS {
        let var = var_name(key);
        if let Some(text) = lookup(&var) {
            let value = parse_value(&var, key, *kind, text)?;
            out.push(EnvSetting { var, key: (*key).to_owned(), value });
        }
    }
    // Per-filesystem keys: GDIO_FS_<NAME>_<KEY>, for any filesystem name.
    let mut fs_vars: Vec<&(String, String)> =
        vars.iter().filter(|(k, _)| k.starts_with("GDIO_FS_")).collect();
    fs_vars.sort_by(|a, b| a.0.cmp(&b.0));
    for (var, text) in fs_vars {
        let rest = &var["GDIO_FS_".len()..];
        for (fs_key, kind) in keys::FS_KEYS {
            let suffix = format!("_{}", fs_key.to_ascii_uppercase());
            if let Some(name) = rest.strip_suffix(&suffix).filter(|n| !n.is_empty()) {
                let key = format!("fs.{}.{fs_key}", keys::fs_name(&name.to_ascii_lowercase()));
                let value = parse_value(var, &key, *kind, text)?;
                out.push(EnvSetting { var: var.clone(), key, value });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_booleans() {
        for t in ["true", "TRUE", "1", "yes", "On", " on "] {
            assert!(parse_bool("X", t).unwrap(), "{t}");
        }
        for f in ["false", "False", "0", "NO", "off"] {
            assert!(!parse_bool("X", f).unwrap(), "{f}");
        }
        let e = parse_bool("HIPFILE_ALLOW_COMPAT_MODE", "maybe").unwrap_err().to_string();
        assert!(e.contains("HIPFILE_ALLOW_COMPAT_MODE") && e.contains("maybe"), "{e}");
    }

    #[test]
    fn unknown_gdio_vars_are_listed_with_the_nearest_name() {
        let vars: Vec<(String, String)> = [
            ("GDIO_THREDS", "4"),
            ("GDIO_THREADS", "4"),
            ("GDIO_FS_LUSTRE_POSIX_GDS_MIN_KB", "1"),
            ("GDIO_CONFIG", "/x"),
            ("GDIO_COMPLETELY_ELSE", "1"),
            ("PATH", "/bin"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let u = unknown_vars(&vars);
        assert_eq!(u.len(), 2, "{u:?}");
        assert_eq!(u[0].var, "GDIO_COMPLETELY_ELSE");
        assert_eq!(u[0].suggestion, None);
        assert_eq!(u[1].var, "GDIO_THREDS");
        assert_eq!(u[1].suggestion.as_deref(), Some("GDIO_THREADS"));
        assert!(u[1].to_string().contains("did you mean GDIO_THREADS?"));
    }

    #[test]
    fn var_names() {
        assert_eq!(var_name("allow_compat_mode"), "GDIO_ALLOW_COMPAT_MODE");
        assert_eq!(var_name("fs.lustre.posix_gds_min_kb"), "GDIO_FS_LUSTRE_POSIX_GDS_MIN_KB");
    }

    #[test]
    fn fs_vars_and_order() {
        let vars = vec![
            ("GDIO_FS_LUSTRE_POSIX_GDS_MIN_KB".to_owned(), "64".to_owned()),
            ("GDIO_RDMA_DYNAMIC_ROUTING_ORDER".to_owned(), "SYS_MEM, P2P".to_owned()),
            ("HIPFILE_ALLOW_COMPAT_MODE".to_owned(), "false".to_owned()),
            ("GDIO_ALLOW_COMPAT_MODE".to_owned(), "yes".to_owned()),
        ];
        let s = settings(&vars).unwrap();
        assert_eq!(s[0].var, "HIPFILE_ALLOW_COMPAT_MODE");
        assert_eq!(s[1].var, "GDIO_ALLOW_COMPAT_MODE");
        assert!(s.iter().any(|x| x.key == "fs.lustre.posix_gds_min_kb" && x.value == 64));
        assert!(s.iter().any(|x| x.key == "rdma_dynamic_routing_order"
            && x.value == serde_json::json!(["SYS_MEM", "P2P"])));
    }

    #[test]
    fn status_code_lists_parse_from_commas_or_json() {
        let one = |text: &str| {
            parse_value("GDIO_HTTP_STATUS_CODES", "http_status_codes", KeyKind::StatusCodes, text)
        };
        assert_eq!(one("429, 503").unwrap(), serde_json::json!([429, 503]));
        assert_eq!(one("[500]").unwrap(), serde_json::json!([500]));
        assert!(one("503,x").unwrap_err().to_string().contains("GDIO_HTTP_STATUS_CODES"));
        let mut c = crate::Config::default();
        crate::config::keys::set(&mut c, "http_status_codes", &one("429,503").unwrap(), "env")
            .unwrap();
        assert_eq!(c.http_status_codes, vec![429, 503]);
    }
}
