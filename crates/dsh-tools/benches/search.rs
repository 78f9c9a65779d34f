//! `glob` and `grep` through the tool path (the registry, as the agent calls them) on a tree
//! given by `DSH_BENCH_TREE`, each search run `DSH_BENCH_RUNS` times (default 10). Prints one
//! line per search: `<name> <median ms> <min ms> <max ms> <result bytes>`.
//!
//! `bench/search.sh` builds the tree, runs this and the same searches with `rg`, and writes
//! the comparison to `docs/performance.md`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_sandbox::{SandboxMode, SandboxPolicy};
use dsh_tools::{ModelCaps, SpillStore, ToolContext, ToolRegistry, ToolSession};
use tokio_util::sync::CancellationToken;

fn main() {
    let Some(tree) = std::env::var_os("DSH_BENCH_TREE").map(PathBuf::from) else {
        println!("set DSH_BENCH_TREE to a folder to search (bench/search.sh does)");
        return;
    };
    let runs: usize = std::env::var("DSH_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let spill = tempfile::tempdir().unwrap();
    let ctx = ToolContext {
        call_id: "bench".into(),
        cwd: tree.clone(),
        cancel: CancellationToken::new(),
        session: Arc::new(ToolSession::new(
            SandboxPolicy::new(SandboxMode::WorkspaceWrite, &tree, Vec::new()),
            SpillStore::new(spill.path().join("spill")),
            ModelCaps {
                name: "bench".into(),
                image_input: false,
            },
        )),
    };
    let registry = ToolRegistry::with_file_tools(true);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let searches = [
        ("glob", "glob", r#"{"pattern": "*.rs"}"#),
        ("grep", "grep", r#"{"pattern": "needle_[0-9]+"}"#),
    ];
    for (label, tool, args) in searches {
        let mut times: Vec<Duration> = Vec::new();
        let mut bytes = 0;
        for _ in 0..runs {
            let started = Instant::now();
            let outcome = runtime.block_on(registry.execute(tool, args, &ctx));
            times.push(started.elapsed());
            assert!(!outcome.is_error, "{}", outcome.text());
            bytes = outcome.text().len();
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{label} {:.1} {:.1} {:.1} {bytes}",
            ms(times[times.len() / 2]),
            ms(times[0]),
            ms(times[times.len() - 1])
        );
    }
}
