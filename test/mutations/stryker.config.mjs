// StrykerJS over the pure modules and their unit tests: every mutant of the code, not only the
// promises of mutations.ts. Not a dependency of the project (176 packages for an occasional check):
//
//   npm i --no-save @stryker-mutator/core@9 @stryker-mutator/tap-runner@9
//   npx stryker run test/mutations/stryker.config.mjs
//
// About 5 minutes on 2 cores. Most survivors in exact-json.ts are equivalent: a fast-path mutant that
// hands the text to the general path answers the same, only slower; its nesting check is proved over
// HTTP (test/http/nesting-limit.test.ts), which these unit tests leave out.
export default {
  testRunner: 'tap',
  tap: {
    testFiles: [
      'test/contract/exact-json.test.ts',
      'test/webhooks/signature.test.ts',
      'test/http/limit-key.test.ts',
      'test/tokens/duration.test.ts',
    ],
    nodeArgs: ['--import', 'tsx', '--require', '{{hookFile}}'],
  },
  mutate: [
    'src/contract/exact-json.ts',
    'src/webhooks/signature.ts',
    'src/http/limit-key.ts',
    'src/tokens/duration.ts',
  ],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  reporters: ['clear-text', 'progress'],
};
