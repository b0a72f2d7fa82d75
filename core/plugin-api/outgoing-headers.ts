/**
 * The headers of one request to a backend, as the flat `[name, value, name, value]` array the
 * connection pool writes as is. Names are lower case. `prepareBackend` hooks set credentials here.
 */
/** RFC 9110 token characters (a header name); lower case only, as the list holds them. */
const NAME = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
/** A field value may not carry CR, LF or NUL: they would split the request (header injection). */
const UNSAFE_VALUE = /[\r\n\0]/;

/**
 * The last name and value `set` checked and found safe. A credential hook sets the same header
 * with the same (cached) token on every request: comparing it with the last one checked (the
 * same string object, or equal bytes: equal strings are equally safe) replaces scanning a token
 * of a kilobyte or more with a regex each time. Anything else is checked as before.
 */
let checkedName: string | undefined;
let checkedValue: string | undefined;

export class OutgoingHeaders {
  readonly list: string[];

  constructor(list: string[]) {
    this.list = list;
  }

  get(name: string): string | undefined {
    const list = this.list;
    for (let i = 0; i < list.length; i += 2) if (list[i] === name) return list[i + 1];
    return undefined;
  }

  /**
   * Sets `name` (lower case) to `value`, replacing every value it had: in transparent mode the
   * list holds the client's headers, and a client that sent the credential's header twice must
   * not see its second copy reach the backend next to the gateway's. Throws on a name that is
   * not a lower-case token, or a value with CR, LF or NUL (which would inject headers).
   */
  set(name: string, value: string): void {
    if (name !== checkedName) {
      if (!NAME.test(name)) throw new TypeError(`invalid header name ${JSON.stringify(name)} (lower-case token expected)`);
      checkedName = name;
    }
    if (value !== checkedValue) {
      if (UNSAFE_VALUE.test(value)) throw new TypeError(`invalid value for header ${name}: CR, LF and NUL are not allowed`);
      checkedValue = value;
    }
    this.delete(name);
    this.list.push(name, value);
  }

  /** Removes every value of `name`. */
  delete(name: string): void {
    const list = this.list;
    for (let i = list.length - 2; i >= 0; i -= 2) {
      if (list[i] === name) list.splice(i, 2);
    }
  }
}
