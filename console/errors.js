// How the console shows a refused or failed request: the API's words verbatim, plus what to do
// when the origin policy or the token's role refused it; and the header's refresh error line.

import { ApiError } from "./api.js";
import { byId, setText } from "./dom.js";

/**
 * An API error as shown: verbatim, plus what to configure when the origin policy refused, or how
 * to go on when the token's role may not do this (the API names the role needed; the "Enter API
 * token" button is offered to switch to a token that has it).
 */
export function errorText(err) {
  const text = String(err);
  if (
    err instanceof ApiError && err.code === "PERMISSION_DENIED" &&
    err.message.startsWith("Origin not allowed")
  ) {
    return `${text} — Opened under a host name? List it in http.allowed_hosts, or open the ` +
      "console by IP address.";
  }
  if (isRoleRefusal(err)) {
    byId("token-button").hidden = false;
    return `${text} — This token may not do this: use "Enter API token" to switch to a token ` +
      "with that role.";
  }
  return text;
}

/** Whether the API refused a request for the token's role (403 "... role X required ..."). */
function isRoleRefusal(err) {
  return err instanceof ApiError && err.status === 403 && err.code === "PERMISSION_DENIED" &&
    /\brole \w+ required\b/.test(err.message);
}

/** Shows why a background read failed (401: the token is needed). */
export function showRefreshError(err) {
  const el = byId("refresh-error");
  const text = err instanceof ApiError && err.status === 401
    ? `${err} — enter the API token to continue.`
    : `Refresh failed: ${err}`;
  el.hidden = false;
  setText(el, text);
  if (err instanceof ApiError && err.status === 401) byId("token-button").hidden = false;
}

/** Hides the refresh error line (a full read succeeded). */
export function clearRefreshError() {
  byId("refresh-error").hidden = true;
}
