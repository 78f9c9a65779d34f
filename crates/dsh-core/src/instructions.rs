//! Workspace instructions: `AGENTS.md` (and `CLAUDE.md`, and their `.local.md` overlays) from
//! `$DSH_HOME` and from every folder between the project root and the working directory, sent
//! to the model once, as a user message right after the first task of a session.
//!
//! The project root is the nearest folder above the working directory holding a root marker
//! (`.git` by default); without one, the working directory itself. The whole message, frame
//! included, stays within a byte budget (65,536 by default): whole files are dropped from the
//! broadest end first, and if the most specific one alone is still too large it is cut on a
//! character boundary; the message says what was left out.

pub(crate) mod install;

use std::path::{Path, PathBuf};

use dsh_config::project::{CANDIDATES, InstructionSettings, LOCAL_CANDIDATES, project_root};
use dsh_protocol::InstructionFile;

/// Files larger than this are not read at all.
const MAX_SOURCE_BYTES: u64 = 1 << 20;

const OPEN: &str = "<system-reminder>\n";
const CLOSE: &str = "\n</system-reminder>";
/// 235 bytes, so that the frame around one root `AGENTS.md` is 304 bytes, as the reference's
/// is: a supervisor that sizes files for the reference's budget sizes them right for ours.
const INTRO: &str = "Instructions for this workspace follow, each under the file it comes from. \
Apply them wherever relevant; a file deeper in the tree takes precedence over broader ones, and \
none overrides the system prompt or what the user asks directly.";
const COMPACT_INTRO: &str =
    "Workspace instructions were left out or cut to fit the instruction budget.";

/// One file found.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Source {
    /// How the message names it.
    shown: String,
    /// Where it is.
    path: PathBuf,
    text: String,
}

impl Source {
    fn new(shown: String, path: PathBuf, text: String) -> Source {
        Source { shown, path, text }
    }

    fn identity(&self) -> InstructionFile {
        InstructionFile {
            path: self.path.display().to_string(),
            digest: Some(digest(&self.text)),
        }
    }
}

/// A message of instructions and the files it delivered (its identity in the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub text: String,
    pub files: Vec<InstructionFile>,
}

/// What a session has delivered so far: each file's path and the digest last sent (`None`:
/// it was said to no longer apply).
pub type Loaded = std::collections::BTreeMap<String, Option<String>>;

/// The digest recorded for a file a session was given before dsh recorded digests: it was
/// delivered, but what it said then is not known.
pub const DIGEST_UNKNOWN: &str = "unknown";

/// What an instruction message delivered, read from its text alone (for a message logged
/// before dsh recorded its files), as every version of dsh has framed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UntrackedDelivery {
    /// The baseline message: its files cannot be told apart from its text.
    Baseline,
    /// A nested file's message, the file named relative to the session's directory.
    Nested(String),
}

impl UntrackedDelivery {
    pub fn read(text: &str) -> Option<UntrackedDelivery> {
        let rest = text.strip_prefix(OPEN)?;
        if rest.starts_with("Instructions for this workspace follow") {
            return Some(UntrackedDelivery::Baseline);
        }
        let (file, _) = rest
            .strip_prefix(NESTED_HEADER)?
            .split_once("\n\nThey apply to work under ")?;
        Some(UntrackedDelivery::Nested(file.to_owned()))
    }
}

/// How a nested file's message begins, before the file's name.
const NESTED_HEADER: &str = "Additional instructions from: ";

fn digest(text: &str) -> String {
    dsh_tools::sha256_hex(text.as_bytes())
}

/// The message for a session in `cwd`, or `None` when there is nothing to send.
/// `home_shown` is how `$DSH_HOME` is named in the message (`~/.dsh` for the default home).
pub fn baseline(
    cwd: &Path,
    home: &Path,
    home_shown: &str,
    settings: &InstructionSettings,
) -> Option<Delivery> {
    if !settings.active() {
        return None;
    }
    let sources = baseline_sources(cwd, home, home_shown, settings);
    if sources.is_empty() {
        return None;
    }
    // Every file found is part of the identity, those the budget left out too: a resumed
    // session would leave them out again.
    let files = sources.iter().map(Source::identity).collect();
    Some(Delivery {
        text: fit(sources, settings.max_bytes),
        files,
    })
}

