//! Progress bars for long loops. They draw on stderr only when stderr is a terminal, so logs and
//! CI output stay clean; results always go to stdout.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `len` steps labelled `what`, hidden when stderr is not a terminal.
pub fn bar(len: u64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template(
        "{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed}, ~{eta} left)",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(what.to_string());
    bar
}
