/**
 * Test support for the node-local API: a Server-Sent Events client on fetch that hands the
 * stream's messages over one at a time, so a test awaits the next event (or heartbeat)
 * instead of sleeping.
 */

/** One message block of an event stream (fields as the WHATWG parser reads them). */
export interface SseMessage {
  id?: string;
  event?: string;
  /** `data` lines joined with `\n`. */
  data?: string;
  retry?: number;
  /** Comment lines (`: heartbeat`), joined with `\n`. */
  comment?: string;
}

/** An open stream. */
export interface SseClient {
  readonly status: number;
  readonly headers: Headers;
  /** The next message; rejects when the stream ended before one came. */
  next(): Promise<SseMessage>;
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  /** Messages received and not yet taken by next(). */
  readonly pending: number;
  close(): void;
}

/**
 * Opens `url` as an event stream (`Accept: text/event-stream`), resuming from
 * `lastEventId` (sent as the Last-Event-ID header) when given.
 */
export async function openSse(url: string, options: { lastEventId?: string } = {}): Promise<SseClient> {
  const abort = new AbortController();
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  const response = await fetch(url, { headers, signal: abort.signal });
  const messages: SseMessage[] = [];
  const waiters: { resolve: (m: SseMessage) => void; reject: (e: Error) => void }[] = [];
  let done = false;
  let endStream: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => (endStream = resolve));
  const finish = (): void => {
    done = true;
    endStream();
    for (const waiter of waiters.splice(0)) waiter.reject(new Error('the event stream ended'));
  };
  const deliver = (message: SseMessage): void => {
    const waiter = waiters.shift();
    if (waiter) waiter.resolve(message);
    else messages.push(message);
  };
  if (response.body && response.status === 200) void pump(response.body, deliver).finally(finish);
  else {
    await response.body?.cancel().catch(() => undefined);
    finish();
  }
  return {
    status: response.status,
    headers: response.headers,
    ended,
    get pending() {
      return messages.length;
    },
    next() {
      const message = messages.shift();
      if (message) return Promise.resolve(message);
      if (done) return Promise.reject(new Error('the event stream ended'));
      return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
    },
    close: () => abort.abort(),
  };
}

/** Reads the body, calling `deliver` for every complete message block. */
async function pump(body: ReadableStream<Uint8Array>, deliver: (m: SseMessage) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        deliver(parseBlock(block));
      }
    }
  } catch {
    // aborted by close(), or the connection was cut: the stream has ended either way
  }
}

function parseBlock(block: string): SseMessage {
  const message: SseMessage = {};
  const append = (key: 'data' | 'comment', value: string): void => {
    message[key] = message[key] === undefined ? value : `${message[key]}\n${value}`;
  };
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) {
      append('comment', line.slice(1).trimStart());
      continue;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'data') append('data', value);
    else if (field === 'id') message.id = value;
    else if (field === 'event') message.event = value;
    else if (field === 'retry') message.retry = Number(value);
  }
  return message;
}
