//! One analysis over opened inputs, whatever they hold: kernel logs and crash output become
//! report groups, any other input `kflame collapse` reads a profile summary. The command
//! line (`kflame analyze`) and the MCP server both drive it.

use std::io::BufReader;

use kflame::collapse::options::{CollapseOptions, Target, check};
use kflame::collapse::{Engine, Format, crash};
use kflame::input::Sinks;
use kflame::open::Input;

use crate::source::SourceLookup;
use crate::{Analysis, FixSearch, ReportAnalyzer, profile};

/// An input that could not be analyzed; the message names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RunError(pub String);

/// An analysis in progress: inputs are added one by one, then [`Run::finish`] groups the
/// reports and resolves them.
pub struct Run {
    analyzer: ReportAnalyzer,
    analysis: Analysis,
    limit: usize,
    read_any: bool,
}

impl Run {
    /// An empty run keeping at most `limit` report groups, and functions and paths per
    /// profile.
    pub fn new(limit: usize) -> Run {
        Run { analyzer: ReportAnalyzer::new(), analysis: Analysis::default(), limit, read_any: false }
    }

    /// Reads `input` whole, as `format` when given, else as the format its head shows.
    /// Returns the format it was read as (`None` for an empty input, which is noted).
    pub fn add(&mut self, input: Input, format: Option<Format>) -> Result<Option<Format>, RunError> {
        let name = input.name.clone();
        if input.is_empty() {
            self.analysis.notes.push(format!("{name} is empty"));
            return Ok(None);
        }
        self.read_any = true;
        let format = match format.or_else(|| input.detect()) {
            Some(f) => f,
            None => {
                return Err(RunError(format!(
                    "cannot tell the format of {name}: its first lines match none of the formats kflame reads"
                )));
            }
        };
        let reading = |e: &dyn std::fmt::Display| RunError(format!("reading {name}: {e}"));
        match format {
            Format::KernelLog => {
                let before = self.analyzer.reports();
                let mut reports = kflame::report::reports(BufReader::with_capacity(1 << 16, input.reader()));
                for r in reports.by_ref() {
                    self.analyzer.add_report(&name, &r.map_err(|e| reading(&e))?);
                }
                self.note(reports.diagnostics().report(&name).to_string());
                if self.analyzer.reports() == before {
                    self.note(format!("{name}: no kernel report found in this kernel log"));
                }
            }
            Format::Crash => {
                let before = self.analyzer.reports();
                let mut tasks = crash::tasks(BufReader::with_capacity(1 << 16, input.reader()));
                for t in tasks.by_ref() {
                    self.analyzer.add_task(&name, &t.map_err(|e| reading(&e))?);
                }
                self.note(tasks.diagnostics().report(&name).to_string());
                if self.analyzer.reports() == before {
                    self.note(format!("{name}: no task backtrace found in this crash output"));
                }
            }
            _ => {
                let collapsed = collapse_profile(input, format)?;
                self.note(collapsed.diag.report(&name).to_string());
                if collapsed.stacks.is_empty() {
                    self.note(format!("{name}: no stacks in this {format} input"));
                } else {
                    let stacks = collapsed.stacks.in_output_order();
                    self.analysis.profiles.push(profile::analyze(
                        &name,
                        stacks,
                        &collapsed.meta.unit,
                        self.limit,
                    ));
                }
            }
        }
        Ok(Some(format))
    }

    fn note(&mut self, note: String) {
        if !note.is_empty() {
            self.analysis.notes.push(note);
        }
    }

    /// Reports read so far.
    pub fn reports(&self) -> usize {
        self.analyzer.reports()
    }

    /// Groups the reports (the culprit's source looked up in `source`, fixes searched with
    /// `fixes`), most frequent first, at most the limit. Fails when every input was empty.
    pub fn finish(
        self,
        source: Option<&dyn SourceLookup>,
        fixes: Option<&dyn FixSearch>,
    ) -> Result<Analysis, RunError> {
        if !self.read_any {
            return Err(RunError("nothing to analyze: every input is empty".into()));
        }
        let mut analysis = self.analysis;
        analysis.reports = self.analyzer.reports();
        let mut groups = self.analyzer.finish(source, fixes, self.limit);
        analysis.groups_total = groups.len();
        groups.truncate(self.limit);
        analysis.groups = groups;
        Ok(analysis)
    }
}

/// Collapses a profile input (any format but kernel logs and crash output) with the default
/// options, as `kflame collapse` would without flags; errors name the input.
pub fn collapse_profile(input: Input, format: Format) -> Result<kflame::collapse::Output, RunError> {
    let name = input.name.clone();
    let options = CollapseOptions::default();
    let target = Target::of(format, &options, &input.head);
    check(&options, &target, &name).map_err(|e| RunError(e.to_string()))?;
    let collapser =
        target.collapser(&name, &options, Sinks::default()).map_err(|e| RunError(e.to_string()))?;
    input.collapse(&Engine::default(), collapser).map_err(|e| RunError(e.0))
}
