//! The command-line reference page (`moped info cli`, docs/cli-reference.md): every
//! command's `--help`, from the same declarations the parser reads, so the page cannot
//! drift from what the commands accept.

use clap::CommandFactory;

use super::Cli;

/// Columns the help is wrapped at, whatever the terminal: the page is the same everywhere.
const WIDTH: usize = 100;

/// Markdown: the top-level help, then each command's (subcommands under their parents),
/// each under a heading of its full name.
pub fn cli_reference() -> String {
    let mut cmd = Cli::command().term_width(WIDTH).max_term_width(WIDTH);
    cmd.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         Every command's `--help`, as `moped info cli` prints it (a test fails when this \
         page differs from it). The guide's [Command line](cli.md) page says what each \
         command is for.\n",
    );
    section(&mut cmd, "moped", &mut out);
    out
}

fn section(cmd: &mut clap::Command, path: &str, out: &mut String) {
    let help = cmd.render_long_help().to_string();
    out.push_str(&format!("\n## `{path}`\n\n```text\n"));
    for line in help.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("```\n");
    for sub in cmd.get_subcommands_mut() {
        if sub.get_name() == "help" {
            continue;
        }
        let name = format!("{path} {}", sub.get_name());
        section(sub, &name, out);
    }
}
