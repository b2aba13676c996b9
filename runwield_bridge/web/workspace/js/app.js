// The Workspace page: an ACP client in the browser. Projects and Sessions from `session/list`, the
// conversation from `session/update` and bounded history (`_meta.runwield.workspace`), questions as forms;
// a message typed while a turn runs joins it (`_session/steering`) or waits in the queue for the next prompt.

import { Connection, RpcError } from "./rpc.js";
import { Conversation } from "./conversation.js";
import { askForm } from "./form.js";
import { FollowUpQueue, isCommand } from "./followups.js";
import { element } from "./dom.js";

const params = new URLSearchParams(location.search);
const HISTORY_LIMIT = Math.max(1, Number(params.get("limit")) || 50);
const POLL_MS = Math.max(200, Number(params.get("poll")) || 3000);
const BUSY = -32001;
const $ = (id) => document.getElementById(id);

const ui = {
  connection: $("connection"),
  banner: $("capabilities"),
  projects: $("projects"),
  moreSessions: $("more-sessions"),
  newSession: $("new-session"),
  newCwd: $("new-cwd"),
  title: $("session-title"),
  options: $("options"),
  conversation: $("conversation"),
  older: $("older"),
  forms: $("forms"),
  composer: $("composer"),
  text: $("composer-text"),
  send: $("send"),
  stop: $("stop"),
  commandsButton: $("commands-button"),
  commandsMenu: $("commands-menu"),
  usage: $("usage"),
  sidebar: $("sidebar"),
  toggleSidebar: $("toggle-sidebar"),
};

const state = {
  caps: null, // what the server offers, from `initialize`
  sessions: new Map(), // sessionId -> SessionInfo
  cursor: null,
  current: null, // {sessionId, cwd, title, updatedAt}
  turn: null, // the Session whose `session/prompt` from this page is running
  steering: 0, // messages on their way to `_session/steering` (or to the queue)
  followUps: Promise.resolve(), // those messages, one after the other
  opening: 0, // bumps whenever another Session is opened: late answers for the previous one are dropped
  forms: new Map(), // JSON-RPC id of an elicitation/create -> its form
  loadingOlder: false,
  shownSessions: "",
};
const conversation = new Conversation($("entries"), $("joining"), openSpawned);
const queue = new FollowUpQueue($("queued"));

const rpc = new Connection(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/acp`, {
  open: connected,
  closed: disconnected,
  notification,
  request,
});

function randomId() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** `_meta` of a mutating request: a fresh request id, and the revision and Project this page saw (no revision for
 * steering: the running turn moves the revision on, and the input is meant for that turn). */
function effect(session, { withRevision = true } = {}) {
  if (!state.caps || !state.caps.effects) return undefined;
  const ours = { requestId: randomId() };
  if (session) {
    if (withRevision && session.revision !== undefined && session.revision !== null) ours.revision = session.revision;
    ours.project = session.cwd;
  }
  return { runwield: ours };
}

/** Keep the Session's revision from an answer that carries one. */
function saw(session, answer) {
  const revision = answer && answer._meta && answer._meta.runwield && answer._meta.runwield.revision;
  if (session && Number.isInteger(revision)) session.revision = revision;
}

function isConflict(error) {
  return error instanceof RpcError && state.caps && state.caps.conflictCode !== undefined && error.code === state.caps.conflictCode;
}

function say(message) {
  ui.connection.textContent = message;
}

function warn(lines) {
  ui.banner.hidden = lines.length === 0;
  ui.banner.replaceChildren(...lines.flatMap((line, i) => (i ? [element("br"), line] : [line])));
}

function oops(error) {
  conversation.note(error);
  toBottom();
}

function capabilities(answer) {
  const agent = answer.agentCapabilities || {};
  const sessions = agent.sessionCapabilities || {};
  const workspace = (answer._meta && answer._meta.runwield && answer._meta.runwield.workspace) || null;
  return {
    list: Boolean(sessions.list),
    resume: Boolean(sessions.resume),
    load: Boolean(agent.loadSession),
    history: workspace && workspace.version === 1 && typeof workspace.history === "string" ? workspace.history : null,
    effects: Boolean(workspace && workspace.version === 1 && workspace.requestIds && workspace.revisions),
    steering: Boolean(answer._meta && answer._meta.steering && answer._meta.steering.supported),
    conflictCode: workspace && workspace.conflictCode,
  };
}

function missing(caps) {
  const lines = [];
  if (!caps.list) lines.push("This server cannot list Sessions (no session/list): start a new Session with a project directory.");
  if (!caps.history) lines.push("This server offers no bounded history (no _meta.runwield.workspace version 1): opening a saved Session replays its whole conversation.");
  if (!caps.resume && !caps.load) lines.push("This server cannot reopen saved Sessions (neither session/resume nor session/load).");
  if (!caps.effects) lines.push("This server does not check request ids and revisions: a message sent while another client changes the Session is not refused.");
  return lines;
}

async function connected() {
  say("Connected");
  try {
    const answer = await rpc.call("initialize", {
      protocolVersion: 1,
      clientCapabilities: { elicitation: { form: {} } },
      clientInfo: { name: "runwield-workspace", title: "RunWield Workspace", version: "1" },
    });
    state.caps = capabilities(answer);
    warn(missing(state.caps));
    await refreshSessions();
    if (state.current) await reopen(state.current);
    returnUnsent();
  } catch (error) {
    say(`Connected, but the server did not start this page's session: ${describe(error)}`);
  }
  controls();
}