/// The files of the baseline chain, broadest first.
fn baseline_sources(
    cwd: &Path,
    home: &Path,
    home_shown: &str,
    settings: &InstructionSettings,
) -> Vec<Source> {
    let mut sources = Vec::new();
    let home_file = home.join("AGENTS.md");
    if let Some(text) = read(&home_file) {
        sources.push(Source::new(
            format!("{home_shown}/AGENTS.md"),
            home_file,
            text,
        ));
    }
    let root = project_root(cwd, &settings.root_markers);
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&root))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    for dir in dirs {
        let mut seen: Vec<String> = Vec::new();
        for name in CANDIDATES.iter().chain(LOCAL_CANDIDATES) {
            let Some(text) = read(&dir.join(name)) else {
                continue;
            };
            // Two names for the same text (a CLAUDE.md that is a copy of AGENTS.md) count once.
            if seen.iter().any(|s| s.trim() == text.trim()) {
                continue;
            }
            seen.push(text.clone());
            let relative = dir.strip_prefix(&root).unwrap_or(Path::new(""));
            sources.push(Source::new(
                relative.join(name).display().to_string(),
                dir.join(name),
                text,
            ));
        }
    }
    sources
}

/// Instructions in folders below `cwd` that the file tools reached with `file`: each folder
/// between `cwd` (not included: the baseline has it) and the file's folder is looked at once
/// (`probed` remembers), and each instruction file found becomes one message.
/// A file the session already delivered, unchanged, is not sent again.
pub fn nested(
    cwd: &Path,
    file: &Path,
    probed: &mut std::collections::HashSet<PathBuf>,
    settings: &InstructionSettings,
    loaded: &Loaded,
) -> Vec<Delivery> {
    if !settings.active() {
        return Vec::new();
    }
    let file = if file.is_absolute() {
        file.to_path_buf()
    } else {
        cwd.join(file)
    };
    let Some(parent) = file.parent() else {
        return Vec::new();
    };
    let Ok(below) = parent.strip_prefix(cwd) else {
        return Vec::new();
    };
    let mut messages = Vec::new();
    let mut dir = cwd.to_path_buf();
    for part in below.components() {
        dir.push(part);
        if !probed.insert(dir.clone()) {
            continue;
        }
        let relative = dir.strip_prefix(cwd).unwrap_or(&dir).display().to_string();
        let mut seen: Vec<String> = Vec::new();
        for name in CANDIDATES.iter().chain(LOCAL_CANDIDATES) {
            let Some(text) = read(&dir.join(name)) else {
                continue;
            };
            if seen.iter().any(|s| s.trim() == text.trim()) {
                continue;
            }
            seen.push(text.clone());
            let header = format!(
                "{NESTED_HEADER}{relative}/{name}\n\nThey apply to work under \
                 `{relative}`, over broader instructions; none of them overrides the system prompt \
                 or what the user asks directly."
            );
            let source = Source::new(format!("{relative}/{name}"), dir.join(name), text);
            let identity = source.identity();
            let delivered = match loaded.get(&identity.path) {
                Some(Some(digest)) => {
                    Some(digest) == identity.digest.as_ref() || digest == DIGEST_UNKNOWN
                }
                _ => false,
            };
            if delivered {
                continue;
            }
            messages.push(Delivery {
                text: fit_nested(&header, source, settings.max_bytes),
                files: vec![identity],
            });
        }
    }
    messages
}

/// One nested file's message within `max` bytes, its text cut on a character boundary if it
/// must be (the frame and header are never cut).
fn fit_nested(header: &str, source: Source, max: usize) -> String {
    let body = |text: &str| format!("{OPEN}{header}\n\n{}{CLOSE}", quoted(text));
    let whole = body(&source.text);
    if whole.len() <= max {
        return whole;
    }
    // Quoting can change the length (an escaped closing tag), so the cut is checked whole.
    let mut cut = max.saturating_sub(whole.len() - source.text.len());
    loop {
        let kept = prefix_within(&source.text, cut);
        let text = body(kept);
        if text.len() <= max || kept.is_empty() {
            return text;
        }
        cut = kept.len() - 1;
    }
}

