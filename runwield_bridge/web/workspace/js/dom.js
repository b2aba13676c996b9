// The one DOM helper: an element with attributes and children (strings become text, never HTML).

export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined && value !== null) node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child === "" || child === null || child === undefined) continue;
    node.append(child);
  }
  return node;
}
