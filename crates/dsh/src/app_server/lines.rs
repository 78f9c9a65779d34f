//! The client's lines, read with a bound: a line past [`LINE_LIMIT`] is skipped without being
//! held (its bytes are read and dropped), and one that is not UTF-8 is named as such; neither
//! ends the server, which answers each with `BAD_INPUT` and reads on.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest line the server reads, 16 MiB: far over any message a client means to send (a
/// host tool's output the model reads is cut to a preview long before), and a bound on what
/// one line can make the server hold.
pub const LINE_LIMIT: usize = 16 << 20;

/// One line of input, without its line break.
#[derive(Debug, PartialEq)]
pub enum Line {
    Text(String),
    /// Longer than the limit: this many bytes, none of them kept.
    TooLong(usize),
    /// Bytes that are not UTF-8.
    NotText(std::str::Utf8Error),
}

/// The next line of `reader`, holding at most `limit` bytes of it; `None` at the end of input.
pub async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    limit: usize,
) -> std::io::Result<Option<Line>> {
    let mut kept = Vec::new();
    let mut length = 0usize;
    let mut read_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            if !read_any {
                return Ok(None);
            }
            break;
        }
        read_any = true;
        let end = available.iter().position(|b| *b == b'\n');
        let piece = &available[..end.unwrap_or(available.len())];
        length = length.saturating_add(piece.len());
        if length <= limit {
            kept.extend_from_slice(piece);
        } else if !kept.is_empty() {
            // Past the limit: what was kept goes, and nothing more is.
            kept = Vec::new();
        }
        let taken = piece.len() + usize::from(end.is_some());
        reader.consume(taken);
        if end.is_some() {
            break;
        }
    }
    if length > limit {
        return Ok(Some(Line::TooLong(length)));
    }
    if kept.last() == Some(&b'\r') {
        kept.pop();
    }
    Ok(Some(match String::from_utf8(kept) {
        Ok(text) => Line::Text(text),
        Err(error) => Line::NotText(error.utf8_error()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(input: &[u8], limit: usize) -> Vec<Line> {
        // A small buffer, so lines span many reads.
        let mut reader = tokio::io::BufReader::with_capacity(3, input);
        let mut lines = Vec::new();
        while let Some(line) = next_line(&mut reader, limit).await.unwrap() {
            lines.push(line);
        }
        lines
    }

    #[tokio::test]
    async fn lines_are_read_bounded_and_checked() {
        let text = |t: &str| Line::Text(t.to_owned());
        assert_eq!(
            all(b"one\r\ntwo\n\nlast", 8).await,
            [text("one"), text("two"), text(""), text("last")]
        );
        let lines = all(b"short\nfar too long a line\nok\n", 8).await;
        assert_eq!(lines, [text("short"), Line::TooLong(19), text("ok")]);
        let lines = all(b"\xff\xfe\nok\n", 8).await;
        assert!(matches!(lines[0], Line::NotText(_)), "{lines:?}");
        assert_eq!(lines[1], text("ok"));
    }
}
