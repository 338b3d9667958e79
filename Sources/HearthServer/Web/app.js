// Hearth web chat: threads, streamed answers, per-thread settings and the models page, on the
// server's own API. Model output only ever reaches the page through textContent, or as
// elements built by HearthMarkdown (markdown.js), which never parses text as HTML.
"use strict";

const KEY_STORAGE = "hearth.apiKey";

const state = {
  threads: [],
  currentId: null,
  // The current thread's stored messages, in order.
  messages: [],
  presets: [],
  // The answer being streamed: { threadId, controller, finished }, `finished` a promise that
  // settles once the page is done with it.
  stream: null,
  pulling: false,
  // What the search box holds, and the ids of the threads that match it (null: no search).
  search: "",
  matches: null,
};

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------------------------
// The API

class ApiError extends Error {
  constructor(message, status, code) {
    super(message);
    this.status = status;
    // OpenAI's error code, such as model_not_found, when the server sent one.
    this.code = code || null;
  }

  // The server answers OpenAI's {error:{message}} under /v1 and Ollama's {error:"..."} under
  // /api; anything else is shown as the status line.
  static async from(response) {
    let message = `${response.status} ${response.statusText}`.trim();
    let code = null;
    try {
      const body = await response.json();
      message = ApiError.messageOf(body) || message;
      code = body && body.error && typeof body.error === "object" ? body.error.code : null;
    } catch (_) {
      // Not JSON: the status line says enough.
    }
    return new ApiError(message, response.status, code);
  }

  static messageOf(body) {
    if (!body || body.error === undefined) return null;
    return typeof body.error === "string" ? body.error : body.error.message || null;
  }
}

// One key dialog at a time: every request that met a 401 waits for the same answer.
let keyPrompt = null;