function disconnected() {
  say("Connection lost; reconnecting…");
  state.caps = null;
  state.turn = null;
  for (const form of state.forms.values()) form.withdraw();
  state.forms.clear();
  controls();
}

// Projects and Sessions

async function refreshSessions() {
  if (!state.caps || !state.caps.list) return false;
  const answer = await rpc.call("session/list", {});
  state.sessions = new Map(answer.sessions.map((s) => [s.sessionId, s]));
  state.cursor = answer.nextCursor || null;
  renderSessions();
  const current = state.current && state.sessions.get(state.current.sessionId);
  const changed = Boolean(current && current.updatedAt !== state.current.updatedAt);
  if (current) {
    Object.assign(state.current, { updatedAt: current.updatedAt, title: current.title || state.current.title });
    ui.title.textContent = state.current.title || "Untitled Session";
  }
  return changed;
}

async function moreSessions() {
  const answer = await rpc.call("session/list", { cursor: state.cursor });
  for (const s of answer.sessions) state.sessions.set(s.sessionId, s);
  state.cursor = answer.nextCursor || null;
  renderSessions();
}

function renderSessions() {
  const shown = JSON.stringify([[...state.sessions.values()], state.current && state.current.sessionId, state.cursor]);
  if (shown === state.shownSessions) return; // unchanged: keep the sidebar (and the focus in it) as it is
  state.shownSessions = shown;
  const focused = document.activeElement && document.activeElement.dataset.session;
  const projects = new Map();
  for (const s of state.sessions.values()) {
    if (!projects.has(s.cwd)) projects.set(s.cwd, []);
    projects.get(s.cwd).push(s);
  }
  if (state.current && !projects.has(state.current.cwd)) projects.set(state.current.cwd, []);
  const sections = [];
  for (const [cwd, sessions] of projects) {
    const name = cwd.split("/").filter(Boolean).pop() || cwd;
    const items = sessions.map((s) => {
      const button = element("button", { type: "button", class: "session", "data-session": s.sessionId, title: s.updatedAt || "" }, s.title || "Untitled Session");
      if (state.current && state.current.sessionId === s.sessionId) button.setAttribute("aria-current", "true");
      button.addEventListener("click", () => openSaved(s));
      return element("li", {}, button);
    });
    const here = element("button", { type: "button", class: "secondary new-here" }, "New Session here");
    here.addEventListener("click", () => startSession(cwd));
    sections.push(element("section", { class: "project", "aria-label": `Project ${cwd}` }, element("h3", { title: cwd }, name, element("small", {}, cwd)), element("ul", {}, ...items), here));
  }
  ui.projects.replaceChildren(...sections);
  ui.moreSessions.hidden = !state.cursor;
  if (focused) {
    const again = ui.projects.querySelector(`[data-session="${CSS.escape(focused)}"]`);
    if (again) again.focus();
  }
}

async function startSession(cwd) {
  if (!rpc.isOpen) return oops("Not connected: the Session was not created.");
  const ticket = ++state.opening;
  try {
    const answer = await rpc.call("session/new", { cwd, mcpServers: [], _meta: effect(null) });
    if (ticket !== state.opening) return;
    show({ sessionId: answer.sessionId, cwd, title: null, updatedAt: null });
    saw(state.current, answer);
    renderOptions(answer.configOptions || []);
    await refreshSessions();
  } catch (error) {
    oops(`The Session was not created: ${describe(error)}`);
  }
  controls();
  ui.text.focus();
}

function show(session) {
  state.current = { ...session };
  conversation.reset();
  ui.title.textContent = session.title || "Untitled Session";
  ui.options.replaceChildren();
  ui.usage.textContent = "";
  renderCommands([]);
  renderSessions();
  closeSidebar();
  queue.open(session.sessionId);
}

