/**
 * The small formats of the config: durations, sizes, YAML paths, problem lines, suggestions,
 * Secret data, and positions in YAML.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDuration } from '../../core/config/duration.ts';
import { closestMatch, formatPath, formatProblem } from '../../core/config/problems.ts';
import { decodeSecretData } from '../../core/config/secrets.ts';
import { parseSize } from '../../core/config/size.ts';
import { parseYamlDocuments } from '../../core/config/yaml.ts';

test('parseDuration accepts Go-like durations, in milliseconds', () => {
  const cases: Array<[string, number]> = [
    ['500ms', 500],
    ['45s', 45_000],
    ['10m', 600_000],
    ['30m', 1_800_000],
    ['1h', 3_600_000],
    ['168h', 604_800_000],
    ['1h30m', 5_400_000],
    ['2h45m30s', 9_930_000],
    ['1.5h', 5_400_000],
    ['0s', 0],
  ];
  for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
});

test('parseDuration refuses what is not a duration', () => {
  for (const text of ['', '30', '30 m', '1d', 'h', '1h 30m', '-5m', '1H', 'ms', '5mm', ' 5m']) {
    assert.equal(parseDuration(text), null, JSON.stringify(text));
  }
});

test('parseSize accepts integer bytes and Ki/Mi/Gi', () => {
  assert.equal(parseSize('4Mi'), 4 * 1024 * 1024);
  assert.equal(parseSize('512Ki'), 512 * 1024);
  assert.equal(parseSize('1Gi'), 1024 ** 3);
  assert.equal(parseSize('1048576'), 1_048_576);
  assert.equal(parseSize(4096), 4096);
  for (const bad of ['4MB', '4M', '1.5Mi', '-1', 'Mi', '', 1.5, -1]) assert.equal(parseSize(bad), null, String(bad));
});

test('formatPath writes YAML paths as a user reads them', () => {
  assert.equal(formatPath(['spec', 'plugins', 0, 'config']), 'spec.plugins[0].config');
  assert.equal(formatPath(['spec', 'outgoingAuth', 'backends', 'my.server']), 'spec.outgoingAuth.backends["my.server"]');
  assert.equal(formatPath([]), '');
});

test('formatProblem: file:line:column resource path: message', () => {
  const problem = { file: 'config.yaml', line: 14, column: 7, resource: 'VirtualMCPServer/vmcp', path: 'spec.incomingAuth.resourceUrl', message: 'must be an absolute http(s) URL' };
  assert.equal(formatProblem(problem), 'config.yaml:14:7 VirtualMCPServer/vmcp spec.incomingAuth.resourceUrl: must be an absolute http(s) URL');
  assert.equal(formatProblem({ ...problem, path: '' }), 'config.yaml:14:7 VirtualMCPServer/vmcp: must be an absolute http(s) URL');
  assert.equal(formatProblem({ ...problem, line: 0, column: 0, resource: '', path: '' }), 'config.yaml: must be an absolute http(s) URL');
});

test('closestMatch suggests near misses only', () => {
  assert.equal(closestMatch('resourceURL', ['type', 'resourceUrl', 'oidcConfig']), 'resourceUrl');
  assert.equal(closestMatch('acessLog', ['accessLog', 'allowedHosts']), 'accessLog');
  assert.equal(closestMatch('banana', ['type', 'resourceUrl']), null);
});

test('decodeSecretData: strict base64 of UTF-8 text', () => {
  assert.equal(decodeSecretData('aGVsbG8='), 'hello');
  assert.equal(decodeSecretData('aGVs\n bG8='), 'hello');
  assert.equal(decodeSecretData('aGVsbG8'), null);
  assert.equal(decodeSecretData('c2VjcmV0!'), null);
  assert.equal(decodeSecretData('//79'), null, 'bytes that are not UTF-8');
});

test('positions: the value of a scalar field, the key of a collection, the parent of a missing field', () => {
  const [doc] = parseYamlDocuments('spec:\n  url: http://x\n  list:\n    - a\n  empty:\n').documents;
  assert.ok(doc !== undefined);
  assert.deepEqual(doc.locate(['spec', 'url']), { line: 2, column: 8 });
  assert.deepEqual(doc.locate(['spec', 'url'], 'key'), { line: 2, column: 3 });
  assert.deepEqual(doc.locate(['spec', 'list']), { line: 3, column: 3 });
  assert.deepEqual(doc.locate(['spec', 'list', 0]), { line: 4, column: 7 });
  assert.deepEqual(doc.locate(['spec', 'empty']), { line: 5, column: 3 });
  assert.deepEqual(doc.locate(['spec', 'missing', 'deeper']), { line: 1, column: 1 });
});
