// A question (`elicitation/create`, form mode) as an HTML form built from its requestedSchema:
// single choices as radio buttons, text as text boxes, booleans as check boxes, numbers as number boxes.
// Nothing is chosen for the person: no field has a default unless the schema gives one.

import { element } from "./dom.js";

let formCount = 0;

function choices(schema) {
  if (Array.isArray(schema.oneOf)) return schema.oneOf.map((o) => ({ value: o.const, label: o.title || String(o.const), hint: o.description }));
  if (Array.isArray(schema.enum)) return schema.enum.map((value, i) => ({ value, label: (schema.enumNames || [])[i] || String(value) }));
  return null;
}

function field(name, schema, required, prefix) {
  const id = `${prefix}-${name}`;
  const title = schema.title || name;
  const options = choices(schema);
  if (options) {
    const set = element("fieldset", { class: "choice" }, element("legend", {}, title + (required ? " (required)" : "")));
    for (const option of options) {
      const input = element("input", { type: "radio", name, value: String(option.value), id: `${id}-${option.value}` });
      if (required) input.required = true;
      if (schema.default === option.value) input.checked = true;
      const label = element("label", { for: input.id }, option.label);
      set.append(element("div", { class: "option" }, input, label, option.hint ? element("small", {}, option.hint) : ""));
    }
    return set;
  }
  const label = element("label", { for: id }, title + (required ? " (required)" : ""));
  let input;
  if (schema.type === "boolean") {
    input = element("input", { type: "checkbox", id, name });
    if (schema.default === true) input.checked = true;
    return element("div", { class: "field check" }, input, label);
  }
  if (schema.type === "number" || schema.type === "integer") {
    input = element("input", { type: "number", id, name, step: schema.type === "integer" ? "1" : "any" });
  } else {
    input = element("textarea", { id, name, rows: "2" });
    if (schema.minLength) input.minLength = schema.minLength;
  }
  if (schema.default !== undefined) input.value = String(schema.default);
  if (required) input.required = true;
  const hint = schema.description ? element("small", { id: `${id}-hint` }, schema.description) : "";
  if (hint) input.setAttribute("aria-describedby", hint.id);
  return element("div", { class: "field" }, label, input, hint);
}

function content(form, properties) {
  const data = {};
  for (const [name, schema] of Object.entries(properties)) {
    if (choices(schema)) {
      const checked = form.querySelector(`input[name="${CSS.escape(name)}"]:checked`);
      if (checked) data[name] = choices(schema).find((o) => String(o.value) === checked.value).value;
    } else if (schema.type === "boolean") {
      data[name] = form.elements[name].checked;
    } else {
      const raw = form.elements[name].value;
      if (raw.trim() === "") continue;
      data[name] = schema.type === "number" || schema.type === "integer" ? Number(raw) : raw;
    }
  }
  return data;
}

/** Show the form in `container`; resolves with the elicitation result. `withdraw()` removes it unanswered. */
export function askForm(container, params) {
  const schema = params.requestedSchema || { properties: {} };
  const properties = schema.properties || {};
  const required = new Set(schema.required || []);
  const prefix = `q${++formCount}`;
  const form = element("form", { class: "question", "aria-labelledby": `${prefix}-message` });
  form.append(element("p", { id: `${prefix}-message`, class: "message" }, params.message || "A question"));
  for (const [name, property] of Object.entries(properties)) form.append(field(name, property, required.has(name), prefix));
  const send = element("button", { type: "submit" }, "Answer");
  const decline = element("button", { type: "button", class: "secondary" }, "Decline");
  const cancel = element("button", { type: "button", class: "secondary" }, "Cancel");
  form.append(element("div", { class: "actions" }, send, decline, cancel));
  container.append(form);
  let settle;
  const answered = new Promise((resolve) => (settle = resolve));
  const finish = (result) => {
    form.remove();
    settle(result);
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    finish({ action: "accept", content: content(form, properties) });
  });
  decline.addEventListener("click", () => finish({ action: "decline" }));
  cancel.addEventListener("click", () => finish({ action: "cancel" }));
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      finish({ action: "cancel" });
    }
  });
  const first = form.querySelector("input, textarea");
  if (first) first.focus();
  return { answered, withdraw: () => finish(null) };
}