async function openSaved(session) {
  if (!state.caps || (!state.caps.resume && !state.caps.load)) return warn(missing(state.caps || {}));
  state.opening++;
  show(session);
  await reopen(state.current);
  returnUnsent();
  controls();
}

/** Open a Session on this connection: resume it and read its latest history, else load it (a full replay). */
async function reopen(session) {
  const ticket = state.opening;
  const request = { sessionId: session.sessionId, cwd: session.cwd, mcpServers: [], _meta: state.caps.effects ? { runwield: {} } : undefined };
  try {
    if (state.caps.history && state.caps.resume) {
      const answer = await rpc.call("session/resume", request);
      if (ticket !== state.opening) return;
      saw(session, answer);
      renderOptions(answer.configOptions || []);
      await syncLatest();
    } else {
      conversation.reset();
      const answer = await rpc.call(state.caps.load ? "session/load" : "session/resume", request);
      saw(session, answer);
      if (ticket === state.opening) renderOptions(answer.configOptions || []);
    }
  } catch (error) {
    if (ticket === state.opening) oops(`The Session could not be opened: ${describe(error)}`);
  }
}

// History

function nearBottom() {
  const c = ui.conversation;
  return c.scrollHeight - c.scrollTop - c.clientHeight < 80;
}

function toBottom() {
  ui.conversation.scrollTop = ui.conversation.scrollHeight;
}

/** Show the saved entries after those shown; the live ones give way to them. */
async function syncLatest() {
  if (!state.current || !state.caps || !state.caps.history) return;
  const ticket = state.opening;
  const page = await rpc.call(state.caps.history, { sessionId: state.current.sessionId, limit: HISTORY_LIMIT });
  if (ticket !== state.opening) return;
  const first = page.entries.length ? page.entries[0].index : page.total;
  if (first > conversation.last + 1 && conversation.last >= 0) conversation.reset(); // a gap: start again from the latest
  conversation.appendSaved(page.entries);
  ui.older.hidden = !conversation.hasOlder;
  toBottom();
}

async function loadOlder() {
  if (state.loadingOlder || !conversation.hasOlder || !state.caps || !state.caps.history) return;
  state.loadingOlder = true;
  const ticket = state.opening;
  try {
    const page = await rpc.call(state.caps.history, { sessionId: state.current.sessionId, before: conversation.first, limit: HISTORY_LIMIT });
    if (ticket !== state.opening) return;
    const before = ui.conversation.scrollHeight;
    conversation.prependSaved(page.entries);
    ui.conversation.scrollTop += ui.conversation.scrollHeight - before;
    ui.older.hidden = !conversation.hasOlder;
  } catch (error) {
    oops(`Older messages could not be read: ${describe(error)}`);
  } finally {
    state.loadingOlder = false;
  }
}

// Protocol messages from the server

function notification(method, params) {
  if (method === "$/cancel_request") {
    const form = state.forms.get(params.requestId);
    if (form) form.withdraw();
    return;
  }
  if (method !== "session/update" || !state.current || params.sessionId !== state.current.sessionId) return;
  const update = params.update || {};
  const kind = update.sessionUpdate;
  if (kind === "available_commands_update") return renderCommands(update.availableCommands || []);
  if (kind === "config_option_update") return renderOptions(update.configOptions || []);
  if (kind === "usage_update") return renderUsage(update);
  if (kind === "session_info_update") {
    if (update.title) ui.title.textContent = update.title;
    const turn = update._meta && update._meta.runwield && update._meta.runwield.turn;
    if (turn && !running()) reopen(state.current).catch(() => {});
    return;
  }
  const stick = nearBottom();
  conversation.live(update);
  if (stick) toBottom();
  const spawned = update._meta && update._meta.runwield && update._meta.runwield.spawned;
  if (spawned && typeof spawned.sessionId === "string") spawnedNow(spawned);
}

/** A /spawn this page sent started a Session: it is listed, and opened when it was asked for here (`--here`). */
function spawnedNow(spawned) {
  if (spawned.place === "here" && running()) openSpawned(spawned);
  else refreshSessions().catch(() => {});
}

/** Open the Session a /spawn started (from its line's button, or at once for `--here`), then list it. */
function openSpawned(spawned) {
  const listed = state.sessions.get(spawned.sessionId);
  openSaved(listed || { sessionId: spawned.sessionId, cwd: spawned.cwd, title: null, updatedAt: null }).then(() => refreshSessions().catch(() => {}));
}

