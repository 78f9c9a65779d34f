//! `/copy`: text put on the terminal's clipboard with OSC 52, which the terminal (or tmux, or
//! the terminal at the far end of an SSH connection) handles, so no clipboard program is
//! needed on this machine.

use std::io::Write as _;

/// The most a copy sends: terminals cap what one OSC 52 sequence may carry (xterm's default is
/// about 100 kB of base64), so a longer answer is cut and said to be.
pub const MAX_COPY_BYTES: usize = 74_000;

/// Puts `text` on the clipboard; returns how many bytes of it were sent.
pub fn copy(text: &str) -> std::io::Result<usize> {
    let mut end = text.len().min(MAX_COPY_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let sent = &text[..end];
    let mut out = std::io::stdout();
    write!(out, "\x1b]52;c;{}\x07", base64(sent.as_bytes()))?;
    out.flush()?;
    Ok(end)
}

/// Standard base64 with padding, as OSC 52 takes it.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_as_rfc_4648_gives_it() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(plain.as_bytes()), coded);
        }
    }
}