// `body` is sent as JSON; `form` (a FormData) as multipart/form-data, whose boundary the
// browser writes into the Content-Type itself.
async function api(path, { method = "GET", body, form, signal } = {}) {
  for (;;) {
    const key = localStorage.getItem(KEY_STORAGE);
    const headers = {};
    if (key) headers.Authorization = `Bearer ${key}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method, headers, signal, body: form !== undefined ? form : body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 401) {
      await askForKey(Boolean(key));
      continue;
    }
    if (!response.ok) throw await ApiError.from(response);
    return response;
  }
}

async function getJSON(path) {
  return (await api(path)).json();
}

function askForKey(rejected) {
  if (keyPrompt) return keyPrompt;
  keyPrompt = new Promise((resolve) => {
    const dialog = $("key-dialog");
    $("key-error").hidden = !rejected;
    $("key-input").value = "";
    const submitted = (event) => {
      event.preventDefault();
      const key = $("key-input").value.trim();
      if (!key) return;
      localStorage.setItem(KEY_STORAGE, key);
      $("key-form").removeEventListener("submit", submitted);
      dialog.close();
      keyPrompt = null;
      resolve();
    };
    $("key-form").addEventListener("submit", submitted);
    dialog.showModal();
    $("key-input").focus();
  });
  return keyPrompt;
}

// Yields the JSON payload of each event of a streamed response: SSE `data:` blocks, or NDJSON
// lines. Bytes are decoded as a stream so a character split across reads stays whole.
async function* streamedEvents(response, framing) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const separator = framing === "sse" ? "\n\n" : "\n";
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    let end;
    while ((end = buffer.indexOf(separator)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + separator.length);
      const payload = framing === "sse"
        ? block.split("\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).replace(/^ /, "")).join("\n")
        : block.trim();
      if (payload) yield JSON.parse(payload);
    }
    if (done) return;
  }
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function icon(name) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "icon");
  svg.setAttribute("aria-hidden", "true");
  const use = document.createElementNS("http://www.w3.org/2000/svg", "use");
  use.setAttribute("href", `#i-${name}`);
  svg.append(use);
  return svg;
}

function element(tag, { className, text, attributes = {} } = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

function button({ label, text, iconName, className = "", testId, onClick }) {
  const node = element("button", { className, attributes: { type: "button", "aria-label": label } });
  if (testId) node.dataset.testid = testId;
  if (iconName) node.append(icon(iconName));
  if (text) node.append(element("span", { text }));
  node.addEventListener("click", onClick);
  return node;
}

// Binary units with one decimal, as the hearth command line prints sizes.
function formatBytes(bytes) {
  const units = ["KiB", "MiB", "GiB", "TiB", "PiB"];
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1023.95 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

function formatAgo(seconds) {
  // Models served from a file given on the command line have no recorded use.
  if (!seconds) return "—";
  const elapsed = Date.now() / 1000 - seconds;
  const format = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  const steps = [[60, "second"], [60, "minute"], [24, "hour"], [30, "day"], [12, "month"], [Infinity, "year"]];
  let value = elapsed;
  for (const [size, unit] of steps) {
    if (Math.abs(value) < size) return format.format(-Math.round(value), unit);
    value /= size;
  }
  return "";
}

let toastTimer = null;
function toast(message) {
  const node = $("toast");
  node.textContent = message;
  node.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { node.hidden = true; }, 5000);
}

// Writes text to the clipboard: the Clipboard API where the page may use it, else a hidden
// text area and the copy command (a page opened over plain http from another machine is not a
// secure context, and has no Clipboard API).
async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (_) {
      // Refused (no focus, no permission): the old way may still work.
    }
  }
  const focused = document.activeElement;
  const area = element("textarea", { attributes: { readonly: "", "aria-hidden": "true", tabindex: "-1" } });
  area.value = text;
  area.style.cssText = "position:fixed;top:0;left:0;opacity:0;pointer-events:none";
  document.body.append(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch (_) {
    copied = false;
  }
  area.remove();
  if (focused && focused.focus) focused.focus();
  return copied;
}

// Says on the button that it copied, for a moment.
function showCopied(node, copied) {
  const label = node.querySelector("span") || node;
  if (!node.dataset.label) node.dataset.label = label.textContent;
  label.textContent = copied ? "Copied" : "Copy failed";
  node.dataset.state = copied ? "copied" : "failed";
  clearTimeout(node.copiedTimer);
  node.copiedTimer = setTimeout(() => {
    label.textContent = node.dataset.label;
    delete node.dataset.state;
  }, 1500);
}

// Saves text as a file through the browser's downloads.
function download(filename, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = element("a", { attributes: { href: url, download: filename } });
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

// A thread's name as a file name: characters file systems refuse become "_".
function fileName(name, extension) {
  const base = name.replace(/[\\/:*?"<>|\u0000-\u001f]+/g, "_").replace(/^[.\s]+|[.\s]+$/g, "");
  return `${base || "chat"}.${extension}`;
}

function confirmAction(title, text, action) {
  const dialog = $("confirm-dialog");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = action;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
  });
}

function currentThread() {
  return state.threads.find((thread) => thread.id === state.currentId) || null;
}

// ---------------------------------------------------------------------------------------------
// Threads

// Every thread, and with a search the ids of those that match: the list shows only those,
// while the open thread stays open whether it matches or not.
async function loadThreads() {
  const query = state.search.trim();
  const [all, found] = await Promise.all([
    getJSON("/v1/threads"),
    query ? getJSON(`/v1/threads?search=${encodeURIComponent(query)}`) : null,
  ]);
  state.threads = all.data;
  // An answer to an older search, overtaken by typing, is dropped.
  if (query === state.search.trim()) state.matches = found ? new Set(found.data.map((thread) => thread.id)) : null;
  renderThreads();
}

let searchTimer = null;
function searchChanged() {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => {
    state.search = $("thread-search").value;
    document.body.dataset.searching = String(Boolean(state.search.trim()));
    loadThreads().catch((error) => toast(error.message));
  }, 150);
}

function clearSearch() {
  clearTimeout(searchTimer);
  $("thread-search").value = "";
  state.search = "";
  state.matches = null;
  document.body.dataset.searching = "false";
}

function renderThreads() {
  const list = $("thread-list");
  list.replaceChildren();
  const shown = state.matches ? state.threads.filter((thread) => state.matches.has(thread.id)) : state.threads;
  if (state.matches && !shown.length) {
    const empty = element("li", { className: "no-results muted small", text: `No chats match “${state.search.trim()}”.` });
    empty.dataset.testid = "no-results";
    list.append(empty);
  }
  for (const thread of shown) {
    const item = element("li", { className: "thread-item" });
    item.dataset.testid = "thread-item";
    item.dataset.threadId = thread.id;
    const selected = thread.id === state.currentId;
    item.classList.toggle("selected", selected);
    const open = element("button", { className: "thread-open", attributes: { type: "button" } });
    open.dataset.testid = "thread-name";
    if (selected) open.setAttribute("aria-current", "page");
    open.append(element("span", { text: thread.name }));
    open.addEventListener("click", () => {
      closeSidebar();
      navigate(`#/chat/${thread.id}`);
    });
    item.append(
      open,
      button({ label: `Rename ${thread.name}`, iconName: "pencil", className: "icon-button", testId: "rename-thread",
        onClick: () => startRename(item, thread) }),
      button({ label: `Delete ${thread.name}`, iconName: "trash", className: "icon-button", testId: "delete-thread",
        onClick: () => deleteThread(thread) }),
    );
    list.append(item);
  }
  renderHeader();
}

function renderHeader() {
  const thread = currentThread();
  $("thread-title").textContent = thread ? thread.name : "Hearth";
  $("thread-model").textContent = thread
    ? `${thread.model || "default model"} · ${thread.preset || "balanced"}${thread.system_prompt ? " · system prompt" : ""}`
    : "";
  $("open-settings").disabled = !thread;
  $("export-menu").hidden = !thread;
  document.title = thread ? `${thread.name} — Hearth` : "Hearth";
}

async function createThread() {
  stopStreaming();
  closeSidebar();
  const thread = await (await api("/v1/threads", { method: "POST", body: {} })).json();
  // A new chat matches no search: the list shows everything again.
  clearSearch();
  state.threads.unshift(thread);
  await navigate(`#/chat/${thread.id}`);
  return thread;
}

function startRename(item, thread) {
  const input = element("input", {
    className: "thread-rename",
    attributes: { type: "text", "aria-label": `New name for ${thread.name}`, maxlength: "200" },
  });
  input.dataset.testid = "rename-input";
  input.value = thread.name;
  let finished = false;
  const finish = async (save) => {
    if (finished) return;
    finished = true;
    const name = input.value.trim();
    if (save && name !== thread.name) {
      try {
        const updated = await (await api(`/v1/threads/${thread.id}`, { method: "PATCH", body: { name } })).json();
        Object.assign(thread, updated);
      } catch (error) {
        toast(error.message);
      }
    }
    renderThreads();
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") { event.preventDefault(); finish(true); }
    if (event.key === "Escape") { event.preventDefault(); finish(false); }
  });
  input.addEventListener("blur", () => finish(true));
  item.replaceChildren(input);
  input.focus();
  input.select();
}

async function deleteThread(thread) {
  if (!(await confirmAction("Delete chat?", `“${thread.name}” and all its messages will be deleted.`, "Delete"))) return;
  if (state.stream && state.stream.threadId === thread.id) stopStreaming();
  try {
    await api(`/v1/threads/${thread.id}`, { method: "DELETE" });
  } catch (error) {
    toast(error.message);
  }
  state.threads = state.threads.filter((other) => other.id !== thread.id);
  if (state.currentId === thread.id) {
    const next = state.threads[0];
    await navigate(next ? `#/chat/${next.id}` : "#/");
  }
  renderThreads();
}

// ---------------------------------------------------------------------------------------------
// Messages

async function openThread(id) {
  // Opening the thread that is streaming again must not wipe the answer being written.
  if (state.stream && state.stream.threadId === id && state.currentId === id) return;
  if (state.stream) stopStreaming();
  state.currentId = id;
  renderThreads();
  state.messages = [];
  renderMessages();
  if (!id) return;
  try {
    const messages = (await getJSON(`/v1/threads/${id}/messages`)).data;
    // Another thread may have been opened while this one was loading.
    if (state.currentId !== id) return;
    state.messages = messages;
    renderMessages();
  } catch (error) {
    if (error.status === 404) {
      await navigate("#/");
      return;
    }
    toast(error.message);
  }
}

