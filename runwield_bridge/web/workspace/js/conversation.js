// The conversation: `session/update` payloads as entries. Entries read from the saved history carry
// their index and are authoritative; entries streamed live are provisional ("live") and are replaced
// by the saved ones when the turn settles or the view is rebuilt, so nothing shows twice.

import { element } from "./dom.js";

const NOTICE_LEVELS = new Set(["info", "success", "warning", "error"]);
const STEERED = "↪ added to the running turn";

function ours(update) {
  const meta = update._meta && update._meta.runwield;
  return meta && typeof meta === "object" ? meta : {};
}

function safeUrl(url) {
  try {
    const parsed = new URL(url, location.href);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

function text(update) {
  const content = update.content;
  return content && content.type === "text" ? content.text : "";
}

export class Conversation {
  /** ``list``: the conversation's entries; ``joining``: under them, messages on their way into the running turn;
   * ``open``: opens the Session a /spawn started (its ``_meta.runwield.spawned``). */
  constructor(list, joining, open) {
    this.list = list;
    this.joining = joining;
    this.open = open;
    this.reset();
  }

  reset() {
    this.list.replaceChildren();
    this.joining.replaceChildren();
    this.first = null; // the lowest saved index shown
    this.last = -1; // the highest saved index shown
    this.steered = []; // texts the running turn read from this page (`_session/steering`): their saved copies keep the mark
  }

  get hasOlder() {
    return this.first !== null && this.first > 0;
  }

  /** Saved entries after the ones shown (live ones go: the saved record takes their place). A review link is
   * never saved (it is a secret), so a Plan entry shown live stays in place of its saved text. */
  appendSaved(entries) {
    const links = new Map([...this.list.querySelectorAll(".plan.live")].map((node) => [node.dataset.message, node]));
    this.dropLive();
    for (const { index, update } of entries) {
      if (index <= this.last) {
        this.refresh(index, update);
        continue;
      }
      const link = update.sessionUpdate === "agent_message_chunk" && links.get(update.messageId || "");
      if (link) {
        link.classList.remove("live");
        link.dataset.index = String(index);
        this.list.append(link);
      } else {
        this.show(update, { index });
      }
      this.last = index;
      if (this.first === null) this.first = index;
    }
  }

  /** A saved message or thought shown before may have grown since (its turn was still running): show it as it is now. */
  refresh(index, update) {
    const shown = this.list.querySelector(`[data-index="${index}"]`);
    if (!shown || shown.classList.contains("plan") || !["agent_message_chunk", "agent_thought_chunk"].includes(update.sessionUpdate)) return;
    const fresh = this.show(update, { index, before: shown });
    if (fresh !== shown) shown.remove();
  }

  /** Older saved entries, above the ones shown. */
  prependSaved(entries) {
    const fresh = entries.filter(({ index }) => this.first === null || index < this.first);
    const anchor = this.list.firstChild;
    for (const { index, update } of fresh) this.show(update, { index, before: anchor });
    if (fresh.length) this.first = fresh[0].index;
  }

  dropLive() {
    for (const node of this.list.querySelectorAll(".live")) node.remove();
  }

  /** What this page just sent, shown at once (the saved copy replaces it). */
  showPrompt(prompt) {
    return this.show({ sessionUpdate: "user_message_chunk", content: { type: "text", text: prompt } }, {});
  }

  /** A message typed during a turn, on its way into it (`_session/steering`): shown under the conversation until the
   * turn reads it (its echo moves it to where it joined). */
  showSteering(prompt) {
    const node = element("li", { class: "entry user live" }, element("div", { class: "who" }, "You"), element("div", { class: "text" }, prompt));
    node.append(element("div", { class: "mark" }, "adding to the running turn…"));
    this.joining.append(node);
    return node;
  }

  /** The running turn took the message shown as ``node`` (`injected`): it reads it at its next step. */
  markSteered(node) {
    node.querySelector(".mark").textContent = STEERED;
    node.dataset.taken = "true";
  }

  /** The messages the running turn took but never read (it was stopped first), no longer shown: their texts. */
  takeUnread() {
    const unread = [...this.joining.querySelectorAll("[data-taken]")];
    for (const node of unread) node.remove();
    return unread.map((node) => node.querySelector(".text").textContent);
  }

  /** Something this page has to say (a request that was refused or lost, or what it did on its own): kept until
   * another Session is opened. */
  note(message, level = "error") {
    this.list.append(element("li", { class: `entry notice ${level} local`, role: level === "error" ? "alert" : "note" }, message));
  }

  live(update) {
    if (update.sessionUpdate !== "user_message_chunk" || !this.echo(text(update))) this.show(update, {});
  }

  /** The running turn read a message this page steered into it: move it to where it joined. */
  echo(said) {
    const node = [...this.joining.children].find((n) => n.querySelector(".text").textContent === said);
    if (node) {
      this.list.append(node);
      this.steered.push(said);
    }
    return Boolean(node);
  }

  show(update, { index, before }) {
    const saved = index !== undefined;
    const place = (node) => {
      if (!saved) node.classList.add("live");
      else node.dataset.index = String(index);
      this.list.insertBefore(node, before || null);
      return node;
    };
    const kind = update.sessionUpdate;
    const meta = ours(update);
    if (kind === "user_message_chunk") return this.userText(text(update), saved, place);
    if (kind === "agent_thought_chunk") {
      const last = this.list.lastElementChild;
      if (!saved && !before && last && last.classList.contains("thought") && last.classList.contains("live")) {
        last.querySelector(".text").append(text(update));
        return last;
      }
      return place(element("li", { class: "entry thought" }, element("details", {}, element("summary", {}, "Thought"), element("div", { class: "text" }, text(update)))));
    }
    if (kind === "agent_message_chunk") return this.agentText(update, meta, saved, before, place);
    if (kind === "tool_call" || kind === "tool_call_update") return this.tool(update, place);
    return null;
  }

  userText(said, saved, place) {
    const node = place(element("li", { class: "entry user" }, element("div", { class: "who" }, "You"), element("div", { class: "text" }, said)));
    const steered = saved ? this.steered.indexOf(said) : -1;
    if (steered >= 0) {
      this.steered.splice(steered, 1);
      node.append(element("div", { class: "mark" }, STEERED));
    }
    return node;
  }

  agentText(update, meta, saved, before, place) {
    if (meta.planLink) {
      const link = meta.planLink;
      const url = safeUrl(link.url);
      const body = element("div", { class: "text" }, text(update));
      const action = url ? element("a", { class: "button", href: url, target: "_blank", rel: "noopener" }, link.label || "Review the Plan") : "";
      return place(element("li", { class: "entry agent plan", "data-message": update.messageId || "" }, element("div", { class: "who" }, `Plan, revision ${link.revision}`), body, action));
    }
    if (meta.spawned && typeof meta.spawned.sessionId === "string") {
      const button = element("button", { type: "button", class: "secondary", "data-spawned": meta.spawned.sessionId }, "Open the Session");
      button.addEventListener("click", () => this.open(meta.spawned));
      return place(element("li", { class: "entry agent spawned", "data-message": update.messageId || "" }, element("div", { class: "text" }, text(update)), button));
    }
    if (NOTICE_LEVELS.has(meta.notice)) return place(element("li", { class: `entry notice ${meta.notice}`, role: "note" }, text(update).trim()));
    const id = update.messageId || "";
    const last = this.list.lastElementChild;
    if (!saved && !before && last && last.classList.contains("live") && last.classList.contains("agent") && !last.classList.contains("plan") && last.dataset.message === id) {
      last.querySelector(".text").append(text(update));
      return last;
    }
    const node = element("li", { class: "entry agent", "data-message": id }, element("div", { class: "who" }, "Agent"), element("div", { class: "text" }, text(update)));
    return place(node);
  }

  tool(update, place) {
    const id = update.toolCallId;
    let node = [...this.list.querySelectorAll(".tool")].find((n) => n.dataset.toolCall === id);
    if (!node) {
      node = place(element("li", { class: "entry tool", "data-tool-call": id }, element("span", { class: "title" }, update.title || id), " ", element("span", { class: "status" }, "")));
    }
    if (update.title) node.querySelector(".title").textContent = update.title;
    if (update.status) {
      node.querySelector(".status").textContent = update.status.replace("_", " ");
      node.dataset.status = update.status;
    }
    for (const part of update.content || []) {
      if (part.type === "content" && part.content && part.content.type === "text") node.append(element("pre", {}, part.content.text));
    }
    return node;
  }
}
