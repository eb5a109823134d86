// The bearer-token prompt (a modal dialog): the Api asks through it when an answer is 401.

import { byId } from "./dom.js";

/**
 * Asks for the bearer token in a modal dialog; null when the operator cancels.
 * @param {boolean} refused the last token was refused
 * @returns {Promise<string | null>}
 */
export function askToken(refused) {
  const dialog = /** @type {HTMLDialogElement} */ (byId("token-dialog"));
  const form = byId("token-form");
  const input = /** @type {HTMLInputElement} */ (byId("token-input"));
  byId("token-refused").hidden = !refused;
  input.value = "";
  return new Promise((resolve) => {
    const done = (token) => {
      form.removeEventListener("submit", onSubmit);
      byId("token-cancel").removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      if (dialog.open) dialog.close();
      byId("token-button").hidden = token !== null;
      resolve(token);
    };
    const onSubmit = (e) => {
      e.preventDefault();
      done(input.value.trim() === "" ? null : input.value.trim());
    };
    const onCancel = (e) => {
      e.preventDefault();
      done(null);
    };
    form.addEventListener("submit", onSubmit);
    byId("token-cancel").addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    input.focus();
  });
}
