//! The documentation as a whole: the README is a front door (under 20,000 characters, naming
//! every guide, the contributors' page and the test prerequisites), and every relative link of
//! the README, CONTRIBUTING.md and the guides reaches an existing file and, for a Markdown
//! file, an existing heading.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The Markdown files whose links are checked.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![
        Path::new(ROOT).join("README.md"),
        Path::new(ROOT).join("CONTRIBUTING.md"),
        Path::new(ROOT).join("docs/deploy/README.md"),
    ];
    for entry in std::fs::read_dir(Path::new(ROOT).join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|extension| extension == "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, blanks as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The text outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut inside = false;
    let mut kept = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            inside = !inside;
            continue;
        }
        if !inside {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

fn anchors(path: &Path) -> BTreeSet<String> {
    prose(&std::fs::read_to_string(path).unwrap())
        .lines()
        .filter_map(|line| line.strip_prefix('#').map(|rest| anchor(rest.trim_start_matches('#'))))
        .collect()
}

#[test]
fn every_relative_link_of_the_readme_and_the_guides_resolves() {
    let mut broken = Vec::new();
    for file in documents() {
        let text = prose(&std::fs::read_to_string(&file).unwrap());
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let link = &rest[..end];
            if link.starts_with("http") || link.contains(' ') {
                continue;
            }
            let (path, fragment) = link.split_once('#').unwrap_or((link, ""));
            let target = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", file.display()));
            } else if !fragment.is_empty()
                && target.extension().is_some_and(|extension| extension == "md")
                && !anchors(&target).contains(fragment)
            {
                broken.push(format!("{}: {link} (no such heading)", file.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_a_front_door_to_every_guide() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    assert!(readme.chars().count() < 20_000, "the README has {} characters", readme.chars().count());
    for guide in [
        "docs/pipelinewise.md",
        "docs/logical-replication.md",
        "docs/cdc.md",
        "docs/other-loaders.md",
        "docs/operator-guide.md",
        "docs/cli.md",
        "docs/configuration.md",
        "docs/comparison.md",
        "docs/deploy/README.md",
        "CONTRIBUTING.md",
    ] {
        assert!(readme.contains(&format!("]({guide}")), "the README links {guide}");
    }
    for heading in ["## Install", "## Two commands", "## What datadiff cannot check"] {
        assert!(readme.contains(heading), "the README has {heading}");
    }
    // The test prerequisites name every server the suite starts.
    let prerequisites = readme.split("## Two commands").nth(1).unwrap().split("```").next().unwrap();
    for package in ["postgresql", "mariadb-server", "pkg-config", "libssl-dev"] {
        assert!(prerequisites.contains(package), "the test prerequisites name {package}");
    }
}

#[test]
fn no_guide_uses_internal_jargon() {
    for file in documents() {
        let text = std::fs::read_to_string(&file).unwrap().to_lowercase();
        assert!(!text.contains("the seed") && !text.contains("seed's"), "{} says \"the seed\"", file.display());
    }
}

/// Every library crate's front page shows how to embed it in a Rust example, which rustdoc
/// compiles as a doctest (`no_run` where it needs servers): a fenced block that is Rust (no
/// info string, or `no_run`), not `text` or `toml`.
#[test]
fn every_library_crate_has_an_embedding_example() {
    let mut fronts = vec![Path::new(ROOT).join("src/lib.rs")];
    for entry in std::fs::read_dir(Path::new(ROOT).join("crates")).unwrap() {
        let lib = entry.unwrap().path().join("src/lib.rs");
        if lib.exists() {
            fronts.push(lib);
        }
    }
    assert!(fronts.len() > 10, "{fronts:?}");
    let mut without = Vec::new();
    for front in fronts {
        let text = std::fs::read_to_string(&front).unwrap();
        let rust = text
            .lines()
            .filter_map(|line| line.strip_prefix("//! ```"))
            .step_by(2)
            .any(|info| matches!(info.trim(), "" | "rust" | "no_run" | "rust,no_run"));
        if !rust {
            without.push(front.display().to_string());
        }
    }
    assert!(without.is_empty(), "front pages without a Rust example: {without:?}");
}