function messageElement(role, text) {
  const item = element("li", { className: `message ${role}` });
  item.dataset.testid = "message";
  item.dataset.role = role;
  const bubble = element("div", { className: "bubble" });
  bubble.dataset.testid = "bubble";
  setBubbleText(bubble, role, text);
  item.append(bubble);
  return item;
}

// An answer is Markdown, shown formatted; a question or an error is shown as typed. The text
// itself is kept on the bubble (`source`) for Copy and Edit.
function setBubbleText(bubble, role, text) {
  bubble.source = text;
  if (role === "assistant") {
    bubble.classList.add("markdown");
    HearthMarkdown.renderInto(bubble, text);
  } else {
    bubble.textContent = text;
  }
}

// A reasoning model's thoughts, folded above its answer; the summary says whether they are
// still coming.
function thoughtsElement() {
  const details = element("details", { className: "thoughts" });
  details.dataset.testid = "thoughts";
  details.dataset.state = "thinking";
  const summary = element("summary", { text: "Thinking…" });
  summary.dataset.testid = "thoughts-summary";
  const text = element("div", { className: "thoughts-text muted small" });
  text.dataset.testid = "thoughts-text";
  details.append(summary, text);
  return details;
}

function finishThoughts(details) {
  if (!details || details.dataset.state === "done") return;
  details.dataset.state = "done";
  details.querySelector("summary").textContent = "Thoughts";
}

function storedMessageElement(message) {
  const item = messageElement(message.role, message.content);
  if (message.reasoning) {
    const thoughts = thoughtsElement();
    thoughts.querySelector(".thoughts-text").textContent = message.reasoning;
    finishThoughts(thoughts);
    item.insertBefore(thoughts, item.querySelector(".bubble"));
  }
  item.dataset.messageId = message.id;
  item.dataset.state = "done";
  if (message.role === "assistant") addAnswerActions(item, message);
  if (message.role === "user") addQuestionActions(item);
  return item;
}

// Below an answer: Copy, its speed, and (on the last one) Regenerate.
function addAnswerActions(item, message) {
  const meta = element("div", { className: "meta muted small" });
  const copy = button({ label: "Copy the answer", text: "Copy", iconName: "copy", testId: "copy-answer",
    onClick: async () => showCopied(copy, await copyText(message.content)) });
  meta.append(copy);
  if (message.tokens_per_second != null) {
    const tokens = message.completion_tokens != null ? `${message.completion_tokens} tokens · ` : "";
    const speed = element("span", { text: `${tokens}${message.tokens_per_second.toFixed(1)} tokens/s` });
    speed.dataset.testid = "tokens-per-second";
    meta.append(speed);
  }
  item.append(meta);
}

// Below a stored question: Edit, which answers it again from there.
function addQuestionActions(item) {
  if (item.querySelector("[data-testid=edit-message]")) return;
  const meta = element("div", { className: "meta muted small" });
  meta.append(button({ label: "Edit this message and answer it again", text: "Edit", iconName: "pencil", testId: "edit-message",
    onClick: () => startEdit(item) }));
  item.append(meta);
}

function renderMessages() {
  const list = $("message-list");
  list.replaceChildren(...state.messages.map(storedMessageElement));
  updateChatControls();
  scrollToEnd(true);
}

// Edits a stored question in place: a text box with the question, Save and send, and Cancel.
function startEdit(item) {
  const id = Number(item.dataset.messageId);
  const message = state.messages.find((stored) => stored.id === id);
  if (!message || item.classList.contains("editing")) return;
  item.classList.add("editing");
  const bubble = item.querySelector(".bubble");
  const meta = item.querySelector(".meta");
  const form = element("form", { className: "edit-form" });
  form.dataset.testid = "edit-form";
  const field = element("textarea", { className: "edit-field", attributes: { "aria-label": "Edit the message", rows: "3" } });
  field.dataset.testid = "edit-input";
  field.value = message.content;
  const finish = () => {
    form.remove();
    bubble.hidden = false;
    if (meta) meta.hidden = false;
    item.classList.remove("editing");
  };
  const cancel = button({ label: "Cancel editing", text: "Cancel", className: "ghost", testId: "edit-cancel", onClick: () => {
    finish();
    $("prompt").focus();
  } });
  const save = element("button", { className: "primary", text: "Save and send", attributes: { type: "submit" } });
  save.dataset.testid = "edit-save";
  const actions = element("div", { className: "edit-actions" });
  actions.append(element("span", { className: "muted small", text: "Later messages will be replaced." }), cancel, save);
  form.append(field, actions);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = field.value;
    if (!text.trim()) return;
    finish();
    editQuestion(item, message, text).catch((error) => toast(error.message));
  });
  field.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      // Esc here cancels the edit only; it does not also stop an answer.
      event.preventDefault();
      event.stopPropagation();
      cancel.click();
    } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  const fit = () => {
    field.style.height = "auto";
    field.style.height = `${Math.min(field.scrollHeight + 2, 320)}px`;
  };
  field.addEventListener("input", fit);
  bubble.hidden = true;
  if (meta) meta.hidden = true;
  item.append(form);
  fit();
  field.focus();
  field.setSelectionRange(field.value.length, field.value.length);
}

// The server replaces the question and deletes everything after it before answering; the
// page does the same, then streams the new answer.
async function editQuestion(item, message, text) {
  const thread = currentThread();
  if (!thread) return;
  if (state.stream) {
    const { finished } = state.stream;
    stopStreaming();
    await finished;
  }
  // The list may have been rendered again meanwhile: find the question by its id.
  const question = $("message-list").querySelector(`[data-message-id="${message.id}"]`) || item;
  const index = state.messages.findIndex((stored) => stored.id === message.id);
  if (index >= 0) state.messages = state.messages.slice(0, index);
  while (question.nextElementSibling) question.nextElementSibling.remove();
  setBubbleText(question.querySelector(".bubble"), "user", text);
  question.dataset.state = "pending";
  await streamAnswer(thread.id, `/v1/threads/${thread.id}/messages/${message.id}/edit`, { content: text }, question, null);
}

