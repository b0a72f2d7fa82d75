/**
 * A full token verification through the validator next to raw jose `jwtVerify`, in CPU time.
 *
 * WebCrypto verifies on libuv's thread pool, so a wall-clock loop mostly measures the hop to the
 * pool and back (tinybench's figures for these tasks swing by ±40 %). This measures
 * `process.cpuUsage()` (all threads) instead, in interleaved blocks of 500 calls so that drift
 * on a shared machine falls on both sides alike. The validator's token cache holds one entry and
 * two tokens alternate, so every call is a miss: signature, claims, and caching the result.
 *
 * Run by `npm run bench` after the micro benchmarks; results in results/verify-cpu.json.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { createLogger } from '../../core/observe/log.ts';
import { createTokenValidator } from '../../plugins/incoming-auth/validator.ts';

const AUDIENCE = 'http://127.0.0.1:4483/mcp';
const BLOCK = 500;

export interface VerifyCpuResult {
  alg: 'ES256' | 'RS256';
  calls: number;
  joseMicros: number;
  validatorMicros: number;
  ratio: number;
}

async function measure(alg: 'ES256' | 'RS256', calls: number): Promise<VerifyCpuResult> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg, use: 'sig' };
  let issuer = '';
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(req.url === '/jwks' ? { keys: [jwk] } : { issuer, jwks_uri: `${issuer}/jwks` }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const now = Math.floor(Date.now() / 1000);
  const mint = (jti: string): Promise<string> =>
    new SignJWT({ scope: 'mcp:tools openid profile', client_id: 'mcp-client', email: 'alice@example.com', groups: ['eng', 'mcp-users'], jti })
      .setProtectedHeader({ alg, kid: 'bench', typ: 'at+jwt' })
      .setIssuer(issuer)
      .setSubject('d3b07384-d9a0-4c3f-a1b2-7f5e9c0e4a11')
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(privateKey);
  const tokens = [await mint('a'), await mint('b')];
  const validator = await createTokenValidator({ issuer, audience: AUDIENCE, cache: { maxTokens: 1 } }, createLogger('silent'));
  const options = { issuer, audience: AUDIENCE, algorithms: [alg], clockTolerance: 30, requiredClaims: ['exp'] };
  try {
    await validator.verify(tokens[0]!); // discovery and keys
    let jose = 0;
    let ours = 0;
    for (let done = 0; done < calls; done += BLOCK) {
      let start = process.cpuUsage();
      for (let i = 0; i < BLOCK; i++) await jwtVerify(tokens[i & 1]!, publicKey, options);
      let used = process.cpuUsage(start);
      jose += used.user + used.system;
      start = process.cpuUsage();
      for (let i = 0; i < BLOCK; i++) await validator.verify(tokens[i & 1]!);
      used = process.cpuUsage(start);
      ours += used.user + used.system;
    }
    const n = Math.ceil(calls / BLOCK) * BLOCK;
    return { alg, calls: n, joseMicros: jose / n, validatorMicros: ours / n, ratio: ours / jose };
  } finally {
    validator.close();
    server.close();
  }
}

export async function runVerifyCpu(calls = Number(process.env['BENCH_VERIFY_CALLS'] ?? 20_000)): Promise<VerifyCpuResult[]> {
  const results = [await measure('ES256', calls), await measure('RS256', calls)];
  console.log('\n### plugins/verify-cpu.ts (CPU per verification, interleaved blocks)\n');
  console.log('| alg | raw jose µs | validator µs | ratio |');
  console.log('|---|---:|---:|---:|');
  for (const r of results) console.log(`| ${r.alg} | ${r.joseMicros.toFixed(1)} | ${r.validatorMicros.toFixed(1)} | ${r.ratio.toFixed(3)}× |`);
  return results;
}
