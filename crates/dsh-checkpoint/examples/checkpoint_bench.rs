//! What checkpoints cost: the time one adds to a turn in a 10,000-file workspace, and the disk
//! a 100-turn session takes. Run by `bench/checkpoints.sh` (release build), which puts the
//! markdown it prints into docs/performance.md.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::time::{Duration, Instant};

use dsh_checkpoint::{CheckpointStore, Coverage, Snapshot};

const FILES: usize = 10_000;
const TURNS: usize = 100;
/// Files a turn changes.
const CHANGED: usize = 10;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

fn take(store: &CheckpointStore, ws: &Path, last: Option<&Snapshot>) -> (Snapshot, Duration) {
    let started = Instant::now();
    let snapshot = store.take(ws, &Coverage::default(), last).unwrap();
    store.save(&snapshot).unwrap();
    (snapshot, started.elapsed())
}

fn main() {
    let ws = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    // A source tree: 100 folders of 100 files of about 2 KiB each.
    let mut source_bytes = 0u64;
    for i in 0..FILES {
        let dir = ws.path().join(format!("src/m{:03}", i / 100));
        std::fs::create_dir_all(&dir).unwrap();
        let body = format!("// file {i}\n{}\n", "fn f() { let x = 1; }\n".repeat(90));
        source_bytes += body.len() as u64;
        std::fs::write(dir.join(format!("f{i}.rs")), body).unwrap();
    }
    let (first, cold) = take(&store, ws.path(), None);
    // A new process (a resumed session) has no snapshot of its own yet: the store's record
    // of the files it read stands in.
    let (_, resumed) = take(&store, ws.path(), None);
    let mut unchanged = Vec::new();
    let mut last = first;
    for _ in 0..5 {
        let (snapshot, took) = take(&store, ws.path(), Some(&last));
        unchanged.push(took);
        last = snapshot;
    }
    let after_first = store.disk_usage();
    let mut changed = Vec::new();
    for turn in 0..TURNS {
        for k in 0..CHANGED {
            let i = (turn * 37 + k * 101) % FILES;
            let path = ws.path().join(format!("src/m{:03}/f{i}.rs", i / 100));
            let mut body = std::fs::read_to_string(&path).unwrap();
            body.push_str(&format!("// turn {turn}\n"));
            std::fs::write(&path, body).unwrap();
        }
        // Each turn is checkpointed at its start and its end; its end is the next start.
        let (snapshot, took) = take(&store, ws.path(), Some(&last));
        changed.push(took);
        last = snapshot;
    }
    let after_turns = store.disk_usage();
    let mib = |b: u64| format!("{:.1}", b as f64 / f64::from(1 << 20));
    println!(
        "## Checkpoints (`bench/checkpoints.sh`)\n\n\
         A workspace of {FILES} files ({} MiB) in 100 folders, snapshot into a store on the same \
         disk (release build, 2 cores, warm page cache). A turn takes two checkpoints, at its \
         start and its end. The first checkpoint in a workspace writes one file per content, \
         which is most of its time on this disk.\n\n\
         | checkpoint | time (ms) |\n|---|---|\n\
         | the first in a workspace (every file read and stored) | {} |\n\
         | the first of a later process, nothing changed (the store's record of what it read) | {} |\n\
         | nothing changed since the last (median of 5) | {} |\n\
         | {CHANGED} files changed since the last (median of {TURNS}) | {} |\n\n\
         Disk: {} MiB after the first checkpoint (the store holds each content once); {} MiB \
         after {TURNS} turns that each changed {CHANGED} files, that is {} KiB a turn.\n",
        mib(source_bytes),
        ms(cold),
        ms(resumed),
        ms(median(unchanged)),
        ms(median(changed)),
        mib(after_first),
        mib(after_turns),
        (after_turns - after_first) / TURNS as u64 / 1024,
    );
}