// Regenerate sits on the last answer; a question left without one (stopped, or failed) gets
// the same action in a notice.
function updateChatControls() {
  const list = $("message-list");
  for (const node of list.querySelectorAll("[data-testid=regenerate], [data-testid=unanswered]")) node.remove();
  const streaming = Boolean(state.stream);
  $("send").hidden = streaming;
  $("stop").hidden = !streaming;
  document.body.dataset.streaming = String(streaming);
  $("messages").setAttribute("aria-busy", String(streaming));
  $("empty-state").hidden = list.children.length > 0;
  if (streaming || list.querySelector("[data-testid=error-message]")) return;
  const last = state.messages[state.messages.length - 1];
  if (!last) return;
  const regenerate = button({ label: "Regenerate the last answer", text: "Regenerate", iconName: "retry", testId: "regenerate",
    onClick: () => regenerateAnswer() });
  if (last.role === "assistant") {
    const item = list.querySelector(`[data-message-id="${last.id}"] .meta`);
    if (item) item.append(regenerate);
  } else if (last.role === "user") {
    const notice = element("li", { className: "notice" });
    notice.dataset.testid = "unanswered";
    notice.append(element("span", { text: "No answer yet." }), regenerate);
    list.append(notice);
  }
}

function nearEnd() {
  const box = $("messages");
  return box.scrollHeight - box.scrollTop - box.clientHeight < 120;
}

function scrollToEnd(force) {
  const box = $("messages");
  if (force || nearEnd()) box.scrollTop = box.scrollHeight;
}

async function sendMessage(text) {
  if (state.stream || !text.trim()) return;
  const thread = currentThread() || await createThread();
  const question = messageElement("user", text);
  question.dataset.state = "pending";
  $("message-list").append(question);
  await streamAnswer(thread.id, `/v1/threads/${thread.id}/messages`, { content: text }, question, text);
}

async function regenerateAnswer() {
  const thread = currentThread();
  if (!thread || state.stream) return;
  // The server deletes the last answer before writing the new one, whatever happens next.
  const last = state.messages[state.messages.length - 1];
  if (last && last.role === "assistant") {
    state.messages.pop();
    const node = $("message-list").querySelector(`[data-message-id="${last.id}"]`);
    if (node) node.remove();
  }
  await streamAnswer(thread.id, `/v1/threads/${thread.id}/regenerate`, undefined, null, null);
}

// Streams one answer into a new bubble. `question` is the unsent question's element (nil when
// regenerating), `text` its text, kept for Retry.
async function streamAnswer(threadId, path, body, question, text) {
  const controller = new AbortController();
  let settle;
  state.stream = { threadId, controller, finished: new Promise((resolve) => { settle = resolve; }) };
  try {
    await streamInto(threadId, path, body, question, text, controller);
  } finally {
    settle();
  }
}

async function streamInto(threadId, path, body, question, text, controller) {
  const answer = messageElement("assistant", "");
  answer.dataset.state = "streaming";
  answer.classList.add("streaming");
  const bubble = answer.querySelector(".bubble");
  let thoughts = null;
  // The answer so far is rendered at most once a frame, however fast its pieces come, and only
  // the blocks that changed are rebuilt (see HearthMarkdown.renderInto). A render that took
  // long (a long code block to highlight) is followed by a pause twice as long, so the page
  // stays responsive on a slow machine.
  let written = "";
  let frame = 0;
  let timer = 0;
  let cost = 0;
  const paint = () => {
    frame = 0;
    const started = performance.now();
    const stick = nearEnd();
    setBubbleText(bubble, "assistant", written);
    if (stick) scrollToEnd(true);
    cost = performance.now() - started;
  };
  const schedule = () => {
    if (frame || timer) return;
    timer = setTimeout(() => {
      timer = 0;
      frame = requestAnimationFrame(paint);
    }, Math.min(300, 2 * cost));
  };
  const cancelPaint = () => {
    clearTimeout(timer);
    cancelAnimationFrame(frame);
    timer = 0;
    frame = 0;
  };
  $("message-list").append(answer);
  updateChatControls();
  scrollToEnd(true);

  let outcome = "failed";
  let failure = null;
  try {
    const response = await api(path, { method: "POST", body, signal: controller.signal });
    for await (const event of streamedEvents(response, "sse")) {
      if (event.type === "message" && question) {
        question.dataset.messageId = event.message.id;
        question.dataset.state = "done";
        state.messages.push(event.message);
        addQuestionActions(question);
      } else if (event.type === "reasoning") {
        if (!thoughts) {
          thoughts = thoughtsElement();
          answer.insertBefore(thoughts, bubble);
        }
        thoughts.querySelector(".thoughts-text").textContent += event.content;
        scrollToEnd(false);
      } else if (event.type === "delta") {
        finishThoughts(thoughts);
        written += event.content;
        schedule();
      } else if (event.type === "done") {
        finishThoughts(thoughts);
        cancelPaint();
        written = event.message.content;
        paint();
        answer.dataset.messageId = event.message.id;
        answer.dataset.state = "done";
        answer.classList.remove("streaming");
        addAnswerActions(answer, event.message);
        state.messages.push(event.message);
        outcome = "done";
        // The answer is stored and complete: the composer is free again at once, not when the
        // connection closes.
        break;
      } else if (event.type === "error") {
        throw new ApiError(ApiError.messageOf(event) || "The answer failed.");
      }
    }
    if (outcome !== "done") throw new ApiError("The answer ended before it was complete.");
  } catch (error) {
    if (error.name === "AbortError") {
      outcome = "stopped";
    } else {
      failure = error;
    }
  } finally {
    cancelPaint();
    if (state.stream && state.stream.controller === controller) state.stream = null;
  }

  if (outcome === "done") {
    updateChatControls();
    refreshThreadOrder();
    return;
  }
  // Stopped or failed: nothing of the partial answer is kept, on the server or here. What the
  // server did store (the question) is read back, so the page shows exactly that.
  answer.remove();
  if (state.currentId === threadId) await reloadMessages(threadId);
  if (failure && state.currentId === threadId) showError(failure.message, text);
  updateChatControls();
  refreshThreadOrder();
}

async function reloadMessages(threadId) {
  try {
    const messages = (await getJSON(`/v1/threads/${threadId}/messages`)).data;
    if (state.currentId !== threadId) return;
    state.messages = messages;
    renderMessages();
  } catch (error) {
    toast(error.message);
  }
}