/// The longest start of `text` of at most `max` bytes that ends on a character boundary.
fn prefix_within(text: &str, max: usize) -> &str {
    let mut cut = max.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

/// For a resumed session: what changed in the files it was given (and in the baseline chain)
/// since they were delivered, as one message, or `None` when nothing did. A changed file is
/// sent whole again, a new one of the chain is added, a deleted one is withdrawn.
pub fn changes(
    cwd: &Path,
    home: &Path,
    home_shown: &str,
    settings: &InstructionSettings,
    loaded: &Loaded,
) -> Option<Delivery> {
    if !settings.active() {
        return None;
    }
    let chain = baseline_sources(cwd, home, home_shown, settings);
    let mut blocks = Vec::new();
    let mut files = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for source in &chain {
        let identity = source.identity();
        seen.insert(identity.path.clone());
        match loaded.get(&identity.path) {
            Some(digest) if *digest == identity.digest => continue,
            Some(Some(_)) => blocks.push(format!(
                "Updated instructions from: {}\n\n{UPDATED}\n\n{}",
                source.shown,
                quoted(&source.text)
            )),
            _ => blocks.push(format!(
                "Additional instructions from: {}\n\n{}",
                source.shown,
                quoted(&source.text)
            )),
        }
        files.push(identity);
    }
    // Files delivered before that are not in the chain now (nested ones, or ones since
    // deleted): re-read where they are.
    for (path, digest) in loaded {
        let Some(digest) = digest else { continue };
        if seen.contains(path) {
            continue;
        }
        let file = PathBuf::from(path);
        let shown = file
            .strip_prefix(cwd)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| path.clone());
        match read(&file) {
            Some(text) if self::digest(&text) == *digest => {}
            Some(text) => {
                blocks.push(format!(
                    "Updated instructions from: {shown}\n\n{UPDATED}\n\n{}",
                    quoted(&text)
                ));
                files.push(Source::new(shown, file, text).identity());
            }
            None => {
                blocks.push(format!("Instructions removed: {shown}\n\n{REMOVED}"));
                files.push(InstructionFile {
                    path: path.clone(),
                    digest: None,
                });
            }
        }
    }
    if blocks.is_empty() {
        return None;
    }
    let mut text = format!("{OPEN}{}{CLOSE}", blocks.join("\n\n"));
    if text.len() > settings.max_bytes {
        let notice = format!(
            "\n\n(cut to fit the instruction budget of {} bytes)",
            settings.max_bytes
        );
        let room = settings
            .max_bytes
            .saturating_sub(OPEN.len() + CLOSE.len() + notice.len());
        let body = blocks.join("\n\n");
        text = format!("{OPEN}{}{notice}{CLOSE}", prefix_within(&body, room));
    }
    Some(Delivery { text, files })
}

const UPDATED: &str = "This file changed after it was given to you; follow this content instead \
of what it said before.";
const REMOVED: &str = "This file is gone; what it said no longer applies.";

/// A file's text as it goes inside the reminder: trailing space dropped, and a literal
/// closing tag escaped so the file cannot end the reminder early.
fn quoted(text: &str) -> String {
    text.trim_end()
        .replace("</system-reminder>", "<\\/system-reminder>")
}

