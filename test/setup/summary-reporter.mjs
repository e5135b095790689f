// Prints one plain closing line, "tests: N passed, N failed, N skipped", after the default
// reporter's summary, so CI logs state the outcome in one greppable line.
export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(
      `tests: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`,
    );
  }
}
