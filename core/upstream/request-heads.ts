/**
 * The heads of the requests written to one backend. `headers` are lower-case
 * `[name, value, ...]`: names are tokens by construction (the HTTP parser's,
 * OutgoingHeaders.set's, or the gateway's own). Whatever a value's origin (the client's headers,
 * a session id a backend chose, a Last-Event-ID, a plugin's credentials), it is checked here, the
 * last step before the wire: one with CR, LF, NUL or a character that is not latin1 (which the
 * encoding would turn into other bytes) is refused, and no head is made (writable-fields.ts:
 * mostly a compare with the last). The lines the last head to the backend had too are taken
 * whole (head-memo.ts): they passed the check when they were written.
 */
import { HeadMemo } from '../http/head-memo.ts';
import { WritableFields } from '../http/writable-fields.ts';

/** The header values last found writable toward backends, by position (writable-fields.ts). */
const REQUEST_VALUES = new WritableFields(16);

let lastBodyLength = -1;
let lastHeadEnd = '\r\n';

/** A head's last line and the blank line after it: a body's length, the same as the last one's mostly. */
function headEnd(bodyLength: number): string {
  if (bodyLength !== lastBodyLength) {
    lastBodyLength = bodyLength;
    lastHeadEnd = 'content-length: ' + bodyLength + '\r\n\r\n';
  }
  return lastHeadEnd;
}

export class RequestHeads {
  /** `Host` header value: the backend's own authority. */
  readonly #authority: string;
  readonly #memo = new HeadMemo();
  /** The name of the header the last refused head could not write. */
  refusedName = '';

  constructor(authority: string) {
    this.#authority = authority;
  }

  /** The head (latin1: a byte a character) of a request with a body of `bodyLength` bytes (-1: none), or null when a value may not be written. */
  text(method: string, path: string, headers: readonly string[], bodyLength: number): string | null {
    const memo = this.#memo;
    let line = memo.match(method, path, headers);
    const differs = memo.differs;
    const generation = memo.generation;
    let head = memo.textAt(line);
    if (line === 0) {
      head = method + ' ' + path + ' HTTP/1.1\r\nhost: ' + this.#authority + '\r\n';
      line = 1;
    }
    for (let i = 2 * line - 2; ; i += 2, line++) {
      if (line === differs) head = memo.keep(generation, line, head, 0);
      if (i >= headers.length) break;
      const name = headers[i]!;
      // Made text once, so that what is checked is what is written (a hook may have set an array, say).
      const given = headers[i + 1]!;
      const value = typeof given === 'string' ? given : String(given);
      if (line >= differs && !REQUEST_VALUES.check(value, i >> 1)) {
        this.refusedName = name;
        return null;
      }
      head += name + ': ' + value + '\r\n';
    }
    memo.remember(generation, differs, method, path, headers);
    return head + (bodyLength < 0 ? '\r\n' : headEnd(bodyLength));
  }
}
