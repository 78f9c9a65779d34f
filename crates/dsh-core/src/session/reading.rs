//! A resume's reading of a session's log: a record at a time, keeping what lists show of it,
//! what its open turn left and where its last turns start (what a front end shows).

use std::path::Path;

use dsh_protocol::{Record, RecordEnvelope, SessionHeader};

use super::recent::SHOWN_TURNS;
use super::{Session, rewind_targets};
use crate::CoreError;
use crate::listing::Listing;
use crate::log::{After, Item, LogEnd, may_rewind, read_each};
use crate::repair::OpenTurn;

/// A log read through by a resume: what lists show of it, where the read ended, and the
/// records that close a turn it left open.
pub(super) struct LogRead {
    pub(super) listing: Listing,
    pub(super) end: LogEnd,
    pub(super) closing: Vec<Record>,
}

/// What a resume keeps track of as it absorbs a log a record at a time.
#[derive(Default)]
struct Reading {
    listing: Option<Listing>,
    open_turn: OpenTurn,
    /// Where the last record taken ended.
    end: u64,
}

impl Reading {
    fn header(&mut self, header: &SessionHeader, end: u64) {
        self.listing = Some(Listing::new(header, end));
        self.end = end;
    }

    fn take(&mut self, session: &mut Session, envelope: RecordEnvelope, end: u64) {
        if let Some(listing) = self.listing.as_mut() {
            listing.note(&envelope, end);
        }
        self.open_turn.note(&envelope.record);
        if matches!(envelope.record, Record::TurnStart { .. }) {
            let recent = &mut session.recent;
            recent.starts.push_back(After {
                offset: self.end,
                seq: envelope.seq.saturating_sub(1),
            });
            if recent.starts.len() > SHOWN_TURNS {
                recent.starts.pop_front();
                recent.earlier += 1;
            }
        }
        self.end = end;
        session.absorb(envelope.record);
    }
}

impl Session {
    /// Rebuilds the session from its log at `path`, read a record at a time: a long log is
    /// never held whole (only the history it leaves), unless it may rewind the conversation.
    /// The conversation at each position a rewind goes back to is kept as absorbing passes
    /// it, so those positions are found first, from the whole log; a log whose bytes name no
    /// rewind (nearly every one) has none.
    pub(super) fn absorb_log(&mut self, path: &Path) -> Result<LogRead, CoreError> {
        let mut reading = Reading::default();
        let end = if may_rewind(path) {
            let mut records = Vec::new();
            let end = read_each(path, None, |item, end| match item {
                Item::Header(header) => reading.header(&header, end),
                Item::Record(envelope) => records.push((envelope, end)),
            })?;
            self.rewind_targets = rewind_targets(records.iter().map(|(e, _)| &e.record));
            for (envelope, end) in records {
                reading.take(self, envelope, end);
            }
            end
        } else {
            read_each(path, None, |item, end| match item {
                Item::Header(header) => reading.header(&header, end),
                Item::Record(envelope) => reading.take(self, envelope, end),
            })?
        };
        let Reading {
            listing, open_turn, ..
        } = reading;
        let listing = listing.ok_or_else(|| CoreError::Damaged {
            path: path.to_path_buf(),
            message: "it has no header line".into(),
        })?;
        Ok(LogRead {
            listing,
            end,
            closing: open_turn.closing(),
        })
    }

    /// The records a front end shows of the session as it was resumed: those of its last
    /// [`SHOWN_TURNS`] turns (read again from where the first of them starts in the log,
    /// nothing before it), and how many turns came before them. All of a log with no more
    /// turns than that.
    pub fn shown_records(&self) -> (Vec<Record>, u32) {
        let Some(first) = self
            .recent
            .starts
            .front()
            .filter(|_| self.recent.earlier > 0)
        else {
            return (self.logged_records(), 0);
        };
        let mut records = Vec::new();
        let read = read_each(self.log.path(), Some(*first), |item, _| {
            if let Item::Record(envelope) = item {
                records.push(envelope.record);
            }
        });
        match read {
            Ok(_) => (records, self.recent.earlier),
            // Read whole when it was opened, and unreadable now: nothing to show.
            Err(_) => (Vec::new(), 0),
        }
    }
}
