//! A stdio server's output, read a message (a line) at a time up to [`MAX_MESSAGE`] bytes.
//!
//! rmcp drops a longer line and reads on, so a call whose answer was dropped would wait for
//! its timeout with nothing said. Here the stream ends instead, at once, which fails every
//! request still waiting with a closed connection, and the link says why
//! ([`Oversized`]): the call's error names the limit rather than a lost connection.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The longest message dsh reads from a server, its newline not counted: what rmcp takes over
/// streamable HTTP (one server-sent event), so either transport carries the same answers.
pub(crate) const MAX_MESSAGE: usize = 16 << 20;

/// Set once a connection's server sent a message longer than [`MAX_MESSAGE`].
pub(crate) type Oversized = Arc<AtomicBool>;

/// `inner`, ending with an error once a line passes [`MAX_MESSAGE`] bytes.
pub(crate) struct BoundedLines<R> {
    inner: R,
    /// The bytes of the line read so far.
    line: usize,
    oversized: Oversized,
}

impl<R> BoundedLines<R> {
    pub(crate) fn new(inner: R, oversized: Oversized) -> Self {
        BoundedLines {
            inner,
            line: 0,
            oversized,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        // What came before the long line was passed on whole; the line itself never ends.
        if this.oversized.load(Ordering::SeqCst) {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the server sent a message of more than {MAX_MESSAGE} bytes"),
            )));
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            for piece in buf.filled()[before..].split_inclusive(|b| *b == b'\n') {
                let ended = piece.last() == Some(&b'\n');
                this.line += piece.len() - usize::from(ended);
                if this.line > MAX_MESSAGE {
                    this.oversized.store(true, Ordering::SeqCst);
                }
                if ended {
                    this.line = 0;
                }
            }
        }
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt as _;

    #[tokio::test]
    async fn a_line_past_the_limit_ends_the_stream_after_what_came_before() {
        let mut input = b"{\"a\":1}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_MESSAGE + 1));
        input.extend(b"\n{\"b\":2}\n");
        let oversized = Oversized::default();
        let mut reader = BoundedLines::new(&input[..], oversized.clone());
        let mut first = [0u8; 8];
        reader.read_exact(&mut first).await.unwrap();
        assert_eq!(&first, b"{\"a\":1}\n");
        let mut rest = Vec::new();
        let error = reader.read_to_end(&mut rest).await.unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
        assert!(oversized.load(Ordering::SeqCst));
        // A line of exactly the limit passes.
        let mut input = vec![b'x'; MAX_MESSAGE];
        input.push(b'\n');
        let oversized = Oversized::default();
        let mut all = Vec::new();
        BoundedLines::new(&input[..], oversized.clone())
            .read_to_end(&mut all)
            .await
            .unwrap();
        assert!(!oversized.load(Ordering::SeqCst));
    }
}