async function request(method, params, id) {
  if (method !== "elicitation/create") throw new RpcError(-32601, `${method} is not supported by this page`);
  if (params.mode !== "form") return { action: "decline" };
  const form = askForm(ui.forms, params);
  state.forms.set(id, form);
  toBottom();
  const result = await form.answered;
  state.forms.delete(id);
  if (state.forms.size === 0) ui.text.focus();
  return result || { action: "cancel" };
}

// Session choices, commands, usage

function renderOptions(options) {
  const controls = options
    .filter((o) => o.type === "select")
    .map((option) => {
      const id = `option-${option.id}`;
      const select = element("select", { id, "data-config": option.id });
      for (const choice of option.options || []) {
        const item = element("option", { value: choice.value, title: choice.description || "" }, choice.name);
        if (choice.value === option.currentValue) item.selected = true;
        select.append(item);
      }
      select.addEventListener("change", () => choose(option, select));
      return element("div", { class: "option" }, element("label", { for: id }, option.name), select);
    });
  ui.options.replaceChildren(...controls);
}

async function choose(option, select) {
  select.disabled = true;
  try {
    const session = state.current;
    const answer = await rpc.call("session/set_config_option", { sessionId: session.sessionId, configId: option.id, value: select.value, _meta: effect(session) });
    renderOptions(answer.configOptions || []);
    const again = $(`option-${option.id}`);
    if (again) again.focus();
  } catch (error) {
    select.value = option.currentValue;
    oops(`${option.name} was not changed: ${describe(error)}`);
    if (isConflict(error)) await reopen(state.current);
  } finally {
    select.disabled = false;
  }
}

function renderCommands(commands) {
  const items = commands.map((command) => {
    const item = element("button", { type: "button", role: "menuitem" }, `/${command.name}`, element("small", {}, command.description || ""));
    item.addEventListener("click", () => {
      ui.text.value = `/${command.name} `;
      toggleMenu(false);
      ui.text.focus();
    });
    return element("li", { role: "none" }, item);
  });
  ui.commandsMenu.replaceChildren(...items);
  ui.commandsButton.disabled = items.length === 0;
}

function toggleMenu(open) {
  ui.commandsMenu.hidden = !open;
  ui.commandsButton.setAttribute("aria-expanded", String(open));
  if (open) {
    const first = ui.commandsMenu.querySelector("button");
    if (first) first.focus();
  }
}

function renderUsage(update) {
  const cost = update.cost ? `, ${update.cost.amount.toFixed(4)} ${update.cost.currency}` : "";
  ui.usage.textContent = `Context: ${update.used} of ${update.size} tokens${cost}`;
}

// Prompting

/** Whether a turn this page started runs in ``session`` (the one shown). */
function running(session = state.current) {
  return state.turn !== null && session !== null && state.turn.sessionId === session.sessionId;
}

function controls() {
  const ready = rpc.isOpen && state.caps !== null && state.current !== null;
  ui.send.disabled = !ready;
  ui.stop.hidden = !running();
  ui.newSession.querySelector("button").disabled = !rpc.isOpen;
}

function describe(error) {
  return error instanceof RpcError ? `${error.message}${error.data && error.data.details ? ` (${error.data.details})` : ""}` : String(error);
}

function send() {
  const text = ui.text.value;
  if (!text.trim() || !state.current) return;
  if (!rpc.isOpen || !state.caps) return oops("Not connected: nothing was sent.");
  ui.text.value = "";
  if (running() || queue.size || state.steering) followUp(state.current, text);
  else prompt(state.current, [text]);
}

/** One prompt of one or more messages (queued ones go together); then whatever was queued meanwhile. */
async function prompt(session, texts) {
  conversation.showPrompt(texts.join("\n"));
  toBottom();
  state.turn = session;
  controls();
  let settled = true;
  try {
    const answer = await rpc.call("session/prompt", { sessionId: session.sessionId, prompt: texts.map((text) => ({ type: "text", text })), _meta: effect(session) });
    saw(session, answer);
  } catch (error) {
    if (isConflict(error)) {
      backToBox(texts); // not taken: read what changed, then send it again if you still want to
      conversation.dropLive();
      oops(`Not sent: ${error.message}. The conversation below is brought up to date.`);
    } else if (error instanceof RpcError && error.code === BUSY) {
      backToBox(texts); // not taken: it is yours to send again
      oops(`Not sent: ${error.message}`);
    } else if (error instanceof RpcError && error.code === -32000) {
      settled = false; // the turn goes on without this page, and reads what it took
      oops("The connection dropped during this turn. Nothing is sent again on its own: the view shows what the Session saved.");
    } else {
      oops(`The turn failed: ${describe(error)}`);
    }
  } finally {
    if (state.turn === session) state.turn = null;
    controls();
  }
  const unread = settled && state.current === session ? conversation.takeUnread() : [];
  if (unread.length) returnUnsent(unread);
  if (state.current !== session || !rpc.isOpen) return;
  await reopen(session).catch(() => {});
  await refreshSessions().catch(() => {});
  sendQueued();
}

