//! Facts about text every crate reads alike: which characters belong to
//! scripts written without spaces between words.

/// True for characters written without spaces between words (Han, kana,
/// Hangul): their words are single characters or pairs of them.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK Extension A
        | 0x4E00..=0x9FFF // CJK Unified Ideographs
        | 0xF900..=0xFAFF // Compatibility Ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0x1100..=0x11FF // Hangul Jamo
        | 0x20000..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn han_kana_and_hangul_are_cjk() {
        for c in ['用', 'か', 'カ', '한', '𠀀'] {
            assert!(is_cjk(c), "{c}");
        }
        for c in ['a', 'é', '1', '。', ' '] {
            assert!(!is_cjk(c), "{c}");
        }
    }
}
