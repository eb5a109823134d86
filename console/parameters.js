// The Parameters view: current value, type and bounds of each; set a new value (checked first).

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
    /** The declarations shown (without values): the forms are rebuilt when they change. */
    this.shape = "";
    /** @type {Map<string, HTMLElement>} parameter name -> value cell */
    this.values = new Map();
  }

  /** Reads of the parameters (a slower, older answer is dropped). */
  reads = new LatestRead();

  async load() {
    let list;
    try {
      const r = await this.reads.read(() => this.api.get("/v0/parameters"));
      if (r === OVERTAKEN) return;
      list = r.parameters ?? [];
    } catch (err) {
      this.shape = "";
      fill(byId("parameters"), h("p", { class: "muted", text: String(err) }));
      return;
    }
    list.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    const shape = JSON.stringify(list.map(({ value: _v, ...rest }) => rest));
    if (shape !== this.shape) {
      this.shape = shape;
      this.render(list);
    }
    for (const p of list) {
      const cell = this.values.get(p.name);
      if (cell) setText(cell, String(p.value));
    }
  }

  render(list) {
    this.values.clear();
    if (list.length === 0) {
      fill(byId("parameters"), h("p", { class: "muted", text: "No parameters declared." }));
      return;
    }
    fill(
      byId("parameters"),
      ...list.map((p) => {
        const id = `param-${cssId(p.name)}`;
        const valueEl = h("strong", { class: "value", text: String(p.value) });
        this.values.set(p.name, valueEl);
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
          await this.load();
        };
        return h(
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
      }),
    );
  }
}