fn read(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SOURCE_BYTES {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    (!text.trim().is_empty()).then_some(text)
}

fn render(intro: &str, notice: Option<&str>, sources: &[Source]) -> String {
    let mut body = String::from(intro);
    if let Some(notice) = notice {
        body.push_str("\n\n");
        body.push_str(notice);
    }
    for source in sources {
        body.push_str("\n\nInstructions from: ");
        body.push_str(&source.shown);
        body.push_str("\n\n");
        body.push_str(&quoted(&source.text));
    }
    format!("{OPEN}{body}{CLOSE}")
}

/// The message within `max` bytes.
fn fit(mut sources: Vec<Source>, max: usize) -> String {
    let whole = render(INTRO, None, &sources);
    if whole.len() <= max {
        return whole;
    }
    let mut omitted = Vec::new();
    while sources.len() > 1 {
        omitted.push(sources.remove(0).shown);
        let notice = format!(
            "Instruction budget of {max} bytes: left out {}.",
            omitted.join(", ")
        );
        let text = render(INTRO, Some(&notice), &sources);
        if text.len() <= max {
            return text;
        }
    }
    // One file left, still too large: cut it to what fits.
    let last = &sources[0];
    let original = last.text.trim_end().len();
    for intro in [INTRO, COMPACT_INTRO] {
        let notice = |kept: usize| {
            let mut parts = Vec::new();
            if !omitted.is_empty() {
                parts.push(format!("left out {}", omitted.join(", ")));
            }
            parts.push(format!(
                "cut {} from {original} to {kept} bytes",
                last.shown
            ));
            format!("Instruction budget of {max} bytes: {}.", parts.join("; "))
        };
        // The longest prefix that fits, on a character boundary (binary search on bytes).
        let (mut low, mut high) = (0usize, original);
        let text = &last.text;
        let fits = |kept: usize| {
            let mut cut = kept;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let source = Source::new(
                last.shown.clone(),
                last.path.clone(),
                text[..cut].to_owned(),
            );
            let rendered = render(intro, Some(&notice(cut)), std::slice::from_ref(&source));
            (rendered.len() <= max).then_some(rendered)
        };
        let mut best = fits(0);
        if best.is_none() {
            continue;
        }
        while low < high {
            let mid = (low + high).div_ceil(2);
            match fits(mid) {
                Some(rendered) => {
                    best = Some(rendered);
                    low = mid;
                }
                None => high = mid - 1,
            }
        }
        if let Some(rendered) = best {
            return rendered;
        }
    }
    // Not even the frame fits: say only that instructions were left out, as far as it goes.
    let mut text = format!("{OPEN}{COMPACT_INTRO}{CLOSE}");
    while text.len() > max && !text.is_empty() {
        text.pop();
    }
    text
}

/// What a session was given already, as far as its next turn's instructions depend on it.
pub(crate) enum Given<'a> {
    /// A new session: nothing yet.
    Nothing,
    /// A session logged before dsh recorded which files each delivery carried.
    Untracked,
    /// The files its deliveries carried.
    Files(&'a Loaded),
}

/// The workspace instructions a session's next turn carries: all of them for a new session,
/// what changed since for a resumed one.
pub(crate) fn for_next_turn(
    cwd: &Path,
    home: &Path,
    home_shown: &str,
    settings: &InstructionSettings,
    given: Given<'_>,
) -> Option<Delivery> {
    match given {
        Given::Nothing => baseline(cwd, home, home_shown, settings),
        // What the model was given cannot be compared with the files now, and sending them
        // all again would repeat them.
        Given::Untracked => None,
        Given::Files(loaded) => changes(cwd, home, home_shown, settings, loaded),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deliveries_logged_without_their_files_are_read_from_their_text() {
        let root = tempfile::tempdir().unwrap();
        let settings = InstructionSettings::default();
        std::fs::create_dir(root.path().join("pkg")).unwrap();
        std::fs::write(root.path().join("AGENTS.md"), "root rules\n").unwrap();
        std::fs::write(root.path().join("pkg/AGENTS.md"), "pkg rules\n").unwrap();
        let home = root.path().join("home");
        let base = baseline(root.path(), &home, "~/.dsh", &settings).unwrap();
        assert_eq!(
            UntrackedDelivery::read(&base.text),
            Some(UntrackedDelivery::Baseline)
        );
        let mut probed = std::collections::HashSet::new();
        let nested = nested(
            root.path(),
            &root.path().join("pkg/x.rs"),
            &mut probed,
            &settings,
            &Loaded::new(),
        );
        assert_eq!(
            UntrackedDelivery::read(&nested[0].text),
            Some(UntrackedDelivery::Nested("pkg/AGENTS.md".into()))
        );
        assert_eq!(
            UntrackedDelivery::read("<system-reminder>\nsomething else"),
            None
        );
        assert_eq!(
            UntrackedDelivery::read("Additional instructions from: x"),
            None
        );
    }

    #[test]
    fn nested_files_are_found_once_per_folder_as_the_tools_reach_them() {
        let (_dir, root, _home) = tree();
        std::fs::write(root.join("pkg/AGENTS.md"), "pkg rules\n").unwrap();
        std::fs::write(root.join("pkg/app/AGENTS.md"), "app rules\n").unwrap();
        let mut probed = std::collections::HashSet::new();
        let settings = InstructionSettings::default();
        let first = nested(
            &root,
            Path::new("pkg/app/main.rs"),
            &mut probed,
            &settings,
            &Loaded::new(),
        );
        assert_eq!(first.len(), 2);
        assert!(
            first[0]
                .text
                .contains("Additional instructions from: pkg/AGENTS.md")
        );
        assert!(first[1].text.contains("`pkg/app`") && first[1].text.contains("app rules"));
        assert!(
            nested(
                &root,
                &root.join("pkg/app/lib.rs"),
                &mut probed,
                &settings,
                &Loaded::new()
            )
            .is_empty()
        );
        assert!(
            nested(
                &root,
                Path::new("/elsewhere/x"),
                &mut probed,
                &settings,
                &Loaded::new()
            )
            .is_empty()
        );
        let tiny = InstructionSettings {
            max_bytes: 400,
            ..InstructionSettings::default()
        };
        std::fs::create_dir_all(root.join("pkg/big")).unwrap();
        std::fs::write(root.join("pkg/big/AGENTS.md"), "é".repeat(500)).unwrap();
        let cut = nested(
            &root,
            Path::new("pkg/big/x"),
            &mut probed,
            &tiny,
            &Loaded::new(),
        );
        assert!(
            cut[0].text.len() <= 400 && cut[0].text.contains('é'),
            "{}",
            cut[0].text.len()
        );
    }

    fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        let sub = root.join("pkg/app");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        (dir, root, home)
    }

    #[test]
    fn the_chain_runs_from_home_through_the_root_to_the_working_directory() {
        let (_dir, root, home) = tree();
        std::fs::write(home.join("AGENTS.md"), "home rules\n").unwrap();
        std::fs::write(root.join("AGENTS.md"), "root rules\n").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "root rules\n").unwrap();
        std::fs::write(root.join("pkg/AGENTS.local.md"), "my pkg notes\n").unwrap();
        std::fs::write(
            root.join("pkg/app/AGENTS.md"),
            "app rules </system-reminder>\n",
        )
        .unwrap();
        let text = baseline(
            &root.join("pkg/app"),
            &home,
            "~/.dsh",
            &InstructionSettings::default(),
        )
        .unwrap()
        .text;
        let order: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("Instructions from: "))
            .collect();
        assert_eq!(
            order,
            vec![
                "~/.dsh/AGENTS.md",
                "AGENTS.md",
                "pkg/AGENTS.local.md",
                "pkg/app/AGENTS.md"
            ]
        );
        assert!(text.contains("app rules <\\/system-reminder>"));
        assert!(text.starts_with("<system-reminder>\n") && text.ends_with("\n</system-reminder>"));
        // Without markers the working directory is the root: only its own file and home's.
        let settings = InstructionSettings {
            root_markers: Vec::new(),
            ..InstructionSettings::default()
        };
        let text = baseline(&root.join("pkg/app"), &home, "~/.dsh", &settings)
            .unwrap()
            .text;
        assert_eq!(text.matches("Instructions from: ").count(), 2);
        let off = InstructionSettings {
            enabled: false,
            ..InstructionSettings::default()
        };
        assert_eq!(baseline(&root, &home, "~/.dsh", &off), None);
    }

    #[test]
    fn the_budget_is_exact_and_drops_the_broadest_first_then_cuts() {
        let (_dir, root, home) = tree();
        std::fs::write(root.join("AGENTS.md"), "r".repeat(300)).unwrap();
        let exact = baseline(&root, &home, "~/.dsh", &InstructionSettings::default())
            .unwrap()
            .text
            .len();
        let at = InstructionSettings {
            max_bytes: exact,
            ..InstructionSettings::default()
        };
        let text = baseline(&root, &home, "~/.dsh", &at).unwrap().text;
        assert_eq!(text.len(), exact);
        assert!(!text.contains("budget"));
        let over = InstructionSettings {
            max_bytes: exact - 1,
            ..InstructionSettings::default()
        };
        let text = baseline(&root, &home, "~/.dsh", &over).unwrap().text;
        assert!(text.len() < exact, "{}", text.len());
        assert!(text.contains("cut AGENTS.md from 300 to"), "{text}");
        // Two files: the broader one goes first.
        std::fs::write(home.join("AGENTS.md"), "h".repeat(200)).unwrap();
        let text = baseline(&root, &home, "~/.dsh", &at).unwrap().text;
        assert!(text.len() <= exact);
        assert!(text.contains("left out ~/.dsh/AGENTS.md"), "{text}");
        // Multi-byte text is never cut inside a character.
        std::fs::write(root.join("AGENTS.md"), "é".repeat(300)).unwrap();
        let small = InstructionSettings {
            max_bytes: 500,
            ..InstructionSettings::default()
        };
        let text = baseline(&root, &home, "~/.dsh", &small).unwrap().text;
        assert!(text.len() <= 500);
    }

    #[test]
    fn the_frame_around_one_root_file_is_the_reference_s_304_bytes() {
        let (_dir, root, home) = tree();
        std::fs::write(root.join("AGENTS.md"), "x").unwrap();
        let text = baseline(&root, &home, "~/.dsh", &InstructionSettings::default())
            .unwrap()
            .text;
        assert_eq!(text.len() - 1, 304);
    }

    #[test]
    fn deliveries_name_every_file_found_with_its_digest() {
        let (_dir, root, home) = tree();
        std::fs::write(root.join("AGENTS.md"), "root rules\n").unwrap();
        let delivery = baseline(&root, &home, "~/.dsh", &InstructionSettings::default()).unwrap();
        let path = root.join("AGENTS.md").display().to_string();
        assert_eq!(delivery.files.len(), 1);
        assert_eq!(delivery.files[0].path, path);
        let loaded: Loaded = [(path, delivery.files[0].digest.clone())].into();
        let settings = InstructionSettings::default();
        assert_eq!(changes(&root, &home, "~/.dsh", &settings, &loaded), None);
        std::fs::write(root.join("AGENTS.md"), "new rules\n").unwrap();
        let changed = changes(&root, &home, "~/.dsh", &settings, &loaded).unwrap();
        assert!(
            changed
                .text
                .contains("Updated instructions from: AGENTS.md")
        );
        assert_ne!(changed.files[0].digest, delivery.files[0].digest);
    }

    #[test]
    fn changes_over_the_budget_are_cut_on_a_character_and_say_so() {
        let (_dir, root, home) = tree();
        std::fs::write(root.join("AGENTS.md"), "old\n").unwrap();
        let delivery = baseline(&root, &home, "~/.dsh", &InstructionSettings::default()).unwrap();
        let loaded: Loaded = delivery
            .files
            .iter()
            .map(|f| (f.path.clone(), f.digest.clone()))
            .collect();
        std::fs::write(root.join("AGENTS.md"), "é".repeat(2000)).unwrap();
        let small = InstructionSettings {
            max_bytes: 777,
            ..InstructionSettings::default()
        };
        let changed = changes(&root, &home, "~/.dsh", &small, &loaded).unwrap();
        assert!(changed.text.len() <= 777, "{}", changed.text.len());
        assert!(changed.text.len() >= 775, "cut no more than a character");
        assert!(
            changed
                .text
                .ends_with("(cut to fit the instruction budget of 777 bytes)\n</system-reminder>"),
            "{}",
            changed.text
        );
        // The file counts as delivered in its new state: the next resume sends nothing.
        assert_eq!(changed.files.len(), 1);
        let after: Loaded = changed
            .files
            .iter()
            .map(|f| (f.path.clone(), f.digest.clone()))
            .collect();
        assert_eq!(changes(&root, &home, "~/.dsh", &small, &after), None);
    }
}
