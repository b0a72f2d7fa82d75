/**
 * A token from another party (an STS, an upstream identity provider) travels on to a backend in
 * a header: it must be one header value, visible ASCII and bounded, or it is not sent at all.
 */
const HEADER_SAFE_TOKEN = /^[\x21-\x7e]{1,16384}$/;

export function isHeaderSafeToken(token: string): boolean {
  return HEADER_SAFE_TOKEN.test(token);
}
