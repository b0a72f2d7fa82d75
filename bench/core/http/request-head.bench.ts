/**
 * The one pass over a request's raw headers (core/http/request-head.ts) that every request makes:
 * what the core reads and the list forwarded to a backend, with the client's identity and proxy
 * headers set apart. Three heads: what the MCP TypeScript SDK sends on a tools/call, the same
 * behind a proxy that adds its X-Forwarded-* and X-Real-IP, and one with custom `x-` headers
 * (which go through the identity-family check).
 */
import type { Bench } from 'tinybench';
import { RequestHead } from '../../../core/http/request-head.ts';

const SDK_POST = [
  'host', '127.0.0.1:4483',
  'connection', 'keep-alive',
  'content-type', 'application/json',
  'accept', 'application/json, text/event-stream',
  'mcp-protocol-version', '2025-11-25',
  'mcp-session-id', '3f0c9a52-8d0e-4f0a-9a4e-6b1d2f1c7e11',
  'authorization', 'Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2lnbmF0dXJl',
  'user-agent', 'node',
  'accept-language', '*',
  'sec-fetch-mode', 'cors',
  'accept-encoding', 'gzip, deflate',
  'content-length', '97',
];

const BEHIND_PROXY = [
  ...SDK_POST,
  'X-Forwarded-For', '203.0.113.7',
  'X-Forwarded-Proto', 'https',
  'X-Forwarded-Host', 'mcp.example.com',
  'X-Real-IP', '203.0.113.7',
];

const CUSTOM_X = [
  ...SDK_POST,
  'X-Stainless-Lang', 'js',
  'X-Trace-Id', '4bf92f3577b34da6a3ce929d0e0e4736',
  'X-Mcp-Client', 'inspector',
];

export let kept: RequestHead | null = null;

export default function register(bench: Bench): void {
  bench
    .add('request-head: SDK tools/call POST (12 headers)', () => {
      kept = new RequestHead(SDK_POST);
    })
    .add('request-head: behind a proxy (+ X-Forwarded-For/-Proto/-Host, X-Real-IP)', () => {
      kept = new RequestHead(BEHIND_PROXY);
    })
    .add('request-head: custom x- headers (+ 3)', () => {
      kept = new RequestHead(CUSTOM_X);
    });
}
