// The /v0 API as the console uses it: JSON in and out, the bearer token from sessionStorage
// (asked for when an answer is 401, never put in a URL), errors kept exactly as the API words
// them.

/** sessionStorage key of the bearer token (per tab, gone when the tab closes). */
export const TOKEN_STORAGE_KEY = "runtime-console.api-token";

/** An API refusal or a failed request: HTTP status, status code and the API's own message. */
export class ApiError extends Error {
  /**
   * @param {number} status HTTP status, 0 when no answer arrived
   * @param {string} code the API's status code (NETWORK when no answer arrived)
   * @param {string} message the API's message, verbatim
   */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }

  /** How the console shows it: `409 FAILED_PRECONDITION: <message>`. */
  toString() {
    return this.status === 0 ? this.message : `${this.status} ${this.code}: ${this.message}`;
  }
}

/**
 * Whether a failed read is the runtime's answer that a service is not available on it
 * (`503 UNAVAILABLE: <service> not available: ...`: automation disabled, its engine not running),
 * rather than a 503 of the HTTP layer, for a moment (`Server busy: ...` over
 * http.thread_pool_size, `Server shutting down: ...`), which is a read failed like any other.
 * @param {unknown} err
 * @param {string} service as the runtime names it first in its message ("Parameters", "Automation")
 */
export function notAvailableHere(err, service) {
  return err instanceof ApiError && err.status === 503 &&
    err.message.startsWith(`${service} not available: `);
}

/**
 * JSON.parse that keeps integers beyond ±2^53 exact: the API writes 64-bit integers as their
 * decimal digits, which a plain parse would round. Such a number becomes its digit string.
 * @param {string} text
 */
export function parseJson(text) {
  return JSON.parse(text, (_key, value, context) => {
    if (
      typeof value === "number" && Number.isInteger(value) && !Number.isSafeInteger(value) &&
      context && typeof context.source === "string" && /^-?\d+$/.test(context.source)
    ) {
      return context.source;
    }
    return value;
  });
}

/** The token kept for this tab, or "". */
export function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_STORAGE_KEY) ?? "";
  } catch {
    return "";
  }
}

/** Keeps (or, with "", forgets) the token for this tab. */
export function storeToken(token) {
  try {
    if (token === "") sessionStorage.removeItem(TOKEN_STORAGE_KEY);
    else sessionStorage.setItem(TOKEN_STORAGE_KEY, token);
  } catch {
    // storage disabled: the token lives as long as the page
  }
}

/**
 * A request that changes something (POST: a mode, a call, a parameter, a clear) refused with 401
 * is sent again with the token entered only within this long of the first try: an operator who
 * comes back to the token prompt minutes later must not see an old command act on a machine that
 * moved on. The refusal says so; the operator sends it again if it still applies.
 */
export const RESEND_WITHIN_MS = 15_000;

/**
 * Requests sent again with the token entered however late it comes: an e-stop is always the safe
 * direction, and the operator who pressed it and then looked for the token wants the machine
 * stopped, not told to press again (its clear is not among them: it waits RESEND_WITHIN_MS).
 */
export const RESENT_HOWEVER_LATE = new Set(["POST /v0/estop"]);

/** Client of the runtime's /v0 API on the page's own origin. */
export class Api {
  /**
   * @param {{askToken: (refused: boolean) => Promise<string | null>}} options `askToken` asks
   *   the operator for a token (refused: the last one was wrong); null when they cancel.
   */
  constructor(options) {
    this.askToken = options.askToken;
    this.token = storedToken();
    /** @type {Promise<string | null> | null} one prompt at a time, shared by every caller */
    this.asking = null;
    /** The operator cancelled the prompt: do not ask again by ourselves. */
    this.declined = false;
    /**
     * Told when a new token was entered (app.js: the event stream, refused meanwhile and waiting
     * its backoff, tries again at once).
     */
    this.onToken = () => {};
  }

  /** Request headers: the bearer token when one is known. */
  headers() {
    return this.token === "" ? {} : { authorization: `Bearer ${this.token}` };
  }

