//! The module's load-time arguments (`redis-server --loadmodule <path> [NAME value]…`):
//! RedisBloom's `ERROR_RATE`, `INITIAL_SIZE` and `CF_MAX_EXPANSIONS`, and this module's
//! `MAX_KEY_BYTES`.

use std::sync::OnceLock;

/// The default of [`Settings::max_key_bytes`]: 512 MiB, Redis's default `proto-max-bulk-len`,
/// so that every key's `DUMP` payload can be given back to `RESTORE` (and `MIGRATE`).
pub const DEFAULT_MAX_KEY_BYTES: u64 = 512 << 20;

/// What the arguments set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// `ERROR_RATE`: the error rate of BF keys that `BF.ADD`, `BF.MADD` and `BF.INSERT` create
    /// (default 0.01; in (0, 1), capped at 0.25 as RedisBloom does).
    pub bf_error_rate: f64,
    /// `INITIAL_SIZE`: the capacity of BF keys those commands create (default 100; 1 to 2^30).
    pub bf_initial_size: i64,
    /// `CF_MAX_EXPANSIONS` (1 to 65536): accepted for RedisBloom's sake; growth here is in
    /// place and adds no sub-filters, so it limits nothing (`MAX_KEY_BYTES` does).
    pub cf_max_expansions: i64,
    /// `MAX_KEY_BYTES`: the most bytes one key's filter may take (0: no limit). A command that
    /// would create a larger filter is refused, and a growable key stops growing there (its
    /// inserts then answer as a full filter's).
    pub max_key_bytes: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            bf_error_rate: 0.01,
            bf_initial_size: 100,
            cf_max_expansions: 32,
            max_key_bytes: DEFAULT_MAX_KEY_BYTES,
        }
    }
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// The settings the module was loaded with (the defaults outside a server).
pub fn get() -> Settings {
    SETTINGS.get().copied().unwrap_or_default()
}

/// Keeps `s` for [`get`] (once: a module loads once per process).
pub fn set(s: Settings) {
    let _ = SETTINGS.set(s);
}

impl Settings {
    /// Parses `NAME value` pairs (names in any case); `Err` names the argument at fault.
    ///
    /// ```
    /// use cuckoo_sst_redis::settings::Settings;
    /// let s = Settings::parse(&[b"max_key_bytes", b"1048576", b"ERROR_RATE", b"0.001"]).unwrap();
    /// assert_eq!(s.max_key_bytes, 1 << 20);
    /// assert_eq!(s.bf_error_rate, 0.001);
    /// assert_eq!(s.bf_initial_size, 100);
    /// assert!(Settings::parse(&[b"ERROR_RATE"]).is_err());
    /// assert!(Settings::parse(&[b"NO_SUCH", b"1"]).is_err());
    /// ```
    pub fn parse(args: &[&[u8]]) -> Result<Settings, String> {
        let mut s = Settings::default();
        if !args.len().is_multiple_of(2) {
            return Err("arguments come in pairs: NAME value".into());
        }
        for pair in args.chunks(2) {
            let name = String::from_utf8_lossy(pair[0]).to_ascii_uppercase();
            let value = std::str::from_utf8(pair[1]).unwrap_or("");
            let int = |lo: i64, hi: i64| {
                value
                    .parse::<i64>()
                    .ok()
                    .filter(|v| (lo..=hi).contains(v))
                    .ok_or_else(|| format!("{name}: {value:?} is not an integer in [{lo}, {hi}]"))
            };
            match name.as_str() {
                "ERROR_RATE" => {
                    let r = value
                        .parse::<f64>()
                        .ok()
                        .filter(|r| *r > 0.0 && *r < 1.0)
                        .ok_or_else(|| format!("{name}: {value:?} is not a rate in (0, 1)"))?;
                    s.bf_error_rate = r.min(0.25);
                }
                "INITIAL_SIZE" => s.bf_initial_size = int(1, 1 << 30)?,
                "CF_MAX_EXPANSIONS" => s.cf_max_expansions = int(1, 65536)?,
                "MAX_KEY_BYTES" => s.max_key_bytes = int(0, i64::MAX)? as u64,
                _ => {
                    return Err(format!(
                        "unknown argument {name} (ERROR_RATE, INITIAL_SIZE, \
                         CF_MAX_EXPANSIONS, MAX_KEY_BYTES)"
                    ));
                }
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str, value: &str) -> Result<Settings, String> {
        Settings::parse(&[name.as_bytes(), value.as_bytes()])
    }

    /// The default limit is Redis's default `proto-max-bulk-len`, 512 MiB.
    #[test]
    fn the_default_limit_is_512_mib() {
        assert_eq!(DEFAULT_MAX_KEY_BYTES, 536_870_912);
        assert_eq!(Settings::default().max_key_bytes, 536_870_912);
        assert_eq!(Settings::parse(&[]), Ok(Settings::default()));
    }

    /// Each argument held to its range, either side of each bound: a rate strictly inside
    /// (0, 1), capped at 0.25; `INITIAL_SIZE` 1 to 2^30; `CF_MAX_EXPANSIONS` 1 to 65536;
    /// `MAX_KEY_BYTES` 0 to `i64::MAX`.
    #[test]
    fn every_argument_is_held_to_its_range() {
        for bad in ["0", "0.0", "-0.5", "1", "1.0", "1.5", "NaN", "x", ""] {
            assert!(
                one("ERROR_RATE", bad).is_err(),
                "ERROR_RATE {bad:?} accepted"
            );
        }
        for (rate, kept) in [
            ("1e-9", 1e-9),
            ("0.25", 0.25),
            ("0.5", 0.25),
            ("0.999", 0.25),
        ] {
            assert_eq!(
                one("error_rate", rate).unwrap().bf_error_rate,
                kept,
                "{rate}"
            );
        }

        let initial = |v: &str| one("INITIAL_SIZE", v).map(|s| s.bf_initial_size);
        assert_eq!(initial("1"), Ok(1));
        assert_eq!(initial("1073741824"), Ok(1 << 30));
        for bad in ["0", "-1", "1073741825", "1.5"] {
            assert!(initial(bad).is_err(), "INITIAL_SIZE {bad} accepted");
        }

        let expansions = |v: &str| one("Cf_Max_Expansions", v).map(|s| s.cf_max_expansions);
        assert_eq!(expansions("1"), Ok(1));
        assert_eq!(expansions("65536"), Ok(65536));
        for bad in ["0", "65537"] {
            assert!(expansions(bad).is_err(), "CF_MAX_EXPANSIONS {bad} accepted");
        }

        let limit = |v: &str| one("MAX_KEY_BYTES", v).map(|s| s.max_key_bytes);
        assert_eq!(limit("0"), Ok(0));
        assert_eq!(limit("9223372036854775807"), Ok(i64::MAX as u64));
        for bad in ["-1", "9223372036854775808"] {
            assert!(limit(bad).is_err(), "MAX_KEY_BYTES {bad} accepted");
        }

        // Each sets its own field only; the last of a repeated name wins.
        let s = Settings::parse(&[
            b"INITIAL_SIZE",
            b"7",
            b"CF_MAX_EXPANSIONS",
            b"9",
            b"INITIAL_SIZE",
            b"8",
        ])
        .unwrap();
        assert_eq!(
            s,
            Settings {
                bf_initial_size: 8,
                cf_max_expansions: 9,
                ..Settings::default()
            }
        );
    }
}
