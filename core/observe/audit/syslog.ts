/**
 * Audit records to syslog: RFC 5424 messages over UDP (RFC 5426: one message a datagram) or TCP
 * (RFC 6587: octet counting, `<length> <message>`). The message's MSG is the record's JSON line,
 * in which JSON has escaped every control character; the header's fields are the gateway's own
 * (host name, app name, pid, the event type) and are cut to RFC 5424's printable ASCII and
 * lengths, so nothing in a record can end a message or forge a header. A small formatter of our
 * own rather than syslog-client, npm's most used (last released 2024): it frames TCP by a newline
 * (RFC 6587's non-transparent framing; octet counting is firmer), passes the header's fields as
 * given, and bounds nothing that waits for a connection.
 *
 * TCP keeps a connection, reconnects after a second when it drops, and holds at most
 * MAX_PENDING_BYTES while it is down: what does not fit is dropped and counted (`dropped`), as
 * a datagram that is lost is.
 */
import { createSocket, type Socket as DatagramSocket } from 'node:dgram';
import { connect, type Socket } from 'node:net';
import { hostname } from 'node:os';
import { Buffer } from 'node:buffer';
import process from 'node:process';

export const SYSLOG_FACILITIES: Readonly<Record<string, number>> = {
  kern: 0, user: 1, mail: 2, daemon: 3, auth: 4, syslog: 5, lpr: 6, news: 7, uucp: 8, cron: 9, authpriv: 10, ftp: 11,
  local0: 16, local1: 17, local2: 18, local3: 19, local4: 20, local5: 21, local6: 22, local7: 23,
};

/** Severity: a record that went as asked is informational, a refusal or failure a notice. */
const INFO = 6;
const NOTICE = 5;
const MAX_PENDING_BYTES = 1024 * 1024;
/** A datagram larger than this is not sent whole by many networks (RFC 5426 asks receivers for 2048 at least). */
const MAX_DATAGRAM = 8192;

/** A header field: printable US-ASCII without space (RFC 5424 PRINTUSASCII), at most `max`, `-` when empty. */
export function headerField(value: string, max: number): string {
  const cleaned = value.replace(/[^\x21-\x7e]/g, '').slice(0, max);
  return cleaned === '' ? '-' : cleaned;
}

export interface SyslogHeader {
  readonly facility: number;
  readonly appName: string;
  readonly hostname?: string;
  readonly pid?: number;
}

/** One RFC 5424 message: `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID - MSG`. */
export function syslogMessage(header: SyslogHeader, time: string, type: string, outcome: string, json: string): string {
  const pri = header.facility * 8 + (outcome === 'success' ? INFO : NOTICE);
  const host = headerField(header.hostname ?? hostname(), 255);
  const msg = json.replace(/[\r\n\0]/g, ' ');
  return `<${pri}>1 ${headerField(time, 64)} ${host} ${headerField(header.appName, 48)} ${header.pid ?? process.pid} ${headerField(type, 32)} - ${msg}`;
}

export interface SyslogTarget {
  readonly transport: 'udp' | 'tcp';
  readonly host: string;
  readonly port: number;
}

export class SyslogSender {
  readonly #target: SyslogTarget;
  #udp: DatagramSocket | null = null;
  #tcp: Socket | null = null;
  #connected = false;
  #pending: string[] = [];
  #pendingBytes = 0;
  #retry: NodeJS.Timeout | null = null;
  #closed = false;
  /** Messages not sent: TCP down with its queue full, or a datagram too large. */
  dropped = 0;

  constructor(target: SyslogTarget) {
    this.#target = target;
    if (target.transport === 'udp') {
      this.#udp = createSocket(target.host.includes(':') ? 'udp6' : 'udp4');
      this.#udp.on('error', () => undefined);
      this.#udp.unref();
    } else this.#open();
  }

  send(message: string): void {
    if (this.#closed) return;
    if (this.#udp !== null) {
      const data = Buffer.from(message);
      if (data.length > MAX_DATAGRAM) this.dropped++;
      else this.#udp.send(data, this.#target.port, this.#target.host, () => undefined);
      return;
    }
    const framed = `${Buffer.byteLength(message)} ${message}`;
    if (this.#connected && this.#pending.length === 0) this.#tcp!.write(framed);
    else this.#hold(framed);
  }

  #hold(framed: string): void {
    const bytes = Buffer.byteLength(framed);
    if (this.#pendingBytes + bytes > MAX_PENDING_BYTES) {
      this.dropped++;
      return;
    }
    this.#pending.push(framed);
    this.#pendingBytes += bytes;
  }

  #open(): void {
    const socket = connect({ host: this.#target.host, port: this.#target.port });
    this.#tcp = socket;
    socket.unref();
    socket.on('connect', () => {
      this.#connected = true;
      if (this.#pending.length > 0) socket.write(this.#pending.join(''));
      this.#pending = [];
      this.#pendingBytes = 0;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.#connected = false;
      if (this.#closed) return;
      this.#retry = setTimeout(() => this.#open(), 1000);
      this.#retry.unref();
    });
  }

  close(): Promise<void> {
    this.#closed = true;
    if (this.#retry !== null) clearTimeout(this.#retry);
    return new Promise((resolve) => {
      if (this.#udp !== null) this.#udp.close(() => resolve());
      else if (this.#tcp !== null && this.#connected) this.#tcp.end(() => resolve());
      else {
        this.#tcp?.destroy();
        resolve();
      }
    });
  }
}
