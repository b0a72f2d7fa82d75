/**
 * The WebAssembly of core/ from its text (`.wat`), assembled by wabt: `npm run build:wasm` writes
 * each module's binary beside its source, and test/eras/json-scan-wasm.test.ts checks that the
 * binary in the repository is what its source assembles to.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import wabt from 'wabt';
import { REPO_ROOT } from '../tiers.ts';

/** The modules: text in, binary out (paths from the repository's root). */
export const WASM_MODULES: readonly { readonly source: string; readonly binary: string }[] = [
  { source: 'core/protocol/json-scan.wat', binary: 'core/protocol/json-scan.wasm' },
];

/** The binary `source` (a .wat file) assembles to: validated, names resolved, no debug names. */
export async function assemble(source: string): Promise<Buffer> {
  const tools = await wabt();
  const parsed = tools.parseWat(source, readFileSync(new URL(source, `file://${REPO_ROOT}`), 'utf8'));
  try {
    parsed.resolveNames();
    parsed.validate();
    return Buffer.from(parsed.toBinary({ log: false, write_debug_names: false }).buffer);
  } finally {
    parsed.destroy();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const { source, binary } of WASM_MODULES) {
    const bytes = await assemble(source);
    writeFileSync(new URL(binary, `file://${REPO_ROOT}`), bytes);
    console.log(`${binary}: ${bytes.length} bytes from ${source}`);
  }
}
