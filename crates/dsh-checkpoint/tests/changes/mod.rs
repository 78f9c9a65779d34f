//! The kinds of change a turn makes to a tree, made at random (deterministically), for the
//! tests that check a snapshot taken some quicker way against a whole walk.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub fn write(root: &Path, path: &str, content: &str) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, content).unwrap();
}

/// A small deterministic generator (so a failure is the same every run).
pub struct Dice(pub u64);

impl Dice {
    pub fn roll(&mut self, sides: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % sides
    }
}

/// One change of the kinds a turn makes, somewhere in the tree.
pub fn change(root: &Path, dice: &mut Dice, round: u64) {
    let folder =
        ["", "src", "src/deep", "docs", "new", "target", "made/a/b"][dice.roll(7) as usize];
    let name = format!("f{}", dice.roll(6));
    let path = if folder.is_empty() {
        name
    } else {
        format!("{folder}/{name}")
    };
    let full = root.join(&path);
    match dice.roll(9) {
        0 | 1 => write(root, &path, &format!("round {round}\n")),
        2 => {
            let _ = std::fs::remove_file(&full);
        }
        3 => {
            if full.is_file() {
                let mode = if dice.roll(2) == 0 { 0o755 } else { 0o644 };
                std::fs::set_permissions(&full, PermissionsExt::from_mode(mode)).unwrap();
            }
        }
        4 => {
            let to = root.join(folder).join(format!("moved{}", dice.roll(3)));
            if full.exists() && to.parent().unwrap().is_dir() {
                let _ = std::fs::rename(&full, to);
            }
        }
        5 if !folder.is_empty() => {
            let _ = std::fs::remove_dir_all(root.join(folder.split('/').next().unwrap()));
        }
        6 => {
            let _ = std::fs::remove_file(&full);
            let _ = std::os::unix::fs::symlink(format!("target-{round}"), &full);
        }
        7 => write(
            root,
            format!("{folder}/.env.local").trim_start_matches('/'),
            "K=v\n",
        ),
        _ => {
            // A folder made with something deep in it, or a whole folder moved.
            let made = root.join(format!("made/r{round}/x"));
            std::fs::create_dir_all(&made).unwrap();
            std::fs::write(made.join("deep.txt"), "deep").unwrap();
            if dice.roll(2) == 0 && root.join("docs").is_dir() {
                let _ = std::fs::rename(root.join("docs"), root.join(format!("docs{round}")));
            }
        }
    }
}
