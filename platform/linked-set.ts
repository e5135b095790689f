/**
 * A set of short-lived values held by a long-lived owner (the requests in flight of a server,
 * the batches a forwarder waits on), kept as a doubly linked list whose links are cut when a
 * value leaves.
 *
 * Not a `Set`: a Set's discarded hash tables keep young values alive until a full collection,
 * promoting them with all they reference (why: docs/decisions/0011-linked-set-for-short-lived-values.md).
 */
export class LinkedSet<T> {
  #head: Link<T> | undefined;
  #tail: Link<T> | undefined;
  #size = 0;

  /** How many values it holds. */
  get size(): number {
    return this.#size;
  }

  /**
   * Adds `value` (the same value added twice is held twice) and returns its removal, which
   * cuts every link of its entry; calling it again does nothing.
   */
  add(value: T): () => void {
    const link: Link<T> = { value, prev: this.#tail, next: undefined, held: true };
    if (this.#tail) this.#tail.next = link;
    else this.#head = link;
    this.#tail = link;
    this.#size++;
    return () => this.#unlink(link);
  }

  /** The values now, oldest first: a copy, so the set may change while it is read. */
  values(): T[] {
    const values: T[] = [];
    for (let link = this.#head; link; link = link.next) values.push(link.value as T);
    return values;
  }

  #unlink(link: Link<T>): void {
    if (!link.held) return;
    if (link.prev) link.prev.next = link.next;
    else this.#head = link.next;
    if (link.next) link.next.prev = link.prev;
    else this.#tail = link.prev;
    // A removed entry points at nothing: once it is garbage it keeps nothing young alive.
    link.prev = undefined;
    link.next = undefined;
    link.value = undefined;
    link.held = false;
    this.#size--;
  }
}

interface Link<T> {
  value: T | undefined;
  prev: Link<T> | undefined;
  next: Link<T> | undefined;
  held: boolean;
}
