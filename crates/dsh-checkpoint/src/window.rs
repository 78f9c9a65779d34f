//! Reading a file of megabytes forward, a window at a time, as the record of the last walk
//! and Git's index are read beside a walk: what was passed is let go, so a 50,000-file tree's
//! files cost their window and not their size.

use std::io::Read;

/// How much is read at once.
const WINDOW: usize = 64 << 10;

/// A source read forward, with the bytes from the current position at hand.
pub(crate) struct Window {
    source: Box<dyn Read + Send>,
    buffer: Vec<u8>,
    at: usize,
    ended: bool,
    failed: bool,
}

impl Window {
    pub(crate) fn new(source: impl Read + Send + 'static) -> Window {
        Window {
            source: Box::new(source),
            buffer: Vec::new(),
            at: 0,
            ended: false,
            failed: false,
        }
    }

    /// The bytes from the current position: at least `wanted` of them, unless the source
    /// ends (or fails) before.
    pub(crate) fn ahead(&mut self, wanted: usize) -> &[u8] {
        if self.buffer.len() - self.at < wanted && !self.ended {
            self.buffer.drain(..self.at);
            self.at = 0;
            let goal = wanted.max(WINDOW);
            let mut filled = self.buffer.len();
            self.buffer.resize(goal, 0);
            while filled < goal && !self.ended {
                match self.source.read(&mut self.buffer[filled..]) {
                    Ok(0) => self.ended = true,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        self.ended = true;
                        self.failed = true;
                    }
                }
            }
            self.buffer.truncate(filled);
        }
        &self.buffer[self.at..]
    }

    /// Passes `n` bytes (of those [`Window::ahead`] gave).
    pub(crate) fn advance(&mut self, n: usize) {
        self.at = (self.at + n).min(self.buffer.len());
    }

    /// Everything left, read whole (a compressed body, which cannot be read in pieces here).
    pub(crate) fn rest(&mut self) -> Option<Vec<u8>> {
        let mut rest = self.buffer.split_off(self.at);
        self.source.read_to_end(&mut rest).ok()?;
        self.ended = true;
        self.at = 0;
        self.buffer.clear();
        Some(rest)
    }

    /// Whether the source failed (rather than ended): what it did not give is not known.
    pub(crate) fn failed(&self) -> bool {
        self.failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that gives a few bytes a read, as a pipe might.
    struct Trickle(std::io::Cursor<Vec<u8>>);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(7);
            self.0.read(&mut buf[..n])
        }
    }

    #[test]
    fn a_source_is_read_forward_in_windows_whatever_each_read_gives() {
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut window = Window::new(Trickle(std::io::Cursor::new(bytes.clone())));
        let mut read = Vec::new();
        let mut step = 1;
        loop {
            let ahead = window.ahead(5000);
            if ahead.is_empty() {
                break;
            }
            assert!(ahead.len() >= 5000 || read.len() + ahead.len() == bytes.len());
            let take = step.min(ahead.len());
            read.extend_from_slice(&ahead[..take]);
            window.advance(take);
            step = step * 3 % 9973 + 1;
        }
        assert_eq!(read, bytes);
        assert!(!window.failed());
        let mut window = Window::new(std::io::Cursor::new(bytes.clone()));
        window.advance(0);
        assert_eq!(window.ahead(10), &bytes[..WINDOW]);
        window.advance(100);
        assert_eq!(window.rest().unwrap(), bytes[100..]);
    }
}