function showError(message, text) {
  const item = messageElement("error", message);
  item.dataset.testid = "error-message";
  item.setAttribute("role", "alert");
  const meta = element("div", { className: "meta muted small" });
  meta.append(button({ label: "Retry", text: "Retry", iconName: "retry", testId: "retry", onClick: () => retry(item, text) }));
  item.append(meta);
  $("message-list").append(item);
  updateChatControls();
  scrollToEnd(true);
}

// A question the server stored is answered again; one it never got is sent again.
async function retry(errorItem, text) {
  errorItem.remove();
  const last = state.messages[state.messages.length - 1];
  if ((last && last.role === "user") || !text) {
    await regenerateAnswer();
  } else {
    await sendMessage(text);
  }
}

// The server drops an answer whose request is aborted, so Stop is only the abort.
function stopStreaming() {
  if (!state.stream) return;
  state.stream.controller.abort();
  state.stream = null;
  updateChatControls();
}

async function refreshThreadOrder() {
  try {
    await loadThreads();
  } catch (_) {
    // The list stays as it was; the next action reloads it.
  }
}

// ---------------------------------------------------------------------------------------------
// Export and import: the server's export (JSON, which import takes back) and a Markdown
// transcript made from it.

async function exportThread(format) {
  const thread = currentThread();
  if (!thread) return;
  closeMenus();
  const data = await (await api(`/v1/threads/${thread.id}/export`)).json();
  if (format === "json") {
    download(fileName(data.name, "json"), "application/json", `${JSON.stringify(data, null, 2)}\n`);
  } else {
    download(fileName(data.name, "md"), "text/markdown", threadMarkdown(data));
  }
}

function threadMarkdown(data) {
  const quoted = (text) => text.trim().split("\n").map((line) => (line ? `> ${line}` : ">")).join("\n");
  const speakers = { user: "You", assistant: "Assistant", system: "System" };
  const details = [data.model || "default model", `${data.preset || "balanced"} style`, `exported ${new Date().toLocaleString()}`];
  const lines = [`# ${data.name}`, "", `_${details.join(" · ")}_`, ""];
  if (data.system_prompt) lines.push("**System prompt**", "", quoted(data.system_prompt), "");
  for (const message of data.messages) {
    lines.push(`## ${speakers[message.role] || message.role}`, "");
    if (message.reasoning) lines.push("> **Thoughts**", ">", quoted(message.reasoning), "");
    lines.push(message.content.trim(), "");
  }
  return lines.join("\n");
}

async function importThread(file) {
  let data;
  try {
    data = JSON.parse(await file.text());
  } catch (_) {
    toast(`${file.name} is not a chat export: it is not JSON.`);
    return;
  }
  if (!data || typeof data !== "object" || !Array.isArray(data.messages)) {
    toast(`${file.name} is not a chat export: it has no list of messages.`);
    return;
  }
  let thread;
  let note = "";
  try {
    thread = await (await api("/v1/threads/import", { method: "POST", body: data })).json();
  } catch (error) {
    if (error.code !== "model_not_found" || !data.model) throw error;
    // Made with a model this server does not have: it comes in with the default model, and says so.
    thread = await (await api("/v1/threads/import", { method: "POST", body: { ...data, model: null } })).json();
    note = ` ${data.model} is not on this server, so it answers with the default model.`;
  }
  clearSearch();
  closeSidebar();
  state.threads.unshift(thread);
  await navigate(`#/chat/${thread.id}`);
  toast(`Imported “${thread.name}”.${note}`);
}

function closeMenus(except) {
  for (const menu of document.querySelectorAll("details.menu[open]")) {
    if (menu !== except) menu.open = false;
  }
}

// ---------------------------------------------------------------------------------------------
// Keyboard shortcuts, listed in the help dialog that ? opens.

const MAC = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
const MOD = MAC ? "⌘" : "Ctrl";
const SHORTCUTS = [
  [["Enter"], "Send the message"],
  [[MOD, "Enter"], "Send the message (also saves an edited one)"],
  [["Shift", "Enter"], "New line in the message"],
  [["Esc"], "Stop the answer; cancel an edit; close the chat list"],
  [[MOD, "Shift", "O"], "New chat"],
  [["/"], "Search chats"],
  [["Shift", "Esc"], "Focus the message box"],
  [["↑"], "Edit your last message (in an empty message box)"],
  [["?"], "Show these shortcuts"],
];

function openHelp() {
  const rows = SHORTCUTS.map(([keys, action]) => {
    const row = element("tr");
    row.dataset.testid = "shortcut";
    const cell = element("td", { className: "keys" });
    keys.forEach((key, index) => {
      if (index) cell.append(" + ");
      cell.append(element("kbd", { text: key }));
    });
    row.append(cell, element("td", { text: action }));
    return row;
  });
  $("shortcut-rows").replaceChildren(...rows);
  closeSidebar();
  $("help-dialog").showModal();
}

// Whether a key press is typing into a field, where single keys (/, ?) are text.
function typing(target) {
  return Boolean(target && target.closest && target.closest("input, textarea, select, [contenteditable=true]"));
}

