//! `conform init`: a starting adapter in a host's repository — one of conform's example hosts,
//! copied whole (the files are carried in the binary, as the catalog is), with the folders for
//! the host's own scenarios beside it, and the next commands to run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::Error;
use crate::cli::{InitArgs, InitLang};

const NODE: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../../../examples/node-host/README.md"),
    ),
    (
        "acp-provider.js",
        include_str!("../../../examples/node-host/acp-provider.js"),
    ),
    (
        "adapter.js",
        include_str!("../../../examples/node-host/adapter.js"),
    ),
    (
        "diagnostic.js",
        include_str!("../../../examples/node-host/diagnostic.js"),
    ),
    (
        "json-rpc.js",
        include_str!("../../../examples/node-host/json-rpc.js"),
    ),
    (
        "package.json",
        include_str!("../../../examples/node-host/package.json"),
    ),
    (
        "presentation.js",
        include_str!("../../../examples/node-host/presentation.js"),
    ),
    (
        "process-tree.js",
        include_str!("../../../examples/node-host/process-tree.js"),
    ),
    (
        "runtime-process.js",
        include_str!("../../../examples/node-host/runtime-process.js"),
    ),
];

const PYTHON: &[(&str, &str)] = &[
    (
        ".gitignore",
        include_str!("../../../examples/python-host/.gitignore"),
    ),
    (
        "README.md",
        include_str!("../../../examples/python-host/README.md"),
    ),
    (
        "abort.py",
        include_str!("../../../examples/python-host/abort.py"),
    ),
    (
        "acp_provider.py",
        include_str!("../../../examples/python-host/acp_provider.py"),
    ),
    (
        "adapter.py",
        include_str!("../../../examples/python-host/adapter.py"),
    ),
    (
        "diagnostic.py",
        include_str!("../../../examples/python-host/diagnostic.py"),
    ),
    (
        "json_rpc.py",
        include_str!("../../../examples/python-host/json_rpc.py"),
    ),
    (
        "ndjson.py",
        include_str!("../../../examples/python-host/ndjson.py"),
    ),
    (
        "presentation.py",
        include_str!("../../../examples/python-host/presentation.py"),
    ),
    (
        "process_tree.py",
        include_str!("../../../examples/python-host/process_tree.py"),
    ),
    (
        "runtime_process.py",
        include_str!("../../../examples/python-host/runtime_process.py"),
    ),
    (
        "test_framing.py",
        include_str!("../../../examples/python-host/test_framing.py"),
    ),
];

/// Writes the example into the folder, refusing to write over any file that is there.
pub fn exec(args: InitArgs) -> Result<ExitCode, Error> {
    let (files, adapter, run) = match args.lang {
        InitLang::Node => (NODE, "adapter.js", "node"),
        InitLang::Python => (PYTHON, "adapter.py", "python3"),
    };
    let dir = &args.dir;
    let taken: Vec<PathBuf> = files
        .iter()
        .map(|(name, _)| dir.join(name))
        .filter(|p| p.exists())
        .collect();
    if let Some(first) = taken.first() {
        return Err(Error::Usage(format!(
            "{} is there already: conform init writes only into a folder without the example's files",
            first.display()
        )));
    }
    for sub in ["", "scenarios", "snapshots"] {
        create(&dir.join(sub))?;
    }
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| Error::Write { path, source })?;
    }
    let subject = format!("{run} {}", dir.join(adapter).display());
    let next = format!(
        "wrote a starting adapter into {dir}/ (from conform's examples; its README.md says how to plug in your provider)\n\
         next:\n  \
         conform run --subject '{subject}' --filter acp/success\n  \
         conform run --subject '{subject}' --add {dir} --write-baseline {dir}/known.toml   # then give each entry its reason\n  \
         conform run --subject '{subject}' --add {dir} --baseline {dir}/known.toml         # in CI\n",
        dir = dir.display(),
    );
    super::output::out(&next)?;
    Ok(ExitCode::SUCCESS)
}

fn create(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Write {
        path: dir.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of each example is carried: one added to `examples/` must be added here.
    #[test]
    fn each_example_is_carried_whole() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        for (folder, files) in [("node-host", NODE), ("python-host", PYTHON)] {
            let mut on_disk: Vec<String> = std::fs::read_dir(root.join(folder))
                .unwrap()
                .map(|e| e.unwrap())
                .filter(|e| e.file_type().unwrap().is_file())
                .map(|e| e.file_name().into_string().unwrap())
                .collect();
            on_disk.sort();
            let carried: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
            assert_eq!(on_disk, carried, "{folder}");
        }
    }
}