/** A message typed while a turn runs (or while others wait): into the running turn if it can join it, else queued;
 * one after the other, so that they keep their order. */
function followUp(session, text) {
  state.steering++;
  state.followUps = state.followUps
    .then(async () => {
      try {
        if (!(await steered(session, text))) queue.add(session.sessionId, text);
      } finally {
        state.steering--;
        sendQueued();
      }
    })
    .catch((error) => oops(`A message could not be queued: ${describe(error)}`));
}

/** Whether the running turn took ``text`` (`_session/steering` answered `injected`). A question's form waiting, a
 * command, a message queued before it, or no steering on this server: it waits for the next prompt instead. */
async function steered(session, text) {
  if (!state.caps || !state.caps.steering || state.forms.size || isCommand(text) || queue.size || !running(session)) return false;
  const shown = conversation.showSteering(text);
  toBottom();
  try {
    const answer = await rpc.call("_session/steering", { sessionId: session.sessionId, prompt: [{ type: "text", text }], _meta: effect(session, { withRevision: false }) });
    if (answer.outcome === "injected") {
      conversation.markSteered(shown);
      return true;
    }
  } catch {
    // refused, or the connection dropped: it waits for the next prompt
  }
  shown.remove();
  return false;
}

/** Once no turn of this page's runs in the Session shown: the queued messages, as one prompt. */
function sendQueued() {
  const session = state.current;
  if (running() || !queue.size || !session || !rpc.isOpen || !state.caps) return;
  const texts = queue.takeBatch();
  conversation.note(texts.length === 1 ? "1 queued message sent." : `${texts.length} queued messages sent as one prompt.`, "info");
  prompt(session, texts);
}

/** Put ``texts``, and whatever is still queued, back in the message box (before what is being typed there). */
function backToBox(texts) {
  ui.text.value = [...texts, ...queue.takeAll(), ui.text.value].filter((text) => text.trim()).join("\n\n");
}

/** Messages this page can no longer deliver in order: ``texts`` (taken by a turn that ended before it read them) and
 * the queued ones (the connection dropped, the page was reloaded, the person stopped the turn). Back in the message
 * box, never sent on their own. */
function returnUnsent(texts = []) {
  const count = texts.length + queue.size;
  if (!count) return;
  backToBox(texts);
  conversation.note(`${count === 1 ? "1 message" : `${count} messages`} did not reach the Agent: back in the message box, to send when you are ready.`, "warning");
  toBottom();
}

function cancel() {
  if (!running() || !rpc.isOpen) return;
  rpc.notify("session/cancel", { sessionId: state.current.sessionId });
  returnUnsent();
}

function closeSidebar() {
  document.body.classList.remove("sidebar-open");
  ui.toggleSidebar.setAttribute("aria-expanded", "false");
}

async function poll() {
  if (!rpc.isOpen || !state.caps || running()) return;
  try {
    if (await refreshSessions()) await reopen(state.current);
  } catch {
    // the connection dropped; it reconnects and rebuilds
  }
}

ui.composer.addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
ui.text.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
ui.stop.addEventListener("click", cancel);
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  if (!ui.commandsMenu.hidden) {
    toggleMenu(false);
    ui.commandsButton.focus();
  } else {
    cancel();
  }
});
ui.commandsButton.addEventListener("click", () => toggleMenu(ui.commandsMenu.hidden));
ui.commandsMenu.addEventListener("keydown", (event) => {
  const items = [...ui.commandsMenu.querySelectorAll("button")];
  const at = items.indexOf(document.activeElement);
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    items[(at + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length].focus();
  }
});
ui.newSession.addEventListener("submit", (event) => {
  event.preventDefault();
  startSession(ui.newCwd.value.trim());
});
ui.moreSessions.addEventListener("click", () => moreSessions().catch((error) => oops(describe(error))));
ui.older.addEventListener("click", loadOlder);
ui.conversation.addEventListener("scroll", () => {
  if (ui.conversation.scrollTop < 40) loadOlder();
});
ui.toggleSidebar.addEventListener("click", () => {
  const open = !document.body.classList.contains("sidebar-open");
  document.body.classList.toggle("sidebar-open", open);
  ui.toggleSidebar.setAttribute("aria-expanded", String(open));
});

setInterval(poll, POLL_MS);
controls();
rpc.connect();
