//! Mapping of session keys (`telegram:123`, `cli:direct`) to file names that
//! cannot leave the sessions folder.
//!
//! `:` becomes `_` as in nanobot, so nanobot's files are found under their
//! own names. Characters that are unsafe in a file name (`/`, `\`, control
//! characters, a leading `.`) are percent-encoded, so no key can name a path
//! outside the folder. Very long keys are shortened with a hash suffix.

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

const MAX_STEM_BYTES: usize = 180;

/// The file stem (without `.jsonl`) for a session key.
pub fn file_stem(key: &str) -> Result<String> {
    if key.is_empty() {
        return Err(Error::BadKey {
            key: key.into(),
            reason: "the key is empty",
        });
    }
    if key.contains('\0') {
        return Err(Error::BadKey {
            key: key.into(),
            reason: "the key contains a NUL byte",
        });
    }
    if key.len() > 4096 {
        return Err(Error::BadKey {
            key: format!("{}…", super::budget::cut_at_byte_boundary(key, 64)),
            reason: "the key is longer than 4096 bytes",
        });
    }
    let mut out = String::with_capacity(key.len());
    for (i, c) in key.chars().enumerate() {
        let keep = c.is_alphanumeric()
            || matches!(c, '-' | '_' | '@' | '+' | '=' | ',')
            || (c == '.' && i > 0);
        if c == ':' {
            out.push('_');
        } else if keep && !c.is_control() {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    if out.len() > MAX_STEM_BYTES {
        let mut cut = MAX_STEM_BYTES - 17;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('-');
        out.push_str(&short_hash(key));
    }
    Ok(out)
}

/// The stem used when two keys map to the same file name.
pub fn disambiguated_stem(key: &str) -> Result<String> {
    let base = file_stem(key)?;
    Ok(format!("{base}-{}", short_hash(key)))
}

fn short_hash(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    hex::encode(digest.as_slice().get(..8).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanobot_compatible_and_safe() {
        assert_eq!(file_stem("telegram:123").unwrap(), "telegram_123");
        assert_eq!(file_stem("cli:direct").unwrap(), "cli_direct");
        assert_eq!(
            file_stem("../../etc/passwd").unwrap(),
            "%2E.%2F..%2Fetc%2Fpasswd"
        );
        assert_eq!(file_stem("a/b\\c").unwrap(), "a%2Fb%5Cc");
        assert_eq!(file_stem("飞书:群1").unwrap(), "飞书_群1");
        assert!(file_stem("a\0b").is_err());
        assert!(file_stem("").is_err());
        // Too long, with its 64th byte inside a character: refused, named
        // by a prefix cut on a character boundary.
        let long = format!("a{}", "é".repeat(3000));
        match file_stem(&long) {
            Err(Error::BadKey { key, .. }) => assert!(key.starts_with("aé") && key.len() < 70),
            other => panic!("{other:?}"),
        }
        let long = "k".repeat(1000);
        let s = file_stem(&long).unwrap();
        assert!(s.len() <= MAX_STEM_BYTES);
        assert_ne!(s, file_stem(&"k".repeat(999)).unwrap());
        for k in ["..", ".", "./x", "a/../..", "\n"] {
            let s = file_stem(k).unwrap();
            assert!(!s.contains('/') && !s.starts_with('.'), "{k:?} -> {s}");
        }
    }
}
