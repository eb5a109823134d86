// Reads of one resource that overlap -- the refresh cycle, an event, a view switch, a reload's
// full refresh each start one -- answer in any order. Every loader reads through a LatestRead:
// an answer (or an error) of a read asked before one already applied is dropped, so a slow, older
// answer never replaces a newer one.

/** What LatestRead.read resolves with when the read was overtaken (nothing is to be shown). */
export const OVERTAKEN = Symbol("overtaken");

/** The reads of one resource, numbered as they are asked; the newest applied wins. */
export class LatestRead {
  /** Reads asked so far. */
  asked = 0;
  /** The newest read applied (its answer or its error was handed to the caller). */
  applied = 0;

  /**
   * Runs `read` (one request, or a few that make one answer). Resolves with its answer, or with
   * OVERTAKEN when a read asked after it settled first; rejects with its error otherwise. The
   * caller shows what it resolves with at once (before any other await).
   * @template T
   * @param {() => Promise<T>} read
   * @returns {Promise<T | typeof OVERTAKEN>}
   */
  async read(read) {
    const n = ++this.asked;
    let answer;
    try {
      answer = await read();
    } catch (err) {
      if (n < this.applied) return OVERTAKEN;
      this.applied = n;
      throw err;
    }
    if (n < this.applied) return OVERTAKEN;
    this.applied = n;
    return answer;
  }
}
