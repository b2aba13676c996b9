// Messages typed while a turn runs that could not join it (`_session/steering`): queued in the order they were
// typed, shown under the conversation with a way to remove each, and sent together once the turn settles.
// Each Session's queue is kept in this tab's sessionStorage, so a reload does not lose it.

import { element } from "./dom.js";

const KEY = "runwield-workspace-queued:";

/** A slash command: never steered, and never merged with other messages into one prompt. */
export function isCommand(text) {
  return text.trimStart().startsWith("/");
}

export class FollowUpQueue {
  constructor(list) {
    this.list = list;
    this.storage = window.sessionStorage;
    this.sessionId = null;
    this.items = []; // {id, text}, oldest first
    this.nextId = 0;
  }

  get size() {
    return this.items.length;
  }

  /** Show the queue of another Session: what this tab kept queued for it. */
  open(sessionId) {
    this.sessionId = sessionId;
    this.items = this.stored(sessionId).map((text) => ({ id: this.nextId++, text }));
    this.render();
  }

  /** Queue ``text`` for ``sessionId`` (the Session shown, or one left meanwhile: kept for when it is opened again). */
  add(sessionId, text) {
    if (sessionId !== this.sessionId) return this.storage.setItem(KEY + sessionId, JSON.stringify([...this.stored(sessionId), text]));
    this.items.push({ id: this.nextId++, text });
    this.changed();
  }

  /** The next prompt's messages: those up to the first command, or that command alone. */
  takeBatch() {
    const command = this.items.findIndex((item) => isCommand(item.text));
    return this.take(command === 0 ? 1 : command < 0 ? this.items.length : command);
  }

  takeAll() {
    return this.take(this.items.length);
  }

  take(count) {
    const taken = this.items.splice(0, count).map((item) => item.text);
    this.changed();
    return taken;
  }

  stored(sessionId) {
    return JSON.parse(this.storage.getItem(KEY + sessionId) || "[]");
  }

  changed() {
    if (this.items.length) this.storage.setItem(KEY + this.sessionId, JSON.stringify(this.items.map((item) => item.text)));
    else this.storage.removeItem(KEY + this.sessionId);
    this.render();
  }

  render() {
    const entries = this.items.map((item) => {
      const remove = element("button", { type: "button", class: "secondary" }, "Remove");
      remove.addEventListener("click", () => {
        this.items = this.items.filter((other) => other !== item);
        this.changed();
      });
      const state = element("div", { class: "state" }, "Queued: sent when the turn ends ", remove);
      return element("li", { class: "entry user queued" }, element("div", { class: "who" }, "You"), element("div", { class: "text" }, item.text), state);
    });
    this.list.replaceChildren(...entries);
  }
}
