/**
 * The hostile backend of bench/aggregate/hostile.ts, in a process of its own (its writing must
 * not be counted as the gateway's CPU, nor slow the measuring client): the tests' scripted
 * backend (test/fixtures/scripted-backend.ts) answering
 *
 *   --mode flood --mib N   every tools/call with an SSE head and one event of N MiB that never ends
 *   --mode silent          initialize with an SSE head and then nothing
 *
 *   node --import tsx bench/aggregate/hostile-backend.ts --mode flood --mib 150   → prints `LISTENING <port>`
 */
import { parseArgs } from 'node:util';
import { answerSilently, floodUnterminatedEvent, startScriptedBackend } from '../../test/fixtures/scripted-backend.ts';

const { values } = parseArgs({ options: { mode: { type: 'string', default: 'flood' }, mib: { type: 'string', default: '150' } } });
const backend = await startScriptedBackend('hostile');
if (values.mode === 'silent') {
  backend.initialize = ({ res }) => answerSilently(res);
} else {
  const bytes = Number(values.mib) * 1024 * 1024;
  backend.script = ({ res }) => {
    void floodUnterminatedEvent(res, bytes).then((written) => process.stdout.write(`FLOODED ${written}\n`));
  };
}
process.stdout.write(`LISTENING ${new URL(backend.url).port}\n`);
process.on('SIGTERM', () => process.exit(0));
