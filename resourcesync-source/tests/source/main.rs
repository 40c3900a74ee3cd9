//! Integration tests of resourcesync-source, one binary with a module per topic.

mod collection;
mod directory;
mod discovery;
mod dump;
mod moving;
mod publisher;
mod set;

/// The names of the files directly under `root`, sorted.
pub fn files(root: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
