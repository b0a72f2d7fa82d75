/**
 * The headers of one request to a backend, as the flat `[name, value, name, value]` array the
 * connection pool writes as is. Names are lower case. `prepareBackend` hooks set credentials here.
 */
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

  /** Sets `name` (lower case) to `value`, replacing any value it had. */
  set(name: string, value: string): void {
    const list = this.list;
    for (let i = 0; i < list.length; i += 2) {
      if (list[i] === name) {
        list[i + 1] = value;
        return;
      }
    }
    list.push(name, value);
  }

  delete(name: string): void {
    const list = this.list;
    for (let i = 0; i < list.length; i += 2) {
      if (list[i] === name) {
        list.splice(i, 2);
        return;
      }
    }
  }
}
