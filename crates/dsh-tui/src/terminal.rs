//! The terminal while the UI runs: raw mode, bracketed paste, and an inline viewport at the
//! bottom of the screen. Whatever way the UI ends (a return, an error, a panic), the terminal
//! is given back as it was.

use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, EnableBracketedPaste, EnableFocusChange,
};
use crossterm::execute;
use crossterm::terminal::{disable_raw_mode, enable_raw_mode};
use ratatui::backend::CrosstermBackend;
use ratatui::widgets::{Paragraph, Widget};
use ratatui::{Terminal, TerminalOptions, Viewport};

use crate::app::App;
use crate::wrap::wrap_lines;

/// The live area's height for a terminal of `rows`: half of it, within 10..=20 rows.
pub fn live_height(rows: u16) -> u16 {
    (rows / 2).clamp(10, 20).min(rows)
}

pub struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    pub fn enter() -> io::Result<Screen> {
        let (_, rows) = crossterm::terminal::size()?;
        enable_raw_mode()?;
        install_panic_hook();
        if let Err(e) = execute!(io::stdout(), EnableBracketedPaste, EnableFocusChange) {
            restore();
            return Err(e);
        }
        let options = TerminalOptions {
            viewport: Viewport::Inline(live_height(rows)),
        };
        match Terminal::with_options(CrosstermBackend::new(io::stdout()), options) {
            Ok(terminal) => Ok(Screen { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }

    /// Writes the finished cells above the live area, then draws it.
    pub fn show(&mut self, app: &mut App) -> io::Result<()> {
        // A panic the agent caught (a tool's, turned into a tool error) had the hook give the
        // terminal back; the UI goes on, so it takes it again and draws the live area whole.
        if RESTORED.swap(false, Ordering::SeqCst) {
            enable_raw_mode()?;
            execute!(io::stdout(), EnableBracketedPaste, EnableFocusChange)?;
            self.terminal.clear()?;
        }
        let pending = app.take_pending();
        if !pending.is_empty() {
            let width = self.terminal.size()?.width;
            let lines = wrap_lines(&pending, width);
            // In slices a terminal of any height can take.
            for chunk in lines.chunks(200) {
                let height = u16::try_from(chunk.len()).unwrap_or(u16::MAX);
                self.terminal.insert_before(height, |buf| {
                    Paragraph::new(chunk.to_vec()).render(buf.area, buf);
                })?;
            }
        }
        self.terminal.draw(|frame| app.draw(frame))?;
        Ok(())
    }

    /// Gives the terminal to another program (`$EDITOR`): the live area cleared, the cursor
    /// at its top and shown, raw mode and paste mode off.
    pub fn suspend(&mut self) -> io::Result<()> {
        self.terminal.clear()?;
        let top = self.terminal.get_frame().area().y;
        self.terminal.set_cursor_position((0, top))?;
        self.terminal.show_cursor()?;
        restore();
        Ok(())
    }

    /// Takes the terminal back after [`Screen::suspend`]; the next draw fills the live area
    /// whole.
    pub fn resume(&mut self) -> io::Result<()> {
        enable_raw_mode()?;
        execute!(io::stdout(), EnableBracketedPaste, EnableFocusChange)?;
        self.terminal.clear()
    }

    /// After a resize: the viewport is placed again (ratatui keeps it under the transcript,
    /// and clears the screen when the terminal got narrower, since the terminal has re-wrapped
    /// what was on it) and the next draw fills it.
    pub fn resized(&mut self) -> io::Result<()> {
        self.terminal.autoresize()
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        // The live area is cleared so the shell's prompt follows the transcript; not after a
        // panic, whose message the hook has just printed there.
        if !std::thread::panicking() {
            let _ = self.terminal.clear();
        }
        let top = self.terminal.get_frame().area().y;
        let _ = self.terminal.set_cursor_position((0, top));
        let _ = self.terminal.show_cursor();
        restore();
    }
}

/// Raw mode off, paste mode and focus reporting off, cursor shown.
fn restore() {
    let _ = execute!(
        io::stdout(),
        DisableBracketedPaste,
        DisableFocusChange,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
}

/// Set when the panic hook gave the terminal back.
static RESTORED: AtomicBool = AtomicBool::new(false);

/// A panic restores the terminal before its message is printed, so the message is readable
/// and the shell usable if the panic ends the process.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        RESTORED.store(true, Ordering::SeqCst);
        previous(info);
    }));
}