function handleShortcut(event) {
  if (event.defaultPrevented || document.querySelector("dialog[open]")) return;
  const mod = event.ctrlKey || event.metaKey;
  if (mod && event.shiftKey && event.key.toLowerCase() === "o") {
    event.preventDefault();
    createThread().catch((error) => toast(error.message));
  } else if (event.key === "Escape" && event.shiftKey) {
    event.preventDefault();
    closeSidebar();
    $("prompt").focus();
  } else if (event.key === "Escape") {
    if (state.stream) {
      event.preventDefault();
      stopStreaming();
    } else if (document.body.dataset.sidebar === "open") {
      closeSidebar();
    } else {
      closeMenus();
    }
  } else if (!mod && !event.altKey && !typing(event.target)) {
    if (event.key === "/") {
      event.preventDefault();
      openSidebar();
      $("thread-search").focus();
      $("thread-search").select();
    } else if (event.key === "?") {
      event.preventDefault();
      openHelp();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Narrow screens: the chat list slides over the chat from the menu button.

const NARROW = window.matchMedia("(max-width: 700px)");

// While the list is open over the chat, the chat behind it takes no clicks and no focus.
function openSidebar() {
  if (!NARROW.matches) return;
  document.body.dataset.sidebar = "open";
  document.querySelector(".main").inert = true;
  $("open-sidebar").setAttribute("aria-expanded", "true");
}

function closeSidebar() {
  if (document.body.dataset.sidebar !== "open") return;
  document.body.dataset.sidebar = "closed";
  document.querySelector(".main").inert = false;
  $("open-sidebar").setAttribute("aria-expanded", "false");
}

// ---------------------------------------------------------------------------------------------
// Settings

async function openSettings() {
  const thread = currentThread();
  if (!thread) return;
  $("settings-error").hidden = true;
  const [storage, presets] = await Promise.all([getJSON("/v1/storage"), state.presets.length ? null : getJSON("/v1/presets")]);
  if (presets) state.presets = presets.data;

  const models = storage.models.filter((model) => model.kind === "language").map((model) => model.name);
  if (thread.model && !models.includes(thread.model)) models.push(thread.model);
  const modelSelect = $("settings-model");
  modelSelect.replaceChildren(element("option", { text: "Server default", attributes: { value: "" } }),
    ...models.map((name) => element("option", { text: name, attributes: { value: name } })));
  modelSelect.value = thread.model || "";

  const presetSelect = $("settings-preset");
  presetSelect.replaceChildren(element("option", { text: "Default (balanced)", attributes: { value: "" } }),
    ...state.presets.map((preset) => element("option", {
      text: `${preset.name[0].toUpperCase()}${preset.name.slice(1)} · temperature ${preset.temperature}`,
      attributes: { value: preset.name },
    })));
  presetSelect.value = thread.preset || "";
  $("settings-system").value = thread.system_prompt || "";
  $("settings-dialog").showModal();
}

async function saveSettings(event) {
  event.preventDefault();
  const thread = currentThread();
  if (!thread) return;
  const body = {
    model: $("settings-model").value || null,
    preset: $("settings-preset").value || null,
    system_prompt: $("settings-system").value.trim() ? $("settings-system").value : null,
  };
  try {
    const updated = await (await api(`/v1/threads/${thread.id}`, { method: "PATCH", body })).json();
    Object.assign(thread, updated);
    $("settings-dialog").close();
    renderThreads();
  } catch (error) {
    $("settings-error").textContent = error.message;
    $("settings-error").hidden = false;
  }
}

// ---------------------------------------------------------------------------------------------
// Models and storage

async function loadModels() {
  let storage;
  try {
    storage = await getJSON("/v1/storage");
  } catch (error) {
    toast(error.message);
    return;
  }
  $("storage-total").textContent = formatBytes(storage.total_bytes);
  $("storage-total").dataset.bytes = storage.total_bytes;
  $("storage-directory").textContent = storage.cache_directory;
  const rows = $("model-rows");
  rows.replaceChildren();
  for (const model of storage.models) {
    const row = element("tr");
    row.dataset.testid = "model-row";
    row.dataset.model = model.name;
    const name = element("td", { text: model.name });
    name.dataset.testid = "model-name";
    if (model.loaded) name.append(element("span", { className: "badge", text: "loaded" }));
    const size = element("td", { className: "num", text: formatBytes(model.size) });
    size.dataset.testid = "model-size";
    size.dataset.bytes = model.size;
    const used = element("td", { text: formatAgo(model.last_used) });
    used.dataset.testid = "model-last-used";
    if (model.last_used) used.title = new Date(model.last_used * 1000).toLocaleString();
    const actions = element("td", { className: "num" });
    if (model.deletable) {
      actions.append(button({ label: `Delete ${model.name}`, iconName: "trash", className: "icon-button", testId: "delete-model",
        onClick: () => deleteModel(model.name) }));
    }
    row.append(name, element("td", { text: model.kind }), size, used, actions);
    rows.append(row);
  }
  if (!storage.models.length) {
    rows.append(element("tr")).append(element("td", { className: "empty", text: "No models yet.", attributes: { colspan: "5" } }));
  }
}

async function deleteModel(name) {
  if (!(await confirmAction("Delete model?", `${name} will be removed from the cache; pull it again to use it.`, "Delete"))) return;
  try {
    await api("/api/delete", { method: "DELETE", body: { model: name } });
  } catch (error) {
    toast(error.message);
  }
  await loadModels();
}

async function pullModel(event) {
  event.preventDefault();
  const name = $("pull-name").value.trim();
  if (!name || state.pulling) return;
  state.pulling = true;
  const box = $("pull-progress-box");
  const bar = $("pull-progress");
  const status = $("pull-status");
  box.hidden = false;
  box.dataset.state = "pulling";
  bar.removeAttribute("value");
  status.textContent = `Pulling ${name}…`;
  $("pull-button").disabled = true;
  try {
    const response = await api("/api/pull", { method: "POST", body: { model: name } });
    let finished = false;
    for await (const line of streamedEvents(response, "ndjson")) {
      if (line.error) throw new ApiError(line.error);
      if (line.status === "success") {
        finished = true;
        break;
      }
      if (line.total) {
        bar.max = line.total;
        bar.value = line.completed || 0;
        const percent = Math.floor((100 * (line.completed || 0)) / line.total);
        status.textContent = `${line.status} — ${formatBytes(line.completed || 0)} of ${formatBytes(line.total)} (${percent}%)`;
      } else {
        bar.removeAttribute("value");
        status.textContent = line.status;
      }
    }
    if (!finished) throw new ApiError("The pull ended before it was complete.");
    bar.max = 1;
    bar.value = 1;
    box.dataset.state = "done";
    status.textContent = `Pulled ${name}.`;
    $("pull-name").value = "";
  } catch (error) {
    box.dataset.state = "error";
    bar.max = 1;
    bar.value = 0;
    status.textContent = error.message;
  } finally {
    state.pulling = false;
    $("pull-button").disabled = false;
  }
  await loadModels();
}

// ---------------------------------------------------------------------------------------------
// Speech in: dictation with the microphone, or an audio file, transcribed by the server's
// /v1/audio/transcriptions. The text goes into the message box, to be read before it is sent.

const speech = {
  // The server's speech model: a name, null when it has none, undefined until it has said.
  model: undefined,
  recorder: null,
  startedAt: 0,
  timer: null,
  busy: false,
};

const NO_SPEECH_MODEL = "Speech input needs a speech model on the server: start it with "
  + "hearth serve --speech-model models/whisper-base (or another Whisper model).";

async function loadSpeechModel() {
  try {
    speech.model = (await getJSON("/v1/storage")).speech_model || null;
  } catch (_) {
    // Asked again when a speech button is used.
    speech.model = undefined;
  }
  renderSpeechControls();
}

function renderSpeechControls() {
  const recording = Boolean(speech.recorder);
  const record = $("record");
  record.setAttribute("aria-pressed", String(recording));
  record.setAttribute("aria-label", recording ? "Stop recording and transcribe" : "Dictate with the microphone");
  record.title = speech.model === null ? NO_SPEECH_MODEL : record.getAttribute("aria-label");
  record.disabled = speech.busy;
  $("upload-audio").disabled = speech.busy || recording;
  $("upload-audio").title = speech.model === null ? NO_SPEECH_MODEL : "Transcribe an audio file into the message";
  $("record-time").hidden = !recording;
  document.body.dataset.speech = recording ? "recording" : speech.busy ? "transcribing" : "idle";
}

// `state`: "recording", "busy" or "error"; errors stay until the next speech action.
function showSpeechStatus(message, state) {
  const status = $("speech-status");
  status.textContent = message;
  status.dataset.state = state;
  status.setAttribute("role", state === "error" ? "alert" : "status");
  status.hidden = false;
}

function hideSpeechStatus() {
  $("speech-status").hidden = true;
  $("speech-status").textContent = "";
}

// Whether the server can transcribe; says why not when it cannot.
async function speechAvailable() {
  if (speech.model === undefined) await loadSpeechModel();
  if (speech.model === null) {
    showSpeechStatus(NO_SPEECH_MODEL, "error");
    return false;
  }
  return true;
}

function microphoneError(error) {
  switch (error && error.name) {
    case "NotAllowedError":
    case "SecurityError":
      return "Microphone access was denied. Allow the microphone for this page in the browser's site settings, or upload an audio file instead.";
    case "NotFoundError":
    case "OverconstrainedError":
      return "No microphone was found. Connect one, or upload an audio file instead.";
    case "NotReadableError":
      return "The microphone could not be started; another program may be using it.";
    default:
      return `The microphone could not be started: ${(error && error.message) || error}`;
  }
}

function recordingExtension(type) {
  if (type.includes("ogg")) return "ogg";
  if (type.includes("mp4")) return "m4a";
  if (type.includes("wav")) return "wav";
  return "webm";
}

async function toggleRecording() {
  if (speech.recorder) {
    speech.recorder.stop();
    return;
  }
  if (speech.busy) return;
  hideSpeechStatus();
  if (!(await speechAvailable())) return;
  // Browsers offer the microphone only to secure pages: https, or http on localhost.
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia || typeof MediaRecorder === "undefined") {
    showSpeechStatus("This page cannot use the microphone: browsers allow it only over https or on localhost. Upload an audio file instead.", "error");
    return;
  }
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  } catch (error) {
    showSpeechStatus(microphoneError(error), "error");
    return;
  }
  const preferred = ["audio/webm;codecs=opus", "audio/webm", "audio/ogg;codecs=opus", "audio/mp4"]
    .find((type) => MediaRecorder.isTypeSupported(type));
  let recorder;
  try {
    recorder = new MediaRecorder(stream, preferred ? { mimeType: preferred } : undefined);
  } catch (error) {
    stream.getTracks().forEach((track) => track.stop());
    showSpeechStatus(`This browser cannot record audio: ${error.message}`, "error");
    return;
  }
  const chunks = [];
  recorder.addEventListener("dataavailable", (event) => {
    if (event.data && event.data.size) chunks.push(event.data);
  });
  recorder.addEventListener("stop", () => {
    stream.getTracks().forEach((track) => track.stop());
    clearInterval(speech.timer);
    speech.recorder = null;
    renderSpeechControls();
    const type = recorder.mimeType || preferred || "audio/webm";
    const recording = new Blob(chunks, { type });
    if (!recording.size) {
      showSpeechStatus("Nothing was recorded; check the microphone and try again.", "error");
      return;
    }
    transcribe(recording, `recording.${recordingExtension(type)}`);
  });
  recorder.start();
  speech.recorder = recorder;
  speech.startedAt = Date.now();
  updateRecordTime();
  speech.timer = setInterval(updateRecordTime, 250);
  renderSpeechControls();
  showSpeechStatus("Recording… press the microphone again to stop and transcribe.", "recording");
}

function updateRecordTime() {
  const seconds = Math.floor((Date.now() - speech.startedAt) / 1000);
  const time = $("record-time");
  time.dataset.seconds = String(seconds);
  time.textContent = `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

async function chooseAudioFile() {
  if (speech.busy || speech.recorder) return;
  hideSpeechStatus();
  if (!(await speechAvailable())) return;
  $("audio-file").click();
}

async function transcribe(file, filename) {
  speech.busy = true;
  renderSpeechControls();
  showSpeechStatus(`Transcribing ${filename}…`, "busy");
  try {
    const form = new FormData();
    form.append("file", file, filename);
    form.append("model", speech.model || "whisper-1");
    form.append("response_format", "json");
    const result = await (await api("/v1/audio/transcriptions", { method: "POST", form })).json();
    const text = (result.text || "").trim();
    if (text) {
      insertIntoPrompt(text);
      hideSpeechStatus();
    } else {
      showSpeechStatus(`No speech was heard in ${filename}.`, "error");
    }
  } catch (error) {
    showSpeechStatus(error.message, "error");
  } finally {
    speech.busy = false;
    renderSpeechControls();
  }
}

// Appended to what is already typed, so dictation can continue a message.
function insertIntoPrompt(text) {
  const prompt = $("prompt");
  const typed = prompt.value.replace(/\s+$/, "");
  prompt.value = typed ? `${typed} ${text}` : text;
  resizePrompt();
  prompt.focus();
  prompt.setSelectionRange(prompt.value.length, prompt.value.length);
}

// ---------------------------------------------------------------------------------------------
// Views and start-up

function showView(name) {
  $("chat-view").hidden = name !== "chat";
  $("models-view").hidden = name !== "models";
}

// The address says what is shown (#/chat/ID, #/models), so reload and Back keep their place.
// pushState fires no event, so the page routes itself; Back and Forward come as popstate.
async function navigate(hash) {
  if (location.hash !== hash) history.pushState(null, "", hash);
  await route();
}

async function route() {
  const hash = location.hash;
  if (hash === "#/models") {
    showView("models");
    await loadModels();
    return;
  }
  showView("chat");
  const match = /^#\/chat\/(.+)$/.exec(hash);
  if (match) {
    if (!state.threads.some((thread) => thread.id === match[1])) await loadThreads();
    await openThread(match[1]);
  } else if (state.threads.length) {
    history.replaceState(null, "", `#/chat/${state.threads[0].id}`);
    await openThread(state.threads[0].id);
  } else {
    await openThread(null);
  }
  $("prompt").focus();
}

