/**
 * The file position of a character inside a YAML string value (core/config/scalar-source.ts,
 * `YamlDocument.locateInside`): what puts a problem found inside a value (a Cedar policy's syntax
 * error) at the line and column where the user wrote it. Every style is mapped; a source the
 * scanners cannot rebuild the value from maps to nothing (the caller then points at the value).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scalarSourceOffsets } from '../../core/config/scalar-source.ts';
import { parseYamlDocuments } from '../../core/config/yaml.ts';

/** Each character of the value at `key` that the source holds as such (not a folded break, not an escape) is found at its position. */
function assertMapped(text: string, key: string, escapes: readonly number[] = []): string {
  const { documents, errors } = parseYamlDocuments(text);
  assert.deepEqual(errors, []);
  const doc = documents[0]!;
  const value = (doc.value as Record<string, string>)[key]!;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < value.length; i++) {
    const position = doc.locateInside([key], i);
    assert.ok(position !== null, `${key}: offset ${i} is mapped`);
    const found = lines[position.line - 1]![position.column - 1];
    if (value[i] === '\n' || value[i] === ' ' || escapes.includes(i)) continue;
    assert.equal(found, value[i], `${key}[${i}] at ${position.line}:${position.column}`);
  }
  return value;
}

describe('a character of a string value, found in the file', () => {
  it('a block literal: each line\'s indentation removed, an explicit indentation indicator too', () => {
    const text = 'p: |\n  permit(principal,\n    acton, resource);\nq: |2-\n     indented\n   less\n';
    assert.equal(assertMapped(text, 'p'), 'permit(principal,\n  acton, resource);\n');
    assert.equal(assertMapped(text, 'q'), '   indented\n less');
  });

  it('a folded block: a break between lines is a space, empty lines are newlines, more-indented lines keep theirs', () => {
    const text = 'p: >-\n  folded line one\n  two\n\n    more\n  three\n';
    assert.equal(assertMapped(text, 'p'), 'folded line one two\n\n  more\nthree');
  });

  it('a double-quoted string: escapes (\\u, \\", an escaped line break) and folded lines', () => {
    const text = 'p: "permit(\\u0061ction, \\"x\\",\n    resource);  \\\n  y\\tz"\n';
    const value = assertMapped(text, 'p', [7, 15, 17, 33]);
    assert.equal(value, 'permit(action, "x", resource);  y\tz');
    const position = parseYamlDocuments(text).documents[0]!.locateInside(['p'], 7);
    assert.deepEqual(position, { line: 1, column: 12 }, 'an escaped character is at its backslash');
  });

  it('a single-quoted string (\'\' is one quote) and a plain one over several lines', () => {
    assert.equal(assertMapped("p: 'it''s\n   folded\n\n   twice'\n", 'p'), "it's folded\ntwice");
    assert.equal(assertMapped('p: plain text\n  continues   # a comment\n', 'p'), 'plain text continues');
  });

  it('characters outside the BMP and CRLF line ends', () => {
    assert.equal(assertMapped('p: "é日😀x"\n', 'p'), 'é日😀x');
    assert.equal(assertMapped('p: |\r\n  one\r\n  two\r\n', 'p'), 'one\ntwo\n');
  });

  it('just past the end is the character after the last one (an "unexpected end of input")', () => {
    const doc = parseYamlDocuments("p: 'abc'\n").documents[0]!;
    assert.deepEqual(doc.locateInside(['p'], 3), { line: 1, column: 8 });
    assert.deepEqual(doc.locateInside(['p'], 99), { line: 1, column: 8 }, 'clamped');
  });

  it('no string scalar at the path, or a source that does not rebuild the value: no position', () => {
    const doc = parseYamlDocuments('p: [a]\nq: 3\n').documents[0]!;
    assert.equal(doc.locateInside(['p'], 0), null);
    assert.equal(doc.locateInside(['q'], 0), null);
    assert.equal(doc.locateInside(['missing'], 0), null);
    assert.equal(scalarSourceOffsets('"abc"', 'QUOTE_DOUBLE', [0, 5], 'abd'), null);
    assert.equal(scalarSourceOffsets('"a\\qc"', 'QUOTE_DOUBLE', [0, 6], 'aqc'), null, 'an unknown escape');
  });
});
