// The Parameters view: current value, type and bounds of each; set a new value (checked first).

import { notAvailableHere } from "./api.js";
import { byId, cssId, fill, h, setResult, setText } from "./dom.js";
import { field, readParameter } from "./forms.js";
import { LatestRead, OVERTAKEN } from "./latest_read.js";

/** The Parameters view. */
export class ParametersView {
  /**
   * @param {{
   *   api: {get: (path: string) => Promise<any>, post: (path: string, body?: unknown) => Promise<any>},
   *   errorText: (err: unknown) => string,
   * }} options
   */
  constructor(options) {
    this.api = options.api;
    this.errorText = options.errorText;
    /**
     * name -> its form as shown and its declaration (without value) as JSON: a form is kept while
     * its declaration is unchanged, with what the operator typed in it.
     * @type {Map<string, {shape: string, el: HTMLElement, valueEl: HTMLElement}>}
     */
    this.forms = new Map();
  }

  /** Reads of the parameters (a slower, older answer is dropped). */
  reads = new LatestRead();

  /** Reads and shows the parameters; a failed read is shown in the view and rejects. */
  async load() {
    let list;
    try {
      const r = await this.reads.read(() => this.api.get("/v0/parameters"));
      if (r === OVERTAKEN) return;
      list = r.parameters ?? [];
    } catch (err) {
      fill(byId("parameters"), h("p", { class: "muted", text: String(err) }));
      // Automation disabled on this runtime, for good: the view says so, nothing is owed. Another
      // 503 (server busy) is a failed read: owed again.
      if (notAvailableHere(err, "Parameters")) return;
      // Said to the caller too: a failed full refresh is owed again (app.js fullOwed).
      throw err;
    }
    list.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    this.render(list);
    for (const p of list) {
      const form = this.forms.get(p.name);
      if (form) setText(form.valueEl, String(p.value));
    }
  }

  /**
   * Shows the declarations. A parameter whose declaration is unchanged keeps its form (a reload
   * that adds or removes another one must not wipe a value being typed); a changed one gets a
   * new form.
   */
  render(list) {
    const box = byId("parameters");
    const previous = this.forms;
    this.forms = new Map();
    if (list.length === 0) {
      fill(box, h("p", { class: "muted", text: "No parameters declared." }));
      return;
    }
    const els = list.map((p) => {
      const { value: _v, ...declared } = p;
      const shape = JSON.stringify(declared);
      let form = previous.get(p.name);
      if (form === undefined || form.shape !== shape) form = { shape, ...this.form(p) };
      this.forms.set(p.name, form);
      return form.el;
    });
    // Moved only where the order changed: a form taken out of the page loses its focus.
    const kept = new Set(els);
    for (const child of [...box.children]) if (!kept.has(child)) child.remove();
    els.forEach((el, n) => {
      if (box.children[n] !== el) box.insertBefore(el, box.children[n] ?? null);
    });
  }

  /** One parameter's form: its current value and a field for a new one. */
  form(p) {
    const id = `param-${cssId(p.name)}`;
    const valueEl = h("strong", { class: "value", text: String(p.value) });
    const ui = field(`${id}-new`, `New value of ${p.name}`, { ...p, required: true });
    const result = h("p", { class: "result", role: "status" });
    const onsubmit = async (e) => {
      e.preventDefault();
      const r = readParameter(p, ui.read());
      ui.setError("error" in r ? r.error : "");
      if ("error" in r) {
        setResult(result, "error", "Not sent: fix the value.");
        return;
      }
      setResult(result, "pending", "Setting…");
      try {
        const a = await this.api.post("/v0/parameters", { name: p.name, value: r.value });
        setResult(result, "ok", `${a.parameter.name} = ${a.parameter.value}`);
      } catch (err) {
        setResult(result, "error", this.errorText(err));
      }
      // A failed read is shown in the view.
      await this.load().catch(() => {});
    };
    const el = h(
      "form",
      { class: "card param", novalidate: true, "data-parameter": p.name, onsubmit },
      h("h3", { text: p.name }),
      h(
        "p",
        {},
        "Current value: ",
        valueEl,
        h("span", { class: "muted", text: ` (${p.type})` }),
      ),
      ui.row,
      h(
        "div",
        { class: "fn-actions" },
        h("button", { type: "submit" }, `Set ${p.name}`),
        result,
      ),
    );
    return { el, valueEl };
  }
}