function resizePrompt() {
  const prompt = $("prompt");
  prompt.style.height = "auto";
  prompt.style.height = `${Math.min(prompt.scrollHeight, 200)}px`;
}

async function clearAll() {
  if (!(await confirmAction("Clear all messages?", "Every message in every chat will be deleted. The chats themselves stay.", "Clear all"))) return;
  stopStreaming();
  try {
    await api("/v1/messages", { method: "DELETE" });
    toast("All messages deleted.");
  } catch (error) {
    toast(error.message);
  }
  if (state.currentId) await reloadMessages(state.currentId);
  await refreshThreadOrder();
}

function wire() {
  $("new-thread").addEventListener("click", () => createThread().catch((error) => toast(error.message)));
  $("open-models").addEventListener("click", () => {
    closeSidebar();
    navigate("#/models");
  });
  $("back-to-chat").addEventListener("click", () => navigate(state.currentId ? `#/chat/${state.currentId}` : "#/"));
  $("clear-all").addEventListener("click", clearAll);
  $("open-settings").addEventListener("click", () => openSettings().catch((error) => toast(error.message)));
  $("settings-form").addEventListener("submit", saveSettings);
  $("settings-cancel").addEventListener("click", () => $("settings-dialog").close());
  $("pull-form").addEventListener("submit", pullModel);
  // The key is needed for everything else, so its dialog does not close on Escape.
  $("key-dialog").addEventListener("cancel", (event) => event.preventDefault());

  $("thread-search").addEventListener("input", searchChanged);
  $("thread-search").addEventListener("keydown", (event) => {
    if (event.key === "Escape" && $("thread-search").value) {
      event.preventDefault();
      event.stopPropagation();
      clearSearch();
      loadThreads().catch((error) => toast(error.message));
    } else if (event.key === "Enter") {
      // Enter opens the first chat found.
      const first = $("thread-list").querySelector("[data-testid=thread-name]");
      if (first) first.click();
    }
  });
  $("export-json").addEventListener("click", () => exportThread("json").catch((error) => toast(error.message)));
  $("export-markdown").addEventListener("click", () => exportThread("markdown").catch((error) => toast(error.message)));
  $("export-menu").addEventListener("toggle", () => { if ($("export-menu").open) closeMenus($("export-menu")); });
  document.addEventListener("click", (event) => {
    if (!event.target.closest("details.menu")) closeMenus();
  });
  $("import-thread").addEventListener("click", () => $("import-file").click());
  $("import-file").addEventListener("change", () => {
    const input = $("import-file");
    const file = input.files && input.files[0];
    input.value = "";
    if (file) importThread(file).catch((error) => toast(error.message));
  });
  $("open-help").addEventListener("click", openHelp);
  $("open-sidebar").addEventListener("click", () => {
    if (document.body.dataset.sidebar === "open") closeSidebar();
    else openSidebar();
  });
  $("sidebar-backdrop").addEventListener("click", closeSidebar);
  // A window widened past the narrow layout has the list beside the chat again.
  NARROW.addEventListener("change", () => { if (!NARROW.matches) closeSidebar(); });
  // Copy on code blocks, which the Markdown renderer draws without behaviour of their own.
  $("message-list").addEventListener("click", async (event) => {
    const copy = event.target.closest("[data-testid=copy-code]");
    if (!copy) return;
    const code = copy.closest(".code-block").querySelector("pre code");
    showCopied(copy, await copyText(code.textContent));
  });
  document.addEventListener("keydown", handleShortcut);

  const prompt = $("prompt");
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = prompt.value;
    if (!text.trim() || state.stream) return;
    prompt.value = "";
    resizePrompt();
    sendMessage(text).catch((error) => toast(error.message));
  });
  prompt.addEventListener("keydown", (event) => {
    // Enter sends, and so does Ctrl/⌘+Enter; Shift+Enter is a new line.
    if (event.key === "Enter" && (!event.shiftKey || event.ctrlKey || event.metaKey) && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    } else if (event.key === "ArrowUp" && !prompt.value && !state.stream) {
      const questions = $("message-list").querySelectorAll(".message.user[data-message-id]");
      if (questions.length) {
        event.preventDefault();
        startEdit(questions[questions.length - 1]);
      }
    }
  });
  prompt.addEventListener("input", resizePrompt);
  $("stop").addEventListener("click", stopStreaming);
  $("record").addEventListener("click", () => toggleRecording().catch((error) => showSpeechStatus(error.message, "error")));
  $("upload-audio").addEventListener("click", () => chooseAudioFile().catch((error) => showSpeechStatus(error.message, "error")));
  $("audio-file").addEventListener("change", () => {
    const input = $("audio-file");
    const file = input.files && input.files[0];
    // Cleared, so that choosing the same file again is a change too.
    input.value = "";
    if (file) transcribe(file, file.name);
  });
  window.addEventListener("popstate", () => route().catch((error) => toast(error.message)));
}

async function start() {
  wire();
  try {
    await loadThreads();
    await route();
    await loadSpeechModel();
  } catch (error) {
    toast(error.message);
  }
  renderSpeechControls();
  document.body.dataset.ready = "true";
}

start();
