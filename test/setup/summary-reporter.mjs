// Prints one plain closing line, "tests: N passed, N failed, N skipped", after the default
// reporter's summary, so CI logs state the outcome in one greppable line. Before it, when
// suites were skipped for want of ../shared (see test/fixtures.ts), one line says how many
// tests that was and why.
const SKIP_TAG = '[skipped: ../shared/fixtures/real/ is not beside the repository]';

export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    let withoutShared = 0;
    for (const file of results.testResults) {
      for (const test of file.testResults) {
        if (test.status === 'pending' && test.ancestorTitles.some((title) => title.includes(SKIP_TAG)))
          withoutShared++;
      }
    }
    if (withoutShared > 0)
      process.stdout.write(
        `${withoutShared} tests skipped: they read the real tool outputs in ../shared/fixtures/real/, which is not beside the repository\n`,
      );
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(
      `tests: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`,
    );
  }
}
