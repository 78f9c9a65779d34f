//! How a setting is picked from its layers and recorded as a row: the machinery every section
//! and the route share, kept apart so that none of them reaches into another.

use std::time::Duration;

use super::layer::Layers;
use super::shown::{SettingRow, Shown};
use super::sourced::{Source, Sourced};

/// A flag's value, sourced to the flag.
pub(super) fn flag<T>(value: Option<T>, name: &'static str) -> Option<Sourced<T>> {
    value.map(|v| Sourced::new(v, Source::Flag(name)))
}

/// Picks values and records each one as a row.
pub(super) struct Resolver<'a> {
    layers: &'a Layers,
    pub(super) rows: Vec<SettingRow>,
}

impl<'a> Resolver<'a> {
    /// A resolver naming the files of `layers` as its values' sources, with no rows yet.
    pub(super) fn new(layers: &'a Layers) -> Self {
        Resolver {
            layers,
            rows: Vec::new(),
        }
    }

    /// The files' value of `key`, with the file that set it.
    pub(super) fn file<T>(&self, key: &str, value: Option<T>) -> Option<Sourced<T>> {
        value.map(|v| Sourced::new(v, Source::File(self.layers.source_of(key))))
    }

    /// The first value given, highest layer first, else the default; recorded under `key`.
    pub(super) fn setting<T: Shown, const N: usize>(
        &mut self,
        key: &str,
        layers: [Option<Sourced<T>>; N],
        default: T,
    ) -> Sourced<T> {
        let value = layers
            .into_iter()
            .flatten()
            .next()
            .unwrap_or_else(|| Sourced::default(default));
        self.record(key, &value);
        value
    }

    /// The files' value of `key`, else the default: a key no flag or variable sets.
    pub(super) fn file_setting<T: Shown>(
        &mut self,
        key: &str,
        value: Option<T>,
        default: T,
    ) -> Sourced<T> {
        let file = self.file(key, value);
        self.setting(key, [file], default)
    }

    /// A file value in milliseconds.
    pub(super) fn millis(
        &mut self,
        key: &str,
        value: Option<u64>,
        default: Duration,
    ) -> Sourced<Duration> {
        let ms = self.setting(
            key,
            [self.file(key, value)],
            u64::try_from(default.as_millis()).unwrap_or(u64::MAX),
        );
        Sourced::new(Duration::from_millis(ms.value), ms.source)
    }

    pub(super) fn record<T: Shown>(&mut self, key: &str, value: &Sourced<T>) {
        self.rows.push(SettingRow::new(
            key.to_owned(),
            value.value.shown(),
            &value.source,
        ));
    }

    /// Says what the last recorded value means when it is none (`"none"` alone says little).
    pub(super) fn none_means<T>(&mut self, value: &Sourced<Option<T>>, meaning: &str) {
        if value.value.is_none() {
            self.explain_last(meaning);
        }
    }

    /// Shows the last recorded value as what it means for this run, where the value alone
    /// would mislead (a switch the route's wire format does not read).
    pub(super) fn explain_last(&mut self, meaning: &str) {
        if let Some(row) = self.rows.last_mut() {
            row.value = format!("{meaning:?}");
        }
    }

    /// A row whose value and source are said in words.
    pub(super) fn record_text(&mut self, key: &str, value: String, source: String) {
        self.rows
            .push(SettingRow::described(key.to_owned(), value, source));
    }

    pub(super) fn layers(&self) -> &'a Layers {
        self.layers
    }
}
