/**
 * A full token verification through the validator next to raw jose `jwtVerify`, in CPU time.
 *
 * WebCrypto verifies on libuv's thread pool, so a wall-clock loop mostly measures the hop to the
 * pool and back (tinybench's figures for these tasks swing by ±40 %). This measures
 * `process.cpuUsage()` (all threads) instead, in pairs of blocks of 500 calls, the order within a
 * pair alternating, so that drift on a shared machine and whatever one block leaves to the next
 * (GC debt) fall on both sides alike. It reports the totals and the median of the pairs' ratios,
 * which a noisy neighbour moves least. The validator's token cache holds one entry and two tokens
 * alternate, so every call is a miss: signature, claims, and caching the result.
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
  /** Of the totals. */
  ratio: number;
  /** The median of the per-pair ratios. */
  medianPairRatio: number;
  pairs: number;
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
    const block = async (verify: (token: string) => unknown): Promise<number> => {
      const start = process.cpuUsage();
      for (let i = 0; i < BLOCK; i++) await verify(tokens[i & 1]!);
      const used = process.cpuUsage(start);
      return used.user + used.system;
    };
    const viaJose = (token: string) => jwtVerify(token, publicKey, options);
    const viaValidator = (token: string) => validator.verify(token);
    let jose = 0;
    let ours = 0;
    const ratios: number[] = [];
    for (let pair = 0; pair * BLOCK < calls; pair++) {
      let a: number;
      let b: number;
      if (pair % 2 === 0) {
        a = await block(viaJose);
        b = await block(viaValidator);
      } else {
        b = await block(viaValidator);
        a = await block(viaJose);
      }
      jose += a;
      ours += b;
      ratios.push(b / a);
    }
    ratios.sort((x, y) => x - y);
    const n = ratios.length * BLOCK;
    const medianPairRatio = ratios.length % 2 === 1 ? ratios[ratios.length >> 1]! : (ratios[ratios.length / 2 - 1]! + ratios[ratios.length / 2]!) / 2;
    return { alg, calls: n, joseMicros: jose / n, validatorMicros: ours / n, ratio: ours / jose, medianPairRatio, pairs: ratios.length };
  } finally {
    validator.close();
    server.close();
  }
}

export async function runVerifyCpu(calls = Number(process.env['BENCH_VERIFY_CALLS'] ?? 20_000)): Promise<VerifyCpuResult[]> {
  const results = [await measure('ES256', calls), await measure('RS256', calls)];
  console.log('\n### plugins/verify-cpu.ts (CPU per verification, interleaved blocks)\n');
  console.log('| alg | raw jose µs | validator µs | ratio of totals | median ratio of pairs |');
  console.log('|---|---:|---:|---:|---:|');
  for (const r of results) {
    console.log(`| ${r.alg} | ${r.joseMicros.toFixed(1)} | ${r.validatorMicros.toFixed(1)} | ${r.ratio.toFixed(3)}× | ${r.medianPairRatio.toFixed(3)}× (${r.pairs} pairs) |`);
  }
  return results;
}