  /**
   * Answers 401 for `usedToken`: asks once for a (new) token, shared by concurrent callers.
   * Resolves true when there is a token to retry with. Once the operator cancels, 401s stop
   * asking (the page would otherwise prompt again at every refresh) until `force` (the "Enter
   * API token" button, or the operator's own act: an e-stop, a mode, a call, a download...) asks
   * anew.
   */
  async authenticate(usedToken, force = false) {
    if (this.token !== usedToken) return true; // someone else already got a new one
    if (this.declined && !force) return false;
    this.asking ??= this.askToken(usedToken !== "").finally(() => this.asking = null);
    const token = await this.asking;
    if (token === null || token === "") {
      this.declined = true;
      return false;
    }
    this.declined = false;
    this.token = token;
    storeToken(token);
    this.onToken();
    return true;
  }

  /**
   * Sends one request; resolves with the parsed JSON answer, rejects with ApiError.
   * @param {string} method
   * @param {string} path e.g. `/v0/mode`
   * @param {unknown} [body] sent as JSON when given
   */
  async request(method, path, body) {
    const { text } = await this.send(method, path, "application/json", body);
    try {
      return text === "" ? null : parseJson(text);
    } catch {
      return null;
    }
  }

  /**
   * GETs an export (CSV, JSON Lines) with the token, as a Blob of its content type: a plain
   * link would not carry the Authorization header. The operator's own act, as a command is: a
   * 401 asks for the token even after a prompt was cancelled, and the export is asked again with
   * the one entered; still refused (the prompt cancelled again), it rejects with the 401.
   * @param {string} path
   * @param {string} accept the media type asked for
   */
  async download(path, accept) {
    const { text, contentType } = await this.send("GET", path, accept, undefined, true);
    return new Blob([text], { type: contentType || accept });
  }

  /**
   * One request, asking again for a token on 401 (a POST is then sent again only within
   * RESEND_WITHIN_MS of its first try); resolves with the answer's text and content type when it
   * is a success, rejects with ApiError (the API's own code and message) otherwise.
   * @param {string} method
   * @param {string} path
   * @param {string} accept
   * @param {unknown} [body]
   * @param {boolean} [operatorAct] the operator asked for it (a command; a download): a 401 asks
   *   for the token even after a prompt was cancelled, which only stops the page's background
   *   reads from asking at every refresh
   */
  async send(method, path, accept, body, operatorAct = method !== "GET" && method !== "HEAD") {
    const firstTry = performance.now();
    for (;;) {
      const used = this.token;
      /** @type {Record<string, string>} */
      const headers = { accept, ...this.headers() };
      if (body !== undefined) headers["content-type"] = "application/json";
      let res;
      try {
        res = await fetch(path, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          cache: "no-store",
        });
      } catch (err) {
        throw new ApiError(
          0,
          "NETWORK",
          `No answer from the runtime (${err instanceof Error ? err.message : err})`,
        );
      }
      const text = await res.text();
      if (res.status === 401 && await this.authenticate(used, operatorAct)) {
        const waited = performance.now() - firstTry;
        if (
          method === "GET" || method === "HEAD" || waited <= RESEND_WITHIN_MS ||
          RESENT_HOWEVER_LATE.has(`${method} ${path}`)
        ) continue;
        throw new ApiError(
          401,
          "UNAUTHENTICATED",
          `${method} ${path} was not sent again: the token came ${
            Math.round(waited / 1000)
          } s after it was refused (more than ${
            RESEND_WITHIN_MS / 1000
          } s); send it again if it still applies`,
        );
      }
      if (!res.ok) {
        let json = null;
        try {
          json = text === "" ? null : parseJson(text);
        } catch {
          json = null;
        }
        const status = json?.status;
        throw new ApiError(
          res.status,
          typeof status?.code === "string" ? status.code : "HTTP",
          typeof status?.message === "string" ? status.message : text || res.statusText,
        );
      }
      return { text, contentType: res.headers.get("content-type") ?? "" };
    }
  }

  get(path) {
    return this.request("GET", path);
  }

  post(path, body) {
    return this.request("POST", path, body);
  }
}
