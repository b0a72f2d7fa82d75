/**
 * `npm run test:unit` and `npm run test:e2e`: Node's test runner on the files of one tier
 * (test/tiers.ts), with the options `npm test` uses; `test:unit` also loads test/unit-guard.ts
 * into each test process. Further arguments go to `node --test` (`npm run test:unit --
 * --test-concurrency=2`).
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT, tierFiles, type Tier } from './tiers.ts';

const [tier, ...extra] = process.argv.slice(2);
if (tier !== 'unit' && tier !== 'e2e') {
  process.stderr.write('usage: node --import tsx test/run-tier.ts unit|e2e [node --test options]\n');
  process.exit(2);
}

const guard = tier === 'unit' ? ['--import', fileURLToPath(new URL('./unit-guard.ts', import.meta.url))] : [];
// The timeout (also `npm test`'s) is each file's as a whole too: a backstop for a hang, not a
// speed bound. 300 s, since the package tests' npm installs took 112 s on a busy machine.
const args = ['--import', 'tsx', ...guard, '--test', '--test-timeout=300000', '--test-reporter=spec', ...extra, ...tierFiles(tier as Tier)];
const runner = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => runner.kill(signal));
runner.on('exit', (code, signal) => process.exit(code ?? 128 + (signal === null ? 0 : constants.signals[signal])));
